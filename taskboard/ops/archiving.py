"""`tasks archive` and `tasks restore` (DESIGN §11): finished history moved aside to
`.tasks/archive/task_N.json`, and brought back.

What is archived: completed and deleted tasks that changed no later than the given
number of days ago and that no open task names (so no change of open work has to look
into the archive: completing, releasing or claiming an open task touches only the tasks
its own lists name, and none of them is archived). A completed task's history edges may
still name open work; deleting a task is the one change that looks at every task, the
archived ones too. The task with the highest id on the board stays live whatever it
is: new ids come from the live file names, so an archived id is never handed out again.

A move keeps the file's bytes (git shows a rename) and is one all-or-nothing change
with its journal lines. Any change to an archived task brings it back first
(taskboard.ops.board.Change); `restore` brings one back on purpose, and takes a deleted
task back as pending and unowned (as a release leaves a task: an owner on a pending task
would reserve it, DESIGN §3), its old edges not restored.
"""

from __future__ import annotations

import calendar
import time

from ..core.errors import Corrupt, Refused, UsageError
from ..core.fields import OPEN, TIME_FORMAT
from ..core.model import archive_file_name, encode, file_name
from ..core.outcome import Event, Outcome

TYPE_CHECKING = False  # typing costs ~5 ms of start-up; annotations are strings anyway
if TYPE_CHECKING:
    from typing import Any

    from ..core.fields import Record

    Board = Any  # taskboard.ops.board.Board, which calls in here (no import back: no circle)

DEFAULT_DAYS = 30
MAX_DAYS = 1_000_000  # what a count of days can be: past it a mistake, not a choice


def check_days(days: object) -> int:
    """A whole number of days, 0 or more."""
    if isinstance(days, bool) or not isinstance(days, int) or not 0 <= days <= MAX_DAYS:
        raise UsageError(f"the age in days must be a whole number from 0 to {MAX_DAYS}, not {days!r}", "days")
    return days


def _seconds(stamp: str) -> int:
    return calendar.timegm(time.strptime(stamp, TIME_FORMAT))


def candidates(records: list[Record], days: int, at: float | None = None) -> list[Record]:
    """The records `archive` moves, in id order (see the module's docstring)."""
    if not records:
        return []
    cutoff = (time.time() if at is None else at) - days * 86400
    linked: set[int] = set()
    for record in records:
        if record["status"] in OPEN:
            linked.update(record["blocks"], record["blockedBy"])
    highest = max(record["id"] for record in records)
    from ..core.merging import PENDING_KEY

    return [
        record
        for record in records
        if record["status"] not in OPEN
        and record["id"] != highest
        and record["id"] not in linked
        and PENDING_KEY not in record
        and _seconds(record["updatedAt"]) <= cutoff
    ]


def archive(board: Board, days: int = DEFAULT_DAYS, dry_run: bool = False) -> Outcome:
    """Move the finished history aside (or, with `dry_run`, say what would move). The
    outcome's `written`: the records archived (or that would be), in id order."""
    check_days(days)
    store = board.store
    if dry_run:
        with store.reading() as notes:
            records = _every_live_record(store)
            outcome = Outcome()
            outcome.written = candidates(records, days)
        outcome.notes[:0] = notes
        return outcome
    board.require_board([])
    with store.writing() as notes:
        records = _every_live_record(store)
        chosen = candidates(records, days)
        outcome = Outcome()
        outcome.written = chosen
        if chosen:
            files = {archive_file_name(record["id"]): encode(record) for record in chosen}
            remove = [file_name(record["id"]) for record in chosen]
            expect = {name: seen for name in remove if (seen := store.seen.get(name)) is not None}
            outcome.events = [Event(record["id"], "archived", status=record["status"]) for record in chosen]
            from ..disk import journal

            actor = journal.actor_of(board.change().actor)
            outcome.journaled = journal.entries(outcome.events, actor, journal.stamp())
            appends = {journal.shard_name(actor): journal.encode(outcome.journaled)}
            store.write(files, appends, remove=remove, expect=expect)
    outcome.notes[:0] = notes
    return outcome


def _every_live_record(store) -> list[Record]:
    """Every live record; a damaged file stops the archive (it may name a task as open)."""
    records, damaged = store.read_all()
    if damaged:
        exc = damaged[0]
        raise Corrupt(
            f"cannot archive: {exc.message} (repair that file first: it may name a task as open work)",
            exc.file,
            exc.rule,
            "archive-past-damage",
        )
    return records


def restore(board: Board, task_id: int) -> Outcome:
    """Bring an archived task back to the live board as it is, or a deleted one (live or
    archived) back as pending and unowned (its old edges are not restored: a deleted task
    has none)."""
    board.require_board([task_id])
    store = board.store
    with store.writing() as notes:
        change = board.change()
        record = change.get(task_id)
        archived = task_id in change.archived
        if not archived and record["status"] != "deleted":
            raise Refused(
                f"#{task_id} is {record['status'].replace('_', ' ')} on the live board, neither archived nor "
                "deleted; there is nothing to restore",
                "not-archived",
                task=task_id,
            )
        edited = change.edit(task_id)
        outcome = Outcome()
        if edited["status"] == "deleted":  # as a release leaves it (DESIGN §3): unowned, so nobody's reservation
            edited["status"], edited["owner"], edited["blocks"], edited["blockedBy"] = "pending", "", [], []
            outcome.events.append(Event(task_id, "restored", old="deleted", archived=archived))
        else:
            change.moving.add(task_id)  # unchanged: the same bytes come back (git shows a rename)
            outcome.events.append(Event(task_id, "restored", archived=True))
        outcome.written = change.commit(outcome.events)
        outcome.journaled = change.journaled
        outcome.record = change.get(task_id)
    outcome.notes[:0] = notes
    return outcome
