"""Acceptance gates and reopening, through the real command: gates that pass, fail and
hang (their whole process group killed), --force, the lock dance, and what never runs
a gate. Boards and journals are judged by tests/invariants.py."""

from __future__ import annotations

import json
import os
import sys

import pytest
from conftest import tasks_process
from invariants import assert_sound, load_journal, snapshot


def journal_events(board, task=None, event=None) -> list[dict]:
    return [
        e for e in load_journal(board) if (task is None or e["task"] == task) and (event is None or e["event"] == event)
    ]


@pytest.fixture
def repo(tmp_path):
    """A work tree (a `.git` folder is what marks its top) with the board inside a subfolder."""
    top = tmp_path / "repo"
    (top / ".git").mkdir(parents=True)
    (top / "sub").mkdir()
    return top


def tasks(repo, *args, **kwargs):
    return tasks_process("--dir", str(repo / "sub" / ".tasks"), *args, cwd=repo / "sub", **kwargs)


def test_a_passing_gate_completes_in_the_top_of_the_work_tree(repo):
    board = repo / "sub" / ".tasks"
    assert tasks(repo, "create", "parser", "--gate", "pwd > where.txt; echo fine", "--accept", "parses").returncode == 0
    assert tasks(repo, "create", "tests", "--blocked-by", "1").returncode == 0
    record = json.loads(tasks(repo, "get", "1", "--json").stdout)
    assert record["metadata"] == {"accept": "parses", "gate": "pwd > where.txt; echo fine"}
    done = tasks(repo, "done", "1", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] == "completed"
    assert (repo / "where.txt").read_text().strip() == str(repo)
    completed = journal_events(board, 1, "completed")
    assert len(completed) == 1
    assert {k: completed[0]["gate"][k] for k in ("command", "exit")} == {
        "command": "pwd > where.txt; echo fine",
        "exit": 0,
    }
    assert_sound(board)


def test_the_gate_runs_in_the_boards_parent_outside_a_work_tree(tmp_path, run, board_dir):
    run("create", "x", "--gate", "pwd > where.txt")
    run("update", "1", "--status", "completed")
    assert (board_dir.parent / "where.txt").read_text().strip() == str(board_dir.parent)


def test_a_failing_gate_completes_nothing_and_records_the_attempt(run, board_dir):
    run("create", "parser", "--gate", "echo compiling; echo 'error: 3 tests failed' >&2; exit 3")
    run("create", "tests", "--blocked-by", "1")
    run("--as", "alice", "claim", "1")
    before = {name: data for name, data in snapshot(board_dir).items() if name.startswith("task_")}
    result = run("--as", "alice", "update", "1", "--status", "completed", "--json", expect=7)
    assert result.stdout == ""
    error = json.loads(result.stderr.splitlines()[-1])["error"]
    assert error["code"] == "gate_failed" and error["exit"] == 7
    assert "exit status 3" in error["message"] and "error: 3 tests failed" in error["message"]
    assert {name: data for name, data in snapshot(board_dir).items() if name.startswith("task_")} == before
    failed = journal_events(board_dir, 1, "failed")
    assert len(failed) == 1 and failed[0]["actor"] == "alice"
    assert failed[0]["gate"]["exit"] == 3
    assert "compiling" in failed[0]["gate"]["output"] and "3 tests failed" in failed[0]["gate"]["output"]
    assert journal_events(board_dir, 1, "completed") == []
    plain = run("--as", "alice", "done", "1", expect=7)
    assert "was not completed" in plain.stderr and "| error: 3 tests failed" in plain.stderr
    assert [e["attempts"] for e in journal_events(board_dir, 1, "failed")] == [1, 2]
    run("--as", "alice", "done", "1", expect=7)  # the third failure: stuck (the runtime state counts them)
    run("release", "1", "--force")
    assert "stuck" in run("--as", "bob", "claim", "1", "--json", expect=4).stderr
    assert_sound(board_dir)


def test_a_hanging_gate_is_killed_with_its_whole_process_group(run, board_dir, tmp_path):
    pids = tmp_path / "pids"
    # a background grandchild that would outlive a kill of the shell alone
    gate = f"sleep 300 & echo $! > {pids}; echo started; sleep 300"
    run("create", "hangs", "--gate", gate)
    result = run("update", "1", "--status", "completed", "--gate-timeout", "0.5", "--json", expect=7)
    error = json.loads(result.stderr.splitlines()[-1])["error"]
    assert error["code"] == "gate_failed" and "timed out" in error["message"]
    grandchild = int(pids.read_text())
    with pytest.raises(ProcessLookupError):
        _signal_when_gone(grandchild)
    failed = journal_events(board_dir, 1, "failed")
    assert failed[0]["gate"]["timedOut"] is True and failed[0]["gate"]["exit"] is None
    assert "started" in failed[0]["gate"]["output"]
    assert run.record(1)["status"] == "pending"


