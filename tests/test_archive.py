"""`tasks archive` and `tasks restore` (DESIGN §11) through the command line, with real
files: what moves, what stays, what every command still sees, hand edits inside the
archive, and a kill in the middle of an archive."""

from __future__ import annotations

import json
import os
import subprocess
import time

import pytest
from conftest import tasks_process
from invariants import archived_ids, assert_sound, load_journal, record, snapshot, write_board

OLD = "2026-01-01T00:00:00Z"  # far more than 30 days before any run of these tests


def now_stamp() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def history_board(board) -> None:
    """#1 → #2 → #3 finished long ago; #4 deleted long ago; #5 finished long ago but open
    #6 blocks it (an edge added after it finished: #6 names it); #7 finished today; #8
    open, blocked by nothing; #9 finished long ago (the highest id: it holds the id count)."""
    write_board(
        board,
        [
            record(1, status="completed", blocks=[2], updatedAt=OLD),
            record(2, status="completed", blocks=[3], updatedAt=OLD),
            record(3, status="completed", updatedAt=OLD),
            record(4, status="deleted", updatedAt=OLD),
            record(5, status="completed", blocked_by=[6], updatedAt=OLD),
            record(6, status="pending", blocks=[5]),
            record(7, status="completed", updatedAt=now_stamp()),
            record(8, status="pending"),
            record(9, status="completed", updatedAt=OLD),
        ],
    )


def test_archive_moves_old_unlinked_history_and_nothing_else(run, board_dir):
    history_board(board_dir)
    before = snapshot(board_dir)
    dry = run.json("archive", "--dry-run")
    assert dry == {"archived": [1, 2, 3, 4], "dry_run": True}
    assert snapshot(board_dir) == before  # a dry run moves nothing
    done = run.json("archive")
    assert done == {"archived": [1, 2, 3, 4], "dry_run": False}
    assert archived_ids(board_dir) == {1, 2, 3, 4}
    for task_id in (1, 2, 3, 4):
        assert not (board_dir / f"task_{task_id}.json").exists()
        # the same bytes, moved: git shows a rename
        assert (board_dir / "archive" / f"task_{task_id}.json").read_bytes() == before[f"task_{task_id}.json"]
    assert sorted(int(n[5:-5]) for n in os.listdir(board_dir) if n.startswith("task_")) == [5, 6, 7, 8, 9]
    assert_sound(board_dir)
    archived = [e for e in load_journal(board_dir) if e["event"] == "archived"]
    assert sorted(e["task"] for e in archived) == [1, 2, 3, 4]
    assert run.json("archive") == {"archived": [], "dry_run": False}  # nothing more to move
    # --older-than 0: what changed today goes too, but never work linked to open tasks nor the highest id
    assert run.json("archive", "--older-than", "0") == {"archived": [7], "dry_run": False}


def test_archive_for_people_names_each_task_and_counts_them(run, board_dir):
    history_board(board_dir)
    result = run("archive")
    assert result.stdout.splitlines() == ["[x] #1: task 1", "[x] #2: task 2", "[x] #3: task 3", "[-] #4: task 4"]
    assert "archived 4 task(s)" in result.stderr
    assert "would archive 0 task(s)" in run("archive", "--dry-run").stderr


@pytest.mark.parametrize("bad", ["-1", "x", "1.5", "", "9999999999"])
def test_a_bad_number_of_days_is_a_usage_error_and_changes_nothing(run, board_dir, bad):
    history_board(board_dir)
    before = snapshot(board_dir)
    result = run("archive", "--older-than", bad, "--json", expect=2)
    error = json.loads(result.stderr.splitlines()[-1])["error"]
    assert error["code"] == "usage" and "--older-than" in error["message"]
    assert snapshot(board_dir) == before


def test_archived_ids_are_never_reused(run, board_dir):
    for subject in ("a", "b", "c"):
        run("create", subject)
    run("done", "1")
    run("done", "2")
    run("done", "3")
    assert run.json("archive", "--older-than", "0")["archived"] == [1, 2]  # #3 holds the id count
    assert run.json("create", "d")["id"] == 4
    run("done", "4")
    assert run.json("archive", "--older-than", "0")["archived"] == [3]
    assert run.json("create", "e")["id"] == 5
    assert_sound(board_dir)


