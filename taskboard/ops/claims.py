"""The claim machinery: claiming (with a lease), taking over an expired lease, renewing,
failed attempts and stuck tasks, claims the worktrees of one clone share, and waiting
until a task can be claimed. The board's operations (taskboard.board) call these; the
runtime state itself is taskboard.state.

How the runtime state follows the task files: a claim writes its entry (holder, board,
lease) before the task file, under the board lock and then the state lock, so two
worktrees racing for one task meet in the state lock and exactly one wins. Every other
change that moves a task's status or owner brings the entry up to date in the same
commit (`record`, once its intent is in place and before its files move; a recovery
replays it): released → no claim of the holder, wherever in the clone it was made,
completed → a `done` mark other worktrees honour, failed → one more attempt. On its own
board the task file is the truth: an entry that disagrees with it (a process killed
between the two writes) is ignored.
"""

from __future__ import annotations

import os
import time

from ..core import graph
from ..core.errors import NotFound, Refused, UsageError
from ..core.fields import OPEN, STUCK_AFTER, TIME_FORMAT, dumps, now, waits, when_of
from ..core.model import check_owner, ids_text, new_uid
from ..core.outcome import Event, Note, Outcome
from ..disk.state import (
    MAX_NOTE,
    REMOTE_NAME,
    Entry,
    State,
    duration_text,
    follow,
    format_duration,
    is_uid,
    iso,
    reopened_since,
    state_of,
)

TYPE_CHECKING = False  # typing costs ~5 ms of start-up; annotations are strings anyway
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from ..core.fields import Record
    from ..disk.store import Store
    from ..disk.watch import Stop
    from .change import Change, Desk

    Leased = Callable[[list[Record]], dict[int, float]]

WAKE_AFTER_EXPIRY = 0.05  # a waiter wakes this long after a lease runs out (well inside the contract's 1 s)


class Runtime:
    """The runtime state as one operation sees it: entries read at most once, one clock."""

    def __init__(self, state: State, now: float | None = None):
        self.state = state
        self.now = time.time() if now is None else now
        self._names: set[str] | None = None
        self._entries: dict[str, Entry] = {}

    def has(self, record: Record) -> bool:
        """Whether the task has runtime state at all (one listing of the folder, once)."""
        return record.get("uid") in self.names()

    def names(self) -> set[str]:
        """The uids of the tasks that have runtime state (one listing of the folder, once)."""
        if self._names is None:
            self._names = self.state.names()
        return self._names

    def entry(self, record: Record) -> Entry:
        uid = record.get("uid")
        if not isinstance(uid, str) or not is_uid(uid):
            return Entry("")
        if uid not in self._entries:
            if self._names is None:
                self._names = self.state.names()
            self._entries[uid] = self.state.read(uid) if uid in self._names else Entry(uid)
        return self._entries[uid]

    def here(self, mark: dict | None) -> bool:
        """Whether a claim or done mark was made on this board (this worktree)."""
        return mark is not None and mark["board"] == self.state.board

    def elsewhere(self, record: Record, entry: Entry) -> tuple[str, dict] | None:
        """("claimed", claim) while another worktree holds the task (a lease it let expire
        no longer counts), ("completed", done) once another worktree completed it, unless
        this board's file reopened it since (reopened_since: a reopen made in another clone
        and merged in; the file wins)."""
        if entry.claim and not self.here(entry.claim) and not entry.expired(self.now):
            return "claimed", entry.claim
        if entry.done and not self.here(entry.done) and not reopened_since(record, entry.done, self.state.board):
            return "completed", entry.done
        return None

    def claim_here(self, record: Record, entry: Entry) -> dict | None:
        """The claim behind the record's holder on this board, when the entry agrees with the file."""
        claim = entry.claim
        if record["status"] == "in_progress" and self.here(claim) and claim and claim["owner"] == record["owner"]:
            return claim
        return None

    def rewound(self, record: Record, entry: Entry) -> dict | None:
        """The claim made on this board whose lease still runs, of a task whose file says
        pending and was last written before the claim was taken: a checkout or stash put an
        older file back, and the claim is honoured until the lease ends. A file written since
        (another writer gave the task back: it keeps the claim's `updatedAt` or sets a later
        one) wins (DESIGN §13)."""
        claim = entry.claim
        if not claim or not self.here(claim) or not claim.get("lease") or entry.expired(self.now):
            return None
        if record["status"] != "pending" or not _written_before(record, claim.get("at")):
            return None
        return claim

    def stale(self, record: Record, entry: Entry) -> bool:
        """Whether the holder's lease on this board ran out (anyone may take the task over)."""
        return self.claim_here(record, entry) is not None and entry.expired(self.now)


def _written_before(record: Record, moment: Any) -> bool:
    """Whether the record's `updatedAt` (second precision, compared as text) names a second
    before `moment` (seconds since the epoch)."""
    updated = record.get("updatedAt")
    if type(updated) is not str or type(moment) not in (int, float):
        return False
    return updated < iso(moment)


def _where(mark: dict) -> str:
    return f"in another worktree ({mark['board']})"


# -- claiming --------------------------------------------------------------------------------------


