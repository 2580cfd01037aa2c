"""Sleeping until a folder changes, for `claim --wait`: no busy loop, no lock held.

On Linux the kernel says when (inotify, through ctypes: no thread, no polling; an idle
waiter costs nothing until a task file or a runtime state entry is replaced). Elsewhere,
or when inotify is unavailable, the folders' modification times are polled twice a
second (one `stat` each), which also costs next to nothing.

Only entries whose names do not start with a dot count as changes: the lock files,
scratch folders and temporary files that every command touches (the waiter's own
attempts included) never wake anyone.

    watcher = watcher_for([board, state])
    watcher.arm()         # forget what happened so far: the caller looks at the board now
    ... look ...
    watcher.wait(5.0)     # True when something changed since arm(), False after 5 s

A `Stop` given to the watcher ends its waits at once when set from another thread (the
MCP server's client cancelled the call, or went away): `wait` then returns False.
"""

from __future__ import annotations

import os
import select
import struct
import time

TYPE_CHECKING = False  # typing costs ~5 ms of start-up; annotations are strings anyway
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

# inotify(7)
_IN_CLOSE_WRITE = 0x00000008
_IN_MOVED_FROM = 0x00000040
_IN_MOVED_TO = 0x00000080
_IN_CREATE = 0x00000100
_IN_DELETE = 0x00000200
_IN_DELETE_SELF = 0x00000400
_IN_MOVE_SELF = 0x00000800
_IN_Q_OVERFLOW = 0x00004000
_IN_IGNORED = 0x00008000
_IN_ONLYDIR = 0x01000000
_MASK = (
    _IN_CLOSE_WRITE
    | _IN_MOVED_FROM
    | _IN_MOVED_TO
    | _IN_CREATE
    | _IN_DELETE
    | _IN_DELETE_SELF
    | _IN_MOVE_SELF
    | _IN_ONLYDIR
)
_ALWAYS = _IN_Q_OVERFLOW | _IN_IGNORED | _IN_DELETE_SELF | _IN_MOVE_SELF  # the watch itself changed: look again
_EVENT = struct.Struct("iIII")


class Stop:
    """A flag another thread sets to end a wait now, with the reason; a watcher's
    `select` wakes on its pipe (made only when a watcher asks for it)."""

    def __init__(self) -> None:
        self.reason: str | None = None
        self._pipe: tuple[int, int] | None = None

    def set(self, reason: str) -> None:
        if self.reason is None:
            self.reason = reason
            if self._pipe is not None:
                os.write(self._pipe[1], b"!")

    def is_set(self) -> bool:
        return self.reason is not None

    def fileno(self) -> int:
        if self._pipe is None:
            self._pipe = os.pipe()
            if self.reason is not None:
                os.write(self._pipe[1], b"!")
        return self._pipe[0]

    def close(self) -> None:
        if self._pipe is not None:
            for fd in self._pipe:
                os.close(fd)
            self._pipe = None


def watcher_for(folders: list[str], stop: Stop | None = None) -> Any:
    """A watcher over the folders that exist (created where they may be: the runtime
    state folder), inotify when the kernel offers it, else a poller; `stop` ends its
    waits when set."""
    present = []
    for folder in folders:
        try:  # noqa: SIM105  # contextlib costs a watcher ~2.7 ms of start-up
            os.makedirs(folder, exist_ok=True)
        except OSError:
            pass  # a folder that cannot be made is not watched
        if os.path.isdir(folder):
            present.append(folder)
    try:
        return Inotify(present, stop)
    except OSError:
        return Poller(present, stop)


def load_inotify() -> None:
    """Load what an Inotify needs (ctypes, ~10 ms): a writer that will watch the board
    folder (a Witness, taskboard.disk.store) pays for it before it takes the board lock,
    so that no other writer waits for the import."""
    import ctypes  # noqa: F401


