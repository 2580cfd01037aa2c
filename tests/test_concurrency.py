"""Many real processes on one board: creators, claimers and a storm of graph changes.

Workers (tests/worker.py) are separate interpreters released together by a pipe
barrier; each call goes through the command's own entry point and takes the
board lock like any `tasks` process. What is asserted never depends on timing.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys

import pytest
from invariants import assert_sound, graph_problems, hub_board, record, scratch_left, write_board
from worker import run_together


def tasks_args(board, *args: str) -> list[str]:
    return ["--dir", str(board), *args]


def test_sixteen_tasks_processes_create_at_once(board_dir):
    """16 separate `tasks create` commands started together: ids exactly 1..16."""
    commands = [
        subprocess.Popen(
            [sys.executable, "-m", "taskboard", "--dir", str(board_dir), "create", f"job {n}", "--json"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for n in range(16)
    ]
    outputs = [command.communicate(timeout=60) for command in commands]
    assert [command.returncode for command in commands] == [0] * 16, [err for _, err in outputs]
    printed = {json.loads(out)["id"]: json.loads(out)["subject"] for out, _ in outputs}
    assert sorted(printed) == list(range(1, 17))
    records = assert_sound(board_dir)
    assert {i: r["subject"] for i, r in records.items()} == printed
    assert sorted(printed.values()) == sorted(f"job {n}" for n in range(16))


def test_sixteen_processes_each_creating_six_lose_nothing(board_dir):
    per_worker = 6
    plans = [[tasks_args(board_dir, "create", f"w{w} n{n}", "--json") for n in range(per_worker)] for w in range(16)]
    results = run_together(plans)
    ids = []
    for w, worker in enumerate(results):
        for n, result in enumerate(worker):
            assert result["exit"] == 0, result
            # nothing was killed: no create has a leftover to remove, nor anything else to say (a
            # reservation let go of while another create's recovery looked was once a "leftover")
            assert not result["stderr"].strip(), result
            created = json.loads(result["stdout"])
            assert created["subject"] == f"w{w} n{n}"
            ids.append(created["id"])
        mine = [json.loads(result["stdout"])["id"] for result in worker]
        assert mine == sorted(mine), "one process's creates got ids out of order"
    total = 16 * per_worker
    assert sorted(ids) == list(range(1, total + 1)), "a duplicate or lost id"
    records = assert_sound(board_dir)
    assert sorted(records) == list(range(1, total + 1))
    assert sorted(r["subject"] for r in records.values()) == sorted(
        f"w{w} n{n}" for w in range(16) for n in range(per_worker)
    )
    assert len({r["uid"] for r in records.values()}) == total


def test_twelve_claimers_five_ready_tasks(board_dir):
    # 1..5 ready; 6 blocked by 1; 7 reserved by someone else; 8 completed
    write_board(
        board_dir,
        [
            record(1, blocks=[6]),
            *(record(i) for i in range(2, 6)),
            record(6, blocked_by=[1]),
            record(7, owner="zed"),
            record(8, status="completed"),
        ],
    )
    results = [
        worker[0]
        for worker in run_together([[tasks_args(board_dir, "claim", "--owner", f"w{w}", "--json")] for w in range(12)])
    ]
    winners = {f"w{w}": json.loads(r["stdout"])["id"] for w, r in enumerate(results) if r["exit"] == 0}
    losers = [r for r in results if r["exit"] != 0]
    assert len(winners) == 5
    assert sorted(winners.values()) == [1, 2, 3, 4, 5]
    assert len(losers) == 7
    for loser in losers:
        assert loser["exit"] == 3, loser
        assert loser["stdout"] == ""
        assert json.loads(loser["stderr"].splitlines()[-1])["error"]["code"] == "not_found"
    records = assert_sound(board_dir)
    for owner, task_id in winners.items():
        assert records[task_id]["status"] == "in_progress"
        assert records[task_id]["owner"] == owner
    assert (records[6]["status"], records[6]["owner"]) == ("pending", "")
    assert (records[7]["status"], records[7]["owner"]) == ("pending", "zed")
    assert records[8]["status"] == "completed"


def test_twelve_claimers_one_task_exactly_one_wins(board_dir):
    write_board(board_dir, [record(1)])
    results = [
        worker[0]
        for worker in run_together(
            [[tasks_args(board_dir, "claim", "1", "--owner", f"w{w}", "--json")] for w in range(12)]
        )
    ]
    winners = [w for w, r in enumerate(results) if r["exit"] == 0]
    assert len(winners) == 1
    holder = f"w{winners[0]}"
    for w, result in enumerate(results):
        if w != winners[0]:
            assert result["exit"] == 4, result
            assert f"#1 is held by {holder}" in result["stderr"]
    assert assert_sound(board_dir)[1]["owner"] == holder


def storm_plan(board, rng: random.Random, tasks: int, steps: int) -> list[list[str]]:
    calls = []
    for _ in range(steps):
        a, b = rng.randint(1, tasks), rng.randint(1, tasks)
        kind = rng.choice(["add", "add", "remove", "complete", "reopen", "start"])
        if kind == "add":
            calls.append(tasks_args(board, "update", str(a), "--add-blocks", str(b), "--json"))
        elif kind == "remove":
            calls.append(tasks_args(board, "update", str(a), "--remove-blocks", str(b), "--json"))
        elif kind == "complete":
            calls.append(tasks_args(board, "update", str(a), "--status", "completed", "--json"))
        elif kind == "reopen":
            calls.append(tasks_args(board, "update", str(a), "--status", "pending", "--json"))
        else:
            calls.append(tasks_args(board, "update", str(a), "--status", "in_progress", "--json"))
    return calls


@pytest.mark.parametrize("seed", [20261129, 7])
def test_storm_of_graph_changes_from_eight_processes(board_dir, seed, run):
    rng = random.Random(seed)
    tasks = 14
    hub_board(board_dir, dependents=5)  # #1 blocks #2..#6
    write_board(board_dir, [record(i) for i in range(7, tasks + 1)])
    plans = [storm_plan(board_dir, rng, tasks, 30) for _ in range(8)]
    # a ninth process only reads: every listing it gets must be a consistent board
    plans.append([tasks_args(board_dir, "list", "--all", "--json")] * 30)
    results = run_together(plans)
    codes = [result["exit"] for worker in results[:8] for result in worker]
    assert set(codes) <= {0, 4}, [r for worker in results for r in worker if r["exit"] not in (0, 4)]
    assert codes.count(0) > 0
    for worker in results[:8]:
        for result in worker:
            if result["exit"] == 4:  # a refusal names the tasks involved
                assert "#" in json.loads(result["stderr"].splitlines()[-1])["error"]["message"]
    for snapshot in results[8]:
        assert snapshot["exit"] == 0, snapshot
        listed = {r["id"]: r for r in json.loads(snapshot["stdout"])}
        assert sorted(listed) == list(range(1, tasks + 1))
        assert graph_problems(listed) == [], "a reader saw a half-applied change"
    assert_sound(board_dir)
    checked = run("check", "--json")
    assert json.loads(checked.stdout) == {"ok": True, "problems": []}
    assert scratch_left(board_dir) == []


def test_the_board_lock_is_the_one_filelock_takes(board_dir, run):
    """DESIGN §6 names `filelock`; tasks takes the same kernel lock on `.tasks/.lock` without
    importing it, so a process holding a filelock.FileLock keeps every tasks writer and reader
    out, and they go on once it lets go."""
    from conftest import tasks_process
    from filelock import FileLock

    run("create", "one")
    before = sorted(p.name for p in board_dir.iterdir())
    lock = FileLock(str(board_dir / ".lock"), timeout=5)
    with lock:
        for args in (("create", "two"), ("update", "1", "--status", "completed"), ("list",), ("get", "1")):
            held = tasks_process("--dir", str(board_dir), "--timeout", "0.3", *args, "--json")
            assert held.returncode == 5, (args, held.stderr)
            assert json.loads(held.stderr.decode().splitlines()[-1])["error"]["code"] == "busy"
        assert sorted(p.name for p in board_dir.iterdir()) == before
        assert run.record(1)["status"] == "pending"
    done = tasks_process("--dir", str(board_dir), "--timeout", "5", "create", "two", "--json")
    assert done.returncode == 0 and json.loads(done.stdout)["id"] == 2