def claim(
    board: Desk[Store], task_id: int | None, owner: str, lease: float | None = None, lapsed: float | None = None
) -> Outcome:
    """Take task_id (or the first claimable task in ready order) for owner, optionally with a
    lease of `lease` seconds; taking over a task whose lease ran out is journaled, and so is
    resuming one's own (`lapsed`: when the owner's claim ran out where this board does not
    keep it, a claim ref on the remote)."""
    check_claimer(owner)
    store = board.store
    if not os.path.isdir(store.path):
        board.require_board([task_id] if task_id is not None else [])
        raise NotFound(f"no ready task to claim for {owner}")
    state = state_of(store)
    with store.writing() as notes, state.locked():
        runtime = Runtime(state)
        change = board.change()
        outcome = Outcome()
        if task_id is None:
            record = _first_claimable(store, change, runtime, owner, outcome)
        else:
            record = change.get(task_id)
            refusal = refusal_of(change, runtime, record, owner)
            if refusal is not None:
                raise refusal
        ref = record["id"]
        entry = _take(change, runtime, record, owner, lease, outcome, lapsed)
        entry.task = ref
        state.write(entry)  # before the task file: what other worktrees go by
        outcome.written = change.commit(outcome.events)
        outcome.journaled = change.journaled
        outcome.record = change.get(ref)
        if entry.claim and entry.claim.get("lease"):
            outcome.notes.append(lease_note(ref, entry))
    outcome.notes[:0] = notes
    return outcome


def _take(
    change: Change,
    runtime: Runtime,
    record: Record,
    owner: str,
    lease: float | None,
    outcome: Outcome,
    ended: float | None = None,
) -> Entry:
    """Make `owner` the holder of `record` in the change (with the events of a claim and
    of a takeover or a resumption) and in its runtime entry (not yet written); the entry.
    `ended`: when the owner's own claim ran out where this board does not keep it."""
    ref, state = record["id"], runtime.state
    entry = runtime.entry(record)
    mine = record["status"] == "in_progress" and record["owner"] == owner
    runtime.now = time.time()  # a lease counts from here, the end of the search, not its start
    edited = change.edit(ref)
    if not is_uid(edited.get("uid")):  # a hand-written record: the state needs its identity now
        edited["uid"] = new_uid()
        entry = Entry(edited["uid"])
    stale = mine and runtime.stale(record, entry)
    lapsed = stale or (mine and ended is not None)
    if lapsed:  # the owner's own claim ended with its lease: this claim is a new one (a restarted agent)
        expired = iso((entry.expires() if stale else ended) or runtime.now)
        outcome.events.append(
            Event(ref, "claimed", owner=owner, **({"lease": lease} if lease else {}), resumed=True, expired=expired)
        )
        outcome.notes.append(
            Note("resumed", f"resumed #{ref}: your lease on it ran out at {expired}; it is yours again", task=ref)
        )
    if not mine:
        previous = _previous_holder(runtime, record, entry, owner)
        edited["status"], edited["owner"] = "in_progress", owner
        outcome.events.append(Event(ref, "claimed", owner=owner, **({"lease": lease} if lease else {})))
        if previous is not None:
            outcome.events.append(Event(ref, "takeover", **previous, by=owner))
            expired = f" at {previous['expired']}" if previous.get("expired") else ""
            outcome.notes.append(
                Note(
                    "takeover",
                    f"took #{ref} over from {previous['holder']}, whose lease ran out{expired}",
                    task=ref,
                    holder=previous["holder"],
                )
            )
    held = runtime.claim_here(record, entry) if mine and not lapsed else None
    if held is not None:  # claiming again what you hold renews it (and sets a lease if asked)
        entry.claim = {**held, "renewed": runtime.now, "lease": lease or held.get("lease")}
    else:
        entry.claim = {"owner": owner, "board": state.board, "at": runtime.now, "renewed": runtime.now}
        entry.claim["lease"] = lease
    if entry.claim["lease"] is None and not state.shared:
        entry.claim = None  # a claim without a lease on an unshared board: the task file says it all
    if entry.done and runtime.here(entry.done):
        entry.done = None
    return entry


def check_claimer(owner: str) -> None:
    if not owner:
        raise UsageError("claiming needs an owner: name one, or set TASKS_OWNER", "owner-needed")
    check_owner(owner)


def _previous_holder(runtime: Runtime, record: Record, entry: Entry, owner: str) -> dict | None:
    """Whom a claim takes the task from (their lease ran out), as event data; None when nobody."""
    holder = record["owner"]
    if record["status"] == "in_progress" and holder not in ("", owner):
        expires = entry.expires()
        return {"holder": holder, "expired": iso(expires) if expires is not None else None}
    claim = entry.claim
    if claim and not runtime.here(claim) and claim["owner"] != owner:  # held in another worktree, lease run out
        expires = entry.expires()
        return {"holder": claim["owner"], "expired": iso(expires) if expires else None, "board": claim["board"]}
    return None


def lease_note(task_id: int, entry: Entry) -> Note:
    assert entry.claim is not None
    seconds, expires = entry.claim["lease"], entry.expires() or 0.0
    return Note(
        "lease",
        f"#{task_id} is leased to {entry.claim['owner']} for {duration_text(seconds)}, until {iso(expires)}",
        task=task_id,
        owner=entry.claim["owner"],
        seconds=seconds,
        expires=iso(expires),
    )


def refusal_of(change: Change, runtime: Runtime, record: Record, owner: str) -> Refused | None:
    """Why `owner` may not claim this task now (the error to raise), or None when it may."""
    ref, status, holder = f"#{record['id']}", record["status"], record["owner"]
    entry = runtime.entry(record)
    if status == "deleted":
        return Refused(f"{ref} is deleted")
    refusal = _refusal_elsewhere(record["id"], runtime.elsewhere(record, entry))
    rewound = runtime.rewound(record, entry)
    if refusal is None and rewound is not None and rewound["owner"] != owner:
        refusal = Refused(
            f"{ref} is held by {rewound['owner']}, whose claim's lease still runs, though its file says pending "
            "(a checkout or stash rewound it; see tasks check)",
            "held-rewound",
            task=record["id"],
            holder=rewound["owner"],
        )
    if refusal is None and status == "completed":
        refusal = Refused(f"{ref} is already completed")
    if refusal is not None or (status == "in_progress" and holder == owner):
        return refusal  # None: already yours, and claiming again succeeds
    if entry.stuck:
        return stuck_error(record["id"], entry)
    if holder not in ("", owner) and not (status == "in_progress" and runtime.stale(record, entry)):
        return Refused(f"{ref} is held by {holder}")
    blockers = graph.open_blockers(record, change.lookup)
    return Refused(f"{ref} is blocked by {ids_text(blockers)}") if blockers else _refusal_waiting(record)


