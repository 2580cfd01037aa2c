"""Operations on the board, each one all-or-nothing change under the board lock.

A `Change` loads the few records an operation needs, lets it edit them in
memory, and writes at the end only those whose bytes differ, through the store's
journaled write. Every refusal is raised before anything is written.
"""

from __future__ import annotations

import json

from . import graph
from .errors import Corrupt, NotFound, Refused, UsageError
from .model import (
    EXTENSION_KEYS,
    OPEN,
    REMOVE,
    Record,
    check_description,
    check_owner,
    check_status,
    check_subject,
    encode,
    file_name,
    new_record,
    new_uid,
    now,
)
from .store import Store

TYPE_CHECKING = False  # typing costs ~5 ms of start-up; annotations are strings anyway
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any


class Outcome:
    """What a change did: the record it was about and what the user should hear."""

    def __init__(self, record: Record | None = None):
        self.record = record
        self.unblocked: list[int] = []
        self.warnings: list[str] = []
        self.changed = False


class Listing:
    """Every readable record, the damage met on the way, and a lookup over both
    (an unreadable blocker counts as open: nothing is called ready on a guess)."""

    def __init__(self, records: list[Record], damaged: list[Corrupt], lookup: Any):
        self.records = records
        self.damaged = damaged
        self.lookup = lookup


class Change:
    """Records read and edited under the lock; `commit` writes the edited ones that changed."""

    def __init__(self, store: Store):
        self.store = store
        self.records: dict[int, Record] = {}
        self.before: dict[int, bytes | None] = {}

    def get(self, task_id: int) -> Record:
        if task_id not in self.records:
            self.records[task_id] = self.store.read(task_id)
        return self.records[task_id]

    def find(self, task_id: int) -> Record | None:
        try:
            return self.get(task_id)
        except NotFound:
            return None

    def edit(self, task_id: int) -> Record:
        record = self.get(task_id)
        if task_id not in self.before:
            self.before[task_id] = encode(record)
        return record

    def add(self, record: Record) -> None:
        self.records[record["id"]] = record
        self.before[record["id"]] = None

    def successors(self, task_id: int) -> list[int]:
        record = self.find(task_id)
        return record["blocks"] if record else []

    def lookup(self, task_id: int) -> Record | None:
        return self.find(task_id)

    def commit(self) -> list[int]:
        """Write every edited record whose content changed; the ids written."""
        stamp = now()
        files, written = {}, []
        for task_id, before in self.before.items():
            record = self.records[task_id]
            if encode(record) == before:
                continue
            _fill_extensions(record, stamp)
            record["updatedAt"] = stamp
            files[file_name(task_id)] = data = encode(record)
            # what callers print must be what the file says: sorted ids, the contract's key order
            canonical = json.loads(data)
            record.clear()
            record.update(canonical)
            written.append(task_id)
        self.store.write(files)
        return written


def _fill_extensions(record: Record, stamp: str) -> None:
    """A hand-written record gains the extension keys the first time it is rewritten."""
    defaults = {"uid": new_uid, "metadata": dict, "createdAt": lambda: stamp, "updatedAt": lambda: stamp}
    for key in EXTENSION_KEYS:
        if key not in record:
            record[key] = defaults[key]()
    # keep the contract's key order for the ones just added
    ordered = {key: record.pop(key) for key in list(record)}
    record.update(ordered)


def _ids(ids: Iterable[int]) -> str:
    return ", ".join(f"#{task_id}" for task_id in ids)


