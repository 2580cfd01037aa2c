"""The `.cache` folder beside the board (ignored by git): files read whole and checked,
written whole and renamed, each only ever a shortcut (taskboard.disk.index says what the
index and history files hold and why they can be trusted). Here too: which tasks are
parents (for `get`), and the highest id as the last writer left it (for `create`).
"""

from __future__ import annotations

import errno
import marshal
import os
import stat
import time
import zlib

from ..core.scopes import suppress

TYPE_CHECKING = False  # typing costs ~5 ms of start-up; annotations are strings anyway
if TYPE_CHECKING:
    from collections.abc import Iterable

CACHE_NAME = ".cache"  # in the board folder; taskboard.store leaves it out of git
INDEX_NAME = "index"
HISTORY_NAME = "history"
ARCHIVE_NAME = "archive"  # the archived records, for `list --all` and `graph --all` (taskboard.disk.index)
LAST_NAME = "last"  # the highest id, as the last writer left the board folder
# a new layout, or new rules for a sound record, change this line: an old cache then reads as damaged
FORMAT = b"taskboard cache 3\n"
GITIGNORE = b"# taskboard: derived from the task files, never committed\n*\n"
MAX_CACHE_BYTES = 512 << 20  # a cache file larger than this is no cache of ours (a million open tasks is ~300 MB)
STRAY_NS = 60_000_000_000  # a temporary file this old belongs to a writer that died
KINDS = {"pending": ord("p"), "in_progress": ord("i"), "completed": ord("c"), "deleted": ord("d")}
UNSURE = ord("x")  # not kept: unreadable, gone, or too recent to trust; read again on every use


def folder_key(info: os.stat_result) -> tuple:
    """A folder's key: any file added, removed or renamed in it gives it a new one."""
    return (info.st_dev, info.st_ino, info.st_ctime_ns, info.st_mtime_ns)


# -- which tasks are parents, for `get` ----------------------------------------------------------

PARENTS_NAME = "parents"


def known_parents(root: str) -> frozenset[int]:
    """The tasks some task named as its parent, as the last writer or full listing saw:
    a hint that lets `get` of any other task read no more than its own file. Marks that
    arrive by a merge or a hand edit come in with the next listing of the whole board."""
    found = Cache(root)._load(PARENTS_NAME)
    if type(found) is not tuple or not all(type(task_id) is int for task_id in found):
        return frozenset()
    return frozenset(found)


def remember_parents(root: str, parents: Iterable[int], whole: bool = False) -> None:
    """Add these parents to the hint (`whole`: they are every parent there is now)."""
    known = known_parents(root)
    found = frozenset(parents) if whole else known | frozenset(parents)
    if found != known:
        Cache(root).save(PARENTS_NAME, marshal.dumps(tuple(sorted(found))))


# -- the highest id, for the next writer -------------------------------------------------------


def recorded_last(root: str) -> int | None:
    """The highest id on the board as the last writer left it, when the board folder's
    key (device, inode, ctime, mtime) is still the one it saw after its change: no file
    was added, removed or renamed since. None otherwise (the folder is then listed)."""
    found = Cache(root)._load(LAST_NAME)
    if type(found) is not tuple or len(found) != 3:
        return None
    key, last, release = found
    if type(key) is not tuple or type(last) is not int or last < 0 or release != os.uname().release:
        return None
    try:
        now = folder_key(os.stat(root))
    except OSError:
        return None
    return last if now == key else None


def remember_last(root: str, last: int, vouched: bool = False) -> None:
    """After a change, under the write lock: the highest id with the board folder's key
    as it is now, for the next writer. Sound only where a change after a look at a
    folder always gives it a new ctime (the kernel's multigrain timestamps: Linux 6.13+
    on ext4, xfs, btrfs, tmpfs): probed here, else nothing is recorded and every writer
    lists the folder. `vouched`: this change found the last writer's record sound
    (recorded_last), so this folder was probed under this kernel already and is not
    probed again (six file operations less under the lock). What is left: a file copied
    in by hand at the very instant of this change, between the rename and the stat, can
    leave the next `create` one id below it (never an id in use)."""
    cache = Cache(root)
    try:
        folder = cache._folder()  # made first: making it changes the board folder
    except OSError:
        return
    if folder is None:
        return
    try:
        if not vouched and not fine_grained(folder):
            return
        key = folder_key(os.stat(root))
        cache.write_in(folder, LAST_NAME, marshal.dumps((key, last, os.uname().release)), locked=True)
    except OSError:
        return
    finally:
        os.close(folder)


