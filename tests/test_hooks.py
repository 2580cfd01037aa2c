"""Issue 24, DESIGN §14, hooks: `tasks hook add EVENT CMD | list | remove` kept in the
clone's git config, run after the change commits with the event as JSON on stdin, in
the background with a timeout; a failing hook is journaled and changes nothing; a
change merged from elsewhere runs none. Real git, real shell scripts, real processes;
each wait is on a file event in the folder a hook writes to (tests/watching.py)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest
from conftest import TASKS, tasks_process
from watching import IN_CLOSE_WRITE, IN_CREATE, IN_MOVED_TO, until


def wait_for(condition, folder: Path, seconds: float = 30.0):
    """A real condition (a file a hook writes, a journal line), looked at again each time
    a file in `folder` is written, created or put in place, for at most `seconds`."""
    return until(condition, folder, IN_CLOSE_WRITE | IN_CREATE | IN_MOVED_TO, seconds)


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def tasks(repo: Path, *args: str, input: bytes | None = None, env: dict | None = None, code: int = 0):
    done = tasks_process(*args, cwd=repo, input=input, env=env)
    done.stdout, done.stderr = done.stdout.decode(), done.stderr.decode()
    assert done.returncode == code, (args, done.returncode, done.stdout, done.stderr)
    return done


@pytest.fixture
def repo(tmp_path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    tasks(repo, "init")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "board")
    return repo


def script(folder: Path, name: str, body: str) -> str:
    """A real hook script; the command that runs it."""
    path = folder / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


def appends_event(seen: Path) -> str:
    """A hook that appends its event to `seen` as one line in one write (O_APPEND). Hooks
    run at once, each in its own process: a hook that wrote the event and then its newline
    could have another hook's event land between the two."""
    return f"""python3 -c 'import sys; sys.stdout.write(sys.stdin.read() + "\\n")' >> {seen}"""


def json_lines(path: Path) -> list[dict]:
    if not path.exists():
        return []
    text = path.read_text()
    if not text.endswith("\n"):
        return []  # still being written
    return [json.loads(line) for line in text.splitlines()]


def test_hooks_are_kept_in_git_config_and_listed(repo):
    tasks(repo, "hook", "add", "completed", "echo done >> log")
    tasks(repo, "hook", "add", "created", "true")
    tasks(repo, "hook", "add", "completed", "echo done >> log")  # the same hook once
    assert json.loads(tasks(repo, "hook", "list", "--json").stdout) == [
        {"event": "completed", "command": "echo done >> log"},
        {"event": "created", "command": "true"},
    ]
    assert tasks(repo, "hook", "list").stdout == "completed\techo done >> log\ncreated\ttrue\n"
    assert git(repo, "config", "--local", "--get-all", "tasks.hook.completed") == "echo done >> log\n"
    assert git(repo, "status", "--porcelain") == ""  # nothing committed changed, nothing new to commit
    tasks(repo, "hook", "remove", "created")
    assert [h["event"] for h in json.loads(tasks(repo, "hook", "list", "--json").stdout)] == ["completed"]
    assert "no hook on created" in tasks(repo, "hook", "remove", "created", code=3).stderr
    assert "unknown event 'finished'" in tasks(repo, "hook", "add", "finished", "true", code=2).stderr
    assert "more than one line" in tasks(repo, "hook", "add", "created", "a\nb", code=2).stderr


def test_outside_git_hooks_are_refused(tmp_path):
    board = tmp_path / "plain"
    board.mkdir()
    assert "in no git work tree" in tasks(board, "hook", "add", "created", "true", code=2).stderr


