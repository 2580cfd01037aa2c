"""Issue 24, DESIGN §14 over MCP, bullet by bullet, with the official SDK's client: parents
(a mark and its edge made and removed, progress, children listed, a cycle and a child of
a finished parent refused), time (`after` keeps a task out of the ready list and the
claim, `due` orders equal priorities, `overdue`), why a task is not ready, `fields`, and
hooks run by a real `tasks mcp` after its changes and never for a change merged from
another clone. Each answer is held against what the command line says of the same board.
`tasks stats` has no tool: the tools stay at most eight (DESIGN §10)."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
from conftest import tasks_process
from invariants import assert_sound, snapshot
from test_hooks import git, wait_for
from test_mcp import in_memory, stdio, texts
from watching import IN_DELETE, IN_MOVED_FROM, until


def answers(board_dir, caller: str, calls: list[tuple[str, dict]]) -> list:
    """Each call's result through one in-memory MCP session: its document, or the tool error."""

    async def scenario():
        found = []
        async with in_memory(board_dir, caller) as client:
            for name, arguments in calls:
                result = await client.call_tool(name, arguments)
                found.append((result.is_error, texts(result)[0]))
        return found

    return [document for _, document in anyio.run(scenario)]


def error_of(document: dict) -> tuple[str, int, str]:
    error = document["error"]
    return error["code"], error["exit"], error["message"]


# -- parents ------------------------------------------------------------------------------------


def test_parent_and_no_parent_over_mcp(board_dir, run):
    got = answers(
        board_dir,
        "agent-1",
        [
            ("task_create", {"subject": "Epic"}),
            ("task_create", {"subject": "One", "parent": 1}),
            ("task_create", {"subject": "Two", "parent": "#1"}),
            ("task_list", {"parent": 1}),
            ("task_get", {"taskId": 1}),
            ("task_update", {"taskId": 3, "parent": ""}),  # no parent: the mark and its edge go
            ("task_get", {"taskId": 1, "fields": ["id", "blockedBy", "progress"]}),
        ],
    )
    assert got[1]["metadata"] == {"parent": 1} and got[1]["blocks"] == [1]
    assert [task["id"] for task in got[3]["tasks"]] == [2, 3]
    assert got[4]["progress"] == {"done": 0, "total": 2} and got[4]["blockedBy"] == [2, 3]
    assert got[5]["metadata"] == {} and got[5]["blocks"] == []
    assert got[6] == {"id": 1, "blockedBy": [2], "progress": {"done": 0, "total": 1}}
    assert got[6] == run.json("get", "1", "--fields", "id,blockedBy,progress")  # the command line says the same
    assert run.record(3)["metadata"] == {} and run.record(1)["blockedBy"] == [2]
    assert_sound(board_dir)


def test_a_parent_becomes_ready_with_its_last_child_and_refuses_what_it_must(board_dir, run):
    answers(
        board_dir, "agent-1", [("task_create", {"subject": "Epic"}), ("task_create", {"subject": "Part", "parent": 1})]
    )
    before = snapshot(board_dir)
    [cycle] = answers(board_dir, "agent-1", [("task_update", {"taskId": 1, "parent": 2})])
    assert error_of(cycle)[:2] == ("refused", 4) and "cycle" in error_of(cycle)[2]
    assert snapshot(board_dir) == before
    got = answers(
        board_dir,
        "agent-1",
        [
            ("task_list", {"status": "ready"}),
            ("task_claim", {}),
            ("task_update", {"taskId": 2, "status": "completed"}),
            ("task_list", {"status": "ready"}),
            ("task_claim", {"taskId": 1}),
            ("task_update", {"taskId": 1, "status": "completed"}),
            ("task_get", {"taskId": 1, "fields": ["status", "progress"]}),
        ],
    )
    assert [task["id"] for task in got[0]["tasks"]] == [2] and got[1]["id"] == 2
    assert [task["id"] for task in got[3]["tasks"]] == [1]  # ready once its last child is done
    assert got[6] == {"status": "completed", "progress": {"done": 1, "total": 1}}
    before = snapshot(board_dir)
    [late] = answers(board_dir, "agent-1", [("task_create", {"subject": "Late", "parent": 1})])
    code, exit_code, message = error_of(late)
    assert (code, exit_code) == ("refused", 4) and "reopen" in message
    assert snapshot(board_dir) == before
    assert run("create", "Late", "--parent", "1", expect=4).stderr.strip().endswith(message)


