"""Claims across machines: a git remote decides who holds a task (DESIGN §9).

`tasks init --remote NAME` writes `.remote` into the runtime state folder (git's common
folder: every worktree of the clone shares it): the remote's name and a random id of
this clone. From then on `claim` first wins the claim ref `refs/tasks/claims/<uid>` on
the remote, then writes the task. The ref points to a blob, a small JSON document
`{"tasks-claim": 1, "uid", "task", "owner", "state", "at", "lease", "clone", "nonce"}`
(state: claimed, released or done; `at` the epoch of the claim or of its last renewal;
the nonce makes every document, and so every blob, unique).

Every ref change is an exact compare-and-swap: `git push NAME <blob>:<ref>
--force-with-lease=<ref>:<expected>`, the expected value named (empty: the ref must not
exist), never a bare `--force-with-lease`, which trusts a remote-tracking ref another
process's fetch may have moved. What this clone last saw of the remote's claim refs is
kept in `refs/tasks/remote-claims/NAME/<uid>` (fetched by `sync`, and set by our own
pushes), and mirrored in `.remote-claims.json` in the state folder so that `ready`
hides tasks claimed on other machines without running git.

A claim costs one round trip when what we saw is still true (the push), two when the
remote moved (the push is refused, a fetch of the one ref says who holds it). The
order is ref, then task file: a claimer killed in between leaves a ref naming an owner
whose task is not written; the same owner's next claim finds the ref its own and
writes the task, and `check --fix` makes the task follow the ref. Every other change of
a task's status or owner (release, completion, reopening, deletion, an edit; renewal)
moves the ref first, by an exact compare-and-swap from the claim of the task's holder
here, and is refused (nothing written) when the ref names anyone else's claim: a holder
whose claim was taken over on another machine cannot end it (see `guard`). When the
remote cannot be reached the change is made here, a note says the ref lags, and `check`
(or the next `sync`) moves it.
"""

from __future__ import annotations

import os
import time

from ..core.errors import Busy, Corrupt, NotFound, Refused, TaskError, UsageError
from ..core.fields import dumps, loads
from ..core.outcome import Note, Outcome
from ..core.scopes import suppress
from ..disk.state import REMOTE_NAME
from ..ops.coordination import Authority
from .run import Git, failure

TYPE_CHECKING = False  # typing costs ~5 ms of start-up; annotations are strings anyway
if TYPE_CHECKING:
    import subprocess
    from collections.abc import Callable
    from typing import Any, Protocol

    from ..core.fields import Record
    from ..core.outcome import Problem
    from ..disk.store import Store
    from ..ops.change import Change, Desk

    class RefDesk(Desk[Store], Protocol):
        """What moving the claim refs first needs of the board that asks (a front end
        hands it its board, taskboard.ops.board.Board): a desk that also keeps, for one
        change, the refs moved before it took the lock and how to put them back."""

        moved_refs: dict[str, Any] | None  # by uid: the claim each ref was moved to, or "behind"
        ref_undo: list[tuple[str, str, str | None]]  # (uid, ours, previous) of each ref moved
        ref_notes: list[Note]  # what the claim refs had to say (refs that lag)


CONFIG = REMOTE_NAME  # in the runtime state folder: {"remote": NAME, "clone": id}
MIRROR = ".remote-claims.json"  # in the runtime state folder: what the tracking refs say, by uid
CLAIMS = "refs/tasks/claims/"
KIND = "tasks-claim"
STATES = ("claimed", "released", "done")
ATTEMPTS = 4  # compare-and-swap attempts before giving up on a ref that keeps moving
POLL = 2.0  # seconds between fetches of the claim refs while `claim --wait` waits


def tracking(name: str) -> str:
    return f"refs/tasks/remote-claims/{name}/"


def refspec(name: str) -> str:
    """The fetch refspec that brings the remote's claim refs home."""
    return f"+{CLAIMS}*:{tracking(name)}*"


class Config:
    """This clone's remote for claims, and the id its claim documents carry."""

    def __init__(self, name: str, clone: str, folder: str):
        self.name, self.clone, self.folder = name, clone, folder


def config_of(store: Store) -> Config | None:
    """The remote claims go through, or None (one small read; no git)."""
    from ..ops.claims import state_of

    state = state_of(store)
    if not state.shared:
        return None
    try:
        with open(os.path.join(state.folder, CONFIG), encoding="utf-8") as f:
            found = loads(f.read())
        return Config(str(found["remote"]), str(found["clone"]), state.folder)
    except (OSError, ValueError, KeyError, TypeError):
        return None


# -- git ----------------------------------------------------------------------------------------


# -- claim documents ------------------------------------------------------------------------------


def document(uid: str, task: int, owner: str, state: str, clone: str, lease: float | None = None) -> bytes:
    doc = {
        KIND: 1,
        "uid": uid,
        "task": task,
        "owner": owner,
        "state": state,
        "at": round(time.time(), 3),
        "lease": lease,
        "clone": clone,
        "nonce": os.urandom(8).hex(),
    }
    return (dumps(doc, sort_keys=True, ascii=True) + "\n").encode("utf-8")


def parse(data: bytes, uid: str) -> dict:
    """A claim document; ValueError saying what is wrong with anything else."""
    try:
        doc = loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise ValueError("it is not a JSON claim document") from None
    if not isinstance(doc, dict) or doc.get(KIND) != 1:
        raise ValueError("it is not a claim document of taskboard")
    if doc.get("uid") != uid:
        raise ValueError(f"it names uid {str(doc.get('uid'))[:40]!r}, not {uid}")
    if doc.get("state") not in STATES or not isinstance(doc.get("owner"), str) or not isinstance(doc.get("clone"), str):
        raise ValueError("its state, owner or clone is missing or of the wrong type")
    if not _number(doc.get("at")) or not (doc.get("lease") is None or _number(doc["lease"])):
        raise ValueError("its time or lease is not a number")
    return doc


def _leased(doc: dict) -> bool:
    """Whether the claim document has a lease (a number of seconds)."""
    return _number(doc.get("lease"))


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def live(doc: dict, now: float | None = None) -> bool:
    """A claim that holds: claimed, and its lease (if any) has not run out."""
    if doc["state"] != "claimed":
        return False
    lease = doc.get("lease")
    return lease is None or doc["at"] + lease > (time.time() if now is None else now)


class Known:
    """What this clone saw of one claim ref: its object (None: no ref) and document
    (None with `garbage` set when the ref holds something else)."""

    def __init__(self, uid: str, sha: str | None = None, data: bytes | None = None):
        self.uid, self.sha = uid, sha
        self.doc: dict | None = None
        self.garbage = ""
        if sha is not None and data is not None:
            try:
                self.doc = parse(data, uid)
            except ValueError as exc:
                self.garbage = str(exc)
        elif sha is not None:
            self.garbage = "it points to something other than a claim document (a blob of at most 64 KiB)"