def test_a_hook_gets_the_event_as_json_after_the_change_commits(repo, tmp_path):
    seen = tmp_path / "seen.jsonl"
    # each hook reads its event and the task file as it is when the hook runs
    recorder = script(
        tmp_path,
        "record",
        "python3 -c 'import json, os, sys; e = json.load(sys.stdin); "
        'f = os.path.join(os.environ["TASKS_DIR"], "task_%d.json" % e["task"]); '
        'e["on_disk"] = json.load(open(f))["status"]; print(json.dumps(e))\' '
        f">> {seen}\n",
    )
    for event in ("created", "claimed", "completed", "ready", "released", "failed", "reopened", "deleted"):
        tasks(repo, "hook", "add", event, recorder)
    tasks(repo, "create", "Parser")
    tasks(repo, "create", "Tests", "--blocked-by", "1")
    tasks(repo, "--as", "alice", "claim", "1")
    tasks(repo, "done", "1")
    # hooks run in the background: #1's file is read by its hook before `reopen 1` below
    # rewrites it (under a loaded machine the hook came after it, and read pending)
    wait_for(lambda: any(e["event"] == "completed" for e in json_lines(seen)), tmp_path)
    tasks(repo, "--as", "bob", "claim", "2")
    tasks(repo, "--as", "bob", "release", "2", "--failed", "--note", "flaky")
    tasks(repo, "reopen", "1")
    tasks(repo, "delete", "2")

    def all_events():
        """the ten events, each written whole"""
        found = json_lines(seen)
        return found if len(found) >= 10 else None

    events = wait_for(all_events, tmp_path)
    assert sorted((e["event"], e["task"]) for e in events) == sorted(
        [
            ("created", 1),
            ("created", 2),
            ("claimed", 1),
            ("completed", 1),
            ("ready", 2),
            ("claimed", 2),
            ("released", 2),
            ("failed", 2),
            ("reopened", 1),
            ("deleted", 2),
        ]
    )
    completed = next(e for e in events if e["event"] == "completed")
    assert completed["record"]["status"] == "completed" and completed["on_disk"] == "completed"
    failed = next(e for e in events if e["event"] == "failed")
    assert failed["note"] == "flaky" and failed["actor"] == "bob"
    assert next(e for e in events if e["event"] == "ready")["record"]["blockedBy"] == []


def test_a_failing_hook_is_journaled_and_changes_nothing(repo, tmp_path):
    tasks(repo, "hook", "add", "completed", script(tmp_path, "fail", "echo it broke >&2; exit 3\n"))
    tasks(repo, "create", "A")
    tasks(repo, "done", "1")
    record = (repo / ".tasks" / "task_1.json").read_bytes()

    def journaled():
        """hook-failed in the journal"""
        entries = json.loads(tasks(repo, "log", "1", "--json").stdout)
        return [e for e in entries if e["event"] == "hook-failed"]

    [failure] = wait_for(journaled, repo / ".tasks" / "journal")
    assert failure["hook"] == "completed" and failure["exit"] == 3 and "it broke" in failure["output"]
    assert (repo / ".tasks" / "task_1.json").read_bytes() == record
    assert json.loads(tasks(repo, "get", "1", "--json").stdout)["status"] == "completed"


def test_a_hook_that_runs_too_long_is_killed_and_journaled(repo, tmp_path):
    marker = tmp_path / "started"
    tasks(repo, "hook", "add", "created", script(tmp_path, "slow", f"touch {marker}; sleep 60\n"))
    began = time.monotonic()
    tasks(repo, "create", "A", env={"TASKS_HOOK_TIMEOUT": "1"})
    assert time.monotonic() - began < 20  # the command did not wait for its hook

    def journaled():
        """a timed-out hook in the journal"""
        entries = json.loads(tasks(repo, "log", "1", "--json").stdout)
        return [e for e in entries if e["event"] == "hook-failed"]

    [failure] = wait_for(journaled, repo / ".tasks" / "journal")
    assert marker.exists() and failure.get("timed_out") is True


def test_tool_calls_run_hooks_too(repo, tmp_path):
    seen = tmp_path / "seen.jsonl"
    tasks(repo, "hook", "add", "created", appends_event(seen))
    call = {"name": "task_create", "input": {"subject": "From a model"}}
    tasks(repo, "call", input=json.dumps(call).encode())

    def written():
        """the created event"""
        return json_lines(seen)

    [event] = wait_for(written, tmp_path)
    assert event["event"] == "created" and event["record"]["subject"] == "From a model"


def _close_stdout() -> None:
    os.close(1)


