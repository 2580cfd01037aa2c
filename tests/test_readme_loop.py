"""The README's agent loop, taken verbatim from the README (the fenced block after its
`agent-loop` marker) and run by real `bash` agents:

- three and five agents on one imported plan: the loop ends for every agent exactly when
  the plan is finished (not while work is only blocked), every task is completed exactly
  once, a failed attempt goes back to the board and is finished later;
- the first hour of a team (issue 18): three agents, each in its own worktree of one clone,
  one killed with `kill -9` while it works, a plan with one root, a gate that fails once, a
  task that always fails and a task whose work outlasts the lease. Every task ends completed
  exactly once, or stuck; the gate's one failure is counted once; the slow task is never
  taken from the live agent that renews it; the killed agent's task is taken over once its
  lease runs out. The bound: the crashed task moves within LEASE + 0.5 s (+ start-up) of the
  kill, and the whole plan ends within BOUND seconds.

Leases, renewals and work are scaled down through the variables the loop reads
(TASKS_LEASE, RENEW_EVERY), so this runs in seconds.
"""

from __future__ import annotations

import calendar
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from gitboard import git_env
from invariants import assert_sound
from watching import IN_CREATE, IN_MOVED_TO, until

README = Path(__file__).resolve().parent.parent / "README.md"
MARKER = "<!-- agent-loop: tested by tests/test_readme_loop.py -->"

# Only where jq is missing: the one filter the loop uses (`jq .id`), in Python.
JQ_SHIM = """#!{python}
import json, sys
assert sys.argv[1:] == [".id"], sys.argv
print(json.load(sys.stdin)["id"])
"""


def readme_loop() -> str:
    """The agent loop as the README gives it: the whole fenced block after the marker."""
    text = README.read_text(encoding="utf-8")
    block = re.search(re.escape(MARKER) + r"\n```sh\n(.*?)```", text, re.S)
    assert block, "the README lost its agent loop (or the marker line before it)"
    return block.group(1)


def agent_env(tmp_path: Path) -> dict[str, str]:
    bin_dir = Path(sys.executable).parent
    assert (bin_dir / "tasks").exists(), "the tasks command is installed beside this Python"
    path = [str(bin_dir)]
    if shutil.which("jq") is None:
        shim = tmp_path / "shim"
        shim.mkdir()
        (shim / "jq").write_text(JQ_SHIM.format(python=sys.executable))
        (shim / "jq").chmod(0o755)
        path.append(str(shim))
    env = {**os.environ, "PATH": os.pathsep.join([*path, os.environ.get("PATH", "")])}
    for name in ("TASKS_OWNER", "TASKS_DIR", "TASKS_LEASE", "RENEW_EVERY"):
        env.pop(name, None)
    return env


def journal_of(board: Path) -> list[dict]:
    return [
        json.loads(line) for shard in (board / "journal").glob("*.jsonl") for line in shard.read_text().splitlines()
    ]


def import_plan(plan: dict, env: dict, cwd: Path) -> dict[str, int]:
    made = subprocess.run(
        ["tasks", "import", "-", "--json"], input=json.dumps(plan).encode(), env=env, cwd=cwd, capture_output=True
    )
    assert made.returncode == 0, made.stderr
    return json.loads(made.stdout)["created"]


# -- many agents, one board -----------------------------------------------------------------

# setup → four parts → two joins → release, and two side tasks: most of the time most
# agents have nothing to claim yet and must wait for work that is still coming.
PLAN = {
    "tasks": [
        {"key": "setup", "subject": "Set up", "priority": 0},
        *({"key": f"part{i}", "subject": f"Part {i}", "blockedBy": ["setup"]} for i in range(1, 5)),
        {"key": "join1", "subject": "Join 1 and 2", "blockedBy": ["part1", "part2"], "priority": 1},
        {"key": "join2", "subject": "Join 3 and 4", "blockedBy": ["part3", "part4"]},
        {"key": "release", "subject": "Release", "blockedBy": ["join1", "join2"]},
        {"key": "docs", "subject": "Docs", "priority": 4},
        {"key": "notes", "subject": "Release notes", "blockedBy": ["docs", "join1"]},
    ]
}
FLAKY = "part2"  # its first attempt fails, whoever makes it

# do_the_work for the loop: log the attempt, fail the flaky task once (mkdir is atomic).
WORK = """
do_the_work() {
  local id; id=$(echo "$1" | jq .id)
  echo "$TASKS_OWNER $id" >> "$WORK_LOG"
  if [ "$id" = "$FLAKY_ID" ] && mkdir "$FLAKY_MARK" 2>/dev/null; then return 1; fi
  return 0
}
"""


