"""The board on disk: where it is, reading task files, the lock, atomic and
all-or-nothing writes, and recovery of a change a killed process left behind.

Writers hold an exclusive `flock` on `.tasks/.lock` for the whole change (the
lock `filelock` takes on Unix, without its ~20 ms import). Readers take a shared
`flock` on the same file: the kernel keeps them out while a writer is between its
first and last file, so no reader sees half a change. A writer waiting for the
lock holds a turnstile that new readers pass through, so reads cannot starve changes.

A change to several files first writes an intent (every new file content) to
`.tasks/.scratch/intent.json`; the next command of any kind finds it and
finishes the change before doing anything else, and says so: `reading()` and
`writing()` yield the recovery notes (taskboard.outcome.Note) for the caller to pass on.

The names of the lock and scratch entries are known here only: a watcher asks for
`signature()`, which leaves them out.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import time

from ..core.errors import Busy, Changed, Corrupt, NotFound, Taken, UsageError
from ..core.fields import Record, dumps, loads
from ..core.model import (
    ARCHIVE_FOLDER,
    MAX_FILE_BYTES,
    archive_file_name,
    board_file_id,
    decode,
    file_name,
    id_from_file_name,
    ids_from_file_names,
    ids_text,
    max_id_of,
)
from ..core.outcome import Note
from ..core.scopes import contextmanager, suppress
from .cache import CACHE_NAME, folder_key, record_moves, recorded_last, remember_last  # derived from the task files
from .locks import wait_for

TYPE_CHECKING = False  # typing costs ~5 ms of start-up; annotations are strings anyway
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator
    from pathlib import Path
    from typing import Any

    from .watch import Witness

LOCK_NAME = ".lock"
SCRATCH_NAME = ".scratch"
INTENT_NAME = "intent.json"
RESERVED = ".new"  # .scratch/task_N.json.new: a create's file, written before it takes the lock (Store.reserve)
JOURNAL_FOLDER = "journal"  # taskboard.journal's shards: appended to within a change
DEFAULT_TIMEOUT = 10.0
# From this many task files a change watches the board folder while it puts files in place
# (Store._moving): ~2 ms of inotify, against listing and matching the names for the next
# reader (at 10 000 a claim after a claim costs 6 % less CPU with the watch than without).
WITNESS_FROM = 5_000
GITIGNORE = "# taskboard: the lock, scratch files, runtime state and cache are never committed\n.lock\n.scratch/\n.state/\n.cache/\n"
JOURNAL_LINE = f"{JOURNAL_FOLDER}/*.jsonl merge=union"  # the journal's shards merge by git's union driver
GITATTRIBUTES = f"task_*.json text eol=lf merge=tasks\n{JOURNAL_LINE}\n"  # merge=tasks: git.wiring's driver
CLAUDE_MARK = ".highwatermark"  # Claude Code's task lists keep their highest id in it: no board has one
# O_NONBLOCK: a FIFO planted as task_3.json reads as damaged instead of hanging every command
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
HELD, SWEPT, OTHER = "held", "swept", "other"  # what a scratch file is to recovery (Store._reservation)
_WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
_CHUNK = 1 << 16  # task files are small; a 1 MiB buffer per read cost more than the read


def claude_task_names(names: list[str]) -> list[str]:
    """The task files of a Claude Code task list among a folder's names (`N.json`), in id order."""
    found = [name for name in names if name.endswith(".json") and name[:-5].isdigit() and name[:-5].isascii()]
    return sorted(found, key=lambda name: int(name[:-5]))


def find_board(explicit: str | None, cwd: Path | None = None, shared: bool = True) -> Path:
    """`board_path` as a Path."""
    from pathlib import Path

    return Path(board_path(explicit, cwd, shared))


def board_path(explicit: str | None, cwd: str | Path | None = None, shared: bool = True) -> str:
    """The board a command uses (see `board_location`); `shared=False`: the current
    checkout's own, never the main worktree's (git's hooks finish a worktree's own files)."""
    return board_location(explicit, cwd, shared)[0]


def board_location(explicit: str | None, cwd: str | Path | None = None, shared: bool = True) -> tuple[str, str | None]:
    """(the board, the current checkout's own board when the board used is another one).
    --dir, else TASKS_DIR, else the nearest .tasks/ walking up, but not past the top
    of the git work tree (a board above the repository is never used by accident),
    else .tasks/ at the top of the git work tree, else ./.tasks/. In a linked worktree
    that path is taken in the clone's main worktree, whose board every worktree works
    (DESIGN section 8). A path given but empty is a mistake (an unset shell variable),
    never a reason to look elsewhere. (Strings, not pathlib: its import is ~3 ms of
    every command's start-up.)"""
    if explicit is not None:
        if not explicit:
            raise UsageError("the board path is empty; name a folder, or leave it out to find the board", "empty-dir")
        return explicit, None
    if "TASKS_DIR" in os.environ:
        if not os.environ["TASKS_DIR"]:
            raise UsageError("TASKS_DIR is set but empty; name a folder, or unset it to find the board", "empty-dir")
        return os.environ["TASKS_DIR"], None
    here = os.path.join(os.getcwd(), os.fspath(cwd)) if cwd is not None else os.getcwd()
    folder, nearest = here, None
    while True:
        if nearest is None and os.path.isdir(os.path.join(folder, ".tasks")):
            nearest = os.path.join(folder, ".tasks")
        if _is_work_tree_top(folder):
            candidate = nearest or os.path.join(folder, ".tasks")
            return _main_worktrees(candidate, folder) if shared else (candidate, None)
        parent = os.path.dirname(folder)
        if parent == folder:
            return nearest or os.path.join(here, ".tasks"), None
        folder = parent


def _main_worktrees(candidate: str, top: str) -> tuple[str, str | None]:
    """The board at `candidate`'s place in the clone's main worktree when `top` is a
    linked worktree's and the main worktree has a board folder there; else `candidate`.
    Read from `.git` files, never by running git: a stat when `.git` is a folder."""
    if not os.path.isfile(os.path.join(top, ".git")):
        return candidate, None
    from .state import main_worktree

    main = main_worktree(top)
    if main is None:
        return candidate, None
    shared = os.path.join(main, os.path.relpath(candidate, top))
    return (shared, candidate) if os.path.isdir(shared) else (candidate, None)


def _is_work_tree_top(folder: str) -> bool:
    # A work tree's top holds `.git` (a folder, or a file in linked worktrees and submodules).
    return os.path.exists(os.path.join(folder, ".git"))


def _has_hole(path: str) -> bool:
    """Whether a regular file has a hole: a planted sparse gigabyte as an intent is told at
    once, never read. A hole reads as NUL bytes, which no intent's JSON text holds, so no
    intent this version wrote has one (a file system without SEEK_HOLE reports none)."""
    try:
        fd = os.open(path, _READ_FLAGS)
    except OSError:
        return False
    try:
        info = os.fstat(fd)
        return stat.S_ISREG(info.st_mode) and os.lseek(fd, 0, os.SEEK_HOLE) < info.st_size
    except OSError:
        return False
    finally:
        os.close(fd)


def read_bytes(path: str | Path, limit: int = MAX_FILE_BYTES) -> bytes:
    """A regular file's bytes, never through a symbolic link, at most `limit` of them: a
    device (`/dev/zero` planted as a task file) or a file too large for a task (a sparse
    terabyte) raises OSError at once instead of filling memory. Small files, the common
    case, cost no fstat."""
    fd = os.open(path, _READ_FLAGS)
    try:
        data = os.read(fd, _CHUNK)
        if len(data) == _CHUNK:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise OSError(errno.EINVAL, "not a regular file (a device or socket)")
            if info.st_size > limit:
                raise OSError(
                    errno.EFBIG, f"{info.st_size} bytes, more than the {limit >> 20} MiB a task file may hold"
                )
            parts, total = [data], len(data)
            while total <= limit and (chunk := os.read(fd, _CHUNK)):
                parts.append(chunk)
                total += len(chunk)
            if total > limit:  # it grew while read
                raise OSError(errno.EFBIG, f"more than the {limit >> 20} MiB a task file may hold")
            data = b"".join(parts)
        return data
    finally:
        os.close(fd)


