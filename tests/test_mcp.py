"""`tasks mcp`: the board over MCP, driven by the official SDK's client.

The tool logic through an in-memory client session (the SDK's in-process transport:
JSON-RPC over memory streams, the initialize handshake included); the wiring through
a real `tasks mcp` subprocess and the SDK's stdio client: listing tools, creating,
completing, claiming, errors, identity, a board that vanishes, and the server and CLI
processes on one board at once, judged by the independent invariant checker."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

import anyio
import pytest
from gitboard import TASKS
from invariants import assert_sound, snapshot
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from worker import run_together

from taskboard.agents import mcp as mcp_server
from taskboard.agents import tools


def texts(result) -> list:
    return [json.loads(block.text) for block in result.content]


def in_memory(board_dir, caller: str = "") -> Client:
    return Client(mcp_server.build(tools, str(board_dir), caller), mode="legacy")


def stdio(board_dir, *flags: str, env: dict | None = None, cwd=None) -> Client:
    """`python -m taskboard [--dir BOARD] FLAGS mcp` as a real process, spoken to over stdio."""
    server_env = {"PYTHONPATH": os.pathsep.join(sys.path), **(env or {})}
    board = ["--dir", str(board_dir)] if board_dir is not None else []
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "taskboard", *board, *flags, "mcp"], env=server_env, cwd=cwd
    )
    return Client(params)


def run_async(function, *args):
    return anyio.run(function, *args)


# -- the tool logic, in memory -------------------------------------------------------


def test_the_tools_listed_are_the_table(board_dir):
    async def scenario():
        async with in_memory(board_dir) as client:
            return (await client.list_tools()).tools

    listed = run_async(scenario)
    assert [tool.name for tool in listed] == [tool.name for tool in tools.TOOLS]
    for tool in listed:
        mine = tools.BY_NAME[tool.name]
        assert tool.input_schema == mine.input_schema()
        assert tool.description == mine.description
        assert tool.annotations.read_only_hint is mine.read_only
        assert tool.annotations.open_world_hint is False
    assert {tool.name for tool in listed if tool.annotations.read_only_hint} == {"task_get", "task_list", "task_log"}


def test_a_plan_worked_through_the_tools(board_dir, run):
    async def scenario():
        async with in_memory(board_dir, "agent-1") as client:
            first = await client.call_tool("task_create", {"subject": "Write parser"})
            second = await client.call_tool("task_create", {"subject": "Write tests", "addBlockedBy": ["#1"]})
            claimed = await client.call_tool("task_claim", {})
            done = await client.call_tool("task_update", {"taskId": 1, "status": "completed"})
            listed = await client.call_tool("task_list", {"status": "ready"})
            got = await client.call_tool("task_get", {"taskId": "2"})
            return first, second, claimed, done, listed, got

    first, second, claimed, done, listed, got = run_async(scenario)
    assert not any(result.is_error for result in (first, second, claimed, done, listed, got))
    assert [(t["id"], t["subject"], t["status"]) for t in texts(first)] == [(1, "Write parser", "pending")]
    assert texts(second)[0]["blockedBy"] == [1]
    assert texts(claimed)[0]["owner"] == "agent-1" and texts(claimed)[0]["status"] == "in_progress"
    assert texts(done) == [run.record(1), {"unblocked": [2]}]
    assert texts(listed) == [{"tasks": [run.record(2)], "total": 1}]
    assert texts(got) == [run.record(2)]


@pytest.mark.parametrize(
    ("name", "arguments", "code", "message"),
    [
        ("task_get", {"taskId": 42}, "not_found", "no task #42"),
        ("task_get", {"taskId": "#x"}, "usage", "taskId must be a task id"),
        ("task_get", {}, "usage", "task_get needs taskId"),
        ("task_get", {"taskId": 1, "extra": 1}, "usage", "has no argument 'extra'"),
        ("task_teleport", {}, "usage", "unknown tool 'task_teleport'"),
        ("task_create", {"subject": ["a"]}, "usage", "subject must be a string"),
        ("task_create", {"subject": "x", "description": "y" * (tools.MAX_INPUT + 10)}, "usage", "at most"),
        ("task_update", {"taskId": 1, "addBlocks": [1]}, "refused", "cycle #1 → #1"),
        ("task_claim", {"taskId": 1}, "usage", "claiming needs an owner"),
    ],
    ids=lambda x: str(x)[:30],
)
def test_errors_are_tool_errors_with_the_command_lines_code(board_dir, name, arguments, code, message):
    async def scenario():
        async with in_memory(board_dir) as client:
            await client.call_tool("task_create", {"subject": "A"})
            before = snapshot(board_dir)
            failed = await client.call_tool(name, arguments)
            after = snapshot(board_dir)
            still = await client.call_tool("task_get", {"taskId": 1})  # the server goes on answering
            return failed, before == after, still

    failed, unchanged, still = run_async(scenario)
    assert failed.is_error and unchanged
    [error] = texts(failed)
    assert error["error"]["code"] == code and message in error["error"]["message"]
    assert error["error"]["exit"] == {"usage": 2, "not_found": 3, "refused": 4}[code]
    assert not still.is_error and texts(still)[0]["id"] == 1


def test_a_bug_is_an_internal_error_not_a_dead_server(board_dir, monkeypatch):
    def broken(board, args):
        raise ZeroDivisionError("boom")

    monkeypatch.setattr(tools.BY_NAME["task_get"], "run", broken)
    board_dir.mkdir()  # a board there: the call reaches the tool (on no board it is refused first)

    async def scenario():
        async with in_memory(board_dir) as client:
            failed = await client.call_tool("task_get", {"taskId": 1})
            listed = await client.call_tool("task_list", {})
            return failed, listed

    failed, listed = run_async(scenario)
    assert failed.is_error and texts(failed)[0]["error"]["code"] == "internal"
    assert "ZeroDivisionError: boom" in texts(failed)[0]["error"]["message"]
    assert not listed.is_error


# -- the wiring: a real `tasks mcp` over stdio ----------------------------------------


def test_stdio_server_lists_creates_completes_claims_and_errs(board_dir, run):
    async def scenario():
        async with stdio(board_dir, env={"TASKS_OWNER": "agent-env"}) as client:
            listed = [tool.name for tool in (await client.list_tools()).tools]
            a = await client.call_tool("task_create", {"subject": "A"})
            b = await client.call_tool("task_create", {"subject": "B", "addBlockedBy": [1]})
            claim = await client.call_tool("task_claim", {})
            done = await client.call_tool("task_update", {"taskId": "#1", "status": "completed"})
            nothing = await client.call_tool("task_get", {"taskId": 99})
            return listed, a, b, claim, done, nothing

    listed, a, b, claim, done, nothing = run_async(scenario)
    assert listed == [tool.name for tool in tools.TOOLS]
    assert texts(a)[0]["id"] == 1 and texts(b)[0]["blockedBy"] == [1]
    assert texts(claim)[0]["owner"] == "agent-env"
    assert texts(done) == [run.record(1), {"unblocked": [2]}]
    assert nothing.is_error and texts(nothing) == [
        {"error": {"code": "not_found", "message": "no task #99", "exit": 3}}
    ]
    assert_sound(board_dir)


def test_the_caller_is_as_name_over_tasks_owner(board_dir):
    async def scenario():
        async with stdio(board_dir, "--as", "agent-flag", env={"TASKS_OWNER": "agent-env"}) as client:
            await client.call_tool("task_create", {"subject": "A"})
            claimed = await client.call_tool("task_claim", {})
        async with stdio(board_dir, "--as", "agent-other") as client:
            refused = await client.call_tool("task_update", {"taskId": 1, "status": "completed"})
        return claimed, refused

    claimed, refused = run_async(scenario)
    assert texts(claimed)[0]["owner"] == "agent-flag"
    assert refused.is_error
    error = texts(refused)[0]["error"]
    assert error["code"] == "refused" and "held by agent-flag; you are agent-other" in error["message"]


def test_the_board_is_found_per_call(tmp_path):
    project = tmp_path / "project"
    (project / ".tasks").mkdir(parents=True)
    other = tmp_path / "other" / ".tasks"

    async def scenario():
        async with stdio(None, cwd=project) as client:
            await client.call_tool("task_create", {"subject": "found from the working folder"})
            await client.call_tool("task_create", {"subject": "named in the call", "board": str(other)})

    run_async(scenario)
    assert assert_sound(project / ".tasks")[1]["subject"] == "found from the working folder"
    assert assert_sound(other)[1]["subject"] == "named in the call"


def test_a_server_started_again_under_the_same_name_resumes_its_task_once_the_lease_runs_out(board_dir, run):
    """task_claim goes through the command line's claim: an agent's server that ended while
    it held a leased task, started again as the same caller, waits out the lease and gets
    the task back (it used to end the wait at once: "#1 held by you")."""

    async def scenario():
        async with stdio(board_dir, "--as", "agent-a") as client:
            await client.call_tool("task_create", {"subject": "A"})
            await client.call_tool("task_create", {"subject": "B", "addBlockedBy": [1]})
            first = await client.call_tool("task_claim", {"lease": "1s"})
        async with stdio(board_dir, "--as", "agent-a") as client:
            again = await client.call_tool("task_claim", {"wait": 30, "lease": "15m"})
        return first, again

    first, again = run_async(scenario)
    assert texts(first)[0]["id"] == 1
    assert not again.is_error, texts(again)
    assert (texts(again)[0]["id"], texts(again)[0]["owner"]) == (1, "agent-a")
    events = json.loads(run("log", "1", "--json").stdout)
    resumed = [e for e in events if e["event"] == "claimed" and e.get("resumed")]
    assert [(e["actor"], e["lease"]) for e in resumed] == [("agent-a", 900)], events
    assert_sound(board_dir)


def test_a_board_that_is_not_there_is_named_not_read_as_a_finished_plan(tmp_path):
    """Found with the MCP inspector: on a board folder that does not exist, task_claim said
    "no ready task" (to an agent: the plan is finished) and a listing was silently empty."""
    missing = tmp_path / "typo" / ".tasks"

    async def scenario():
        async with in_memory(missing, "agent") as client:
            calls = [
                ("task_claim", {}),
                ("task_claim", {"wait": 0.2}),
                ("task_update", {"taskId": 1, "status": "completed"}),
                ("task_note", {"taskId": 1, "text": "x"}),
                ("task_get", {"taskId": 1}),
                ("task_log", {"taskId": 1}),
                ("task_list", {}),
                ("task_log", {}),
            ]
            return [await client.call_tool(name, arguments) for name, arguments in calls]

    *refused, listed, logged = run_async(scenario)
    for answer in refused:
        assert answer.is_error
        error = texts(answer)[0]["error"]
        assert (error["code"], error["exit"]) == ("not_found", 3)
        assert error["message"].startswith(f"there is no board at {missing}: make one there with tasks init")
    for answer, empty in ((listed, {"tasks": [], "total": 0}), (logged, {"events": [], "total": 0})):
        assert not answer.is_error
        document, warning = texts(answer)
        assert document == empty
        assert warning["warning"].startswith(f"there is no board at {missing}")
        assert warning["warning"].endswith("(this is read as an empty board)")
    assert not missing.exists()


def test_a_server_whose_board_vanishes_keeps_answering(tmp_path):
    project = tmp_path / "project"
    board = project / ".tasks"
    board.mkdir(parents=True)

    async def scenario():
        async with stdio(None, cwd=project) as client:
            await client.call_tool("task_create", {"subject": "A"})
            for path in sorted(project.rglob("*"), reverse=True):
                path.rmdir() if path.is_dir() else path.unlink()
            project.rmdir()  # the board and the server's working folder are gone
            gone = await client.call_tool("task_get", {"taskId": 1})
            listed = await client.call_tool("task_list", {})
            schema = await client.list_tools()
            return gone, listed, schema

    gone, listed, schema = run_async(scenario)
    assert gone.is_error and texts(gone)[0]["error"]["code"] == "usage"
    assert "working folder no longer exists" in texts(gone)[0]["error"]["message"]
    assert listed.is_error
    assert len(schema.tools) == len(tools.TOOLS)


def test_without_the_sdk_tasks_mcp_exits_2_naming_the_install(tmp_path):
    blocked = "import sys; sys.modules.update(mcp=None, mcp_types=None); from taskboard.__main__ import main; sys.exit(main(['mcp']))"
    done = subprocess.run([sys.executable, "-c", blocked], capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 2
    assert done.stdout == b""
    assert "pipx install --force '.[mcp]'" in done.stderr.decode()


def test_nothing_but_the_protocol_reaches_stdout(board_dir):
    """A raw stdio session: every line the server prints is a JSON-RPC message."""
    requests = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "task_create", "arguments": {"subject": "A"}},
        },
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "task_get", "arguments": {"taskId": 7}}},
    ]
    server = subprocess.Popen(
        [sys.executable, "-m", "taskboard", "--dir", str(board_dir), "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    replies = []
    try:
        for request in requests:
            server.stdin.write(json.dumps(request).encode() + b"\n")
            server.stdin.flush()
            if "id" in request:  # a request gets one reply line; a notification none
                replies.append(json.loads(server.stdout.readline()))
    finally:
        rest, errors = server.communicate(timeout=60)  # closes stdin: the client is done
    assert server.returncode == 0, errors
    assert rest == b""  # nothing after the replies either
    assert all(reply["jsonrpc"] == "2.0" for reply in replies)
    by_id = {reply["id"]: reply for reply in replies}
    assert sorted(by_id) == [1, 2, 3]
    assert json.loads(by_id[2]["result"]["content"][0]["text"])["subject"] == "A"
    assert by_id[3]["result"]["isError"] is True


# -- the server and the command line on one board at once ---------------------------


def test_server_and_cli_processes_together_keep_the_board_sound(board_dir):
    """Four CLI processes create and claim while one MCP server does the same; then
    every id is unique, every task is someone's at most once, and the invariants hold."""
    per_worker = 8
    plans = [
        [["--dir", str(board_dir), "create", f"cli{w} n{n}", "--json"] for n in range(per_worker)]
        + [["--dir", str(board_dir), "--as", f"cli{w}", "claim", "--json"] for _ in range(3)]
        for w in range(4)
    ]
    results: list = []
    thread = threading.Thread(target=lambda: results.extend(run_together(plans)))

    async def scenario():
        mine, claims = [], []
        async with stdio(board_dir, "--as", "server") as client:
            thread.start()
            for n in range(per_worker):
                mine.append(await client.call_tool("task_create", {"subject": f"mcp n{n}"}))
            for _ in range(3):
                claims.append(await client.call_tool("task_claim", {}))
            thread.join()
            final = await client.call_tool("task_list", {"limit": 1000, "status": ["pending", "in_progress"]})
        return mine, claims, final

    mine, claims, final = run_async(scenario)
    records = assert_sound(board_dir)
    total = per_worker * 5
    assert sorted(records) == list(range(1, total + 1))
    created = [texts(result)[0]["id"] for result in mine]
    created += [json.loads(r["stdout"])["id"] for worker in results for r in worker[:per_worker]]
    assert sorted(created) == list(range(1, total + 1))
    taken = [texts(result)[0]["id"] for result in claims if not result.is_error]
    taken += [json.loads(r["stdout"])["id"] for worker in results for r in worker[per_worker:] if r["exit"] == 0]
    assert len(taken) == len(set(taken)) == 15  # 15 claims on 40 ready tasks: each won one, none twice
    owners = {records[i]["owner"] for i in taken}
    assert owners <= {"server", "cli0", "cli1", "cli2", "cli3"}
    assert texts(final)[0]["total"] == total