class Board:
    """The operations of the contract over one store, on behalf of one caller."""

    def __init__(self, store: Store, caller: str = ""):
        self.store = store
        self.caller = caller

    # -- reading ---------------------------------------------------------------

    def get(self, task_id: int) -> Record:
        with self.store.reading():
            return self.store.read(task_id)

    def get_with_neighbours(self, task_id: int) -> tuple[Record, dict[int, Record | None]]:
        """A task and the records its lists name (None where missing or unreadable)."""
        with self.store.reading():
            record = self.store.read(task_id)
            neighbours: dict[int, Record | None] = {}
            for other in record["blockedBy"] + record["blocks"]:
                try:
                    neighbours[other] = self.store.read(other)
                except (NotFound, Corrupt):
                    neighbours[other] = None
        return record, neighbours

    def listing(self) -> Listing:
        with self.store.reading():
            records, damaged = self.store.read_all()
        by_id = {record["id"]: record for record in records}
        unknown = {"status": "in_progress"}  # an unreadable blocker may still be open
        damaged_ids = {_id_of(exc.file) for exc in damaged}

        def lookup(task_id: int) -> Record | None:
            found = by_id.get(task_id)
            if found is None and task_id in damaged_ids:
                return unknown
            return found

        return Listing(records, damaged, lookup)

    def select(
        self,
        listing: Listing,
        statuses: Iterable[str] = (),
        owner: str | None = None,
        ready: bool = False,
        blocked: bool = False,
        include_deleted: bool = False,
    ) -> list[Record]:
        if ready and blocked:
            raise UsageError("--ready and --blocked exclude each other; ask for one")
        wanted = {check_status(status) for status in statuses}
        chosen = []
        for record in listing.records:
            status = record["status"]
            if wanted and status not in wanted:
                continue
            if status == "deleted" and not (include_deleted or "deleted" in wanted):
                continue
            if owner is not None and record["owner"] != owner:
                continue
            if ready and not graph.is_ready(record, listing.lookup):
                continue
            if blocked and not graph.is_blocked(record, listing.lookup):
                continue
            chosen.append(record)
        return chosen

    # -- changes ---------------------------------------------------------------

    def init(self) -> list[str]:
        """Create the board with its git files; the names of the files it created."""
        missing = [name for name in (".gitignore", ".gitattributes") if not (self.store.root / name).exists()]
        with self.store.writing():
            self.store.write_git_files()
        return missing

    def create(
        self,
        subject: str,
        description: str = "",
        blocked_by: Iterable[int] = (),
        blocks: Iterable[int] = (),
        owner: str = "",
        metadata: dict | None = None,
    ) -> Outcome:
        check_subject(subject)
        check_description(description)
        check_owner(owner)
        blocked_by, blocks = sorted(set(blocked_by)), sorted(set(blocks))
        meta = {key: value for key, value in (metadata or {}).items() if value is not REMOVE}
        self._require_board(blocked_by + blocks)
        with self.store.writing():
            change = Change(self.store)
            for other in blocked_by + blocks:
                change.get(other)
            for other in blocked_by + blocks:
                _refuse_deleted(change.get(other), "name it in an edge")
            new_id = self.store.last_id() + 1
            record = new_record(new_id, subject, description, owner, meta, now())
            change.add(record)
            for blocker in blocked_by:
                _link(change, blocker, new_id)
            for dependent in blocks:
                _link(change, new_id, dependent)
            change.commit()
        outcome = Outcome(record)
        outcome.changed = True
        return outcome

    def update(
        self,
        task_id: int,
        subject: str | None = None,
        description: str | None = None,
        status: str | None = None,
        owner: str | None = None,
        add_blocked_by: Iterable[int] = (),
        add_blocks: Iterable[int] = (),
        remove_blocked_by: Iterable[int] = (),
        remove_blocks: Iterable[int] = (),
        metadata: dict | None = None,
        force: bool = False,
    ) -> Outcome:
        # usage first
        if subject is not None:
            check_subject(subject)
        if description is not None:
            check_description(description)
        if owner is not None:
            check_owner(owner)
        if status is not None:
            check_status(status)
        add_blocked_by, add_blocks = sorted(set(add_blocked_by)), sorted(set(add_blocks))
        remove_blocked_by, remove_blocks = sorted(set(remove_blocked_by)), sorted(set(remove_blocks))
        for added, removed, flag in (
            (add_blocked_by, remove_blocked_by, "blocked-by"),
            (add_blocks, remove_blocks, "blocks"),
        ):
            both = sorted(set(added) & set(removed))
            if both:
                raise UsageError(f"--add-{flag} and --remove-{flag} both name {_ids(both)}; say one")
        others = add_blocked_by + add_blocks + remove_blocked_by + remove_blocks
        if status == "deleted" and others:
            raise UsageError("--status deleted removes every edge of the task; leave out the edge flags")
        check_owner(self.caller)
        outcome = Outcome()
        self._require_board([task_id])
        with self.store.writing():
            change = Change(self.store)
            # then missing tasks
            record = change.get(task_id)
            for other in others:
                change.get(other)
            # then refusals
            wants_change = any(value is not None for value in (subject, description, status, owner, metadata)) or others
            if record["status"] == "deleted" and wants_change:
                raise Refused(
                    f"#{task_id} is already deleted"
                    if status == "deleted"
                    else f"#{task_id} is deleted; a deleted task cannot change"
                )
            for other in others:
                _refuse_deleted(change.get(other), "name it in an edge")
            if (status is not None and status != record["status"]) or (owner is not None and owner != record["owner"]):
                self._guard(record, force)
            edited = change.edit(task_id)
            if subject is not None:
                edited["subject"] = subject
            if description is not None:
                edited["description"] = description
            _apply_meta(edited, metadata)
            if status == "deleted":
                if owner is not None:
                    edited["owner"] = owner
                return self._delete(change, edited, outcome)
            # every task this change may set free, with whether it was ready before
            watched = set(add_blocks) | set(remove_blocks) | ({task_id} if remove_blocked_by else set())
            if status == "completed" and record["status"] != "completed":
                watched |= set(record["blocks"])  # only a completion can free dependents
            was_ready = {
                tid: graph.is_ready(found, change.lookup)
                for tid in sorted(watched)
                if (found := change.find(tid)) is not None
            }
            for blocker in remove_blocked_by:
                if not _unlink(change, blocker, task_id):
                    outcome.warnings.append(f"#{blocker} did not block #{task_id}")
            for dependent in remove_blocks:
                if not _unlink(change, task_id, dependent):
                    outcome.warnings.append(f"#{task_id} did not block #{dependent}")
            for blocker in add_blocked_by:
                _link(change, blocker, task_id)
            for dependent in add_blocks:
                _link(change, task_id, dependent)
            if status is not None:
                _set_status(change, edited, status, self.caller)
            if owner is not None:
                edited["owner"] = owner
            outcome.unblocked = [
                tid for tid, ready in was_ready.items() if not ready and graph.is_ready(change.get(tid), change.lookup)
            ]
            outcome.changed = bool(change.commit())
            outcome.record = edited
        return outcome

    def delete(self, task_id: int, force: bool = False) -> Outcome:
        return self.update(task_id, status="deleted", force=force)

    def claim(self, task_id: int | None, owner: str) -> Outcome:
        if not owner:
            raise UsageError("claim needs an owner: pass --owner NAME, --as NAME or set TASKS_OWNER")
        check_owner(owner)
        outcome = Outcome()
        if not self.store.root.is_dir():
            self._require_board([task_id] if task_id is not None else [])
            raise NotFound(f"no ready task to claim for {owner}")
        with self.store.writing():
            change = Change(self.store)
            if task_id is None:
                record = self._first_claimable(change, owner, outcome)
            else:
                record = change.get(task_id)
                self._check_claimable(change, record, owner)
            if not (record["status"] == "in_progress" and record["owner"] == owner):
                edited = change.edit(record["id"])
                edited["status"], edited["owner"] = "in_progress", owner
            outcome.changed = bool(change.commit())
            outcome.record = change.get(record["id"])
        return outcome

    def _first_claimable(self, change: Change, owner: str, outcome: Outcome) -> Record:
        for candidate in self.store.task_ids():
            try:
                record = change.get(candidate)
                claimable = record["owner"] in ("", owner) and graph.is_ready(record, change.lookup)
            except Corrupt as exc:  # its file or a blocker's: readiness unknown, so not taken; go on
                if f"skipped {exc.message}" not in outcome.warnings:
                    outcome.warnings.append(f"skipped {exc.message}")
                continue
            except NotFound:
                continue
            if claimable:
                return record
        raise NotFound(f"no ready task to claim for {owner}")

    def _check_claimable(self, change: Change, record: Record, owner: str) -> None:
        ref = f"#{record['id']}"
        if record["status"] == "deleted":
            raise Refused(f"{ref} is deleted")
        if record["owner"] not in ("", owner):
            raise Refused(f"{ref} is held by {record['owner']}")
        if record["status"] == "completed":
            raise Refused(f"{ref} is already completed")
        if record["status"] == "in_progress" and record["owner"] == owner:
            return  # already yours: claiming again succeeds
        blockers = graph.open_blockers(record, change.lookup)
        if blockers:
            raise Refused(f"{ref} is blocked by {_ids(blockers)}")

    def _require_board(self, task_ids: Iterable[int]) -> None:
        """Naming a task on a board that does not exist yet is 'not found', and must not
        create the board folder on the way (a failed command changes nothing)."""
        for task_id in task_ids:
            if not self.store.root.is_dir():
                self.store.task_ids()  # a path that is a file: usage error
                raise NotFound(f"no task #{task_id}")

    def _guard(self, record: Record, force: bool) -> None:
        """A named caller may not take over a task another owner is working on."""
        holder = record["owner"]
        if self.caller and not force and record["status"] == "in_progress" and holder not in ("", self.caller):
            raise Refused(
                f"#{record['id']} is in progress and held by {holder}; you are {self.caller} (pass --force to override)"
            )

    def _delete(self, change: Change, record: Record, outcome: Outcome) -> Outcome:
        """Logical delete: the file stays; every edge naming the task goes, on both sides."""
        task_id = record["id"]
        dependents = [dep for dep in record["blocks"] if change.find(dep)]
        was_ready = {dep: graph.is_ready(change.get(dep), change.lookup) for dep in dependents}
        # completed blockers name the task only in their own `blocks`: the one scan the contract allows
        for other_id in self.store.task_ids():
            if other_id == task_id:
                continue
            try:
                other = change.get(other_id)
            except Corrupt as exc:  # it may name the task; deleting past it would leave a dangling edge
                raise Corrupt(
                    f"cannot delete #{task_id}: {exc.message} (repair it, or see tasks check)", exc.file, exc.rule
                ) from None
            except NotFound:
                continue
            if task_id in other["blocks"] or task_id in other["blockedBy"]:
                edited = change.edit(other_id)
                edited["blocks"] = [x for x in edited["blocks"] if x != task_id]
                edited["blockedBy"] = [x for x in edited["blockedBy"] if x != task_id]
        edited = change.edit(task_id)
        edited["status"], edited["blockedBy"], edited["blocks"] = "deleted", [], []
        outcome.unblocked = [
            dep for dep in dependents if not was_ready[dep] and graph.is_ready(change.get(dep), change.lookup)
        ]
        outcome.changed = bool(change.commit())
        outcome.record = edited
        return outcome

    # -- check -----------------------------------------------------------------

    def check(self, fix: bool = False) -> list[dict]:
        from .check import run_check

        fix = fix and self.store.root.is_dir()  # nothing to repair on a board that does not exist
        lock = self.store.writing() if fix else self.store.reading()
        with lock:
            problems = run_check(self.store, Change(self.store) if fix else None)
        recovered = [
            {"file": None, "task": None, "rule": "interrupted-change", "message": note, "fixed": True}
            for note in self.store.recovered
        ]
        return recovered + problems


