"""Other writers of the same files (DESIGN §13, issue 22): the s12 chapter's task manager,
its sibling chapters, scripts and agents with a file tool. They take no lock, write a file
in place (truncate, then write), write one side of an edge, spell ids as strings, leave
keys out or write `null`. Every record here is written the way they write it: the JSON
text of `json.dumps(task, indent=2)`, no trailing newline, put in the file in place."""

from __future__ import annotations

import fcntl
import json
import os
import re
import signal
import subprocess
from pathlib import Path

import pytest
from conftest import TASKS, Run, tasks_process
from gitboard import new_clone
from watching import IN_CLOSE_NOWRITE, IN_CREATE, Watch

from taskboard.core.model import encode


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


def test_check_fix_on_a_damaged_board_without_a_merge_says_nothing_of_merging(tmp_path, git_identity):
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


# -- finding 1: completion clears every blockedBy that names the task ----------------------------


def test_done_clears_a_blocked_by_written_on_one_side(run, board_dir):
    family_write(board_dir, chapter_task(1, "Write parser"))
    family_write(board_dir, chapter_task(2, "Write checker", blockedBy=[1]))  # addBlockedBy: one side
    family_write(board_dir, chapter_task(3, "Ship", blockedBy=[1, 2]))
    assert run.json("ready") == [run.json("get", "1")]
    done = run("done", "1", "--json")
    assert json.loads(done.stderr.splitlines()[0]) == {"unblocked": [2]}
    assert run.record(2)["blockedBy"] == []
    assert run.record(3)["blockedBy"] == [2]
    assert canonical(board_dir / "task_2.json")
    # what the chapter itself judges ready: status pending and an empty blockedBy
    chapter_ready = sorted(
        task["id"]
        for task in (json.loads(path.read_text()) for path in board_dir.glob("task_*.json"))
        if task["status"] == "pending" and not task["blockedBy"]
    )
    assert chapter_ready == [r["id"] for r in run.json("ready")] == [2]


def test_done_clears_a_blocked_by_naming_it_as_text(run, board_dir):
    family_write(board_dir, chapter_task(1, "Write parser", blocks=["2"]))
    family_write(board_dir, chapter_task(2, "Write docs", blockedBy=["1"]))
    run("done", "1")
    assert run.record(2)["blockedBy"] == [] and run.record(1)["blocks"] == [2]
    assert [r["id"] for r in run.json("ready")] == [2]


# -- findings 2, 3 and 4: writers that take no lock, caught at the exact instant ------------------


def tasks_popen(board: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [*TASKS, "--dir", str(board), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ)
    )


def test_create_never_replaces_a_file_that_appeared_meanwhile(run, board_dir):
    run("create", "First")
    watch = Watch(board_dir / ".scratch", IN_CREATE)
    lock = os.open(board_dir / ".lock", os.O_RDONLY)
    fcntl.flock(lock, fcntl.LOCK_EX)  # another writer's change: tasks waits for the board lock
    creating = tasks_popen(board_dir, "create", "Made by tasks", "--json")
    # a create reserves its id by naming its written file task_N.json.new (Store.reserve), then
    # waits for the lock to put it in place; the chapter writes that very task meanwhile
    staged = watch.wait(lambda name: re.fullmatch(r"task_\d+\.json\.new", name) is not None)
    taken = int(staged.split("_")[1].split(".")[0])
    family_write(board_dir, chapter_task(taken, "Made by the chapter"))
    os.close(lock)
    out, err = creating.communicate(timeout=60)
    watch.close()
    assert creating.returncode == 0, err
    made = json.loads(out)
    assert made["id"] == taken + 1 and made["subject"] == "Made by tasks"
    assert json.loads((board_dir / f"task_{taken}.json").read_text())["subject"] == "Made by the chapter"
    assert run.record(taken + 1) == made
    assert [r["subject"] for r in run.json("list")] == ["First", "Made by the chapter", "Made by tasks"]
    assert sorted(os.listdir(board_dir / ".scratch")) == []