HALF_WRITTEN_AGE = 1.0  # seconds: a file changed this recently may be half written in place, and is read again


def settled_bytes(path: str, data: bytes, damage: Corrupt) -> bytes:
    """A task file that did not parse, read again briefly when it may be half written:
    empty or ending before its closing brace, and changed within the last second (a
    writer of the s12 family truncates the file, then writes it in place: DESIGN §13),
    is read again every millisecond until it parses or a second has passed since it
    changed (a writer descheduled on a loaded machine may leave it empty that long).
    The bytes once they parse as JSON; else `damage` (the file stays damaged, and is
    reported as such)."""
    if damage.rule != "json" or damage.reason == "conflict-markers" or data.rstrip().endswith(b"}"):
        raise damage  # a whole document that does not parse is no write in progress
    try:
        changed = os.lstat(path).st_ctime
    except OSError:
        raise damage from None
    if time.time() - changed > HALF_WRITTEN_AGE:
        raise damage
    deadline = time.monotonic() + min(HALF_WRITTEN_AGE - (time.time() - changed), HALF_WRITTEN_AGE) + 0.05
    while time.monotonic() < deadline:  # until a second has passed since it last changed
        time.sleep(0.001)  # often: a writer rewriting it again and again leaves it whole only between writes
        try:
            data = read_bytes(path)
        except FileNotFoundError:
            raise  # removed meanwhile (the family deletes a task so): not found
        except OSError:
            raise damage from None
        try:
            loads(data)
        except (ValueError, RecursionError):
            continue
        return data
    raise damage


def _sync_together(files: list[str], folders: list[str]) -> None:
    """fsync files and folders at once, from a few threads: a journaling file system
    (ext4, xfs) commits concurrent syncs together, so ten cost about what one does.
    Files are opened write-only (syncing is no look at their content), never through a
    link; what cannot be opened is skipped (a shard recovery could not write: its note
    says so); a failing sync raises. The lanes run on `_thread` (built in and loaded):
    the threading module costs ~3 ms of a command's start-up; this thread takes the
    first lane itself and a lock per other lane tells when it is done."""
    paths = [(path, _SYNC_FILE) for path in files] + [(path, _SYNC_FOLDER) for path in folders]
    if len(paths) <= 1:
        for path, flags in paths:
            _sync_path(path, flags)
        return
    import _thread

    failures: list[OSError] = []

    def sync(chunk: list[tuple[str, int]], done: Any = None) -> None:
        try:
            for path, flags in chunk:
                try:
                    _sync_path(path, flags)
                except OSError as exc:
                    failures.append(exc)
        finally:
            if done is not None:
                done.release()

    lanes = min(len(paths), 8)
    waits = []
    for lane in range(1, lanes):
        done = _thread.allocate_lock()
        done.acquire()
        _thread.start_new_thread(sync, (paths[lane::lanes], done))
        waits.append(done)
    sync(paths[0::lanes])
    for done in waits:
        done.acquire()  # released by its lane once its syncs are over, whatever happened
    if failures:
        raise failures[0]


_SYNC_FILE = os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
_SYNC_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _sync_path(path: str, flags: int) -> None:
    try:
        fd = os.open(path, flags)
    except (FileNotFoundError, NotADirectoryError, PermissionError, IsADirectoryError):
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


_NO_ROOM = (errno.ENOSPC, errno.EDQUOT)


def unusable(path: str | Path, exc: OSError, doing: str = "") -> Corrupt:
    """An OS error on a board file or folder, for people: exit 6 naming the path (a full
    disk, a read-only or vanished file system is no bug, and no usage error either)."""
    if exc.errno in _NO_ROOM:
        what = "no space left on the device" if exc.errno == errno.ENOSPC else "no space left (disk quota exceeded)"
        return Corrupt(f"{path}: {what}{doing}; free some space and try again", str(path), "no-space")
    if exc.errno == errno.EROFS:
        return Corrupt(f"{path}: is on a read-only file system{doing}", str(path), "read-only")
    if exc.errno == errno.ELOOP:
        return Corrupt(f"{path}: a symbolic link loop is in the way{doing}", str(path), "symlink")
    reason = (exc.strerror or str(exc)).lower()
    return Corrupt(f"{path}: cannot be used ({reason}){doing}", str(path), "unusable")


class _WaitedTooLong(Exception):
    pass


def _wait_in_kernel(fd: int, mode: int, deadline: float) -> bool:
    """A blocking flock cut off by SIGALRM at the deadline: True when the lock was
    taken; False at the deadline, or when this thread cannot use the alarm (only the
    main thread can), for the caller's poll to decide. An alarm that rings just after
    the lock was taken is harmless: flock on the same open file takes it again."""
    import _signal as signal  # signal's C core: the module adds enums that cost ~0.6 ms to import

    def give_up(_signum: int, _frame: object) -> None:
        raise _WaitedTooLong

    try:
        previous = signal.signal(signal.SIGALRM, give_up)
    except ValueError:  # not the main thread
        return False
    try:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        signal.setitimer(signal.ITIMER_REAL, remaining)
        try:
            fcntl.flock(fd, mode)  # the kernel hands the lock over the instant it is free
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        return True
    except _WaitedTooLong:
        return False
    finally:
        signal.signal(signal.SIGALRM, previous)