def _refusal_waiting(record: Record) -> Refused | None:
    """A pending task kept out of ready until its `after` time (DESIGN §14)."""
    if record["status"] != "pending" or not waits(record):
        return None
    after = when_of(record, "after")
    return Refused(f"#{record['id']} waits until {after} (after)", "after", task=record["id"], after=after)


def _refusal_elsewhere(task_id: int, other: tuple[str, dict] | None) -> Refused | None:
    """Another worktree of the clone holds the task, or completed it (the same name there included)."""
    if other is None:
        return None
    kind, mark = other
    if kind == "completed":
        by = f" by {mark['by']}" if mark["by"] else ""
        return Refused(f"#{task_id} was completed {_where(mark)}{by}", "done-elsewhere", task=task_id)
    return Refused(
        f"#{task_id} is held by {mark['owner']} {_where(mark)}", "held-elsewhere", task=task_id, holder=mark["owner"]
    )


def stuck_error(task_id: int, entry: Entry) -> Refused:
    last = entry.failures[-1]["note"] if entry.failures else ""
    summary = f"#{task_id} is stuck: it failed {entry.attempts} times" + (f" (last: {last})" if last else "")
    return Refused(
        f"{summary}; someone must put it back (retry) before it is claimed again",
        "stuck",
        task=task_id,
        attempts=entry.attempts,
        summary=summary,
    )


def _first_claimable(store: Store, change: Change, runtime: Runtime, owner: str, outcome: Outcome) -> Record:
    """The first task in ready order (graph.ready_order: priority, then id) that `owner`
    may claim: pending and ready, or held by someone whose lease ran out. A task the
    owner failed itself comes only when nothing else does; a stuck one never. The cache
    (taskboard.index, checked against the files under this lock) names the candidates
    without reading history and without decoding the open records (_candidates); each
    one tried is decoded alone, and the one taken is confirmed from its own file and its
    blockers' files. A damaged file in the way is skipped with a note."""
    from ..core.errors import Corrupt
    from ..disk.index import snapshot

    shot = snapshot(store)
    view = _Cached(shot)
    fallback: Record | None = None
    candidates: list[Any] = [shot.damaged[task_id] for task_id in sorted(shot.damaged)]
    candidates += _candidates(shot, runtime)
    for known in candidates:
        try:
            if isinstance(known, Corrupt):
                raise known  # readiness unknown, so not taken
            if not offered(view, runtime, shot.open_record(known), owner):  # type: ignore[arg-type]
                continue
            record = change.get(known)  # never trust the cache for a change
            if not offered(change, runtime, record, owner):
                continue
        except Corrupt as exc:  # its file or a blocker's: go on
            if all(note.data.get("problem") != exc.message for note in outcome.notes):
                outcome.notes.append(
                    Note(
                        "skipped-damaged",
                        f"skipped {exc.message}",
                        file=exc.file,
                        rule=exc.rule,
                        reason=exc.reason,
                        problem=exc.message,
                    )
                )
            continue
        except NotFound:
            continue
        if not runtime.entry(record).failed_by(owner):
            return record
        fallback = fallback or record
    if fallback is None:
        raise NotFound(f"no ready task to claim for {owner}", "none-ready")
    return fallback


def _candidates(shot: Any, runtime: Runtime) -> list[int]:
    """The open tasks `offered` could pass, in ready order, from what the index keeps of
    them (Snapshot.open_facts, as `ready` decides: graph.ready_ids): the ready ones, and
    where some task has runtime state, every task in progress too (a lease that ran out
    hands it on). Every other open task is one `offered` refuses (blocked, kept out until
    later, in progress without a lease), so it is not decoded to be refused."""
    opened, damaged = shot.open_text, shot.damaged
    ready = graph.ready_ids(shot.open_facts(), lambda task_id: task_id in opened or task_id in damaged, now())
    if not runtime.names():
        return ready
    chosen = set(ready)
    return [
        task_id
        for _priority, _due, task_id in sorted(
            (priority, due, task_id)
            for task_id, status, _blockers, priority, due, _after in shot.open_facts()
            if task_id in chosen or status == "in_progress"
        )
    ]


class _Cached:
    """What refusal_of needs of a Change (a lookup of blockers, whose status alone
    counts), answered by a snapshot without decoding a record: an unreadable blocker
    raises its damage as reading its file would."""

    def __init__(self, shot: Any):
        self.shot = shot

    def lookup(self, task_id: int) -> Record | None:
        if task_id in self.shot.damaged:
            raise self.shot.damaged[task_id]
        status = self.shot.open_status(task_id)
        return None if status is None else {"id": task_id, "status": status}


def offered(change: Change, runtime: Runtime, record: Record, owner: str) -> bool:
    """Whether `claim` without an id may hand this task to owner: pending and claimable,
    or in progress under a lease that ran out (the owner's own too: an agent restarted
    under its name resumes its task, DESIGN §7). Most tasks have no runtime state: for
    them the record alone decides, as it did before leases."""
    status = record["status"]
    if not runtime.has(record):
        return status == "pending" and record["owner"] in ("", owner) and graph.is_ready(record, change.lookup)
    if status == "in_progress":
        entry = runtime.entry(record)
        if not runtime.stale(record, entry):
            return False
        if record["owner"] == owner:  # refusal_of calls it yours: what it asks of a takeover, asked here
            blocked = graph.open_blockers(record, change.lookup)
            return not entry.stuck and not blocked and refusal_of(change, runtime, record, owner) is None
    elif status != "pending":
        return False
    return refusal_of(change, runtime, record, owner) is None