# -- what writers put in place, for the next reader ----------------------------------------

MOVES_NAME = "moves"
MAX_STEPS = 64  # changes in a row a reader can follow without listing the board folder


def record_moves(root: str, before: tuple, after: tuple, names: list[str], vouched: bool = False) -> bool:
    """After a change, under the write lock: the board folder went from key `before` to
    key `after` by this change putting these names in place and nothing else (a
    taskboard.disk.watch.Witness saw no other name come or go in between). Or after a
    read, under the shared lock, that listed the folder and found no name gone and no
    other task file come since the index's key `before` (taskboard.disk.index._step).
    Chained to the steps recorded before when the last of them ended at `before`, so
    that the next reader of an index taken at any key of the chain need not list the
    folder (moved_names). Sound only where a change after a look at the folder gives it
    a new ctime (probed unless `vouched`, as for remember_last): else nothing is
    recorded. True when the step was recorded."""
    steps = _steps(root)
    if not steps or steps[-1][1] != before:
        steps = []
    steps = [*steps, (before, after, tuple(names))][-MAX_STEPS:]
    cache = Cache(root)
    if vouched or cache.fine_grained():
        return cache.save(MOVES_NAME, marshal.dumps(tuple(steps)), locked=True)
    return False


def moved_names(root: str, since: tuple, now: tuple) -> tuple[list[str], int] | None:
    """The names writers put in place while the board folder went from key `since` to
    key `now`, when they recorded every change in between (record_moves), and how many
    changes that was; else None (the folder is then listed). A name may come more than once."""
    steps = _steps(root)
    starts = [before for before, _, _ in steps]
    if since not in starts or steps[-1][1] != now:
        return None
    at = starts.index(since)
    return [name for _, _, names in steps[at:] for name in names], len(steps) - at


def _steps(root: str) -> list[tuple[tuple, tuple, tuple[str, ...]]]:
    found = Cache(root)._load(MOVES_NAME)
    if type(found) is not tuple:
        return []
    for step in found:
        if (
            type(step) is not tuple
            or len(step) != 3
            or not all(type(key) is tuple and len(key) == 4 for key in step[:2])
            or type(step[2]) is not tuple
            or not all(type(name) is str for name in step[2])
        ):
            return []
    return list(found)


def fine_grained(folder: int) -> bool:
    """Whether a folder changed right after a stat gets a new ctime, three times in a row
    (each pair is a few microseconds apart: with a coarse clock, a tick falls between
    them about once in a thousand). The probe file ends in .tmp: a killed prober's is
    swept like any stray temporary file."""
    probe = f".probe.{os.getpid()}.tmp"
    for _ in range(3):
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666, dir_fd=folder)
        os.close(fd)
        seen = os.fstat(folder).st_ctime_ns
        os.unlink(probe, dir_fd=folder)
        if os.fstat(folder).st_ctime_ns == seen:
            return False
    return True


# -- the board folder's last listing, for the next reader that lists it -------------------------

LISTING_NAME = "listing"


def known_listing(root: str) -> tuple[str, str] | None:
    """A listing of the board folder as a reader last saw it (its names joined by
    newlines, in the folder's own order) and the task file names it holds, in id order
    (joined likewise): a memo of what parsing that listing gives (taskboard.disk.index
    ._listed). A folder listed again in the same order after a file was renamed over a
    task file (ext4 keeps a name's place) is then matched in one comparison of strings
    instead of two sets of 100 000 names."""
    found = Cache(root)._load(LISTING_NAME)
    if type(found) is not tuple or len(found) != 2 or not all(type(part) is str for part in found):
        return None
    return found


