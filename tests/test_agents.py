"""Agents at work, as real processes: the README's loop (`claim --wait`, `done`,
`release --failed`) run by three and five agents over a 20-task plan until it is
finished, a leased holder killed with SIGKILL and its task taken over, failures that
end in a stuck task instead of a hot loop, and agents racing across the worktrees
of one clone (real `git worktree add`).

Nothing here sleeps to let something happen: a waiting claim returns when the board
lets it, and every process is bounded by a timeout that only a hang would reach.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from invariants import assert_sound, record, write_board
from watching import IN_CREATE, until
from worker import run_together

# The README's agent loop, in bash. `work ID` is the job (the test defines it); the
# claim's exit status is logged when the loop ends (3: nothing left for this agent).
AGENT = r"""
set -u
tasks() { "$PYTHON" -m taskboard --dir "$BOARD" "$@"; }
while true; do
  task=$(tasks claim --wait --lease "$LEASE" --json 2>>"$LOG.err") || { echo "end $?" >> "$LOG"; break; }
  id=$(printf '%s' "$task" | "$PYTHON" -c 'import json, sys; print(json.load(sys.stdin)["id"])')
  echo "claimed $id" >> "$LOG"
  if work "$id"; then
    tasks done "$id" --json > /dev/null 2>>"$LOG.err" || echo "done failed $id" >> "$LOG"
  else
    tasks release "$id" --failed --note "it broke for $TASKS_OWNER" --json > /dev/null 2>>"$LOG.err"
  fi
done
"""


def start_agent(board: Path, name: str, logs: Path, work: str = "true", lease: str = "15m") -> subprocess.Popen:
    """One agent process running the loop as `name`; `work` is the body of `work()`."""
    script = f"work() {{ {work}; }}\n{AGENT}"
    env = {
        **os.environ,
        "PYTHON": sys.executable,
        "BOARD": str(board),
        "LOG": str(logs / name),
        "TASKS_OWNER": name,
        "LEASE": lease,
    }
    env.pop("TASKS_LEASE", None)
    return subprocess.Popen(["bash", "-c", script], env=env, start_new_session=True)


def finish(agents: list[subprocess.Popen], timeout: float = 240) -> None:
    try:
        for agent in agents:
            agent.wait(timeout=timeout)
    finally:
        for agent in agents:
            if agent.poll() is None:
                os.killpg(agent.pid, signal.SIGKILL)
                agent.wait()
    assert [agent.returncode for agent in agents] == [0] * len(agents)


def log_of(logs: Path, name: str) -> list[str]:
    path = logs / name
    return path.read_text().splitlines() if path.exists() else []


def claimed(lines: list[str]) -> list[int]:
    return [int(line.split()[1]) for line in lines if line.startswith("claimed ")]


def tasks(board: Path, *args: str, expect: int | None = 0, timeout: float = 60) -> subprocess.CompletedProcess:
    env = {key: value for key, value in os.environ.items() if not key.startswith("TASKS_")}
    result = subprocess.run(
        [sys.executable, "-m", "taskboard", "--dir", str(board), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )
    if expect is not None:
        assert result.returncode == expect, (args, result.returncode, result.stdout, result.stderr)
    return result


def plan_of_twenty(board: Path, seed: int = 9) -> dict[int, list[int]]:
    """A 20-task DAG: a few roots, every other task waiting on one to three earlier
    ones. Returns each task's blockers."""
    rng = random.Random(seed)
    blockers = {
        i: sorted(rng.sample(range(1, i), min(i - 1, rng.choice([1, 1, 2, 3])))) if i > 3 else [] for i in range(1, 21)
    }
    dependents: dict[int, list[int]] = {i: [] for i in blockers}
    for task, before in blockers.items():
        for blocker in before:
            dependents[blocker].append(task)
    write_board(board, [record(i, blocked_by=blockers[i], blocks=dependents[i]) for i in blockers])
    return blockers


# -- a plan finished together -----------------------------------------------------------------


