"""Issue 24, DESIGN §14, the agent's budget: `--fields` on list, ready, get and claim (and
the tools' `fields`), and a `prime` that stays under 2 KB unless `--full`."""

from __future__ import annotations

import json

import anyio
import pytest
from conftest import tasks_process
from test_mcp import in_memory, texts
from test_parents_time import call


@pytest.fixture
def three(run):
    run("create", "Write parser", "-d", "A long description " * 20, "--priority", "1")
    run("create", "Write tests", "--blocked-by", "1")
    run("create", "Docs", "--label", "docs")
    return run


def test_fields_keep_only_those_keys_in_record_order(three):
    run = three
    assert run.json("list", "--fields", "subject,id") == [
        {"id": 1, "subject": "Write parser"},
        {"id": 2, "subject": "Write tests"},
        {"id": 3, "subject": "Docs"},
    ]
    assert run.json("ready", "--fields", "id,status") == [
        {"id": 1, "status": "pending"},
        {"id": 3, "status": "pending"},
    ]
    assert run.json("get", "2", "--fields", "blockedBy, id") == {"id": 2, "blockedBy": [1]}
    assert run.json("claim", "--owner", "a", "--fields", "id,owner,status") == {
        "id": 1,
        "status": "in_progress",
        "owner": "a",
    }
    assert run.json("list", "--status", "in_progress", "--fields", "id,owner") == [{"id": 1, "owner": "a"}]


def test_fields_as_a_real_process_on_the_fast_paths_words(three, board_dir):
    done = tasks_process("--dir", str(board_dir), "list", "--json", "--limit", "1", "--fields", "id")
    assert done.returncode == 0 and json.loads(done.stdout) == [{"id": 1}]
    assert json.loads(done.stderr.splitlines()[-1]) == {"total": 3}


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("list", "--json", "--fields", "id,colour"), "no record key 'colour'"),
        (("get", "1", "--json", "--fields", ","), "no field named"),
        (("ready", "--fields", "id"), "add --json"),
        (("get", "1", "--fields", "id"), "add --json"),
    ],
)
def test_bad_fields_are_usage_errors(three, args, words):
    assert words in three(*args, expect=2).stderr


def test_fields_through_the_tools(three, board_dir):
    run = three
    assert call(run, "task_get", taskId=2, fields=["id", "blockedBy"]) == {"id": 2, "blockedBy": [1]}
    assert call(run, "task_list", fields="id", status="ready") == {"tasks": [{"id": 1}, {"id": 3}], "total": 2}
    assert call(run, "task_claim", owner="b", fields=["id", "owner"]) == {"id": 1, "owner": "b"}
    assert call(run, "task_get", taskId=3, fields='["id", "status"]') == {"id": 3, "status": "pending"}  # as JSON text
    error = call(run, "task_list", expect=2, fields=["id", "size"])
    assert "fields: no record key 'size'" in error["error"]["message"]

    async def scenario():
        async with in_memory(board_dir, "agent-1") as client:
            return await client.call_tool("task_get", {"taskId": 3, "fields": ["subject"]})

    assert texts(anyio.run(scenario)) == [{"subject": "Docs"}]


def _busy_board(run, tasks: int = 200):
    """A board of `tasks` tasks with long subjects; agent-1 holds 12 and has 8 reserved,
    6 are stuck."""
    plan = {
        "tasks": [
            {"key": f"t{n}", "subject": f"Task {n}: " + "a subject that goes on and on " * 6, "priority": n % 5}
            for n in range(tasks)
        ]
    }
    run("import", "-", input=json.dumps(plan))
    for task_id in range(1, 13):
        run("--as", "agent-1", "claim", str(task_id))
    for task_id in range(13, 21):
        run("update", str(task_id), "--owner", "agent-1")
    for task_id in range(21, 27):
        for _ in range(3):
            run("--as", "bot", "claim", str(task_id))
            run("--as", "bot", "release", str(task_id), "--failed", "--note", "it hangs " * 30)


def test_prime_stays_under_two_kilobytes_and_full_has_the_rest(run):
    _busy_board(run)
    short = run("--as", "agent-1", "prime").stdout
    full = run("--as", "agent-1", "prime", "--full").stdout
    assert len(short.encode()) <= 2000 < len(full.encode())
    assert short.startswith("board ") and "you hold:" in short and "the loop:" in short
    assert "tasks claim --wait --lease 15m --json" in short and "tasks done ID" in short
    assert "more (tasks prime --full)" in short
    for task_id in range(1, 13):  # every held task is named in full
        assert f"#{task_id}: " in full
    assert "it hangs " * 30 in full
    document = run("--as", "agent-1", "prime", "--json").stdout
    full_document = run("--as", "agent-1", "prime", "--json", "--full").stdout
    assert len(document.encode()) <= 2000 < len(full_document.encode())  # the document fits the budget too
    brief, everything = json.loads(document), json.loads(full_document)
    assert (brief["held_total"], brief["reserved_total"], brief["stuck_total"], brief["ready_total"]) == (12, 8, 6, 182)
    assert 1 <= len(brief["held"]) < 5 and "tasks prime --full --json" in brief["cut"]
    held = brief["held"][0]
    assert held["subject"].endswith("…") and everything["held"][0]["subject"].startswith(held["subject"][:-1])
    assert brief["stuck"][0]["last_failure"].endswith("…") and brief["loop"][0]["command"].startswith("tasks claim")
    assert len(everything["held"]) == 12 and "cut" not in everything
    assert everything["stuck"][0]["last_failure"] == "it hangs " * 30


def test_prime_of_a_small_board_is_whole(run):
    run("create", "Only task", "--due", "2030-01-01")
    text = run("--as", "agent-1", "prime").stdout
    full = run("--as", "agent-1", "prime", "--full").stdout
    assert text.split("the loop:")[0] == full.split("the loop:")[0]  # only the loop's words are shorter
    assert "  [ ] #1: Only task  [priority 2] — due 2030-01-01" in text
    assert "more (tasks prime --full)" not in text
    brief = run.json("--as", "agent-1", "prime")
    assert brief["ready"][0]["subject"] == "Only task" and "cut" not in brief  # whole: nothing to cut