class Inotify:
    """The kernel's change notices for a few folders (Linux)."""

    def __init__(self, folders: list[str], stop: Stop | None = None, mask: int = _MASK):
        import ctypes  # only a waiting claim, or a writer's Witness, pays for it

        self.stop = stop
        self.mask = mask
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            init, self._add, self._remove = libc.inotify_init1, libc.inotify_add_watch, libc.inotify_rm_watch
        except (OSError, AttributeError):
            raise OSError("no inotify") from None
        self._add.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        self._watches: list[int] = []
        self._errno = ctypes.get_errno
        self.fd = init(os.O_NONBLOCK | os.O_CLOEXEC)
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1 failed")
        for folder in folders:
            self.add(folder)

    def add(self, folder: str) -> None:
        watch = self._add(self.fd, os.fsencode(folder), self.mask)
        if watch < 0:
            error = self._errno()
            self.close()
            raise OSError(error, f"cannot watch {folder}")
        self._watches.append(watch)

    def arm(self) -> None:
        self._drain()

    def wait(self, timeout: float | None) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            readable, _, _ = select.select([self.fd, *_wakers(self.stop)], [], [], remaining)
            if not readable or (self.stop is not None and self.stop.is_set()):
                return False
            if self._drain():
                return True

    def _drain(self) -> bool:
        """Read every queued notice; whether one of them is a change that counts."""
        relevant = False
        for mask, name in self.events():
            if mask & _ALWAYS or (name and not name.startswith(b".")):
                relevant = True
        return relevant

    def events(self) -> Iterator[tuple[int, bytes]]:
        """Every queued notice, (mask, name), until none is left."""
        while True:
            try:
                data = os.read(self.fd, 65536)
            except BlockingIOError:
                return
            offset = 0
            while offset + _EVENT.size <= len(data):
                _, mask, _, length = _EVENT.unpack_from(data, offset)
                yield mask, data[offset + _EVENT.size : offset + _EVENT.size + length].rstrip(b"\0")
                offset += _EVENT.size + length

    def unwatch(self) -> None:
        """Stop watching (no notice comes after this). Closing a descriptor that still
        watches waits until the kernel has retired its watches (2 to 6 clock ticks, 8-25
        ms on Linux 6, on every change of a large board: Store._end_witness); removed
        first, they retire in the background, and a close a few milliseconds later
        returns at once."""
        for watch in self._watches:
            self._remove(self.fd, watch)
        self._watches = []

    def close(self) -> None:
        self.unwatch()
        os.close(self.fd)


class Witness:
    """Every name created, removed or moved into or out of one folder while it watched
    (inotify): a writer that put files in place tells by it whether it was the only one
    to add or remove a name meanwhile (taskboard.disk.cache.record_moves). OSError where
    the kernel offers no inotify."""

    MASK = _IN_CREATE | _IN_DELETE | _IN_MOVED_FROM | _IN_MOVED_TO | _IN_DELETE_SELF | _IN_MOVE_SELF | _IN_ONLYDIR

    def __init__(self, folder: str):
        self._watch = Inotify([], mask=self.MASK)
        self._watch.add(folder)

    def names(self) -> list[str] | None:
        """The names of the changes seen so far, one per change (a name twice when it
        changed twice); None when the count was lost (the queue overflowed) or the folder
        itself was moved or removed. The caller makes sure a change it counts on has been
        queued (one that is still under way holds the folder's lock: a look at the
        folder's entries waits for it)."""
        seen: list[str] = []
        for mask, name in self._watch.events():
            if mask & _ALWAYS or not name:
                return None
            seen.append(os.fsdecode(name))
        return seen

    def retire(self) -> None:
        """Stop watching once the change is counted: the close that follows is then quick
        (Inotify.unwatch)."""
        self._watch.unwatch()

    def close(self) -> None:
        self._watch.close()


class Poller:
    """Folder modification times polled every INTERVAL seconds. A change within the file
    system's timestamp granularity of the last look could leave the time unchanged, so
    a look taken that soon after a change is trusted only once RACY seconds have passed."""

    INTERVAL = 0.5
    RACY = 2.0

    def __init__(self, folders: list[str], stop: Stop | None = None):
        self.folders, self.stop = folders, stop
        self.arm()

    def _signature(self) -> tuple:
        found: list[tuple[int, int] | None] = []
        for folder in self.folders:
            try:
                info = os.stat(folder)
                found.append((info.st_mtime_ns, info.st_ino))
            except OSError:
                found.append(None)
        return tuple(found)

    def arm(self) -> None:
        self.seen = self._signature()
        self.armed = time.time()
        newest = max((mark[0] for mark in self.seen if mark), default=0) / 1e9
        self.racy_until = newest + self.RACY if self.armed - newest < self.RACY else None

    def wait(self, timeout: float | None) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                return False
            pause = self.INTERVAL if remaining is None else min(self.INTERVAL, remaining)
            select.select(_wakers(self.stop), [], [], pause)
            if self.stop is not None and self.stop.is_set():
                return False
            if self._signature() != self.seen:
                return True
            if self.racy_until is not None and time.time() >= self.racy_until:
                self.racy_until = None
                return True

    def close(self) -> None:
        pass


def _wakers(stop: Stop | None) -> list[int]:
    return [] if stop is None else [stop.fileno()]