def remember_listing(root: str, listing: str, names: str) -> None:
    """Keep a listing and its task file names (known_listing). Written as the files
    only changes under the write lock write are (no flush of the file's blocks on
    rename): readers that write it at once each write a true memo, and one found missing
    costs the next reader the parse it saves."""
    Cache(root).save(LISTING_NAME, marshal.dumps((listing, names)), locked=True)


# -- the cache folder ------------------------------------------------------------------------


def saved_keys(found: dict) -> tuple[memoryview, memoryview, memoryview]:
    """The ids, ctimes and inodes a cache file holds, as read-only views of the arrays they
    were saved from (no copy, and no `array` import: it brings `collections`, ~1.9 ms);
    ValueError, KeyError or TypeError when they are not there."""
    return (
        memoryview(found["ids"]).cast("q"),
        memoryview(found["ctimes"]).cast("q"),
        memoryview(found["inodes"]).cast("Q"),
    )


class Cache:
    """The `.cache` folder: files read whole and checked, written whole and renamed."""

    def __init__(self, root: str):
        self.root = root
        self.path = os.path.join(root, CACHE_NAME)

    def load_index(self) -> dict | None:
        """The index file's keys and the open tasks it keeps, checked in bulk (a file of
        another shape is no cache): for each open task, its id, status, JSON text, what
        `ready` asks of it (blockers, priority, due and after times) and, decoded only when
        a command asks for the records (Snapshot.open), the records themselves."""
        found = self._load(INDEX_NAME)
        if not _shaped(found, _INDEX_SHAPE):
            return None
        try:
            ids, ctimes, inodes = saved_keys(found)
            kinds = bytearray(found["kinds"])
            folder = found["folder"]
            names = found["names"].split("\n") if found["names"] else []
            if (
                not len(ids) == len(ctimes) == len(inodes) == len(kinds) == len(names)
                or kinds.translate(None, _KIND_BYTES)
                or (folder is not None and len(folder) != 4)
            ):
                return None
            opened = _open_columns(found)
            if opened is None:
                return None
            return {
                "folder": folder,
                "ids": ids,
                "names": names,
                "ctimes": ctimes,
                "inodes": inodes,
                "kinds": kinds,
                **opened,
            }
        except (KeyError, TypeError, ValueError):
            return None

    def load_history(self) -> dict | None:
        return self._load_keyed(HISTORY_NAME, _HISTORY_SHAPE)

    def load_archive(self) -> dict | None:
        return self._load_keyed(ARCHIVE_NAME, _ARCHIVE_SHAPE)

    def _load_keyed(self, name: str, shape: dict) -> dict | None:
        """A file of records as JSON text with each file's key (history, archive), checked:
        ids, ctimes, inodes and texts, and the kinds (none UNSURE) and folder key when
        `shape` has them."""
        found = self._load(name)
        if not _shaped(found, shape):
            return None
        try:
            ids, ctimes, inodes = saved_keys(found)
            texts = found["texts"].split("\n") if found["texts"] else []
            if not len(ids) == len(ctimes) == len(inodes) == len(texts):
                return None
            loaded = {"ids": ids, "ctimes": ctimes, "inodes": inodes, "texts": texts}
            if "kinds" in shape:
                kinds = bytearray(found["kinds"])
                if len(kinds) != len(ids) or kinds.translate(None, _KIND_BYTES) or UNSURE in kinds:
                    return None
                loaded["kinds"] = kinds
            if "folder" in shape:
                if found["folder"] is not None and len(found["folder"]) != 4:
                    return None
                loaded["folder"] = found["folder"]
            return loaded
        except (KeyError, TypeError, ValueError, AttributeError):
            return None

    def drop_index(self) -> None:
        """Remove the index (found forged when its records were decoded): the next
        command lists the board folder and writes it again."""
        with suppress(OSError):
            os.unlink(os.path.join(self.path, INDEX_NAME))

    def _load(self, name: str):
        """The payload of a cache file, or None when it is missing or damaged in any way."""
        try:
            data = _read_regular(os.path.join(self.path, name))
        except OSError:
            return None
        head = len(FORMAT) + 4
        if len(data) < head or not data.startswith(FORMAT):
            return None
        body = memoryview(data)[head:]
        if zlib.crc32(body) != int.from_bytes(data[len(FORMAT) : head], "big"):
            return None
        try:
            return marshal.loads(body)
        except Exception:  # planted bytes with a right checksum (MemoryError included): no cache
            return None

    def save(self, name: str, payload: bytes, locked: bool = False) -> bool:
        """Write a cache file whole, then rename it into place (`write_in`). Any failure
        leaves the cache as it was, or without that file: it is only ever a shortcut.
        True when the file is in place."""
        try:
            folder = self._folder()
        except OSError:
            return False  # a read-only board, no room: the next command checks the files again
        if folder is None:
            return False
        try:
            return self.write_in(folder, name, payload, locked)
        finally:
            os.close(folder)

    @staticmethod
    def write_in(folder: int, name: str, payload: bytes, locked: bool = False) -> bool:
        """A cache file written whole in the cache folder `folder`, then renamed into place.
        `locked`: a file only changes made under the board's write lock write (the highest
        id, the moves), so no other writer races for its name: the old file is removed
        first and the new one renamed to a free name. A rename over a file makes ext4 write
        the new file's blocks out at once (auto_da_alloc), 1 to 6 ms that every other writer
        waited for; a reader meanwhile finds no file and lists the folder, as after a kill."""
        temp = f".{name}.{os.getpid()}.tmp"
        try:
            fd = os.open(
                temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666, dir_fd=folder
            )
            try:
                view = memoryview(FORMAT + zlib.crc32(payload).to_bytes(4, "big") + payload)
                while view:
                    view = view[os.write(fd, view) :]
                    _crash_point("writing")
            finally:
                os.close(fd)
            _crash_point("written")
            if locked:
                with suppress(FileNotFoundError):
                    os.unlink(name, dir_fd=folder)
                _crash_point("unlinked")
            os.replace(temp, name, src_dir_fd=folder, dst_dir_fd=folder)
            _crash_point("renamed")
        except OSError:
            with suppress(OSError):
                os.unlink(temp, dir_fd=folder)
            return False
        return True

    def make(self) -> None:
        """The cache folder, made now if it is not there (none for a board this user may
        not write): a reader about to take the board folder's key makes it first, so that
        the key it saves with the index is still the folder's after the save."""
        try:
            folder = self._folder()
        except OSError:
            return
        if folder is not None:
            os.close(folder)

    def fine_grained(self) -> bool:
        """Whether this board's file system gives a folder changed after a look at it a
        new ctime (the probe of `fine_grained`, in the cache folder)."""
        try:
            folder = self._folder()
        except OSError:
            return False
        if folder is None:
            return False
        try:
            return fine_grained(folder)
        except OSError:
            return False
        finally:
            os.close(folder)

    def _folder(self) -> int | None:
        """The cache folder, made on first use with a .gitignore of its own (so a board
        made before there was a cache keeps it out of git too); None when something
        other than a folder sits where it belongs (it is left alone)."""
        flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            folder = os.open(self.path, flags)
        except FileNotFoundError:
            with suppress(FileExistsError):
                os.mkdir(self.path)
            folder = os.open(self.path, flags)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                return None
            raise
        try:
            _tidy(folder)
        except OSError:
            os.close(folder)
            raise
        return folder