# -- renewing ----------------------------------------------------------------------------------------


def renew(board: Desk[Store], task_id: int, lease: float | None = None) -> Outcome:
    """The caller renews its lease on task_id (for `lease` seconds when given, else for
    the lease it has). Changes no task file and journals nothing."""
    owner = board.caller
    if not owner:
        raise UsageError("renewing needs the holder's name: name yourself, or set TASKS_OWNER", "renew-needs-name")
    check_owner(owner)
    store = board.store
    board.require_board([task_id])
    state = state_of(store)
    with store.writing() as notes, state.locked():
        runtime = Runtime(state)
        record = store.read(task_id)
        entry = runtime.entry(record)
        outcome = Outcome(record)
        ref = f"#{task_id}"
        other = runtime.elsewhere(record, entry)
        if other is not None and other[0] == "claimed" and other[1]["owner"] != owner:
            raise Refused(
                f"{ref} was taken over by {other[1]['owner']} {_where(other[1])}; your claim on it has ended",
                "taken-over",
                task=task_id,
                holder=other[1]["owner"],
            )
        if record["status"] != "in_progress":
            raise Refused(f"{ref} is {record['status']}, not in progress: there is no claim to renew")
        if record["owner"] != owner:
            raise Refused(
                f"{ref} is held by {record['owner']}; you are {owner}",
                "taken-over",
                task=task_id,
                holder=record["owner"],
            )
        held = runtime.claim_here(record, entry)
        if lease is None and (held is None or held.get("lease") is None):
            outcome.notes = [*notes, Note("no-lease", f"{ref} has no lease: your claim never expires", task=task_id)]
            return outcome
        base = held or {"owner": owner, "board": state.board, "at": runtime.now}
        entry.claim = {**base, "renewed": runtime.now, "lease": lease or base.get("lease")}
        entry.task = task_id
        state.write(entry)
        outcome.notes = [*notes, lease_note(task_id, entry)]
    return outcome


# -- what a change records ----------------------------------------------------------------------------


def before_commit(store: Store, change: Change, task_id: int, outcome: Outcome, **intent: Any) -> None:
    """What an update adds to the runtime state, checked and planned before its commit:
    `force` (override a takeover), `retry` (clear the failed attempts), `failure` (a
    failed attempt with this note). A named holder changing its task renews its lease;
    one whose task was taken over in another worktree is refused."""
    record = change.get(task_id)
    caller = change.actor  # the caller, as the change journals them
    state = state_of(store)
    runtime = Runtime(state)
    entry = runtime.entry(record)
    plan: dict[str, Any] = {}
    holder = change.was.get(task_id, (record["status"], record["owner"]))
    if caller and holder == ("in_progress", caller):
        other = runtime.elsewhere(record, entry)
        if other and other[0] == "claimed" and other[1]["owner"] != caller and not intent.get("force"):
            raise Refused(
                f"#{task_id} was taken over by {other[1]['owner']} {_where(other[1])} after your lease ran out",
                "taken-over",
                task=task_id,
                holder=other[1]["owner"],
            )
        plan["renew"] = caller
    if intent.get("retry") and entry.failures:
        plan["retry"] = True
        outcome.events.append(Event(task_id, "retried", attempts=entry.attempts))
    failure = intent.get("failure")
    if failure is not None:
        by = caller or holder[1]
        plan["fail"] = {"by": by, "note": failure[:MAX_NOTE]}
        noted = {"note": failure} if failure else {}
        outcome.events.append(Event(task_id, "failed", **noted, attempts=entry.attempts + 1, by=by))
    if plan:
        change.runtime.setdefault(task_id, {}).update(plan)


def keep(store: Store, change: Change, moved: list[Record], write: Callable[..., None]) -> None:
    """A board's commit hook (Change.keep): the files written under the runtime state's
    lock, and the state brought up to date with them once the change's intent is in
    place and its first replaced file moved (Store.write's `then`: a refusal of that move
    undoes the change and leaves the state as it was): a change killed after its intent
    is completed by the next command, so the state must already say so, or say so when
    the recovery replays the intent's `runtime` (what moved, and from what:
    taskboard.disk.state.replay). Another worktree then never takes a release or
    completion that reached its intent for one that did not happen (claimrefs._ended)."""
    state = state_of(store)
    with state.locked():
        kept = state.kept_closed(change.rewrites())
        _mark_ending(state, change, moved)
        moves = [_move_of(state, change, r) for r in moved if is_uid(r.get("uid"))]
        write(then=lambda: record(store, change, moved, kept), runtime=moves or None)


def _move_of(state: State, change: Change, current: Record) -> dict:
    """What the intent keeps of a task the change moves (its `runtime`): id, uid, status and
    owner before, and, for one moved away from its holder, which claim the change ends
    (`ends`: the claim's `at`, None when the state holds no claim of that holder). A
    replay forgets only that claim: one the same owner made since in another worktree
    is a new claim the change never ended (taskboard.disk.state.replay). Under the state lock."""
    was = change.was.get(current["id"], (current["status"], current["owner"]))
    move = {"task": current["id"], "uid": current["uid"], "was": list(was)}
    if was[0] == "in_progress":
        claim = state.read(current["uid"]).claim
        move["ends"] = claim["at"] if claim and claim["owner"] == was[1] else None
    return move