def _read_objects(git: Git, names: list[str]) -> dict[str, tuple[str, bytes | None]]:
    """name -> (object id, content when it is a blob) for the refs or objects that exist."""
    if not names:
        return {}
    done = git.run("cat-file", "--batch", input="".join(f"{name}\n" for name in names).encode())
    out, at, found = done.stdout, 0, {}
    for name in names:
        end = out.index(b"\n", at)
        header = out[at:end].split()
        at = end + 1
        if len(header) != 3:  # "<name> missing" (or ambiguous)
            continue
        size = int(header[2])
        data = out[at : at + size]
        at += size + 1
        found[name] = (header[0].decode(), data if header[1] == b"blob" and size <= 65536 else None)
    return found


def known(git: Git, config: Config, uids: list[str]) -> dict[str, Known]:
    refs = [tracking(config.name) + uid for uid in uids]
    found = _read_objects(git, refs)
    return {uid: Known(uid, *found[ref]) if ref in found else Known(uid) for uid, ref in zip(uids, refs, strict=True)}


def all_known(git: Git, config: Config) -> dict[str, Known]:
    prefix = tracking(config.name)
    names = git.out("for-each-ref", "--format=%(refname)", prefix).split()
    return known(git, config, [name[len(prefix) :] for name in names])


# -- talking to the remote ------------------------------------------------------------------------


def unreachable(config: Config, done: subprocess.CompletedProcess) -> Busy:
    return Busy(
        f"the remote {config.name} cannot be reached, so no claim can be won there ({failure(done)})",
        "remote-unreachable",
        remote=config.name,
    )


def fetch_one(git: Git, config: Config, uid: str) -> Known:
    """The remote's claim ref for uid now (one round trip); the tracking ref follows it."""
    ref, local = CLAIMS + uid, tracking(config.name) + uid
    done = git.run("fetch", "-q", "--no-tags", "--no-write-fetch-head", config.name, f"+{ref}:{local}", network=True)
    if done.returncode != 0:
        if b"couldn't find remote ref" in done.stderr:
            git.run("update-ref", "-d", local)
            _mirror_set(config, uid, None)
            return Known(uid)
        raise unreachable(config, done)
    found = known(git, config, [uid])[uid]
    _mirror_set(config, uid, found)
    return found


def fetch_all(git: Git, config: Config) -> subprocess.CompletedProcess:
    """Every claim ref of the remote (sync); stale tracking refs pruned."""
    done = git.run("fetch", "-q", "--no-tags", "--prune", config.name, refspec(config.name), network=True)
    if done.returncode == 0:
        rebuild_mirror(git, config)
    return done


def refresh(store: Store) -> None:
    """What a waiter does every POLL seconds: fetch every claim ref (one round trip; the
    mirror `ready` and `claim` read follows). An unreachable remote is left to the next
    claim attempt to report."""
    config = config_of(store)
    if config is not None:
        with suppress(TaskError):
            fetch_all(Git(store), config)


def ended_elsewhere(store: Store) -> bool:
    """Whether the claim refs, as last fetched, say an open task of this board was
    completed on another machine, or given back there while this board says it is held
    (and the claim it shows is not one this clone made that the ref never bore: _ended)."""
    from ..ops import claims

    config = config_of(store)
    mirror = read_mirror(config) if config is not None else {}
    if config is None or not mirror:
        return False
    records, _damaged = store.read_all()
    runtime = None
    for record in records:
        doc = mirror.get(record.get("uid", ""))
        if not isinstance(doc, dict) or record["status"] not in ("pending", "in_progress"):
            continue
        if doc.get("state") == "done":
            return True
        if doc.get("state") == "released" and record["status"] == "in_progress":
            runtime = runtime or claims.Runtime(claims.state_of(store))
            if _ended(record, doc, runtime.entry(record), config):
                return True
    return False


def _ended(record: Record, doc: dict, entry: Any, config: Config) -> bool:
    """Whether the claim ref's document `doc` ended the claim this board's record shows
    (in progress, held by its owner): the ref says given back or completed by another
    clone, and the claim is not one this clone made that the remote was never seen to
    bear (`claim --offline`, a ref that lagged), which came after what the ref says. A
    claim made elsewhere reached this board by a merge; one this clone made is marked
    once the remote bears it (`_mark_won`: after its push, or a fetch that found it
    there). Decided by what the ref and this clone hold, never by whose clock wrote
    later: the board's file may be written after the release (a merge with a later edit
    made here) and still hold the claim the release ended. A release or completion this
    clone pushed ends the claim too, from any worktree or branch of the clone (they share
    its id and its runtime state), once the change reached its intent: the runtime state
    then forgets the holder's claim, wherever in the clone it was made (before the files
    move; a recovery replays it), or, killed in between, holds it marked with the board
    whose intent ends it (_intended). A claim still held with nothing behind it is this
    clone's change killed after its ref moved and before its intent: not an end, and
    `check --fix` puts the ref back, as a change that did not happen does. A damaged
    runtime entry leaves what this clone made unknown: the clocks decide, as before (_over)."""
    return doc.get("state") in ("released", "done") and _over(record, doc, entry, config)


def _over(record: Record, doc: dict, entry: Any, config: Config) -> bool:
    """Whether the claim ref's document `doc`, which does not name the claim this board's
    record shows (a release, a completion, or another owner's claim), came after that
    claim and so ended it (_ended; _lapsed, for a takeover): unless this clone made the claim and the
    remote was never seen to bear it; or this clone moved the ref and its change never
    reached its intent (the runtime state still holds the claim, with no intent of this
    clone ending it: _intended). A damaged runtime entry leaves what this clone made
    unknown: the clocks decide."""
    if entry.damaged:
        return _number(doc.get("at")) and bool(doc["at"] >= _updated(record))
    claim = entry.claim  # this clone's runtime state of the task (taskboard.disk.state.Entry)
    made_here = isinstance(claim, dict) and claim.get("owner") == record["owner"]
    if doc.get("clone") == config.clone:  # moved here, in this or another worktree
        return not made_here or _intended(claim, entry.uid)
    return not made_here or bool(claim.get("ref"))


def _intended(claim: dict, uid: str) -> bool:
    """Whether the claim this clone's runtime state still holds is ended by a change of
    this clone killed after its intent was in place, before the state followed it: the
    change marked the claim with its board (`ending`: taskboard.ops.claims._mark_ending),
    and that board's scratch folder holds its intent, which the next command there
    completes (taskboard.disk.store.intent_ends)."""
    from ..disk.store import intent_ends

    board = claim.get("ending")
    return isinstance(board, str) and intent_ends(board, uid, claim)


def _mark_won(store: Store, uid: str, owner: str, sha: str | None) -> None:
    """The remote bears the claim this clone holds for `owner` (its ref is `sha`, pushed or
    just fetched: never what a tracking ref said, which may be stale): marked in the
    runtime state, so that a release or completion the ref says later ends it (_ended).
    Best effort: an unmarked claim counts as one the ref lags behind, as before, until a
    sync or `check --fix` finds the remote bearing it (_heal_marks)."""
    from ..ops.claims import state_of

    state = state_of(store)
    with suppress(TaskError, OSError), state.locked():
        entry = state.read(uid)
        if entry.claim and entry.claim.get("owner") == owner and entry.claim.get("ref") != (sha or True):
            entry.claim["ref"] = sha or True
            state.write(entry)


