"""`tasks import`: a whole plan as one all-or-nothing change (DESIGN §7 "Plans in one call").

Valid plans through the real entry point; every broken plan exits with its code, names
the problem, and leaves every byte of the board as it was; a real process killed at
each instant of an import leaves all of the plan or none of it.
"""

from __future__ import annotations

import json

import pytest
from conftest import tasks_process
from invariants import assert_sound, load_board, record, snapshot, write_board

PLAN = {
    "tasks": [
        {"key": "setup", "subject": "Set up CI", "priority": 1},
        {
            "key": "lexer",
            "subject": "Lexer",
            "description": "tokens",
            "blockedBy": ["setup"],
            "labels": ["parser", "core", "parser"],
            "accept": "all tokens round-trip",
            "gate": "make test",
            "metadata": {"size": 2},
        },
        {"key": "parser", "subject": "Parser", "blockedBy": ["lexer", "setup"], "owner": "amy"},
        {"key": "docs", "subject": "Docs", "blocks": ["parser"]},
    ]
}


def test_a_plan_with_keys_becomes_tasks_and_edges(run, board_dir):
    run("create", "already here")
    created = run.json("import", "-", input=json.dumps(PLAN))
    assert created == {"created": {"setup": 2, "lexer": 3, "parser": 4, "docs": 5}}
    assert list(created["created"]) == ["setup", "lexer", "parser", "docs"]  # the plan's order
    records = assert_sound(board_dir)
    assert records[2]["blocks"] == [3, 4] and records[2]["metadata"] == {"priority": 1}
    lexer = records[3]
    assert (lexer["description"], lexer["blockedBy"], lexer["blocks"]) == ("tokens", [2], [4])
    assert lexer["metadata"] == {
        "size": 2,
        "labels": ["core", "parser"],
        "accept": "all tokens round-trip",
        "gate": "make test",
    }
    assert records[4]["blockedBy"] == [2, 3, 5] and records[4]["owner"] == "amy"
    assert records[5]["blocks"] == [4]
    assert [r["id"] for r in run.json("ready")] == [2, 1, 5]
    assert len({r["uid"] for r in records.values()}) == 5


def test_a_plan_names_tasks_on_the_board_by_id(run, board_dir):
    run("create", "open blocker")  # 1
    run("create", "finished blocker")  # 2
    run("done", "2")
    run("create", "waits on the plan")  # 3
    plan = {"tasks": [{"key": "a", "subject": "A", "blockedBy": [1, 2], "blocks": [3]}]}
    assert run.json("import", "-", input=json.dumps(plan)) == {"created": {"a": 4}}
    records = assert_sound(board_dir)
    assert records[4]["blockedBy"] == [1]  # a completed blocker is history only
    assert records[2]["blocks"] == [4] and records[1]["blocks"] == [4]
    assert records[3]["blockedBy"] == [4]


def test_a_plan_from_a_file_for_people(run, tmp_path):
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(PLAN))
    result = run("import", str(plan))
    assert result.stdout.splitlines() == ["[ ] #1: Set up CI", "[ ] #2: Lexer", "[ ] #3: Parser", "[ ] #4: Docs"]
    assert "imported 4 task(s)" in result.stderr


def test_an_empty_plan_changes_nothing(run, board_dir):
    run("create", "A")
    before = snapshot(board_dir)
    assert run.json("import", "-", input='{"tasks": []}') == {"created": {}}
    assert snapshot(board_dir) == before


def test_a_real_process_imports_from_stdin(tmp_path):
    board = str(tmp_path / "b")
    result = tasks_process("--dir", board, "import", "-", "--json", input=json.dumps(PLAN).encode())
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"created": {"setup": 1, "lexer": 2, "parser": 3, "docs": 4}}
    assert_sound(tmp_path / "b")


# -- broken plans ----------------------------------------------------------------------------------

CODES = {2: "usage", 3: "not_found", 4: "refused"}


