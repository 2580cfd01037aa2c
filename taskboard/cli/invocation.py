"""One run of a command, without click: which board, who is calling, and how the
command speaks (data on stdout; messages on stderr, JSON Lines under --json, an
error last). The click-free fast path and the click commands both build one.
"""

from __future__ import annotations

import os
import sys

from ..core.errors import Corrupt, TaskError, UsageError
from ..views.text import json_text, shown_lines, shown_record, write

TYPE_CHECKING = False  # typing costs ~5 ms of start-up; annotations are strings anyway
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from ..core.outcome import Note, Outcome
    from ..disk.store import Store
    from ..ops.board import Board
    from ..ops.coordination import Authority


class Invocation:
    """What every command shares: the board, who is calling, how to speak. `authority`
    makes the claim authority of the board when it is opened and `hooks` runs the clone's
    hooks on a change: the door (taskboard.__main__) chooses both, so that a front end
    never imports git to open a board or to say what a change did."""

    def __init__(
        self,
        authority: Callable[[], Authority],
        hooks: Callable[[Store, Outcome], None],
        board_dir: str | None = None,
        timeout: float | None = None,
        caller: str | None = None,
    ):
        self.authority = authority
        self.hooks = hooks  # runs the clone's hooks on a change (the door's: git.hooks.fire)
        self.board_dir = board_dir
        self.timeout = timeout
        self.caller_flag = caller
        self.json = False
        self.argv: list[str] = []
        self._board: Board | None = None
        self.command = ""  # the command's name, once known
        self.checkout_board: str | None = None  # the checkout's own board, when the main worktree's is used
        self.on_board: Callable[[Invocation, Board], None] | None = None  # run once the board is found (the door)
        self.handlers: Any = None  # what the click tree hands its work to (cli.parser.Handlers: the door's)

    @property
    def board(self) -> Board:
        """The board, found and opened on first use (a usage error comes first)."""
        if self._board is None:
            from ..disk.store import DEFAULT_TIMEOUT, Store, board_location
            from ..ops.board import Board

            timeout = self.timeout if self.timeout is not None else env_timeout(DEFAULT_TIMEOUT)
            caller = self.caller_flag if self.caller_flag is not None else os.environ.get("TASKS_OWNER", "")
            path, self.checkout_board = board_location(self.board_dir)
            self._board = Board(Store(path, timeout), caller, self.authority())
            if self.command in READS and not os.path.isdir(path):
                from ..views.messages import no_board_text

                self.warn(no_board_text(path))
            if self.on_board is not None:
                self.on_board(self, self._board)
        return self._board

    # -- speaking ----------------------------------------------------------------

    def data(self, document: Any) -> None:
        """The one JSON document of a --json command."""
        write(sys.stdout, json_text(document) + "\n")

    def event(self, key: str, value: Any, human: str) -> None:
        """A message about what happened: `{key: value}` under --json, else the text."""
        if self.json:
            write(sys.stderr, json_text({key: value}) + "\n")
        else:
            write(sys.stderr, shown_lines(human) + "\n")

    def which_board(self) -> str | None:
        """Which board is used, when it is not the current checkout's (DESIGN section 8)."""
        board = self.board  # found first: that sets checkout_board
        if self.checkout_board is None:
            return None
        return (
            f"using the main worktree's board {board.store.path} (this worktree's own "
            f"{self.checkout_board} is not used; `git config tasks.worktrees branch` gives each worktree its own)"
        )

    def warn(self, message: str) -> None:
        self.event("warning", message, f"warning: {message}")

    def show_record(self, outcome: Outcome, fields: tuple[str, ...] | None = None) -> int:
        """What a change did: the record (or its marker line; under --json only `fields` of
        it when given), then what the user should hear, then the clone's hooks on it."""
        assert outcome.record is not None
        try:
            if self.json:
                from ..core.model import pick

                self.data(pick(outcome.record, fields))
            else:
                from ..views.viewmodel import task_line

                write(sys.stdout, task_line(shown_record(outcome.record)) + "\n")
            self.report(outcome)
        except Corrupt as exc:
            if exc.rule != "output":
                raise
            from ..views.messages import answer_lost

            raise answer_lost(exc, outcome.record["id"]) from None  # the answer is lost, not the change
        finally:  # the change is made, whether or not its answer could be written: its hooks run
            self.run_hooks(outcome)
        return 0

    def run_hooks(self, outcome: Outcome) -> None:
        """The clone's hooks on what the change did (taskboard.git.hooks), in the background."""
        if outcome.journaled or outcome.unblocked:
            self.hooks(self.board.store, outcome)

    def report(self, outcome: Outcome) -> None:
        """What the caller should hear of an outcome: its notes, then the tasks set free."""
        if not (outcome.notes or outcome.unblocked):
            return  # most changes: nothing to word, and the words' module stays unloaded
        from ..views.messages import outcome_events

        for key, value, human in outcome_events(outcome):
            self.event(key, value, human)

    def notes(self, notes: list[Note]) -> None:
        from ..core.outcome import Outcome

        outcome = Outcome()
        outcome.notes = notes
        self.report(outcome)

    def plain(self) -> bool:
        return plain_output()

    def width(self) -> int:
        """Columns for plain text: COLUMNS, else the terminal's, else 80 (as rich decides)."""
        columns = os.environ.get("COLUMNS", "")
        if columns.isdigit() and int(columns) > 0:
            return int(columns)
        try:
            return os.get_terminal_size(sys.stdout.fileno()).columns or 80
        except (OSError, ValueError, AttributeError):
            return 80

    def show(self, text: str) -> None:
        """Text for a person on stdout, in the terminal's encoding: what it cannot show becomes `?`."""
        encoding = getattr(sys.stdout, "encoding", None) or "utf-8"
        if hasattr(sys.stdout, "buffer"):
            sys.stdout.buffer.write(text.encode(encoding, "replace"))
        else:
            sys.stdout.write(text)
        sys.stdout.flush()


