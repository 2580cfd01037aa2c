"""Damaged files never take the board down.

`get` of a damaged task exits 6 naming the file; `list`/`ready`/`board` show every
readable task, name each damaged file on stderr and exit 6; a change that needs a
damaged file refuses with 6 and changes no byte; changes that do not need it work.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from invariants import record, snapshot, write_board


def _symlink(board: Path) -> None:
    target = board.parent / "outside.json"
    target.write_text(json.dumps(record(3, subject="via a link"), indent=2) + "\n")
    os.symlink(target, board / "task_3.json")


DAMAGE = {
    "truncated": lambda b: (b / "task_3.json").write_text('{"id": 3, "subject": "half'),
    "empty": lambda b: (b / "task_3.json").write_bytes(b""),
    "binary": lambda b: (b / "task_3.json").write_bytes(bytes(range(256))),
    "an array": lambda b: (b / "task_3.json").write_text("[3]\n"),
    "missing key": lambda b: (b / "task_3.json").write_text(
        json.dumps({k: v for k, v in record(3).items() if k != "subject"})
    ),
    "wrong id": lambda b: (b / "task_3.json").write_text(json.dumps(record(4), indent=2)),
    "unknown status": lambda b: (b / "task_3.json").write_text(json.dumps(record(3, status="wip"), indent=2)),
    "a folder": lambda b: (b / "task_3.json").mkdir(),
    "a fifo": lambda b: os.mkfifo(b / "task_3.json"),
    "a symlink": _symlink,
}


def damaged_board(board: Path, how: str) -> None:
    """#1 blocks #3 (damaged) blocks #5; #2 and #4 are sound and unrelated; #6 completed."""
    write_board(
        board,
        [
            record(1, blocks=[3]),
            record(2),
            record(4, subject="four"),
            record(5, blocked_by=[3]),
            record(6, status="completed"),
        ],
    )
    DAMAGE[how](board)


def last_error(stderr: str) -> dict:
    return json.loads(stderr.strip().splitlines()[-1])["error"]


@pytest.mark.parametrize("how", list(DAMAGE))
def test_get_of_a_damaged_task_exits_6_naming_the_file(board_dir, run, how):
    damaged_board(board_dir, how)
    plain = run("get", "3", expect=6)
    assert "task_3.json" in plain.stderr and "Traceback" not in plain.stderr
    error = last_error(run("get", "3", "--json", expect=6).stderr)
    assert error["code"] == "corrupt" and error["exit"] == 6 and "task_3.json" in error["message"]


@pytest.mark.parametrize("how", list(DAMAGE))
def test_listings_show_every_readable_task_and_name_the_damage(board_dir, run, how):
    damaged_board(board_dir, how)
    before = snapshot(board_dir) if how != "a fifo" else None
    listed = run("list", "--json", expect=6)
    assert [r["id"] for r in json.loads(listed.stdout)] == [1, 2, 4, 5, 6]
    assert "task_3.json" in last_error(listed.stderr)["message"]
    # an unreadable blocker may still be open: #5 is not called ready on a guess
    ready = run("ready", "--json", expect=6)
    assert [r["id"] for r in json.loads(ready.stdout)] == [1, 2, 4]
    board = run("board", "--json", expect=6)
    columns = json.loads(board.stdout)
    assert sorted(r["id"] for column in columns.values() for r in column) == [1, 2, 4, 5, 6]
    plain = run("list", expect=6)
    assert [line.split(":")[0] for line in plain.stdout.splitlines()] == [
        "[ ] #1",
        "[ ] #2",
        "[ ] #4",
        "[ ] #5",
        "[x] #6",
    ]
    assert "task_3.json" in plain.stderr and "Traceback" not in plain.stderr
    if before is not None:
        assert snapshot(board_dir) == before


def test_every_damaged_file_is_named(board_dir, run):
    damaged_board(board_dir, "truncated")
    (board_dir / "task_7.json").write_text("nope")
    result = run("list", "--json", expect=6)
    lines = [json.loads(line) for line in result.stderr.strip().splitlines()]
    text = json.dumps(lines)
    assert "task_3.json" in text and "task_7.json" in text
    assert "error" in lines[-1]
    plain = run("board", expect=6)
    assert "task_3.json" in plain.stderr and "task_7.json" in plain.stderr