def _plan(*tasks, **top):
    return json.dumps({"tasks": list(tasks), **top})


BROKEN = [
    # not JSON, not UTF-8, wrong shape
    (b"", 2, "not json"),
    (b"{tasks: []}", 2, "not json"),
    (b'{"tasks": [', 2, "not json"),
    (b"\xff\xfe{}", 2, "not utf-8"),
    ('{"tasks": [{"key": "a", "subject": "caf\xe9"}]}'.encode("latin-1"), 2, "not utf-8"),
    (b'{"tasks": [{"key": "a", "subject": "x", "metadata": {"n": NaN}}]}', 2, "finite numbers"),
    (b'{"tasks": [{"key": "a", "subject": "x", "metadata": {"n": 1e999}}]}', 2, "finite numbers"),
    (b"[" * 100_000 + b"]" * 100_000, 2, "nested too deeply"),
    (b"[]", 2, 'must be a json object {"tasks"'),
    (b'{"tasks": {}}', 2, 'must be a json object {"tasks"'),
    (b'{"task": []}', 2, 'must be a json object {"tasks"'),
    (_plan(version=2), 2, "unknown key 'version'"),
    (b'{"tasks": [], "tasks": []}', 2, "appears twice"),
    (b'{"tasks": [{"key": "a", "key": "b", "subject": "x"}]}', 2, "'key' appears twice"),
    (_plan("a"), 2, "tasks[0] is a json string, not an object"),
    (_plan(None), 2, "tasks[0] is a json null"),
    # keys
    (_plan({"subject": "x"}), 2, 'tasks[0] needs a "key"'),
    (_plan({"key": 1, "subject": "x"}), 2, 'needs a "key"'),
    (_plan({"key": "", "subject": "x"}), 2, "key '' is empty"),
    (_plan({"key": "a\nb", "subject": "x"}), 2, "unprintable"),
    (_plan({"key": "k" * 101, "subject": "x"}), 2, "longer than 100"),
    (_plan({"key": "\ud800", "subject": "x"}), 2, "not valid utf-8"),
    (_plan({"key": "a", "subject": "x"}, {"key": "a", "subject": "y"}), 2, "key 'a' is used twice"),
    (_plan({"key": "a", "subject": "x", "blockedBy": ["b"]}), 2, "names 'b', which is no key of the plan"),
    (_plan({"key": "a", "subject": "x", "blocks": ["A"]}), 2, "names 'A', which is no key"),
    # wrong types and bad values
    (_plan({"key": "a", "subject": "x", "status": "completed"}), 2, "unknown field 'status'"),
    (_plan({"key": "a", "subject": "x", "id": 7}), 2, "unknown field 'id'"),
    (_plan({"key": "a"}), 2, "'subject' must be text, not nothing"),
    (_plan({"key": "a", "subject": 5}), 2, "'subject' must be text"),
    (_plan({"key": "a", "subject": ""}), 2, "tasks[0] ('a'): the subject is empty"),
    (_plan({"key": "a", "subject": "two\nlines"}), 2, "control character"),
    (_plan({"key": "a", "subject": "x", "description": ["no"]}), 2, "'description' must be text"),
    (_plan({"key": "a", "subject": "x", "owner": " amy"}), 2, "surrounding spaces"),
    (_plan({"key": "a", "subject": "x", "blockedBy": "b"}), 2, "must be a list"),
    (_plan({"key": "a", "subject": "x", "blockedBy": [0]}), 2, "0 is neither a key of the plan nor a task id"),
    (_plan({"key": "a", "subject": "x", "blockedBy": [-3]}), 2, "neither a key"),
    (_plan({"key": "a", "subject": "x", "blockedBy": [1.5]}), 2, "neither a key"),
    (_plan({"key": "a", "subject": "x", "blockedBy": [True]}), 2, "neither a key"),
    (_plan({"key": "a", "subject": "x", "blockedBy": [2**63]}), 2, "neither a key"),
    (_plan({"key": "a", "subject": "x", "blocks": [None]}), 2, "neither a key"),
    (_plan({"key": "a", "subject": "x", "priority": 5}), 2, "priority must be a whole number from 0"),
    (_plan({"key": "a", "subject": "x", "priority": "1"}), 2, "priority must be a whole number from 0"),
    (_plan({"key": "a", "subject": "x", "priority": True}), 2, "priority must be a whole number from 0"),
    (_plan({"key": "a", "subject": "x", "labels": "ui"}), 2, "labels must be a list"),
    (_plan({"key": "a", "subject": "x", "labels": ["ok", ""]}), 2, "label is empty"),
    (_plan({"key": "a", "subject": "x", "labels": ["a\x07"]}), 2, "control characters"),
    (_plan({"key": "a", "subject": "x", "labels": [3]}), 2, "label must be text"),
    (_plan({"key": "a", "subject": "x", "gate": ["make"]}), 2, "'gate' must be text"),
    (_plan({"key": "a", "subject": "x", "accept": 1}), 2, "'accept' must be text"),
    (_plan({"key": "a", "subject": "x", "metadata": []}), 2, '"metadata" must be an object'),
    (_plan({"key": "a", "subject": "x", "metadata": {"priority": 9}}), 2, "priority must be a whole number"),
    (_plan({"key": "a", "subject": "x", "metadata": {"": 1}}), 2, "empty or unprintable"),
    # the board: missing ids (3), deleted ones and cycles (4)
    (_plan({"key": "a", "subject": "x", "blockedBy": [42]}), 3, "no task #42"),
    (_plan({"key": "a", "subject": "x", "blocks": [1, 99]}), 3, "no task #99"),
    (_plan({"key": "a", "subject": "x", "blockedBy": [4]}), 4, "names #4, which is deleted"),
    (_plan({"key": "a", "subject": "x", "blocks": [4]}), 4, "#4, which is deleted"),
    (_plan({"key": "a", "subject": "x", "blockedBy": ["a"]}), 4, "cycle 'a' → 'a'"),
    (
        _plan(
            {"key": "lexer", "subject": "x", "blockedBy": ["parser"]},
            {"key": "parser", "subject": "y", "blockedBy": ["lexer"]},
        ),
        4,
        "cycle 'lexer' → 'parser' → 'lexer'",
    ),
    (
        _plan({"key": "mid", "subject": "x", "blockedBy": [2], "blocks": [1]}),
        4,
        "cycle #1 → #2 → 'mid' → #1",
    ),
    (
        _plan({"key": "a", "subject": "x", "blockedBy": [42]}, {"key": "b", "subject": "y", "blockedBy": ["b"]}),
        3,
        "no task #42",
    ),
]


