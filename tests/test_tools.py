"""The board as agent tools, without the MCP SDK: the tool table and its dispatch
(in-process, against real boards in tmp_path), `tasks schema`, and `tasks call` as a
real subprocess. The same table serves `tasks mcp` (tests/test_mcp.py)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
from invariants import assert_sound, snapshot

from taskboard.agents import tools
from taskboard.core.errors import NotFound, Refused, TaskError, UsageError

VOLATILE = re.compile(rb'"uid": "[0-9a-f]{12}"|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ')
CLAUDE_CODE_ARGS = {"taskId", "subject", "description", "status", "owner", "addBlockedBy", "addBlocks", "metadata"}


def call(board_dir, name, arguments=None, caller=""):
    return tools.dispatch(name, arguments if arguments is not None else {}, str(board_dir), caller)


def tasks_call(board_dir, payload, *flags, env=None, cwd=None):
    """`tasks [FLAGS] call` as a real process, the payload (text or JSON data) on stdin."""
    text = payload if isinstance(payload, (str, bytes)) else json.dumps(payload)
    data = text if isinstance(text, bytes) else text.encode()
    full_env = {key: value for key, value in os.environ.items() if not key.startswith("TASKS_")}
    full_env.update(env or {})
    args = [sys.executable, "-m", "taskboard", *(["--dir", str(board_dir)] if board_dir else []), *flags, "call"]
    return subprocess.run(args, input=data, capture_output=True, env=full_env, cwd=cwd, timeout=60)


def stderr_lines(done) -> list[dict]:
    return [json.loads(line) for line in done.stderr.decode().splitlines()]


# -- the table ----------------------------------------------------------------------


def test_at_most_eight_tools_named_as_the_contract_says():
    names = [tool.name for tool in tools.TOOLS]
    assert len(names) <= 8
    assert {"task_create", "task_get", "task_list", "task_update", "task_claim"} <= set(names)
    assert all(name.startswith("task_") for name in names)


def test_argument_names_are_claude_codes():
    update = tools.BY_NAME["task_update"].input_schema()["properties"]
    assert set(update) >= CLAUDE_CODE_ARGS
    create = tools.BY_NAME["task_create"].input_schema()
    assert create["required"] == ["subject"]
    assert tools.BY_NAME["task_get"].input_schema()["required"] == ["taskId"]


def test_only_the_reads_are_read_only():
    assert sorted(tool.name for tool in tools.TOOLS if tool.read_only) == ["task_get", "task_list", "task_log"]
    assert tools.BY_NAME["task_update"].destructive  # it can delete a task


@pytest.mark.parametrize("tool", tools.TOOLS, ids=lambda tool: tool.name)
def test_every_schema_is_a_closed_object_with_described_arguments(tool):
    schema = tool.input_schema()
    assert schema["type"] == "object" and schema["additionalProperties"] is False
    assert set(schema["required"]) <= set(schema["properties"])
    for name, prop in schema["properties"].items():
        assert prop["description"].strip(), (tool.name, name)
    assert tool.description.strip()


# -- ids, three spellings -----------------------------------------------------------


@pytest.mark.parametrize("spelling", [1, "1", "#1", " #1 "])
def test_an_id_may_be_a_number_a_string_or_hash_number(board_dir, spelling):
    call(board_dir, "task_create", {"subject": "Write parser"})
    assert call(board_dir, "task_get", {"taskId": spelling}).document["id"] == 1
    assert call(board_dir, "task_create", {"subject": "Next", "addBlockedBy": [spelling]}).document["blockedBy"] == [1]


# -- the documents are the command line's -------------------------------------------


def test_results_are_the_json_documents_of_the_command_line(run, board_dir):
    created = call(board_dir, "task_create", {"subject": "Write parser", "description": "a\nb", "metadata": {"k": 1}})
    assert created.document == run.json("get", "1") == run.record(1)
    second = call(board_dir, "task_create", {"subject": "Tests", "addBlockedBy": ["1"], "owner": "bob"})
    assert second.document == run.record(2)
    assert call(board_dir, "task_get", {"taskId": 2}).document == run.json("get", "2")
    listed = call(board_dir, "task_list").document
    assert listed == {"tasks": run.json("list"), "total": 2}


def test_completing_reports_the_tasks_it_set_free(board_dir):
    call(board_dir, "task_create", {"subject": "A"})
    call(board_dir, "task_create", {"subject": "B", "addBlockedBy": [1]})
    done = call(board_dir, "task_update", {"taskId": 1, "status": "completed"})
    assert done.document["status"] == "completed"
    assert done.events == [("unblocked", [2])]
    assert call(board_dir, "task_list", {"status": "ready"}).document["total"] == 1


def test_status_words_people_type_are_accepted(board_dir):
    call(board_dir, "task_create", {"subject": "A"})
    assert call(board_dir, "task_update", {"taskId": 1, "status": "in-progress"}).document["status"] == "in_progress"
    assert call(board_dir, "task_update", {"taskId": 1, "status": "done"}).document["status"] == "completed"
    assert call(board_dir, "task_update", {"taskId": 1, "status": "todo"}).document["status"] == "pending"
    assert call(board_dir, "task_list", {"status": ["todo"]}).document["total"] == 1


def test_metadata_merges_and_null_removes_a_key(board_dir, run):
    call(board_dir, "task_create", {"subject": "A", "metadata": {"keep": 1, "drop": "x", "gone": None}})
    assert run.record(1)["metadata"] == {"keep": 1, "drop": "x"}
    updated = call(board_dir, "task_update", {"taskId": 1, "metadata": {"drop": None, "new": [1, 2]}})
    assert updated.document["metadata"] == {"keep": 1, "new": [1, 2]} == run.record(1)["metadata"]


def test_deleting_through_update_removes_the_edges(board_dir, run):
    call(board_dir, "task_create", {"subject": "A"})
    call(board_dir, "task_create", {"subject": "B", "addBlockedBy": [1]})
    deleted = call(board_dir, "task_update", {"taskId": 1, "status": "deleted"})
    assert deleted.document["status"] == "deleted" and deleted.events == [("unblocked", [2])]
    assert run.record(2)["blockedBy"] == []
    assert call(board_dir, "task_list").document["total"] == 1
    assert call(board_dir, "task_list", {"status": "deleted"}).document["total"] == 1


def test_lists_are_bounded_and_say_the_total(board_dir):
    for n in range(tools.DEFAULT_LIMIT + 7):
        call(board_dir, "task_create", {"subject": f"task {n}"})
    listed = call(board_dir, "task_list").document
    assert len(listed["tasks"]) == tools.DEFAULT_LIMIT and listed["total"] == tools.DEFAULT_LIMIT + 7
    assert [task["id"] for task in listed["tasks"]] == list(range(1, tools.DEFAULT_LIMIT + 1))
    few = call(board_dir, "task_list", {"limit": 3, "status": ["pending", "in_progress"]}).document
    assert [task["id"] for task in few["tasks"]] == [1, 2, 3] and few["total"] == tools.DEFAULT_LIMIT + 7


def test_a_list_page_stays_small_enough_for_a_context_window_whatever_the_descriptions(board_dir):
    """`limit` counts tasks: 50 tasks with 12 KB descriptions made a 600 KB answer. A page
    stops at LIST_BUDGET characters of JSON (one task at least), keeps the total, and says
    how to see the rest; the records it holds are whole."""
    plan = {
        "tasks": [{"key": f"k{n}", "subject": f"task {n}", "description": "lorem ipsum " * 1000} for n in range(60)]
    }
    call(board_dir, "task_import", plan)
    listed = call(board_dir, "task_list").document
    size = len(json.dumps(listed["tasks"], ensure_ascii=False))
    assert size <= tools.LIST_BUDGET and 1 <= len(listed["tasks"]) < tools.DEFAULT_LIMIT
    assert listed["total"] == 60 and [task["id"] for task in listed["tasks"]] == list(
        range(1, len(listed["tasks"]) + 1)
    )
    assert all(len(task["description"]) == 12000 for task in listed["tasks"])
    assert "task_get" in listed["note"] and "limit" in listed["note"]
    small = call(board_dir, "task_list", {"limit": 2}).document
    assert len(small["tasks"]) == 2 and "note" not in small  # a page within the budget says nothing more
    huge = "x" * 60000
    call(board_dir, "task_update", {"taskId": 1, "description": huge, "metadata": {"notes": "y" * 60000}})
    assert len(call(board_dir, "task_list").document["tasks"]) == 1  # one task is always shown, whole


def test_a_log_page_keeps_the_newest_events_within_the_budget(board_dir):
    call(board_dir, "task_create", {"subject": "A"})
    for n in range(12):
        call(board_dir, "task_note", {"taskId": 1, "text": f"{n} " + "z" * 20000})
    logged = call(board_dir, "task_log").document
    assert logged["total"] == 13 and 1 <= len(logged["events"]) < 13
    assert len(json.dumps(logged["events"], ensure_ascii=False)) <= tools.LIST_BUDGET
    assert logged["events"][-1]["text"].startswith("11 ") and "limit" in logged["note"]


def test_list_filters_by_owner_and_blocked(board_dir):
    call(board_dir, "task_create", {"subject": "A", "owner": "bob"})
    call(board_dir, "task_create", {"subject": "B", "addBlockedBy": [1]})
    assert [t["id"] for t in call(board_dir, "task_list", {"owner": "bob"}).document["tasks"]] == [1]
    assert [t["id"] for t in call(board_dir, "task_list", {"status": "blocked"}).document["tasks"]] == [2]


def test_priority_and_labels_order_and_filter(board_dir, run):
    call(board_dir, "task_create", {"subject": "A"})
    call(board_dir, "task_create", {"subject": "B", "priority": 0, "labels": ["api", "db"]})
    call(board_dir, "task_create", {"subject": "C", "labels": "api"})
    assert run.record(2)["metadata"] == {"priority": 0, "labels": ["api", "db"]}
    ready = call(board_dir, "task_list", {"status": "ready"}).document
    assert [task["id"] for task in ready["tasks"]] == [2, 1, 3]  # priority 0 first, then id
    assert [t["id"] for t in call(board_dir, "task_list", {"labels": ["api"]}).document["tasks"]] == [2, 3]
    assert [t["id"] for t in call(board_dir, "task_list", {"priority": 0}).document["tasks"]] == [2]
    assert [t["id"] for t in call(board_dir, "task_list", {"grep": "c"}).document["tasks"]] == [3]
    updated = call(board_dir, "task_update", {"taskId": 3, "priority": 4, "addLabels": ["ui"], "removeLabels": ["api"]})
    assert updated.document["metadata"] == {"labels": ["ui"], "priority": 4} == run.record(3)["metadata"]


def test_notes_and_the_log_come_from_the_journal(board_dir, run):
    call(board_dir, "task_create", {"subject": "A"}, caller="agent-1")
    noted = call(board_dir, "task_note", {"taskId": "#1", "text": "found the bug"}, caller="agent-1").document
    assert (noted["task"], noted["event"], noted["actor"], noted["text"]) == (1, "note", "agent-1", "found the bug")
    call(board_dir, "task_update", {"taskId": 1, "status": "completed", "note": "merged"}, caller="agent-1")
    log = call(board_dir, "task_log", {"taskId": 1}).document
    assert log == {"events": run.json("log", "1"), "total": len(run.json("log", "1"))}
    assert [entry["event"] for entry in log["events"]][:2] == ["created", "note"]
    assert any(entry.get("note") == "merged" or entry.get("text") == "merged" for entry in log["events"])
    last = call(board_dir, "task_log", {"limit": 1}).document
    assert last["events"] == log["events"][-1:] and last["total"] == log["total"]


def test_a_plan_imported_in_one_call(board_dir, run):
    call(board_dir, "task_create", {"subject": "setup"})
    plan = [
        {"key": "lexer", "subject": "Lexer", "blockedBy": [1], "priority": 1},
        {"key": "parser", "subject": "Parser", "blockedBy": ["lexer"], "labels": ["core"]},
    ]
    assert call(board_dir, "task_import", {"tasks": plan}).document == {"created": {"lexer": 2, "parser": 3}}
    assert run.record(3)["blockedBy"] == [2] and run.record(2)["blockedBy"] == [1]
    before = snapshot(board_dir)
    with pytest.raises(UsageError, match="lexer"):
        call(board_dir, "task_import", {"tasks": [{"key": "lexer", "subject": "A"}, {"key": "lexer", "subject": "B"}]})
    with pytest.raises(Refused):
        call(
            board_dir,
            "task_import",
            {
                "tasks": [
                    {"key": "a", "subject": "A", "blockedBy": ["b"]},
                    {"key": "b", "subject": "B", "blockedBy": ["a"]},
                ]
            },
        )
    assert snapshot(board_dir) == before


def test_leases_failures_and_retry_through_the_tools(board_dir):
    call(board_dir, "task_create", {"subject": "A"})
    claimed = call(board_dir, "task_claim", {"lease": "15m"}, caller="agent-1")
    assert claimed.document["owner"] == "agent-1"
    assert [key for key, _ in claimed.events] == ["lease"] and claimed.events[0][1]["seconds"] == 900
    renewed = call(board_dir, "task_claim", {"taskId": 1, "lease": 60}, caller="agent-1")
    assert renewed.events[0][1]["seconds"] == 60  # claiming what you hold renews it
    for attempt in range(3):
        given_back = call(
            board_dir, "task_update", {"taskId": 1, "failed": True, "note": f"try {attempt}"}, caller="agent-1"
        )
        assert given_back.document["status"] == "pending" and given_back.document["owner"] == ""
        if attempt < 2:
            call(board_dir, "task_claim", {"taskId": 1}, caller="agent-1")
    with pytest.raises(Refused) as stuck:
        call(board_dir, "task_claim", {"taskId": 1}, caller="agent-2")
    assert "retry true" in tools.error_message(stuck.value)
    call(board_dir, "task_update", {"taskId": 1, "status": "pending", "retry": True})
    assert call(board_dir, "task_claim", {}, caller="agent-2").document["owner"] == "agent-2"
    with pytest.raises(UsageError, match="failed gives a task back"):
        call(board_dir, "task_update", {"taskId": 1, "failed": True, "status": "completed"}, caller="agent-2")


def test_claim_waits_at_most_the_seconds_given(board_dir):
    call(board_dir, "task_create", {"subject": "A"})
    call(board_dir, "task_claim", caller="agent-1")
    with pytest.raises(NotFound, match=r"waited 0\.2 s"):  # agent-1 may still give it back
        call(board_dir, "task_claim", {"wait": 0.2}, caller="agent-2")
    call(board_dir, "task_update", {"taskId": 1, "status": "completed"}, caller="agent-1")
    with pytest.raises(NotFound, match="nothing is left"):  # the plan is finished: no wait at all
        call(board_dir, "task_claim", {"wait": True}, caller="agent-2")


def test_a_failing_gate_refuses_completion_with_exit_7(board_dir, run):
    call(board_dir, "task_create", {"subject": "A", "gate": "exit 3", "accept": "tests pass"})
    assert run.record(1)["metadata"] == {"accept": "tests pass", "gate": "exit 3"}
    call(board_dir, "task_claim", caller="agent-1")
    done = tasks_call(
        board_dir, {"name": "task_update", "input": {"taskId": 1, "status": "completed"}}, "--as", "agent-1"
    )
    assert done.returncode == 7
    assert stderr_lines(done)[-1]["error"]["code"] == "gate_failed"
    assert run.record(1)["status"] == "in_progress"


# -- who calls ----------------------------------------------------------------------


def test_claim_takes_the_next_ready_task_for_the_caller(board_dir):
    call(board_dir, "task_create", {"subject": "A"})
    call(board_dir, "task_create", {"subject": "B"})
    first = call(board_dir, "task_claim", caller="agent-1").document
    assert (first["id"], first["status"], first["owner"]) == (1, "in_progress", "agent-1")
    assert call(board_dir, "task_claim", caller="agent-2").document["id"] == 2
    with pytest.raises(NotFound):
        call(board_dir, "task_claim", caller="agent-3")
    with pytest.raises(Refused, match="held by agent-1"):
        call(board_dir, "task_claim", {"taskId": 1}, caller="agent-2")
    assert call(board_dir, "task_claim", {"taskId": "#1"}, caller="agent-1").document["owner"] == "agent-1"


def test_a_named_caller_cannot_take_over_unless_forced(board_dir, run):
    call(board_dir, "task_create", {"subject": "A"})
    call(board_dir, "task_claim", caller="agent-1")
    with pytest.raises(Refused) as refused:
        call(board_dir, "task_update", {"taskId": 1, "status": "completed"}, caller="agent-2")
    assert tools.tool_error(refused.value)["error"] == {
        "code": "refused",
        "message": "#1 is in progress and held by agent-1; you are agent-2 (pass force: true to override)",
        "exit": 4,
    }
    forced = call(board_dir, "task_update", {"taskId": 1, "status": "completed", "force": True}, caller="agent-2")
    assert forced.document["status"] == "completed" == run.record(1)["status"]


def test_claim_without_anyone_named_is_a_usage_error(board_dir):
    call(board_dir, "task_create", {"subject": "A"})
    with pytest.raises(UsageError) as error:
        call(board_dir, "task_claim")
    assert "pass owner" in tools.error_message(error.value)
    assert call(board_dir, "task_claim", {"owner": "carol"}).document["owner"] == "carol"


# -- where the board is -------------------------------------------------------------


def test_the_board_argument_picks_the_board_per_call(tmp_path, board_dir):
    other = tmp_path / "elsewhere" / ".tasks"
    call(board_dir, "task_create", {"subject": "here"})
    made = tools.dispatch("task_create", {"subject": "there", "board": str(other)}, str(board_dir))
    assert made.document["id"] == 1
    assert assert_sound(other)[1]["subject"] == "there"
    assert assert_sound(board_dir)[1]["subject"] == "here"


def test_without_a_board_the_working_folder_decides(tmp_path, monkeypatch):
    project = tmp_path / "project"
    (project / ".tasks").mkdir(parents=True)
    (project / "src").mkdir()
    monkeypatch.chdir(project / "src")
    tools.dispatch("task_create", {"subject": "found"}, None)
    assert assert_sound(project / ".tasks")[1]["subject"] == "found"


def test_a_board_that_vanishes_answers_with_errors(tmp_path, board_dir, monkeypatch):
    call(board_dir, "task_create", {"subject": "A"})
    for path in sorted(board_dir.rglob("*"), reverse=True):
        path.rmdir() if path.is_dir() else path.unlink()
    board_dir.rmdir()
    with pytest.raises(NotFound):
        call(board_dir, "task_get", {"taskId": 1})
    assert call(board_dir, "task_list").document == {"tasks": [], "total": 0}
    with pytest.raises(NotFound):
        call(board_dir, "task_update", {"taskId": 1, "status": "completed"})
    assert not board_dir.exists()  # a failed call created nothing
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()  # the working folder itself disappears
    with pytest.raises(UsageError, match="working folder no longer exists"):
        tools.dispatch("task_list", {}, None)


# -- bad input ----------------------------------------------------------------------

BAD_CALLS = [
    ("task_nope", {}, "unknown tool 'task_nope'"),
    ("task_get", [], "takes its arguments as a JSON object, not an array"),
    ("task_get", {}, "task_get needs taskId"),
    ("task_get", {"taskId": True}, "taskId must be a task id"),
    ("task_get", {"taskId": 0}, "taskId must be a task id"),
    ("task_get", {"taskId": -3}, "not -3"),
    ("task_get", {"taskId": 1.5}, "not 1.5"),
    ("task_get", {"taskId": "seven"}, 'not "seven"'),
    ("task_get", {"taskId": [1]}, "not an array"),
    ("task_get", {"taskId": 2**64}, "taskId must be a task id"),
    (
        "task_get",
        {"taskId": 1, "verbose": True},
        "task_get has no argument 'verbose'; it takes taskId, fields, explain, board",
    ),
    ("task_create", {}, "task_create needs subject"),
    ("task_create", {"subject": 5}, "subject must be a string, not 5"),
    ("task_create", {"subject": ""}, "the subject is empty"),
    ("task_create", {"subject": "a\nb"}, "control character"),
    ("task_create", {"subject": "x" * 501}, "at most 500"),
    ("task_create", {"subject": "A", "description": "d" * 70000}, "at most 65536"),
    ("task_create", {"subject": "A", "description": "d" * (tools.MAX_INPUT + 1)}, "bytes of JSON; at most"),
    ("task_create", {"subject": "A", "metadata": [1]}, "metadata must be a JSON object"),
    ("task_create", {"subject": "A", "metadata": "nope"}, "metadata must be a JSON object"),
    ("task_create", {"subject": "A", "addBlockedBy": ["x"]}, "addBlockedBy[0] must be a task id"),
    ("task_create", {"subject": "A", "addBlockedBy": [9]}, "no task #9"),
    ("task_create", {"subject": "A", "owner": " bob"}, "surrounding spaces"),
    ("task_update", {"taskId": 1, "status": "bogus"}, "status must be one of pending"),
    ("task_update", {"taskId": 1, "force": "yes"}, "force must be true or false"),
    ("task_update", {"taskId": 1, "addBlocks": [2], "removeBlocks": [2]}, "addBlocks and removeBlocks both name #2"),
    ("task_update", {"taskId": 1, "status": "deleted", "addBlocks": [2]}, "leave out the edge arguments"),
    ("task_update", {"taskId": 9}, "no task #9"),
    ("task_update", {"taskId": 1, "addBlockedBy": [1]}, "cycle #1 → #1"),
    ("task_list", {"limit": 0}, "limit must be a whole number from 1 to"),
    ("task_list", {"limit": "5"}, "limit must be a whole number"),
    ("task_list", {"priority": 5}, "priority must be a whole number from 0 (most urgent) to 4, not 5"),
    ("task_list", {"labels": [3]}, "labels[0] must be a string"),
    ("task_list", {"grep": ""}, "the text to search for is empty"),
    (
        "task_create",
        {"subject": "A", "priority": "1"},
        'priority must be a whole number from 0 (most urgent) to 4, not "1"',
    ),
    ("task_create", {"subject": "A", "labels": [" x"]}, "surrounding spaces"),
    ("task_update", {"taskId": 1, "addLabels": ["x"], "removeLabels": ["x"]}, "x"),
    ("task_note", {"taskId": 1}, "task_note needs text"),
    ("task_note", {"taskId": 1, "text": "  "}, "the note is empty"),
    ("task_note", {"taskId": 9, "text": "hello"}, "no task #9"),
    ("task_log", {"taskId": 9}, "no task #9"),
    ("task_log", {"limit": -1}, "limit must be a whole number"),
    ("task_claim", {"lease": "soon"}, "lease must be a length of time above zero"),
    ("task_claim", {"lease": 0}, "lease must be a length of time above zero"),
    ("task_claim", {"wait": -1}, "wait must be true, false or seconds"),
    ("task_import", {"tasks": {}}, "tasks must be an array of tasks"),
    ("task_import", {"tasks": [{"subject": "no key"}]}, "key"),
    ("task_update", {"taskId": 1, "gate": 5}, "gate must be a string"),
    ("task_list", {"status": "someday"}, "status must be one or a list of"),
    ("task_claim", {"taskId": 9}, "no task #9"),
]


@pytest.mark.parametrize(("name", "arguments", "message"), BAD_CALLS, ids=lambda x: str(x)[:40])
def test_bad_calls_are_clear_errors_that_change_nothing(board_dir, name, arguments, message):
    call(board_dir, "task_create", {"subject": "A"})
    call(board_dir, "task_create", {"subject": "B", "addBlockedBy": [1]})
    before = snapshot(board_dir)
    with pytest.raises(TaskError) as error:
        tools.dispatch(name, arguments, str(board_dir), "agent-1")
    assert message in tools.error_message(error.value)
    assert snapshot(board_dir) == before


def test_deeply_nested_metadata_is_refused(board_dir):
    nested: list = []
    for _ in range(150):
        nested = [nested]
    with pytest.raises(UsageError, match="nested too deeply"):
        call(board_dir, "task_create", {"subject": "A", "metadata": {"deep": nested}})


# -- tasks schema -------------------------------------------------------------------


def test_schema_prints_anthropic_tool_definitions(run):
    printed = json.loads(run("schema").stdout)
    assert printed == tools.definitions("anthropic")
    assert [item["name"] for item in printed] == [tool.name for tool in tools.TOOLS]
    for item in printed:
        assert set(item) == {"name", "description", "input_schema"}


def test_schema_prints_openai_function_definitions(run):
    printed = json.loads(run("schema", "--format", "openai").stdout)
    anthropic = tools.definitions("anthropic")
    assert len(printed) == len(anthropic)
    for item, same in zip(printed, anthropic, strict=True):
        assert set(item) == {"type", "function"} and item["type"] == "function"
        assert item["function"] == {
            "name": same["name"],
            "description": same["description"],
            "parameters": same["input_schema"],
        }


def test_schema_refuses_an_unknown_format(run):
    result = run("schema", "--format", "gemini", "--json", expect=2)
    assert json.loads(result.stderr.splitlines()[-1])["error"]["code"] == "usage"


# -- tasks call ---------------------------------------------------------------------


def test_call_prints_the_document_and_exits_0(board_dir):
    done = tasks_call(board_dir, {"name": "task_create", "input": {"subject": "Write parser"}})
    assert done.returncode == 0, done.stderr
    created = json.loads(done.stdout)
    assert created == assert_sound(board_dir)[1]
    assert done.stderr == b""


def test_call_reports_what_a_change_set_free_on_stderr(board_dir):
    tasks_call(board_dir, {"name": "task_create", "input": {"subject": "A"}})
    tasks_call(board_dir, {"name": "task_create", "input": {"subject": "B", "addBlockedBy": [1]}})
    done = tasks_call(board_dir, {"name": "task_update", "input": {"taskId": "1", "status": "completed"}})
    assert done.returncode == 0
    assert json.loads(done.stdout)["status"] == "completed"
    assert stderr_lines(done) == [{"unblocked": [2]}]


@pytest.mark.parametrize(
    ("payload", "code", "message"),
    [
        ({"name": "task_get", "input": {"taskId": 42}}, 3, "no task #42"),
        ({"name": "task_nope", "input": {}}, 2, "unknown tool 'task_nope'"),
        ({"name": "task_get", "input": {"taskId": "x"}}, 2, "taskId must be a task id"),
        ({"name": "task_get"}, 2, "task_get needs taskId"),
        ({"input": {}}, 2, '{"name": TOOL, "input": {ARGUMENTS}}'),
        ({"name": "task_get", "input": {"taskId": 1}, "colour": "x"}, 2, "unknown keys 'colour'"),
        ({"name": "task_get", "input": {"taskId": 1}, "arguments": {}}, 2, "both input and arguments"),
        ({"name": "task_get", "arguments": "{not json"}, 2, "arguments are not JSON"),
        ({"name": "task_get", "arguments": "[1]"}, 2, "as a JSON object, not an array"),
        ([1, 2], 2, "must be a JSON object"),
        ("{not json", 2, "is not JSON"),
        ("", 2, "is not JSON"),
        (b"\xff\xfe", 2, "not valid UTF-8"),
        ({"name": "task_update", "input": {"taskId": 1, "addBlockedBy": [1]}}, 4, "cycle #1 → #1"),
    ],
    ids=lambda x: str(x)[:30],
)
def test_a_failed_call_exits_with_the_command_lines_code_and_error_line(board_dir, payload, code, message):
    tasks_call(board_dir, {"name": "task_create", "input": {"subject": "A"}})
    before = snapshot(board_dir)
    done = tasks_call(board_dir, payload)
    assert done.returncode == code, done.stderr
    assert done.stdout == b""
    error = stderr_lines(done)[-1]["error"]
    assert error["exit"] == code and message in error["message"]
    assert error["code"] == {2: "usage", 3: "not_found", 4: "refused"}[code]
    assert snapshot(board_dir) == before


@pytest.mark.parametrize(
    "payload",
    [
        {"type": "tool_use", "id": "toolu_01", "name": "task_get", "input": {"taskId": 1}},
        {"name": "task_get", "arguments": '{"taskId": "#1"}'},
        {"id": "call_1", "type": "function", "function": {"name": "task_get", "arguments": '{"taskId": 1}'}},
        {"name": "task_get", "arguments": {"taskId": "1"}},
    ],
    ids=["anthropic tool_use block", "openai function call", "openai tool call", "arguments as an object"],
)
def test_call_takes_a_tool_call_as_the_models_api_hands_it_back(board_dir, payload):
    """No glue between a model's reply and `tasks call`: the tool-use block of Anthropic's
    API and the tool call of OpenAI's (arguments as JSON text) are read as they come."""
    tasks_call(board_dir, {"name": "task_create", "input": {"subject": "A"}})
    done = tasks_call(board_dir, payload)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["subject"] == "A"


