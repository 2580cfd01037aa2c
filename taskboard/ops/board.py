"""Operations on the board, each one all-or-nothing change under the board lock.

A `Change` loads the few records an operation needs, lets it edit them in
memory, and writes at the end only those whose bytes differ, through the store's
journaled write. Every refusal is raised before anything is written. Each
operation returns an `Outcome` (taskboard.outcome): what it wrote, what it set
free, what happened, and notes; front ends word and print it.
"""

from __future__ import annotations

from ..core import graph
from ..core.errors import Changed, Corrupt, NotFound, Refused, Taken, TaskError, UsageError
from ..core.fields import OPEN, Record, loads, now, parent_of
from ..core.model import (
    FIELD,
    META_FIELDS,
    REMOVE,
    Patch,
    Unprintable,
    check_description,
    check_file_size,
    check_metadata,
    check_owner,
    check_subject,
    encode,
    file_name,
    ids_text,
    new_record,
    refuse_past_ceiling,
)
from ..core.outcome import Event, Note, Outcome
from ..disk.store import Store
from .change import Change, check_caller, link, require_board
from .coordination import LOCAL

TYPE_CHECKING = False  # typing costs ~5 ms of start-up; annotations are strings anyway
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any

    from ..core.outcome import Problem
    from ..disk.watch import Stop
    from .coordination import Authority
    from .query import Listing, Query


def _no_gate_check(change: Change, task_id: int, outcome: Outcome, force: bool) -> None:
    """A change that completes nothing has no gate to run."""