def test_every_command_that_names_an_archived_task_sees_it_marked(run, board_dir):
    history_board(board_dir)
    run("archive")
    got = run.json("get", "2")
    assert got["archived"] is True and got["status"] == "completed" and got["blocks"] == [3]
    assert "archived" not in json.loads((board_dir / "archive" / "task_2.json").read_text())  # never in the file
    assert run("get", "2").stdout.splitlines()[0] == "[x] #2: task 2 (archived)"
    assert run.json("log", "4")[-1]["event"] == "archived"
    everything = run.json("list", "--all")
    assert [r["id"] for r in everything] == list(range(1, 10))
    assert [r["id"] for r in everything if r.get("archived")] == [1, 2, 3, 4]
    assert "[-] #4: task 4 (archived)" in run("list", "--all").stdout.splitlines()
    # `list --status` is open work's listing and never opens the archive; --all does (DESIGN §11)
    assert [r["id"] for r in run.json("list", "--status", "completed")] == [5, 7, 9]
    done = run.json("list", "--all", "--status", "completed")
    assert [(r["id"], r.get("archived", False)) for r in done] == [
        (1, True),
        (2, True),
        (3, True),
        (5, False),
        (7, False),
        (9, False),
    ]
    help_text = run("list", "--help").stdout
    assert "--all --status completed" in help_text and "archived" in help_text
    graph = run.json("graph", "--all")
    assert {node["id"] for node in graph["nodes"]} >= {1, 2, 3, 4}
    assert [1, 2] in graph["edges"] and [2, 3] in graph["edges"]
    assert "#2 task 2 (archived)" in run("graph", "--all").stdout
    assert "t1 -> t2" in run("graph", "--all", "--format", "dot").stdout


def test_open_work_never_reads_the_archive(run, board_dir):
    """list, ready, claim, board and the writes of open work read the live files only: a
    damaged file in the archive does not trouble them (they never open it), while the
    commands about history name it; the cache beside the board holds no archived task.
    (Deleting is the one change that looks at every task, the archive too: DESIGN §2.)"""
    history_board(board_dir)
    run("archive")
    (board_dir / "archive" / "task_3.json").write_text("{ damaged")
    for command in (["list"], ["ready"], ["board"], ["list", "--status", "completed"]):
        result = run(*command, "--json")
        assert "task_3" not in result.stderr, command
    assert [r["id"] for r in run.json("list")] == [5, 6, 7, 8, 9]
    assert [r["id"] for r in run.json("list", "--status", "completed")] == [5, 7, 9]
    assert run.json("claim", "--owner", "ada")["id"] == 6
    new = run.json("create", "x", "--blocked-by", "8")
    run("done", "8")
    run("update", str(new["id"]), "--subject", "y", "--add-blocks", "7")
    run("release", "6")
    assert run("list", "--all", expect=6).stderr.count("task_3.json") == 1  # history names it
    cache = board_dir / ".cache"
    index = (cache / "index").read_bytes()
    for task_id in (1, 2, 4):
        assert f'"uid": "{task_id:012x}"'.encode() not in index
    history = (cache / "history").read_bytes() if (cache / "history").exists() else b""
    run("list", "--all", expect=6)
    after = (cache / "history").read_bytes() if (cache / "history").exists() else b""
    assert after == history  # listing the archive never grows the cache


def test_a_change_to_an_archived_task_brings_it_back_first(run, board_dir):
    history_board(board_dir)
    run("archive")
    before = (board_dir / "archive" / "task_1.json").read_bytes()
    run("update", "1", "--subject", "renamed")
    assert not (board_dir / "archive" / "task_1.json").exists()
    assert json.loads((board_dir / "task_1.json").read_text())["subject"] == "renamed"
    assert (board_dir / "task_1.json").read_bytes() != before
    assert "archived" not in run.json("get", "1")
    run("reopen", "3")  # reopening an archived task brings it back, and it is open work again
    assert (board_dir / "task_3.json").exists() and not (board_dir / "archive" / "task_3.json").exists()
    assert 3 in [r["id"] for r in run.json("ready")]
    run("update", "8", "--add-blocked-by", "2")  # a new edge to an archived (completed) task
    assert (board_dir / "task_2.json").exists() and not (board_dir / "archive" / "task_2.json").exists()
    assert json.loads((board_dir / "task_2.json").read_text())["blocks"] == [3, 8]
    restored = [e["task"] for e in load_journal(board_dir) if e["event"] == "restored"]
    assert sorted(restored) == [1, 2, 3]
    assert_sound(board_dir)
    assert run.json("check")["ok"] is True


