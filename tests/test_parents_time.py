"""Issue 24, DESIGN §14: parents (the child blocks its parent, progress, `list --parent`,
`board --by-parent`, import) and time (`--after` keeps a task out of ready and claim
until then, `--due` orders equal priorities, `list --overdue`), through the command line
and the tools that `tasks call` and MCP share."""

from __future__ import annotations

import json
import subprocess
import time

import anyio
import pytest
from conftest import tasks_process
from invariants import assert_sound, snapshot
from test_mcp import in_memory, texts


def call(run, name: str, expect: int = 0, **arguments):
    """One tool call through `tasks call` (the tools MCP serves): its JSON document."""
    result = run("call", input=json.dumps({"name": name, "input": arguments}), expect=expect)
    return json.loads(result.stdout) if expect == 0 else json.loads(result.stderr.splitlines()[-1])


def ids(records) -> list[int]:
    return [record["id"] for record in records]


@pytest.fixture
def family(run):
    """#1 an epic with five children #2-#6, three of them done."""
    run("create", "Epic")
    for number in range(1, 6):
        run("create", f"child {number}", "--parent", "1")
    for child in (2, 3, 4):
        run("done", str(child))
    return run


# -- parents -----------------------------------------------------------------------------------


def test_a_child_blocks_its_parent_until_the_last_child_is_done(family, board_dir):
    run = family
    assert run.record(1)["blockedBy"] == [5, 6]
    assert run.record(5)["metadata"] == {"parent": 1} and run.record(5)["blocks"] == [1]
    assert 1 not in ids(run.json("ready"))
    run("done", "5")
    done = run("done", "6", "--json")
    assert json.loads(done.stderr.splitlines()[0]) == {"unblocked": [1]}
    assert ids(run.json("ready"))[0] == 1
    assert run.json("claim", "1", "--owner", "a")["status"] == "in_progress"
    assert_sound(board_dir)


def test_progress_in_get_json_in_the_views_and_through_the_tools(family):
    run = family
    assert run.json("get", "1")["progress"] == {"done": 3, "total": 5}
    assert "progress" not in run.json("get", "2")  # a child is no parent: its record as it is
    plain = run("get", "1").stdout
    assert "children    3/5 done" in plain
    assert "part of #1" in run("board").stdout and "3/5 done" in run("board").stdout
    assert "parent      #1" in run("get", "5").stdout
    assert call(run, "task_get", taskId=1)["progress"] == {"done": 3, "total": 5}
    run("delete", "6")  # a deleted child no longer counts
    assert run.json("get", "1")["progress"] == {"done": 3, "total": 4}


def test_parent_mark_and_edge_come_and_go_together(family, board_dir):
    run = family
    run("update", "5", "--no-parent")
    assert "parent" not in run.record(5)["metadata"] and run.record(5)["blocks"] == []
    assert run.record(1)["blockedBy"] == [6]
    run("update", "5", "--meta", "parent=1")  # the mark however it is given brings its edge
    assert run.record(1)["blockedBy"] == [5, 6]
    run("create", "Other epic")
    run("update", "5", "--parent", "7")  # moved: the old edge goes, the new one comes
    assert run.record(1)["blockedBy"] == [6] and run.record(7)["blockedBy"] == [5]
    assert call(run, "task_update", taskId=5, parent="")["metadata"] == {}
    assert run.record(7)["blockedBy"] == []
    assert_sound(board_dir)


def test_deleting_a_parent_drops_its_childrens_mark(family, board_dir):
    run = family
    run("delete", "1")
    for child in range(2, 7):
        assert "parent" not in run.record(child)["metadata"]
        assert 1 not in run.record(child)["blocks"]
    assert_sound(board_dir)


@pytest.mark.parametrize(
    ("args", "code", "words"),
    [
        (("update", "2", "--parent", "2"), 4, "#2 cannot be its own parent"),
        (("update", "1", "--parent", "5"), 4, "close the cycle"),  # #5 blocks #1; #1 under #5 closes it
        (("create", "Late", "--parent", "2"), 4, "reopen it (tasks reopen 2)"),
        (("update", "5", "--parent", "3"), 4, "#3 is completed; reopen it"),
        (("create", "Lost", "--parent", "99"), 3, "no task #99"),
        (("update", "5", "--parent", "1", "--no-parent"), 2, "exclude each other"),
        (("create", "Bad", "--meta", "parent=x"), 2, "the parent must be a task id"),
    ],
)
def test_refused_parents_change_nothing(family, board_dir, args, code, words):
    before = snapshot(board_dir)
    result = family(*args, expect=code)
    assert words in result.stderr
    assert snapshot(board_dir) == before


def test_a_completed_parent_refuses_a_child_through_the_tools(family, board_dir):
    before = snapshot(board_dir)
    error = call(family, "task_create", expect=4, subject="Late", parent=2)
    assert error["error"]["code"] == "refused" and "reopen" in error["error"]["message"]
    assert snapshot(board_dir) == before


