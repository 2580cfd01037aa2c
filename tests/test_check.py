"""`tasks check [--fix]`: one flaw at a time, each rule of the issue, through the command.

Every case lays out a board with exactly one kind of flaw and asserts the report
names the rule, the file and the task; `--fix` repairs what has one right answer
(and then the independent checker finds the board sound) and leaves every byte of
the rest alone.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from invariants import assert_sound, load_board, record, snapshot, write_board

PROBLEM_KEYS = {"file", "task", "rule", "message", "fixed"}


def raw(board: Path, name: str, text: str) -> None:
    (board / name).write_text(text)


def dumps(rec) -> str:
    return json.dumps(rec, indent=2) + "\n"


def without(rec: dict, key: str) -> dict:
    return {k: v for k, v in rec.items() if k != key}


def s12_only(rec: dict) -> dict:
    return {k: rec[k] for k in ("id", "subject", "description", "status", "blockedBy", "blocks", "owner")}


# name: (build(board), rule, file, task, fixable, after_fix(records) or None)
CASES = {
    "unparsable file": (
        lambda b: raw(b, "task_2.json", '{"id": 2, "subject": '),
        "json",
        "task_2.json",
        2,
        False,
        None,
    ),
    "invalid utf-8": (
        lambda b: (b / "task_2.json").write_bytes(b'{"id": 2, "subject": "\xff"}'),
        "json",
        "task_2.json",
        2,
        False,
        None,
    ),
    "NaN in a file": (
        lambda b: raw(b, "task_2.json", dumps(record(2)).replace('"metadata": {}', '"metadata": {"x": NaN}')),
        "json",
        "task_2.json",
        2,
        False,
        None,
    ),
    "not an object": (lambda b: raw(b, "task_2.json", "[2, 3]\n"), "object", "task_2.json", 2, False, None),
    "a string record": (lambda b: raw(b, "task_2.json", '"task"\n'), "object", "task_2.json", 2, False, None),
    "missing key": (
        lambda b: raw(b, "task_2.json", dumps(without(record(2), "status"))),
        "keys",
        "task_2.json",
        2,
        False,
        None,
    ),
    "id of wrong type": (
        lambda b: raw(b, "task_2.json", dumps(record(2, id="two"))),
        "type",
        "task_2.json",
        2,
        False,
        None,
    ),
    "blocks of wrong type": (
        lambda b: raw(b, "task_2.json", dumps({**record(2), "blocks": "3"})),
        "type",
        "task_2.json",
        2,
        False,
        None,
    ),
    "boolean in blockedBy": (
        lambda b: raw(b, "task_2.json", dumps(record(2, blockedBy=[True]))),
        "type",
        "task_2.json",
        2,
        False,
        None,
    ),
    "owner of wrong type": (
        lambda b: raw(b, "task_2.json", dumps(record(2, owner=7))),
        "type",
        "task_2.json",
        2,
        False,
        None,
    ),
    "metadata of wrong type": (
        lambda b: raw(b, "task_2.json", dumps(record(2, metadata=[]))),
        "type",
        "task_2.json",
        2,
        False,
        None,
    ),
    "file name vs id": (
        lambda b: raw(b, "task_2.json", dumps(record(5))),
        "id-mismatch",
        "task_2.json",
        2,
        False,
        None,
    ),
    "duplicate ids": (
        lambda b: (write_board(b, [record(1)]), raw(b, "task_2.json", dumps(record(1)))),
        "duplicate-id",
        "task_1.json",
        1,
        False,
        None,
    ),
    "unknown status": (
        lambda b: raw(b, "task_2.json", dumps(record(2, status="done"))),
        "status",
        "task_2.json",
        2,
        False,
        None,
    ),
    "oddly named task file": (
        lambda b: raw(b, "task_02.json", dumps(record(2))),
        "file-name",
        "task_02.json",
        None,
        False,
        None,
    ),
    "symlinked task file": (
        lambda b: (
            raw(b.parent, "elsewhere.json", dumps(record(2))),
            os.symlink(b.parent / "elsewhere.json", b / "task_2.json"),
        ),
        "symlink",
        "task_2.json",
        2,
        False,
        None,
    ),
    "cycle": (
        lambda b: write_board(b, [record(1, blocks=[2], blocked_by=[2]), record(2, blocks=[1], blocked_by=[1])]),
        "cycle",
        "task_1.json",
        1,
        False,
        None,
    ),
    "self-edge": (
        lambda b: write_board(b, [record(1, blocks=[1], blocked_by=[1])]),
        "cycle",
        "task_1.json",
        1,
        False,
        None,
    ),
    "leftover temp file beside the tasks": (
        lambda b: raw(b, ".task_1.json.4242.tmp", "{"),
        "scratch",
        ".task_1.json.4242.tmp",
        None,
        False,
        None,
    ),
    "one-sided edge, blocks only": (
        lambda b: write_board(b, [record(1, blocks=[2]), record(2)]),
        "one-sided-edge",
        "task_2.json",
        2,
        True,
        lambda r: r[2]["blockedBy"] == [1] and r[1]["blocks"] == [2],
    ),
    "one-sided edge, blockedBy only": (
        lambda b: write_board(b, [record(1), record(2, blocked_by=[1])]),
        "one-sided-edge",
        "task_1.json",
        1,
        True,
        lambda r: r[1]["blocks"] == [2] and r[2]["blockedBy"] == [1],
    ),
    "blocks a missing task": (
        lambda b: write_board(b, [record(1, blocks=[9])]),
        "missing-task",
        "task_1.json",
        1,
        True,
        lambda r: r[1]["blocks"] == [],
    ),
    "blocked by a missing task": (
        lambda b: write_board(b, [record(1, blocked_by=[9])]),
        "missing-task",
        "task_1.json",
        1,
        True,
        lambda r: r[1]["blockedBy"] == [],
    ),
    "completed blocker listed": (
        lambda b: write_board(b, [record(1, status="completed", blocks=[2]), record(2, blocked_by=[1])]),
        "completed-blocker",
        "task_2.json",
        2,
        True,
        lambda r: r[2]["blockedBy"] == [] and r[1]["blocks"] == [2],
    ),
    "deleted task still blocks": (
        lambda b: write_board(b, [record(1, status="deleted", blocks=[2]), record(2, blocked_by=[1])]),
        "deleted-linked",
        "task_1.json",
        1,
        True,
        lambda r: r[1]["blocks"] == [] and r[2]["blockedBy"] == [],
    ),
    "deleted task still listed": (
        lambda b: write_board(b, [record(1, blocks=[2]), record(2, status="deleted")]),
        "deleted-linked",
        "task_1.json",
        1,
        True,
        lambda r: r[1]["blocks"] == [],
    ),
    # metadata keys with a meaning of their own, written by hand with what input refuses (issue 14)
    "priority out of range": (
        lambda b: write_board(b, [record(1, metadata={"priority": 7})]),
        "metadata",
        "task_1.json",
        1,
        False,
        None,
    ),
    "priority as text": (
        lambda b: write_board(b, [record(1, metadata={"priority": "1"})]),
        "metadata",
        "task_1.json",
        1,
        False,
        None,
    ),
    "labels not a list": (
        lambda b: write_board(b, [record(1, metadata={"labels": "bug"})]),
        "metadata",
        "task_1.json",
        1,
        False,
        None,
    ),
    "a label not text": (
        lambda b: write_board(b, [record(1, metadata={"labels": ["ui", 3]})]),
        "metadata",
        "task_1.json",
        1,
        False,
        None,
    ),
    "gate not text": (
        lambda b: write_board(b, [record(1, metadata={"gate": ["make", "test"]})]),
        "metadata",
        "task_1.json",
        1,
        False,
        None,
    ),
    "hand-written s12 record": (
        lambda b: raw(b, "task_1.json", dumps(s12_only(record(1)))),
        "keys",
        "task_1.json",
        1,
        True,
        lambda r: len(r[1]["uid"]) == 12 and r[1]["metadata"] == {},
    ),
    "not canonical layout": (
        lambda b: (
            raw(b, "task_1.json", json.dumps(record(1, blocks=[3, 2]), indent=4))
            or write_board(b, [record(2, blocked_by=[1]), record(3, blocked_by=[1])])
        ),
        "format",
        "task_1.json",
        1,
        True,
        lambda r: r[1]["blocks"] == [2, 3],
    ),
}


def sound_neighbour(board: Path) -> None:
    """A healthy task beside the flaw, which check must neither report nor touch."""
    if not (board / "task_7.json").exists():
        write_board(board, [record(7, subject="healthy")])


def flawed_board(board_dir: Path, case: str) -> dict:
    """The board of one CASE beside a healthy neighbour; its bytes before any command."""
    board_dir.mkdir()
    CASES[case][0](board_dir)
    sound_neighbour(board_dir)
    return snapshot(board_dir)


# Layout and missing extension keys are cosmetic: the board is sound, only --fix rewrites them.
COSMETIC = ("hand-written s12 record", "not canonical layout")


@pytest.mark.parametrize("case", COSMETIC)
def test_cosmetic_flaws_leave_the_board_sound(case, board_dir, run):
    CASES[case][0](board_dir.mkdir() or board_dir)
    before = snapshot(board_dir)
    assert run.json("check") == {"ok": True, "problems": []}
    assert snapshot(board_dir) == before


@pytest.mark.parametrize("case", [name for name in CASES if name not in COSMETIC])
def test_check_reports_each_rule(case, board_dir, run):
    _, rule, file, task, _fixable, _ = CASES[case]
    before = flawed_board(board_dir, case)
    result = run("check", "--json", expect=6)
    report = json.loads(result.stdout)
    assert report["ok"] is False
    assert all(set(problem) == PROBLEM_KEYS for problem in report["problems"])
    matching = [p for p in report["problems"] if p["rule"] == rule and p["file"] == file]
    assert matching, report
    assert matching[0]["task"] == task
    assert matching[0]["fixed"] is False
    assert file.split(".")[0].lstrip(".") in matching[0]["message"] or f"#{task}" in matching[0]["message"]
    assert all(p["file"] != "task_7.json" for p in report["problems"])
    assert snapshot(board_dir) == before, "check without --fix changed the board"


@pytest.mark.parametrize("case", [name for name, spec in CASES.items() if spec[4]])
def test_fix_repairs_what_has_one_right_answer(case, board_dir, run):
    _, rule, file, _task, _, after_fix = CASES[case]
    flawed_board(board_dir, case)
    healthy = (board_dir / "task_7.json").read_bytes()
    report = json.loads(run("check", "--fix", "--json").stdout)
    assert report["ok"] is True
    assert any(p["rule"] == rule and p["file"] == file and p["fixed"] for p in report["problems"]), report
    assert all(p["fixed"] for p in report["problems"])
    records = assert_sound(board_dir)
    assert after_fix(records), records
    assert (board_dir / "task_7.json").read_bytes() == healthy
    assert json.loads(run("check", "--json").stdout) == {"ok": True, "problems": []}


@pytest.mark.parametrize("case", [name for name, spec in CASES.items() if not spec[4]])
def test_fix_reports_and_never_guesses_the_rest(case, board_dir, run):
    _, rule, file, _task, _, _ = CASES[case]
    before = flawed_board(board_dir, case)
    report = json.loads(run("check", "--fix", "--json", expect=6).stdout)
    assert report["ok"] is False
    assert any(p["rule"] == rule and p["file"] == file and not p["fixed"] for p in report["problems"])
    assert snapshot(board_dir) == before, "--fix touched what has no one right answer"


def test_a_cycle_is_named_in_the_message(board_dir, run):
    write_board(board_dir, [record(3, blocks=[5], blocked_by=[5]), record(5, blocks=[3], blocked_by=[3])])
    report = json.loads(run("check", "--json", expect=6).stdout)
    assert [p["rule"] for p in report["problems"]] == ["cycle"]
    assert "#3 → #5 → #3" in report["problems"][0]["message"]


def test_edges_to_a_damaged_task_are_kept_not_dropped_as_missing(board_dir, run):
    """A damaged file is not a missing task: --fix must not free #3 on a guess."""
    write_board(board_dir, [record(1, blocks=[2]), record(2, blocked_by=[1], blocks=[3]), record(3, blocked_by=[2])])
    raw(board_dir, "task_2.json", "{oops")
    report = json.loads(run("check", "--fix", "--json", expect=6).stdout)
    assert [(p["rule"], p["file"], p["fixed"]) for p in report["problems"]] == [("json", "task_2.json", False)]
    records = {i: json.loads((board_dir / f"task_{i}.json").read_text()) for i in (1, 3)}
    assert records[1]["blocks"] == [2] and records[3]["blockedBy"] == [2]