# -- time -----------------------------------------------------------------------------------------


def test_after_due_and_overdue_over_mcp(board_dir, run):
    got = answers(
        board_dir,
        "agent-1",
        [
            ("task_create", {"subject": "Later", "after": "2h"}),
            ("task_create", {"subject": "Undated"}),
            ("task_create", {"subject": "Due later", "due": "2099-01-02"}),
            ("task_create", {"subject": "Due sooner", "due": "2099-01-01T09:30"}),
            ("task_create", {"subject": "Late", "due": "2020-01-01"}),
            ("task_list", {"status": "ready", "fields": "id"}),
            ("task_list", {"overdue": True, "fields": ["id", "metadata"]}),
            ("task_claim", {"taskId": 1}),
            ("task_get", {"taskId": 4, "fields": ["metadata"]}),
        ],
    )
    ready = [task["id"] for task in got[5]["tasks"]]
    assert ready == [5, 4, 3, 2]  # earlier due first among equal priorities; Later is not ready yet
    assert ready == [task["id"] for task in run.json("ready")]
    assert got[6]["tasks"] == [{"id": 5, "metadata": {"due": "2020-01-01T00:00:00Z"}}]
    assert got[6]["tasks"] == run.json("list", "--overdue", "--fields", "id,metadata")
    code, exit_code, message = error_of(got[7])
    assert (code, exit_code) == ("refused", 4) and "(after)" in message and "#1 waits until" in message
    assert run.record(1)["status"] == "pending"
    assert got[8] == {"metadata": {"due": "2099-01-01T09:30:00Z"}}
    removed = answers(board_dir, "agent-1", [("task_update", {"taskId": 1, "after": ""}), ("task_claim", {})])
    assert removed[0]["metadata"] == {} and removed[1]["id"] == 5  # the overdue one comes first now


def test_explain_over_mcp_is_the_command_lines(board_dir, run):
    run("create", "Parser")
    run("create", "Tests", "--blocked-by", "1", "--after", "2h")
    run("create", "Free")
    run("--as", "alice", "claim", "1", "--lease", "10m")
    got = answers(
        board_dir,
        "agent-1",
        [("task_get", {"taskId": n, "explain": True}) for n in (1, 2, 3)]
        + [("task_get", {"taskId": 9, "explain": True})],
    )
    for task_id, document in zip((1, 2, 3), got, strict=False):
        assert document == run.json("ready", "--explain", str(task_id)), task_id
    assert [r["reason"] for r in got[1]["reasons"]] == ["blocked", "after"]
    assert [r["reason"] for r in got[0]["reasons"]] == ["status", "lease"]
    assert got[2]["ready"] is True and got[2]["reasons"] == []
    assert error_of(got[3])[:2] == ("not_found", 3)


# -- the agent's budget ----------------------------------------------------------------------------


def test_fields_on_the_tools_that_read_and_claim(board_dir, run):
    run("create", "Write parser", "-d", "long " * 200, "--priority", "1")
    run("create", "Docs", "--label", "docs")
    got = answers(
        board_dir,
        "agent-1",
        [
            ("task_list", {"fields": ["id", "subject"]}),
            ("task_get", {"taskId": 2, "fields": "metadata,id"}),
            ("task_claim", {"fields": ["id", "owner", "status"]}),
            ("task_list", {"fields": ["id", "colour"]}),
        ],
    )
    assert got[0] == {"tasks": [{"id": 1, "subject": "Write parser"}, {"id": 2, "subject": "Docs"}], "total": 2}
    assert got[0]["tasks"] == run.json("list", "--fields", "id,subject")
    assert got[1] == {"id": 2, "metadata": {"labels": ["docs"]}}
    assert got[2] == {"id": 1, "owner": "agent-1", "status": "in_progress"}
    assert error_of(got[3])[:2] == ("usage", 2) and "no record key 'colour'" in error_of(got[3])[2]


