"""Runtime state that git must not commit: leases, failed attempts, and the claims the
worktrees of one clone share. One small JSON file per task, named by the task's uid.

Where it lives: when the board is inside a git work tree, in git's common folder,
`<git-common-dir>/tasks/<key>/` (the key names the board's path inside the work tree,
so every worktree's `.tasks/` shares one folder); else in `<board>/.state/`. The git
folders are found by reading `.git` (a folder, or a file saying `gitdir: ...`) and
`commondir`, never by running git.

Writes replace one file atomically (a temporary file in the same folder, then
`os.replace`) under the state lock, a `flock` on `.lock` in the state folder, taken
with a deadline after the board lock (never the other way round). Reads take no lock:
a file is whole or absent. A damaged file reads as no state at all (`check` reports
it, `check --fix` removes it): runtime state is never a reason to crash.

Runtime state is not fsynced: after a power cut a lease or an attempt count may be
lost, never torn into something else (a damaged file reads as empty).
"""

from __future__ import annotations

import errno
import math
import os
import stat
import time

from ..core.errors import Busy, Corrupt
from ..core.fields import STUCK_AFTER, TIME_FORMAT, dumps, loads
from ..core.scopes import contextmanager, suppress
from .gitdirs import common_dir, small_text
from .locks import wait_for

TYPE_CHECKING = False  # typing costs ~5 ms of start-up; annotations are strings anyway
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

    from ..core.fields import Record

STATE_FOLDER = ".state"  # inside a board that no git work tree holds
LOCK_NAME = ".lock"
REMOTE_NAME = ".remote"  # {"remote": NAME, "clone": id}: the remote claims go through (taskboard.git.claimrefs)
# A lease of D runs out D + LEASE_GRACE after the claim or renewal is written: never before
# D has passed since the command that made it returned, and within the contract's D + 1 s.
LEASE_GRACE = 0.5
MAX_NOTE = 2000  # characters of a failure note kept in the state (the journal keeps the rest)
_SUFFIX = ".json"
_HEX = frozenset("0123456789abcdef")
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
_WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


# -- where the state lives ---------------------------------------------------------------


def locate(board: str) -> tuple[str, bool]:
    """(the state folder of the board at `board`, whether worktrees share it)."""
    real = os.path.realpath(board)
    here = real
    while True:
        common = common_dir(here)
        if common is not None:
            return f"{common}/tasks/{_key(os.path.relpath(real, here))}", True
        parent = os.path.dirname(here)
        if parent == here:
            return os.path.join(real, STATE_FOLDER), False
        here = parent


def main_worktree(top: str) -> str | None:
    """The top of the clone's main worktree when `top` is the top of a linked worktree
    (its `.git` a file naming a folder that has `commondir`) and the clone works one
    plan: None for a main worktree, a submodule, a bare main, or when git's config says
    `tasks.worktrees = branch` (the clone's, the worktree's or the user's)."""
    text = small_text(os.path.join(top, ".git"))
    if text is None or not text.startswith("gitdir:"):
        return None
    git_dir = os.path.join(top, text[len("gitdir:") :].strip())
    common = small_text(os.path.join(git_dir, "commondir"))
    if not common or not common.strip():
        return None
    common_folder = os.path.normpath(os.path.join(git_dir, common.strip()))
    home = os.path.expanduser("~")
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    files = [os.path.join(xdg, "git", "config"), os.path.join(home, ".gitconfig")]
    files += [os.path.join(common_folder, "config"), os.path.join(git_dir, "config.worktree")]
    settings = _git_config(files)
    if settings.get(("tasks", "worktrees"), "").lower() == "branch":
        return None
    if settings.get(("core", "bare"), "").lower() in ("true", "yes", "on", "1"):
        return None
    main = os.path.dirname(common_folder)
    if os.path.basename(common_folder) != ".git" or not os.path.isdir(common_folder):
        return None  # a bare clone (or a git folder kept apart): no main worktree to share
    return main