class Board:
    """The operations of the contract over one store, on behalf of one caller; claims
    decided by `authority` (taskboard.ops.coordination: the front end that opens the
    board says which)."""

    def __init__(self, store: Store, caller: str = "", authority: Authority = LOCAL):
        self.store = store
        self.caller = caller  # checked by every change (check_caller), never by a read
        self.authority = authority
        self.ref_notes: list[Note] = []  # what the authority had to say (claim refs that lag)
        self.moved_refs: dict[str, Any] | None = None  # claim refs moved before a change took the lock, by uid
        self.ref_undo: list[tuple[str, str, str | None]] = []  # how to put them back if it does not happen

    def local(self) -> Board:
        """This board with claims decided on this clone alone (claim --offline)."""
        return Board(self.store, self.caller)

    def change(self) -> Change:
        """A change on this board, journaled as made by the caller (else the login name)."""
        change = Change(self.store, check_caller(self.caller))
        change.guard = self._guard_moves
        change.keep = self._keep_runtime
        change.plan = self._plan_runtime
        return change

    def _keep_runtime(self, change: Change, moved: list[Record], write: Callable[..., None]) -> None:
        """The runtime state follows status and owner, and records a rewrite of a task that
        a completion in another worktree keeps closed here (taskboard.ops.claims), under
        its lock; a change with none of these writes its files alone."""
        if not (moved or change.runtime):
            from ..disk.state import state_of

            rewrites = change.rewrites()
            if not rewrites or not state_of(self.store).kept_closed(rewrites):
                write()
                return
        from . import claims

        claims.keep(self.store, change, moved, write)

    def _plan_runtime(self, change: Change, task_id: int, outcome: Outcome, **intent: Any) -> None:
        """What the runtime state will record of this change (taskboard.ops.claims.before_commit)."""
        from . import claims

        claims.before_commit(self.store, change, task_id, outcome, **intent)

    def _guard_moves(self, change: Change, moved: list[Record]) -> Any:
        """Before a change that moves status or owner is written: the authority agrees
        (claim refs follow, each by an exact compare-and-swap); the undo, if any moved."""
        notes, undo = self.authority.guard(self, change, moved)
        self.ref_notes += notes
        return undo

    # -- reading ---------------------------------------------------------------

    def get(self, task_id: int, neighbours: bool = False) -> Outcome:
        """One task; with `neighbours`, also the records its lists name (None where
        missing or unreadable), read under the same lock, and the damage met on the way
        (`damaged`: shown, then named, as a listing does)."""
        with self.store.reading() as notes:
            outcome = Outcome(archived_mark(self.store, self.store.read(task_id)))
            if neighbours:
                assert outcome.record is not None
                for other in outcome.record["blockedBy"] + outcome.record["blocks"]:
                    try:
                        outcome.neighbours[other] = archived_mark(self.store, self.store.read(other))
                    except NotFound:
                        outcome.neighbours[other] = None
                    except Corrupt as exc:
                        outcome.neighbours[other] = None
                        if exc.file not in [seen.file for seen in outcome.damaged]:
                            outcome.damaged.append(exc)
        outcome.notes = notes
        return outcome

    def with_history(self, listing: Listing) -> Listing:
        """The listing, its closed records read too (what a view needs to count a parent's
        finished children)."""
        if listing.shot.closed_text is None:
            from ..disk.index import load_history

            with self.store.reading():
                load_history(self.store, listing.shot)
        return listing

    def progress_of(self, record: Record) -> tuple[int, int] | None:
        """One task's (completed children, children), or None when it has none. The whole
        board is read only for a task known as a parent (index.known_parents): `get` of
        any other task reads its own file alone."""
        from ..disk.cache import known_parents

        if record["id"] not in known_parents(str(self.store.path)):
            return None
        return self.listing(history=True).progress().get(record["id"])

    def facts(self, records: list[Record]) -> dict[int, dict]:
        """What the runtime state adds to these tasks for a person (leases, failed attempts,
        claims in other worktrees, and on other machines as the claim authority sees them),
        a failed gate marked as trouble; nothing when it cannot be read: it never fails a
        view. The front ends make the names and notes safe to show."""
        from . import claims
        from .gates import is_gate_failure

        try:
            found = claims.facts(self.store, records)
            for task_id, elsewhere in self.authority.elsewhere(self.store, records).items():
                found.setdefault(task_id, {}).setdefault("elsewhere", elsewhere)
        except (TaskError, OSError):
            return {}
        for fact in found.values():  # a failed gate is trouble, not just a failed attempt
            if is_gate_failure(str(fact.get("last_failure") or "")):
                fact["gate"] = {"ok": False, "headline": fact["last_failure"]}
        return found

    def listing(self, history: bool = True, archive: bool = False) -> Listing:
        """The board as its files say it is now (taskboard.ops.query.read); with `archive`
        the archived tasks too."""
        from .query import read  # with the index it reads: a create or a get loads neither

        return read(self.store, history, archive)

    def select(self, listing: Listing, query: Query) -> list[Record]:
        """The records that pass every filter (see select_ids)."""
        return [listing.record(task_id) for task_id in self.select_ids(listing, query)]

    def select_ids(self, listing: Listing, query: Query) -> list[int]:
        """The ids of the tasks that pass every filter of `query`, in id order, or in ready
        order when only ready tasks can pass. Filters that only open tasks can pass look at
        the open ones alone (the listing may then be one without history)."""
        wanted, states, ready, blocked = query.statuses, query.states, query.ready, query.blocked
        shot = listing.shot
        if query.open_only and not (states or blocked or query.by_field):
            return self._open_ids(listing, query)
        hidden = self._not_offered(listing) if ready or "ready" in states else set()
        if query.open_only:
            candidates = [(task_id, shot.open[task_id]["status"]) for task_id in sorted(shot.open)]
        else:
            candidates = list(shot.statuses())
        late = now() if query.overdue else None
        by_field = query.by_field
        if not (wanted or states or ready or blocked or by_field):  # everything live: a listing of statuses
            return [task_id for task_id, status in candidates if query.include_deleted or status != "deleted"]
        chosen = []
        for task_id, status in candidates:
            if status == "deleted" and not (query.include_deleted or "deleted" in wanted):
                continue
            record = shot.open.get(task_id)
            if (wanted or states) and status not in wanted and not self._in_state(record, states, listing):
                continue
            if (ready or "ready" in states) and task_id in hidden:
                continue
            if (ready and not self._in_state(record, {"ready"}, listing)) or (
                blocked and not self._in_state(record, {"blocked"}, listing)
            ):
                continue
            if by_field and not query.fields_pass(record or listing.record(task_id), late):
                continue
            chosen.append(task_id)
        if ready or (states == {"ready"} and not wanted):
            chosen.sort(key=lambda task_id: graph.ready_order(shot.open[task_id]))
        return chosen

    def _open_ids(self, listing: Listing, query: Query) -> list[int]:
        """select_ids of the calls agents repeat, `ready` and `list --status pending`
        (or in_progress): filters on the status and readiness of open tasks alone, in
        one pass over what the index keeps of them, no record decoded (Snapshot.open_facts)."""
        shot, wanted = listing.shot, query.statuses
        facts = shot.open_facts()
        if not query.ready:
            return [task_id for task_id, status, *_ in facts if status in wanted]
        hidden = self._not_offered(listing)
        if hidden or wanted:
            facts = [fact for fact in facts if fact[0] not in hidden and (not wanted or fact[1] in wanted)]
        opened, damaged = shot.open_text, shot.damaged
        return graph.ready_ids(facts, lambda task_id: task_id in opened or task_id in damaged, now())

    def _not_offered(self, listing: Listing) -> set[int]:
        """Pending tasks `ready` leaves out: stuck, or claimed or completed in another
        worktree (taskboard.ops.claims) or where the claim authority sees (taskboard.ops.coordination).
        The pending records are made only for the one that asks (most often neither)."""
        from . import claims

        made: list[list[Record]] = []

        def pending() -> list[Record]:
            if not made:
                made.append([r for r in listing.open_records if r["status"] == "pending"])
            return made[0]

        return claims.not_offered(self.store, pending) | self.authority.held_elsewhere(self.store, pending)

    @staticmethod
    def _in_state(record: Record | None, states: set[str], listing: Listing) -> bool:
        """Whether an open record is in one of these states (a closed one, None, is in none)."""
        return record is not None and (
            ("ready" in states and graph.is_ready(record, listing.lookup))
            or ("blocked" in states and graph.is_blocked(record, listing.lookup))
        )

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
        **fields: Any,
    ) -> Outcome:
        """A new pending task. `fields`: the keys META_FIELDS declare, by name
        (`priority=1`, `labels=[...]`; None: not given), stored in its metadata."""
        check_subject(subject)
        check_description(description)
        check_owner(owner)
        meta = check_metadata({key: value for key, value in (metadata or {}).items() if value is not REMOVE})
        meta.update(meta_fields(fields))
        blocked_by, blocks = sorted(set(blocked_by)), sorted(set(blocks))
        self.require_board(blocked_by + blocks)
        from ..disk import journal  # what a create needs, found before it takes the lock (not while others wait)

        actor = journal.actor_of(check_caller(self.caller))  # the login name may take a look in the password database
        if not blocked_by and not blocks and meta.get("parent") is None:
            alone = self._create_alone(subject, description, owner, meta, actor)
            if alone is not None:
                return alone
        with self.store.writing() as notes:
            change = self.change()
            change.actor = actor
            for other in blocked_by + blocks:
                change.get(other)
            for other in blocked_by + blocks:
                _refuse_deleted(change.get(other), "name it in an edge")
            new_id = self.store.last_id() + 1
            refuse_past_ceiling(new_id)
            record = new_record(new_id, subject, description, owner, meta, now())
            change.add(record)
            outcome = Outcome(record)
            outcome.events.append(Event(new_id, "created"))
            for blocker in blocked_by:
                link(change, blocker, new_id, outcome)
            for dependent in blocks:
                link(change, new_id, dependent, outcome)
            _follow_parent(change, record, None, outcome)
            try:
                outcome.written = change.commit(outcome.events)
                outcome.journaled = change.journaled
            except (Taken, Changed):  # a writer without the lock came first (DESIGN §13): again, anew
                outcome = self.create(subject, description, blocked_by, blocks, owner, metadata, **fields)
        outcome.notes[:0] = notes
        return outcome

    def _create_alone(self, subject: str, description: str, owner: str, meta: dict, actor: str) -> Outcome | None:
        """A create that names no other task, without queueing behind other writers' disk
        syncs: its id is reserved and its file written and synced before it takes the
        board lock (Store.reserve); under the lock its file is only put in place and its
        line journaled, and what is left to sync is synced after. None where the board
        cannot take a reservation yet (its first create takes the lock for everything)."""
        from ..disk import journal

        store = self.store
        stamp = now()
        made: dict[int, bytes] = {}

        def content(task_id: int) -> bytes:  # one record per id: its uid is drawn once
            if task_id not in made:
                refuse_past_ceiling(task_id)
                record = new_record(task_id, subject, description, owner, meta, stamp)
                record["createdAt"] = record["updatedAt"] = stamp
                made[task_id] = encode(record)
                check_file_size(task_id, len(made[task_id]))
            return made[task_id]

        while True:
            held = store.reserve(content)
            if held is None:
                return None
            task_id, fd = held
            name, data = file_name(task_id), content(task_id)
            record = loads(data)  # what callers print is what the file says
            outcome = Outcome(record)
            outcome.events.append(Event(task_id, "created"))
            try:
                with store.writing() as notes:
                    store.last_id()  # the board's highest id, for the next writer (a look at the folder, at most once)
                    uids = {task_id: record["uid"]}  # the entry follows its task through a merge
                    entries = journal.entries(outcome.events, actor, journal.stamp(), uids)  # stamped in lock order
                    lines = {journal.shard_name(actor): journal.encode(entries)}
                    store.write({name: data}, lines, new=[name], reserved={name: fd})
            except (Taken, Changed):  # a writer without the lock took the name first (DESIGN §13): again
                continue
            finally:
                store.drop_reserved(task_id, fd)
            assert outcome.record is not None
            outcome.written, outcome.journaled, outcome.notes = [outcome.record], entries, notes
            return outcome

    def update(
        self,
        task_id: int,
        patch: Patch,
        force: bool = False,
        note: str = "",
        failed: bool = False,
        release: bool = False,
        retry: bool = False,
        gate_timeout: float | None = None,
    ) -> Outcome:
        """Apply one Patch to a task as one change. Errors come in the contract's order:
        usage, then missing tasks, then refusals; nothing is written before all pass.
        `note`: words for the journal about this change; `failed`: the change gives up
        a failed attempt (counted in the runtime state: taskboard.claims); `release`: it
        gives a task back, which a finished one is not; `retry`: forget the failed
        attempts (a stuck task may be claimed again). Completing a task with a gate runs
        the gate first (taskboard.gates), at most `gate_timeout` seconds."""
        patch.check()
        check_note(note)
        check_caller(self.caller)
        if patch.status != "completed":
            return self._follow(
                self._refs_first(
                    lambda: _redone(lambda: self._update(task_id, patch, force, note, failed, release, retry))
                )
            )
        from . import gates

        def attempt(gate_check: Any) -> Outcome:
            return self._refs_first(
                lambda: _redone(lambda: self._update(task_id, patch, force, note, failed, release, retry, gate_check))
            )

        return self._follow(gates.complete(self, task_id, gate_timeout, attempt))

    def _refs_first(self, run: Callable[[], Outcome]) -> Outcome:
        """Run a change whose claims the authority may have to move first, with the board
        lock let go (claims through a remote: no round trip ever holds the lock)."""
        return self.authority.first(self, run)

    def _follow(self, outcome: Outcome) -> Outcome:
        """What the claim authority had to say (claim refs that lag)."""
        outcome.notes += self.ref_notes
        self.ref_notes = []
        return outcome

    def _update(
        self,
        task_id: int,
        patch: Patch,
        force: bool,
        note: str,
        failed: bool,
        release: bool,
        retry: bool,
        gate_check: Any = _no_gate_check,
    ) -> Outcome:
        """update's change under the lock; `gate_check` (taskboard.gates) looks at the
        change just before its commit, and may stop it to run the task's gate first."""
        self.require_board([task_id])
        with self.store.writing() as notes:
            change = self.change()
            change.forced = force
            record = change.get(task_id)
            for other in patch.edges():
                change.get(other)
            if record["status"] == "deleted" and not patch.is_empty():
                raise Refused(
                    f"#{task_id} is already deleted"
                    if patch.status == "deleted"
                    else f"#{task_id} is deleted; a deleted task cannot change"
                )
            for other in patch.edges():
                _refuse_deleted(change.get(other), "name it in an edge")
            if (failed or release) and record["status"] == "completed":
                raise Refused(
                    f"#{task_id} is completed, not in progress; reopen it to work on it again", "release-finished"
                )
            outcome = Outcome()
            self._guard(record, patch, force, outcome)
            status, owner = patch.status, patch.owner
            old_status, old_owner = record["status"], record["owner"]
            edited = change.edit(task_id)
            old_parent = parent_of(edited)
            fields = patch.apply(edited)
            if status == "deleted":
                if owner is not None:
                    edited["owner"] = owner
                self._delete(change, edited, outcome)
            else:
                _follow_parent(change, edited, old_parent, outcome)
                self._change_live(change, edited, patch, outcome)
            if owner is not None and edited["owner"] != old_owner:
                fields.append("owner")
            if fields:
                outcome.events.insert(0, Event(task_id, "edited", fields=sorted(fields)))
            if edited["status"] != old_status:
                outcome.events.append(Event(task_id, _transition(old_status, edited["status"]), old=old_status))
            if note and not failed:
                outcome.events.append(Event(task_id, "note", text=note))
            if self.caller or retry or failed:  # leases, failed attempts (taskboard.claims)
                from . import claims

                claims.before_commit(
                    self.store, change, task_id, outcome, force=force, retry=retry, failure=note if failed else None
                )
            gate_check(change, task_id, outcome, force)  # may stop here to run the gate first
            outcome.written = change.commit(outcome.events)
            outcome.journaled = change.journaled
            outcome.record = edited
        outcome.notes[:0] = notes
        return outcome

    def _change_live(self, change: Change, edited: Record, patch: Patch, outcome: Outcome) -> None:
        """Edges, status and owner of a live task, and what that sets free."""
        task_id, status = edited["id"], patch.status
        # every task this change may set free, with whether it was ready before
        watched = set(patch.add_blocks) | set(patch.remove_blocks) | ({task_id} if patch.remove_blocked_by else set())
        if status == "completed" and edited["status"] != "completed":
            watched |= set(edited["blocks"])  # only a completion can free dependents
        was_ready = {
            tid: graph.is_ready(found, change.lookup)
            for tid in sorted(watched)
            if (found := change.find(tid)) is not None
        }
        for blocker in patch.remove_blocked_by:
            _unlink(change, blocker, task_id, outcome)
        for dependent in patch.remove_blocks:
            _unlink(change, task_id, dependent, outcome)
        for blocker in patch.add_blocked_by:
            link(change, blocker, task_id, outcome)
        for dependent in patch.add_blocks:
            link(change, task_id, dependent, outcome)
        if status is not None:
            for tid in _set_status(self.store, change, edited, status, self.caller):
                was_ready.setdefault(tid, False)  # it named an open blocker until now
        if patch.owner is not None:
            edited["owner"] = patch.owner
        outcome.unblocked = [
            tid
            for tid, ready in sorted(was_ready.items())
            if not ready and graph.is_ready(change.get(tid), change.lookup)
        ]

    def archive(self, days: int = 30, dry_run: bool = False) -> Outcome:
        """Move finished history aside (taskboard.ops.archiving)."""
        check_caller(self.caller)
        from . import archiving

        return archiving.archive(self, days, dry_run)

    def restore(self, task_id: int) -> Outcome:
        """Bring an archived or deleted task back (taskboard.ops.archiving)."""
        check_caller(self.caller)
        from . import archiving

        return self._follow(archiving.restore(self, task_id))

    def delete(self, task_id: int, force: bool = False) -> Outcome:
        return self.update(task_id, Patch(status="deleted"), force=force)

    def done(self, task_id: int, note: str = "", force: bool = False, gate_timeout: float | None = None) -> Outcome:
        """Complete a task (`tasks done`): update to completed, with a note for the journal."""
        return self.update(task_id, Patch(status="completed"), force=force, note=note, gate_timeout=gate_timeout)

    def release(self, task_id: int, note: str = "", failed: bool = False, force: bool = False) -> Outcome:
        """Give a task back (`tasks release`): in progress → pending, the owner cleared; a
        pending task stays as it is. A completed task is refused: that is a reopen.
        `failed` records a failed attempt (with the note, in the journal)."""
        return self.update(task_id, Patch(status="pending"), force=force, note=note, failed=failed, release=True)

    def reopen(self, task_id: int, cascade: bool = False, note: str = "") -> Outcome:
        """Completed → pending (the seeds' scoped re-entry); with `cascade` every completed
        task downstream too, as one change. Each task reopened gets its own event (the
        others name the seed), so the journal shows it for every one of them."""
        check_note(note)
        self.require_board([task_id])
        return self._follow(self._refs_first(lambda: self._reopen(task_id, cascade, note)))

    def _reopen(self, task_id: int, cascade: bool, note: str) -> Outcome:
        with self.store.writing() as notes:
            change = self.change()
            record = change.get(task_id)
            if record["status"] != "completed":
                raise Refused(
                    f"#{task_id} is {record['status'].replace('_', ' ')}, not completed; only a completed task "
                    "can be reopened",
                    "not-completed",
                )
            downstream = graph.downstream(task_id, change.successors) if cascade else set()
            finished = sorted(
                tid for tid in downstream if (found := change.find(tid)) and found["status"] == "completed"
            )
            outcome = Outcome()
            for reopened in [task_id, *finished]:
                _set_status(self.store, change, change.edit(reopened), "pending", self.caller)
                seed = {"seed": task_id} if reopened != task_id else {"cascade": finished} if finished else {}
                outcome.events.append(Event(reopened, "reopened", old="completed", **seed))
            if note:
                outcome.events.append(Event(task_id, "note", text=note))
            outcome.written = change.commit(outcome.events)
            outcome.journaled = change.journaled
            outcome.record = change.get(task_id)
        outcome.notes[:0] = notes
        return outcome

    # -- the journal (taskboard.journal) ------------------------------------------------

    def note(self, task_id: int, text: str) -> Outcome:
        """Journal a note about a task; no task file changes. The outcome's `journaled`
        holds the entry."""
        check_note(text)
        if not text.strip():
            raise UsageError("the note is empty; say what happened", "note")
        self.require_board([task_id])
        with self.store.writing() as notes:
            outcome = Outcome(self._existing(task_id))
            outcome.events.append(Event(task_id, "note", text=text))
            change = self.change()
            if self.caller:  # a note by the holder renews its lease (taskboard.claims)
                from . import claims

                claims.before_commit(self.store, change, task_id, outcome, force=True)
            change.commit(outcome.events)
            outcome.journaled = change.journaled
        outcome.notes[:0] = notes
        return outcome

    def log(self, task_id: int | None = None, limit: int | None = None) -> Outcome:
        """The journal, oldest first (only what concerns `task_id`; only the last `limit`).
        The outcome's `journaled` holds the entries, its notes the damaged lines skipped."""
        from ..disk import journal

        with self.store.reading() as notes:
            uid = None
            if task_id is not None:
                found = self._existing(task_id)
                uid = found.get("uid") if found is not None and isinstance(found.get("uid"), str) else None
            entries, damaged = journal.read(self.store.root, task_id, limit, uid)
            self._follow_uids(entries)
        outcome = Outcome()
        outcome.journaled = entries
        outcome.notes = notes
        if damaged:
            files = sorted({damage.file for damage in damaged})
            outcome.notes.append(
                Note(
                    "journal-damaged",
                    f"skipped {len(damaged)} damaged journal line(s) in {', '.join(files)}",
                    count=len(damaged),
                    files=files,
                )
            )
        return outcome

    def _follow_uids(self, entries: list[dict]) -> None:
        """Each entry names its task by the id the task has now: a merge may have moved it
        (the entry's uid says which task it was). One read per task named; the whole
        board only when one moved."""
        uid_at: dict[int, Any] = {}
        moved: dict[str, int] | None = None
        for entry in entries:
            uid, task_id = entry.get("uid"), entry.get("task")
            if not isinstance(uid, str) or not isinstance(task_id, int):
                continue
            if task_id not in uid_at:
                try:
                    uid_at[task_id] = self.store.read(task_id).get("uid")
                except (NotFound, Corrupt):
                    uid_at[task_id] = None
            if uid_at[task_id] == uid:
                continue
            if moved is None:
                records, _damaged = self.store.read_all()
                moved = {r["uid"]: r["id"] for r in records if isinstance(r.get("uid"), str)}
            if uid in moved:
                entry["task"] = moved[uid]

    def _existing(self, task_id: int) -> Record | None:
        """The task's record; None when its file exists but cannot be read (what happened
        to a damaged task is still worth reading and noting). NotFound when there is none."""
        try:
            return self.store.read(task_id)
        except Corrupt:
            return None

    def claim(self, task_id: int | None, owner: str, lease: float | None = None) -> Outcome:
        """Take task_id, or the first claimable task in ready order, for owner
        (taskboard.claims); with a lease of `lease` seconds the claim ends unless renewed.
        Nothing to claim says why (held, blocked, done: claims.why_none_ready)."""
        try:
            return self.claim_as_is(task_id, owner, lease)
        except NotFound as exc:
            if exc.reason != "none-ready":
                raise
            from . import claims

            why = claims.why_none_ready(self, owner, self._leased)
            raise NotFound(f"{exc.message}: {why}", "none-ready", owner=owner) from None

    def claim_as_is(self, task_id: int | None, owner: str, lease: float | None = None) -> Outcome:
        """`claim` without the words of why nothing was found (a waiter asks again and again)."""
        outcome = self.authority.claim(self, task_id, owner, lease)
        if outcome is None:  # the authority has no say: this clone's own rules decide
            from . import claims

            outcome = claims.claim(self, task_id, owner, lease)
        return outcome

    def claim_wait(
        self,
        task_id: int | None,
        owner: str,
        lease: float | None = None,
        seconds: float | None = None,
        stop: Stop | None = None,
        catch_up: Callable[[Board], None] | None = None,
    ) -> Outcome:
        """Claim; when nothing is claimable yet but something could still come to owner,
        wait for it (at most `seconds`, or until `stop` is set), holding no lock
        (taskboard.claims); the authority says what to fetch meanwhile (claims through a
        remote: the claim refs, and, by `catch_up` (the front end's: git.sync.waiter),
        the board when they say work ended on another machine)."""
        from . import claims

        meanwhile = self.authority.poll(self.store, self, catch_up)
        return claims.claim_wait(self, task_id, owner, lease, seconds, meanwhile, stop, self._leased)

    def _leased(self, records: list[Record]) -> dict[int, float]:
        """When the leases of these tasks' claims kept where this board does not see run out."""
        return self.authority.leased(self.store, records)

    def renew(self, task_id: int, lease: float | None = None) -> Outcome:
        """The caller renews its lease on task_id; no task file changes (taskboard.claims)."""
        from . import claims

        self.ref_notes += self.authority.renew(self, task_id, lease)  # a claim taken over elsewhere is refused
        return self._follow(claims.renew(self, task_id, lease))

    def fail(self, task_id: int, note: str) -> Outcome:
        """Record a failed attempt at task_id without changing it (a failed gate)."""
        from . import claims

        return claims.fail(self, task_id, note)

    def require_board(self, task_ids: Iterable[int]) -> None:
        require_board(self.store, self.caller, task_ids)

    def _guard(self, record: Record, patch: Patch, force: bool, outcome: Outcome) -> None:
        """Ownership (DESIGN §3, tightened in §7): a named caller may not change the
        subject, description, status or owner of a task another owner holds in progress,
        nor start or complete a pending task reserved for another owner, unless forced;
        an override is recorded with both names."""
        holder = record["owner"]
        if holder in ("", self.caller) or record["status"] not in OPEN:
            return
        if record["status"] == "in_progress":
            touched = [name for name in _GUARDED if patch.values.get(name, record[name]) != record[name]]
            if not touched:
                return
            message = f"#{record['id']} is in progress and held by {holder}; you are {self.caller}"
        else:
            if patch.status not in ("in_progress", "completed"):
                return
            message = f"#{record['id']} is reserved for {holder}; you are {self.caller}"
        if not self.caller:  # a person at the shell: trusted, but never silently (DESIGN §3)
            from ..disk.journal import login_name

            by = login_name()
            outcome.events.append(Event(record["id"], "forced", holder=holder, by=by))
            said = f"#{record['id']} was {'held' if record['status'] == 'in_progress' else 'reserved'} by {holder}"
            outcome.notes.append(
                Note(
                    "override", f"{said}: changed by {by} as an override (journaled)", task=record["id"], holder=holder
                )
            )
            return
        if not force:
            raise Refused(message, "held", task=record["id"], holder=holder, caller=self.caller)
        outcome.events.append(Event(record["id"], "forced", holder=holder, by=self.caller))

    def _delete(self, change: Change, record: Record, outcome: Outcome) -> None:
        """Logical delete: the file stays; every edge naming the task goes, on both sides."""
        task_id = record["id"]
        dependents = [dep for dep in record["blocks"] if change.find(dep)]
        was_ready = {dep: graph.is_ready(change.get(dep), change.lookup) for dep in dependents}
        # completed blockers name the task only in their own `blocks`: the one scan the contract allows,
        # the archive included (an archived task's history edge may name it)
        others = self.store.task_ids()
        archived = set(self.store.archived_ids()) - set(others)
        change.stay |= archived  # an edge dropped from an archived task leaves it archived
        others += sorted(archived)
        for other_id in others:
            if other_id == task_id:
                continue
            try:
                other = change.get(other_id)
            except Corrupt as exc:  # it may name the task; deleting past it would leave a dangling edge
                raise Corrupt(
                    f"cannot delete #{task_id}: {exc.message} (repair that file first)",
                    exc.file,
                    exc.rule,
                    "delete-past-damage",
                    task=task_id,
                    cause=exc.message,
                    cause_reason=exc.reason,
                ) from None
            except NotFound:
                continue
            if task_id in other["blocks"] or task_id in other["blockedBy"] or parent_of(other) == task_id:
                edited = change.edit(other_id)
                edited["blocks"] = [x for x in edited["blocks"] if x != task_id]
                edited["blockedBy"] = [x for x in edited["blockedBy"] if x != task_id]
                if parent_of(edited) == task_id:  # its parent is gone: the mark goes with the edge
                    edited["metadata"] = {k: v for k, v in edited["metadata"].items() if k != "parent"}
        record["status"], record["blockedBy"], record["blocks"] = "deleted", [], []
        outcome.unblocked = [
            dep for dep in dependents if not was_ready[dep] and graph.is_ready(change.get(dep), change.lookup)
        ]

    # -- check -----------------------------------------------------------------

    def check(self, fix: bool = False) -> list[Problem]:
        """Every problem on the board (taskboard.check); with `fix`, the repairs that have
        one right answer made as one change. An interrupted change the check completed
        first is reported as a fixed problem."""
        from ..core.outcome import Problem
        from .check import run_check

        fix = fix and self.store.root.is_dir()  # nothing to repair on a board that does not exist
        lock = self.store.writing() if fix else self.store.reading()
        with lock as notes:
            problems = run_check(self.store, self.change() if fix else None)
            from .claims import state_problems

            problems += state_problems(self.store, fix)
        recovered = [Problem(None, None, "interrupted-change", note.message, fixed=True) for note in notes]
        return recovered + problems