def push(git: Git, config: Config, uid: str, data: bytes, expected: str | None) -> str | None:
    """Replace the remote's claim ref with a new document if it is still `expected` (None:
    it must not exist). The new object id on success, None when refused; Busy when the
    remote cannot be reached."""
    new = git.out("hash-object", "-w", "--stdin", input=data)
    ref = CLAIMS + uid
    done, flag = _cas_push(git, config, ref, new, expected)
    if flag is None:
        raise unreachable(config, done)
    if flag == "!":
        return None
    git.run("update-ref", tracking(config.name) + uid, new)
    _mirror_set(config, uid, Known(uid, new, data))
    return new


def _cas_push(
    git: Git, config: Config, ref: str, new: str | None, expected: str | None
) -> tuple[subprocess.CompletedProcess, str | None]:
    """The one compare-and-swap of a claim ref: `ref` becomes `new` (None: deleted) only if
    the remote still has `expected` (None: no such ref), never a bare --force-with-lease.
    The push, and the status character git gave the ref (None: it never got there)."""
    done = git.run(
        "push",
        "--porcelain",
        "--no-verify",
        config.name,
        f"{new or ''}:{ref}",
        f"--force-with-lease={ref}:{expected or ''}",  # exact: the expected value named, empty = must not exist
        network=True,
    )
    return done, _push_flag(done, ref)


def _push_flag(done: subprocess.CompletedProcess, ref: str) -> str | None:
    """The status character git push --porcelain gave the ref (None: the push never got there)."""
    for line in done.stdout.decode("utf-8", "replace").splitlines():
        parts = line.split("\t")
        if len(parts) >= 2 and parts[1].endswith(":" + ref):
            return parts[0][:1] or " "
    return None


# -- the mirror that `ready` reads ---------------------------------------------------------------


def _mirror_path(config: Config) -> str:
    return os.path.join(config.folder, MIRROR)


def read_mirror(config: Config) -> dict[str, dict]:
    try:
        with open(_mirror_path(config), encoding="utf-8") as f:
            found = loads(f.read())
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def _write_mirror(config: Config, mirror: dict[str, dict]) -> None:
    path = _mirror_path(config)
    temp = f"{path}.{os.getpid()}.tmp"
    try:
        with open(temp, "w", encoding="utf-8") as f:
            f.write(dumps(mirror, sort_keys=True, ascii=True))
        os.replace(temp, path)
    except OSError:
        pass  # only a hint for views: the refs themselves are what counts


def _mirror_set(config: Config, uid: str, found: Known | None) -> None:
    mirror = read_mirror(config)
    if found is None or found.doc is None:
        mirror.pop(uid, None)
    else:
        mirror[uid] = found.doc
    _write_mirror(config, mirror)


def _fetched_since(config: Config) -> bool:
    """Whether a plain `git fetch` (the refspec init configured) moved the claim refs after
    the mirror was written: two stats, and git runs only when it did."""
    common = os.path.dirname(os.path.dirname(config.folder))  # <git-common-dir>/tasks/<key>
    try:
        written = os.stat(_mirror_path(config)).st_mtime_ns
    except OSError:
        written = -1
    for path in (f"{common}/{tracking(config.name).rstrip('/')}", f"{common}/packed-refs"):
        try:
            if os.stat(path).st_mtime_ns > written:
                return True
        except OSError:
            continue
    return False


def rebuild_mirror(git: Git, config: Config) -> None:
    _write_mirror(config, {uid: k.doc for uid, k in all_known(git, config).items() if k.doc is not None})


def held_elsewhere(store: Store, records: list[Record]) -> set[int]:
    """The ids among pending `records` that another clone claimed (a claim that holds)
    or completed, as far as this clone has seen: `ready` leaves them out. No git run."""
    config = config_of(store)
    if config is None:
        return set()
    if _fetched_since(config):
        with suppress(TaskError):  # only a hint for views: the claim's push decides
            rebuild_mirror(Git(store), config)
    mirror = read_mirror(config)
    if not mirror:
        return set()
    now = time.time()
    hidden = set()
    for record in records:
        doc = mirror.get(record.get("uid", ""))
        if isinstance(doc, dict) and record["status"] == "pending" and (doc.get("state") == "done" or _live(doc, now)):
            hidden.add(record["id"])
    return hidden


def remote_facts(store: Store, records: list[Record]) -> dict[int, dict]:
    """For views (ClaimRefs.elsewhere): {"kind": "claimed" or "completed", "owner",
    "remote"} for each pending task another clone claimed (a claim that holds) or
    completed, as far as this clone has seen. No git run."""
    config = config_of(store)
    if config is None:
        return {}
    mirror = read_mirror(config)
    uid_of = {r["id"]: r.get("uid", "") for r in records}
    found = {}
    for task_id in held_elsewhere(store, records):
        doc = mirror[uid_of[task_id]]
        kind = "completed" if doc.get("state") == "done" else "claimed"
        found[task_id] = {"kind": kind, "owner": str(doc.get("owner", "")), "remote": config.name}
    return found


def leased(store: Store, records: list[Record]) -> dict[int, float]:
    """By id: when the lease of each in-progress task's claim ref, a claim that holds,
    runs out, as far as this clone has seen (ClaimRefs.leased). No git run."""
    config = config_of(store)
    mirror = read_mirror(config) if config is not None else {}
    now, found = time.time(), {}
    for record in records:
        doc = mirror.get(record.get("uid", ""))
        if record["status"] == "in_progress" and isinstance(doc, dict) and _leased(doc) and _live(doc, now):
            found[record["id"]] = doc["at"] + doc["lease"]
    return found


def holder_elsewhere(board: Desk[Store]) -> Callable[[Record], dict | None]:
    """For `ready --explain` (ops.explain): who holds or completed a task on another
    machine, as far as this clone has seen (None: nobody, or no claims through a remote)."""

    def elsewhere(record: Record) -> dict | None:
        return remote_facts(board.store, [record]).get(record["id"])

    return elsewhere


def _live(doc: dict, now: float) -> bool:
    try:
        return live(doc, now)
    except (KeyError, TypeError):
        return False


# -- claiming ---------------------------------------------------------------------------------------


def claim(board: Desk[Store], task_id: int | None, owner: str, lease: float | None = None) -> Outcome:
    """Win the task's claim ref on the remote, then claim it here (taskboard.claims).
    Without an id: the first task in ready order whose ref this owner can win. A remote
    that cannot be reached refuses it (busy, with `claiming` set: a claim may be made on
    this clone alone instead, which the edges word as their own flag)."""
    from ..ops import claims

    config = config_of(board.store)
    if config is None:
        return claims.claim(board, task_id, owner, lease)
    try:
        return _claim(board, config, task_id, owner, lease)
    except Busy as exc:
        if exc.reason == "remote-unreachable":
            exc.data["claiming"] = True
        raise