def _git_config(files: list[str]) -> dict[tuple[str, str], str]:
    """The plain `[section]` / `key = value` settings of git config files, the later file
    winning, as git reads them (names case-insensitive; `[include] path` followed where it
    stands, as git does; `[includeIf]` is not)."""
    found: dict[tuple[str, str], str] = {}
    for path in files:
        _read_config(path, found, 0)
    return found


MAX_INCLUDE_DEPTH = 10  # git's own limit


def _read_config(path: str, found: dict[tuple[str, str], str], depth: int) -> None:
    text = small_text(path, 1 << 16)
    section = ""
    for raw in (text or "").splitlines():
        line = raw.strip()
        if line.startswith("["):
            section = line[1:].partition("]")[0].strip().lower()
            continue
        if not line or line[0] in "#;" or not section or " " in section:
            continue
        key, equals, value = line.partition("=")
        value = value.split("#")[0].split(";")[0].strip().strip('"') if equals else "true"
        key = key.strip().lower()
        if section == "include" and key == "path" and value and depth < MAX_INCLUDE_DEPTH:
            included = os.path.expanduser(value)
            _read_config(os.path.join(os.path.dirname(path), included), found, depth + 1)  # an absolute one stays
            continue
        found[(section, key)] = value


def _key(relative: str) -> str:
    """The board's path inside its work tree as one folder name: `.tasks`, `sub%2F.tasks`."""
    safe = []
    for char in relative.replace(os.sep, "/"):
        if char.isascii() and (char.isalnum() or char in "._-"):
            safe.append(char)
        else:
            safe.extend(f"%{byte:02X}" for byte in char.encode("utf-8", "surrogateescape"))
    key = "".join(safe)
    return key if key not in ("", ".", "..") else f"%{key or 'top'}"


# -- one task's state -----------------------------------------------------------------------


class Entry:
    """What the runtime state says of one task (by uid): `claim` (who holds it, on which
    board, since when, with what lease), `done` (completed on which board: worktrees
    share it), `failures` (each `{"by", "at", "note"}`), and whether the file was damaged."""

    def __init__(self, uid: str, document: dict | None = None, damaged: bool = False):
        document = document or {}
        self.uid = uid
        self.task: int | None = document.get("task")
        self.claim: dict | None = document.get("claim")
        self.done: dict | None = document.get("done")
        self.failures: list[dict] = list(document.get("failures", []))
        self.damaged = damaged

    def document(self) -> dict:
        found: dict[str, Any] = {"uid": self.uid, "task": self.task}
        for key in ("claim", "done"):
            if getattr(self, key):
                found[key] = getattr(self, key)
        if self.failures:
            found["failures"] = self.failures
        return found

    def is_empty(self) -> bool:
        return not (self.claim or self.done or self.failures)

    @property
    def attempts(self) -> int:
        return len(self.failures)

    @property
    def stuck(self) -> bool:
        return len(self.failures) >= STUCK_AFTER

    def failed_by(self, name: str) -> bool:
        return any(failure["by"] == name for failure in self.failures)

    def expires(self) -> float | None:
        """When the claim's lease runs out (seconds since the epoch), None without one."""
        claim = self.claim
        if not claim or claim.get("lease") is None:
            return None
        return claim["renewed"] + claim["lease"] + LEASE_GRACE

    def expired(self, now: float) -> bool:
        expires = self.expires()
        return expires is not None and now >= expires


def _number(value: Any) -> bool:
    return type(value) in (int, float) and math.isfinite(value) and abs(value) < 1e12


def _has(item: Any, texts: tuple[str, ...], numbers: tuple[str, ...]) -> bool:
    """An object whose `texts` keys hold strings and `numbers` keys finite numbers."""
    return (
        type(item) is dict
        and all(type(item.get(key)) is str for key in texts)
        and all(_number(item.get(key)) for key in numbers)
    )


