"""Wording for people and documents for machines: the one place where an error, a
note, a check problem or an outcome becomes what the command line prints, as text or
under --json. The core's errors and notes carry machine codes and a plain default
message that names no flag; the command line's hints (`pass --force`, `--timeout`,
`tasks check --fix`) are added here. Any front end can call these functions; an MCP
server may word its hints its own way and fall back on the default messages.
"""

from __future__ import annotations

from ..core.errors import Corrupt, TaskError
from ..core.fields import dumps
from ..core.model import CONFLICT_MARKERS, ids_text
from .text import shown_lines

TYPE_CHECKING = False  # typing costs ~5 ms of start-up; annotations are strings anyway
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from ..core.outcome import Note, Outcome, Problem

_FLAG_OF_KEY = {"blockedBy": "blocked-by", "blocks": "blocks"}


def corrupt_text(file: str, reason: str, default: str) -> str:
    """A damaged file's message as the command line says it."""
    if reason == "conflict-markers":
        return f"{file}: {CONFLICT_MARKERS}; keep one side, then run tasks check --fix"
    return default


# The command line's wording of errors whose default message would not tell a person
# at the shell which flag to use, by the error's reason.
_CLI_ERRORS: dict[str, Callable[[TaskError], str]] = {
    "add-and-remove": lambda e: (
        f"--add-{_FLAG_OF_KEY[e.data['key']]} and --remove-{_FLAG_OF_KEY[e.data['key']]} both name "
        f"{ids_text(e.data['ids'])}; say one"
    ),
    "delete-with-edges": lambda e: "--status deleted removes every edge of the task; leave out the edge flags",
    "ready-and-blocked": lambda e: "--ready and --blocked exclude each other; ask for one",
    "owner-needed": lambda e: "claim needs an owner: pass --owner NAME, --as NAME or set TASKS_OWNER",
    "held": lambda e: f"{e.message} (pass --force to override)",
    "taken-over": lambda e: f"{e.message} (pass --force to override)" if "after your lease" in e.message else e.message,
    "stuck": lambda e: f"{e.data['summary']}; put it back with: tasks update {e.data['task']} --status pending --retry",
    "renew-needs-name": lambda e: "renew needs the holder's name: pass --as NAME or set TASKS_OWNER",
    "busy": lambda e: f"{e.message} (--timeout)",
    "held-remote": lambda e: e.message.replace("a check with repairs", "tasks check --fix"),
    "remote-unreachable": lambda e: (
        f"{e.message}; claim with --offline to claim on this clone only" if e.data.get("claiming") else e.message
    ),
    "caller": lambda e: f"{e.message} (--as, else TASKS_OWNER)",
    "conflict-markers": lambda e: corrupt_text(getattr(e, "file", ""), e.reason, e.message),
    "delete-past-damage": lambda e: (
        f"cannot delete #{e.data['task']}: "
        f"{corrupt_text(getattr(e, 'file', ''), e.data['cause_reason'], e.data['cause'])} "
        "(repair it, or see tasks check)"
    ),
}


def error_text(exc: TaskError) -> str:
    """An error's message as the command line says it."""
    wording = _CLI_ERRORS.get(exc.reason)
    return wording(exc) if wording else exc.message


def error_document(exc: TaskError) -> dict[str, Any]:
    """`{"code", "message", "exit"}`: an error for machines (the value of `--json`'s
    `{"error": ...}` line)."""
    return {"code": exc.code, "message": error_text(exc), "exit": exc.exit_code}


def no_board_text(path: str, reading: bool = True, another: str = "with --dir PATH or TASKS_DIR") -> str:
    """What a command (or a tool: `another` says how it names a board) says on a board
    folder that does not exist (DESIGN section 4)."""
    read = " (this is read as an empty board)" if reading else ""
    return f"there is no board at {path}: make one there with tasks init, or name another {another}{read}"


def permission_text(exc: PermissionError) -> str:
    """A board this user may not read or write: named, with what to do; no bug."""
    return (
        f"{exc.filename or 'the board'}: {(exc.strerror or 'permission denied').lower()}; "
        "check the permissions of the board folder"
    )


def os_error_text(exc: OSError) -> str:
    """A file the system refused (no permission, no space, a read-only disk): named."""
    if isinstance(exc, PermissionError):
        return permission_text(exc)
    if exc.filename is None:  # the board's files are named where they fail: this is the output
        return f"standard output: cannot be written ({(exc.strerror or str(exc)).lower()}); a change made is still made"
    from ..disk.store import unusable

    return unusable(exc.filename, exc).message