def _id_of(name: str) -> int | None:
    from .model import id_from_file_name

    return id_from_file_name(name)


def _refuse_deleted(record: Record, doing: str) -> None:
    if record["status"] == "deleted":
        raise Refused(f"#{record['id']} is deleted; cannot {doing}")


def _link(change: Change, blocker_id: int, dependent_id: int) -> None:
    """Add the edge blocker → dependent, refusing one that would close a cycle."""
    cycle = graph.cycle_through_new_edge(blocker_id, dependent_id, change.successors)
    if cycle:
        raise Refused(
            f"#{blocker_id} cannot block #{dependent_id}: that would close the cycle {graph.format_cycle(cycle)}"
        )
    blocker = change.edit(blocker_id)
    if dependent_id not in blocker["blocks"]:
        blocker["blocks"] = blocker["blocks"] + [dependent_id]
    if blocker["status"] in OPEN:
        dependent = change.edit(dependent_id)
        if blocker_id not in dependent["blockedBy"]:
            dependent["blockedBy"] = dependent["blockedBy"] + [blocker_id]


def _unlink(change: Change, blocker_id: int, dependent_id: int) -> bool:
    """Remove the edge blocker → dependent from both sides; False when there was none."""
    blocker, dependent = change.get(blocker_id), change.get(dependent_id)
    if dependent_id not in blocker["blocks"] and blocker_id not in dependent["blockedBy"]:
        return False
    change.edit(blocker_id)["blocks"] = [x for x in blocker["blocks"] if x != dependent_id]
    change.edit(dependent_id)["blockedBy"] = [x for x in dependent["blockedBy"] if x != blocker_id]
    return True