@pytest.mark.parametrize("stdout", ["closed", "a pipe nobody reads"])
def test_a_change_whose_answer_is_lost_still_runs_its_hooks(repo, tmp_path, stdout):
    """The change is made when its answer cannot be written (`tasks create X --json >&-`,
    or `| head -c 0`): its hooks run as for any change (they did not: the failed write
    ended the command before them)."""
    seen = tmp_path / "seen.jsonl"
    tasks(repo, "hook", "add", "created", appends_event(seen))
    reading, writing = os.pipe()
    os.close(reading)
    try:
        for args in (["create", "fast path", "--json"], ["create", "click", "--as", "amy"]):
            options = {"preexec_fn": _close_stdout} if stdout == "closed" else {"stdout": writing}
            done = subprocess.run([*TASKS, *args], cwd=repo, stderr=subprocess.PIPE, timeout=60, check=False, **options)
            assert done.returncode == (6 if stdout == "closed" else 0), done.stderr
    finally:
        os.close(writing)

    def written():
        """both created events"""
        events = json_lines(seen)
        return events if len(events) == 2 else None

    events = wait_for(written, tmp_path)
    assert sorted(event["record"]["subject"] for event in events) == ["click", "fast path"]


@pytest.mark.parametrize("source", ["plan", "claude"])
def test_an_import_runs_the_created_hook_for_each_task(repo, tmp_path, source):
    """A plan file and a Claude Code task list are both created here: each task they make
    runs the clone's `created` hooks, as a `tasks create` would."""
    seen = tmp_path / "seen.jsonl"
    tasks(repo, "hook", "add", "created", appends_event(seen))
    if source == "plan":
        plan = {"tasks": [{"key": "a", "subject": "First"}, {"key": "b", "subject": "Second", "blockedBy": ["a"]}]}
        tasks(repo, "import", "-", input=json.dumps(plan).encode())
    else:
        folder = tmp_path / "claude-list"
        folder.mkdir()
        for key, subject, blocked_by in (("1", "First", []), ("2", "Second", ["1"])):
            document = {"id": key, "subject": subject, "description": "", "status": "pending", "blockedBy": blocked_by}
            (folder / f"{key}.json").write_text(json.dumps(document))
        tasks(repo, "import", "--from", "claude", str(folder))

    def written():
        """a created event for each imported task"""
        events = json_lines(seen)
        return events if len(events) == 2 else None

    events = wait_for(written, tmp_path)
    assert sorted((event["event"], event["record"]["subject"]) for event in events) == [
        ("created", "First"),
        ("created", "Second"),
    ]


def test_changes_merged_from_elsewhere_run_no_hook(repo, tmp_path):
    origin = tmp_path / "origin.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(origin))
    git(repo, "remote", "add", "origin", str(origin))
    git(repo, "fetch", "-q", "origin")
    git(repo, "branch", "-q", "--set-upstream-to=origin/main")
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(origin), str(other))
    tasks(other, "init")
    tasks(repo, "hook", "add", "completed", f"touch {tmp_path / 'completed-here'}")
    tasks(repo, "hook", "add", "created", f"touch {tmp_path / 'created-here'}")
    # the other clone creates and completes a task, and pushes
    tasks(other, "create", "Theirs")
    tasks(other, "done", "1")
    git(other, "add", "-A")
    git(other, "commit", "-qm", "their work")
    git(other, "push", "-q", "origin", "main")
    git(repo, "pull", "-q", "--no-rebase", "origin", "main")
    assert json.loads(tasks(repo, "get", "1", "--json").stdout)["status"] == "completed"
    tasks(repo, "sync")  # a sync merges too, and runs no hook either
    # a change made here runs its hook; the merged completion ran none before it
    tasks(repo, "create", "Ours")
    wait_for((tmp_path / "created-here").exists, tmp_path)
    assert not (tmp_path / "completed-here").exists()


def test_a_failed_gate_runs_the_failed_hook(repo, tmp_path):
    seen = tmp_path / "failed.jsonl"
    tasks(repo, "hook", "add", "failed", appends_event(seen))
    tasks(repo, "create", "Gated", "--gate", "exit 1")
    tasks(repo, "done", "1", code=7)  # the gate fails: nothing completed, one failed attempt journaled
    tasks(repo, "create", "Gated too", "--gate", "exit 2")
    call = {"name": "task_update", "input": {"taskId": 2, "status": "completed"}}
    tasks(repo, "call", input=json.dumps(call).encode(), code=7)

    def both():
        """the two failed events"""
        found = json_lines(seen)
        return found if len(found) == 2 else None

    events = sorted(wait_for(both, tmp_path), key=lambda event: event["task"])
    assert [(e["event"], e["task"]) for e in events] == [("failed", 1), ("failed", 2)]
    assert [e["gate"]["exit"] for e in events] == [1, 2]
    assert [e["gate"]["command"] for e in events] == ["exit 1", "exit 2"]
