"""The board on disk: where it is, reading task files, the lock, atomic and
all-or-nothing writes, and recovery of a change a killed process left behind.

Writers hold an exclusive `filelock` on `.tasks/.lock` for the whole change.
Readers take a shared `flock` on the same file: the kernel keeps them out while
a writer is between its first and last file, so no reader sees half a change,
and reading costs no `filelock` import. A writer waiting for the lock holds a
turnstile that new readers pass through, so reads cannot starve changes.

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
import json
import os
import stat
import time
from contextlib import contextmanager, suppress
from pathlib import Path

from .errors import Busy, Corrupt, NotFound, UsageError
from .model import Record, decode, file_name, id_from_file_name, ids_from_file_names, ids_text, max_id_of
from .outcome import Note

TYPE_CHECKING = False  # typing costs ~5 ms of start-up; annotations are strings anyway
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any

    from filelock import BaseFileLock

LOCK_NAME = ".lock"
SCRATCH_NAME = ".scratch"
INTENT_NAME = "intent.json"
JOURNAL_FOLDER = "journal"  # taskboard.journal's shards: appended to within a change
DEFAULT_TIMEOUT = 10.0
CACHE_NAME = ".cache"  # taskboard.index: derived from the task files
GITIGNORE = "# taskboard: the lock, scratch files, runtime state and cache are never committed\n.lock\n.scratch/\n.state/\n.cache/\n"
GITATTRIBUTES = "task_*.json text eol=lf merge=tasks\njournal/*.jsonl merge=union\n"  # merge=tasks: gitwire's driver
# O_NONBLOCK: a FIFO planted as task_3.json reads as damaged instead of hanging every command
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
_WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
_CHUNK = 1 << 16  # task files are small; a 1 MiB buffer per read cost more than the read


def find_board(explicit: str | None, cwd: Path | None = None) -> Path:
    """--dir, else TASKS_DIR, else the nearest .tasks/ walking up, but not past the top
    of the git work tree (a board above the repository is never used by accident),
    else .tasks/ at the top of the git work tree, else ./.tasks/."""
    if explicit:
        return Path(explicit)
    if os.environ.get("TASKS_DIR"):
        return Path(os.environ["TASKS_DIR"])
    here = (cwd or Path.cwd()).absolute()
    for folder in (here, *here.parents):
        if (folder / ".tasks").is_dir():
            return folder / ".tasks"
        if _is_work_tree_top(folder):
            return folder / ".tasks"
    return here / ".tasks"


def _is_work_tree_top(folder: Path) -> bool:
    # A work tree's top holds `.git` (a folder, or a file in linked worktrees and submodules).
    return (folder / ".git").exists()


def read_bytes(path: str | Path) -> bytes:
    """A file's bytes, never through a symbolic link."""
    fd = os.open(path, _READ_FLAGS)
    try:
        data = os.read(fd, _CHUNK)
        if len(data) == _CHUNK:
            parts = [data]
            while chunk := os.read(fd, _CHUNK):
                parts.append(chunk)
            data = b"".join(parts)
        return data
    finally:
        os.close(fd)