# What a cache file must hold, type by type: a file with the right checksum but another
# shape (planted, or written by another version) is no cache, never a crash.
_INDEX_SHAPE = {
    "folder": (type(None), tuple),
    "ids": (bytes,),
    "names": (str,),
    "ctimes": (bytes,),
    "inodes": (bytes,),
    "kinds": (bytes,),
    # the open tasks, one entry each, in id order (Snapshot.open_columns)
    "open_ids": (bytes,),
    "open_kinds": (bytes,),
    "texts": (str,),
    "records": (bytes,),
    "blocked": (tuple,),
    "priority": (bytes,),
    "due": (tuple,),
    "after": (tuple,),
}
_HISTORY_SHAPE = {"ids": (bytes,), "ctimes": (bytes,), "inodes": (bytes,), "texts": (str,)}
_ARCHIVE_SHAPE = {**_HISTORY_SHAPE, "kinds": (bytes,), "folder": (type(None), tuple)}
_KIND_BYTES = bytes([*KINDS.values(), UNSURE])


def _shaped(found: object, shape: dict) -> bool:
    return type(found) is dict and all(type(found.get(key)) in kinds for key, kinds in shape.items())


def _open_columns(found: dict) -> dict | None:
    """The index's open tasks, checked as whole columns (no Python call per task): one
    entry each in every column, ids rising, statuses open, texts one line each, blockers
    ids, due times text (`~`: none), after times text or None. The records stay marshal
    bytes here; Snapshot.open checks them when it decodes them."""
    open_ids = memoryview(found["open_ids"]).cast("q")
    open_kinds, blocked, due, after = found["open_kinds"], found["blocked"], found["due"], found["after"]
    texts = found["texts"].split("\n") if found["texts"] else []
    count = len(open_ids)
    ordered = open_ids.tolist()
    if (
        not count == len(open_kinds) == len(texts) == len(blocked) == len(found["priority"]) == len(due) == len(after)
        or open_kinds.translate(None, _OPEN_KIND_BYTES)
        or ordered != sorted(set(ordered))
        or not set(map(type, blocked)) <= _TUPLE
        or not {type(task_id) for ids in blocked for task_id in ids} <= _INT
        or not set(map(type, due)) <= _STR
        or not set(map(type, after)) <= _STR_OR_NONE
    ):
        return None
    return dict(
        zip(
            OPEN_COLUMNS,
            (ordered, open_kinds, texts, found["records"], blocked, found["priority"], due, after),
            strict=True,
        )
    )


