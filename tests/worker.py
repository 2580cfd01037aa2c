"""A real process for the concurrency and crash tests.

It runs `tasks` commands through `taskboard.__main__.main`, the entry point of the
installed command, so a storm of hundreds of commands from 8 processes does not
pay interpreter start-up for each; every call still builds its own store and
takes the board lock like a separate command would.

    python tests/worker.py PLAN_JSON
    python tests/worker.py --serve      (a fork server for the crash tests)

PLAN: {"calls": [[arg, ...], ...], "ready_fd": int | null, "go_fd": int | null,
"loop": bool}. Once imported it writes one byte to ready_fd, waits for EOF on
go_fd (the start barrier: the parent closes its end when every worker is
ready), runs the calls (round and round, when loop is set, until killed) and
prints a JSON list of {"exit", "stdout", "stderr"}, one per call.
"""

from __future__ import annotations

import io
import json
import os
import sys

from taskboard.__main__ import main

TYPE_CHECKING = False
if TYPE_CHECKING:
    import subprocess


class _Capture(io.StringIO):
    """A text stream with a .buffer, as the CLI writes bytes when it can."""

    def __init__(self):
        super().__init__()
        self.buffer = io.BytesIO()

    def text(self) -> str:
        return self.buffer.getvalue().decode("utf-8") + self.getvalue()


def call(args: list[str]) -> dict:
    out, err = _Capture(), _Capture()
    sys.stdout, sys.stderr = out, err
    try:
        code = main(args)
    finally:
        sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
    return {"exit": code, "stdout": out.text(), "stderr": err.text()}


def run(plan: dict) -> list[dict]:
    if plan.get("ready_fd") is not None:
        os.write(plan["ready_fd"], b".")
        os.close(plan["ready_fd"])
    if plan.get("go_fd") is not None:
        while os.read(plan["go_fd"], 1):
            pass
    results = [call(args) for args in plan["calls"]]
    while plan.get("loop"):
        for args in plan["calls"]:
            call(args)
    return results


def serve() -> None:
    """A fork server, for crash tests: with everything imported once, each request line
    on stdin forks a child that runs one command (`{"args", "crash_after"}`, reply
    `{"exit"}` or `{"signal"}`) or loops over commands until killed (`{"loop"}`, reply
    `{"pid"}` at once; `{"reap": pid}` later replies how it ended). Forking here, in a
    single-threaded process, is safe where forking the test runner would not be."""
    import signal  # noqa: F401  (the child may need it before it could import it)

    # what a change imports on first use: a child spends its time in changes, not imports,
    # so a kill at a random instant lands inside one as often as the changes fill the time

    for line in sys.stdin:
        request = json.loads(line)
        if "reap" in request:
            _, status = os.waitpid(request["reap"], 0)
            reply = _ending(status)
        else:
            pid = os.fork()
            if pid == 0:
                _child(request)
            reply = {"pid": pid} if request.get("loop") else _ending(os.waitpid(pid, 0)[1])
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


def _child(request: dict) -> None:
    code = 1
    try:
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        if request.get("crash_after"):
            os.environ["TASKS_TEST_CRASH_AFTER"] = str(request["crash_after"])
        if request.get("loop"):
            while True:
                for args in request["loop"]:
                    main(args)
        code = main(request["args"])
    finally:
        os._exit(code)


def _ending(status: int) -> dict:
    return {"signal": os.WTERMSIG(status)} if os.WIFSIGNALED(status) else {"exit": os.WEXITSTATUS(status)}


# -- the parent's side ----------------------------------------------------------------


def spawn(plan: dict, **popen) -> subprocess.Popen:
    import subprocess

    fds = tuple(fd for fd in (plan.get("ready_fd"), plan.get("go_fd")) if fd is not None)
    return subprocess.Popen(
        [sys.executable, __file__, json.dumps(plan)],
        pass_fds=fds,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        **popen,
    )


def run_together(call_lists: list[list[list[str]]], timeout: float = 60) -> list[list[dict]]:
    """One worker process per call list, all released at the same instant once every
    one of them is up; the results of each, in order."""
    ready_r, ready_w = os.pipe()
    go_r, go_w = os.pipe()
    try:
        workers = [spawn({"calls": calls, "ready_fd": ready_w, "go_fd": go_r}) for calls in call_lists]
    finally:
        os.close(ready_w)
        os.close(go_r)
    arrived = 0
    while arrived < len(workers):
        got = os.read(ready_r, len(workers))
        assert got, "a worker died before it was ready"
        arrived += len(got)
    os.close(ready_r)
    os.close(go_w)  # the barrier opens for everyone at once
    results = []
    for worker in workers:
        out, err = worker.communicate(timeout=timeout)
        assert worker.returncode == 0, err.decode()
        results.append(json.loads(out))
    return results


class ForkServer:
    """The parent's handle on `serve()` running in its own process."""

    def __init__(self):
        import subprocess

        self.process = subprocess.Popen(
            [sys.executable, __file__, "--serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )

    def ask(self, **request) -> dict:
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        assert line, "the fork server died"
        return json.loads(line)

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=30)


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        serve()
    else:
        print(json.dumps(run(json.loads(sys.argv[1]))))
