"""The one wait for a lock (taskboard.disk.locks), against a real holder: another
process that holds the flock until it is told to let go."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import time

from taskboard.disk.locks import wait_for

HOLDER = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.read()  # holds until the test closes our stdin
"""


def hold(path):
    """A process holding the lock on path (it says so before this returns)."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout.readline() == "held\n"
    return holder


def opened(path):
    return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)


def test_a_free_lock_is_taken_at_once_and_nobody_is_told_of_a_wait(tmp_path):
    told = []
    fd = opened(tmp_path / "lock")
    try:
        assert wait_for(fd, time.monotonic() + 5, waiting=lambda: told.append(1))
        assert told == []
    finally:
        os.close(fd)


def test_a_held_lock_is_given_up_at_the_deadline_and_the_waiter_told_once(tmp_path):
    holder = hold(tmp_path / "lock")
    told = []
    fd = opened(tmp_path / "lock")
    try:
        start = time.monotonic()
        assert not wait_for(fd, start + 0.3, longest=0.05, waiting=lambda: told.append(1))
        assert time.monotonic() - start >= 0.3
        assert told == [1]
    finally:
        os.close(fd)
        holder.stdin.close()
        holder.wait()


def test_the_lock_is_taken_once_its_holder_lets_go(tmp_path):
    holder = hold(tmp_path / "lock")
    fd = opened(tmp_path / "lock")
    try:
        # told that it waits, the holder lets go: the wait then takes the lock
        assert wait_for(fd, time.monotonic() + 30, waiting=holder.stdin.close)
        assert holder.wait(timeout=30) == 0
        other = opened(tmp_path / "lock")  # ours now: nobody else takes it
        try:
            try:
                fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
                raise AssertionError("the lock was not held")
            except BlockingIOError:
                pass
        finally:
            os.close(other)
    finally:
        os.close(fd)