def test_call_refuses_a_huge_payload(board_dir):
    done = tasks_call(
        board_dir, json.dumps({"name": "task_create", "input": {"subject": "A", "description": "x" * (3 << 20)}})
    )
    assert done.returncode == 2
    assert "longer than" in stderr_lines(done)[-1]["error"]["message"]
    assert not board_dir.exists()


def test_call_knows_the_caller_from_as_and_tasks_owner(board_dir):
    tasks_call(board_dir, {"name": "task_create", "input": {"subject": "A"}})
    tasks_call(board_dir, {"name": "task_create", "input": {"subject": "B"}})
    by_env = tasks_call(board_dir, {"name": "task_claim"}, env={"TASKS_OWNER": "agent-env"})
    assert json.loads(by_env.stdout)["owner"] == "agent-env"
    by_flag = tasks_call(board_dir, {"name": "task_claim"}, "--as", "agent-flag", env={"TASKS_OWNER": "agent-env"})
    assert json.loads(by_flag.stdout)["owner"] == "agent-flag"
    refused = tasks_call(board_dir, {"name": "task_update", "input": {"taskId": 1, "status": "pending"}}, "--as", "x")
    assert refused.returncode == 4


def test_call_on_a_damaged_board_shows_the_rest_and_exits_6(board_dir):
    for subject in ("A", "B"):
        tasks_call(board_dir, {"name": "task_create", "input": {"subject": subject}})
    (board_dir / "task_1.json").write_text("{broken")
    done = tasks_call(board_dir, {"name": "task_list"})
    assert done.returncode == 6
    assert [task["id"] for task in json.loads(done.stdout)["tasks"]] == [2]
    error = stderr_lines(done)[-1]["error"]
    assert error["code"] == "corrupt" and "task_1.json" in error["message"]