def _fsync_folder(folder: str) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class Store:
    def __init__(self, root: str | Path, timeout: float = DEFAULT_TIMEOUT):
        self.path = os.fspath(root) or "."  # the board folder as a string: what every file operation here uses
        self.timeout = timeout
        self.lock_file = os.path.join(self.path, LOCK_NAME)
        self.scratch_dir = os.path.join(self.path, SCRATCH_NAME)
        self._root: Path | None = None
        self._last: int | None = None  # under the write lock: the highest id, once known (see last_id)
        self.replacements = 0  # files replaced by this process; see _crash_point
        self._exclusive = False
        self.seen: dict[str, int] = {}  # under the write lock: a hash of each task file's bytes as last read
        self._expect: dict[str, int] = {}  # what the files a write replaces must hold (Store.write)
        self._reserved: dict[str, int] = {}  # the new files a write puts in place from reservations (Store.write)
        self.runtime: Any = None  # taskboard.state.State of this board, made on first use (taskboard.claims)
        self.archived: set[int] = set()  # the tasks `read` last found in the archive folder (DESIGN §11)
        self.archive_dir = os.path.join(self.path, ARCHIVE_FOLDER)
        self._unsynced: tuple[list[str], list[str]] | None = None  # files, folders: synced once the lock is let go
        self.listed = 0  # task files the last snapshot of this board found (taskboard.disk.index): see _moving
        self._witness: Witness | None = None  # under the write lock: the witness of this change's moves
        self._moves: tuple[tuple, list[str]] | None = None  # the folder's key before them, the names put in place
        self._unwitnessed = False  # this change added or removed a name no Witness saw
        self._vouched = False  # under the write lock: the last writer's record of the highest id held

    @property
    def root(self) -> Path:
        """The board folder as a Path, for messages and the modules that walk it (made
        on first use: the hot commands never import pathlib)."""
        if self._root is None:
            from pathlib import Path

            self._root = Path(self.path)
        return self._root

    @property
    def lock_path(self) -> Path:
        return self.root / LOCK_NAME

    @property
    def scratch(self) -> Path:
        return self.root / SCRATCH_NAME

    # -- reading ---------------------------------------------------------------

    def task_ids(self) -> list[int]:
        """Ids named by the task files on the board, ascending (no file is opened)."""
        return sorted(self._unordered_ids())

    def last_id(self) -> int:
        """The highest id on the board, deleted tasks included (0 on an empty board).
        Under the write lock it comes from the last writer's record when the board folder
        is unchanged since (taskboard.disk.cache.recorded_last): a file copied in since has
        changed the folder, and the folder is listed. The next id's file is looked for
        all the same: an id in use is never handed out."""
        if self._exclusive and self._last is not None:
            last = self._last
            while os.path.lexists(f"{self.path}/task_{last + 1}.json"):
                last += 1
        else:
            last = max_id_of(self.names())
        if self._exclusive:
            while os.path.lexists(self.reserved_path(last + 1)) or os.path.lexists(f"{self.path}/task_{last + 1}.json"):
                last += 1  # a create that wrote its file before it took the lock holds that id (reserve)
            self._last = last
        return last

    def _unordered_ids(self) -> list[int]:
        return ids_from_file_names(self.names())

    def names(self) -> list[str]:
        """Every name in the board folder, unordered (none when there is no board yet)."""
        try:
            return os.listdir(self.path)
        except FileNotFoundError:
            return []
        except NotADirectoryError:
            raise UsageError(f"the board path {self.root} is not a folder") from None
        except OSError as exc:  # a link loop, a folder we may not read, a vanished mount
            raise unusable(self.root, exc) from None

    def is_own(self, name: str) -> bool:
        """Whether a name in the board folder is the store's own (the lock, the scratch folder, the cache)."""
        return name in (LOCK_NAME, SCRATCH_NAME, CACHE_NAME)

    def read(self, task_id: int) -> Record:
        """A task's record from its live file, else from the archive (DESIGN §11: every
        command that names an archived task sees it; `archived` says where it was found)."""
        name = file_name(task_id)
        try:
            data = read_bytes(f"{self.path}/{name}")  # a str path: pathlib's `/` costs ~10 µs a file
        except FileNotFoundError:
            return self._read_archived(task_id)
        except NotADirectoryError:  # the board path is, or lies under, a file
            raise UsageError(f"the board path {self.root} is not a folder") from None
        except OSError as exc:
            if exc.errno == errno.ELOOP and not os.path.islink(f"{self.path}/{name}"):
                raise unusable(self.root, exc) from None  # the board path loops, not the file
            raise self._unreadable(name, exc) from None
        try:
            record = decode(data, name)
        except Corrupt as exc:
            try:
                data = settled_bytes(f"{self.path}/{name}", data, exc)
            except FileNotFoundError:
                raise NotFound(f"no task #{task_id}") from None
            record = decode(data, name)
        if self._exclusive:
            self.seen[name] = hash(data)
        self.archived.discard(task_id)
        return record

    def read_keyed(self, task_id: int) -> tuple[Record, int, int] | None:
        """A live task's record with its file's key (ctime, inode) from an fstat of the
        open file before the read (taskboard.disk.index: a cold read's one pass over the
        files, where an lstat before the read would cost a second system call's path walk).
        None unless it is a small regular file read whole at once that holds a sound
        record: the caller then takes its key and reads it through `read`, whose rules for
        damaged, half-written, missing and archived files apply."""
        name = file_name(task_id)
        try:
            fd = os.open(f"{self.path}/{name}", _READ_FLAGS)
        except OSError:
            return None
        try:
            info = os.fstat(fd)
            data = os.read(fd, _CHUNK)
        except OSError:
            return None
        finally:
            os.close(fd)
        if len(data) != info.st_size or len(data) == _CHUNK or not stat.S_ISREG(info.st_mode):
            return None  # a device, a large file, or one that changed size while read: the careful way
        try:
            record = decode(data, name)
        except Corrupt:
            return None
        if self._exclusive:
            self.seen[name] = hash(data)
        self.archived.discard(task_id)
        return record, info.st_ctime_ns, info.st_ino

    def _read_archived(self, task_id: int) -> Record:
        """An archived task's record (NotFound when it is not archived either)."""
        name = archive_file_name(task_id)
        path = f"{self.path}/{name}"
        try:
            data = read_bytes(path)
        except (FileNotFoundError, NotADirectoryError):
            raise NotFound(f"no task #{task_id}") from None
        except OSError as exc:
            raise self._unreadable(name, exc) from None
        try:
            record = decode(data, name)
        except Corrupt as exc:
            try:
                data = settled_bytes(path, data, exc)
            except FileNotFoundError:
                raise NotFound(f"no task #{task_id}") from None
            record = decode(data, name)
        if self._exclusive:
            self.seen[name] = hash(data)
        self.archived.add(task_id)
        return record

    def read_archived(self, task_id: int) -> Record:
        """An archived task's record from the archive folder alone (NotFound when it is not there)."""
        return self._read_archived(task_id)

    def archived_ids(self) -> list[int]:
        """Ids of the archived tasks, ascending: a look into the archive folder, which
        only commands about history make (`list --all`, `graph --all`, `check`, `archive`)."""
        try:
            return sorted(ids_from_file_names(os.listdir(self.archive_dir)))
        except (FileNotFoundError, NotADirectoryError):
            return []
        except OSError as exc:
            raise unusable(self.archive_dir, exc) from None

    def read_archive(self) -> tuple[list[Record], list[Corrupt]]:
        """Every readable archived record in id order, and the damage found on the way."""
        records, damaged = [], []
        for task_id in self.archived_ids():
            try:
                records.append(self._read_archived(task_id))
            except NotFound:
                continue
            except Corrupt as exc:
                damaged.append(exc)
        return records, damaged

    def read_all(self) -> tuple[list[Record], list[Corrupt]]:
        """Every readable record in id order, and the damage found on the way."""
        records, damaged = [], []
        for task_id in self.task_ids():
            try:
                records.append(self.read(task_id))
            except NotFound:
                continue  # removed by hand between listing and reading
            except Corrupt as exc:
                damaged.append(exc)
        return records, damaged

    def _unreadable(self, name: str, exc: OSError) -> Corrupt:
        if exc.errno == errno.ELOOP:
            return Corrupt(f"{name}: is a symbolic link; task files must be regular files", name, "symlink")
        return Corrupt(f"{name}: cannot be read ({exc.strerror})", name, "unreadable")

    def scratch_names(self) -> list[str]:
        """What a killed writer may have left in the scratch folder: every name there but
        the files of creates still at work (reserve), which are no leftovers."""
        try:
            if not stat.S_ISDIR(os.lstat(self.scratch_dir).st_mode):
                return [SCRATCH_NAME]  # a link or file in its place: recovery removes it, never a link's target
            return sorted(name for name in os.listdir(self.scratch_dir) if not self._at_work(name))
        except (FileNotFoundError, NotADirectoryError):
            return []

    def _at_work(self, name: str) -> bool:
        """Whether a scratch file is a reserved create's whose process still holds its flock."""
        return self._reservation(name, sweep=False) == HELD

    def _reservation(self, name: str, sweep: bool) -> str:
        """HELD: a reserved create's file whose process still holds its flock (or a name gone
        since the folder was listed: a create let go of it, its id taken meanwhile, and it
        reserves the next), or one nobody here can prove dead (_unproven). SWEPT (with
        `sweep`): a reservation whose process is gone, removed here under the flock taken to
        look; its name is free from then on, and a live create may take it at once
        (reservations take no lock), so nobody may remove that name again. OTHER: not a
        reservation (a link, a socket, a folder of that name), or a dead one not swept."""
        if not name.endswith(RESERVED) or id_from_file_name(name[: -len(RESERVED)]) is None:
            return OTHER
        path = f"{self.scratch_dir}/{name}"
        try:
            fd = os.open(path, _READ_FLAGS)
        except OSError:
            return self._unproven(path)
        state = OTHER
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # BlockingIOError: its create is at work; else no flock to be had here (ENOLCK)
            state = HELD
        else:
            if sweep:  # still this file's name: only its process, or a sweep under the board lock, removes it
                with suppress(OSError):  # a folder of that name: recovery removes it whole
                    os.unlink(path)
                    state = SWEPT
        finally:
            os.close(fd)
        return state

    @staticmethod
    def _unproven(path: str) -> str:
        """A reservation's name that could not be opened to look at its flock: HELD when it is
        a regular file, as every create's is. It may be a live create's (another user's on a
        shared board, made under a umask that keeps it private; or no descriptor was to be
        had just now), and a name removed under a live create let a second create reserve
        its id. So it stays, and its id with it (no create takes an id whose reservation
        name exists: the next create takes the next id), until a command that can look at it
        finds it dead and sweeps it: its own user's or root's next command of any kind. A
        name gone meanwhile is HELD too (see _reservation); a link or special file is no
        create's (OTHER: recovery removes it)."""
        try:
            return HELD if stat.S_ISREG(os.lstat(path).st_mode) else OTHER
        except OSError:  # gone meanwhile, or not to be told: not removed
            return HELD

    # -- a create that does not queue -------------------------------------------

    def reserved_path(self, task_id: int) -> str:
        return f"{self.scratch_dir}/{file_name(task_id)}{RESERVED}"

    def reserve(self, content: Callable[[int], bytes]) -> tuple[int, int] | None:
        """An id for a new task and its file, taken before the board lock, so that a create
        writes and syncs its file while other writers go on: `content(N)`, written whole
        and synced in an unnamed file, flocked, and only then named `.scratch/task_N.json.new`
        (a link, which fails where that name is taken): a named reservation is always held
        by a live process, and recovery removes it once that process is gone. N is above the
        board's highest id and every id reserved so, and no task file holds it. The lock
        still decides: the file goes in place only where no task file of its name exists at
        that instant (Store.write: Taken, and the create reserves again). (N, open file);
        None where the board, its scratch folder or unnamed files are not to be had (the
        create then takes the lock for everything)."""
        try:
            folder = os.open(self.scratch_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            return None
        try:
            fd = os.open(".", os.O_TMPFILE | os.O_WRONLY | os.O_CLOEXEC, 0o666, dir_fd=folder)
        except OSError:
            os.close(folder)
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # its own new file: at once
            found = self._name_reserved(fd, folder, self._next_free(), content)
        except OSError:  # a full disk, a folder gone: the locked path finds it and says so
            found = None
        except BaseException:
            os.close(fd)
            raise
        finally:
            os.close(folder)
        if found is None:
            os.close(fd)
            return None
        if found >= WITNESS_FROM:  # its change will watch the folder (_moving): the watch loaded before the lock
            from .watch import load_inotify

            load_inotify()
        return found, fd

    def _next_free(self) -> int:
        """Above the highest id of the board and of the reservations (no lock: a guess the
        links of _name_reserved and Store.write make sure of)."""
        last = recorded_last(self.path)
        if last is None:
            last = max_id_of(self.names())
        reserved = ids_from_file_names([name[: -len(RESERVED)] for name in os.listdir(self.scratch_dir)])
        return max([last, *reserved]) + 1

    def _name_reserved(self, fd: int, folder: int, task_id: int, content: Callable[[int], bytes]) -> int | None:
        written = None
        while True:
            task = f"{self.path}/{file_name(task_id)}"
            if not os.path.lexists(task):
                if written != task_id:
                    data = content(task_id)
                    os.ftruncate(fd, 0)
                    view, offset = memoryview(data), 0
                    while offset < len(data):
                        offset += os.pwrite(fd, view[offset:], offset)
                    os.fsync(fd)  # whole on the disk before it has any name (DESIGN §6)
                    written = task_id
                name = file_name(task_id) + RESERVED
                try:  # linkat(AT_SYMLINK_FOLLOW) of the open file: a dir_fd makes Python use linkat
                    os.link(f"/proc/self/fd/{fd}", name, dst_dir_fd=folder, follow_symlinks=True)
                except FileExistsError:
                    pass
                except OSError:  # no /proc: the locked path
                    return None
                else:
                    if not os.path.lexists(task):
                        return task_id
                    os.unlink(name, dir_fd=folder)  # a hand put the task file there meanwhile
            task_id += 1

    def drop_reserved(self, task_id: int, fd: int) -> None:
        """Let go of a reservation: its name goes, unless that name is another create's by
        now (the file in place, its name went with the move and may be reserved anew)."""
        _unlink_if_same(self.reserved_path(task_id), fd)
        os.close(fd)

    # -- watching --------------------------------------------------------------

    def signature(self) -> tuple:
        """What changes when any file on the board changes: names, sizes, mtimes and
        inodes of the board folder's entries (one scandir, no file opened). The lock and
        scratch entries are left out: readers and writers touch them without a change."""
        try:
            with os.scandir(self.path) as entries:
                found = []
                for entry in entries:
                    if self.is_own(entry.name):
                        continue
                    try:
                        info = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    found.append((entry.name, info.st_size, info.st_mtime_ns, info.st_ino))
        except OSError:
            return ()
        return tuple(sorted(found))

    def changes(self, interval: float = 0.5, sleep: Callable[[float], None] = time.sleep) -> Iterator[None]:
        """Yield at once, then each time a file on the board changed: the signature is
        polled every `interval` seconds (cheap: no file is read). Endless; the caller stops."""
        seen = None
        while True:
            signature = self.signature()
            if signature != seen:
                seen = signature
                yield
            sleep(interval)

    # -- locking ---------------------------------------------------------------

    @contextmanager
    def reading(self) -> Iterator[list[Note]]:
        """Hold the shared lock while reading several files; finish a crashed change
        first. Yields the notes of that recovery (empty when there was none)."""
        if self._exclusive:
            yield []
            return
        self.refuse_claude_list()
        fd = self._open_lock(for_reading=True)
        if fd is None:
            yield []  # no board yet, or a read-only one: nothing can change it meanwhile
            return
        try:
            deadline = time.monotonic() + self.timeout
            with self._turnstile(fcntl.LOCK_SH, deadline):
                self._flock(fd, fcntl.LOCK_SH, deadline)
            notes: list[Note] = []
            if self.scratch_names() or self._unfinished():  # a killed writer's leftovers: finish them first
                fcntl.flock(fd, fcntl.LOCK_UN)
                with self.writing() as notes:
                    pass  # taking the write lock recovers
                # once: what recovery could not remove is not a change
                self._flock(fd, fcntl.LOCK_SH, time.monotonic() + self.timeout)
            yield notes
        finally:
            os.close(fd)

    @contextmanager
    def _turnstile(self, mode: int, deadline: float) -> Iterator[None]:
        """Writers first. A writer holds the turnstile (a flock on the .scratch folder)
        from before it asks for the board lock until it has it; a reader passes through
        it (shared) just before taking its shared lock. So readers arriving while a
        writer waits queue behind it, and a stream of overlapping reads cannot keep a
        change out until it times out. No folder yet: nobody to queue behind."""
        try:
            fd = os.open(self.scratch_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            yield
            return
        try:
            self._flock(fd, mode, deadline)
            yield
        finally:
            os.close(fd)  # closing drops the flock

    def _flock(self, fd: int, mode: int, deadline: float) -> None:
        """flock with a deadline. The kernel's lock has no timeout: the main thread
        waits in the kernel under an alarm, so it takes the lock the instant its holder
        lets go (a poll's pause left the lock idle while writers queued); other
        threads (a server's workers) poll."""
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            pass
        if not _wait_in_kernel(fd, mode, deadline) and not wait_for(fd, deadline, mode):
            raise self._busy()

    def _open_lock(self, for_reading: bool) -> int | None:
        """The lock file, opened without following a link and without waiting on a FIFO,
        and checked to be a regular file. None when there is no board yet, or (for a
        reader) when the board is read-only, so nothing can change it meanwhile."""
        flags = os.O_RDONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        try:
            fd = os.open(self.lock_file, flags, 0o666)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            if for_reading and exc.errno in (errno.EACCES, errno.EROFS, errno.EPERM):
                return None
            raise self._bad_lock(exc) from None
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            os.close(fd)
            raise self._not_a_lock(mode)
        return fd

    def _not_a_lock(self, mode: int) -> Corrupt:
        kind = "a folder" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else "a special file"
        return Corrupt(
            f"{LOCK_NAME}: is {kind}, not a regular file; remove it (the board recreates its lock file)",
            LOCK_NAME,
            "unreadable",
        )

    def _bad_lock(self, exc: OSError) -> Exception:
        """Why the lock file cannot be opened, naming it (or the board, when the trouble
        is on the way to it); never an internal error."""
        if exc.errno == errno.ELOOP:  # never lock (or create) through a link someone planted
            if not os.path.islink(self.lock_file):
                return unusable(self.root, exc)  # the board path itself loops
            return Corrupt(
                f"{LOCK_NAME}: is a symbolic link; remove it, the board recreates its lock file", LOCK_NAME, "symlink"
            )
        kinds = {errno.EISDIR: stat.S_IFDIR, errno.ENXIO: stat.S_IFSOCK, errno.EOPNOTSUPP: stat.S_IFSOCK}
        if exc.errno in kinds:  # a folder, or a socket or device where the lock belongs
            return self._not_a_lock(kinds[exc.errno])
        if exc.errno == errno.EROFS:
            return Corrupt(
                f"{LOCK_NAME}: cannot be locked for a change: {self.root} is on a read-only file system",
                LOCK_NAME,
                "read-only",
            )
        if exc.errno in (errno.EACCES, errno.EPERM):  # a user error, not a bug: say which file
            return Corrupt(
                f"{LOCK_NAME}: cannot be locked for a change ({exc.strerror}); you need write access to {self.root}",
                LOCK_NAME,
                "unreadable",
            )
        return unusable(self.lock_path, exc)

    def _busy(self) -> Busy:
        return Busy(
            f"the board is busy: {self.lock_path} stayed locked for {self.timeout:g} s", "busy", timeout=self.timeout
        )

    @contextmanager
    def writing(self) -> Iterator[list[Note]]:
        """Hold the board lock for one change; creates the board and finishes any
        change a killed process left behind before the caller does anything. Yields
        the notes of that recovery (empty when there was none)."""
        if self._exclusive:
            yield []
            return
        fresh = self.ensure_folder()
        self.refuse_claude_list()
        fd = self._open_lock(for_reading=False)  # a folder, FIFO, socket or link is named, never waited on
        if fd is None:  # the folder went between making it and locking it
            raise self._bad_lock(OSError(errno.ENOENT, "No such file or directory"))
        try:
            deadline = time.monotonic() + self.timeout
            with self._turnstile(fcntl.LOCK_EX, deadline):
                self._flock(fd, fcntl.LOCK_EX, deadline)
        except OSError as exc:  # a file system without flock: named, never a bug
            os.close(fd)
            raise self._bad_lock(exc) from None
        except BaseException:
            os.close(fd)
            raise
        self._exclusive = True
        self.seen = {}
        try:
            notes = self.recover()
            if fresh or self._unfinished():  # a board made by any first write keeps its lock out of git
                self.write_git_files()
            self._last = recorded_last(self.path)
            self._vouched = self._last is not None  # the last writer's record holds: its probe holds too
            yield notes
            self._record_moves()  # the change is done: the next reader need not list the folder
            if self._last is not None:  # ... nor the next writer
                remember_last(self.path, self._last, self._vouched)
        finally:
            self._exclusive = False
            self._last = None
            self.seen = {}
            os.close(fd)  # closing drops the flock: what follows is no other writer's wait
            try:
                self._settle()
            finally:
                self._end_witness()  # last: the watch retired meanwhile (Witness.retire), its close is quick

    # -- what a change put in place, for the next reader (taskboard.disk.cache.record_moves)

    def _moving(self, name: str) -> None:
        """Called just before this change adds, replaces or removes the board file `name`.
        On a board large enough that listing its folder costs more than watching it
        (WITNESS_FROM task files, as the change's snapshot found), the first call starts
        a Witness and takes the folder's key; every name is noted, so that after the
        change the next reader can be told which names came without listing the folder."""
        if self._unwitnessed:
            return
        if self._witness is None:
            if self._moves is not None or max(self.listed, self._last or 0) < WITNESS_FROM or "/" in name:
                self._unwitnessed = True
                return
            from .watch import Witness

            try:
                self._witness = Witness(self.path)
                self._moves = (folder_key(os.stat(self.path)), [])  # after the watch: nothing falls between
            except OSError:
                self._end_witness()
                self._unwitnessed = True
                return
        assert self._moves is not None
        if "/" not in name:  # a file of the archive folder adds no name here
            self._moves[1].append(name)

    def _unmoved(self) -> None:
        """This change removes a name from the board folder: no reader follows that (it lists)."""
        self._unwitnessed = True

    def _record_moves(self) -> None:
        """Record the change's moves when the Witness saw them and nothing else: every name
        that came, went or moved in the board folder while it watched is one this change
        put there, once each."""
        witness, moves = self._witness, self._moves
        if witness is None or moves is None or self._unwitnessed:
            return
        try:
            after = folder_key(os.stat(self.path))
            with os.scandir(self.path) as entries:  # waits for a change still under way (it holds the
                next(entries, None)  # folder's lock) so that its notice is queued before we read them
            seen = witness.names()
        except OSError:
            return
        finally:
            witness.retire()  # the change is counted: its watch retires while the rest is done
        if seen is not None and sorted(seen) == sorted(moves[1]):
            record_moves(self.path, moves[0], after, moves[1], self._vouched)

    def _end_witness(self) -> None:
        if self._witness is not None:
            self._witness.close()
        self._witness, self._moves, self._unwitnessed = None, None, False

    def _settle(self) -> None:
        """Make durable, after the lock is let go, what a change of new files left unsynced
        (Store.write): the other writers need not wait for it, and the command says nothing
        before it is done. One by one: the first sync commits the file system's journal for
        all of them (no thread to start, no threading to import)."""
        unsynced, self._unsynced = self._unsynced, None
        if unsynced is None:
            return
        files, folders = unsynced
        try:
            for path in files:
                _sync_path(path, _SYNC_FILE)
            for path in folders:
                _sync_path(path, _SYNC_FOLDER)
        except OSError as exc:  # in place but perhaps not durable: the command must not say it is
            raise unusable(self.root, exc, "; the change is made but may not be on the disk yet") from None

    def refuse_claude_list(self, names: list[str] | None = None) -> None:
        """A Claude Code task list where the board should be (DESIGN §13) is named as what
        it is, never shown as an empty board nor written into: its `.highwatermark` or
        its first task `1.json` says so, at the cost of an lstat or two; an empty board's
        `names` (when given) are looked at for its `N.json` files too."""
        path = self.path
        marked = os.path.lexists(f"{path}/{CLAUDE_MARK}") or os.path.lexists(f"{path}/1.json")
        if not marked and not (names and claude_task_names(names)):
            return
        count = len(claude_task_names(self.names()))
        raise UsageError(
            f"{self.root} is a Claude Code task list ({count} task(s) in N.json files), not a tasks board; "
            "import it from Claude Code to take its tasks in as a plan",
            "claude-list",
        )

    def ensure_folder(self) -> bool:
        """Create the board folder for a first write; True when this call made it."""
        try:
            if stat.S_ISDIR(os.stat(self.path).st_mode):
                return False
            raise UsageError(f"the board path {self.root} is not a folder (a file is in the way)")
        except FileNotFoundError:
            pass
        except NotADirectoryError:
            raise UsageError(f"the board path {self.root} lies under a file, not a folder") from None
        except OSError as exc:  # a link loop, a folder we may not search
            raise unusable(self.root, exc) from None
        try:
            self.root.mkdir(parents=True)
        except FileExistsError:
            if self.root.is_dir():
                return False  # another process made it just now
            raise UsageError(f"the board path {self.root} is not a folder (a file is in the way)") from None
        except NotADirectoryError:
            raise UsageError(f"the board path {self.root} lies under a file, not a folder") from None
        except OSError as exc:  # /proc/x, a full or read-only disk: no board can live there
            raise unusable(self.root, exc, "; the board folder cannot be created there") from None
        return True

    def _unfinished(self) -> bool:
        """A board whose first write was killed between making the folder and writing its
        git files: a git file is missing and no task exists yet. (A board with tasks whose
        owner removed a git file on purpose is left as it is.)"""
        root = self.path
        if os.path.lexists(root + "/.gitignore") and os.path.lexists(root + "/.gitattributes"):
            return False
        if os.path.lexists(root + "/task_1.json"):  # most boards start at #1: one stat, not a look at the folder
            return False
        with os.scandir(root) as entries:  # stops at the first task file: a board built by hand has no git files
            return not any(id_from_file_name(entry.name) is not None for entry in entries)

    def write_git_files(self) -> list[str]:
        """The .gitignore (lock and scratch files) and .gitattributes a board needs; the ones written."""
        written = []
        for name, text in ((".gitignore", GITIGNORE), (".gitattributes", GITATTRIBUTES)):
            if not os.path.lexists(os.path.join(self.path, name)):
                self.write_plain(name, text)
                written.append(name)
        return written

    # -- writing (under the exclusive lock) -----------------------------------

    def write(
        self,
        files: dict[str, bytes],
        appends: dict[str, bytes] | None = None,
        remove: list[str] | None = None,
        new: list[str] | None = None,
        expect: dict[str, int] | None = None,
        reserved: dict[str, int] | None = None,
        then: Callable[[], None] | None = None,
        runtime: list[dict] | None = None,
    ) -> None:
        """Replace the named board files and append lines to journal shards
        (taskboard.journal) as one change: all of it or none, even if the process is
        killed at any instant, and none when the disk is full. `remove`: task files that
        go in the same change (only a merge that found one task in two files removes one).

        Every new file is first written in the scratch folder, and the intent (every new
        content and journal line) beside it; they are synced together, then the journal
        lines appended. Up to there a failure (no space, a read-only disk) undoes what was
        done (the lines cut off again, the staged files and the intent removed): nothing
        changed and nothing is left to replay. Moving the files into place needs no
        space; a kill from there on is finished by the next command, since this command
        could have reported success.

        Writers that take no lock (DESIGN §13): a file named in `new` is put in place only
        if no file of that name exists at that instant (else Taken), and no file is
        replaced whose bytes no longer hash as `expect` says (as the change read them:
        `seen`), else Changed; either way nothing is changed. `reserved`: new files already
        written and synced as reservations (Store.reserve), by name, each the open file its
        create holds: put in place through that open file, never by its reservation's name
        (_place_reserved).

        `then` (what follows the files: the runtime state) runs once the intent is in
        place and the first file it replaces has moved: from there on the change happens,
        by this command or by the replay (a kill before `then` ran is followed by the
        replay of the intent's `runtime`); a refusal of that first move undoes the change,
        runtime state included, since nothing was followed yet.
        `runtime`, kept in the intent, is what the replay hands back to bring the
        runtime state up to date (taskboard.disk.state.replay) when a kill came first.

        A change of new files only (a create, an import of a plan) replaces nothing, so its
        intent need not be durable: a kill keeps what was written, and the replay puts a
        new file only where none is. The syncs after its moves wait until the lock is let
        go (_settle): the other writers do not wait for them, the command does."""
        assert self._exclusive, "write outside the board lock"
        if not files and not appends and not remove:
            return
        if appends:
            from .journal import check_writable

            check_writable(self.path, appends)
        self._raise_last(files)
        self._expect = expect or {}
        self._reserved = reserved or {}
        if len(files) == 1 and not appends and not remove and not new and not runtime:
            # a change the runtime state follows needs its intent (`runtime`, replayed after a kill)
            self._write_one(files)
            if then is not None:
                then()
            return
        fresh = bool(files) and not remove and all(name in (new or ()) for name in files)
        ready = {name: f"{self.scratch_dir}/{name}{RESERVED}" for name in self._reserved}
        staged: list[tuple[str, str]] = []
        intent: str | None = None
        sizes = self._shard_sizes(appends or {})
        try:
            self._make_scratch()
            for name, data in files.items():
                staged.append((name, ready[name] if name in ready else self._stage(name, data, sync=False)))
            payload = _intent_of(files, appends, remove, list(files) if fresh else None, runtime)
            intent = self._replace(self.scratch_dir, INTENT_NAME, payload, sync=False)
            if fresh:  # a file is whole on the disk before its name is (DESIGN §6); that is all
                _sync_together([temp for name, temp in staged if name not in ready], [])
            else:
                _sync_together([temp for _, temp in staged] + [intent], [self.scratch_dir])  # durable, then...
            if appends:
                self._append(appends)
        except OSError as exc:
            self._undo_appends(sizes)
            self._discard([temp for name, temp in staged if name not in ready] + ([intent] if intent else []))
            raise unusable(self.root, exc, "; nothing was changed") from None
        moved: list[str] = []
        try:
            self._move_into_place(staged, remove or [], moved, new or [], then)
        except (OSError, Busy) as exc:  # Busy: another writer came first (Changed, Taken), before any move
            if not moved:  # refused before any file moved (a board folder without write access): undone
                self._undo_appends(sizes)
                # a reservation is its create's to let go (drop_reserved): its name may be another's by now
                self._discard([temp for name, temp in staged if name not in ready] + ([intent] if intent else []))
                if isinstance(exc, Busy):
                    raise
                raise unusable(self.root, exc, "; nothing was changed") from None
            assert isinstance(exc, OSError)  # Busy comes before any move
            raise _completes(unusable(self.root, exc, "; the next command completes the change")) from None
        assert intent is not None
        made = any(size is None for size in sizes.values())  # a shard (and its folder) made by this change
        self._after_moves(list(files), list(appends or ()), remove or [], intent, fresh, made)

    def _after_moves(
        self, files: list[str], shards: list[str], remove: list[str], intent: str, fresh: bool, made: bool
    ) -> None:
        """Everything in place: the shards, the new names and the intent's removal made
        durable (a change of new files only: once the lock is let go, _settle). The journal
        folder only when this change made a shard in it: an append adds no name."""
        shards = [os.path.join(self.path, name) for name in shards]
        folders = [os.path.join(self.path, JOURNAL_FOLDER)] if made else []
        try:
            if fresh:
                os.unlink(intent)  # failing, the next command replays it: nothing is written twice
                # the new files were synced before they had their names: the names and lines remain
                self._unsynced = (shards, [*folders, self.path, self.scratch_dir, *self._archive_folder(files, [])])
                return
            _sync_together(
                shards, folders + ([self.path] if files or remove else []) + self._archive_folder(files, remove)
            )
            os.unlink(intent)
            _fsync_folder(self.scratch_dir)
        except OSError as exc:  # the intent is whole: the next command completes the change
            raise _completes(unusable(self.root, exc, "; the next command completes the change")) from None

    def _write_one(self, files: dict[str, bytes]) -> None:
        """One file replaced, with nothing to journal: no intent needed."""
        self._make_scratch()  # a board that came from git has none yet
        self._unchanged(files)
        self._apply(files)

    def _unchanged(self, files: Iterable[str], new: list[str] | None = None) -> None:
        """Changed, naming the first file to be replaced that another writer changed (or
        removed) since this change read it; a file this change never read is not judged."""
        expect = self._expect
        for name in files:
            if name not in expect or (new and name in new):
                continue
            try:
                now: int | None = hash(read_bytes(f"{self.path}/{name}"))
            except OSError:
                now = None
            if now != expect[name]:
                task_id = board_file_id(name)
                raise Changed(
                    f"#{task_id} ({name}) was changed by another program while this change was made; "
                    "nothing was changed, try again",
                    "changed-meanwhile",
                    task=task_id,
                )

    def _raise_last(self, files: dict[str, bytes]) -> None:
        """The highest id the next writer can be told, with the files this change writes."""
        if self._last is not None:
            self._last = max([self._last] + [board_file_id(name) or 0 for name in files])

    def _move_into_place(
        self,
        staged: list[tuple[str, str]],
        remove: list[str],
        moved: list[str],
        new: list[str],
        then: Callable[[], None] | None = None,
    ) -> None:
        """The staged files renamed into place and the files that go removed; `moved`
        names each as it is done, so a failure tells whether anything changed. New files
        go first, each only where no file of its name exists (Taken before anything moved),
        and none moves when a file it replaces changed since it was read (Changed). `then`
        runs right after the first file replaced moves (or after the new files and the
        removals, when nothing is replaced): a refusal of that first rename (a file the
        system will not let go) leaves the runtime state as it was, with the change undone."""
        self._unchanged([name for name, _ in staged] + remove, new)
        if any(name.startswith(ARCHIVE_FOLDER + "/") for name, _ in staged):
            self._make_archive()
        for name, temp in sorted(staged, key=lambda item: item[0] not in new):
            self._moving(name)
            if name in new:
                self._place_new(name, temp)
            else:
                os.replace(temp, f"{self.path}/{name}")  # replaces a symlink itself, never its target
            moved.append(name)
            if then is not None and name not in new:
                then()  # the change happens from here on: a later failure leaves it to the replay
                then = None
            self._crash_point()
        for name in remove:
            if board_file_id(name) is not None:  # a task file of this board, never anything else
                self._unmoved()
                with suppress(FileNotFoundError):
                    os.unlink(os.path.join(self.path, name))
                    moved.append(name)
        if then is not None:
            then()

    def _place_new(self, name: str, temp: str) -> None:
        """A new task file put in place by a hard link, which fails when the name exists: a
        file another writer put there meanwhile is never replaced (Taken). Where links are
        not to be had, the name is looked at just before the rename."""
        if name in self._reserved:
            self._place_reserved(name, self._reserved[name], temp)
            return
        target = f"{self.path}/{name}"
        try:
            os.link(temp, target, follow_symlinks=False)
        except FileExistsError:
            raise Taken(f"{name} appeared meanwhile", "taken", file=name) from None
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EXDEV, errno.EMLINK):
                raise
            if os.path.lexists(target):
                raise Taken(f"{name} appeared meanwhile", "taken", file=name) from None
            os.replace(temp, target)
            return
        os.unlink(temp)

    def _place_reserved(self, name: str, fd: int, reservation: str) -> None:
        """A reserved create's file put in place through the open file its create holds
        (linkat of /proc/self/fd, as Store.reserve named it), never by its reservation's name:
        a name removed by anyone else and reserved again by another create is that create's
        file, and a create that linked it by name put another's record in place under its own
        output (and the other create failed, its record on the board). Taken when the task
        file's name exists, or when the file has lost its reservation name (a file without
        a name cannot be linked again): nothing is changed, and the create reserves anew
        with a new file and id. Its reservation's name goes only while it is still this file's."""
        folder = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:  # a dir_fd makes Python use linkat, which follows the /proc link to the open file
            os.link(f"/proc/self/fd/{fd}", name, dst_dir_fd=folder, follow_symlinks=True)
        except FileExistsError:
            raise Taken(f"{name} appeared meanwhile", "taken", file=name) from None
        except FileNotFoundError:
            if os.fstat(fd).st_nlink:
                raise
            raise Taken(f"the reservation of {name} was removed meanwhile", "taken", file=name) from None
        finally:
            os.close(folder)
        _unlink_if_same(reservation, fd)

    def _shard_sizes(self, appends: dict[str, bytes]) -> dict[str, int | None]:
        """How long each journal shard is before a change appends to it (None: not there)."""
        sizes: dict[str, int | None] = {}
        for name in appends:
            try:
                sizes[name] = os.lstat(os.path.join(self.path, name)).st_size
            except OSError:
                sizes[name] = None
        return sizes

    def _undo_appends(self, sizes: dict[str, int | None]) -> None:
        """Cut journal shards back to what they were before a change that failed."""
        for name, size in sizes.items():
            path = os.path.join(self.path, name)
            with suppress(OSError):
                if size is None:
                    os.unlink(path)
                    continue
                fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
                try:
                    if os.fstat(fd).st_size > size:
                        os.ftruncate(fd, size)
                finally:
                    os.close(fd)

    def _append(self, appends: dict[str, bytes], replay: bool = False) -> list[Note]:
        """Append journal lines, not yet synced (_apply syncs them with the task files)."""
        from .journal import append

        notes = []
        for name, data in appends.items():
            try:
                append(self.path, name, data, replay=replay, sync=False)
            except OSError as exc:
                if not replay:
                    raise
                # recovery must not be stuck behind a journal someone replaced by a link meanwhile
                notes.append(
                    Note("journal-lost", f"could not append to {name} ({exc.strerror}): lines lost", file=name)
                )
            self._crash_point()
        return notes

    def write_plain(self, name: str, text: str) -> None:
        """A board file that is not a task (.gitignore, .gitattributes), atomically."""
        try:
            self._make_scratch()
            self._replace(self.path, name, text.encode("utf-8"))
            _fsync_folder(self.path)
        except OSError as exc:
            raise unusable(self.root, exc, f" (writing {name})") from None

    def _archive_folder(self, files: Iterable[str], remove: list[str] | None) -> list[str]:
        """The archive folder, when a change put or removed a file in it (its entries are synced too)."""
        prefix = ARCHIVE_FOLDER + "/"
        touched = any(name.startswith(prefix) for name in files) or any(n.startswith(prefix) for n in remove or ())
        return [self.archive_dir] if touched else []

    def _make_archive(self) -> None:
        """The archive folder, made when a change first puts a task there."""
        with suppress(FileExistsError):
            os.mkdir(self.archive_dir)

    def _make_scratch(self) -> None:
        """The scratch folder, made when missing; a link or file in its place (never a
        link's target) is replaced by one."""
        try:
            os.mkdir(self.scratch_dir)
        except FileExistsError:
            if stat.S_ISDIR(os.lstat(self.scratch_dir).st_mode):
                return
            os.unlink(self.scratch_dir)
            with suppress(FileExistsError):
                os.mkdir(self.scratch_dir)

    def _apply(
        self,
        files: dict[str, bytes],
        journaled: bool = False,
        remove: list[str] | None = None,
        appends: dict[str, bytes] | None = None,
        replay: bool = False,
    ) -> list[Note]:
        # Under a durable intent a file lost to a crash is written again from the intent, so
        # the files need to be durable only before the intent goes: sync them after the last
        # replace, together (a quarter less time for 100 files), not one by one before each;
        # the journal lines likewise (the first sync flushes them all). The notes: journal
        # lines a recovery could not append.
        try:
            if any(name.startswith(ARCHIVE_FOLDER + "/") for name in files):
                self._make_archive()
            for name, data in files.items():
                self._replace(self.path, name, data, sync=not journaled)
        except OSError as exc:
            if journaled:  # a recovery: the intent stays, a later command finishes the change
                raise unusable(self.root, exc, "; an interrupted change waits to be finished") from None
            raise unusable(self.root, exc, "; nothing was changed") from None
        for name in remove or ():
            if board_file_id(name) is not None:  # a task file of this board, never anything else
                self._unmoved()
                with suppress(FileNotFoundError):
                    os.unlink(os.path.join(self.path, name))
        notes = self._append(appends, replay) if appends else []
        durable = [os.path.join(self.path, name) for name in files] if journaled else []
        durable += [os.path.join(self.path, name) for name in appends or ()]
        folders = [os.path.join(self.path, JOURNAL_FOLDER)] if appends else []  # a shard made just now
        folders += [self.path] if files or remove else []
        folders += self._archive_folder(files, remove)
        _sync_together(durable, folders)
        return notes

    def _stage(self, name: str, data: bytes, sync: bool = True) -> str:
        """A new file's content written in the scratch folder; its path there. On failure
        (a full disk) nothing is left behind."""
        temp = f"{self.scratch_dir}/.{name.replace('/', '%')}.{os.getpid()}.tmp"  # an archived file's name has a /
        try:
            fd = os.open(temp, _WRITE_FLAGS, 0o666)  # 0o666 less the umask, as for any new file
        except (FileNotFoundError, NotADirectoryError):  # git never brings it: made when first needed
            self._make_scratch()
            fd = os.open(temp, _WRITE_FLAGS, 0o666)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if sync:
                os.fsync(fd)
        except BaseException:
            os.close(fd)
            self._discard([temp])
            raise
        os.close(fd)
        return temp

    def _replace(self, folder: str, name: str, data: bytes, sync: bool = True) -> str:
        """One file replaced atomically; its path."""
        temp = self._stage(name, data, sync)
        target = f"{folder}/{name}"
        if folder == self.path:
            self._moving(name)
        try:
            os.replace(temp, target)  # replaces a symlink itself, never its target
        except OSError:
            self._discard([temp])
            raise
        self._crash_point()
        return target

    @staticmethod
    def _discard(paths: list[str]) -> None:
        for path in paths:
            with suppress(OSError):
                os.unlink(path)

    def _crash_point(self) -> None:
        # Test hooks (tests/test_crash.py, tests/test_index.py): TASKS_TEST_CRASH_AFTER=N makes
        # this process SIGKILL itself right after its N-th file replacement, to stop a change at a
        # chosen instant; TASKS_TEST_STOP_AFTER=N, SIGSTOP, so that the test acts meanwhile.
        self.replacements += 1
        for hook, sent in (("TASKS_TEST_CRASH_AFTER", "SIGKILL"), ("TASKS_TEST_STOP_AFTER", "SIGSTOP")):
            if os.environ.get(hook) == str(self.replacements):
                import signal  # only the crash tests pay for it: ~0.6 ms of every start-up otherwise

                os.kill(os.getpid(), getattr(signal, sent))

    def _exists(self, name: str) -> bool:
        return os.path.lexists(os.path.join(self.path, name))

    def recover(self) -> list[Note]:
        """Finish (or drop) what a killed writer left in the scratch folder; what it did."""
        names = self.scratch_names()
        if not names:
            return []
        if not stat.S_ISDIR(os.lstat(self.scratch_dir).st_mode):
            os.unlink(self.scratch_dir)  # removes a link itself: files it points to are not ours to touch
            return [
                Note(
                    "scratch-replaced",
                    f"removed {SCRATCH_NAME}, which was a link or file where the scratch folder belongs",
                )
            ]
        notes = []
        if INTENT_NAME in names:
            try:
                if _has_hole(os.path.join(self.scratch_dir, INTENT_NAME)):
                    raise ValueError("a sparse file: a hole reads as NUL bytes, which no intent holds")
                intent = loads(read_bytes(self.scratch / INTENT_NAME, limit=1 << 62))  # many files
                if intent.get("intent") != 1:
                    raise ValueError("not an intent this version writes")
                files = {
                    name: text.encode("utf-8")
                    for name, text in intent["files"].items()
                    if board_file_id(name) is not None
                }
                for name, data in files.items():
                    decode(data, name)  # a planted or damaged intent never writes a damaged task file
                appends = _intent_appends(intent)
                remove = [str(name) for name in intent.get("remove", [])]
                new = [str(name) for name in intent.get("new", [])]
                # a new file already in place stays: the killed change put it there, or another
                # writer did (DESIGN §13), and it may have changed since
                placing = {name: data for name, data in files.items() if not (name in new and self._exists(name))}
            except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError, Corrupt):
                notes.append(Note("intent-discarded", "discarded an unreadable intent of an interrupted change"))
            else:
                lost = self._apply(placing, journaled=True, remove=remove, appends=appends, replay=True)
                _replay_runtime(self, intent.get("runtime"), files)
                ids = sorted(board_file_id(name) or 0 for name in files)
                what = ids_text(ids) if ids else "the journal"
                notes.append(Note("recovered", f"completed an interrupted change to {what}", tasks=ids))
                notes.extend(lost)
        found = {name: self._reservation(name, sweep=True) for name in names if name != INTENT_NAME}
        leftovers = [name for name, state in found.items() if state != HELD]
        removing = [name for name, state in found.items() if state == OTHER]  # a swept name may be a live create's now
        for name in removing + ([INTENT_NAME] if INTENT_NAME in names else []):
            try:
                os.unlink(self.scratch / name)
            except IsADirectoryError:
                import shutil

                shutil.rmtree(self.scratch / name, ignore_errors=True)
            except FileNotFoundError:
                pass
        if leftovers:
            notes.append(
                Note(
                    "leftovers-removed",
                    f"removed {len(leftovers)} leftover temporary file(s) of an interrupted change",
                    count=len(leftovers),
                )
            )
        _fsync_folder(self.scratch_dir)
        return notes


