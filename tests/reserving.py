"""A real `tasks create` stopped right after it reserved its id (Store.reserve: its file
written, synced, flocked and named `.scratch/task_N.json.new`; the board lock not asked
for yet), until the test lets it go on: what other processes do meanwhile is the test's
to choose. It says so down one pipe and waits on another (no marker files, no polling);
it stops once (a create that reserves again goes on at once)."""

from __future__ import annotations

import os

import pytest
from paused import Paused

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


class PausedCreate(Paused):
    """`tasks --dir BOARD create SUBJECT --json` under `umask`, stopped once it reserved."""

    def __init__(self, board: os.PathLike, subject: str, umask: int = 0o022):
        super().__init__(
            _PAUSED_CREATE, [], [format(umask, "o"), "--dir", os.fspath(board), "create", subject, "--json"]
        )

    def reserved(self) -> int:
        """The id it reserved, once it has; fails if it ended first, reserved nothing, or
        said nothing in a minute."""
        said = self.said()
        if not said.isdigit() or int(said) == 0:
            self.process.kill()
            pytest.fail(f"the create reserved no id (said {said!r}): {self.process.communicate()}")
        return int(said)