def _sync_together(files: list[str], folders: list[str]) -> None:
    """fsync files and folders at once, from a few threads: a journaling file system
    (ext4, xfs) commits concurrent syncs together, so ten cost about what one does.
    Files are opened write-only (syncing is no look at their content), never through a
    link; what cannot be opened is skipped (a shard recovery could not write: its note
    says so); a failing sync raises."""
    paths = [(path, _SYNC_FILE) for path in files] + [(path, _SYNC_FOLDER) for path in folders]
    if len(paths) <= 1:
        for path, flags in paths:
            _sync_path(path, flags)
        return
    import threading  # writers have it already: filelock imports it

    failures: list[OSError] = []

    def sync(chunk: list[tuple[str, int]]) -> None:
        for path, flags in chunk:
            try:
                _sync_path(path, flags)
            except OSError as exc:
                failures.append(exc)

    lanes = min(len(paths), 8)
    threads = [threading.Thread(target=sync, args=(paths[lane::lanes],)) for lane in range(lanes)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
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


def _fsync_folder(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class Store:
    def __init__(self, root: Path, timeout: float = DEFAULT_TIMEOUT):
        self.root = Path(root)
        self.timeout = timeout
        self.lock_path = self.root / LOCK_NAME
        self.scratch = self.root / SCRATCH_NAME
        self.replacements = 0  # files replaced by this process; see _crash_point
        self._lock: BaseFileLock | None = None
        self._exclusive = False
        self.runtime: Any = None  # taskboard.state.State of this board, made on first use (taskboard.claims)

    # -- reading ---------------------------------------------------------------

    def task_ids(self) -> list[int]:
        """Ids named by the task files on the board, ascending (no file is opened)."""
        return sorted(self._unordered_ids())

    def last_id(self) -> int:
        """The highest id on the board, deleted tasks included (0 on an empty board)."""
        return max_id_of(self.names())

    def _unordered_ids(self) -> list[int]:
        return ids_from_file_names(self.names())

    def names(self) -> list[str]:
        """Every name in the board folder, unordered (none when there is no board yet)."""
        try:
            return os.listdir(self.root)
        except FileNotFoundError:
            return []
        except NotADirectoryError:
            raise UsageError(f"the board path {self.root} is not a folder") from None

    def is_own(self, name: str) -> bool:
        """Whether a name in the board folder is the store's own (the lock, the scratch folder, the cache)."""
        return name in (LOCK_NAME, SCRATCH_NAME, CACHE_NAME)

    def read(self, task_id: int) -> Record:
        name = file_name(task_id)
        try:
            data = read_bytes(f"{self.root}/{name}")  # a str path: pathlib's `/` costs ~10 µs a file
        except FileNotFoundError:
            raise NotFound(f"no task #{task_id}") from None
        except NotADirectoryError:  # the board path is, or lies under, a file
            raise UsageError(f"the board path {self.root} is not a folder") from None
        except OSError as exc:
            raise self._unreadable(name, exc) from None
        return decode(data, name)

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
        try:
            if not stat.S_ISDIR(os.lstat(self.scratch).st_mode):
                return [SCRATCH_NAME]  # a link or file in its place: recovery removes it, never a link's target
            return sorted(os.listdir(self.scratch))
        except (FileNotFoundError, NotADirectoryError):
            return []

    # -- watching --------------------------------------------------------------

    def signature(self) -> tuple:
        """What changes when any file on the board changes: names, sizes, mtimes and
        inodes of the board folder's entries (one scandir, no file opened). The lock and
        scratch entries are left out: readers and writers touch them without a change."""
        try:
            with os.scandir(self.root) as entries:
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
        try:
            fd = os.open(self.lock_path, os.O_RDONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
        except (FileNotFoundError, NotADirectoryError):
            yield []  # no board yet: nothing to read, nothing to lock
            return
        except OSError as exc:
            if exc.errno in (errno.EACCES, errno.EROFS, errno.EPERM):
                yield []  # a read-only board cannot be written meanwhile
                return
            raise self._bad_lock(exc) from None
        try:
            deadline = time.monotonic() + self.timeout
            with self._turnstile(fcntl.LOCK_SH, deadline):
                self._flock(fd, fcntl.LOCK_SH, deadline)
            notes: list[Note] = []
            if self.scratch_names():  # a killed writer's leftovers: finish them first
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
            fd = os.open(self.scratch, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            yield
            return
        try:
            self._flock(fd, mode, deadline)
            yield
        finally:
            os.close(fd)  # closing drops the flock

    def _flock(self, fd: int, mode: int, deadline: float) -> None:
        """flock with a deadline: the kernel's lock, polled, since it has no timeout."""
        pause = 0.001
        while True:
            try:
                fcntl.flock(fd, mode | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise self._busy() from None
                time.sleep(pause)
                pause = min(pause * 2, 0.02)

    def _bad_lock(self, exc: OSError) -> Exception:
        if exc.errno == errno.ELOOP:  # never lock (or create) through a link someone planted
            return Corrupt(
                f"{LOCK_NAME}: is a symbolic link; remove it, the board recreates its lock file", LOCK_NAME, "symlink"
            )
        if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):  # a user error, not a bug: say which file
            return Corrupt(
                f"{LOCK_NAME}: cannot be locked for a change ({exc.strerror}); you need write access to {self.root}",
                LOCK_NAME,
                "unreadable",
            )
        return exc

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
        from filelock import FileLock, Timeout  # only writers pay for filelock

        if self._lock is None:
            self._lock = FileLock(str(self.lock_path), timeout=self.timeout)
        lock = self._lock
        deadline = time.monotonic() + self.timeout
        try:
            with self._turnstile(fcntl.LOCK_EX, deadline):
                lock.acquire(timeout=max(0.0, deadline - time.monotonic()))
        except Timeout:
            raise self._busy() from None
        except OSError as exc:
            raise self._bad_lock(exc) from None
        self._exclusive = True
        try:
            notes = self.recover()
            if fresh:  # a board made by any first write keeps its lock out of git
                self.write_git_files()
            yield notes
        finally:
            self._exclusive = False
            lock.release()

    def ensure_folder(self) -> bool:
        """Create the board folder for a first write; True when this call made it."""
        if self.root.is_dir():
            return False
        try:
            self.root.mkdir(parents=True)
        except FileExistsError:
            if self.root.is_dir():
                return False  # another process made it just now
            raise UsageError(f"the board path {self.root} is not a folder (a file is in the way)") from None
        except NotADirectoryError:
            raise UsageError(f"the board path {self.root} lies under a file, not a folder") from None
        return True

    def write_git_files(self) -> list[str]:
        """The .gitignore (lock and scratch files) and .gitattributes a board needs; the ones written."""
        written = []
        for name, text in ((".gitignore", GITIGNORE), (".gitattributes", GITATTRIBUTES)):
            if not os.path.lexists(self.root / name):
                self.write_plain(name, text)
                written.append(name)
        return written

    # -- writing (under the exclusive lock) -----------------------------------

    def write(
        self, files: dict[str, bytes], appends: dict[str, bytes] | None = None, remove: list[str] | None = None
    ) -> None:
        """Replace the named board files and append lines to journal shards
        (taskboard.journal) as one change: all of it or none, even if the process is
        killed at any instant. `remove`: task files that go in the same change (only a
        merge that found one task in two files removes one)."""
        assert self._exclusive, "write outside the board lock"
        if not files and not appends and not remove:
            return
        if appends:
            from .journal import check_writable

            check_writable(self.root, appends)
        self.scratch.mkdir(exist_ok=True)
        if len(files) == 1 and not appends and not remove:
            self._apply(files)
            return
        intent: dict = {"intent": 1, "files": {name: data.decode("utf-8") for name, data in files.items()}}
        if appends:
            intent["appends"] = {name: data.decode("utf-8") for name, data in appends.items()}
        if remove:
            intent["remove"] = list(remove)
        self._replace(self.scratch, INTENT_NAME, json.dumps(intent, ensure_ascii=False).encode("utf-8"), sync=False)
        _sync_together([str(self.scratch / INTENT_NAME)], [str(self.scratch)])  # the intent is durable, then...
        self._apply(files, journaled=True, remove=remove, appends=appends)
        os.unlink(self.scratch / INTENT_NAME)
        _fsync_folder(self.scratch)

    def _append(self, appends: dict[str, bytes], replay: bool = False) -> list[Note]:
        """Append journal lines, not yet synced (_apply syncs them with the task files)."""
        from .journal import append

        notes = []
        for name, data in appends.items():
            try:
                append(self.root, name, data, replay=replay, sync=False)
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
        self.scratch.mkdir(exist_ok=True)
        self._replace(self.root, name, text.encode("utf-8"))
        _fsync_folder(self.root)

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
        for name, data in files.items():
            self._replace(self.root, name, data, sync=not journaled)
        for name in remove or ():
            if id_from_file_name(name) is not None:  # a task file of this board, never anything else
                with suppress(FileNotFoundError):
                    os.unlink(self.root / name)
        notes = self._append(appends, replay) if appends else []
        durable = [os.path.join(self.root, name) for name in files] if journaled else []
        durable += [os.path.join(self.root, name) for name in appends or ()]
        folders = [os.path.join(self.root, JOURNAL_FOLDER)] if appends else []  # a shard made just now
        folders += [str(self.root)] if files or remove else []
        _sync_together(durable, folders)
        return notes

    def _replace(self, folder: Path, name: str, data: bytes, sync: bool = True) -> None:
        temp = self.scratch / f".{name}.{os.getpid()}.tmp"
        fd = os.open(temp, _WRITE_FLAGS, 0o666)  # 0o666 less the umask, as for any new file
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if sync:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, folder / name)  # replaces a symlink itself, never its target
        self._crash_point()

    def _crash_point(self) -> None:
        # Test hook (tests/test_crash.py): TASKS_TEST_CRASH_AFTER=N makes this process SIGKILL
        # itself right after its N-th file replacement, to stop a change at a chosen instant.
        self.replacements += 1
        if os.environ.get("TASKS_TEST_CRASH_AFTER") == str(self.replacements):
            import signal  # only the crash tests pay for it: ~0.6 ms of every start-up otherwise

            os.kill(os.getpid(), signal.SIGKILL)

    def recover(self) -> list[Note]:
        """Finish (or drop) what a killed writer left in the scratch folder; what it did."""
        names = self.scratch_names()
        if not names:
            return []
        if not stat.S_ISDIR(os.lstat(self.scratch).st_mode):
            os.unlink(self.scratch)  # removes a link itself: files it points to are not ours to touch
            return [
                Note(
                    "scratch-replaced",
                    f"removed {SCRATCH_NAME}, which was a link or file where the scratch folder belongs",
                )
            ]
        notes = []
        if INTENT_NAME in names:
            try:
                intent = json.loads(read_bytes(self.scratch / INTENT_NAME))
                files = {
                    name: text.encode("utf-8")
                    for name, text in intent["files"].items()
                    if id_from_file_name(name) is not None
                }
                appends = _intent_appends(intent)
                remove = [str(name) for name in intent.get("remove", [])]
            except (OSError, ValueError, KeyError, TypeError, AttributeError):
                notes.append(Note("intent-discarded", "discarded an unreadable intent of an interrupted change"))
            else:
                lost = self._apply(files, journaled=True, remove=remove, appends=appends, replay=True)
                ids = sorted(id_from_file_name(name) or 0 for name in files)
                what = ids_text(ids) if ids else "the journal"
                notes.append(Note("recovered", f"completed an interrupted change to {what}", tasks=ids))
                notes.extend(lost)
        leftovers = [name for name in names if name != INTENT_NAME]
        for name in leftovers + ([INTENT_NAME] if INTENT_NAME in names else []):
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
        _fsync_folder(self.scratch)
        return notes


def _intent_appends(intent: dict) -> dict[str, bytes]:
    """The journal lines an intent carries, to journal shards of this board only: a
    planted intent cannot append anywhere else."""
    from .journal import is_shard_name

    appends = intent.get("appends", {})
    return {name: text.encode("utf-8") for name, text in appends.items() if is_shard_name(name)}