@pytest.fixture
def board(board_dir):
    """#1 pending blocks #2; #3 completed; #4 deleted."""
    write_board(
        board_dir,
        [
            record(1, blocks=[2]),
            record(2, blocked_by=[1]),
            record(3, status="completed"),
            record(4, status="deleted"),
        ],
    )
    return board_dir


@pytest.mark.parametrize("plan, code, words", BROKEN, ids=[f"{i:02}" for i in range(len(BROKEN))])
def test_a_broken_plan_changes_nothing(board, run, tmp_path, plan, code, words):
    data = plan if isinstance(plan, bytes) else plan.encode("utf-8", "surrogatepass")
    path = tmp_path / "plan.json"
    path.write_bytes(data)
    before = snapshot(board)
    for args in (["import", "-"], ["import", str(path)], ["--json", "import", "-"]):
        result = run(*args, input=data, expect=None)
        assert result.exit_code == code, (args, result.exit_code, result.stderr)
        assert result.stdout == "" and "Traceback" not in result.stderr
        last = result.stderr.strip().splitlines()[-1]
        if "--json" in args:
            error = json.loads(last)["error"]
            assert (error["code"], error["exit"]) == (CODES[code], code)
            last = error["message"]
        assert words.lower() in last.lower(), last
    assert snapshot(board) == before