def _apply_meta(record: Record, metadata: dict | None) -> None:
    if not metadata:
        return
    merged = dict(record.get("metadata", {}))
    for key, value in metadata.items():
        if value is REMOVE:
            merged.pop(key, None)
        else:
            merged[key] = value
    record["metadata"] = merged


def _set_status(change: Change, record: Record, status: str, caller: str) -> None:
    """Move a live task to another live status under the rules of the contract."""
    old, task_id = record["status"], record["id"]
    if status == old:
        return
    if status in ("in_progress", "completed"):
        blockers = graph.open_blockers(record, change.lookup)
        if blockers:
            raise Refused(f"#{task_id} is blocked by {_ids(blockers)}")
    dependents = []
    if "completed" in (old, status):  # only completing and reopening touch the dependents
        dependents = [
            dep for dep in map(change.find, record["blocks"]) if dep is not None and dep["status"] != "deleted"
        ]
    if old == "completed":  # reopen: its finished dependents rested on it too
        for dep in dependents:
            edited = change.edit(dep["id"])
            if task_id not in edited["blockedBy"]:
                edited["blockedBy"] = edited["blockedBy"] + [task_id]
    if status == "completed":
        for dep in dependents:
            if task_id in dep["blockedBy"]:
                edited = change.edit(dep["id"])
                edited["blockedBy"] = [x for x in edited["blockedBy"] if x != task_id]
    if old == "in_progress" and status == "pending":
        record["owner"] = ""  # released; an --owner in the same update sets it again
    if status == "in_progress" and not record["owner"] and caller:
        record["owner"] = caller
    record["status"] = status
