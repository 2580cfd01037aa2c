"""Writers first: a stream of overlapping reads must not keep a change out.

Readers share the board lock, so without help a writer waits until no reader
holds it, which on a busy board may be never (exit 5 after --timeout). A writer
therefore queues at a turnstile that new readers pass through first."""

from __future__ import annotations

import json
import subprocess
import sys
import time

from conftest import TASKS, tasks_process

HOLD_A_READ = """
import sys
from taskboard.disk.store import Store
with Store(sys.argv[1]).reading():
    print("reading", flush=True)
    sys.stdin.readline()
"""


def test_a_waiting_writer_goes_before_readers_that_arrive_after_it(tmp_path):
    board = str(tmp_path / ".tasks")
    assert tasks_process("--dir", board, "create", "first").returncode == 0
    reader = subprocess.Popen([sys.executable, "-c", HOLD_A_READ, board], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    writer = None
    try:
        assert reader.stdout.readline() == b"reading\n"
        writer = subprocess.Popen(
            [*TASKS, "--dir", board, "--timeout", "60", "create", "second", "--json"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        # Until the writer queues, newcomers share the lock with the first reader; once it
        # queues they must wait behind it (and here give up: exit 5), not slip past.
        deadline = time.monotonic() + 30
        while True:
            probe = tasks_process("--dir", board, "--timeout", "0.3", "list", "--json")
            if probe.returncode == 5:
                break
            assert probe.returncode == 0, probe.stderr
            assert writer.poll() is None, "the writer finished while a reader held the lock"
            assert time.monotonic() < deadline, "new readers kept passing a waiting writer"
        reader.stdin.write(b"done\n")
        reader.stdin.flush()
        assert reader.wait(timeout=30) == 0
        out, err = writer.communicate(timeout=60)
        assert writer.returncode == 0, err
        assert json.loads(out)["subject"] == "second"
    finally:
        for process in (reader, writer):
            if process is not None and process.poll() is None:
                process.kill()
                process.wait()
    listed = tasks_process("--dir", board, "list", "--json")
    assert [task["subject"] for task in json.loads(listed.stdout)] == ["first", "second"]
