"""A real process the test stops at a point of its run: it says it arrived down one pipe
and waits on another for the test's word (no marker files, no polling). The script it runs
takes the two pipe ends as its first arguments after `before`."""

from __future__ import annotations

import os
import select
import subprocess
import sys


class Paused:
    """`python -c SCRIPT *before AT GO *after`, started; `said()` hears it arrive, `go_on()`
    lets it on."""

    def __init__(self, script: str, before: list[str], after: list[str], env: dict[str, str] | None = None):
        at_read, at_write = os.pipe()
        go_read, go_write = os.pipe()
        self.process = subprocess.Popen(
            [sys.executable, "-c", script, *before, str(at_write), str(go_read), *after],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            pass_fds=(at_write, go_read),
        )
        os.close(at_write)
        os.close(go_read)
        self.at, self.go = at_read, go_write

    def said(self) -> bytes:
        """What it said on arriving: empty when it ended first (the pipe's end closes) or
        said nothing in a minute."""
        ready, _, _ = select.select([self.at], [], [], 60)
        said = os.read(self.at, 64) if ready else b""
        os.close(self.at)
        return said

    def go_on(self) -> subprocess.CompletedProcess:
        """Let it go on; how it ended."""
        os.write(self.go, b"go")
        os.close(self.go)
        out, err = self.process.communicate(timeout=60)
        return subprocess.CompletedProcess(self.process.args, self.process.returncode, out, err)