def _mark_ending(state: State, change: Change, moved: list[Record]) -> None:
    """Before the intent of a change that moves tasks away from their holder: each such
    claim (made in any worktree of the clone) names this board as `ending` it. A change
    killed once its intent was in place, before the state followed it, leaves the claim so
    marked, and the intent in this board's scratch folder says whether the change will
    happen (taskboard.disk.store.intent_ends): another worktree asks it before it takes a
    release or completion this clone pushed for one that never reached a file
    (taskboard.git.claimrefs._ended). A change that follows its claim drops the mark.
    Only a clone whose claims go through a remote asks it: elsewhere nothing is marked."""
    if not state.shared or not os.path.exists(os.path.join(state.folder, REMOTE_NAME)):
        return
    for current in moved:
        status, owner = change.was.get(current["id"], (current["status"], current["owner"]))
        if status != "in_progress" or not is_uid(current.get("uid")):
            continue
        entry = state.read(current["uid"])
        claim = entry.claim
        if entry.damaged or not claim or claim["owner"] != owner or claim.get("ending") == state.board:
            continue
        entry.claim = {**claim, "ending": state.board}
        state.write(entry)


def record(store: Store, change: Change, moved: list[Record], kept: dict[str, Entry] | None = None) -> None:
    """Bring the runtime state up to date with a change just written: the tasks whose
    status or owner moved, what the operation planned (change.runtime), and the tasks
    `kept` closed here by a completion made in another worktree that the change rewrote
    (by uid: State.kept_closed): the completion's mark says this board wrote that version
    while it stood, so the write never passes for a reopen merged in (reopened_since)."""
    state = state_of(store)
    runtime = Runtime(state)
    here = state.board
    kept = kept or {}
    kept_ids = {record["id"] for record in change.records.values() if record.get("uid") in kept}
    ids = sorted({record["id"] for record in moved} | set(change.runtime) | kept_ids)
    moved_ids = {record["id"] for record in moved}
    for task_id in ids:
        current = change.records[task_id]
        if not is_uid(current.get("uid")):
            continue
        entry = state.read(current["uid"])
        before = dumps(entry.document(), sort_keys=True)  # a copy: the edits below change the dicts in place
        if task_id in moved_ids:
            was = change.was.get(task_id, (current["status"], current["owner"]))
            follow(entry, current, was, here, state.shared, runtime.now)
        plan = change.runtime.get(task_id, {})
        if plan.get("retry"):
            entry.failures = []
        if plan.get("fail"):
            entry.failures.append({**plan["fail"], "at": runtime.now})
        claim = entry.claim
        if plan.get("renew") and runtime.here(claim) and claim and claim["owner"] == plan["renew"] and claim["lease"]:
            claim["renewed"] = runtime.now
        standing = kept.get(current["uid"])
        if standing is not None and standing.done and entry.done and entry.done["board"] == standing.done["board"]:
            _keep_closed(entry, here, current)
        entry.task = task_id
        if dumps(entry.document(), sort_keys=True) != before or entry.damaged:
            state.write(entry)


def _keep_closed(entry: Entry, here: str, record: Record) -> None:
    """The completion mark of another worktree says that this board wrote the version
    `record` of the task while the completion stood (`kept`: reopened_since)."""
    assert entry.done is not None
    marks = entry.done.get("kept")
    marks = dict(marks) if type(marks) is dict else {}
    marks[here] = record["updatedAt"]
    entry.done = {**entry.done, "kept": marks}


def fail(board: Desk[Store], task_id: int, note: str) -> Outcome:
    """Record a failed attempt at task_id without changing its file (a gate that failed)."""
    board.require_board([task_id])
    with board.store.writing() as notes:
        change = board.change()
        change.get(task_id)
        outcome = Outcome()
        before_commit(board.store, change, task_id, outcome, failure=note, force=True)
        outcome.written = change.commit(outcome.events)
        outcome.journaled = change.journaled
        outcome.record = change.get(task_id)
    outcome.notes[:0] = notes
    return outcome


# -- what the views show --------------------------------------------------------------------------------


def facts(store: Store, records: list[Record], now: float | None = None) -> dict[int, dict]:
    """What the runtime state adds to each task, for views, by id (tasks with nothing to
    add are left out): `lease` {"holder", "seconds", "expires" (epoch), "expired"},
    `attempts`, `stuck`, `last_failure`, and `elsewhere` {"kind": "claimed" or
    "completed", "owner", "board"} when another worktree of the clone holds or did it."""
    state = state_of(store)
    runtime = Runtime(state, now)
    by_uid = {record["uid"]: record for record in records if is_uid(record.get("uid"))}
    found: dict[int, dict] = {}
    for uid, entry in state.entries(set(by_uid)).items():
        record = by_uid[uid]
        fact: dict[str, Any] = {}
        claim = runtime.claim_here(record, entry)
        if claim and claim.get("lease"):
            expires = entry.expires() or 0.0
            fact["lease"] = {
                "holder": claim["owner"],
                "seconds": claim["lease"],
                "expires": expires,
                "expired": runtime.now >= expires,
            }
        if entry.failures:
            fact["attempts"] = entry.attempts
            fact["stuck"] = entry.stuck
            fact["last_failure"] = entry.failures[-1]["note"]
        other = runtime.elsewhere(record, entry)
        if other is not None and record["status"] in OPEN:
            kind, mark = other
            fact["elsewhere"] = {"kind": kind, "owner": mark.get("owner", mark.get("by", "")), "board": mark["board"]}
        if fact:
            found[record["id"]] = fact
    return found


