"""What every command shares, without click: the board it works on, how it speaks
(data on stdout, messages on stderr, JSON Lines under --json), the entry point,
and a click-free path for the reads agents call most.

Start-up is the product's latency: `get --json`, `list --json` and `ready --json`
never import click, rich or filelock.
"""

from __future__ import annotations

import json
import math
import os
import sys

from .errors import TaskError, UsageError

TYPE_CHECKING = False  # typing costs ~5 ms of start-up; annotations are strings anyway
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any


class App:
    """What every command shares: the board, who is calling, how to speak."""

    def __init__(self, board_dir: str | None, timeout: float | None, caller: str | None):
        self.board_dir = board_dir
        self.timeout = timeout
        self.caller_flag = caller
        self.json = False
        self._board = None
        self.argv: list[str] = []

    @property
    def board(self):
        if self._board is None:
            from .board import Board
            from .store import DEFAULT_TIMEOUT, Store, find_board

            timeout = self.timeout if self.timeout is not None else env_timeout(DEFAULT_TIMEOUT)
            caller = self.caller_flag if self.caller_flag is not None else os.environ.get("TASKS_OWNER", "")
            self._board = Board(Store(find_board(self.board_dir), timeout), caller)
        return self._board

    # -- speaking ----------------------------------------------------------------

    def data(self, document: Any) -> None:
        """The one JSON document of a --json command."""
        write(sys.stdout, json.dumps(document, ensure_ascii=False) + "\n")

    def event(self, key: str, value: Any, human: str) -> None:
        if self.json:
            write(sys.stderr, json.dumps({key: value}, ensure_ascii=False) + "\n")
        else:
            write(sys.stderr, human + "\n")

    def warn(self, message: str) -> None:
        self.event("warning", message, f"warning: {message}")

    def report(self, outcome) -> None:
        """The side effects worth hearing about: recovery, warnings, tasks set free."""
        for note in self.board.store.recovered:
            self.warn(note)
        self.board.store.recovered.clear()
        for message in outcome.warnings:
            self.warn(message)
        if outcome.unblocked:
            self.event("unblocked", outcome.unblocked, "unblocked " + ", ".join(f"#{i}" for i in outcome.unblocked))

    def plain(self) -> bool:
        return plain_output()


def plain_output() -> bool:
    """Plain text when piped, under NO_COLOR, or on a dumb terminal; FORCE_COLOR asks
    for the rich views even through a pipe (NO_COLOR still wins)."""
    if os.environ.get("NO_COLOR"):
        return True
    if os.environ.get("FORCE_COLOR"):
        return False
    return os.environ.get("TERM") == "dumb" or not sys.stdout.isatty()


def write(stream, text: str) -> None:
    stream.buffer.write(text.encode("utf-8")) if hasattr(stream, "buffer") else stream.write(text)
    stream.flush()


def env_timeout(default: float) -> float:
    raw = os.environ.get("TASKS_LOCK_TIMEOUT")
    if raw is None or raw == "":
        return default
    try:
        return check_timeout(float(raw))
    except ValueError:
        raise UsageError(f"TASKS_LOCK_TIMEOUT={raw!r} is not a number of seconds") from None


def check_timeout(value: float) -> float:
    if not math.isfinite(value) or value < 0:
        raise UsageError(f"the lock timeout must be a finite number of seconds ≥ 0, not {value}")
    return value


def damage(app: App, listing) -> None:
    """Name each damaged file on stderr; the command still showed the rest, then exits 6."""
    for note in app.board.store.recovered:
        app.warn(note)
    if listing.damaged:
        for exc in listing.damaged[:-1]:
            app.warn(exc.message)
        last = listing.damaged[-1]
        raise type(last)(
            last.message
            + (f" (and {len(listing.damaged) - 1} more damaged file(s) above)" if len(listing.damaged) > 1 else ""),
            last.file,
            last.rule,
        )


