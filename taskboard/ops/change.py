"""A change: the few records an operation reads and edits under the board lock, written
at the end as one journaled, all-or-nothing write of those whose bytes differ. The hooks
are the change's own: `guard` (the claim authority's say before anything is written)
and `keep` (what follows the files: the runtime state), set by whoever opens the change
(taskboard.ops.board), so the rules below the board (claims, gates, check) take a
change, a store and a caller and never the board itself.
"""

from __future__ import annotations

from ..core import graph
from ..core.errors import NotFound, Refused, TaskError, UsageError
from ..core.fields import OPEN, Record, loads, now, parent_of
from ..core.model import archive_file_name, check_file_size, check_owner, encode, file_name, fill_defaults
from ..core.outcome import Event

TYPE_CHECKING = False  # typing costs ~5 ms of start-up; annotations are strings anyway
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from pathlib import Path
    from typing import Any, Protocol, TypeVar

    from ..core.model import Patch
    from ..core.outcome import Outcome

    class Files(Protocol):
        """What a change and require_board use of a store (taskboard.disk.store.Store is
        the one): this module owns its port, so it imports nothing of the disk's."""

        archived: set[int]  # the tasks `read` last found in the archive folder
        seen: dict[str, int]  # a hash of each task file's bytes as last read

        @property
        def path(self) -> str: ...

        @property
        def root(self) -> Path: ...

        def read(self, task_id: int) -> Record: ...

        def task_ids(self) -> list[int]: ...

        def write(
            self,
            files: dict[str, bytes],
            appends: dict[str, bytes] | None = None,
            remove: list[str] | None = None,
            new: list[str] | None = None,
            expect: dict[str, int] | None = None,
            *,
            then: Callable[[], None] | None = None,
            runtime: list[dict] | None = None,
        ) -> None: ...

    S_co = TypeVar("S_co", bound=Files, covariant=True)

    class Desk(Protocol[S_co]):
        """What an operation below the board is handed (the board is one): a store (S_co:
        the operations say which, a taskboard.disk.store.Store), a caller, and a way to
        open a change with its hooks."""

        @property
        def store(self) -> S_co: ...

        caller: str

        def change(self) -> Change: ...

        def require_board(self, task_ids: Iterable[int]) -> None: ...

        def claim(self, task_id: int | None, owner: str, lease: float | None = None) -> Outcome:
            """Through the board's claim authority (taskboard.ops.coordination)."""

        def claim_as_is(self, task_id: int | None, owner: str, lease: float | None = None) -> Outcome:
            """`claim` without the words of why nothing was found."""

        def local(self) -> Desk[S_co]:
            """This desk with claims decided on this clone alone."""

        def update(self, task_id: int, patch: Patch, force: bool = False) -> Outcome:
            """One change to a task (taskboard.ops.board.Board.update)."""