def test_list_parent_and_board_by_parent(family):
    run = family
    run("create", "Loose end")
    assert ids(run.json("list", "--parent", "1")) == [2, 3, 4, 5, 6]
    assert ids(run.json("list", "--parent", "1", "--status", "pending")) == [5, 6]
    assert ids(run.json("ready", "--parent", "1")) == [5, 6]
    assert [t["id"] for t in call(run, "task_list", parent=1)["tasks"]] == [2, 3, 4, 5, 6]
    grouped = run.json("board", "--by-parent")
    assert [(g["parent"]["id"] if g["parent"] else None, ids(g["children"])) for g in grouped["groups"]] == [
        (1, [2, 3, 4, 5, 6]),
        (None, [7]),
    ]
    assert grouped["groups"][0]["progress"] == {"done": 3, "total": 5}
    text = run("board", "--by-parent").stdout
    assert text.index("#1 Epic") < text.index("#5") < text.index("#7")
    assert "3/5 done" in text


def test_import_takes_a_parent_by_key_or_id(run, board_dir):
    run("create", "Existing epic")
    plan = {
        "tasks": [
            {"key": "epic", "subject": "Epic"},
            {"key": "a", "subject": "A", "parent": "epic"},
            {"key": "b", "subject": "B", "parent": 1, "blockedBy": ["a"]},
        ]
    }
    created = run.json("import", "-", input=json.dumps(plan))["created"]
    assert created == {"epic": 2, "a": 3, "b": 4}
    assert run.record(3)["metadata"] == {"parent": 2} and run.record(2)["blockedBy"] == [3]
    assert run.record(4)["metadata"] == {"parent": 1} and run.record(1)["blockedBy"] == [4]
    assert_sound(board_dir)
    cyclic = {"tasks": [{"key": "x", "subject": "X", "parent": "y"}, {"key": "y", "subject": "Y", "parent": "x"}]}
    before = snapshot(board_dir)
    assert "cycle" in run("import", "-", input=json.dumps(cyclic), expect=4).stderr
    assert snapshot(board_dir) == before
    run("create", "Finished")
    run("done", "5")
    before = snapshot(board_dir)
    late = {"tasks": [{"key": "z", "subject": "Z", "parent": 5}]}
    assert "reopen it first (tasks reopen 5)" in run("import", "-", input=json.dumps(late), expect=4).stderr
    assert snapshot(board_dir) == before


# -- time -----------------------------------------------------------------------------------------


def test_after_keeps_a_task_out_of_ready_and_claim_until_then(run, board_dir):
    run("create", "Later", "--after", "2h")
    run("create", "Past", "--after", "2020-01-01")
    after = run.record(1)["metadata"]["after"]
    assert after > time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 7000))
    assert ids(run.json("ready")) == [2]
    assert "#1 waits until" in run("claim", "1", "--owner", "a", expect=4).stderr
    assert run.json("claim", "--owner", "a")["id"] == 2
    run("claim", "--owner", "a", "--json", expect=3)  # nothing else is ready now
    # decided when the command runs: nothing stored flips; a time in the past is ready at once
    (board_dir / "task_1.json").write_text(
        (board_dir / "task_1.json").read_text().replace(after, "2021-01-01T00:00:00Z")
    )
    assert ids(run.json("ready")) == [1]
    assert call(run, "task_claim", taskId=1, owner="b")["owner"] == "b"


def test_claim_wait_wakes_when_an_after_time_comes(run):
    start = time.time()
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(start + 2))
    run("create", "Soon", "--after", stamp)
    claimed = run.json("claim", "--owner", "a", "--wait", "20")
    assert claimed["id"] == 1
    assert time.time() >= start + 1  # not before its time


def test_due_orders_equal_priorities_and_overdue_keeps_the_late(run):
    run("create", "No due")
    run("create", "Due later", "--due", "2030-01-02")
    run("create", "Due sooner", "--due", "2030-01-01T09:30")
    run("create", "Urgent", "--priority", "1")
    run("create", "Late", "--due", "2020-05-05")
    assert ids(run.json("ready")) == [4, 5, 3, 2, 1]
    assert run.json("claim", "--owner", "a")["id"] == 4
    assert run.json("claim", "--owner", "a")["id"] == 5
    assert ids(run.json("list", "--overdue")) == [5]  # in progress and late still counts
    run("done", "5")
    assert run.json("list", "--overdue") == []  # done is never overdue
    assert [t["id"] for t in call(run, "task_list", overdue=True)["tasks"]] == []
    assert run.record(3)["metadata"]["due"] == "2030-01-01T09:30:00Z"
    assert "due         2030-01-01 09:30" in run("get", "3").stdout