NEEDS_THE_DAMAGED_FILE = [
    ["update", "3", "--subject", "fix me"],
    ["update", "3", "--status", "completed"],
    ["delete", "3"],
    ["claim", "3", "--owner", "amy"],
    ["update", "1", "--status", "completed"],  # must remove #1 from #3's blockedBy
    ["update", "5", "--status", "in_progress"],  # is #3 still open? unknown
    ["update", "2", "--add-blocks", "3"],
    ["update", "2", "--add-blocked-by", "3"],
    ["update", "5", "--remove-blocked-by", "3"],
    ["update", "4", "--add-blocks", "1"],  # cycle check walks #1 → #3
    ["create", "x", "--blocked-by", "3"],
    ["create", "x", "--blocks", "3"],
]


@pytest.mark.parametrize("how", ["truncated", "a symlink", "wrong id"])
@pytest.mark.parametrize("command", NEEDS_THE_DAMAGED_FILE)
def test_changes_that_need_a_damaged_file_refuse_and_change_nothing(board_dir, run, how, command):
    damaged_board(board_dir, how)
    before = snapshot(board_dir)
    result = run(*command, "--json", expect=6)
    error = last_error(result.stderr)
    assert error["code"] == "corrupt" and "task_3.json" in error["message"]
    assert result.stdout == ""
    assert snapshot(board_dir) == before


@pytest.mark.parametrize("how", ["truncated", "a symlink", "a fifo"])
def test_changes_that_do_not_need_it_still_work(board_dir, run, how):
    damaged_board(board_dir, how)
    damaged = board_dir / "task_3.json"
    raw_before = os.readlink(damaged) if how == "a symlink" else None
    assert run.json("create", "new")["id"] == 7, "ids are never reused, a damaged file's included"
    assert run.json("update", "2", "--subject", "renamed", "--add-blocks", "4")["blocks"] == [4]
    assert run.json("update", "6", "--status", "pending")["status"] == "pending"
    assert run.json("update", "7", "--add-blocked-by", "6")["blockedBy"] == [6]
    assert run.json("update", "7", "--remove-blocked-by", "6")["blockedBy"] == []
    assert run.json("get", "4")["subject"] == "four"
    assert run.json("claim", "2", "--owner", "amy")["owner"] == "amy"
    # claim without an id skips the damaged file with a warning and takes the next ready task
    assert run.json("claim", "--owner", "bob")["id"] == 1
    # #3 unreadable, #4 blocked by #2, #5 blocked by #3 (unknown: skipped), #6 reopened and ready
    claimed = run("claim", "--owner", "carl", "--json")
    assert json.loads(claimed.stdout)["id"] == 6
    assert "task_3.json" in claimed.stderr
    if how == "a symlink":
        assert os.readlink(damaged) == raw_before
        assert json.loads((board_dir.parent / "outside.json").read_text())["subject"] == "via a link"
    else:
        assert not damaged.is_symlink()
    assert "task_3.json" in run("get", "3", expect=6).stderr


def test_a_symlinked_task_file_is_never_written_through(board_dir, run, tmp_path):
    """Writes replace the link itself (os.replace) and reads refuse it (O_NOFOLLOW)."""
    write_board(board_dir, [record(1)])
    target = tmp_path / "target.json"
    target.write_text(json.dumps(record(2, subject="outside"), indent=2) + "\n")
    os.symlink(target, board_dir / "task_2.json")
    original = target.read_bytes()
    for command in (
        ["update", "2", "--subject", "x"],
        ["update", "1", "--add-blocks", "2"],
        ["delete", "2"],
        ["claim", "2", "--owner", "eve"],
        ["update", "2", "--status", "completed"],
    ):
        run(*command, expect=6)
    run("check", "--fix", expect=6)
    assert target.read_bytes() == original
    assert (board_dir / "task_2.json").is_symlink()