# The index's open tasks, one entry each (what _open_columns gives, and Snapshot.columns holds).
OPEN_COLUMNS = ("open_ids", "open_kinds", "texts", "records", "blocked", "priority", "due", "after")


_OPEN_KIND_BYTES = bytes([KINDS["pending"], KINDS["in_progress"]])
_TUPLE, _INT, _STR, _STR_OR_NONE = (
    frozenset((tuple,)),
    frozenset((int,)),
    frozenset((str,)),
    frozenset((str, type(None))),
)


def _read_regular(path: str) -> bytes:
    """A regular file's bytes, never through a link; OSError for anything else."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        if info.st_size > MAX_CACHE_BYTES:  # planted junk (a sparse gigabyte): never read, rebuilt
            raise OSError(errno.EFBIG, "larger than any cache")
        parts = []
        while chunk := os.read(fd, max(info.st_size, 1 << 16)):
            parts.append(chunk)
        return b"".join(parts)
    finally:
        os.close(fd)


def _tidy(folder: int) -> None:
    """The cache folder's own .gitignore, and no temporary file of a writer that died."""
    names = os.listdir(folder)
    if ".gitignore" not in names:
        fd = os.open(".gitignore", os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666, dir_fd=folder)
        try:
            os.write(fd, GITIGNORE)
        finally:
            os.close(fd)
    now = time.time_ns()
    for name in names:
        if name.endswith(".tmp"):
            try:
                if now - os.lstat(name, dir_fd=folder).st_mtime_ns > STRAY_NS:
                    os.unlink(name, dir_fd=folder)
            except OSError:
                pass


def _crash_point(stage: str) -> None:
    # Test hook (tests/test_index.py): TASKS_TEST_CACHE_CRASH=STAGE makes this process
    # SIGKILL itself at that stage of writing a cache file, to stop it at a chosen instant.
    if os.environ.get("TASKS_TEST_CACHE_CRASH") == stage:
        import signal

        os.kill(os.getpid(), signal.SIGKILL)
