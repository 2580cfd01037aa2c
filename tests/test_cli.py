"""The contract of DESIGN.md through the real `tasks` entry point."""

from __future__ import annotations

import json
import os
import re
import subprocess

import pytest
from conftest import tasks_process

from taskboard.core.model import KEY_ORDER


def lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line]


def jsonl(stderr: str) -> list[dict]:
    return [json.loads(line) for line in lines(stderr)]


# -- the record -------------------------------------------------------------------------


def test_record_bytes_are_the_canonical_encoding(run, board_dir):
    run("create", "Write parser")
    created = run.json("create", "Write checker", "--blocked-by", "1", "-d", "naïve → ✓")
    raw = (board_dir / "task_2.json").read_bytes()
    record = json.loads(raw)
    assert list(record) == list(KEY_ORDER)
    assert raw == (json.dumps(record, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    assert "naïve → ✓".encode() in raw
    assert created == record
    assert re.fullmatch(r"[0-9a-f]{12}", record["uid"])
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", record["createdAt"])
    assert record["createdAt"] == record["updatedAt"]
    assert record | {"uid": "", "createdAt": "", "updatedAt": ""} == {
        "id": 2,
        "subject": "Write checker",
        "description": "naïve → ✓",
        "status": "pending",
        "blockedBy": [1],
        "blocks": [],
        "owner": "",
        "uid": "",
        "metadata": {},
        "createdAt": "",
        "updatedAt": "",
    }


def test_unknown_keys_survive_a_rewrite(run, board_dir):
    run("create", "A")
    path = board_dir / "task_1.json"
    record = json.loads(path.read_text())
    record["x-custom"] = {"keep": [1, 2]}
    path.write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n")
    run("update", "1", "--subject", "B")
    rewritten = json.loads(path.read_text())
    assert rewritten["x-custom"] == {"keep": [1, 2]}
    assert list(rewritten)[-1] == "x-custom" and rewritten["subject"] == "B"


def test_an_update_that_changes_nothing_writes_nothing(run, board_dir):
    run("create", "A", "--meta", "priority=1")
    path = board_dir / "task_1.json"
    before, mtime = path.read_bytes(), path.stat().st_mtime_ns
    run("update", "1", "--subject", "A", "--meta", "priority=1", "--status", "pending")
    assert path.read_bytes() == before and path.stat().st_mtime_ns == mtime


def test_updated_at_moves_when_a_neighbour_rewrites_the_file(run, board_dir):
    run("create", "A")
    run("create", "B")
    path = board_dir / "task_1.json"
    record = json.loads(path.read_text())
    record["updatedAt"] = "2000-01-01T00:00:00Z"
    path.write_text(json.dumps(record, indent=2) + "\n")
    run("update", "2", "--add-blocked-by", "1")
    assert run.record(1)["blocks"] == [2]
    assert run.record(1)["updatedAt"] != "2000-01-01T00:00:00Z"


def test_ids_are_sequential_and_never_reused(run):
    for subject in "ABC":
        run("create", subject)
    run("delete", "3")
    assert run.json("create", "D")["id"] == 4


# -- the graph ---------------------------------------------------------------------------


def test_completing_unblocks_dependents_and_says_so(run):
    run("create", "parser")
    run("create", "checker", "--blocked-by", "1")
    run("create", "docs", "--blocked-by", "1", "--blocked-by", "2")
    result = run("update", "1", "--status", "completed")
    assert result.stderr.strip() == "unblocked #2"
    assert run.record(2)["blockedBy"] == [] and run.record(3)["blockedBy"] == [2]
    assert run.record(1)["blocks"] == [2, 3]  # history stays
    result = run("update", "2", "--status", "completed", "--json")
    assert jsonl(result.stderr) == [{"unblocked": [3]}]
    assert json.loads(result.stdout)["status"] == "completed"


def test_reopening_puts_the_blocker_back_everywhere(run):
    run("create", "base")
    run("create", "next", "--blocked-by", "1")
    run("create", "done-too", "--blocked-by", "1")
    run("update", "1", "--status", "completed")
    run("update", "3", "--status", "completed")
    run("update", "1", "--status", "pending")
    assert run.record(2)["blockedBy"] == [1]
    assert run.record(3)["blockedBy"] == [1]  # completed dependents too
    assert run("update", "3", "--status", "in_progress", expect=4).stderr.count("#3 is blocked by #1")


def test_edge_from_a_completed_blocker_is_history_only(run):
    run("create", "done")
    run("update", "1", "--status", "completed")
    run("create", "later", "--blocked-by", "1")
    assert run.record(1)["blocks"] == [2]
    assert run.record(2)["blockedBy"] == []
    assert [t["id"] for t in run.json("ready")] == [2]


def test_cycles_and_self_edges_are_refused_with_the_cycle_named(run, board_dir):
    for subject in "ABC":
        run("create", subject)
    run("update", "2", "--add-blocked-by", "1")
    run("update", "3", "--add-blocked-by", "2")
    before = {p.name: p.read_bytes() for p in board_dir.glob("task_*.json")}
    result = run("update", "1", "--add-blocked-by", "3", "--json", expect=4)
    error = jsonl(result.stderr)[-1]["error"]
    assert error["code"] == "refused" and error["exit"] == 4
    assert "#3 → #1 → #2 → #3" in error["message"]
    assert "#2 → #2" in run("update", "2", "--add-blocks", "2", expect=4).stderr
    assert {p.name: p.read_bytes() for p in board_dir.glob("task_*.json")} == before


def test_delete_is_logical_and_unlinks_both_sides(run):
    run("create", "finished")
    run("create", "blocker")
    run("create", "victim", "--blocked-by", "1", "--blocked-by", "2")
    run("create", "dependent", "--blocked-by", "3")
    run("update", "1", "--status", "completed")
    result = run("delete", "3", "--json")
    assert json.loads(result.stdout)["status"] == "deleted"
    assert jsonl(result.stderr) == [{"unblocked": [4]}]
    assert run.record(3)["blockedBy"] == [] and run.record(3)["blocks"] == []
    assert run.record(1)["blocks"] == [] and run.record(2)["blocks"] == []
    assert run.record(4)["blockedBy"] == []
    assert [t["id"] for t in run.json("list")] == [1, 2, 4]
    assert [t["id"] for t in run.json("list", "--all")] == [1, 2, 3, 4]
    assert "deleted" in run("update", "3", "--status", "pending", expect=4).stderr
    assert "deleted" in run("update", "4", "--add-blocked-by", "3", expect=4).stderr
    assert "deleted" in run("delete", "3", expect=4).stderr


def test_removing_the_last_blocker_reports_the_freed_task(run):
    run("create", "A")
    run("create", "B", "--blocked-by", "1")
    result = run("update", "2", "--remove-blocked-by", "1", "--json")
    assert jsonl(result.stderr) == [{"unblocked": [2]}]
    assert run.record(1)["blocks"] == [] and run.record(2)["blockedBy"] == []
    assert "did not block" in run("update", "2", "--remove-blocked-by", "1").stderr


# -- status rules and owners -----------------------------------------------------------------


@pytest.mark.parametrize(
    "start, target, blocked, ok",
    [
        ("pending", "in_progress", False, True),
        ("pending", "in_progress", True, False),
        ("pending", "completed", False, True),
        ("pending", "completed", True, False),
        ("in_progress", "completed", False, True),
        ("in_progress", "pending", True, True),
        ("completed", "pending", True, True),
        ("completed", "in_progress", False, True),
        ("completed", "in_progress", True, False),
        ("deleted", "pending", False, False),
        ("deleted", "completed", False, False),
    ],
)
def test_status_rules(run, start, target, blocked, ok):
    run("create", "blocker")
    run("create", "task")
    if start in ("in_progress", "completed"):
        run("update", "2", "--status", start)
    if blocked:
        run("update", "1", "--add-blocks", "2")
    if start == "deleted":
        run("delete", "2")
    result = run("update", "2", "--status", target, "--json", expect=0 if ok else 4)
    if ok:
        assert json.loads(result.stdout)["status"] == target
    else:
        assert jsonl(result.stderr)[-1]["error"]["code"] == "refused"
        assert "#2" in jsonl(result.stderr)[-1]["error"]["message"]


def test_owner_protection(run):
    run("create", "A")
    run("--as", "alice", "update", "1", "--status", "in_progress")
    assert run.record(1)["owner"] == "alice"  # a named caller who starts a task holds it
    refused = run("--as", "bob", "update", "1", "--status", "completed", expect=4)
    assert "alice" in refused.stderr and "#1" in refused.stderr
    run("--as", "bob", "delete", "1", expect=4)
    run("--as", "bob", "update", "1", "--owner", "bob", expect=4)
    run("update", "1", "--subject", "renamed", env={"TASKS_OWNER": "bob"}, expect=4)  # DESIGN §7: tightened
    run("update", "1", "--meta", "size=2", "--label", "x", env={"TASKS_OWNER": "bob"})  # other fields are fine
    run("update", "1", "--status", "completed", env={"TASKS_OWNER": "bob"}, expect=4)
    run("--as", "bob", "update", "1", "--status", "completed", "--force")
    assert run.record(1)["owner"] == "alice"  # completing keeps who did the work
    run("update", "1", "--status", "in_progress")  # a person at the shell is trusted
    run("--as", "alice", "update", "1", "--status", "pending")
    assert run.record(1)["owner"] == ""  # release clears the owner
    run("--as", "alice", "update", "1", "--status", "in_progress")
    run("--as", "alice", "update", "1", "--status", "pending", "--owner", "carol")
    assert run.record(1)["owner"] == "carol"


def test_claim(run):
    run("create", "A")
    run("create", "B", "--blocked-by", "1")
    run("create", "C")
    first = run.json("claim", "--owner", "alice")
    assert (first["id"], first["status"], first["owner"]) == (1, "in_progress", "alice")
    assert run.json("claim", "--owner", "bob")["id"] == 3
    run("claim", "--owner", "carol", "--json", expect=3)
    assert run.json("claim", "1", "--owner", "alice")["owner"] == "alice"  # idempotent for the holder
    assert "alice" in run("claim", "1", "--owner", "bob", expect=4).stderr
    assert "#2 is blocked by #1" in run("claim", "2", "--owner", "bob", expect=4).stderr
    run("update", "1", "--status", "completed")
    assert "completed" in run("claim", "1", "--owner", "alice", expect=4).stderr
    assert run.json("--as", "dana", "claim")["owner"] == "dana"  # owner defaults to the caller
    assert "owner" in run("claim", expect=2).stderr
    run("claim", "99", "--owner", "x", expect=3)


def test_claim_respects_a_reservation_on_a_pending_task(run):
    run("create", "A", "--owner", "alice")
    run("create", "B")
    assert run.json("claim", "--owner", "bob")["id"] == 2
    assert run.json("claim", "--owner", "alice")["id"] == 1
    run("create", "C", "--owner", "alice")
    run("claim", "3", "--owner", "bob", expect=4)


# -- the commands -------------------------------------------------------------------------


def test_list_filters(run):
    run("create", "A")
    run("create", "B", "--blocked-by", "1")
    run("create", "C", "--owner", "zoe")
    run("create", "D")
    run("update", "4", "--status", "in_progress")
    run("update", "3", "--status", "completed")

    def ids(*args):
        return [t["id"] for t in run.json("list", *args)]

    assert ids() == [1, 2, 3, 4]
    assert ids("--ready") == [1] == [t["id"] for t in run.json("ready")]
    assert ids("--blocked") == [2]
    assert ids("--status", "completed", "--status", "in_progress") == [3, 4]
    assert ids("--owner", "zoe") == [3]
    run("list", "--ready", "--blocked", expect=2)
    run("list", "--status", "paused", expect=2)


def test_board_json_has_one_key_per_status(run):
    run("create", "A")
    run("create", "B")
    run("update", "2", "--status", "completed")
    run("create", "C")
    run("delete", "3")
    board = run.json("board")
    assert list(board) == ["pending", "in_progress", "completed"]
    assert [t["id"] for t in board["pending"]] == [1] and board["in_progress"] == []
    assert [t["id"] for t in board["completed"]] == [2]


def test_check_on_a_sound_board(run):
    run("create", "A")
    assert run.json("check") == {"ok": True, "problems": []}


def test_graph_formats(run):
    run("create", "A")
    run("create", "B", "--blocked-by", "1")
    run("create", "C", "--blocked-by", "2")
    run("update", "1", "--status", "completed")
    assert run.json("graph")["edges"] == [[1, 2], [2, 3]]
    dot = run("graph", "--format", "dot").stdout
    assert set(re.findall(r"t(\d+) -> t(\d+)", dot)) == {("1", "2"), ("2", "3")}
    mermaid = run("graph", "--format", "mermaid").stdout
    assert mermaid.startswith("flowchart")
    assert set(re.findall(r"t(\d+) --> t(\d+)", mermaid)) == {("1", "2"), ("2", "3")}


def test_meta_values(run):
    run("create", "A", "--meta", "priority=2", "--meta", 'labels=["a","b"]', "--meta", "note=hello world")
    assert run.record(1)["metadata"] == {"priority": 2, "labels": ["a", "b"], "note": "hello world"}
    run("update", "1", "--meta", "priority=", "--meta", "done=true")
    assert run.record(1)["metadata"] == {"labels": ["a", "b"], "note": "hello world", "done": True}
    for bad in ("x=NaN", "x=Infinity", "x=-Infinity", "novalue", "=3"):
        run("update", "1", "--meta", bad, expect=2)


def test_description_from_stdin(run):
    run("create", "A", "-d", "-", input="line one\nline two\n")
    assert run.record(1)["description"] == "line one\nline two\n"
    run("update", "1", "-d", "-", input=b"\xff\xfe", expect=2)


def test_init_writes_git_files(run, board_dir):
    result = run.json("init")
    assert result["created"] == [".gitignore", ".gitattributes"]
    assert run.json("init")["created"] == []
    assert ".lock" in (board_dir / ".gitignore").read_text()
    assert (
        board_dir / ".gitattributes"
    ).read_text() == "task_*.json text eol=lf merge=tasks\njournal/*.jsonl merge=union\n"


@pytest.mark.parametrize("bad", ["abc", "-1", "0", "../x", "1.5", "07", "99999999999999999999"])
def test_bad_ids_are_usage_errors(run, bad):
    run("create", "A")
    result = run("get", bad, "--json", expect=2)
    assert result.stdout == ""
    assert jsonl(result.stderr)[-1]["error"]["code"] == "usage"


def test_error_precedence_usage_then_missing_then_refused(run):
    run("create", "A")
    run("delete", "1")
    # each error names what the one before it would have left unsaid
    assert "'bogus'" in run("update", "42", "--status", "bogus", expect=2).stderr
    assert "no task #42" in run("update", "1", "--add-blocked-by", "42", expect=3).stderr
    assert "#1 is deleted" in run("update", "1", "--subject", "x", expect=4).stderr


def test_read_commands_on_a_missing_board(run, board_dir):
    assert run.json("list") == []
    assert run.json("board") == {"pending": [], "in_progress": [], "completed": []}
    run("get", "1", expect=3)
    assert not board_dir.exists()


def test_version(run):
    from taskboard import __version__

    assert run("--version").stdout.strip() == f"tasks {__version__}"


# -- board discovery and real processes ----------------------------------------------------------


def test_board_discovery(tmp_path):
    project = tmp_path / "project"
    (project / "src" / "deep").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    deep = project / "src" / "deep"
    made = tasks_process("create", "from deep", "--json", cwd=deep)
    assert made.returncode == 0, made.stderr
    assert (project / ".tasks" / "task_1.json").exists()  # git top level
    (project / "src" / ".tasks").mkdir()
    assert tasks_process("create", "nearest", cwd=deep).returncode == 0
    assert (project / "src" / ".tasks" / "task_1.json").exists()  # nearest .tasks/ wins
    env_board = tmp_path / "elsewhere"
    assert tasks_process("create", "env", cwd=deep, env={"TASKS_DIR": str(env_board)}).returncode == 0
    assert (env_board / "task_1.json").exists()
    plain = tmp_path / "plain"
    plain.mkdir()
    assert tasks_process("create", "here", cwd=plain).returncode == 0
    assert (plain / ".tasks" / "task_1.json").exists()


def test_piped_list_is_plain_lines(tmp_path):
    board = str(tmp_path / "b")
    tasks_process("--dir", board, "create", "Fix [red] parsing")
    tasks_process("--dir", board, "create", "close [/] tag", "--blocked-by", "1")
    tasks_process("--dir", board, "update", "1", "--status", "in_progress")
    result = tasks_process("--dir", board, "list")
    assert result.returncode == 0
    assert result.stdout.decode().splitlines() == ["[>] #1: Fix [red] parsing", "[ ] #2: close [/] tag"]
    assert b"\x1b" not in result.stdout + result.stderr
    assert "2 tasks" in result.stderr.decode()


def test_json_error_is_the_last_stderr_line_of_a_real_process(tmp_path):
    result = tasks_process("--dir", str(tmp_path / "b"), "get", "5", "--json")
    assert result.returncode == 3 and result.stdout == b""
    assert json.loads(result.stderr.decode().splitlines()[-1]) == {
        "error": {"code": "not_found", "message": "no task #5", "exit": 3}
    }
    assert b"Traceback" not in result.stderr


@pytest.mark.parametrize(
    "args",
    [
        ("update", "1", "--status", "completed"),
        ("delete", "1"),
        ("claim", "--owner", "a"),
        ("claim", "1", "--owner", "a"),
        ("create", "x", "--blocked-by", "1"),
        ("create", "x", "--blocks", "2"),
    ],
)
def test_failed_change_on_a_missing_board_creates_nothing(run, board_dir, args):
    run(*args, expect=3)
    assert not board_dir.exists()


def test_bare_tasks_shows_help_without_an_error_line():
    result = tasks_process()
    assert result.returncode == 2
    assert b"Commands:" in result.stderr and b"error" not in result.stderr


def test_version_as_json(run):
    from taskboard import __version__

    assert run.json("--version") == {"version": __version__}


def test_claim_id_refuses_an_in_progress_task_with_an_open_blocker(run):
    run("create", "X")
    run("create", "Y", "--blocked-by", "1")
    run("update", "1", "--status", "completed")
    run("update", "2", "--status", "in_progress")
    run("update", "1", "--status", "pending")  # reopen: #2 is blocked again while in progress
    assert "#2 is blocked by #1" in run("claim", "2", "--owner", "bob", expect=4).stderr


def test_delete_refuses_when_a_file_it_must_inspect_is_damaged(run, board_dir):
    run("create", "A")
    run("create", "B", "--blocked-by", "1")
    (board_dir / "task_1.json").write_text("{ torn")
    before = (board_dir / "task_2.json").read_bytes()
    result = run("delete", "2", "--json", expect=6)
    assert "task_1.json" in jsonl(result.stderr)[-1]["error"]["message"]
    assert (board_dir / "task_2.json").read_bytes() == before


def test_delete_with_edge_flags_is_a_usage_error_and_owner_applies(run):
    run("create", "A")
    run("create", "B")
    run("update", "2", "--status", "deleted", "--add-blocked-by", "1", expect=2)
    assert run.json("update", "2", "--status", "deleted", "--owner", "bob")["owner"] == "bob"


def test_removing_an_edge_to_a_deleted_task_is_refused(run):
    run("create", "A")
    run("create", "B")
    run("delete", "1")
    assert "#1 is deleted" in run("update", "2", "--remove-blocked-by", "1", expect=4).stderr


def test_unblocked_lists_only_tasks_that_were_blocked_before(run):
    run("create", "A")
    run("create", "B")
    result = run("update", "1", "--status", "completed", "--add-blocks", "2", "--json")
    assert result.stderr == ""
    assert run.record(1)["blocks"] == [2] and run.record(2)["blockedBy"] == []


def test_check_fix_on_a_missing_board_creates_nothing(run, board_dir):
    assert run.json("check", "--fix") == {"ok": True, "problems": []}
    assert not board_dir.exists()


def test_a_malformed_owner_variable_does_not_break_reads(run):
    run("create", "A")
    assert len(run.json("list", env={"TASKS_OWNER": " bad"})) == 1
    run("update", "1", "--status", "in_progress", env={"TASKS_OWNER": " bad"}, expect=2)


def test_starting_a_task_does_not_need_its_dependents(run, board_dir):
    run("create", "A")
    run("create", "B", "--blocked-by", "1")
    (board_dir / "task_2.json").write_text("{ torn")
    assert run.json("update", "1", "--status", "in_progress")["status"] == "in_progress"
    run("update", "1", "--status", "completed", expect=6)  # completion must edit #2


@pytest.mark.parametrize(
    "args",
    [
        ("get", "2"),
        ("get", "#2"),
        ("get", "9"),
        ("get", "3"),
        ("get", "x"),
        ("get", "2", "3"),
        ("get",),
        ("list",),
        ("ready",),
        ("list", "--all"),
        ("ready", "extra"),
    ],
)
def test_fast_reads_answer_exactly_as_click_does(run, board_dir, monkeypatch, args):
    """get/list/ready --json skip click; the answer must not depend on the path taken."""
    import taskboard.__main__

    run("create", "A")
    run("create", "B [red]", "--blocked-by", "1")
    (board_dir / "task_3.json").write_text("{ torn")
    fast = run(*args, "--json", expect=None)
    monkeypatch.setattr(taskboard.__main__, "fast_command", lambda *_: None)
    slow = run(*args, "--json", expect=None)
    assert (fast.exit_code, fast.stdout, fast.stderr) == (slow.exit_code, slow.stdout, slow.stderr)


@pytest.mark.parametrize("subject", ["Write parser", "", "x" * 501, "tab\there", "Fix [red] parsing", "-d"])
def test_fast_create_answers_as_click_does(run, monkeypatch, subject):
    import taskboard.__main__

    def answer():
        result = run("create", subject, "--json", expect=None)
        record = json.loads(result.stdout) if result.stdout else None
        if record:
            for volatile in ("id", "uid", "createdAt", "updatedAt"):
                record.pop(volatile)
        return result.exit_code, record, result.stderr

    fast = answer()
    monkeypatch.setattr(taskboard.__main__, "fast_command", lambda *_: None)
    assert answer() == fast


def test_force_color_gives_the_rich_view_through_a_pipe_and_no_color_wins(tmp_path):
    board = str(tmp_path / "b")
    tasks_process("--dir", board, "create", "Fix [red] parsing")
    coloured = tasks_process("--dir", board, "list", env={"FORCE_COLOR": "1"})
    assert coloured.returncode == 0 and b"\x1b[" in coloured.stdout and b"Fix [red] parsing" in coloured.stdout
    plain = tasks_process("--dir", board, "list", env={"FORCE_COLOR": "1", "NO_COLOR": "1"})
    assert plain.stdout.decode() == "[ ] #1: Fix [red] parsing\n"


def test_the_printed_record_is_the_record_on_disk(run, board_dir):
    for subject in "ABC":
        run("create", subject)
    path = board_dir / "task_3.json"
    record = json.loads(path.read_text())
    record["zzz"] = 1
    path.write_text(json.dumps(record, indent=2) + "\n")
    run("update", "1", "--add-blocks", "3")
    printed = run("update", "1", "--add-blocks", "2", "--json").stdout
    assert printed == json.dumps(run.record(1), ensure_ascii=False) + "\n"
    assert json.loads(printed)["blocks"] == [2, 3]
    printed = run("update", "3", "--add-blocked-by", "2", "--json").stdout
    assert list(json.loads(printed)) == list(run.record(3)) and list(run.record(3))[-1] == "zzz"


def test_a_file_left_mid_merge_is_named_as_such(run, board_dir):
    run("create", "A")
    path = board_dir / "task_1.json"
    ours = path.read_text()
    path.write_text(f"<<<<<<< HEAD\n{ours}=======\n{ours.replace('A', 'B')}>>>>>>> topic\n")
    error = jsonl(run("get", "1", "--json", expect=6).stderr)[-1]["error"]
    assert "task_1.json" in error["message"] and "conflict markers" in error["message"]


@pytest.mark.parametrize(
    "args",
    [
        [b"create", b"a\xffb"],
        [b"create", b"ok", b"--meta", b'k="\\udcff"'],
        [b"create", b"ok", b"--owner", b"\xfe"],
        [b"create", b"ok", b"-d", b"x\xff"],
        [b"create", b"ok", b"--meta", b"k\xff=1"],
    ],
)
def test_text_that_is_not_utf8_is_a_usage_error_and_creates_nothing(tmp_path, args):
    board = tmp_path / "b"
    result = tasks_process("--dir", str(board), *args, "--json")
    assert result.returncode == 2, result.stderr
    assert "UTF-8" in jsonl(result.stderr.decode())[-1]["error"]["message"]
    assert not board.exists()


def test_a_board_you_cannot_write_is_named_not_a_bug(tmp_path):
    """Permissions are the user's to fix (exit 6 naming the place), not a bug (exit 1)."""
    import importlib
    import sys

    from taskboard.__main__ import main

    for module in ("taskboard.ops.board", "taskboard.disk.store"):  # loaded before privileges drop
        importlib.import_module(module)

    board = tmp_path / "b"
    assert tasks_process("--dir", str(board), "create", "a").returncode == 0
    board.chmod(0o555)
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # the command runs in a child; as root it first becomes nobody, whom permissions bind
        try:
            sys.stderr = open(write_end, "w", encoding="utf-8")  # noqa: SIM115  # lives until _exit
            if os.geteuid() == 0:
                os.setgroups([])
                os.setgid(65534)
                os.setuid(65534)
            code = main(["--dir", str(board), "create", "x", "--json"])
        finally:
            os._exit(locals().get("code", 99))
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        stderr = pipe.read().decode()
    _, status = os.waitpid(child, 0)
    board.chmod(0o755)
    error = jsonl(stderr)[-1]["error"]
    assert (os.waitstatus_to_exitcode(status), error["code"]) == (6, "corrupt"), stderr
    assert str(board) in error["message"] or ".lock" in error["message"]
    assert sorted(p.name for p in board.glob("task_*.json")) == ["task_1.json"]