def _claim(board: Desk[Store], config: Config, task_id: int | None, owner: str, lease: float | None) -> Outcome:
    from ..ops import claims

    claims.check_claimer(owner)
    git = Git(board.store)
    passed: set[int] = set()
    skipped: list[Note] = []
    while True:
        try:
            record, lapsed = _candidate(board, task_id, owner, passed, config)
        except NotFound as exc:
            if not skipped:
                raise
            passed_over = ", ".join(f"#{note.data['task']}" for note in skipped)
            raise NotFound(
                f"{exc.message} ({passed_over} passed over: a claim ref on {config.name} that is not a claim)",
                exc.reason,
                **exc.data,
            ) from None
        uid = record.get("uid")
        if not claims.is_uid(uid):
            raise Refused(f"#{record['id']} has no uid to name its claim ref by; a check with repairs gives it one")
        try:
            won = _win(git, config, record, owner, lease)
        except Refused as exc:
            if task_id is not None or exc.reason != "claim-ref-garbage":
                raise
            passed.add(record["id"])  # a ref nobody can read: its task waits for a person, the rest goes on
            skipped.append(Note("skipped-claim-ref", exc.message, task=record["id"]))
            continue
        if isinstance(won, dict):
            if task_id is not None:
                raise held_error(record["id"], won, config)
            passed.add(record["id"])
            continue
        outcome = _write_claim(board, git, config, record, owner, lease, lapsed, won)
        outcome.notes += skipped
        return outcome


def _write_claim(
    board: Desk[Store],
    git: Git,
    config: Config,
    record: Record,
    owner: str,
    lease: float | None,
    lapsed: dict | None,
    won: tuple[str, str | None],
) -> Outcome:
    """The task file follows the claim ref just won; the ref goes back when it cannot."""
    from ..ops import claims

    new, previous = won
    here = board.local()  # the ref says so already: no guard moves it again
    try:
        if lapsed is not None and record["owner"] == owner:  # its own claim, lapsed on the remote: resumed
            outcome = claims.claim(here, record["id"], owner, lease, lapsed=_lease_end(lapsed))
        elif lapsed is not None:
            outcome = _take_over(here, record, owner, lease, lapsed, config)
        else:
            outcome = claims.claim(here, record["id"], owner, lease)
    except TaskError:
        if new != previous:  # the claim failed here: give the ref back as it was
            _give_back(git, config, record, new, previous)
        raise
    _mark_won(board.store, record["uid"], owner, new)
    return outcome


def held_error(task_id: int, doc: dict, config: Config) -> Refused:
    if doc["state"] == "done":
        return Refused(
            f"#{task_id} was completed by {doc['owner'] or 'someone'} in another clone (through {config.name})",
            "done-remote",
            task=task_id,
            holder=doc["owner"],
        )
    if doc.get("clone") == config.clone:  # won here by a claimer stopped before it wrote the task
        return Refused(
            f"#{task_id} is held by {doc['owner']}, who won its claim on {config.name} from this clone but whose "
            "task file was not written (a check with repairs writes it)",
            "held-remote",
            task=task_id,
            holder=doc["owner"],
            remote=config.name,
        )
    return Refused(
        f"#{task_id} is held by {doc['owner']}, who won its claim on {config.name} from another clone",
        "held-remote",
        task=task_id,
        holder=doc["owner"],
        remote=config.name,
    )


def _lapsed(record: Record, owner: str, config: Config, runtime: Any, mirror: dict | None = None) -> dict | None:
    """The claim document that lets `owner` take over this task, which this clone's file
    says another holds: that holder's claim whose lease (kept in its claim ref, from
    another machine) ran out, or a release made on another clone that ended the claim
    this file shows (_ended: the holder gave it back there; this clone has not synced
    since)."""
    doc = (read_mirror(config) if mirror is None else mirror).get(record.get("uid", ""))
    if record["status"] != "in_progress" or record["owner"] == "" or not isinstance(doc, dict):
        return None
    if record["owner"] == owner:  # the owner's own claim, its lease run out: it resumes it (a restarted agent)
        return doc if _own_lapsed(doc, owner) else None
    if _lease_end(doc) is not None and (
        doc.get("owner") == record["owner"] or _over(record, doc, runtime.entry(record), config)
    ):
        return doc
    if doc.get("state") == "released" and _ended(record, doc, runtime.entry(record), config):
        return doc
    return None


def _own_lapsed(doc: dict, owner: str) -> bool:
    """Whether the claim ref names `owner`'s claim, whose lease ran out."""
    return doc.get("owner") == owner and _lease_end(doc) is not None


def _lease_end(doc: dict) -> float | None:
    """When the claim's lease ran out (None: no lease, or it still runs)."""
    if doc.get("state") != "claimed" or not _leased(doc) or _live(doc, time.time()):
        return None
    return doc["at"] + doc["lease"] if _number(doc.get("at")) else 0.0


def _taken_over_and_lapsed(record: Record, doc: dict, entry: Any, config: Config) -> bool:
    """Whether the claim ref names another owner's claim that came after the one this
    board's record shows (_over: someone took the task over on another machine, whose
    board may never come), and whose lease ran out: the task is anyone's to take over
    (_lapsed)."""
    return doc.get("owner") != record["owner"] and _lease_end(doc) is not None and _over(record, doc, entry, config)


def _take_over(
    board: Desk[Store], record: Record, owner: str, lease: float | None, lapsed: dict, config: Config
) -> Outcome:
    """The task file follows a claim ref won over a holder whose lease ran out elsewhere."""
    from ..core.model import Patch
    from ..disk.state import iso
    from ..ops import claims

    outcome = board.update(record["id"], Patch(status="in_progress", owner=owner), force=True)
    if lease:
        outcome = claims.claim(board, record["id"], owner, lease)
    if lapsed["state"] == "released":
        said = f"took #{record['id']}, which {record['owner']} gave back in another clone (through {config.name})"
    else:
        expired = iso(lapsed["at"] + lapsed["lease"])
        said = f"took #{record['id']} over from {lapsed['owner']}, whose lease on {config.name} ran out at {expired}"
    outcome.notes.append(Note("takeover", said, task=record["id"], holder=record["owner"]))
    return outcome