def _signal_when_gone(pid: int) -> None:
    """Signal 0 to pid once it is reaped or a zombie of init: raises ProcessLookupError
    when it no longer exists. A killed grandchild is reaped by init; wait for that
    without a clock (the kill already happened: this only waits for the reaping)."""
    while True:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                state = stat.read().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            os.kill(pid, 0)  # gone: raises ProcessLookupError
            return
        if state not in ("Z", "X"):
            os.kill(pid, 0)
            raise AssertionError(f"gate grandchild {pid} still runs (state {state})")
        os.sched_yield()


def test_force_completes_without_running_the_gate_and_says_so(run, board_dir, tmp_path):
    marker = tmp_path / "ran"
    run("create", "x", "--gate", f"touch {marker}; exit 1")
    record = run.json("--as", "bob", "done", "1", "--force")
    assert record["status"] == "completed"
    assert not marker.exists()
    completed = journal_events(board_dir, 1, "completed")[0]
    assert completed["gate"] == {"command": f"touch {marker}; exit 1", "overridden": True}
    forced = journal_events(board_dir, 1, "forced")
    assert [(e["actor"], e["overrode"]) for e in forced] == [("bob", "gate")]


def test_a_gate_never_runs_on_reads_checks_or_other_changes(run, board_dir, tmp_path):
    marker = tmp_path / "ran"
    run("create", "x", "--gate", f"touch {marker}")
    run("create", "y", "--blocked-by", "1")
    for args in (
        ["get", "1"],
        ["get", "1", "--json"],
        ["list"],
        ["ready", "--json"],
        ["board", "--json"],
        ["graph"],
        ["check"],
        ["check", "--fix"],
        ["log"],
        ["update", "1", "--subject", "renamed"],
        ["update", "1", "--status", "in_progress"],
        ["note", "1", "hi"],
    ):
        run(*args)
    assert not marker.exists()


def test_no_gate_runs_from_an_unsound_task_file(run, board_dir, tmp_path):
    marker = tmp_path / "ran"
    run("create", "x", "--gate", f"touch {marker}")
    run("create", "y", "--blocked-by", "1")
    dependent = json.loads((board_dir / "task_2.json").read_text())
    dependent["blockedBy"] = []  # a hand edit: #1 blocks #2 on one side only
    (board_dir / "task_2.json").write_text(json.dumps(dependent, indent=2) + "\n")
    result = run("done", "1", "--json", expect=4)
    assert "gate is not run" in json.loads(result.stderr.splitlines()[-1])["error"]["message"]
    assert not marker.exists()
    assert run.record(1)["status"] == "pending"


def test_no_gate_runs_that_check_reports_as_input_would_refuse_it(run, board_dir, tmp_path):
    """A gate written by hand over two lines is what `check` reports (rule metadata); the
    gate is then not run either, and nothing is completed."""
    marker = tmp_path / "ran"
    run("create", "x", "--gate", "true")
    record = json.loads((board_dir / "task_1.json").read_text())
    record["metadata"]["gate"] = f"true\ntouch {marker}"
    (board_dir / "task_1.json").write_text(json.dumps(record, indent=2) + "\n")
    assert any(p["rule"] == "metadata" for p in json.loads(run("check", "--json", expect=6).stdout)["problems"])
    result = run("done", "1", "--json", expect=4)
    message = json.loads(result.stderr.splitlines()[-1])["error"]["message"]
    assert "gate is not run" in message and "control character" in message
    assert not marker.exists()
    assert run.record(1)["status"] == "pending"


def test_refusals_come_before_the_gate_runs(run, board_dir, tmp_path):
    marker = tmp_path / "ran"
    run("create", "first")
    run("create", "x", "--gate", f"touch {marker}", "--blocked-by", "1")
    run("done", "2", expect=4)  # blocked
    run("update", "1", "--status", "completed")
    run("--as", "alice", "claim", "2")
    run("--as", "bob", "done", "2", expect=4)  # held by alice
    run("done", "9", expect=3)
    assert not marker.exists()


def test_the_gate_runs_outside_the_lock_and_a_change_meanwhile_refuses(run, board_dir):
    tasks = f"{sys.executable} -m taskboard --dir {board_dir} --timeout 5"
    # the gate itself changes the board: possible only because no lock is held while it runs
    run("create", "noted", "--gate", f"{tasks} note 1 'from the gate'")
    record = run.json("done", "1")
    assert record["status"] == "completed"
    assert [e["text"] for e in journal_events(board_dir, 1, "note")] == ["from the gate"]
    # a gate that changes its own task's gate: the completion sees the change and refuses
    run("create", "raced", "--gate", f"{tasks} update 2 --gate true")
    result = run("done", "2", "--json", expect=4)
    assert "changed while its gate ran" in result.stderr
    assert run.record(2)["status"] == "pending"
    assert journal_events(board_dir, 2, "completed") == []


