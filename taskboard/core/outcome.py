"""What an operation did, as data: the records it wrote, the tasks it set free, what
happened to each task, and notes for whoever called it. Front ends (the command line,
its --json, an MCP server) word and print the same Outcome; nothing here is text for
one of them in particular.

Plain classes, not dataclasses: `dataclasses` imports `inspect`, ~9 ms of every start-up.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs ~5 ms of start-up; annotations are strings anyway
if TYPE_CHECKING:
    from typing import Any


class Data:
    """Equality and a readable repr from the attributes, as a dataclass would give."""

    __slots__ = ()
    __hash__ = None  # type: ignore[assignment]  # mutable and equal by value: not hashable

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and vars(other) == vars(self)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in vars(self).items())})"


class Note(Data):
    """A notice for the caller: `code` says what it is to a program, `data` holds its
    particulars, `message` is a plain default wording that names no command-line flag.

    Codes: `recovered` (an interrupted change was completed: data `tasks`),
    `intent-discarded`, `leftovers-removed` (data `count`), `scratch-replaced`,
    `not-linked` (an edge to remove was not there: data `blocker`, `dependent`),
    `skipped-damaged` (a claim passed over a damaged file: data `file`, `rule`,
    `reason`, `problem`)."""

    def __init__(self, code: str, message: str, **data: Any):
        self.code = code
        self.message = message
        self.data = data


class Event(Data):
    """One thing that happened to one task, as the journal keeps it (taskboard.journal):
    `what` is one of created, edited (data `fields`), started, released, completed,
    reopened, deleted, claimed, linked / unlinked (data `blocker`, `dependent`), forced
    (data `holder`, `by`), note (data `text`), ... Every Event in an Outcome that an
    operation commits (`Change.commit(outcome.events)`) is journaled with that change."""

    def __init__(self, task: int, what: str, **data: Any):
        self.task = task
        self.what = what
        self.data = data


class Outcome(Data):
    """What an operation did. `record`: the task it was about, as written (or as read);
    `written`: every record it wrote, in id order; `unblocked`: the tasks it made ready;
    `events`: what happened, task by task; `notes`: what the caller should hear;
    `neighbours`: for a read that asked, the records the task's lists name (None where
    missing or unreadable); `damaged`: the damaged files such a read met (taskboard.errors.Corrupt);
    `journaled`: the journal entries the change appended (taskboard.journal)."""

    def __init__(self, record: dict | None = None):
        self.record = record
        self.written: list[dict] = []
        self.unblocked: list[int] = []
        self.events: list[Event] = []
        self.notes: list[Note] = []
        self.neighbours: dict[int, dict | None] = {}
        self.damaged: list[Any] = []
        self.journaled: list[dict[str, Any]] = []


class Problem(Data):
    """One flaw `check` found: the file and task it concerns (either may be None), the
    rule broken, a plain message, and whether it was fixed; `reason` a machine code
    where a front end may word it its own way (e.g. "conflict-markers")."""

    def __init__(
        self,
        file: str | None,
        task: int | None,
        rule: str,
        message: str,
        fixed: bool = False,
        reason: str = "",
        fixable: bool = False,
        notice: bool = False,
    ):
        self.file, self.task, self.rule, self.message = file, task, rule, message
        self.fixed, self.reason, self.fixable = fixed, reason, fixable
        self.notice = notice  # said, but the board is sound with it (a family's spelling, DESIGN §13)