@pytest.mark.parametrize("count", [3, 5])
def test_agents_finish_a_plan_together_and_their_loops_end(board_dir, tmp_path, count):
    blockers = plan_of_twenty(board_dir)
    logs = tmp_path / "logs"
    logs.mkdir()
    finish([start_agent(board_dir, f"agent-{n}", logs) for n in range(count)])

    lines = {f"agent-{n}": log_of(logs, f"agent-{n}") for n in range(count)}
    for name, log in lines.items():
        assert log[-1] == "end 3", (name, log, (logs / f"{name}.err").read_text())
        assert not [line for line in log if line.startswith("done failed")], (name, log)
    everything = sorted(task for log in lines.values() for task in claimed(log))
    assert everything == list(range(1, 21)), "every task is claimed exactly once"
    records = assert_sound(board_dir)
    assert {r["status"] for r in records.values()} == {"completed"}
    events = json.loads(tasks(board_dir, "log", "--json").stdout)
    completions = sorted(e["task"] for e in events if e["event"] == "completed")
    assert completions == list(range(1, 21)), "every task completed once"
    finished_by = {e["task"]: e["actor"] for e in events if e["event"] == "completed"}
    for name, log in lines.items():
        assert all(finished_by[task] == name for task in claimed(log))
    order = [e["task"] for e in events if e["event"] == "completed"]
    for task, before in blockers.items():  # nobody started a task before its blockers were done
        started = next(i for i, e in enumerate(events) if e["task"] == task and e["event"] == "claimed")
        done_at = {
            t: next(i for i, e in enumerate(events) if e["task"] == t and e["event"] == "completed") for t in before
        }
        assert all(at < started for at in done_at.values()), (task, before)
    assert len(order) == 20


# -- a holder killed while it held a lease ---------------------------------------------------------