def test_setting_and_removing_gate_and_acceptance(run, board_dir):
    run("create", "x")
    run("update", "1", "--gate", "make test", "--accept", "green CI")
    assert run.record(1)["metadata"] == {"accept": "green CI", "gate": "make test"}
    run("update", "1", "--gate", "", "--accept", "")
    assert run.record(1)["metadata"] == {}
    run("update", "1", "--status", "completed")  # no gate left: nothing runs


@pytest.mark.parametrize(
    "args",
    [
        ["update", "1", "--status", "completed", "--gate-timeout", "0"],
        ["update", "1", "--status", "completed", "--gate-timeout", "-5"],
        ["update", "1", "--status", "completed", "--gate-timeout", "x"],
        ["update", "1", "--status", "completed", "--gate-timeout", "nan"],
        ["done", "1", "--gate-timeout", "inf"],
        ["update", "1", "--gate", "make\ntest"],
        ["update", "1", "--gate", "x" * 5000],
        ["update", "1", "--accept", "bell\x07"],
        ["update", "1", "--meta", "gate=5"],
        ["create", "y", "--gate", "a\x1b[31mb"],
        ["reopen", "1"],  # not completed: refused
        ["reopen", "9"],
        ["reopen", "x"],
    ],
)
def test_bad_gate_and_reopen_input_changes_nothing(run, board_dir, args, tmp_path):
    marker = tmp_path / "ran"
    run("create", "x", "--gate", f"touch {marker}")
    before = snapshot(board_dir)
    result = run(*args, "--json", expect=None)
    assert result.exit_code in (2, 3, 4), (args, result.exit_code, result.stderr)
    assert "Traceback" not in result.stderr
    assert snapshot(board_dir) == before
    assert not marker.exists()


# -- reopen ----------------------------------------------------------------------------------


def test_reopen_puts_the_task_back_in_its_dependents_blockers(run, board_dir):
    run("create", "a")
    run("create", "b", "--blocked-by", "1")
    run("--as", "alice", "claim", "1")
    run("done", "1")
    record = run.json("reopen", "1", "--note", "broke the build")
    assert record["status"] == "pending" and record["owner"] == "alice"  # who did the work stays visible
    assert run.record(2)["blockedBy"] == [1]
    reopened = journal_events(board_dir, 1, "reopened")
    assert len(reopened) == 1 and "cascade" not in reopened[0]
    assert [e["text"] for e in journal_events(board_dir, 1, "note")] == ["broke the build"]
    assert_sound(board_dir)


def test_reopen_cascade_reopens_everything_finished_downstream_as_one_change(run, board_dir):
    # 1 → 2 → 3 → 4, 2 → 5 (all done); 6 done but not downstream; 7 pending downstream of 3
    run("create", "1")
    for subject, blocker in (("2", "1"), ("3", "2"), ("4", "3"), ("5", "2")):
        run("create", subject, "--blocked-by", blocker)
    run("create", "6")
    for task in ("1", "2", "3", "4", "5", "6"):
        run("done", task)
    run("create", "7", "--blocked-by", "3")
    result = run("reopen", "1", "--cascade", "--json")
    assert json.loads(result.stdout)["status"] == "pending"
    assert {"reopened": [2, 3, 4, 5]} in [json.loads(line) for line in result.stderr.splitlines()]
    records = assert_sound(board_dir)
    assert {i: records[i]["status"] for i in range(1, 8)} == {
        1: "pending",
        2: "pending",
        3: "pending",
        4: "pending",
        5: "pending",
        6: "completed",
        7: "pending",
    }
    assert records[2]["blockedBy"] == [1] and records[4]["blockedBy"] == [3] and records[7]["blockedBy"] == [3]
    seeded = {e["task"]: e.get("seed") for e in journal_events(board_dir, event="reopened")}
    assert seeded == {1: None, 2: 1, 3: 1, 4: 1, 5: 1}
    assert journal_events(board_dir, 1, "reopened")[0]["cascade"] == [2, 3, 4, 5]
    # `log 4` shows the cascade that reopened it
    assert [e["event"] for e in run.json("log", "4")][-1] == "reopened"
    # the whole cascade was one change: one time for all its events
    assert len({e["at"] for e in journal_events(board_dir, event="reopened")}) == 1


def test_gate_output_stays_data(run, board_dir):
    """Markup and escapes in a gate's output are shown as text, never interpreted."""
    run("create", "x", "--gate", "printf '[red]boom[/red]\\n'; exit 1")
    result = run("done", "1", expect=7)
    assert "[red]boom[/red]" in result.stderr