class Change:
    """Records read and edited under the lock; `commit` writes the edited ones that changed."""

    def __init__(self, store: Files, actor: str = ""):
        self.store = store
        self.actor = actor  # who the journal says made the change
        self.journaled: list[dict] = []  # the journal entries the commit appended
        self.records: dict[int, Record] = {}
        self.read: dict[int, int | None] = {}  # a hash of each record's file as this change read it
        self.before: dict[int, bytes | None] = {}
        self.was: dict[int, tuple[str, str]] = {}  # status and owner of each edited record before the change
        self.runtime: dict[int, dict] = {}  # what to record in the runtime state, by task (taskboard.claims)
        self.guard: Any = None  # the authority's say before the files are written (taskboard.ops.board)
        self.forced = False  # the change overrides a holder (its claim ref included)
        self.archived: set[int] = set()  # records read from the archive folder (DESIGN §11)
        self.stay: set[int] = set()  # archived records this change may edit in place while they stay closed
        self.moving: set[int] = set()  # archived records brought back unchanged (`restore`): the same bytes
        self.discard: list[str] = []  # second copies of a task a repair removes (one task live and archived)
        # the commit hook: keep(change, moved, write) writes, with what follows the files
        # (the runtime state, taskboard.ops.claims.keep); None writes the files alone
        self.keep: Callable[[Change, list[Record], Callable[..., None]], None] | None = None
        # the hook before the commit: plan(change, task_id, outcome, **intent) checks and plans
        # what the runtime state will record (taskboard.ops.claims.before_commit); None: nothing
        self.plan: Callable[..., None] | None = None

    def get(self, task_id: int) -> Record:
        if task_id not in self.records:
            self.records[task_id] = self.store.read(task_id)
            name = file_name(task_id)
            if task_id in self.store.archived:
                self.archived.add(task_id)
                name = archive_file_name(task_id)
            self.read[task_id] = self.store.seen.get(name)  # what commit expects to replace
        return self.records[task_id]

    def _place(self, task_id: int, record: Record) -> str:
        """Where a written record goes: its live file, or its archived one when it was read
        from the archive, may stay there, and is still closed. Any other change to an
        archived task brings it back first (DESIGN §11)."""
        if task_id in self.archived and task_id in self.stay and record["status"] not in OPEN:
            return archive_file_name(task_id)
        return file_name(task_id)

    def find(self, task_id: int) -> Record | None:
        try:
            return self.get(task_id)
        except NotFound:
            return None

    def edit(self, task_id: int) -> Record:
        record = self.get(task_id)
        if task_id not in self.before:
            self.before[task_id] = encode(record)
            self.was[task_id] = (record["status"], record["owner"])
        return record

    def add(self, record: Record) -> None:
        self.records[record["id"]] = record
        self.before[record["id"]] = None

    def rewrite(self, record: Record) -> None:
        """Write this record even if its content is unchanged (a repair of its layout)."""
        self.records[record["id"]] = record
        self.before[record["id"]] = b""  # matches no encoding: the record is written

    def rewrites(self) -> list[tuple[Record, bytes]]:
        """The records of files that existed and that the commit rewrites, each with the
        file's bytes before the change (empty when a repair rewrote it unread)."""
        found = []
        for task_id, before in self.before.items():
            record = self.records[task_id]
            if before is not None and encode(record) != before:
                found.append((record, before))
        return found

    def successors(self, task_id: int) -> list[int]:
        record = self.find(task_id)
        return record["blocks"] if record else []

    def lookup(self, task_id: int) -> Record | None:
        return self.find(task_id)

    def _restored(self, files: dict[str, bytes], events: list[Event]) -> list[int]:
        """The archived tasks this change brings back (their live files among `files`),
        each with a `restored` event unless the caller gave one."""
        restored = [
            task_id for task_id in sorted(self.archived) if task_id in self.before and file_name(task_id) in files
        ]
        said = {(event.task, event.what) for event in events}
        events += [Event(task_id, "restored") for task_id in restored if (task_id, "restored") not in said]
        return restored

    def commit(self, events: Iterable[Event] = ()) -> list[Record]:
        """Write every edited record whose content changed, and journal the events, as one
        change (taskboard.journal); the records written, in id order."""
        stamp = now()
        files, written, moved = {}, [], []
        for task_id, before in self.before.items():
            record = self.records[task_id]
            if encode(record) == before:
                if task_id in self.moving:
                    files[file_name(task_id)] = before
                    written.append(record)
                continue
            fill_defaults(record, stamp)
            if before is None:  # a new record: created when written, so both times agree
                record["createdAt"] = stamp
            record["updatedAt"] = stamp
            files[self._place(task_id, record)] = data = encode(record)
            check_file_size(task_id, len(data))
            # what callers print must be what the file says: sorted ids, the contract's key order
            canonical = loads(data)
            record.clear()
            record.update(canonical)
            written.append(record)
            if self.was.get(task_id, (record["status"], record["owner"])) != (record["status"], record["owner"]):
                moved.append(record)
        events = list(events)
        restored = self._restored(files, events)
        remove = [archive_file_name(task_id) for task_id in restored]
        remove += [name for name in self.discard if name not in files and name not in remove]
        appends = None
        if events:
            from ..disk import journal

            actor = journal.actor_of(self.actor)
            uids = {task_id: record.get("uid") for task_id, record in self.records.items()}
            self.journaled = journal.entries(events, actor, journal.stamp(), uids)
            appends = {journal.shard_name(actor): journal.encode(self.journaled)}
        new = [file_name(task_id) for task_id, before in self.before.items() if before is None or task_id in restored]
        expect = {
            (archive_file_name(task_id) if task_id in self.archived else file_name(task_id)): seen
            for task_id in self.before
            if (seen := self.read.get(task_id)) is not None
        }
        undo = self.guard(self, moved) if moved and self.guard is not None else None  # refused: nothing written

        def write(then: Callable[[], None] | None = None, runtime: list[dict] | None = None) -> None:
            self.store.write(files, appends, remove=remove, new=new, expect=expect, then=then, runtime=runtime)

        try:
            if (moved or self.runtime or written) and self.keep is not None:
                self.keep(self, moved, write)  # the runtime state follows status, owner and rewrites
            else:
                write()
        except BaseException as exc:
            if undo is not None and not (isinstance(exc, TaskError) and exc.completes):
                undo()  # the claim refs moved for this change go back as they were
            raise  # (unless the change happens all the same: its first file moved, the next command completes it)
        parents = {parent for record in written if (parent := parent_of(record)) is not None}
        if parents:  # `get` of a parent counts its children (Board.progress_of)
            from ..disk.cache import remember_parents

            remember_parents(str(self.store.path), parents)
        return sorted(written, key=lambda record: record["id"])


def check_caller(caller: str) -> str:
    """Who is calling, as the journal and every refusal will name them: a name an owner
    could have (no control characters), or nobody."""
    if caller:
        try:
            check_owner(caller)
        except UsageError as exc:
            raise UsageError(exc.message.replace("the owner name", "the caller's name"), "caller") from None
    return caller


def require_board(store: Files, caller: str, task_ids: Iterable[int]) -> None:
    """Naming a task on a board that does not exist yet is 'not found', and must not
    create the board folder on the way (a failed command changes nothing). A caller's
    name that no owner could have is a usage error before that."""
    check_caller(caller)
    for task_id in task_ids:
        if not store.root.is_dir():
            store.task_ids()  # a path that is a file: usage error
            raise NotFound(f"no task #{task_id}")


def link(change: Change, blocker_id: int, dependent_id: int, outcome: Outcome) -> None:
    """Add the edge blocker → dependent, refusing one that would close a cycle."""
    cycle = graph.cycle_through_new_edge(blocker_id, dependent_id, change.successors)
    if cycle:
        raise Refused(
            f"#{blocker_id} cannot block #{dependent_id}: that would close the cycle {graph.format_cycle(cycle)}"
        )
    blocker = change.edit(blocker_id)
    if dependent_id not in blocker["blocks"]:
        blocker["blocks"] = blocker["blocks"] + [dependent_id]
        outcome.events.append(Event(dependent_id, "linked", blocker=blocker_id, dependent=dependent_id))
    if blocker["status"] in OPEN:
        dependent = change.edit(dependent_id)
        if blocker_id not in dependent["blockedBy"]:
            dependent["blockedBy"] = dependent["blockedBy"] + [blocker_id]