def test_stats_has_no_tool_the_tools_stay_eight(board_dir):
    async def scenario():
        async with in_memory(board_dir) as client:
            return [tool.name for tool in (await client.list_tools()).tools]

    names = anyio.run(scenario)
    assert len(names) <= 8 and not any("stat" in name for name in names)
    guide = (Path(__file__).parent.parent / "docs" / "guide" / "harnesses.md").read_text()
    assert "tasks stats --json" in guide  # the guide says how an agent gets the figures instead


# -- hooks ------------------------------------------------------------------------------------------


def hook_events(folder: Path) -> list[dict]:
    """The events the hooks have written, each whole (a hook moves its file in when done)."""
    return [json.loads(path.read_text()) for path in sorted(folder.iterdir())]


def test_hooks_run_after_mcp_changes_and_never_for_merged_ones(tmp_path):
    """A real `tasks mcp` in a clone with hooks; while it runs, another clone's created and
    completed task is pulled in; then the server's own changes each run their hooks and
    the merged ones none."""
    repo, origin, other = tmp_path / "repo", tmp_path / "origin.git", tmp_path / "other"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    assert tasks_process("init", cwd=repo).returncode == 0
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "board")
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(origin))
    git(repo, "remote", "add", "origin", str(origin))
    git(repo, "fetch", "-q", "origin")
    git(repo, "branch", "-q", "--set-upstream-to=origin/main")
    git(tmp_path, "clone", "-q", str(origin), str(other))
    assert tasks_process("init", cwd=other).returncode == 0
    seen, scratch = tmp_path / "seen", tmp_path / "scratch"
    seen.mkdir()
    scratch.mkdir()
    for event in ("created", "claimed", "completed", "ready"):
        command = f'f=$(mktemp -p {scratch}); cat > "$f"; mv "$f" {seen}/'
        assert tasks_process("hook", "add", event, command, cwd=repo).returncode == 0

    def merge_theirs() -> None:
        for args in (("create", "Theirs"), ("create", "Theirs too", "--blocked-by", "1"), ("done", "1")):
            assert tasks_process(*args, cwd=other).returncode == 0
        git(other, "add", "-A")
        git(other, "commit", "-qm", "their work")
        git(other, "push", "-q", "origin", "main")
        git(repo, "pull", "-q", "--no-rebase", "origin", "main")

    async def scenario():
        async with stdio(None, "--as", "agent-1", cwd=repo) as client:
            await client.call_tool("task_list", {})  # the server is up before the merge
            await anyio.to_thread.run_sync(merge_theirs)
            found = [await client.call_tool("task_get", {"taskId": 1})]
            for name, arguments in (
                ("task_create", {"subject": "Ours"}),
                ("task_create", {"subject": "After ours", "addBlockedBy": [3]}),
                ("task_claim", {"taskId": 3}),
                ("task_update", {"taskId": 3, "status": "completed"}),
            ):
                found.append(await client.call_tool(name, arguments))
            return found

    results = anyio.run(scenario)
    assert not any(result.is_error for result in results)
    assert texts(results[0])[0]["status"] == "completed"  # the merged completion is on the board

    def five():
        """the five events of the server's own changes"""
        found = hook_events(seen)
        return found if len(found) >= 5 else None

    events = wait_for(five, seen)
    assert sorted((event["event"], event["task"]) for event in events) == [
        ("claimed", 3),
        ("completed", 3),
        ("created", 3),
        ("created", 4),
        ("ready", 4),
    ]
    assert all(event["actor"] == "agent-1" for event in events)
    # every hook started has finished (the supervisors leave nothing in scratch): none for #1 or #2 came late
    until(lambda: not any(scratch.iterdir()), scratch, IN_MOVED_FROM | IN_DELETE)
    assert len(hook_events(seen)) == 5