def _candidate(
    board: Desk[Store], task_id: int | None, owner: str, passed: set[int], config: Config
) -> tuple[Record, dict | None]:
    """The task to try, and the lapsed claim it takes over (if any): task_id (refused as a
    local claim would be, unless its holder's lease ran out on the remote), or the first
    task in ready order not passed over that the local rules offer to owner."""
    from ..core import graph
    from ..ops import claims

    store = board.store
    if not store.root.is_dir():
        board.require_board([task_id] if task_id is not None else [])
        raise NotFound(f"no ready task to claim for {owner}")
    with store.reading():
        runtime = claims.Runtime(claims.state_of(store))
        change = board.change()
        if task_id is not None:
            record = change.get(task_id)
            refusal = claims.refusal_of(change, runtime, record, owner)
            lapsed = _lapsed(record, owner, config, runtime)
            if refusal is not None and (lapsed is None or refusal.reason != ""):  # "" : held by its holder
                raise refusal
            return record, lapsed
        mirror = read_mirror(config)
        best: Record | None = None
        fallback: Record | None = None
        lapses: dict[int, dict] = {}
        for candidate in store.task_ids():
            if candidate in passed:
                continue
            try:
                record = change.get(candidate)
                offered, lapsed = _offered(change, runtime, record, owner, config, mirror)
                if not offered:
                    continue
            except (Corrupt, NotFound):
                continue
            if runtime.entry(record).failed_by(owner):
                if fallback is None or graph.ready_order(record) < graph.ready_order(fallback):
                    fallback = record
            elif best is None or graph.ready_order(record) < graph.ready_order(best):
                best = record
            if lapsed is not None:
                lapses[candidate] = lapsed
        chosen = best or fallback
        if chosen is None:
            raise NotFound(f"no ready task to claim for {owner}", "none-ready")
        return chosen, lapses.get(chosen["id"])


def _offered(
    change: Any, runtime: Any, record: Record, owner: str, config: Config, mirror: dict
) -> tuple[bool, dict | None]:
    """Whether `claim` without an id may try this task for owner, and the claim it takes
    over: as a local claim would (taskboard.claims), or held here by someone whose claim
    ended on another machine (lease run out, or given back there)."""
    from ..ops import claims

    doc = mirror.get(record.get("uid", ""))
    if isinstance(doc, dict) and doc.get("owner") != owner and (doc.get("state") == "done" or _live(doc, runtime.now)):
        return False, None  # seen claimed or completed elsewhere: the push would be refused
    lapsed = _lapsed(record, owner, config, runtime, mirror)
    if lapsed is not None:
        refusal = claims.refusal_of(change, runtime, record, owner)
        if refusal is None or refusal.reason == "":  # "": held by its holder here, whose claim ended there
            return True, lapsed
    return claims.offered(change, runtime, record, owner), None


def _win(git: Git, config: Config, record: Record, owner: str, lease: float | None) -> tuple[str, str | None] | dict:
    """Make the remote's claim ref name `owner`: (the ref's new object, its object before)
    when won, the holder's document when someone else holds it."""
    uid = record["uid"]
    seen = known(git, config, [uid])[uid]
    fresh = False
    for _attempt in range(ATTEMPTS):
        if seen.garbage:
            raise Refused(
                f"the claim ref {CLAIMS}{uid} of #{record['id']} on {config.name} is not a claim ({seen.garbage}); "
                f"nothing was changed: look at it, and remove it if it is no one's (git push {config.name} "
                f":{CLAIMS}{uid})",
                "claim-ref-garbage",
                task=record["id"],
            )
        doc = seen.doc
        if doc is not None and (live(doc) or doc["state"] == "done"):
            if doc["state"] == "claimed" and doc["owner"] == owner and fresh:
                return seen.sha or "", seen.sha  # already this owner's (a claimer stopped before writing the task)
            if not fresh:  # what this clone last saw may be stale: the remote says
                seen, fresh = fetch_one(git, config, uid), True
                continue
            return doc
        data = document(uid, record["id"], owner, "claimed", config.clone, lease)
        new = push(git, config, uid, data, seen.sha)
        if new is not None:
            return new, seen.sha
        expected = seen.sha
        seen, fresh = fetch_one(git, config, uid), True
        if seen.sha == expected:
            raise Refused(
                f"the remote {config.name} refused to move the claim ref of #{record['id']}", "remote-refused"
            )
    raise Busy(f"the claim ref of #{record['id']} on {config.name} kept changing; try again", "claim-ref-moving")


def _give_back(git: Git, config: Config, record: Record, ours: str, previous: str | None) -> None:
    """After a claim failed here: the ref back to exactly what it was (best effort)."""
    with suppress(TaskError):  # check reports the ref; nothing here depends on it
        restore(git, config, record["uid"], ours, previous)


def restore(git: Git, config: Config, uid: str, ours: str, previous: str | None) -> bool:
    """Put a ref this clone just moved to `ours` back to `previous` (None: delete it), by
    the same exact compare-and-swap; whether it went back."""
    _done, flag = _cas_push(git, config, CLAIMS + uid, previous, ours)
    if flag in (None, "!"):
        return False
    if previous is None:
        git.run("update-ref", "-d", tracking(config.name) + uid)
    else:
        git.run("update-ref", tracking(config.name) + uid, previous)
    _mirror_set(config, uid, known(git, config, [uid])[uid])
    return True


# -- following changes made here ------------------------------------------------------------------
#
# Every change that moves a task's status or owner moves its claim ref first, under the
# board lock, just before the files are written (Board.change's guard): an exact
# compare-and-swap from the ref this clone believes (its tracking ref) to the document
# the record will bear. The ref may move only from a claim of the task's holder before
# the change (the claim this clone's board says it holds), from nothing, or from the
# very document this clone last saw; a claim of anyone else, or a release or completion
# made elsewhere since, refuses the change (4, naming who holds it) and nothing is
# written here. A person's --force moves it from whatever it is now. When the remote
# cannot be reached the change is made here and a note says the ref lags.


def wanted(record: Record) -> str:
    status = record["status"]
    return "claimed" if status == "in_progress" else "done" if status == "completed" else "released"


class PushFirst(Exception):
    """Raised by the guard under the board lock, before anything is written: these claim
    refs must move first, which takes the network, so the board lets the lock go, moves
    them (`move_first`) and runs the change again (Board._refs_first)."""

    def __init__(self, moves: list[tuple[Record, str, bool]]):
        super().__init__("claim refs move first")
        self.moves = moves  # (the record as it will be written, its holder before, forced)


def guard(board: RefDesk, change: Any, moved: list[Record]) -> tuple[list[Note], Any]:
    """Under the board lock, before a change that moves status or owner is written: the
    claim refs must already say what the records will. Those this clone's tracking refs
    show agreeing, or that `move_first` moved for exactly this (or found lagging), pass;
    for the others PushFirst is raised (nothing written). No network: git reads only."""
    if board.moved_refs is None:
        return _guard_in_lock(board, change, moved)
    config = config_of(board.store)
    records = [r for r in moved if isinstance(r.get("uid"), str)]
    if config is None or not records:
        return [], None
    git = Git(board.store)
    try:
        seen = known(git, config, [r["uid"] for r in records])
    except TaskError as exc:
        return [_behind(records[0], config, exc.message)], None
    moves = []
    for record in records:
        status, owner = change.was.get(record["id"], ("pending", ""))
        holder = owner if status == "in_progress" else ""
        if board.moved_refs.get(record["uid"]) in (_claim_of(record), "behind"):
            continue
        found = seen[record["uid"]]
        agrees = not found.garbage and _verdict(found, found.sha, record, holder, change.forced, False) is None
        if agrees and wanted(record) != "claimed":  # a claim is confirmed on the remote first: this may be stale
            continue
        moves.append((dict(record), holder, bool(change.forced)))
    if moves:
        raise PushFirst(moves)
    return [], None


