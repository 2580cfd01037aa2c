"""Archived in one clone, edited in another, brought together by `tasks sync` (DESIGN §9,
§11): real clones of a bare remote, every `tasks` and `git` a real process. `sync` treats
`archive/task_N.json` as the same task as `task_N.json` (by uid), as merges do: the edit
is kept, the task stays archived only if it is still closed, and no task ends both live
and archived. A board that already holds one task in both places (left by an older
sync) is settled by `tasks check --fix`, which says what it kept; a sync killed while
it moves an archived file leaves a board the next command settles."""

from __future__ import annotations

import json
import shutil
import signal

import pytest
from gitboard import Fleet, Machine
from invariants import archived_ids, problems
from test_sync_kill import POINTS, nothing_left


def two_clones(fleet: Fleet) -> tuple[Machine, Machine]:
    """#1 one, #2 two (both completed), #3 three (open, the highest id: it stays live),
    synced to the remote and cloned twice. b does the work (its runtime state records
    the completions, and follows its own reopen)."""
    a = fleet.machine("a")
    a.tasks("create", "one")
    a.tasks("create", "two")
    a.tasks("create", "three")
    a.tasks("sync")
    b = fleet.machine("b")
    b.tasks("done", "1")
    b.tasks("done", "2")
    b.tasks("sync")
    a.tasks("sync")
    return a, b


def archive(machine: Machine) -> None:
    assert machine.json("archive", "--older-than", "0")["archived"] == [1, 2]


def agreed(*machines: Machine) -> dict[int, dict]:
    """Every clone holds the same board, each task in one place, sound, committed; the
    board by id."""
    boards = [m.records() for m in machines]  # load_board: no id both live and archived
    shelves = [archived_ids(m.board) for m in machines]
    assert all(board == boards[0] for board in boards), "the clones disagree"
    assert all(shelf == shelves[0] for shelf in shelves), "archived in one clone, live in another"
    for machine in machines:
        assert problems(machine.board) == []
        assert machine.json("check")["ok"] is True
        assert machine.git("status", "--porcelain").stdout == ""
    return boards[0]


@pytest.mark.parametrize("first", ["archiver", "editor"])
def test_archived_in_one_clone_edited_and_still_closed_in_the_other_stays_archived_with_the_edit(fleet, first):
    a, b = two_clones(fleet)
    archive(a)
    b.tasks("update", "1", "--meta", "note=kept")
    order = [a, b] if first == "archiver" else [b, a]
    for machine in [*order, *order]:
        machine.tasks("sync")
    board = agreed(a, b)
    assert board[1]["metadata"] == {"note": "kept"} and board[1]["status"] == "completed"
    assert archived_ids(a.board) == {1, 2}
    assert [record["id"] for record in a.json("list", "--all") if record.get("archived")] == [1, 2]


@pytest.mark.parametrize("first", ["archiver", "editor"])
def test_archived_in_one_clone_reopened_in_the_other_comes_back_live_and_ready(fleet, first):
    a, b = two_clones(fleet)
    archive(a)
    b.tasks("reopen", "2")
    order = [a, b] if first == "archiver" else [b, a]
    for machine in [*order, *order]:
        machine.tasks("sync")
    board = agreed(a, b)
    assert board[2]["status"] == "pending"
    assert archived_ids(a.board) == {1}
    for machine in (a, b):
        assert 2 in [record["id"] for record in machine.json("ready")]


def test_a_sync_that_brings_in_an_archive_says_no_task_is_new(fleet):
    a, b = two_clones(fleet)
    archive(a)
    a.tasks("sync")
    came = b.json("sync")
    assert came["new"] == [] and came["completed"] == []
    a.tasks("restore", "1")
    a.tasks("sync")
    assert b.json("sync")["new"] == []  # back from the archive: not a new task
    agreed(a, b)


def both_places(machine: Machine, task_id: int) -> None:
    """What a sync before this fix left: one task both live and archived."""
    shutil.copy(machine.board / f"task_{task_id}.json", machine.board / "archive" / f"task_{task_id}.json")