@pytest.mark.parametrize("agents", [3, 5])
def test_the_readme_loop_finishes_a_plan_together(tmp_path, agents):
    board = tmp_path / "board"
    env = agent_env(tmp_path) | {"TASKS_DIR": str(board)}
    ids = import_plan(PLAN, env, tmp_path)
    log = tmp_path / "work.log"
    env |= {"WORK_LOG": str(log), "FLAKY_ID": str(ids[FLAKY]), "FLAKY_MARK": str(tmp_path / "flaky-failed")}
    script = "set -u\n" + WORK + readme_loop()
    procs = [
        subprocess.Popen(
            ["bash", "-c", script],
            env={**env, "TASKS_OWNER": f"agent-{n}"},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for n in range(agents)
    ]
    results = [(proc, *proc.communicate(timeout=300)) for proc in procs]

    for n, (proc, _out, err) in enumerate(results):
        stderr = err.decode()
        assert proc.returncode == 0, (n, proc.returncode, stderr)
        assert "Traceback" not in stderr
        # the loop ended on claim's exit 3, and for the one reason: the plan is finished
        last = stderr.strip().splitlines()[-1]
        assert f"nothing is left that could come to agent-{n}: every task is done" in last, stderr

    records = assert_sound(board)
    assert sorted(records) == sorted(ids.values())
    assert all(record["status"] == "completed" for record in records.values())
    attempts = [line.split() for line in log.read_text().splitlines()]
    tried = sorted(int(task) for _, task in attempts)
    assert tried == sorted([*ids.values(), ids[FLAKY]])  # each task once, the flaky one twice
    journal = journal_of(board)
    completed = sorted(entry["task"] for entry in journal if entry["event"] == "completed")
    assert completed == sorted(ids.values())  # each completed exactly once
    failed = [entry for entry in journal if entry["event"] == "failed"]
    assert [entry["task"] for entry in failed] == [ids[FLAKY]] and failed[0]["note"] == "what went wrong"
    finisher = {entry["task"]: entry["actor"] for entry in journal if entry["event"] == "completed"}
    worker = {int(task): owner for owner, task in attempts}  # who made the last attempt
    assert finisher == worker  # the one who completed a task is journaled as such


# -- the first hour: worktrees, kill -9, a gate, a task that always fails, a slow one ------------

LEASE = 3  # seconds: TASKS_LEASE for the loop
RENEW_EVERY = 0.5  # seconds between the loop's renewals
SLOW = 2 * LEASE  # the slow task's work outlasts the lease twice over
BOUND = 120  # seconds from the start to the last agent's end, on a loaded CI machine

TEAM_PLAN = {
    "tasks": [
        {"key": "root", "subject": "Root", "priority": 0},
        *({"key": f"part{i}", "subject": f"Part {i}", "blockedBy": ["root"]} for i in range(1, 4)),
        {
            "key": "gated",
            "subject": "Gated",
            "blockedBy": ["root"],
            "gate": 'mkdir "$GATE_MARK" 2>/dev/null && exit 1; exit 0',
        },
        {"key": "broken", "subject": "Always fails", "blockedBy": ["root"], "priority": 1},
        {"key": "slow", "subject": "Slow", "blockedBy": ["root"]},
        {"key": "join", "subject": "Join", "blockedBy": ["part1", "part2", "part3", "gated", "slow"]},
    ]
}

# do_the_work: log the attempt; the victim says it holds a task and works until it is
# killed; the broken task always fails; the slow one outlasts the lease.
TEAM_WORK = """
do_the_work() {
  local id; id=$(echo "$1" | jq .id)
  echo "$TASKS_OWNER $id" >> "$WORK_LOG"
  if [ "$TASKS_OWNER" = agent-1 ]; then echo "$id" > "$VICTIM_MARK.tmp"; mv "$VICTIM_MARK.tmp" "$VICTIM_MARK"; sleep 600; fi
  if [ "$id" = "$BROKEN_ID" ]; then return 1; fi
  if [ "$id" = "$SLOW_ID" ]; then sleep "$SLOW"; fi
  return 0
}
"""


def wait_for(path: Path, procs: list, seconds: float) -> None:
    """Until `path` exists (woken by its rename into place, a file event), failing at once
    if an agent ended first (woken by its pidfd)."""
    ends = tuple(os.pidfd_open(proc.pid) for proc in procs)

    def appeared() -> bool:
        """the file in place, every agent still running"""
        ended = [proc.returncode for proc in procs if proc.poll() is not None]
        assert not ended, f"an agent ended before {path.name} appeared: {ended}"
        return path.exists()

    try:
        until(appeared, path.parent, IN_MOVED_TO | IN_CREATE, seconds, also=ends)
    finally:
        for fd in ends:
            os.close(fd)


def test_three_agents_in_worktrees_one_killed_finish_the_plan(tmp_path):
    env = agent_env(tmp_path) | git_env(tmp_path / "home")
    top = tmp_path / "repo"
    top.mkdir()

    def git(*args: str, cwd: Path = top) -> None:
        done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True)
        assert done.returncode == 0, (args, done.stderr)

    git("init", "-q")
    assert subprocess.run(["tasks", "init"], cwd=top, env=env, capture_output=True).returncode == 0
    ids = import_plan(TEAM_PLAN, env, top)
    git("add", "-A")
    git("commit", "-qm", "the plan")
    trees = []
    for n in (1, 2, 3):  # as the README says: a worktree and a branch per agent
        git("worktree", "add", "-q", f"../agent-{n}", "-b", f"agent-{n}")
        trees.append(tmp_path / f"agent-{n}")
    log, victim = tmp_path / "work.log", tmp_path / "victim-holds"
    env |= {
        "WORK_LOG": str(log),
        "VICTIM_MARK": str(victim),
        "GATE_MARK": str(tmp_path / "gate-failed-once"),
        "BROKEN_ID": str(ids["broken"]),
        "SLOW_ID": str(ids["slow"]),
        "SLOW": str(SLOW),
        "TASKS_LEASE": f"{LEASE}s",
        "RENEW_EVERY": str(RENEW_EVERY),
    }
    script = "set -u\n" + TEAM_WORK + readme_loop()

    def agent(n: int) -> subprocess.Popen:
        return subprocess.Popen(
            ["bash", "-c", script],
            cwd=trees[n - 1],
            env={**env, "TASKS_OWNER": f"agent-{n}"},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # its own process group: what is left of it is cleaned up at the end
        )

    started = time.monotonic()
    first = agent(1)  # alone on the board: it takes the root, the one task everything waits on
    procs = [first]
    try:
        wait_for(victim, procs, 60)
        assert int(victim.read_text()) == ids["root"]
        procs += [agent(2), agent(3)]
        first.send_signal(signal.SIGKILL)  # mid-work: the loop, not its children (they outlive it)
        killed = time.time()
        assert first.wait(timeout=60) == -signal.SIGKILL
        results = [(proc, *proc.communicate(timeout=BOUND)) for proc in procs[1:]]
        took = time.monotonic() - started
    finally:
        for proc in procs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
    for proc, _out, err in results:
        stderr = err.decode()
        assert proc.returncode == 0, (proc.returncode, stderr)
        assert "Traceback" not in stderr
        last = stderr.strip().splitlines()[-1]  # claim's exit 3, naming the stuck task
        assert "nothing is left that could come to agent-" in last and f"#{ids['broken']} stuck" in last, stderr
    assert took < BOUND

    board = top / ".tasks"  # the main worktree's board: the agents in worktrees worked this one
    records = assert_sound(board)
    journal = journal_of(board)
    completed = [entry["task"] for entry in journal if entry["event"] == "completed"]
    failed = [entry["task"] for entry in journal if entry["event"] == "failed"]
    for key, task in ids.items():
        if key == "broken":
            assert records[task]["status"] == "pending" and task not in completed
            assert failed.count(task) == 3  # stuck: ready and claim leave it out
        else:
            assert records[task]["status"] == "completed" and completed.count(task) == 1, key
    assert failed.count(ids["gated"]) == 1  # one gate failure, one failed attempt (not two)
    assert sorted(failed) == sorted([ids["gated"]] + [ids["broken"]] * 3)
    takeovers = [entry for entry in journal if entry["event"] == "takeover"]
    assert [(e["task"], e["holder"]) for e in takeovers] == [(ids["root"], "agent-1")]  # the slow one never
    moved = calendar.timegm(time.strptime(takeovers[0]["at"][:19], "%Y-%m-%dT%H:%M:%S")) + 1  # within that second
    assert moved - killed < LEASE + 0.5 + 10, "the killed agent's task waited past its lease"
    attempts = [line.split() for line in log.read_text().splitlines()]
    slow = [owner for owner, task in attempts if int(task) == ids["slow"]]
    assert len(slow) == 1  # worked once: its lease was renewed while it worked
    for tree in trees:  # the worktrees' own board files were never written
        status = subprocess.run(["git", "status", "--porcelain"], cwd=tree, env=env, capture_output=True, text=True)
        assert status.stdout == "", status.stdout