def describe(fact: dict, now: float | None = None) -> list[str]:
    """A task's runtime facts in plain words, one line each (no command-line flags)."""
    now = time.time() if now is None else now
    lines = []
    lease = fact.get("lease")
    if lease:
        if lease["expired"]:
            lines.append(f"held by {lease['holder']}, lease expired {format_duration(now - lease['expires'])} ago")
        else:
            lines.append(
                f"held by {lease['holder']}, lease {duration_text(lease['seconds'])}, "
                f"expires in {format_duration(lease['expires'] - now)}"
            )
    other = fact.get("elsewhere")
    if other:
        who = f" by {other['owner']}" if other["owner"] else ""
        verb = "claimed" if other["kind"] == "claimed" else "completed"
        lines.append(f"{verb}{who} in another worktree ({other['board']})")
    if fact.get("attempts"):
        count = fact["attempts"]
        last = f" (last: {fact['last_failure']})" if fact.get("last_failure") else ""
        if fact.get("stuck"):
            lines.append(f"stuck: failed {count} times{last}")
        else:
            lines.append(f"failed {count} time{'s' if count != 1 else ''}{last}")
    return lines


def not_offered(store: Store, records: Callable[[], list[Record]]) -> set[int]:
    """The ids among `records()` (the pending ones) that `ready` leaves out although the
    graph calls them ready: stuck, or claimed or completed in another worktree."""
    state = state_of(store)
    names = state.names()  # one listing of the state folder, most often empty: then no record is looked at
    if not names:
        return set()
    runtime = Runtime(state)
    by_uid = {
        uid: record for record in records() if type(uid := record.get("uid")) is str and uid in names and is_uid(uid)
    }
    hidden = set()
    for uid, entry in state.entries(set(by_uid)).items():
        if entry.stuck or runtime.elsewhere(by_uid[uid], entry) is not None or runtime.rewound(by_uid[uid], entry):
            hidden.add(by_uid[uid]["id"])
    return hidden


# -- waiting -----------------------------------------------------------------------------------------------


def claim_wait(
    board: Desk[Store],
    task_id: int | None,
    owner: str,
    lease: float | None = None,
    seconds: float | None = None,
    poll: tuple[float, Any] | None = None,
    stop: Stop | None = None,
    leased: Leased | None = None,
) -> Outcome:
    """Claim as `claim` does; when nothing is claimable yet but something open could still
    come to `owner`, wait (holding no lock) until it can be claimed, the `seconds` run
    out, or nothing is left that could come. Wakes on changes to the board's files and
    runtime state, and when a lease runs out; with `poll` (seconds, what to do), also
    every so often: claims through a remote fetch the claim refs (a task given back or
    completed on another machine changes no file here). A `stop` set from another thread
    ends the wait at once, claiming nothing more (NotFound, reason `stopped`). `leased`:
    the leases of claims kept where this board does not see (prospects)."""
    from ..disk.watch import watcher_for

    check_claimer(owner)
    deadline = None if seconds is None else time.monotonic() + seconds
    watcher = None
    polled = time.monotonic()
    last_polled = False
    try:
        while True:
            if stop is not None and stop.is_set():
                raise NotFound(f"stopped waiting: {stop.reason}", "stopped", owner=owner)
            if poll is not None and time.monotonic() - polled >= poll[0]:
                poll[1]()
                polled = time.monotonic()
            if watcher is not None:
                watcher.arm()
            claimed, refused = _attempt(board, task_id, owner, lease)
            if claimed is not None:
                return claimed
            hope, expiry, reasons = prospects(board, owner, task_id, leased)
            if not hope and poll is not None and not last_polled:  # fetch once more first: and push
                poll[1]()  # what this board holds that others wait for (claims through a remote)
                polled, last_polled = time.monotonic(), True
                continue
            if not hope:
                raise refused or NotFound(
                    f"nothing is left that could come to {owner}: {reasons}", "nothing-left", owner=owner
                )
            if watcher is None:
                watcher = watcher_for([str(board.store.root), state_of(board.store).folder], stop)
                continue  # look once more now that changes are watched: none slips through
            timeout = None if deadline is None else deadline - time.monotonic()
            if timeout is not None and timeout <= 0:
                what = "no task became" if task_id is None else f"#{task_id} did not become"
                raise NotFound(
                    f"waited {seconds:g} s; {what} claimable for {owner}", "wait-timeout", owner=owner, seconds=seconds
                )
            watcher.wait(_sooner(timeout, expiry, poll, polled))
    finally:
        if watcher is not None:
            watcher.close()


def _sooner(timeout: float | None, expiry: float | None, poll: tuple[float, Any] | None, polled: float) -> float | None:
    """How long a waiter sleeps: until its deadline, a lease running out, or its next poll."""
    if expiry is not None:
        until_expiry = max(0.0, expiry - time.time()) + WAKE_AFTER_EXPIRY
        timeout = until_expiry if timeout is None else min(timeout, until_expiry)
    if poll is not None:
        until_poll = max(0.0, polled + poll[0] - time.monotonic())
        timeout = until_poll if timeout is None else min(timeout, until_poll)
    return timeout


def _attempt(board: Desk[Store], task_id: int | None, owner: str, lease: float | None) -> tuple[Outcome | None, Any]:
    """One claim: (its outcome, None), or (None, the refusal a waiter may outwait); a
    missing task, and any other failure, is raised."""
    try:
        return board.claim_as_is(task_id, owner, lease), None  # through the remote when claims go there
    except NotFound:
        if task_id is not None:
            raise
        return None, None
    except Refused as exc:
        if task_id is None:
            raise
        return None, exc


