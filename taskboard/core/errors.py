"""The failures an operation can end with, each tied to one exit code of the contract.

An error carries a plain default message that names no command-line flag, and, where
a front end may word it its own way, a machine `reason` with the `data` to do so
(`taskboard.messages` words them for the command line).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs ~5 ms of start-up; annotations are strings anyway
if TYPE_CHECKING:
    from typing import Any


class TaskError(Exception):
    """Base of every failure the user can cause or meet; carries its exit code."""

    code = "internal"
    exit_code = 1
    # the change that failed so happens all the same: its first file moved, and the next
    # command completes it from its intent; what moved with it (a claim ref) must stand
    completes = False

    def __init__(self, message: str, reason: str = "", **data: Any):
        super().__init__(message)
        self.message = message
        self.reason = reason
        self.data = data


class UsageError(TaskError):
    code, exit_code = "usage", 2


class NotFound(TaskError):
    code, exit_code = "not_found", 3


class Refused(TaskError):
    code, exit_code = "refused", 4


class Busy(TaskError):
    code, exit_code = "busy", 5


class Changed(Busy):
    """A file this change read was changed by a writer that takes no lock before the change
    could put its own in place (DESIGN §13): nothing was changed; the change may be redone."""


class Taken(Busy):
    """The name a new task file was to take appeared meanwhile (DESIGN §13): nothing was
    changed; `create` takes the next id."""


class Corrupt(TaskError):
    """A file the operation needs is unreadable; `file` names it, `rule` says what is wrong."""

    code, exit_code = "corrupt", 6

    def __init__(self, message: str, file: str = "", rule: str = "json", reason: str = "", **data: Any):
        super().__init__(message, reason, **data)
        self.file = file
        self.rule = rule


class GateFailed(TaskError):
    """Completing a task whose acceptance gate failed: nothing completed (taskboard.gates)."""

    code, exit_code = "gate_failed", 7
    recorded: Any = None  # the failed attempt it journaled (an Outcome): the front end runs its hooks