def test_a_killed_leased_holder_is_taken_over_once_its_lease_runs_out(board_dir):
    write_board(board_dir, [record(1, blocks=[2]), record(2, blocked_by=[1])])
    env = {key: value for key, value in os.environ.items() if not key.startswith("TASKS_")}
    holder = subprocess.Popen(
        [
            "bash",
            "-c",
            f'"{sys.executable}" -m taskboard --dir "{board_dir}" --as agent-c claim 1 --lease 2s --json'
            " && echo claimed && exec cat",  # then "works" until killed
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    try:
        assert holder.stdout.readline().startswith("{")
        assert holder.stdout.readline() == "claimed\n"
        os.killpg(holder.pid, signal.SIGKILL)
    finally:
        holder.wait(timeout=30)
    assert json.loads((board_dir / "task_1.json").read_text())["owner"] == "agent-c"
    took = tasks(board_dir, "--as", "agent-d", "claim", "--wait", "60", "--json")
    assert json.loads(took.stdout)["id"] == 1
    assert "took #1 over from agent-c" in took.stderr
    assert json.loads((board_dir / "task_1.json").read_text())["owner"] == "agent-d"
    events = json.loads(tasks(board_dir, "log", "1", "--json").stdout)
    takeover = [e for e in events if e["event"] == "takeover"]
    assert len(takeover) == 1 and takeover[0]["holder"] == "agent-c" and takeover[0]["by"] == "agent-d"
    # agent-c, restarted, finds its claim gone
    assert "held by agent-d" in tasks(board_dir, "--as", "agent-c", "renew", "1", expect=4).stderr
    assert tasks(board_dir, "--as", "agent-c", "done", "1", expect=4).returncode == 4
    tasks(board_dir, "--as", "agent-d", "done", "1")
    assert json.loads(tasks(board_dir, "--as", "agent-d", "claim", "--json").stdout)["id"] == 2
    assert_sound(board_dir)


def test_a_lease_running_out_wakes_a_waiting_agent(board_dir):
    write_board(board_dir, [record(1)])
    tasks(board_dir, "--as", "agent-c", "claim", "--lease", "1s")
    # nothing is claimable now; the lease will run out while agent-d waits
    took = tasks(board_dir, "--as", "agent-d", "claim", "--wait", "--json")
    assert json.loads(took.stdout)["owner"] == "agent-d"


# -- an agent killed and restarted under its own name ------------------------------------------------


def test_a_restarted_agent_resumes_its_own_task_once_its_lease_runs_out(board_dir):
    """The same name after a restart: its own task whose lease ran out comes back to it, in
    ready order, as anyone's would; it is not "held by you" (which ended its loop, exit 3,
    while another agent could take the task over)."""
    write_board(board_dir, [record(1, blocks=[2]), record(2, blocked_by=[1])])
    tasks(board_dir, "--as", "agent-a", "claim", "--lease", "1s")
    # the lease still runs: a waiting claim waits for it (no exit 3) and takes the task back
    took = tasks(board_dir, "--as", "agent-a", "claim", "--wait", "30", "--lease", "1s", "--json")
    assert json.loads(took.stdout)["id"] == 1 and json.loads(took.stdout)["owner"] == "agent-a"
    assert "resumed #1: your lease on it ran out at" in took.stderr, took.stderr
    # the lease ran out before the claim (polled, not slept): a plain claim resumes it at once
    while "lease expired" not in tasks(board_dir, "get", "1").stdout:
        pass
    again = tasks(board_dir, "--as", "agent-a", "claim", "--lease", "30s", "--json")
    assert json.loads(again.stdout)["id"] == 1, again.stderr
    assert "resumed #1" in again.stderr
    refused = tasks(board_dir, "--as", "agent-b", "claim", expect=3)  # it is agent-a's again, leased anew
    assert "#1 held by agent-a" in refused.stderr, refused.stderr
    assert json.loads((board_dir / "task_1.json").read_text())["owner"] == "agent-a"
    events = json.loads(tasks(board_dir, "log", "1", "--json").stdout)
    claims = [e for e in events if e["event"] == "claimed"]
    assert [(e["actor"], e.get("resumed"), e.get("lease")) for e in claims] == [
        ("agent-a", None, 1),
        ("agent-a", True, 1),
        ("agent-a", True, 30),
    ], claims
    assert all(e.get("expired") for e in claims[1:])
    assert not [e for e in events if e["event"] == "takeover"], "nobody took it over from anyone"
    # a claim without a lease never runs out: its holder's waiting claim does not wait on itself
    tasks(board_dir, "--as", "agent-a", "done", "1")
    tasks(board_dir, "--as", "agent-a", "claim", "2")
    ended = tasks(board_dir, "--as", "agent-a", "claim", "--wait", "30", expect=3)
    assert "nothing is left that could come to agent-a: #2 held by you" in ended.stderr, ended.stderr
    assert_sound(board_dir)


def test_an_agent_killed_holding_a_leased_task_and_restarted_finishes_the_plan(board_dir, tmp_path):
    """The README's loop with a lease, killed (SIGKILL) while it works on #1, which the
    rest of the plan waits on, then started again under the same name: it waits out its
    lease, resumes #1 and finishes the plan (its loop used to end at once, exit 3,
    "#1 held by you", leaving the plan unfinished)."""
    write_board(board_dir, [record(1, blocks=[2, 3]), record(2, blocked_by=[1]), record(3, blocked_by=[1])])
    logs = tmp_path / "logs"
    logs.mkdir()
    hangs = f'[ "$1" != 1 ] || [ -e "{tmp_path}/once" ] || {{ touch "{tmp_path}/once"; exec sleep 600; }}'
    first = start_agent(board_dir, "agent-a", logs, work=hangs, lease="2s")
    try:

        def working() -> bool:
            """agent-a claimed #1 and works on it (its marker made)"""
            assert first.poll() is None, log_of(logs, "agent-a")
            return (tmp_path / "once").exists()

        until(working, tmp_path, IN_CREATE, seconds=60)  # woken by the marker's creation, no poll
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(timeout=30)
    assert log_of(logs, "agent-a") == ["claimed 1"]
    assert json.loads((board_dir / "task_1.json").read_text())["owner"] == "agent-a"
    finish([start_agent(board_dir, "agent-a", logs, work=hangs, lease="2s")], timeout=120)
    log, said = log_of(logs, "agent-a"), (logs / "agent-a.err").read_text()
    assert log == ["claimed 1", "claimed 1", "claimed 2", "claimed 3", "end 3"], (log, said)
    records = assert_sound(board_dir)
    assert {r["status"] for r in records.values()} == {"completed"}
    events = json.loads(tasks(board_dir, "log", "1", "--json").stdout)
    assert [e.get("resumed") for e in events if e["event"] == "claimed"] == [None, True]


# -- failure without a hot loop ---------------------------------------------------------------------


def test_one_agent_does_not_take_back_what_it_failed_while_other_work_exists(board_dir, tmp_path):
    write_board(board_dir, [record(1, blocks=[5]), record(2), record(3), record(4), record(5, blocked_by=[1])])
    logs = tmp_path / "logs"
    logs.mkdir()
    finish([start_agent(board_dir, "solo", logs, work='[ "$1" != 1 ]')])
    log = log_of(logs, "solo")
    # #1 fails; the other work comes first; then #1 again until it is stuck; #5 waits on it for good
    assert claimed(log) == [1, 2, 3, 4, 1, 1], log
    assert log[-1] == "end 3"
    stuck = tasks(board_dir, "--as", "someone", "claim", "1", expect=4)
    assert "#1 is stuck: it failed 3 times" in stuck.stderr and "--retry" in stuck.stderr
    assert json.loads(tasks(board_dir, "ready", "--json").stdout) == []
    events = json.loads(tasks(board_dir, "log", "1", "--json").stdout)
    failures = [e for e in events if e["event"] == "failed"]
    assert [e["attempts"] for e in failures] == [1, 2, 3]
    assert all(e["note"] == "it broke for solo" for e in failures)


def test_agents_failing_a_task_leave_it_stuck_and_their_loops_end(board_dir, tmp_path):
    write_board(
        board_dir,
        [record(1, blocks=[7]), *(record(i) for i in range(2, 7)), record(7, blocked_by=[1])],
    )
    logs = tmp_path / "logs"
    logs.mkdir()
    names = ["agent-a", "agent-b", "agent-c"]
    finish([start_agent(board_dir, name, logs, work='[ "$1" != 1 ]') for name in names])
    lines = {name: log_of(logs, name) for name in names}
    assert all(log[-1] == "end 3" for log in lines.values()), lines
    attempts_at_1 = sum(claimed(log).count(1) for log in lines.values())
    assert attempts_at_1 == 3, lines  # stuck after three failures, never offered again
    others = sorted(task for log in lines.values() for task in claimed(log) if task != 1)
    assert others == [2, 3, 4, 5, 6]
    records = assert_sound(board_dir)
    assert records[1]["status"] == "pending" and records[7]["status"] == "pending"
    tasks(board_dir, "update", "1", "--status", "pending", "--retry")
    assert [r["id"] for r in json.loads(tasks(board_dir, "ready", "--json").stdout)] == [1]


# -- claim --wait decides when to stop --------------------------------------------------------------


@pytest.mark.parametrize(
    "layout",
    [
        "everything done",
        "only my own task in progress",
        "reserved for someone else",
        "blocked by my own task",
        "stuck",
        "blocked by a stuck task",
    ],
)
def test_waiting_ends_at_once_when_nothing_could_come(board_dir, layout):
    if layout == "everything done":
        write_board(board_dir, [record(1, status="completed")])
    elif layout == "only my own task in progress":
        write_board(board_dir, [record(1, status="in_progress", owner="me")])
    elif layout == "reserved for someone else":
        write_board(board_dir, [record(1, owner="zed")])
    elif layout == "blocked by my own task":
        write_board(board_dir, [record(1, status="in_progress", owner="me", blocks=[2]), record(2, blocked_by=[1])])
    else:
        write_board(board_dir, [record(1, blocks=[2]), record(2, blocked_by=[1])][: 1 if layout == "stuck" else 2])
        for _ in range(3):
            tasks(board_dir, "--as", "zed", "claim", "1")
            tasks(board_dir, "--as", "zed", "release", "1", "--failed")
    result = tasks(board_dir, "--as", "me", "claim", "--wait", "--json", expect=3)
    error = json.loads(result.stderr.strip().splitlines()[-1])["error"]
    assert error["code"] == "not_found" and "nothing is left that could come to me" in error["message"]


def test_a_waiting_agent_gets_the_task_its_blocker_frees(board_dir):
    write_board(board_dir, [record(1, status="in_progress", owner="ann", blocks=[2]), record(2, blocked_by=[1])])
    env = {key: value for key, value in os.environ.items() if not key.startswith("TASKS_")}
    waiter = subprocess.Popen(
        [sys.executable, "-m", "taskboard", "--dir", str(board_dir), "--as", "bob", "claim", "--wait", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        # whether bob is already waiting or not yet, the board lock is free for others
        tasks(board_dir, "--timeout", "5", "create", "meanwhile")
        tasks(board_dir, "--as", "ann", "done", "1")
        out, err = waiter.communicate(timeout=60)
    finally:
        if waiter.poll() is None:
            waiter.kill()
            waiter.wait()
    assert waiter.returncode == 0, err
    assert json.loads(out)["id"] in (2, 3)  # #3 ("meanwhile") or #2, whichever was claimable first
    assert_sound(board_dir)


def test_waiting_for_one_task(board_dir):
    write_board(board_dir, [record(1, status="in_progress", owner="ann"), record(2, owner="zed")])
    refused = tasks(board_dir, "--as", "bob", "claim", "2", "--wait", expect=4)  # reserved: it can never come
    assert "#2 is held by zed" in refused.stderr
    timed_out = tasks(board_dir, "--as", "bob", "claim", "1", "--wait", "0.2", "--json", expect=3)
    assert "did not become claimable" in json.loads(timed_out.stderr.strip().splitlines()[-1])["error"]["message"]
    env = {key: value for key, value in os.environ.items() if not key.startswith("TASKS_")}
    waiter = subprocess.Popen(
        [sys.executable, "-m", "taskboard", "--dir", str(board_dir), "--as", "bob", "claim", "1", "--wait", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        tasks(board_dir, "--as", "ann", "release", "1")
        out, err = waiter.communicate(timeout=60)
    finally:
        if waiter.poll() is None:
            waiter.kill()
            waiter.wait()
    assert waiter.returncode == 0, err
    assert json.loads(out)["owner"] == "bob"


def test_waiting_without_an_id_times_out(board_dir):
    write_board(board_dir, [record(1, status="in_progress", owner="ann")])
    result = tasks(board_dir, "--as", "bob", "claim", "--wait", "0.3", expect=3)
    assert "waited 0.3 s; no task became claimable for bob" in result.stderr


# -- worktrees of one clone ----------------------------------------------------------------------------


def git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture
def worktrees(tmp_path) -> list[Path]:
    """A clone with a 5-task board committed, and two more worktrees of it: the three boards."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git("init", "-q", "-b", "main", cwd=repo)
    git("config", "user.email", "t@example.com", cwd=repo)
    git("config", "user.name", "t", cwd=repo)
    write_board(repo / ".tasks", [record(i) for i in range(1, 6)])
    git("add", "-A", cwd=repo)
    git("commit", "-qm", "plan", cwd=repo)
    for name in ("two", "three"):
        git("worktree", "add", "-q", "-b", name, str(tmp_path / name), cwd=repo)
    return [repo / ".tasks", tmp_path / "two" / ".tasks", tmp_path / "three" / ".tasks"]


def test_racing_for_one_task_across_three_worktrees_one_wins(worktrees):
    plans = [
        [["--dir", str(board), "claim", "1", "--owner", f"w{n}-{k}", "--json"]]
        for n, board in enumerate(worktrees)
        for k in range(4)
    ]
    results = [worker[0] for worker in run_together(plans)]
    winners = [n for n, result in enumerate(results) if result["exit"] == 0]
    assert len(winners) == 1, [(r["exit"], r["stderr"]) for r in results]
    for n, result in enumerate(results):
        if n != winners[0]:
            assert result["exit"] == 4, result
    owners = [json.loads((board / "task_1.json").read_text())["owner"] for board in worktrees]
    assert sorted(owners) == ["", "", json.loads(results[winners[0]]["stdout"])["owner"]]


def test_racing_for_the_next_task_across_three_worktrees(worktrees):
    plans = [
        [["--dir", str(board), "claim", "--owner", f"w{n}-{k}", "--json"]]
        for n, board in enumerate(worktrees)
        for k in range(4)
    ]
    results = [worker[0] for worker in run_together(plans)]
    won = [json.loads(result["stdout"]) for result in results if result["exit"] == 0]
    assert sorted(task["id"] for task in won) == [1, 2, 3, 4, 5], "each task to exactly one agent"
    assert sorted(result["exit"] for result in results if result["exit"] != 0) == [3] * 7
    for board in worktrees:  # nothing is offered anywhere any more
        assert json.loads(tasks(board, "ready", "--json").stdout) == []
        assert_sound(board)
    for task in won:  # each worktree's own files say who holds what it handed out
        held = [json.loads((board / f"task_{task['id']}.json").read_text())["owner"] for board in worktrees]
        assert held.count(task["owner"]) == 1 and held.count("") == 2