def _guard_in_lock(board: Desk[Store], change: Any, moved: list[Record]) -> tuple[list[Note], Any]:
    """Move the claim refs of the records a change is about to write with a new status or
    owner, under the lock (the changes not run through Board._refs_first: a repair of
    check): (notes, an undo that puts the moved refs back, or None). Refused: nothing moved."""
    config = config_of(board.store)
    records = [r for r in moved if isinstance(r.get("uid"), str)]
    if config is None or not records:
        return [], None
    git = Git(board.store)
    notes: list[Note] = []
    try:
        seen = known(git, config, [r["uid"] for r in records])
    except TaskError as exc:
        return [_behind(records[0], config, exc.message)], None
    done: list[tuple[str, str, str | None]] = []

    def undo() -> None:
        for uid, ours, previous in reversed(done):
            with suppress(TaskError):
                restore(git, config, uid, ours, previous)

    for record in records:
        status, owner = change.was.get(record["id"], ("pending", ""))
        holder = owner if status == "in_progress" else ""
        try:
            swapped = _swap(git, config, board, record, seen[record["uid"]], holder, change.forced)
        except Refused as exc:
            if exc.reason == "claim-ref-garbage":
                notes.append(_behind(record, config, exc.message))
                continue
            undo()
            raise
        except Busy as exc:
            notes.append(_behind(record, config, exc.message))
            continue
        if swapped is not None:
            done.append((record["uid"], *swapped))
    return notes, (undo if done else None)


def _claim_of(record: Record) -> tuple[str, str]:
    state = wanted(record)
    return state, record["owner"] if state != "released" else ""


def move_first(board: RefDesk, moves: list[tuple[Record, str, bool]]) -> None:
    """Outside the board lock: move each claim ref to what its record will say, by the
    exact compare-and-swap of `_swap` (a fetch when refused; Refused when it names a claim
    that is not the holder's). A ref the remote cannot take now lags, with a note."""
    config = config_of(board.store)
    if config is None:
        return
    git = Git(board.store)
    moved = board.moved_refs
    assert moved is not None, "move_first runs inside Board._refs_first"
    for record, holder, forced in moves:
        uid = record["uid"]
        try:
            seen = known(git, config, [uid])[uid]
            if wanted(record) == "claimed" and _verdict(seen, seen.sha, record, holder, forced, False) is None:
                seen = fetch_one(git, config, uid)  # what this clone last saw may be stale: the remote says
            swapped = _swap(git, config, board, record, seen, holder, forced)
        except Refused as exc:
            if exc.reason != "claim-ref-garbage":
                raise
            board.ref_notes.append(_behind(record, config, exc.message))
            moved[uid] = "behind"
            continue
        except Busy as exc:
            board.ref_notes.append(_behind(record, config, exc.message))
            moved[uid] = "behind"
            continue
        moved[uid] = _claim_of(record)
        if swapped is not None:
            board.ref_undo.append((uid, *swapped))


def _mark_moved(board: RefDesk) -> None:
    """After a change whose claim refs moved first (or were found on the remote as it
    wanted them): each claim it made bears its ref (_mark_won)."""
    ours = {uid: new for uid, new, _previous in board.ref_undo}
    for uid, moved in (board.moved_refs or {}).items():
        if isinstance(moved, tuple) and moved[0] == "claimed":
            _mark_won(board.store, uid, moved[1], ours.get(uid))


def give_back(board: RefDesk) -> None:
    """After a change whose refs moved first did not happen: each ref back as it was."""
    config = config_of(board.store)
    if config is None:
        return
    git = Git(board.store)
    for uid, ours, previous in reversed(board.ref_undo):
        with suppress(TaskError):
            restore(git, config, uid, ours, previous)


def renew(board: Desk[Store], task_id: int, lease: float | None) -> list[Note]:
    """Before `renew` renews a lease here: the claim ref says so too, moved only from the
    caller's own claim. A claim taken over elsewhere is refused (4) naming the holder."""
    from ..ops import claims

    config = config_of(board.store)
    if config is None or not board.caller:
        return []
    try:
        record = board.store.read(task_id)
    except TaskError:
        return []  # claims.renew says what is wrong
    held = claims.Runtime(claims.state_of(board.store)).entry(record).claim
    seconds = lease or (held or {}).get("lease")
    if (
        record["status"] != "in_progress"
        or record["owner"] != board.caller
        or not seconds
        or not claims.is_uid(record.get("uid"))
    ):
        return []  # nothing to renew: claims.renew refuses it or says so
    git = Git(board.store)
    try:
        seen = known(git, config, [record["uid"]])[record["uid"]]
        _swap(git, config, board, record, seen, record["owner"], False, renewal=(seconds, time.time()))
    except Busy as exc:
        return [_behind(record, config, exc.message)]
    except Refused as exc:
        if exc.reason == "claim-ref-garbage":
            return [_behind(record, config, exc.message)]
        raise
    return []


def _behind(record: Record, config: Config, why: str) -> Note:
    return Note(
        "claim-ref-behind",
        f"the claim ref of #{record['id']} on {config.name} was not updated ({why}); "
        "a sync or a check with repairs updates it",
        task=record["id"],
        remote=config.name,
    )


def _lease_of(board: Desk[Store], record: Record) -> tuple[float | None, float | None]:
    """(lease seconds, when it was last renewed) of the record's claim here."""
    from ..ops import claims

    entry = claims.Runtime(claims.state_of(board.store)).entry(record)
    claim = entry.claim
    if claim and claim.get("owner") == record["owner"] and claim.get("lease"):
        return claim["lease"], claim.get("renewed") or claim.get("at")
    return None, None


def _verdict(
    seen: Known, believed: str | None, record: Record, holder: str, forced: bool, renewal: bool
) -> bool | None:
    """Whether the ref `seen` may move to what `record` says: None when it already says
    so, True when it may, False when it names a claim that is not the holder's."""
    state, doc = wanted(record), seen.doc
    if doc is None:
        return None if state == "released" else True
    agrees = doc["state"] == state and (state != "claimed" or doc["owner"] == record["owner"])
    if agrees and not renewal:
        return None
    if forced:
        return True
    if doc["state"] == "claimed":
        return doc["owner"] == holder or (state == "claimed" and doc["owner"] == record["owner"])
    return seen.sha == believed and not renewal  # given back or completed as this clone last saw it