# What a named caller may not change on a task another owner holds (DESIGN §7).
_GUARDED = ("subject", "description", "status", "owner")
MAX_NOTE = 65536


def archived_mark(store: Store, record: Record) -> Record:
    """The record as shown: a copy marked `"archived": true` when it was read from the
    archive folder (the mark is never written to a file)."""
    if record["id"] in store.archived:
        return {**record, "archived": True}
    return record


def check_note(note: str) -> str:
    """A note for the journal: text like a description (newlines and tabs allowed)."""
    if len(note) > MAX_NOTE:
        raise UsageError(f"the note is {len(note)} characters long; at most {MAX_NOTE} are allowed", "note")
    try:
        note.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError("the note is not valid UTF-8 text", "note") from None
    if _CONTROL_IN_NOTE.search(note):
        raise UsageError("the note contains a control character other than newline or tab", "note")
    return note


_CONTROL_IN_NOTE = Unprintable("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def meta_fields(fields: dict[str, Any]) -> dict[str, Any]:
    """Values of META_FIELDS given by name (None: not given), checked and as the record
    keeps them; empty labels are left out."""
    declared = {field.name for field in META_FIELDS}
    unknown = sorted(set(fields) - declared)
    if unknown:
        raise TypeError(f"no field {', '.join(unknown)} in metadata")
    found = {}
    for name, given in fields.items():
        if given is not None:
            value = FIELD[name].check(given)  # type: ignore[misc]  # META_FIELDS have a check
            if value != []:
                found[name] = value
    return found


def _transition(old: str, new: str) -> str:
    """The event a status change is: completed, deleted, reopened, released or started."""
    if new in ("completed", "deleted"):
        return new
    if old == "completed":
        return "reopened"
    return "released" if new == "pending" else "started"


def _refuse_deleted(record: Record, doing: str) -> None:
    if record["status"] == "deleted":
        raise Refused(f"#{record['id']} is deleted; cannot {doing}")


def _follow_parent(change: Change, record: Record, old_parent: int | None, outcome: Outcome) -> None:
    """The edge that comes and goes with the parent mark (DESIGN §14): the child blocks its
    parent. A new parent must be a live task that is not completed (its work would be
    done before its part is), and not the task itself."""
    task_id, parent = record["id"], parent_of(record)
    if parent == old_parent:
        return
    if old_parent is not None and change.find(old_parent) is not None:
        _unlink(change, task_id, old_parent, outcome, quiet=True)
    if parent is None:
        return
    if parent == task_id:
        raise Refused(f"#{task_id} cannot be its own parent", "parent-self", task=task_id)
    found = change.get(parent)  # missing: 3
    _refuse_deleted(found, "give it a child")
    if found["status"] == "completed":
        raise Refused(
            f"#{parent} is completed; reopen it (tasks reopen {parent}) before giving it a new child",
            "parent-completed",
            task=task_id,
            parent=parent,
        )
    link(change, task_id, parent, outcome)


def _unlink(change: Change, blocker_id: int, dependent_id: int, outcome: Outcome, quiet: bool = False) -> None:
    """Remove the edge blocker → dependent from both sides; a note when there was none."""
    blocker, dependent = change.get(blocker_id), change.get(dependent_id)
    if dependent_id not in blocker["blocks"] and blocker_id not in dependent["blockedBy"]:
        if quiet:
            return
        outcome.notes.append(
            Note(
                "not-linked",
                f"#{blocker_id} did not block #{dependent_id}",
                blocker=blocker_id,
                dependent=dependent_id,
            )
        )
        return
    change.edit(blocker_id)["blocks"] = [x for x in blocker["blocks"] if x != dependent_id]
    change.edit(dependent_id)["blockedBy"] = [x for x in dependent["blockedBy"] if x != blocker_id]
    outcome.events.append(Event(dependent_id, "unlinked", blocker=blocker_id, dependent=dependent_id))


def _set_status(store: Store, change: Change, record: Record, status: str, caller: str) -> list[int]:
    """Move a live task to another live status under the rules of the contract; the
    tasks a completion cleared that named it in `blockedBy` alone (one side of an edge,
    as the s12 family writes it)."""
    old, task_id = record["status"], record["id"]
    if status == old:
        return []
    if status in ("in_progress", "completed"):
        blockers = graph.open_blockers(record, change.lookup)
        if blockers:
            raise Refused(f"#{task_id} is blocked by {ids_text(blockers)}")
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
    one_sided = _clear_completed(store, change, task_id, dependents) if status == "completed" else []
    if old == "in_progress" and status == "pending":
        record["owner"] = ""  # released; an --owner in the same update sets it again
    if status == "in_progress" and not record["owner"] and caller:
        record["owner"] = caller
    record["status"] = status
    return one_sided


def _clear_completed(store: Store, change: Change, task_id: int, dependents: list[Record]) -> list[int]:
    """A completed task leaves every `blockedBy`: its dependents' (the tasks its `blocks`
    names), and any other open task's that names it; those others, in id order."""
    for dep in dependents:
        if task_id in dep["blockedBy"]:
            edited = change.edit(dep["id"])
            edited["blockedBy"] = [x for x in edited["blockedBy"] if x != task_id]
    one_sided = _named_in_blocked_by(store, change, task_id, {dep["id"] for dep in dependents})
    for dep_id in one_sided:
        edited = change.edit(dep_id)
        edited["blockedBy"] = [x for x in edited["blockedBy"] if x != task_id]
    return one_sided


REDO = 5  # how many times a change is redone when a writer without the lock came first


def _redone(attempt: Callable[[], Outcome]) -> Outcome:
    """Run a change; when a writer that takes no lock changed a file it read before it could
    put its own in place (Changed: nothing was written), read again and redo it, a few
    times; then the change is refused as busy (exit 5), nothing changed (DESIGN §13)."""
    for _ in range(REDO - 1):
        try:
            return attempt()
        except Changed:
            continue
    return attempt()


def _named_in_blocked_by(store: Store, change: Change, task_id: int, known: set[int]) -> list[int]:
    """Open tasks other than `known` whose `blockedBy` names task_id: a writer of the s12
    family writes the dependent's side of an edge alone (DESIGN §13). Found among the
    open records through the board's cache (taskboard.index), as `claim` finds ready work:
    no closed record is read."""
    from ..disk.index import snapshot

    shot = snapshot(store)
    return [
        tid
        for tid in sorted(shot.open)
        if tid != task_id and tid not in known and task_id in shot.open[tid]["blockedBy"]
    ]