def test_a_waiting_claim_leaves_the_server_answering(board_dir, run):
    """task_claim with wait runs off the event loop: while it waits, other calls are
    answered; a CLI process giving the task back wakes it, and it takes the task."""
    run("create", "A")
    run("--as", "agent-cli", "claim")
    order: list[str] = []

    async def scenario():
        async with stdio(board_dir, "--as", "agent-mcp") as client:
            claimed: list = []

            async def wait_for_claim():
                claimed.append(await client.call_tool("task_claim", {"wait": 120}))
                order.append("claimed")

            async with anyio.create_task_group() as group:
                group.start_soon(wait_for_claim)
                got = await client.call_tool("task_get", {"taskId": 1})  # answered while the claim waits
                order.append("got")
                assert texts(got)[0]["owner"] == "agent-cli"
                await anyio.to_thread.run_sync(lambda: run("--as", "agent-cli", "release", "1"))
            return claimed[0]

    claimed = run_async(scenario)
    assert order == ["got", "claimed"]
    assert not claimed.is_error and texts(claimed)[0]["owner"] == "agent-mcp"
    assert run.record(1)["owner"] == "agent-mcp"


HELD = "were not pushed"  # the waiter's word for the code commits its sync leaves to the user


def test_a_waiters_warning_reaches_the_caller_when_the_wait_ends_without_a_claim(fleet):
    """b holds a code commit nobody reviewed and a board change the remote lacks: a waiting
    task_claim syncs the board alone and warns that the commit was not pushed. When the
    wait then ends without a claim (cat holds #4 on a throughout), the tool error carries
    that warning after the error (a real `tasks mcp`), and `tasks call` prints it on stderr
    before its error line, as the command line does; it was lost."""
    a, b = fleet.planned("a", "b")
    a.tasks("claim", "4", owner="cat")
    code = b.commit_file("app.py", "print('not reviewed yet')\n", "code nobody reviewed")
    env = {**fleet.env, "TASKS_OWNER": "bob"}
    b.tasks("create", "Made on b")  # the waiter's first poll syncs the board alone

    async def scenario():
        async with stdio(None, env=env, cwd=b.top) as client:
            return await client.call_tool("task_claim", {"taskId": 4, "wait": 5})

    failed = run_async(scenario)
    assert failed.is_error
    error, *said = texts(failed)
    assert error["error"]["code"] == "not_found" and "waited 5 s" in error["error"]["message"]
    assert len(said) == 1 and HELD in said[0]["warning"] and code[:12] in said[0]["warning"], said
    b.tasks("create", "Made on b again")  # the next waiter syncs the board alone again
    call = {"name": "task_claim", "input": {"taskId": 4, "wait": 5}}
    done = subprocess.run(
        [*TASKS, "call"], cwd=b.top, env=env, input=json.dumps(call), capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 3 and done.stdout == "", done
    lines = [json.loads(line) for line in done.stderr.splitlines()]
    assert [list(line) for line in lines] == [["warning"], ["error"]], lines
    assert HELD in lines[0]["warning"] and code[:12] in lines[0]["warning"]
    shown = ["git", "--git-dir", str(fleet.remote), "cat-file", "-e", f"{code}^{{commit}}"]
    assert subprocess.run(shown, env=fleet.env, capture_output=True).returncode != 0  # the code stayed on b
    assert (
        "Made on b again"
        in subprocess.run(
            ["git", "--git-dir", str(fleet.remote), "grep", "-h", "Made on b again", "main", "--", ".tasks"],
            env=fleet.env,
            capture_output=True,
            text=True,
        ).stdout
    )  # the board went