def test_a_change_never_replaces_a_file_changed_after_it_was_read(run, board_dir):
    run("create", "Write parser")
    run("create", "Write checker", "--blocked-by", "1")
    watch = Watch(board_dir, IN_CLOSE_NOWRITE)
    completing = tasks_popen(board_dir, "done", "1")
    watch.wait(lambda name: name == "task_2.json")  # tasks has read #2 and will rewrite it
    os.kill(completing.pid, signal.SIGSTOP)
    task = json.loads((board_dir / "task_2.json").read_text())  # the chapter's update: load, set, save
    task["owner"] = "alice"
    family_write(board_dir, task)
    os.kill(completing.pid, signal.SIGCONT)
    _, err = completing.communicate(timeout=60)
    watch.close()
    assert completing.returncode == 0, err
    second = run.record(2)
    assert (second["owner"], second["blockedBy"]) == ("alice", [])  # the edit kept, and the completion made
    assert canonical(board_dir / "task_2.json")


@pytest.mark.parametrize("first_part", ["", '{\n  "id": 2,\n  "subject": "Wri'])
def test_a_reader_meeting_a_file_written_in_place_reads_it_again(run, board_dir, first_part):
    run("create", "Write parser")
    run("create", "Write checker")
    path = board_dir / "task_2.json"
    task = chapter_task(2, "Write checker")
    watch = Watch(board_dir, IN_CLOSE_NOWRITE)
    with open(path, "w") as out:  # the chapter's write_text: truncated in place first...
        out.write(first_part)
    listing = tasks_popen(board_dir, "list", "--json")
    # ...the reader met it half written (written again while the reader starts, however
    # slowly: a file left half written for a second is damage, and is reported so)...
    while watch.within(lambda name: name == "task_2.json", 0.2) is None:
        with open(path, "w") as out:
            out.write(first_part)
    with open(path, "w") as out:  # ...and the rest of the text comes
        out.write(json.dumps(task, indent=2))
    out_text, err = listing.communicate(timeout=60)
    watch.close()
    assert listing.returncode == 0, err
    assert [r["subject"] for r in json.loads(out_text)] == ["Write parser", "Write checker"]


def test_a_file_that_stays_empty_is_damage_after_all(run, board_dir):
    run("create", "Write parser")
    (board_dir / "task_2.json").write_text("")
    assert "task_2.json" in run("list", expect=6).stderr


# -- finding 5: the file wins over a claim another writer ended ------------------------------------


@pytest.mark.parametrize("lease", [[], ["--lease", "10m"]], ids=["no-lease", "live-lease"])
@pytest.mark.parametrize("ending", ["completed", "pending"])
def test_a_claim_another_writer_ended_leaves_check_clean(tmp_path, git_identity, ending, lease):
    """Even under a live lease: a file written since the claim was taken is another
    writer's word (a rewound one, older than the claim, is not: test_sync_kill)."""
    clone = new_clone(tmp_path / "repo")
    clone.tasks("create", "Write parser")
    clone.tasks("create", "Write checker", "--blocked-by", "1")
    clone.tasks("--as", "bob", "claim", "1", *lease)
    task = json.loads((clone.board / "task_1.json").read_text())  # the chapter's update: load, set, save
    task["status"] = ending
    if ending == "pending":
        task["owner"] = ""
    family_write(clone.board, task)
    if ending == "completed":  # and its _clear_dependency: out of every other task's blockedBy
        dependent = json.loads((clone.board / "task_2.json").read_text())
        dependent["blockedBy"].remove(1)
        family_write(clone.board, dependent)
    checked = clone.tasks.json("check")
    assert checked == {"ok": True, "problems": []}
    if ending == "pending":  # given back: another owner takes it, and the board stays sound
        assert clone.tasks.json("--as", "alice", "claim", "1")["owner"] == "alice"
    else:
        assert [r["id"] for r in clone.tasks.json("ready")] == [2]
    assert clone.tasks.json("check") == {"ok": True, "problems": []}


# -- finding 9: Claude Code's task lists ------------------------------------------------------------


def claude_list(folder: Path, tasks: list[dict], mark: bool = True) -> Path:
    """A Claude Code task list: one `N.json` per task (ids as text), `.lock`, `.highwatermark`."""
    folder.mkdir(parents=True)
    for task in tasks:
        (folder / f"{task['id']}.json").write_text(json.dumps(task, indent=2))
    (folder / ".lock").write_text("")
    if mark:
        (folder / ".highwatermark").write_text(str(max(int(task["id"]) for task in tasks)))
    return folder