def _completes(error: Corrupt) -> Corrupt:
    """An error after a change's first file moved: the change happens all the same (the
    next command completes it from its intent), so what moved with it stands (TaskError)."""
    error.completes = True
    return error


def _unlink_if_same(path: str, fd: int) -> None:
    """Remove `path` when it names the open file `fd` (a reservation's name, which another
    create may hold by now)."""
    with suppress(OSError):
        mine, named = os.fstat(fd), os.lstat(path)
        if (mine.st_dev, mine.st_ino) == (named.st_dev, named.st_ino):
            os.unlink(path)


def _intent_of(
    files: dict[str, bytes],
    appends: dict[str, bytes] | None,
    remove: list[str] | None,
    new: list[str] | None,
    runtime: list[dict] | None = None,
) -> bytes:
    """The intent of a change: every new file content, journal line, file to remove,
    which files are new (the replay puts those only where no file of their name is), and
    the tasks whose status or owner moved, from what (the runtime state follows them)."""
    document: dict = {"intent": 1, "files": {name: data.decode("utf-8") for name, data in files.items()}}
    if appends:
        document["appends"] = {name: data.decode("utf-8") for name, data in appends.items()}
    if remove:
        document["remove"] = list(remove)
    if new:
        document["new"] = new
    if runtime:
        document["runtime"] = runtime
    return dumps(document).encode("utf-8")