LOADED = r"""
import io, json, sys
sys.stdin = io.TextIOWrapper(io.BytesIO(sys.argv[2].encode()))
from taskboard.__main__ import main
code = main(sys.argv[3:])
with open(sys.argv[1], "w") as out:
    json.dump({"exit": code, "modules": sorted(sys.modules)}, out)
"""


@pytest.mark.parametrize(
    "args",
    [("call",), ("schema",), ("schema", "--format", "openai"), ("setup", "claude"), ("setup", "codex")],
    ids=" ".join,
)
def test_schema_call_and_setup_never_import_the_mcp_sdk(tmp_path, board_dir, args):
    report = tmp_path / "report.json"
    payload = json.dumps({"name": "task_create", "input": {"subject": "A"}})
    subprocess.run(
        [sys.executable, "-c", LOADED, str(report), payload, "--dir", str(board_dir), *args],
        cwd=tmp_path,
        check=True,
        timeout=60,
        capture_output=True,
    )
    result = json.loads(report.read_text())
    assert result["exit"] == 0
    assert not [name for name in result["modules"] if name.split(".")[0] in ("mcp", "mcp_types", "pydantic", "anyio")]


@pytest.mark.parametrize(
    "payload",
    [
        {"name": "task_get", "input": {"taskId": 1}},
        {"name": "task_get", "input": {"taskId": 9}},
        {"name": "task_create", "input": {"subject": "B", "addBlockedBy": [1]}},
        "{oops",
    ],
    ids=lambda x: str(x)[:30],
)
def test_call_answers_alike_without_click_and_through_it(tmp_path, payload):
    """`tasks call` runs without importing click (the fast path); any other spelling,
    here with --timeout, goes through click: both answer alike."""
    import shutil

    from taskboard.__main__ import fast_command, fire_hooks
    from taskboard.cli.invocation import Invocation
    from taskboard.git import claim_authority

    assert fast_command(["--dir", "x", "call"], Invocation(claim_authority, fire_hooks)) is not None
    assert fast_command(["--timeout", "5", "call"], Invocation(claim_authority, fire_hooks)) is None
    answers = []
    for flags in ((), ("--timeout", "5")):
        board = tmp_path / "board" / ".tasks"
        shutil.rmtree(board.parent, ignore_errors=True)
        tasks_call(board, {"name": "task_create", "input": {"subject": "A"}})
        done = tasks_call(board, payload, *flags)
        answers.append((done.returncode, VOLATILE.sub(b"", done.stdout), done.stderr))
    assert answers[0] == answers[1]


def test_an_unreachable_claim_remote_is_busy_unless_offline(tmp_path):
    """With claims through a git remote that cannot be reached, task_claim is refused
    as busy (5), naming offline; with offline: true it claims on this clone."""
    repo, remote = tmp_path / "repo", tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "remote", "add", "origin", str(remote)], check=True)
    init = subprocess.run(
        [sys.executable, "-m", "taskboard", "init", "--remote", "origin"], cwd=repo, capture_output=True
    )
    assert init.returncode == 0, init.stderr
    board = repo / ".tasks"
    call(board, "task_create", {"subject": "A"})
    remote.rename(tmp_path / "gone.git")  # the remote can no longer be reached
    with pytest.raises(TaskError) as busy:
        call(board, "task_claim", caller="agent-1")
    assert busy.value.exit_code == 5 and "offline: true" in tools.error_message(busy.value)
    taken = call(board, "task_claim", {"offline": True}, caller="agent-1").document
    assert (taken["id"], taken["owner"]) == (1, "agent-1")