def _not_yours(record: Record, doc: dict, holder: str, config: Config) -> Refused:
    """The refusal of a change whose claim ref names a claim that is not the holder's."""
    task, where = record["id"], config.name
    if doc["state"] == "claimed":
        whose = f"{doc['owner']} holds #{task} through its claim ref on {where}"
        ended = f"#{task} was taken over: {whose}, so {holder}'s claim on it has ended" if holder else whose
        return Refused(f"{ended}; nothing was changed", "held-remote", task=task, holder=doc["owner"], remote=where)
    if doc["state"] == "done":
        return Refused(
            f"#{task} was completed by {doc['owner'] or 'someone'} in another clone (through {where}); "
            "nothing was changed (a sync brings the completion here)",
            "done-remote",
            task=task,
            holder=doc["owner"],
            remote=where,
        )
    ended = f"{holder}'s claim on #{task} has ended" if holder else f"the claim ref of #{task} moved"
    return Refused(
        f"{ended}: it was given back in another clone (through {where}) since this clone last looked; "
        "nothing was changed",
        "released-remote",
        task=task,
        holder="",
        remote=where,
    )


def _swap(
    git: Git,
    config: Config,
    board: Desk[Store],
    record: Record,
    seen: Known,
    holder: str,
    forced: bool,
    renewal: tuple[float, float] | None = None,
) -> tuple[str, str | None] | None:
    """Move one claim ref to what `record` says by an exact compare-and-swap from `seen`
    (what this clone believes); `holder`: who held the task here before the change.
    (the ref's new object, its object before) when it moved, None when it already said
    so. Refused when it names a claim that is not the holder's (after one fetch to be
    sure), Busy when the remote cannot be reached."""
    believed, fresh = seen.sha, False
    uid = record["uid"]
    for _attempt in range(ATTEMPTS):
        if seen.garbage:
            raise Refused(f"it is not a claim: {seen.garbage}", "claim-ref-garbage", task=record["id"])
        verdict = _verdict(seen, believed, record, holder, forced, renewal is not None)
        if verdict is None:
            return None
        if verdict is False:
            if fresh and seen.doc is not None:
                raise _not_yours(record, seen.doc, holder, config)
            seen, fresh = fetch_one(git, config, uid), True
            continue
        new = push(git, config, uid, _document_for(board, record, config, renewal), seen.sha)
        if new is not None:
            return new, seen.sha
        seen, fresh = fetch_one(git, config, uid), True
    raise Busy(f"the claim ref of #{record['id']} on {config.name} kept changing; try again", "claim-ref-moving")


def _document_for(board: Desk[Store], record: Record, config: Config, renewal: tuple[float, float] | None) -> bytes:
    """The claim document `record` bears: a claim carries its lease and when it was last
    renewed (a claim the file already bears is no newer than the file)."""
    state = wanted(record)
    owner = record["owner"] if state != "released" else ""
    lease: float | None
    at: float | None
    if renewal is not None:
        lease, at = renewal
    elif state == "claimed":
        lease, at = _lease_of(board, record)
        at = at or _updated(record) or None
    else:
        lease, at = None, None
    data = document(record["uid"], record["id"], owner, state, config.clone, lease)
    if at is None:
        return data
    moved = loads(data)
    moved["at"] = round(at, 3)
    return (dumps(moved, sort_keys=True, ascii=True) + "\n").encode("utf-8")


def _move_ref(
    git: Git, config: Config, record: Record, seen: Known, board: Desk[Store], holder: str, forced: bool
) -> str:
    """check --fix: move one ref to what the record says; '' when done (or nothing to do), else why not."""
    try:
        swapped = _swap(git, config, board, record, seen, holder, forced)
    except (Busy, Refused) as exc:
        return exc.message
    if wanted(record) == "claimed":
        _mark_won(board.store, record["uid"], record["owner"], swapped[0] if swapped else seen.sha)
    return ""


# -- configuring ------------------------------------------------------------------------------------


def configure(store: Store, name: str) -> list[str]:
    """`tasks init --remote NAME`: claims go through NAME from now on. Checks that NAME is
    a remote of this clone that answers; adds the fetch refspec of claim refs."""
    from ..ops.claims import state_of

    if not name or name.startswith("-") or any(c.isspace() or c in "\\:*?[~^" for c in name):
        raise UsageError(f"{name!r} is not a remote name", "bad-remote")
    state = state_of(store)
    if not state.shared:
        raise UsageError("claims through a remote need the board inside a git work tree", "no-git")
    git = Git(store)
    url = git.run("remote", "get-url", name)
    if url.returncode != 0:
        names = git.run("remote").stdout.decode("utf-8", "replace").split()
        known_names = f" (this clone has: {', '.join(names)})" if names else " (this clone has none)"
        raise UsageError(f"no remote named {name!r} in this clone{known_names}", "bad-remote", remote=name)
    config = Config(name, "", state.folder)
    probe = git.run("ls-remote", name, CLAIMS + "*", network=True)
    if probe.returncode != 0:
        raise unreachable(config, probe)
    done = []
    specs = git.run("config", "--get-all", f"remote.{name}.fetch").stdout.decode("utf-8", "replace").split()
    if refspec(name) not in specs:
        git.run("config", "--add", f"remote.{name}.fetch", refspec(name), check=True)
        done.append(f"git fetch {name} now brings its claim refs ({refspec(name)})")
    previous = config_of(store)
    clone = previous.clone if previous is not None else os.urandom(6).hex()
    state.ensure_folder()
    path = os.path.join(state.folder, CONFIG)
    with open(f"{path}.tmp", "w", encoding="utf-8") as f:
        f.write(dumps({"remote": name, "clone": clone}, ascii=True))
    os.replace(f"{path}.tmp", path)
    config = Config(name, clone, state.folder)
    fetched = fetch_all(git, config)
    if fetched.returncode != 0:
        raise unreachable(config, fetched)
    if previous is None or previous.name != name:
        done.append(f"claims go through {name} ({url.stdout.decode('utf-8', 'replace').strip()}) from now on")
    return done or [f"claims already go through {name}"]


# -- check -----------------------------------------------------------------------------------------------


def check_problems(board: Desk[Store], fix: bool = False) -> list[Problem]:
    """Claim refs that disagree with the board, as this clone last saw them; with `fix`,
    what has one answer is resolved (a ref pushed, or the task made to follow its ref)."""
    from ..core.outcome import Problem

    config = config_of(board.store)
    if config is None or not board.store.root.is_dir():
        return []
    git = Git(board.store)
    if fix:
        fetched = fetch_all(git, config)
        if fetched.returncode != 0:
            return [
                Problem(None, None, "claim-ref", f"the remote {config.name} cannot be reached ({failure(fetched)})")
            ]
    refs = all_known(git, config)
    records, _damaged = board.store.read_all()
    by_uid = {r["uid"]: r for r in records if isinstance(r.get("uid"), str)}
    if fix:
        _heal_marks(board.store, refs, by_uid)
    problems = []
    for uid, seen in sorted(refs.items()):
        problem = _judge(board, git, config, seen, by_uid.get(uid), fix)
        if problem is not None:
            problems.append(problem)
    for record in records:
        held = record.get("uid")
        if record["status"] == "in_progress" and record["owner"] and isinstance(held, str) and held not in refs:
            message = f"#{record['id']} is held by {record['owner']} here but has no claim ref on {config.name}"
            problems.append(
                _fixed(
                    record,
                    message,
                    fix and not _move_ref(git, config, record, Known(held), board, record["owner"], False),
                )
            )
    return problems