CLAUDE_TASKS = [
    {
        "id": "1",
        "subject": "Set up the database",
        "description": "Postgres schema",
        "activeForm": "Setting up the database",
        "status": "completed",
        "blocks": ["2"],
        "blockedBy": [],
    },
    {
        "id": "2",
        "subject": "Write the login API",
        "description": "",
        "activeForm": "Writing the login API",
        "status": "in_progress",
        "blocks": [],
        "blockedBy": ["1"],
        "owner": "agent-a",
        "metadata": {"area": "api"},
    },
    {"id": "4", "subject": "Test login", "description": "", "status": "pending", "blocks": [], "blockedBy": ["2", "3"]},
]


@pytest.mark.parametrize("mark", [True, False])
def test_tasks_pointed_at_a_claude_task_list_says_what_it_is(tmp_path, mark):
    folder = claude_list(tmp_path / "list", CLAUDE_TASKS, mark=mark)
    before = sorted(path.name for path in folder.iterdir())
    for args in (["list"], ["ready", "--json"], ["board"], ["create", "New"]):
        done = tasks_process("--dir", str(folder), *args)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        assert b"Claude Code task list" in done.stderr and b"import it" in done.stderr
        assert done.stdout == b""
    assert sorted(path.name for path in folder.iterdir()) == before  # nothing written into it


def test_import_from_claude_takes_the_list_in_as_a_plan(run, board_dir, tmp_path):
    folder = claude_list(tmp_path / "list", CLAUDE_TASKS)
    run("create", "Already here")
    created = run.json("import", "--from", "claude", str(folder))["created"]
    assert created == {"1": 2, "2": 3, "4": 4}  # renumbered onto the board, in the list's order
    records = {r["id"]: r for r in run.json("list", "--all")}
    database, login, test = records[2], records[3], records[4]
    assert (database["status"], login["status"], test["status"]) == ("completed", "in_progress", "pending")
    assert (database["blocks"], login["blockedBy"]) == ([3], [])  # a completed blocker keeps its edge in blocks
    assert (login["blocks"], test["blockedBy"]) == ([4], [3])  # the id with no file (#3 removed there) left out
    assert login["owner"] == "agent-a"
    assert login["metadata"] == {"area": "api", "claude": {"id": "2", "activeForm": "Writing the login API"}}
    assert run.json("check") == {"ok": True, "problems": []}


def test_import_from_claude_refuses_a_damaged_list_and_changes_nothing(run, board_dir, tmp_path):
    folder = claude_list(tmp_path / "list", [*CLAUDE_TASKS[:2], {**CLAUDE_TASKS[2], "status": "blocked"}])
    result = run("import", "--from", "claude", str(folder), expect=2)
    assert "4.json" in result.stderr and "blocked" in result.stderr
    assert not board_dir.exists() or not list(board_dir.glob("task_*.json"))


def test_export_as_claude_writes_the_open_work_and_comes_back_in(run, board_dir, tmp_path):
    folder = claude_list(tmp_path / "list", CLAUDE_TASKS)
    run("import", "--from", "claude", str(folder))
    out = tmp_path / "out"
    assert run.json("export", "--format", "claude", str(out)) == {"exported": [2, 3], "folder": str(out)}
    assert sorted(path.name for path in out.iterdir()) == [".highwatermark", "2.json", "3.json"]
    login = json.loads((out / "2.json").read_text())
    assert login == {
        "id": "2",
        "subject": "Write the login API",
        "description": "",
        "activeForm": "Writing the login API",
        "status": "in_progress",
        "blocks": ["3"],
        "blockedBy": [],
        "owner": "agent-a",
        "metadata": {"area": "api"},
    }
    assert json.loads((out / "3.json").read_text())["blockedBy"] == ["2"]
    assert (out / ".highwatermark").read_text() == "3"
    run("export", "--format", "claude", str(out), expect=2)  # never over a list that is there
    again = Run(tmp_path / "again" / ".tasks")
    assert again.json("import", "--from", "claude", str(out))["created"] == {"2": 1, "3": 2}
    assert [(r["subject"], r["blockedBy"]) for r in again.json("list")] == [
        ("Write the login API", []),
        ("Test login", [1]),
    ]