def test_restore_brings_back_an_archived_task_as_it_was_and_a_deleted_one_as_pending(run, board_dir):
    history_board(board_dir)
    run("archive")
    before = (board_dir / "archive" / "task_2.json").read_bytes()
    got = run.json("restore", "2")
    assert got["status"] == "completed" and "archived" not in got
    assert (board_dir / "task_2.json").read_bytes() == before  # the same bytes: git shows a rename back
    assert 2 not in archived_ids(board_dir)
    got = run.json("restore", "4")  # archived and deleted: back as pending, no edges
    assert got["status"] == "pending" and got["blocks"] == [] and got["blockedBy"] == []
    assert 4 in [r["id"] for r in run.json("ready")]
    run("delete", "8")
    assert run.json("restore", "8")["status"] == "pending"  # a live deleted task
    assert_sound(board_dir)


@pytest.mark.parametrize("archived", [True, False])
def test_a_deleted_task_restored_comes_back_pending_and_unowned_like_a_release(run, board_dir, archived):
    """DESIGN §3: an owner on a pending task reserves it, and leaving work (release) clears
    the owner. A deleted task that someone held comes back as pending work anyone can take,
    not reserved for whoever held it before it was deleted."""
    write_board(
        board_dir,
        [
            record(1, status="deleted", owner="ada", updatedAt=OLD),
            record(2, status="pending"),
        ],
    )
    if archived:
        assert run.json("archive")["archived"] == [1]
    got = run.json("restore", "1")
    assert (got["status"], got["owner"], got["blocks"], got["blockedBy"]) == ("pending", "", [], [])
    assert json.loads((board_dir / "task_1.json").read_text())["owner"] == ""
    assert run.json("claim", "1", "--owner", "bob")["owner"] == "bob"  # nobody's reservation stands in the way
    assert_sound(board_dir)
    assert run.json("check")["ok"] is True


def test_reopening_an_archived_task_brings_it_back_with_its_owner(run, board_dir):
    """DESIGN §3: reopening keeps the owner (who did the work stays visible); §11: it
    comes back to the live board first, in the same change."""
    write_board(board_dir, [record(1, status="completed", owner="ada", updatedAt=OLD), record(2)])
    assert run.json("archive")["archived"] == [1]
    got = run.json("reopen", "1")
    assert (got["status"], got["owner"]) == ("pending", "ada") and "archived" not in got
    assert archived_ids(board_dir) == set() and (board_dir / "task_1.json").exists()
    assert [e["event"] for e in load_journal(board_dir) if e["task"] == 1][-1] == "restored"
    assert_sound(board_dir)


def test_restore_refuses_what_is_not_archived_or_deleted_and_changes_nothing(run, board_dir):
    history_board(board_dir)
    run("archive")
    before = snapshot(board_dir)
    refused = run("restore", "6", "--json", expect=4)
    error = json.loads(refused.stderr.splitlines()[-1])["error"]
    assert error["code"] == "refused" and "#6" in error["message"] and "restore" in error["message"]
    missing = run("restore", "42", "--json", expect=3)
    assert json.loads(missing.stderr.splitlines()[-1])["error"]["message"] == "no task #42"
    run("restore", "x", expect=2)
    assert snapshot(board_dir) == before


def test_deleting_a_task_an_archived_one_names_edits_the_archive_in_place(run, board_dir):
    """#1 (archived) keeps the history edges #1 → #7 (completed) and #1 → #8 (open: #8
    does not name a completed blocker); deleting either drops it from the archived file,
    which stays archived."""
    write_board(
        board_dir,
        [
            record(1, status="completed", blocks=[7, 8], updatedAt=OLD),
            record(7, status="completed", updatedAt=now_stamp()),
            record(8, status="pending"),
            record(9, status="pending"),
        ],
    )
    assert run.json("archive")["archived"] == [1]
    run("delete", "7")
    assert json.loads((board_dir / "archive" / "task_1.json").read_text())["blocks"] == [8]
    run("delete", "8")
    assert json.loads((board_dir / "archive" / "task_1.json").read_text())["blocks"] == []
    assert not (board_dir / "task_1.json").exists()
    assert_sound(board_dir)
    assert run.json("check")["ok"] is True