def test_fix_repairs_the_fixable_and_reports_the_rest_together(board_dir, run):
    write_board(board_dir, [record(1, blocks=[2]), record(2), record(4, blocked_by=[9])])
    raw(board_dir, "task_3.json", "not json")
    report = json.loads(run("check", "--fix", "--json", expect=6).stdout)
    by_rule = {p["rule"]: p["fixed"] for p in report["problems"]}
    assert by_rule == {"one-sided-edge": True, "missing-task": True, "json": False}
    assert load_board_except(board_dir, "task_3.json")[2]["blockedBy"] == [1]
    assert load_board_except(board_dir, "task_3.json")[4]["blockedBy"] == []
    assert (board_dir / "task_3.json").read_text() == "not json"


def load_board_except(board: Path, name: str) -> dict:
    return {
        json.loads(p.read_text())["id"]: json.loads(p.read_text()) for p in board.glob("task_*.json") if p.name != name
    }


def test_a_sound_board_checks_clean_and_exit_0(board_dir, run):
    write_board(
        board_dir,
        [
            record(1, status="completed", blocks=[2]),
            record(2, blocks=[3]),
            record(3, blocked_by=[2]),
            record(4, status="deleted"),
        ],
    )
    assert json.loads(run("check", "--json").stdout) == {"ok": True, "problems": []}
    assert json.loads(run("check", "--fix", "--json").stdout) == {"ok": True, "problems": []}
    assert run("check").exit_code == 0