def test_check_fix_keeps_the_live_copy_of_a_task_that_is_both_live_and_archived_when_it_is_open(fleet):
    a, _b = two_clones(fleet)
    archive(a)
    a.tasks("update", "3", "--meta", "note=live")  # open, and newer than the archived copy below
    both_places(a, 3)
    found = a.json("check", expect=6)["problems"]
    assert [p["rule"] for p in found] == ["duplicate-id"]
    fixed = a.json("check", "--fix")
    assert fixed["ok"] is True
    said = [p for p in fixed["problems"] if p["rule"] == "duplicate-id"]
    assert said and said[0]["fixed"] is True and "kept the live one" in said[0]["message"], said
    assert archived_ids(a.board) == {1, 2} and a.records()[3]["metadata"] == {"note": "live"}
    assert a.json("check")["ok"] is True


@pytest.mark.parametrize("newer", ["live", "archived"])
def test_check_fix_keeps_the_newer_copy_of_a_closed_task_that_is_both_live_and_archived(fleet, newer):
    a, _b = two_clones(fleet)
    archive(a)
    a.tasks("restore", "1")
    a.tasks("archive", "--older-than", "0")
    shutil.copy(a.board / "archive" / "task_1.json", a.board / "task_1.json")
    record = json.loads((a.board / "archive" / "task_1.json").read_text())
    edited = {**record, "subject": f"one, {newer}", "updatedAt": "2099-01-01T00:00:00Z"}
    path = a.board / ("task_1.json" if newer == "live" else "archive/task_1.json")
    path.write_text(json.dumps(edited, indent=2, ensure_ascii=False) + "\n")
    assert [p["rule"] for p in a.json("check", expect=6)["problems"]] == ["duplicate-id"]
    fixed = a.json("check", "--fix")
    assert fixed["ok"] is True
    said = next(p for p in fixed["problems"] if p["rule"] == "duplicate-id")
    assert f"kept the {newer} one" in said["message"], said
    assert a.records()[1]["subject"] == f"one, {newer}"
    assert (1 in archived_ids(a.board)) == (newer == "archived")
    assert (a.board / "task_1.json").exists() == (newer == "live")
    assert a.json("check")["ok"] is True


def test_a_board_committed_with_a_task_in_both_places_is_settled_by_sync(fleet):
    """Boards in the field: an older sync committed #1 both live (edited) and archived."""
    a, b = two_clones(fleet)
    archive(a)
    a.tasks("sync")
    b.tasks("sync")
    a.tasks("restore", "1")
    a.tasks("update", "1", "--meta", "note=newer")
    a.tasks("archive", "--older-than", "0")
    a.git("mv", ".tasks/archive/task_1.json", ".tasks/task_1.json")
    a.git("checkout", "HEAD", "--", ".tasks/archive/task_1.json")
    assert 1 in archived_ids(a.board) and (a.board / "task_1.json").exists()
    a.git("commit", "-qam", "an older sync's result: #1 live and archived")
    a.git("push", "-q", "origin", "HEAD")
    b.tasks("create", "four")
    b.tasks("sync")
    a.tasks("sync")
    b.tasks("sync")
    board = agreed(a, b)
    assert board[1]["metadata"] == {"note": "newer"} and board[1]["status"] == "completed"


@pytest.mark.parametrize("point", POINTS)
def test_a_sync_killed_while_it_moves_an_archived_file_leaves_a_board_check_fix_settles(fleet, point):
    a, b = two_clones(fleet)
    archive(a)
    b.tasks("update", "1", "--meta", "note=kept")
    b.tasks("reopen", "2")
    b.tasks("sync")
    killed = a.spawn("sync", TASKS_TEST_SYNC_KILL=point)  # brings in b's edits onto a's archive
    killed.communicate(timeout=120)
    assert killed.returncode == -signal.SIGKILL
    assert a.json("check", "--fix", expect=None)["ok"] is True
    assert a.tasks("sync").returncode == 0
    b.tasks("sync")
    a.tasks("sync")
    board = agreed(a, b)
    nothing_left(a)
    assert board[1]["metadata"] == {"note": "kept"} and board[2]["status"] == "pending"
    assert archived_ids(a.board) == {1}