def test_a_huge_plan_is_refused_unread(board, run):
    from taskboard.ops.importing import MAX_PLAN_BYTES

    before = snapshot(board)
    huge = b'{"tasks": [' + b" " * MAX_PLAN_BYTES + b"]}"
    result = run("import", "-", input=huge, expect=2)
    assert f"at most {MAX_PLAN_BYTES} are allowed" in result.stderr
    assert snapshot(board) == before


def test_too_many_tasks_in_one_plan(board, run):
    from taskboard.ops.importing import MAX_PLAN_TASKS

    plan = _plan(*({"key": str(i), "subject": "x"} for i in range(MAX_PLAN_TASKS + 1)))
    before = snapshot(board)
    assert f"at most {MAX_PLAN_TASKS}" in run("import", "-", input=plan, expect=2).stderr
    assert snapshot(board) == before


@pytest.mark.parametrize("path, words", [("missing.json", "no such file"), (".", "is a directory")])
def test_an_unreadable_plan_file_is_a_usage_error(board, run, path, words):
    before = snapshot(board)
    result = run("import", path, expect=2)
    assert words in result.stderr and "Traceback" not in result.stderr
    assert snapshot(board) == before


def test_a_plan_naming_a_board_id_on_a_missing_board_creates_nothing(run, board_dir):
    run("import", "-", input=_plan({"key": "a", "subject": "x", "blockedBy": [1]}), expect=3)
    assert not board_dir.exists()


# -- all or nothing under kill -9 -------------------------------------------------------------------------


def test_an_import_killed_at_any_instant_is_finished_whole_by_the_next_command(tmp_path):
    plan = _plan(
        {"key": "a", "subject": "A", "blocks": [1]},
        {"key": "b", "subject": "B", "blockedBy": ["a"]},
        {"key": "c", "subject": "C", "blockedBy": ["a", "b"], "blocks": [2]},
    ).encode()
    # the intent, then 5 files (3 new tasks, #1 and #2 gain edges), then the journal's append
    for crash_after in range(1, 8):
        board = tmp_path / f"b{crash_after}"
        write_board(board, [record(1), record(2)])
        killed = tasks_process(
            "--dir", str(board), "import", "-", input=plan, env={"TASKS_TEST_CRASH_AFTER": str(crash_after)}
        )
        assert killed.returncode == -9, (crash_after, killed.returncode, killed.stderr)
        after = tasks_process("--dir", str(board), "list", "--json")
        assert after.returncode == 0, after.stderr
        records = assert_sound(board)
        # the first replacement is the intent itself: from then on the change is finished by
        # the next command, every file of it, and its events journaled exactly once
        assert sorted(records) == [1, 2, 3, 4, 5], crash_after
        assert records[5]["blockedBy"] == [3, 4] and records[2]["blockedBy"] == [5]
        journal = _journal(board)
        created = sorted((e["task"], e["key"]) for e in journal if e["event"] == "created")
        assert created == [(3, "a"), (4, "b"), (5, "c")], crash_after
        assert len({e["eid"] for e in journal}) == len(journal)
    assert load_board(tmp_path / "b7")[1]["blockedBy"] == [3]


def _journal(board) -> list[dict]:
    folder = board / "journal"
    lines = [line for path in sorted(folder.glob("*.jsonl")) for line in path.read_text().splitlines()]
    return [json.loads(line) for line in lines]


def test_an_import_is_journaled_with_each_key(run, board_dir):
    run("--as", "planner", "import", "-", input=json.dumps(PLAN))
    created = [(e["task"], e["key"], e["actor"]) for e in _journal(board_dir) if e["event"] == "created"]
    assert created == [
        (1, "setup", "planner"),
        (2, "lexer", "planner"),
        (3, "parser", "planner"),
        (4, "docs", "planner"),
    ]