def _sound(document: Any, uid: str) -> bool:
    """Whether a parsed state file has the shape this module writes."""
    if type(document) is not dict or document.get("uid") != uid:
        return False
    claim, done, failures = document.get("claim"), document.get("done"), document.get("failures", [])
    lease = claim.get("lease") if type(claim) is dict else None
    return (
        (document.get("task") is None or type(document["task"]) is int)
        and (claim is None or _has(claim, ("owner", "board"), ("at", "renewed")))
        and (lease is None or (_number(lease) and lease > 0))
        and (done is None or _has(done, ("board", "by"), ("at",)))
        and type(failures) is list
        and all(_has(failure, ("by", "note"), ("at",)) for failure in failures)
    )


def is_uid(text: Any) -> bool:
    return type(text) is str and len(text) == 12 and _HEX.issuperset(text)


def reopened_since(record: Record | None, done: dict | None, board: str) -> bool:
    """Whether, on `board`, the task's file has ended the completion mark `done`: it says
    the task is not completed and was written after the mark was made (a reopen made
    elsewhere and synced or merged in). Then the file wins over the mark (DESIGN §9,
    §13): in every worktree (taskboard.ops.claims: Runtime.elsewhere) and on the board
    that made it (check drops it). The mark stands against a file written before it (a
    checkout that rewound the completion); against one of the mark's own second, as
    `updatedAt` names a second (as the index trusts no ctime within RACY_NS of the clock,
    a file of that second is not known to be later: the safe side for a claim; check
    reports it, --fix drops it); and against a version `board` wrote itself while the
    mark stood (`kept`, recorded by that change: an edit there, or a neighbour's change
    that rewrote the file, is no reopen)."""
    if record is None or done is None or record.get("status") == "completed":
        return False
    updated, moment = record.get("updatedAt"), done.get("at")
    if type(updated) is not str or not isinstance(moment, (int, float)):
        return False
    kept = done.get("kept")
    own = kept.get(board) if type(kept) is dict else None
    return updated > iso(moment) and not (type(own) is str and updated <= own)


def follow(entry: Entry, record: Record, was: tuple[str, str], board: str, shared: bool, now: float) -> None:
    """The entry after a change on `board` moved the record's status or owner from `was`
    (status, owner). A release or any move away from the holder forgets the holder's
    claim wherever in the clone it was made (a branch worktree gives back what another
    claimed: the claim is the same one); completing ends any claim."""
    status, owner = record["status"], record["owner"]
    claim = entry.claim

    def here(mark: dict | None) -> bool:
        return mark is not None and mark["board"] == board

    if status == "in_progress":
        if not (here(claim) and claim and claim["owner"] == owner):
            entry.claim = {"owner": owner, "board": board, "at": now, "renewed": now, "lease": None} if shared else None
        if here(entry.done):
            entry.done = None
    elif status == "completed":
        entry.claim = None  # completing ends any claim, here or elsewhere
        entry.done = {"board": board, "by": owner, "at": now} if shared else None
        entry.failures = []
    else:
        if here(claim) or (claim and was == ("in_progress", claim["owner"])):
            entry.claim = None
        if here(entry.done):
            entry.done = None


def _followed(entry: Entry, record: Record, board: str) -> bool:
    """Whether the entry already holds the claim or completion the record shows, made on
    `board` (a replay leaves it as its writer made it: a lease, the completion's time).
    A release's follow is the same however often it runs."""
    status, claim = record["status"], entry.claim
    if status == "in_progress":
        return claim is not None and claim["board"] == board and claim["owner"] == record["owner"]
    if status == "completed":
        return claim is None and entry.done is not None and entry.done["board"] == board
    return False


UNRECORDED = "unrecorded"  # an intent item without `ends` (written before it was kept): any claim of the holder