def show_record(app: App, outcome) -> None:
    """What a change did: the record (or its marker line), then what the user should hear."""
    if app.json:
        app.data(outcome.record)
    else:
        from .model import MARKERS

        record = outcome.record
        write(sys.stdout, f"{MARKERS[record['status']]} #{record['id']}: {record['subject']}\n")
    app.report(outcome)


def show_task(app: App, task_id: int) -> None:
    """`get`: the record, or for a person the task with its neighbours."""
    if app.json:
        app.data(app.board.get(task_id))
    else:
        record, neighbours = app.board.get_with_neighbours(task_id)
        from . import render

        render.show_task(record, neighbours, plain=app.plain())
    for note in app.board.store.recovered:  # an interrupted change it finished is news, as for every command
        app.warn(note)


def show_list(
    app: App,
    statuses=(),
    owner: str | None = None,
    ready: bool = False,
    blocked: bool = False,
    include_deleted: bool = False,
) -> None:
    """`list` and `ready`: every readable task that matches, then the damage, if any."""
    if ready and blocked:  # a usage error comes before any wait for the board
        raise UsageError("--ready and --blocked exclude each other; ask for one")
    listing = app.board.listing()
    chosen = app.board.select(listing, statuses, owner, ready, blocked, include_deleted)
    if app.json:
        app.data(chosen)
    else:
        from . import render

        render.show_list(chosen, listing, plain=app.plain())
    damage(app, listing)


# -- entry point ----------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    json_mode = "--json" in args
    app = App(None, None, None)
    app.argv = args
    try:
        fast = fast_command(args, app)
        if fast is not None:
            return fast()
        from .cli import run

        return run(args, app)
    except TaskError as exc:
        return fail(json_mode, exc.code, exc.message, exc.exit_code)
    except PermissionError as exc:  # a board this user may not read or write: name it, it is no bug
        return fail(
            json_mode,
            "corrupt",
            f"{exc.filename or 'the board'}: {exc.strerror.lower()}; check the permissions of the board folder",
            6,
        )
    except BrokenPipeError:
        _silence_stdout()
        return 0
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # a bug: say so plainly, trace only on request
        if os.environ.get("TASKS_DEBUG"):
            raise
        return fail(
            json_mode, "internal", f"internal error: {type(exc).__name__}: {exc} (set TASKS_DEBUG=1 for a trace)", 1
        )


def fast_command(args: list[str], app: App) -> Callable[[], int] | None:
    """`[--dir P] get ID --json`, `list --json`, `ready --json` and `create SUBJECT --json`:
    the calls agents make in loops, run without importing click. Anything else, even a
    spelling of these that click would accept, returns None and goes through click,
    which stays the one definition of the command line."""
    from .model import parse_id

    rest, command, operands = list(args), None, []
    while rest:
        token = rest.pop(0)
        if token == "--json":
            app.json = True
        elif token == "--dir" and rest and command is None:
            app.board_dir = rest.pop(0)
        elif command is None and token in ("get", "list", "ready", "create"):
            command = token
        elif command in ("get", "create") and not token.startswith("-"):
            operands.append(token)
        else:
            return None
    if not app.json or command is None or len(operands) != (command in ("get", "create")):
        return None
    if command == "create":  # the one write agents repeat: click's import is a third of its time
        return lambda: show_record(app, app.board.create(operands[0])) or 0
    if command == "get":
        try:
            task_id = parse_id(operands[0])
        except UsageError:
            return None  # let click word the usage error
        return lambda: show_task(app, task_id) or 0
    return lambda: show_list(app, ready=command == "ready") or 0


def fail(json_mode: bool, code: str, message: str, exit_code: int, hint: str = "") -> int:
    try:
        if json_mode:
            line = json.dumps({"error": {"code": code, "message": message, "exit": exit_code}}, ensure_ascii=False)
            write(sys.stderr, line + "\n")
        else:
            write(sys.stderr, f"tasks: error: {message}{hint}\n")
    except BrokenPipeError:
        pass
    return exit_code


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except OSError:
        pass