def test_times_through_the_tools_and_removal(run):
    made = call(run, "task_create", subject="T", after="3d", due="2030-02-03")
    assert made["metadata"]["due"] == "2030-02-03T00:00:00Z"
    assert made["metadata"]["after"] > time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 2 * 86400))
    assert call(run, "task_update", taskId=1, after="")["metadata"] == {"due": "2030-02-03T00:00:00Z"}
    run("update", "1", "--due", "")
    assert run.record(1)["metadata"] == {}
    run("update", "1", "--due", "2030-01-01T10:00+02:00")  # an offset is converted to UTC
    assert run.record(1)["metadata"]["due"] == "2030-01-01T08:00:00Z"


@pytest.mark.parametrize("when", ["tomorrow", "2h30", "2030-13-01", "-1d", ""])
def test_a_time_that_is_none_is_a_usage_error(run, board_dir, when):
    if when == "":
        result = run("create", "X", "--after", when)  # create: empty means not given
        assert "after" not in run.record(1)["metadata"]
        return
    result = run("create", "X", "--after", when, expect=2)
    assert "is not a time" in result.stderr
    assert not board_dir.exists() or not list(board_dir.glob("task_*.json"))
    error = call(run, "task_create", expect=2, subject="X", due=when)
    assert error["error"]["code"] == "usage"


def test_a_plan_with_times(run):
    plan = {"tasks": [{"key": "a", "subject": "A", "after": "2h", "due": "2031-01-01"}]}
    run("import", "-", input=json.dumps(plan))
    assert run.record(1)["metadata"]["due"] == "2031-01-01T00:00:00Z"
    assert run.json("ready") == []


def test_parents_and_times_over_mcp(board_dir):
    async def scenario():
        async with in_memory(board_dir, "agent-1") as client:
            await client.call_tool("task_create", {"subject": "Epic"})
            await client.call_tool("task_create", {"subject": "Part", "parent": 1, "due": "2030-01-01"})
            await client.call_tool("task_create", {"subject": "Wait", "after": "1d"})
            got = await client.call_tool("task_get", {"taskId": 1})
            listed = await client.call_tool("task_list", {"status": "ready"})
            return got, listed

    got, listed = anyio.run(scenario)
    assert texts(got)[0]["progress"] == {"done": 0, "total": 1}
    assert [t["id"] for t in texts(listed)[0]["tasks"]] == [2]


# -- ready --explain ------------------------------------------------------------------------------


def test_explain_names_every_reason(run, board_dir):
    run("create", "Parser")  # 1
    run("create", "Tests", "--blocked-by", "1", "--after", "2h")  # 2
    run("create", "Free")  # 3
    run("--as", "alice", "claim", "1", "--lease", "10m")
    found = run.json("ready", "--explain", "2")
    assert found["ready"] is False and [r["reason"] for r in found["reasons"]] == ["blocked", "after"]
    assert found["reasons"][0]["blockers"] == [
        {"id": 1, "subject": "Parser", "status": "in_progress", "owner": "alice"}
    ]
    assert "blocked by #1 Parser (in progress, alice)" in found["reasons"][0]["message"]
    text = run("ready", "--explain", "2").stdout
    assert text.startswith("#2 Tests is not ready:\n") and "after: waits until" in text
    held = run.json("ready", "--explain", "1")
    assert [r["reason"] for r in held["reasons"]] == ["status", "lease"]
    assert held["reasons"][1]["holder"] == "alice"
    assert run.json("ready", "--explain", "3") == {
        "id": 3,
        "subject": "Free",
        "status": "pending",
        "ready": True,
        "reasons": [],
    }
    assert run("ready", "--explain", "3").stdout == "#3 Free is ready\n"
    for _ in range(3):
        run("--as", "bob", "claim", "3")
        run("--as", "bob", "release", "3", "--failed", "--note", "flaky")
    stuck = run.json("ready", "--explain", "3")
    assert [r["reason"] for r in stuck["reasons"]] == ["stuck"] and "flaky" in stuck["reasons"][0]["message"]
    assert call(run, "task_get", taskId=2, explain=True) == found  # the tools say the same
    run("ready", "--explain", "9", expect=3)


def test_explain_names_a_task_held_in_another_worktree(tmp_path):
    """Real git: a claim made in a linked worktree that keeps its own board is held elsewhere."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    tasks_process("init", cwd=repo)
    tasks_process("create", "Shared", cwd=repo)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "board"], check=True)
    subprocess.run([*git, "worktree", "add", "-q", str(tmp_path / "wt"), "-b", "other"], check=True)
    subprocess.run([*git, "config", "tasks.worktrees", "branch"], check=True)
    assert tasks_process("--as", "carol", "claim", "1", cwd=tmp_path / "wt").returncode == 0
    found = json.loads(tasks_process("ready", "--explain", "1", "--json", cwd=repo).stdout)
    assert [r["reason"] for r in found["reasons"]] == ["elsewhere"]
    assert "claimed by carol in another worktree" in found["reasons"][0]["message"]