def replay(store: Any, moves: list[tuple[Record, tuple[str, str], Any]]) -> None:
    """A recovery's replay of what a killed change made the runtime state follow (its
    intent's `runtime`: each task whose status or owner moved, from what, and which claim
    it ends: that claim's `at`, None for none, UNRECORDED): the runtime state is brought
    up to date with the files the recovery completed, as the change would have, so that a
    release or completion killed after its intent ends the claim as a finished one does.
    A claim other than the one the change ended was made since (the same owner's claim
    in another worktree, after the killed change had already followed): it stays.
    Under the state lock (after the board lock)."""
    state = state_of(store)
    with state.locked():
        now = time.time()
        for record, was, ends in moves:
            uid = record.get("uid")
            if not isinstance(uid, str) or not is_uid(uid):
                continue
            entry = state.read(uid)
            if entry.damaged:
                continue
            if _followed(entry, record, state.board):
                continue
            before = dumps(entry.document(), sort_keys=True)
            live = entry.claim
            since = (
                ends is not UNRECORDED
                and record.get("status") != "in_progress"
                and live is not None
                and (ends is None or live.get("at") != ends)
            )
            if since:
                entry.claim = None  # not the change's to end: set aside while the entry follows
            follow(entry, record, was, state.board, state.shared, _written_at(record, now))
            if since:
                entry.claim = live
            entry.task = record.get("id") if type(record.get("id")) is int else entry.task
            if dumps(entry.document(), sort_keys=True) != before:
                state.write(entry)


def _written_at(record: Record, default: float) -> float:
    """The second the record's `updatedAt` names (when the killed change stamped it: a
    replay later marks the completion as of then, not of the replay), else `default`."""
    import calendar

    try:
        return float(calendar.timegm(time.strptime(str(record.get("updatedAt")), TIME_FORMAT)))
    except ValueError:
        return default


def state_of(store: Any) -> State:
    """The runtime state of a store's board (its `path` and `timeout`), made once per
    process and kept in the store's `runtime`."""
    if store.runtime is None:
        store.runtime = State(store.path, store.timeout)
    return store.runtime


# -- the state folder -------------------------------------------------------------------------