READS = frozenset({"get", "list", "ready", "prime", "board", "graph", "log", "check"})  # never make a board


def plain_output() -> bool:
    """Plain text when piped, under NO_COLOR, or on a dumb terminal; FORCE_COLOR asks
    for the rich views even through a pipe (NO_COLOR still wins)."""
    if os.environ.get("NO_COLOR"):
        return True
    if os.environ.get("FORCE_COLOR"):
        return False
    return os.environ.get("TERM") == "dumb" or not sys.stdout.isatty()


class ClosedStream:
    """What stands for stdout or stderr when the command was started with it closed
    (`tasks list >&-`: Python then leaves sys.stdout None). Every write fails as a write
    to a closed descriptor does, so the command names the stream (exit 6, as on a full
    disk) instead of failing on None; nothing is pending, so the exit's flush is quiet."""

    encoding = "utf-8"

    def write(self, text: str) -> int:
        import errno

        raise OSError(errno.EBADF, "closed when the command started")

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        import errno

        raise OSError(errno.EBADF, "closed when the command started")


def guard_closed_streams() -> None:
    """Stand a ClosedStream in for stdout and stderr where the command started with them
    closed, and hold their descriptors open on /dev/null: else the first file the command
    opens takes number 1 or 2, and a process it starts (git, a gate, a hook) writes its
    output into that file."""
    for name, number in (("stdout", 1), ("stderr", 2)):
        if getattr(sys, name) is None:
            held = os.open(os.devnull, os.O_WRONLY)
            if held != number:
                os.dup2(held, number)
                os.close(held)
            setattr(sys, name, ClosedStream())


def reader_gone() -> int:
    """Standard output's reader went away (a closed pipe: `tasks list --json | head -c 1`):
    the command ends quietly and exits 0, as Unix tools at the head of a pipe do; what it
    did stays done (the reader chose to read no further). What was left unwritten goes to
    /dev/null, so the exit's flush does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass
    return 0


def fail(json_mode: bool, code: str, message: str, exit_code: int, hint: str = "") -> int:
    """Report the error a command ends with (the last line of stderr); its exit code."""
    try:
        if json_mode:
            write(sys.stderr, json_text({"error": {"code": code, "message": message, "exit": exit_code}}) + "\n")
        else:
            write(sys.stderr, f"tasks: error: {shown_lines(message)}{hint}\n")
    except (BrokenPipeError, TaskError, OSError):
        pass  # stderr takes nothing more: the exit code still says it
    return exit_code


def env_timeout(default: float) -> float:
    raw = os.environ.get("TASKS_LOCK_TIMEOUT")
    if raw is None or raw == "":
        return default
    try:
        return check_timeout(float(raw))
    except ValueError:
        raise UsageError(f"TASKS_LOCK_TIMEOUT={raw!r} is not a number of seconds") from None


def check_timeout(value: float) -> float:
    if not 0 <= value < float("inf"):  # NaN compares false: refused with the infinities
        raise UsageError(f"the lock timeout must be a finite number of seconds ≥ 0, not {value}")
    return value