def answer_lost(exc: Corrupt, task_id: int) -> Corrupt:
    """A change's answer that could not be written (views.text.write's error): the change
    is made all the same, so the message says so and names the task, not a failure."""
    why = exc.data.get("why", "")
    return Corrupt(
        f"{exc.file}: cannot be written ({why}); the change was made: tasks get {task_id} shows #{task_id}",
        exc.file,
        "output",
        why=why,
    )


def internal_text(exc: BaseException) -> str:
    return f"internal error: {type(exc).__name__}: {exc} (set TASKS_DEBUG=1 for a trace)"


def note_text(note: Note) -> str:
    """A note as the command line says it."""
    if note.code == "skipped-damaged":
        return "skipped " + corrupt_text(note.data["file"], note.data["reason"], note.data["problem"])
    if note.code == "claim-ref-behind":  # the core says "a sync or a check with repairs"
        return note.message.replace("a sync or a check with repairs", "tasks sync or tasks check --fix")
    return note.message


def problem_document(problem: Problem) -> dict[str, Any]:
    """One problem of `check --json`: `{"file", "task", "rule", "message", "fixed"}`."""
    return {
        "file": problem.file,
        "task": problem.task,
        "rule": problem.rule,
        "message": corrupt_text(problem.file or "", problem.reason, problem.message),
        "fixed": problem.fixed,
    }


def outcome_events(outcome: Outcome) -> list[tuple[str, Any, str]]:
    """What the caller should hear of an outcome, in order, as (key, value, human text):
    each note a warning, then the tasks it set free. Under --json each becomes the
    stderr line `{key: value}`; for people, the text."""
    return [
        ("lease", _lease_document(note), note.message)
        if note.code == "lease"
        else ("warning", note_text(note), f"warning: {note_text(note)}")
        for note in outcome.notes
    ] + ([("unblocked", outcome.unblocked, f"unblocked {ids_text(outcome.unblocked)}")] if outcome.unblocked else [])


def _lease_document(note: Note) -> dict[str, Any]:
    """`{"task", "owner", "seconds", "expires"}`: a lease granted or renewed (stderr under --json)."""
    return {key: note.data[key] for key in ("task", "owner", "seconds", "expires")}


def mermaid_hint(focused: bool) -> str:
    """How to draw a Mermaid diagram small enough for GitHub."""
    if focused:
        return "a task with fewer neighbours draws less"
    return "`tasks graph ID --format mermaid` draws only what one task waits on and unlocks"


def damage_error(damaged: list[Corrupt]) -> Corrupt:
    """The error a listing with damaged files ends with: the last file, counting the others."""
    last = damaged[-1]
    more = f" (and {len(damaged) - 1} more damaged file(s) above)" if len(damaged) > 1 else ""
    return Corrupt(error_text(last) + more, last.file, last.rule)


_ENTRY_KEYS = frozenset(("at", "actor", "task", "event", "eid"))


def entry_text(entry: dict[str, Any]) -> str:
    """One journal entry as a line for people: `2026-11-29T18:03:11Z  alice  #4 completed`,
    then its particulars (a note's text, the fields edited, an edge, who was overridden).
    Entries are data from the repository: callers escape them before any markup."""
    return f"{entry['at']}  {printable(str(entry['actor']))}  #{entry['task']} {' '.join(entry_words(entry))}"


def entry_words(entry: dict[str, Any]) -> list[str]:
    """What an entry says after when, who and which task: the event, then its particulars."""
    event, details = entry["event"], {k: v for k, v in entry.items() if k not in _ENTRY_KEYS}
    words = [event]
    if event == "note":
        words = ["note:", str(details.pop("text", "")).replace("\n", "\n    ")]
    elif event == "edited" and isinstance(details.get("fields"), list):
        words.append(", ".join(map(str, details.pop("fields"))))
    elif event in ("linked", "unlinked") and "blocker" in details and "dependent" in details:
        words.append(f"#{details.pop('blocker')} → #{details.pop('dependent')}")
    elif event == "forced" and "holder" in details:
        words.append(f"over {details.pop('holder')}")
        details.pop("by", None)
    for key, value in details.items():
        shown = value
        if key == "lease" and isinstance(value, (int, float)) and not isinstance(value, bool):
            from ..disk.state import duration_text

            shown = duration_text(value)  # as it was asked for: 15m, not 900.0
        words.append(f"{key}={shown if isinstance(shown, str) else dumps(shown)}")
    return [printable(word) for word in words]


def printable(text: str) -> str:
    """Journal text as it may reach a terminal: control characters but newline and tab
    (C0, DEL, C1: an ESC or CSI would drive the terminal) shown escaped, as all user
    text is (taskboard.text). A journal line is data from the repository."""
    return shown_lines(text)