class State:
    """The runtime state of one board: read one task's entry, list which tasks have one,
    write entries under the state lock."""

    def __init__(self, board: str, timeout: float = 10.0):
        self.board = os.path.realpath(board)  # claims name the board that made them
        self.folder, self.shared = locate(board)
        self.timeout = timeout
        self._held = 0

    def names(self) -> set[str]:
        """The uids that have an entry (one listing of the folder, no file opened)."""
        try:
            return {name[: -len(_SUFFIX)] for name in os.listdir(self.folder) if name.endswith(_SUFFIX)}
        except OSError:
            return set()

    def signature(self) -> tuple:
        """What changes when any entry changes (names, sizes, times; one scandir, no file
        opened): a watcher of the board polls it beside the board's own signature."""
        try:
            with os.scandir(self.folder) as entries:
                found = []
                for entry in entries:
                    if entry.name.endswith(_SUFFIX) and not entry.name.startswith("."):
                        with suppress(OSError):
                            stat_ = entry.stat(follow_symlinks=False)
                            found.append((entry.name, stat_.st_size, stat_.st_mtime_ns, stat_.st_ino))
        except OSError:
            return ()
        return tuple(sorted(found))

    def read(self, uid: str) -> Entry:
        """The entry of task `uid`; an empty one when there is none or it is damaged."""
        if not is_uid(uid):
            return Entry(uid or "")
        try:
            data = self._bytes(f"{self.folder}/{uid}{_SUFFIX}")
            document = loads(data) if data is not None else None
        except (OSError, ValueError):
            return Entry(uid, damaged=True)
        if document is None:
            return Entry(uid)
        return Entry(uid, document) if _sound(document, uid) else Entry(uid, damaged=True)

    @staticmethod
    def _bytes(path: str) -> bytes | None:
        """A state file's bytes (None when there is none), never through a link or from
        anything but a regular file (OSError then)."""
        try:
            fd = os.open(path, _READ_FLAGS)
        except FileNotFoundError:
            return None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise OSError(errno.EINVAL, "not a regular file")
            return os.read(fd, 1 << 20)
        finally:
            os.close(fd)

    def kept_closed(self, rewrites: list[tuple[Record, bytes]]) -> dict[str, Entry]:
        """Of the tasks a change on this board rewrites (each record with its file's bytes
        before the change; empty when unknown), those that a completion made on another
        board keeps closed here (its mark stands against the file as it was:
        reopened_since), by uid, with their entries. The change records that it wrote
        them (taskboard.ops.claims.record), so that its own write never passes for a
        reopen merged in. One look per task, most of which have no state; none outside git."""
        if not self.shared:
            return {}
        found: dict[str, Entry] = {}
        for record, before in rewrites:
            uid = record.get("uid")
            if type(uid) is not str or not is_uid(uid):
                continue
            entry = self.read(uid)
            done = entry.done
            if done is None or done["board"] == self.board:
                continue
            try:
                was = loads(before) if before else None
            except (ValueError, RecursionError):
                was = None
            if not reopened_since(was if type(was) is dict else None, done, self.board):
                found[uid] = entry
        return found

    def entries(self, uids: set[str]) -> dict[str, Entry]:
        """The entries of those of `uids` that have one."""
        return {uid: self.read(uid) for uid in sorted(self.names() & uids)}

    def write(self, entry: Entry) -> None:
        """Replace (or, when empty, remove) one entry atomically; under the state lock."""
        assert self._held or not self.shared, "state written outside its lock"
        path = f"{self.folder}/{entry.uid}{_SUFFIX}"
        if entry.is_empty():
            with suppress(FileNotFoundError, NotADirectoryError):  # no folder, no entry
                os.unlink(path)
            return
        self.ensure_folder()
        temp = f"{self.folder}/.{entry.uid}.{os.getpid()}.tmp"
        data = dumps(entry.document(), sort_keys=True).encode("utf-8")
        with suppress(FileNotFoundError):
            os.unlink(temp)  # a leftover of a killed process with this pid
        fd = os.open(temp, _WRITE_FLAGS, 0o666)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
        os.replace(temp, path)

    def ensure_folder(self) -> None:
        """The state folder (and, in git's folder, the `tasks` folder around it), made when
        first needed: a clone never has them. A link or file in the place of either is
        runtime debris, replaced by a folder (a link's target is never touched)."""
        for place in [os.path.dirname(self.folder), self.folder] if self.shared else [self.folder]:
            try:
                if stat.S_ISDIR(os.lstat(place).st_mode):
                    continue
                os.unlink(place)
            except FileNotFoundError:
                pass
            except OSError as exc:
                raise self._unusable(place, exc) from None
            try:
                os.mkdir(place)
            except FileExistsError:
                pass  # another process made it just now
            except OSError as exc:
                raise self._unusable(place, exc) from None

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the state lock. Board-local state (`.state/`) is written only under the
        board lock, which the caller holds: its own lock would add nothing."""
        if self._held or not self.shared:
            self._held += 1
            try:
                yield
            finally:
                self._held -= 1
            return
        self.ensure_folder()
        path = f"{self.folder}/{LOCK_NAME}"
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o666)
        except OSError as exc:
            raise self._unusable(path, exc) from None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise Corrupt(f"{path}: should be a regular file (the runtime state's lock)", path, "state")
            if not wait_for(fd, time.monotonic() + self.timeout):
                raise Busy(
                    f"the runtime state is busy: {path} stayed locked for {self.timeout:g} s",
                    "busy",
                    timeout=self.timeout,
                )
            self._held += 1
            try:
                yield
            finally:
                self._held -= 1
        finally:
            os.close(fd)  # closing drops the flock; a killed holder's is dropped by the kernel

    def _unusable(self, path: str, exc: OSError) -> Corrupt:
        if exc.errno == errno.ELOOP:
            return Corrupt(f"{path}: is a symbolic link; remove it (runtime state)", path, "state")
        return Corrupt(f"{path}: cannot be used for the runtime state ({exc.strerror})", path, "state")

    # -- check ---------------------------------------------------------------------

    def damaged(self) -> list[str]:
        """The paths of entries that do not read back (check reports them)."""
        found = []
        try:
            names = sorted(os.listdir(self.folder))
        except OSError:
            return []
        for name in names:
            if name.startswith(".") or not name.endswith(_SUFFIX):
                continue
            uid = name[: -len(_SUFFIX)]
            if not is_uid(uid) or self.read(uid).damaged:
                found.append(f"{self.folder}/{name}")
        return found

    def remove(self, path: str) -> None:
        """Remove a damaged entry (check --fix); under the state lock."""
        with suppress(FileNotFoundError):
            os.unlink(path)


# -- durations -------------------------------------------------------------------------------

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
MAX_LEASE = 30 * 86400


def lease_or_env(named: float | None) -> float | None:
    """The lease of a claim: the one the call named, else TASKS_LEASE (unset or blank: no
    lease). Every front end asks here: one rule for the variable. A bad value is a usage
    error naming it, raised only when the variable is what decides."""
    if named is not None:
        return named
    raw = os.environ.get("TASKS_LEASE", "")
    if not raw.strip():
        return None
    try:
        return parse_duration(raw)
    except ValueError:
        from ..core.errors import UsageError

        raise UsageError(
            f"TASKS_LEASE={raw!r} is not a lease: give a length of time above zero, such as 90s, 15m or 2h"
        ) from None


def parse_duration(text: str) -> float:
    """`90s`, `15m`, `2h`, `1h30m`, `1.5h` or bare seconds (`90`): a positive length of
    time, at most 30 days. Raises ValueError with what is wrong."""
    raw = text.strip().lower()
    if not raw:
        raise ValueError("empty")
    total, number = 0.0, ""
    for char in raw:
        if char.isdigit() or char == ".":
            number += char
        elif char in _UNITS and number:
            total += _decimal(number) * _UNITS[char]
            number = ""
        else:
            raise ValueError(f"unexpected {char!r}")
    if number:
        if total:
            raise ValueError("a number without a unit after the first part")
        total = _decimal(number)
    if not total > 0:
        raise ValueError("not longer than zero")
    if total > MAX_LEASE:
        raise ValueError("longer than 30 days")
    return int(total) if total == int(total) else total


def _decimal(text: str) -> float:
    if text.count(".") > 1 or text in (".",) or not text.isascii():
        raise ValueError(f"{text!r} is not a number")
    return float(text)


def format_duration(seconds: float) -> str:
    """A length of time as a person reads it: `45 s`, `4 min`, `2 h 5 min`, `3 days`."""
    seconds = abs(seconds)
    if seconds < 60:
        return f"{int(seconds)} s"
    if seconds < 3600:
        return f"{int(seconds // 60)} min"
    if seconds < 86400:
        hours, minutes = divmod(int(seconds // 60), 60)
        return f"{hours} h" + (f" {minutes} min" if minutes else "")
    days = int(seconds // 86400)
    return f"{days} day" + ("s" if days != 1 else "")


def duration_text(seconds: float) -> str:
    """A lease as it was asked for: `90s`, `15m`, `2h`."""
    if seconds % 3600 == 0:
        return f"{int(seconds // 3600)}h"
    if seconds % 60 == 0:
        return f"{int(seconds // 60)}m"
    return f"{seconds:g}s"


def iso(moment: float) -> str:
    return time.strftime(TIME_FORMAT, time.gmtime(moment))