def _heal_marks(store: Store, refs: dict[str, Known], by_uid: dict[str, Record]) -> None:
    """Just after a fetch of every claim ref: a claim this clone made that the remote
    bears, and that is not marked so (a kill before its mark, a claim made before marks
    were kept, a renewal in another worktree), is marked now (_mark_won)."""
    from ..ops import claims

    runtime = claims.Runtime(claims.state_of(store))
    for uid, seen in refs.items():
        record, doc = by_uid.get(uid), seen.doc
        if record is None or doc is None or record["status"] != "in_progress" or not record["owner"]:
            continue
        if doc["state"] != "claimed" or doc["owner"] != record["owner"]:
            continue
        claim = runtime.entry(record).claim
        if isinstance(claim, dict) and claim.get("owner") == record["owner"] and not claim.get("ref"):
            _mark_won(store, uid, record["owner"], seen.sha)


def _judge(
    board: Desk[Store], git: Git, config: Config, seen: Known, record: Record | None, fix: bool
) -> Problem | None:
    """What is wrong between one claim ref and its task here (None: they agree, or the task
    is not on this board yet); with `fix`, resolved when it has one answer."""
    from ..core.outcome import Problem

    where = f"{CLAIMS}{seen.uid} on {config.name}"
    if seen.garbage:
        return Problem(
            None,
            record["id"] if record else None,
            "claim-ref",
            f"{where} is not a claim ({seen.garbage}); nothing was changed: remove it if it is no one's",
        )
    if record is None or seen.doc is None:
        return None
    return _disagreement(board, git, config, seen, seen.doc, record, fix)


def _disagreement(
    board: Desk[Store], git: Git, config: Config, seen: Known, doc: dict, record: Record, fix: bool
) -> Problem | None:
    from ..core.outcome import Problem
    from ..ops import claims

    where = f"{CLAIMS}{seen.uid} on {config.name}"
    ref_state, mine, status = doc["state"], doc["clone"] == config.clone, record["status"]

    def push_fix(message: str, holder: str, forced: bool) -> Problem:
        return _fixed(record, message, fix and not _move_ref(git, config, record, seen, board, holder, forced))

    if ref_state == "claimed" and live(doc) and status == "completed":
        # moved from the claim of the task's holder here, or from any claim this clone made; another's is left
        message = f"#{record['id']} is completed here but {where} says {doc['owner']} holds it"
        return push_fix(message, record["owner"], mine)
    if ref_state == "claimed" and live(doc) and mine and status == "pending":
        if _updated(record) >= doc["at"]:
            message = f"#{record['id']} was given back here but {where} still says {doc['owner']} holds it"
            return push_fix(message, doc["owner"], False)
        message = f"{where} says {doc['owner']} claimed #{record['id']}, but its task file was not written"
        followed = False
        if fix:  # the claimer stopped between the ref and the task file: the task follows the ref
            try:
                claims.claim(board, record["id"], doc["owner"], doc.get("lease"))
                followed = True
            except TaskError:
                followed = False
        return _fixed(record, message, followed)
    held = (
        status == "in_progress" and record["owner"] and not (ref_state == "claimed" and doc["owner"] == record["owner"])
    )
    if held and live(doc) and not mine:
        return Problem(
            None,
            record["id"],
            "claim-ref",
            f"#{record['id']} is held by {record['owner']} here but by {doc['owner']} through {where}: "
            "one of them must give it back",
        )
    # a claim shown here that ended elsewhere is no disagreement: the ref decides, and a sync brings the board
    # (or, when the claim that ended it lapsed in turn, the next claimer takes it over: _lapsed)
    entry = claims.Runtime(claims.state_of(board.store)).entry(record) if held else None
    if held and not _ended(record, doc, entry, config) and not _taken_over_and_lapsed(record, doc, entry, config):
        message = f"#{record['id']} is held by {record['owner']} here but {where} does not say so"
        return push_fix(message, record["owner"], True)  # a claim of another that holds was named above
    return None


def _fixed(record: Record, message: str, fixed: bool) -> Problem:
    from ..core.outcome import Problem

    return Problem(None, record["id"], "claim-ref", message, fixed=bool(fixed), fixable=True)


def _updated(record: Record) -> float:
    from datetime import datetime

    try:
        return datetime.fromisoformat(str(record.get("updatedAt", "")).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


class ClaimRefs(Authority):
    """The claim authority of a clone whose claims go through a git remote (`tasks init
    --remote`): the remote's claim refs decide. Without one configured, the board's own
    rules decide, as LOCAL's."""

    def claim(self, board: Desk[Store], task_id: int | None, owner: str, lease: float | None) -> Outcome:
        return claim(board, task_id, owner, lease)

    def poll(self, store: Store, board: Desk[Store] | None = None, catch_up: Any = None) -> tuple[float, Any] | None:
        """The claim refs, every POLL seconds; then `catch_up` (the front end's
        git.sync.waiter, which runs git.sync.bring_in) syncs when they say an open task here was completed or given
        back on another machine, or when this board holds what the remote does not: a
        completion frees dependents only once the task files say so."""
        if config_of(store) is None:
            return None

        def fetch() -> None:
            refresh(store)
            if board is not None and catch_up is not None:
                catch_up(board)

        return (POLL, fetch)

    def renew(self, board: Desk[Store], task_id: int, lease: float | None) -> list[Note]:
        return renew(board, task_id, lease)

    def held_elsewhere(self, store: Store, pending: Callable[[], list[Record]]) -> set[int]:
        return held_elsewhere(store, pending())

    def elsewhere(self, store: Store, records: list[Record]) -> dict[int, dict]:
        return remote_facts(store, records)

    def leased(self, store: Store, records: list[Record]) -> dict[int, float]:
        return leased(store, records)

    def guard(self, board: RefDesk, change: Change, moved: list[Record]) -> tuple[list[Note], Any]:
        return guard(board, change, moved)

    def first(self, board: RefDesk, run: Any) -> Outcome:
        """The change runs; when its guard stops it under the lock (PushFirst: a claim ref
        must move, which takes the network), the refs move with the lock let go and the
        change runs again. When it does not happen after all, the refs go back."""
        if config_of(board.store) is None:
            return run()
        board.moved_refs, board.ref_undo = {}, []
        try:
            for _attempt in range(ATTEMPTS):
                try:
                    outcome = run()
                except PushFirst as first:
                    move_first(board, first.moves)
                    continue
                _mark_moved(board)
                return outcome
            raise Busy("the claim refs of this change kept moving; try again", "claim-ref-moving")
        except BaseException as exc:
            if not (isinstance(exc, TaskError) and exc.completes):  # else the change happens all the same
                give_back(board)
            raise
        finally:
            board.moved_refs, board.ref_undo = None, []