def _replay_runtime(store: Store, runtime: Any, files: dict[str, bytes]) -> None:
    """The runtime state follows the tasks a replayed intent moved (`runtime`: each one's
    id, uid and status and owner before), as their files now say (taskboard.disk.state)."""
    if not isinstance(runtime, list) or not runtime:
        return
    by_id: dict[int, Record] = {}
    for name, data in files.items():
        task_id = board_file_id(name)
        if task_id is not None:
            by_id[task_id] = decode(data, name)
    from .state import UNRECORDED

    moves = []
    for item in runtime:  # a planted intent names nothing it does not carry
        if not isinstance(item, dict) or type(item.get("task")) is not int:
            continue
        record, was = by_id.get(item["task"]), item.get("was")
        if record is None or record.get("uid") != item.get("uid"):
            continue
        if isinstance(was, list) and len(was) == 2 and all(isinstance(part, str) for part in was):
            ends = item.get("ends", UNRECORDED)
            if (
                ends is not None
                and ends is not UNRECORDED
                and (type(ends) not in (int, float) or not -1e12 < ends < 1e12)
            ):
                continue  # a planted `ends` names no claim: nothing of this task is replayed
            moves.append((record, (was[0], was[1]), ends))
    if moves:
        from .state import replay

        replay(store, moves)