def prospects(
    board: Desk[Store], owner: str, task_id: int | None, leased: Leased | None = None
) -> tuple[bool, float | None, str]:
    """(whether some open task — task_id, when given — could still come to `owner`, the
    next moment a lease runs out, and when none can, every reason why in words). A task
    can come unless it is stuck, reserved for someone else, held by the owner itself
    without a lease (one with a lease comes back to it when the lease runs out),
    completed in another worktree, or waits on a task that cannot finish without the
    owner or a person (stuck, held by the owner without a lease, completed only
    elsewhere, unreadable, or on a cycle). `leased` (the board's claim authority:
    coordination.Authority.leased) says when the lease of the owner's own claims kept
    where this board does not see runs out (a claim ref on the remote, made on another
    clone): such a claim counts as leased too."""
    from ..disk.index import snapshot

    store = board.store
    with store.reading():
        shot = snapshot(store, history=False)  # only open tasks can come, and only open blockers hold them
    if not shot.ids:  # an empty board, or a Claude Code task list without its mark (taskboard.ops.query.read)
        store.refuse_claude_list(store.names())
    open_records, lookup = [shot.open[task_id] for task_id in sorted(shot.open)], shot.lookup
    state = state_of(board.store)
    runtime = Runtime(state)
    records = {record["id"]: record for record in open_records}
    finishing: dict[int, bool] = {}
    own = [r for r in open_records if r["status"] == "in_progress" and r["owner"] == owner]
    remote = leased(own) if leased is not None and own else {}

    def yours(record: Record, entry: Entry) -> bool:
        """Whether the task is the owner's own in progress, with no lease here that will run
        out: a lease's end makes it claimable again, by its holder too (a restarted agent
        waits at most its lease and resumes it); a claim without one never ends by itself."""
        if record["status"] != "in_progress" or record["owner"] != owner:
            return False
        claim = runtime.claim_here(record, entry)
        return (claim is None or not claim.get("lease")) and record["id"] not in remote

    def can_finish(blocker_id: int, path: frozenset) -> bool:
        blocker = lookup(blocker_id)
        if blocker is None or blocker["status"] not in OPEN:
            return True  # done or gone: blocks nothing
        if "id" not in blocker or blocker_id in path:
            return False  # unreadable, or on a cycle: a person must step in
        if blocker_id not in finishing:
            entry = runtime.entry(blocker)
            other = runtime.elsewhere(blocker, entry)
            finishing[blocker_id] = (
                not entry.stuck
                and not (other is not None and other[0] == "completed")
                and not yours(blocker, entry)
                and all(can_finish(b, path | {blocker_id}) for b in graph.open_blockers(blocker, lookup))
            )
        return finishing[blocker_id]

    def why_not(record: Record) -> str | None:
        """None when the task could come to `owner`, else the reason it cannot."""
        status = record["status"]
        if status not in OPEN:
            return "done"
        entry = runtime.entry(record)
        other = runtime.elsewhere(record, entry)
        if entry.stuck:
            return "stuck"
        if other is not None and other[0] == "completed":
            return "elsewhere"
        if status == "pending" and record["owner"] not in ("", owner):
            return "reserved"  # for someone else
        if yours(record, entry):
            return "yours"  # an agent never waits on itself
        path = frozenset({record["id"]})
        return None if all(can_finish(b, path) for b in graph.open_blockers(record, lookup)) else "waiting"

    chosen = open_records if task_id is None else [records[task_id]] if task_id in records else []
    hope = any(why_not(record) is None for record in chosen)
    expiries = [
        expires
        for entry in state.entries({r["uid"] for r in chosen if is_uid(r.get("uid"))}).values()
        if (expires := entry.expires()) is not None and expires > runtime.now
    ]
    # a task kept out until its `after` time comes then: the waiter wakes for it as for a lease
    expiries += [epoch for r in chosen if r["status"] == "pending" and (epoch := _after_epoch(r)) is not None]
    expiries += [ends for task, ends in remote.items() if ends > runtime.now and task in {r["id"] for r in chosen}]
    reasons = "" if hope else _reasons(chosen, why_not, len(board.store.task_ids()) if task_id is None else None)
    return hope, min(expiries, default=None), reasons


_REASONS = (
    ("stuck", "stuck (failed {stuck} times: a person must put it back)"),
    ("elsewhere", "completed in another worktree"),
    ("reserved", "reserved for someone else"),
    ("yours", "held by you"),
    ("waiting", "waiting on one of those, on a cycle, or on an unreadable task"),
)