def test_an_empty_or_missing_board_is_sound(board_dir, run):
    assert json.loads(run("check", "--json").stdout) == {"ok": True, "problems": []}
    assert not board_dir.exists() or not any(p.name.startswith("task_") for p in board_dir.iterdir())


def test_leftover_intent_is_reported_fixed_without_fix(board_dir, run):
    write_board(board_dir, [record(1)])
    (board_dir / ".scratch").mkdir()
    files = {"task_1.json": dumps(record(1, status="completed"))}
    (board_dir / ".scratch" / "intent.json").write_text(json.dumps({"intent": 1, "files": files}))
    (board_dir / ".scratch" / ".task_1.json.9.tmp").write_text("{")
    report = json.loads(run("check", "--json").stdout)
    assert report["ok"] is True
    assert {p["rule"] for p in report["problems"]} == {"interrupted-change"}
    assert all(p["fixed"] and set(p) == PROBLEM_KEYS for p in report["problems"])
    assert load_board(board_dir)[1]["status"] == "completed"
    assert os.listdir(board_dir / ".scratch") == []


def test_human_output_names_the_file_and_exits_6(board_dir, run):
    write_board(board_dir, [record(1)])
    raw(board_dir, "task_2.json", "{")
    result = run("check", expect=6)
    assert "task_2.json" in result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr


