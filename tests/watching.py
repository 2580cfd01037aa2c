"""inotify (Linux) for tests that must act at an exact point of another process's work:
after it read a file, or once it staged one, and for tests that wait for a file another
process writes (`until`). Waiting on the kernel's event is waiting on a real condition,
never on a guessed time."""

from __future__ import annotations

import ctypes
import os
import select
import struct
import time

IN_CLOSE_WRITE = 0x08
IN_CLOSE_NOWRITE = 0x10
IN_MOVED_FROM = 0x40
IN_MOVED_TO = 0x80
IN_CREATE = 0x100
IN_DELETE = 0x200
_HEADER = struct.Struct("iIII")
_libc = ctypes.CDLL(None, use_errno=True)


class Watch:
    """The events `mask` on the entries of one folder."""

    def __init__(self, folder: os.PathLike | str, mask: int):
        self.fd = _libc.inotify_init1(os.O_CLOEXEC)
        if self.fd < 0 or _libc.inotify_add_watch(self.fd, os.fsencode(folder), mask) < 0:
            raise OSError(ctypes.get_errno(), "inotify")
        self.buffer = b""

    def wait(self, wanted, timeout: float = 30.0) -> str:
        """The name of the first entry with an event for which `wanted(name)` is true."""
        name = self.within(wanted, timeout)
        assert name is not None, "the awaited file event never came"
        return name

    def within(self, wanted, timeout: float, also: tuple[int, ...] = ()) -> str | None:
        """As wait, or None when no such event came within `timeout` seconds of quiet, or
        as soon as one of the file descriptors `also` is readable (a pidfd: its process
        ended)."""
        while True:
            while len(self.buffer) >= _HEADER.size:
                _wd, _mask, _cookie, length = _HEADER.unpack_from(self.buffer)
                name = self.buffer[_HEADER.size : _HEADER.size + length].rstrip(b"\0").decode()
                self.buffer = self.buffer[_HEADER.size + length :]
                if wanted(name):
                    return name
            ready, _, _ = select.select([self.fd, *also], [], [], timeout)
            if not ready or any(fd in ready for fd in also):
                return None
            self.buffer += os.read(self.fd, 65536)

    def close(self) -> None:
        os.close(self.fd)


def until(condition, folder: os.PathLike | str, mask: int, seconds: float = 30.0, also: tuple[int, ...] = ()):
    """condition()'s first true value, looked at again after each event `mask` on an entry
    of `folder` (the watch is set before the first look, so no event slips between a look
    and the wait) and whenever a file descriptor of `also` becomes readable; an assertion
    error naming the condition (its docstring) when `seconds` pass first."""
    watch = Watch(folder, mask)
    try:
        deadline = time.monotonic() + seconds
        while True:
            found = condition()
            if found:
                return found
            left = deadline - time.monotonic()
            assert left > 0, f"not within {seconds} s: {condition.__doc__ or condition}"
            watch.within(lambda _name: True, left, also)
    finally:
        watch.close()
