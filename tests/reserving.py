"""A real `tasks create` stopped right after it reserved its id (Store.reserve: its file
written, synced, flocked and named `.scratch/task_N.json.new`; the board lock not asked
for yet), until the test lets it go on: what other processes do meanwhile is the test's
to choose. It says so down one pipe and waits on another (no marker files, no polling);
it stops once (a create that reserves again goes on at once)."""

from __future__ import annotations

import os
import select
import subprocess
import sys

import pytest

_PAUSED_CREATE = """
import os, sys
from taskboard.disk import store
at, go = int(sys.argv[1]), int(sys.argv[2])
os.umask(int(sys.argv[3], 8))
reserve = store.Store.reserve
def paused(self, content):
    global at
    held = reserve(self, content)
    if at >= 0:
        os.write(at, str(held[0] if held else 0).encode())
        os.close(at)
        at = -1
        os.read(go, 1)  # until the test writes (or its end closes)
    return held
store.Store.reserve = paused
from taskboard.__main__ import main
sys.exit(main(sys.argv[4:]))
"""


class PausedCreate:
    """`tasks --dir BOARD create SUBJECT --json` under `umask`, stopped once it reserved."""

    def __init__(self, board: os.PathLike, subject: str, umask: int = 0o022):
        at_read, at_write = os.pipe()
        go_read, go_write = os.pipe()
        command = [sys.executable, "-c", _PAUSED_CREATE, str(at_write), str(go_read), format(umask, "o")]
        self.process = subprocess.Popen(
            [*command, "--dir", os.fspath(board), "create", subject, "--json"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            pass_fds=(at_write, go_read),
        )
        os.close(at_write)
        os.close(go_read)
        self.at, self.go = at_read, go_write

    def reserved(self) -> int:
        """The id it reserved, once it has; fails if it ended first (the pipe's end closes:
        nothing to read), reserved nothing, or said nothing in a minute."""
        ready, _, _ = select.select([self.at], [], [], 60)
        said = os.read(self.at, 32) if ready else b""
        os.close(self.at)
        if not said.isdigit() or int(said) == 0:
            self.process.kill()
            pytest.fail(f"the create reserved no id (said {said!r}): {self.process.communicate()}")
        return int(said)

    def go_on(self) -> subprocess.CompletedProcess:
        """Let it go on; how it ended."""
        os.write(self.go, b"go")
        os.close(self.go)
        out, err = self.process.communicate(timeout=60)
        return subprocess.CompletedProcess(self.process.args, self.process.returncode, out, err)
