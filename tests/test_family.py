"""Other writers of the same files (DESIGN §13, issue 22): the s12 chapter's task manager,
its sibling chapters, scripts and agents with a file tool. They take no lock, write a file
in place (truncate, then write), write one side of an edge, spell ids as strings, leave
keys out or write `null`. Every record here is written the way they write it: the JSON
text of `json.dumps(task, indent=2)`, no trailing newline, put in the file in place."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import tasks_process
from gitboard import git_env, new_clone

from taskboard.model import encode


def family_write(board: Path, task: dict, task_id: int | None = None) -> Path:
    """What the chapter's `_save` does: the file truncated in place, then the text written."""
    board.mkdir(parents=True, exist_ok=True)
    path = board / f"task_{task['id'] if task_id is None else task_id}.json"
    path.write_text(json.dumps(task, indent=2))
    return path


def chapter_task(task_id, subject: str, **fields) -> dict:
    """A TaskRecord as the s12 chapter's `create` writes it: its seven keys, nothing else."""
    task = {"id": task_id, "subject": subject, "description": "", "status": "pending"}
    task.update({"blockedBy": [], "blocks": [], "owner": ""})
    task.update(fields)
    return task


def sibling_task(task_id, subject: str, **fields) -> dict:
    """As the worktree chapter writes one: no `blocks` key, keys of its own (times as floats)."""
    task = {"id": task_id, "subject": subject, "description": "", "status": "pending", "owner": ""}
    task.update({"worktree": "", "closeout": None, "blockedBy": [], "created_at": 1764600000.5})
    task.update(fields)
    return task


def full_agent_task(task_id, subject: str, **fields) -> dict:
    """As the full reference agent writes one: `"owner": null`, its own key order."""
    task = {"id": task_id, "subject": subject, "description": "", "status": "pending", "owner": None}
    task.update({"blockedBy": [], "blocks": []})
    task.update(fields)
    return task


def canonical(path: Path) -> bool:
    """Whether a file holds exactly the contract's encoding of what it says."""
    data = path.read_bytes()
    return data == encode(json.loads(data))


# -- finding 6: ids written as strings -----------------------------------------------------------


def test_an_id_sent_as_text_is_that_id(run, board_dir):
    family_write(board_dir, chapter_task(1, "Write parser", blocks=["2"]))
    family_write(board_dir, chapter_task(2, "Write checker", blockedBy=["1"]))
    listed = run.json("list")
    assert [(r["id"], r["blockedBy"], r["blocks"]) for r in listed] == [(1, [], [2]), (2, [1], [])]
    assert run.json("ready") == [listed[0]]
    assert run.json("get", "2")["blockedBy"] == [1]
    checked = run.json("check")  # read as meant: said, and the board is sound
    assert checked["ok"] is True
    assert {(p["task"], p["rule"]) for p in checked["problems"]} == {(1, "family-form"), (2, "family-form")}
    fixed = run.json("check", "--fix")
    assert fixed["ok"] is True
    assert all(p["fixed"] for p in fixed["problems"])
    assert canonical(board_dir / "task_2.json")
    assert run.record(2)["blockedBy"] == [1]
    assert run.json("check")["problems"] == []


def test_a_task_file_with_its_id_as_text(run, board_dir):
    family_write(board_dir, {**chapter_task("3", "Claude Code wrote me"), "activeForm": "Writing"})
    got = run.json("get", "3")
    assert got["id"] == 3
    assert got["activeForm"] == "Writing"  # a key this version does not know stays


# -- finding 8: the sibling chapters' and the full agent's records -------------------------------


def test_a_record_without_blocks_and_one_with_a_null_owner(run, board_dir):
    family_write(board_dir, sibling_task(1, "Refactor auth"))
    family_write(board_dir, full_agent_task(2, "Write the docs", blockedBy=[1]))
    assert [r["id"] for r in run.json("list")] == [1, 2]
    assert [r["id"] for r in run.json("ready")] == [1]
    assert run.json("get", "1")["blocks"] == []
    assert run.json("get", "2")["owner"] == ""
    run("board")
    checked = run.json("check", expect=6)  # the one-sided edge #1 -> #2 is the board's to repair
    rules = {(p["task"], p["rule"]) for p in checked["problems"]}
    assert {(1, "family-form"), (2, "family-form")} <= rules
    assert run.json("check", "--fix")["ok"] is True
    first, second = run.record(1), run.record(2)
    assert (first["blocks"], second["owner"], second["blockedBy"]) == ([2], "", [1])
    assert first["worktree"] == "" and first["closeout"] is None and first["created_at"] == 1764600000.5
    assert canonical(board_dir / "task_1.json") and canonical(board_dir / "task_2.json")


def test_a_record_without_description_or_owner(run, board_dir):
    family_write(board_dir, {"id": 1, "subject": "Terse", "status": "pending", "blockedBy": [], "blocks": []})
    got = run.json("get", "1")
    assert (got["description"], got["owner"]) == ("", "")


def test_any_change_that_touches_such_a_file_writes_it_canonically(run, board_dir):
    path = family_write(board_dir, full_agent_task(1, "Write the docs"))
    run("update", "1", "--subject", "Write the user docs")
    assert canonical(path)
    assert run.record(1)["owner"] == "" and run.record(1)["subject"] == "Write the user docs"


@pytest.mark.parametrize(
    "fields",
    [
        {"blockedBy": "1"},  # not a list
        {"blockedBy": ["one"]},  # text that is no id
        {"blockedBy": ["01"]},  # no id is written with a leading zero
        {"blockedBy": [1.0]},
        {"owner": 5},
        {"owner": False},
        {"id": "x1"},
        {"status": None},
        {"description": None},
    ],
)
def test_records_that_are_not_the_familys_are_still_damage(run, board_dir, fields):
    family_write(board_dir, chapter_task(1, "Fine"))
    family_write(board_dir, {**chapter_task(2, "Broken"), **fields}, task_id=2)
    result = run("list", expect=6)
    assert "task_2.json" in result.stderr
    assert run.json("check", expect=6)["ok"] is False


def test_a_record_without_a_subject_is_still_damage(run, board_dir):
    task = chapter_task(1, "x")
    del task["subject"]
    family_write(board_dir, task)
    assert "task_1.json" in run("get", "1", expect=6).stderr


# -- finding 7: check --fix on a damaged board names no merge ------------------------------------


def test_check_fix_on_a_damaged_board_without_a_merge_says_nothing_of_merging(tmp_path, monkeypatch):
    for key, value in git_env(tmp_path / "home").items():
        monkeypatch.setenv(key, value)
    clone = new_clone(tmp_path / "repo")
    clone.tasks("create", "Fine")
    (clone.board / "task_2.json").write_text("{")
    fixed = clone.tasks.json("check", "--fix", expect=6)
    assert [p["rule"] for p in fixed["problems"]] == ["json"]
    assert "merg" not in json.dumps(fixed)


def test_the_family_record_read_through_a_real_process(tmp_path):
    board = tmp_path / ".tasks"
    family_write(board, full_agent_task(1, "Ship", blockedBy=["2"]))
    family_write(board, sibling_task(2, "Build"))
    done = tasks_process("--dir", str(board), "list", "--json")
    assert done.returncode == 0, done.stderr
    assert [r["blockedBy"] for r in json.loads(done.stdout)] == [[2], []]
    assert os.path.getsize(board / "task_1.json") > 0