def why_none_ready(board: Desk[Store], owner: str, leased: Leased | None = None) -> str:
    """Why a claim without an ID found nothing, in words: what claim --wait's exit 3 says
    when nothing could come any more, else what holds the open tasks back now (held by
    others, blocked, kept out until later, held where this worktree does not see)."""
    hope, _expiry, reasons = prospects(board, owner, None, leased)
    if not hope:
        return reasons
    from ..disk.index import snapshot

    with board.store.reading():
        shot = snapshot(board.store, history=False)
    groups: dict[str, list[int]] = {}
    holders: dict[int, str] = {}
    runtime = Runtime(state_of(board.store))
    for record in [shot.open[task_id] for task_id in sorted(shot.open)]:
        if record["status"] == "in_progress" and record["owner"] != owner:
            key = "held"
            holders[record["id"]] = record["owner"]
        elif record["status"] == "in_progress":
            key = "yours"
        elif record["owner"] not in ("", owner):
            key = "reserved"
            holders[record["id"]] = record["owner"]
        elif graph.open_blockers(record, shot.lookup):
            key = "blocked"
        elif waits(record):
            key = "later"
        elif runtime.entry(record).stuck:
            key = "stuck"
        else:
            key = "elsewhere"
        groups.setdefault(key, []).append(record["id"])
    words = {
        "held": "held by {holders}",
        "yours": "held by you",
        "reserved": "reserved for {holders}",
        "blocked": "blocked by unfinished tasks",
        "later": "kept out until their after time",
        "stuck": "stuck (failed too often: a person must put it back)",
        "elsewhere": "held in another worktree or on another machine",
    }
    parts = []
    for key, text in words.items():
        ids = groups.get(key, [])
        if ids:
            named = ", ".join(f"#{i}" for i in ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
            who = ", ".join(sorted({holders[i] for i in ids if i in holders}))
            parts.append(f"{named} {text.format(holders=who)}")
    return "; ".join(parts) or "no open task"


def _reasons(chosen: list[Record], why_not: Any, on_board: int | None) -> str:
    """Every reason that applies, each with the tasks it holds back (the first few)."""
    grouped: dict[str, list[int]] = {}
    for record in chosen:
        grouped.setdefault(why_not(record) or "", []).append(record["id"])
    parts = []
    for key, words in _REASONS:
        ids = grouped.get(key, [])
        if ids:
            named = ", ".join(f"#{i}" for i in ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
            parts.append(f"{named} {words.format(stuck=STUCK_AFTER)}")
    if on_board is not None and not chosen:
        return "every task is done" if on_board else "the board has no tasks"
    return "; ".join(parts) if parts else "every open task is done"


def _after_epoch(record: Record) -> float | None:
    """When a task kept out of ready by its `after` time comes in (None: it is not kept out)."""
    if not waits(record):
        return None
    import calendar

    return float(calendar.timegm(time.strptime(when_of(record, "after") or "", TIME_FORMAT)))


# -- check ---------------------------------------------------------------------------------------------------


def state_problems(store: Store, fix: bool = False) -> list[Any]:
    """`check`'s part: runtime state files that do not read back (each is read as no state
    at all), and claims or completion marks this board made that its task files no longer
    bear out (a process killed between the two writes, a checkout of another branch); with
    `fix`, the damaged files are removed and the stale marks dropped."""
    from ..core.outcome import Problem

    state = state_of(store)
    problems = []
    for path in state.damaged():
        if fix:
            with state.locked():
                state.remove(path)
        problems.append(
            Problem(
                path,
                None,
                "state",
                f"{path}: damaged runtime state (a lease or failed-attempt count); it is read as empty",
                fixed=fix,
                fixable=True,
            )
        )
    names = state.names()
    if not names:
        return problems
    records, _ = store.read_all()
    by_uid = {record["uid"]: record for record in records if is_uid(record.get("uid"))}
    runtime = Runtime(state)
    for uid in sorted(names):
        entry = state.read(uid)
        record = by_uid.get(uid)
        rewound = runtime.rewound(record, entry) if record else None
        if rewound is not None and record is not None:
            until = iso(entry.expires() or 0)
            problems.append(
                Problem(
                    f"{state.folder}/{uid}.json",
                    record["id"],
                    "state",
                    f"#{record['id']}: its file says pending, but {rewound['owner']} claimed it here and the lease "
                    f"runs until {until} (a checkout or stash rewound the file): the claim is honoured until "
                    "then; its holder's done or release ends it",
                )
            )
            continue
        stale = _stale_marks(entry, record, state.board)
        if stale and all(_ended_by_the_file(key, entry, record) for key in stale):
            _drop_marks(state, uid, record)
            continue
        if not stale:
            continue
        holder = entry.claim["owner"] if entry.claim else ""
        said = [f"held here by {holder or 'someone'}" if key == "claim" else "completed here" for key in stale]
        if fix:
            with state.locked():
                entry = state.read(uid)
                for key in _stale_marks(entry, by_uid.get(uid), state.board):
                    setattr(entry, key, None)
                state.write(entry)
        record = by_uid.get(uid)
        really = f"its file says {record['status']}" if record else "this board has no such task"
        ref = f"#{record['id']}" if record else f"the task with uid {uid}"
        problems.append(
            Problem(
                f"{state.folder}/{uid}.json",
                record["id"] if record else None,
                "state",
                f"{ref}: the runtime state says it is {' and '.join(said)}, but {really}",
                fixed=fix,
                fixable=True,
            )
        )
    return problems


def _ended_by_the_file(mark: str, entry: Entry, record: Record | None) -> bool:
    """Whether the task's file ended a mark this board recorded. A claim: the file says
    completed, given back (pending), or held by another owner (a takeover made on another
    machine, synced in). A completion ("done"): the file says open and was written since
    (a reopen made on another machine and synced in; one written before the mark is a
    checkout that rewound the file, and stays a problem to report). Another writer did it
    (DESIGN §13: the s12 family takes no lock and keeps no runtime state), a sync brought
    it, or a checkout put the file back once the lease ran out (one whose lease still runs
    is honoured: Runtime.rewound): the file wins."""
    if record is None:
        return False
    if mark == "claim":
        return record["status"] in ("completed", "pending", "in_progress")
    return entry.done is not None and reopened_since(record, entry.done, entry.done["board"])


def _drop_marks(state: State, uid: str, record: Record | None) -> None:
    """The stale marks on a task whose file ended them, dropped (what the file says stays)."""
    with state.locked():
        entry = state.read(uid)
        stale = _stale_marks(entry, record, state.board)
        if stale and all(_ended_by_the_file(key, entry, record) for key in stale):
            for key in stale:
                setattr(entry, key, None)
            state.write(entry)


def _stale_marks(entry: Entry, record: Record | None, here: str) -> list[str]:
    """Which of this board's marks on a task ("claim", "done") its record does not bear out.
    A task this checkout does not have (an older commit, a branch made before it) has none:
    its marks are out of sight, not stale, and other worktrees rely on them."""
    stale: list[str] = []
    if record is None:
        return stale
    claim, done = entry.claim, entry.done
    if claim and claim["board"] == here:
        held = record is not None and record["status"] == "in_progress" and record["owner"] == claim["owner"]
        if not held:
            stale.append("claim")
    if done and done["board"] == here and (record is None or record["status"] != "completed"):
        stale.append("done")
    return stale