def test_a_hand_edit_inside_the_archive_is_seen_and_an_open_archived_task_is_put_back(run, board_dir):
    history_board(board_dir)
    run("archive")
    path = board_dir / "archive" / "task_3.json"
    edited = json.loads(path.read_text())
    edited["subject"] = "edited by hand"
    path.write_text(json.dumps(edited, indent=2) + "\n")
    assert run.json("get", "3")["subject"] == "edited by hand"
    assert run.json("check")["ok"] is True
    edited["status"] = "pending"  # someone reopens it by hand, inside the archive
    path.write_text(json.dumps(edited, indent=2) + "\n")
    found = run.json("check", expect=6)
    # #2's history edge names #3, but #3 does not name #2 (a completed blocker): #2 stays
    assert [(p["rule"], p["task"]) for p in found["problems"]] == [("archived-open", 3)]
    assert 3 not in [r["id"] for r in run.json("ready")]  # open work never reads the archive...
    fixed = run.json("check", "--fix")
    assert fixed["ok"] is True and all(problem["fixed"] for problem in fixed["problems"])
    assert not path.exists() and (board_dir / "task_3.json").exists()
    assert archived_ids(board_dir) == {1, 2, 4}
    assert 3 in [r["id"] for r in run.json("ready")]  # ...so the repair brings it back
    assert_sound(board_dir)


def test_check_sees_edges_into_the_archive_and_a_task_in_both_places(run, board_dir):
    history_board(board_dir)
    run("archive")
    assert run.json("check")["ok"] is True  # #1 → #2 → #3 all archived: no edge to a missing task
    (board_dir / "task_3.json").write_bytes((board_dir / "archive" / "task_3.json").read_bytes())
    found = run.json("check", expect=6)["problems"]
    assert [p["rule"] for p in found] == ["duplicate-id"]
    assert "archive/task_3.json" in found[0]["message"] and "task_3.json" in found[0]["message"]


def test_an_archive_killed_midway_is_finished_by_the_next_command(tmp_path):
    board = tmp_path / ".tasks"
    write_board(board, [*(record(i, status="completed", updatedAt=OLD) for i in range(1, 30)), record(30)])
    killed = tasks_process("--dir", str(board), "archive", env={"TASKS_TEST_CRASH_AFTER": "5"})
    assert killed.returncode == -9
    assert 0 < len(archived_ids(board)) < 29  # stopped in the middle of moving the files
    done = tasks_process("--dir", str(board), "list", "--all", "--json")
    assert done.returncode == 0, done.stderr
    assert archived_ids(board) == set(range(1, 30))
    assert [r["id"] for r in json.loads(done.stdout)] == list(range(1, 31))
    assert_sound(board)


def test_git_shows_the_archive_and_the_restore_as_renames(tmp_path):
    top = tmp_path / "repo"
    top.mkdir()
    env = {**os.environ, "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@x", "GIT_COMMITTER_NAME": "a"}
    env.update(GIT_COMMITTER_EMAIL="a@x", HOME=str(tmp_path), GIT_CONFIG_NOSYSTEM="1")

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=top, env=env, check=True, capture_output=True, text=True).stdout

    git("init", "-q")
    history_board(top / ".tasks")
    git("add", "-A")
    git("commit", "-qm", "board")
    assert tasks_process("archive", cwd=top).returncode == 0
    git("add", "-A")
    renames = [line for line in git("status", "--porcelain").splitlines() if line.startswith("R")]
    assert renames == [f"R  .tasks/task_{i}.json -> .tasks/archive/task_{i}.json" for i in (1, 2, 3, 4)]
    git("commit", "-qm", "archive")
    assert tasks_process("restore", "2", cwd=top).returncode == 0
    git("add", "-A")
    lines = git("status", "--porcelain").splitlines()
    assert "R  .tasks/archive/task_2.json -> .tasks/task_2.json" in lines


def test_the_task_get_tool_reads_an_archived_task(tmp_path):
    board = tmp_path / ".tasks"
    history_board(board)
    assert tasks_process("--dir", str(board), "archive").returncode == 0
    call = json.dumps({"name": "task_get", "input": {"taskId": 3}}).encode()
    done = tasks_process("--dir", str(board), "call", input=call)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert got["id"] == 3 and got["status"] == "completed" and got["archived"] is True