def test_hand_written_metadata_is_named_with_its_value_and_what_it_counts_as(board_dir, run):
    """A person reading `check` learns which key, the value as JSON, and what the views
    make of it meanwhile; the task still lists (a bad priority never breaks a read)."""
    board_dir.mkdir()
    write_board(board_dir, [record(1, metadata={"priority": True, "labels": "bug"}), record(2)])
    result = run("check", expect=6)
    assert "task_1.json: metadata.priority is true, not a whole number from 0 to 4" in result.stderr
    assert "(until it is set again it counts as 2)" in result.stderr
    assert 'task_1.json: metadata.labels is "bug", not a list of labels' in result.stderr
    assert run("ready").stdout == "[ ] #1: task 1\n[ ] #2: task 2\n"


def test_a_label_update_keeps_the_good_hand_written_labels_and_drops_the_bad(board_dir, run):
    """`update --label` on a task whose labels were written by hand never writes a bad label
    back: what input would refuse goes, the rest stays, and `check` is then clean."""
    board_dir.mkdir()
    write_board(board_dir, [record(1, metadata={"labels": ["ok", 3, "", " pad", "x\u0007"]})])
    run("check", expect=6)
    run("update", "1", "--label", "new")
    assert run.record(1)["metadata"]["labels"] == ["new", "ok"]
    assert run.json("check")["ok"] is True
