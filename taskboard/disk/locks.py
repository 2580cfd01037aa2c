"""Waiting for a lock: the one rule of every wait for a `flock` the board takes (the
store's lock, from a thread the alarm cannot wake: taskboard.disk.store; the runtime
state's: taskboard.disk.state; one sync of a clone at a time: taskboard.git.sync).

The kernel's lock has no timeout: the wait asks without blocking, and pauses between
asks, from 1 ms doubling up to a longest pause, until the lock is taken or the deadline
passes. Who was waiting words the refusal (each says which lock was busy).
"""

from __future__ import annotations

import fcntl
import time

TYPE_CHECKING = False  # typing costs ~5 ms of start-up; annotations are strings anyway
if TYPE_CHECKING:
    from collections.abc import Callable

FIRST_PAUSE = 0.001  # seconds: the first pause; each next one doubles, up to the caller's longest


def wait_for(
    fd: int,
    deadline: float,
    mode: int = fcntl.LOCK_EX,
    longest: float = 0.02,
    waiting: Callable[[], None] | None = None,
) -> bool:
    """Take the flock `mode` on fd before `deadline` (time.monotonic()): True when it was
    taken, False when the deadline passed first. `waiting` is told once, when the lock
    is first found held by another."""
    pause = FIRST_PAUSE
    while True:
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if waiting is not None:
                waiting()
                waiting = None
            if time.monotonic() >= deadline:
                return False
            time.sleep(pause)
            pause = min(pause * 2, longest)