def intent_ends(board: str, uid: str, claim: dict) -> bool:
    """Whether the board at `board` holds the intent of a change, not replayed yet, that
    moves the task `uid` away from the holder of `claim` and ends that claim (a release or
    completion killed once its intent was in place: the next command there completes it,
    runtime state included): the intent names the claim's owner and, where it recorded
    which claim it ends (`ends`), the claim's `at`. Read only, no lock: an intent is whole
    or absent."""
    path = os.path.join(board, SCRATCH_NAME, INTENT_NAME)
    try:
        if _has_hole(path):
            return False
        intent = loads(read_bytes(path, limit=1 << 30))
    except (OSError, ValueError, RecursionError):
        return False
    moves = intent.get("runtime") if isinstance(intent, dict) and intent.get("intent") == 1 else None
    return isinstance(moves, list) and any(
        isinstance(item, dict)
        and item.get("uid") == uid
        and isinstance(item.get("was"), list)
        and item["was"][:2] == ["in_progress", claim.get("owner")]
        and item.get("ends", claim.get("at")) == claim.get("at")
        for item in moves
    )


def _intent_appends(intent: dict) -> dict[str, bytes]:
    """The journal lines an intent carries, to journal shards of this board only: a
    planted intent cannot append anywhere else."""
    from .journal import is_shard_name

    appends = intent.get("appends", {})
    return {name: text.encode("utf-8") for name, text in appends.items() if is_shard_name(name)}
