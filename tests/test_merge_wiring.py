"""`tasks init` wires a clone for merging the board (config, attributes, hooks) without
taking anything from the user; `check` says when a clone is not wired and explains
what a failed merge left; damaged input is an ordinary git conflict, never a silent
choice; and many clones pulling and pushing through one remote lose nothing."""

from __future__ import annotations

import itertools
import json
import os
import stat

import pytest
from gitboard import Clone, by_uid, judge, new_clone
from invariants import record

from taskboard.git.wiring import HOOKS, driver_command

pytestmark = pytest.mark.usefixtures("git_identity")  # conftest: git with the tests' own configuration


def wiring(clone: Clone) -> dict[str, bytes | str]:
    """Everything init may touch, to prove a second run changes nothing."""
    found: dict[str, bytes | str] = {"config": (clone.top / ".git" / "config").read_bytes()}
    for path in sorted((clone.top / ".git" / "hooks").iterdir()):
        found[path.name] = path.read_bytes()
    found[".gitattributes"] = (clone.board / ".gitattributes").read_bytes()
    return found


def test_init_wires_the_clone_and_a_second_run_changes_nothing(tmp_path):
    top = tmp_path / "repo"
    top.mkdir()
    clone = Clone(top)
    clone.git("init", "-q")
    said = clone.tasks.json("init")
    assert said["created"] == [".gitignore", ".gitattributes"]
    assert any("merge driver" in line for line in said["git"])
    assert sum("installed the" in line for line in said["git"]) == len(HOOKS)
    assert clone.git("config", "merge.tasks.driver").stdout.strip() == driver_command()
    assert clone.git("check-attr", "merge", "--", ".tasks/task_7.json").stdout.strip().endswith(": tasks")
    for name in HOOKS:
        hook = top / ".git" / "hooks" / name
        assert hook.stat().st_mode & stat.S_IXUSR, f"{name} is not executable"
        assert "git-hook" in hook.read_text()
    before = wiring(clone)
    again = clone.tasks.json("init")
    assert again["created"] == [] and again["git"] == ["the clone was already wired"]
    assert wiring(clone) == before
    human = clone.tasks("init")
    assert "already wired" in human.stderr


def test_init_outside_git_wires_nothing(tmp_path, run):
    assert run.json("init")["git"] is None


def test_init_keeps_the_users_hooks_and_they_still_run(tmp_path):
    top = tmp_path / "repo"
    top.mkdir()
    clone = Clone(top)
    clone.git("init", "-q")
    mine = '#!/bin/sh\necho "$@" >> "$(git rev-parse --git-dir)/user-hook-ran"\n'
    (top / ".git" / "hooks" / "post-merge").write_text(mine)
    os.chmod(top / ".git" / "hooks" / "post-merge", 0o755)
    said = clone.tasks.json("init")
    assert "kept your post-merge hook as post-merge.local (it runs first)" in said["git"]
    assert (top / ".git" / "hooks" / "post-merge.local").read_text() == mine
    clone.tasks("create", "one")
    clone.commit("base")
    clone.git("checkout", "-q", "-b", "b")
    clone.tasks("create", "b2")
    clone.commit("b")
    clone.git("checkout", "-q", "main")
    clone.tasks("create", "a2")
    clone.commit("a")
    clone.git("merge", "--no-edit", "b")
    assert (top / ".git" / "user-hook-ran").read_text() == "0\n"  # the user's hook ran, with git's argument
    records = judge(clone)
    assert sorted(r["subject"] for r in records.values()) == ["a2", "b2", "one"]


def test_init_keeps_the_users_attributes(tmp_path):
    top = tmp_path / "repo"
    (top / ".tasks").mkdir(parents=True)
    clone = Clone(top)
    clone.git("init", "-q")
    (clone.board / ".gitattributes").write_text("task_*.json text eol=lf\n*.md diff=markdown\n")
    said = clone.tasks.json("init")
    assert any("added 'task_*.json merge=tasks'" in line for line in said["git"])
    assert (clone.board / ".gitattributes").read_text() == (
        "task_*.json text eol=lf\n*.md diff=markdown\ntask_*.json merge=tasks\njournal/*.jsonl merge=union\n"
    )
    # a merge attribute the user chose for task files is theirs: kept, and check says what it costs
    (clone.board / ".gitattributes").write_text("task_*.json merge=binary\njournal/*.jsonl merge=union\n")
    said = clone.tasks.json("init")
    assert any("kept your merge=binary" in line for line in said["git"])
    assert (clone.board / ".gitattributes").read_text() == "task_*.json merge=binary\njournal/*.jsonl merge=union\n"
    clone.tasks("create", "one")
    clone.commit("board")
    problems = json.loads(clone.tasks("check", "--json", expect=6).stdout)["problems"]
    assert [p["rule"] for p in problems] == ["git-wiring"]
    assert "merge attribute is 'binary'" in problems[0]["message"]


def test_check_reports_a_clone_that_is_not_wired(tmp_path):
    origin = new_clone(tmp_path / "origin")
    origin.tasks("create", "one")
    origin.commit("board")
    assert origin.tasks.json("check")["ok"] is True
    copy = Clone(tmp_path / "copy")
    origin.git("clone", "-q", str(origin.top), str(copy.top))
    result = json.loads(copy.tasks("check", "--json", expect=6).stdout)
    messages = [p["message"] for p in result["problems"] if p["rule"] == "git-wiring"]
    assert messages and all("run tasks init" in m for m in messages)
    assert any("merge driver is not set" in m for m in messages)
    assert any("post-merge" in m for m in messages)
    copy.tasks("init")
    assert copy.tasks.json("check")["ok"] is True


def test_check_names_the_init_that_wires_a_board_kept_elsewhere(tmp_path):
    # `tasks init` alone would make a new board at the top: the hint names this board's folder
    origin = Clone(tmp_path / "origin")
    origin.top.mkdir()
    origin.git("init", "-q")
    origin.tasks = type(origin.tasks)(origin.top / "plans")
    origin.tasks("create", "one")
    origin.commit("a board in plans/")
    copy = Clone(tmp_path / "copy")
    origin.git("clone", "-q", str(origin.top), str(copy.top))
    copy.tasks = type(origin.tasks)(copy.top / "plans")
    messages = [p["message"] for p in json.loads(copy.tasks("check", "--json", expect=6).stdout)["problems"]]
    hint = f"run tasks --dir {copy.top / 'plans'} init"
    assert messages and all(m.endswith(hint) for m in messages), messages
    copy.tasks("init")  # what the hint says: this board, wired in place
    assert copy.tasks.json("check")["ok"] is True
    assert not (copy.top / ".tasks").exists()


def test_a_hooks_path_of_the_users_own_is_left_alone(tmp_path):
    clone = new_clone(tmp_path / "repo")
    (clone.top / ".husky").mkdir()
    clone.git("config", "core.hooksPath", ".husky")
    said = clone.tasks.json("init")
    assert any("left the hooks in" in line and "core.hooksPath" in line for line in said["git"])
    assert os.listdir(clone.top / ".husky") == []
    clone.tasks("create", "one")
    clone.commit("board")
    problems = json.loads(clone.tasks("check", "--json", expect=6).stdout)["problems"]
    assert any(p["rule"] == "git-wiring" and "hook" in p["message"] for p in problems)


# -- damaged input is a conflict for a person ---------------------------------------------------


@pytest.mark.parametrize(
    "damage, words",
    [
        (b'{"id": 1, "subject": "half', "not valid JSON"),
        (b"<<<<<<< HEAD\n{}\n=======\n{}\n>>>>>>> other\n", "conflict markers"),
        (json.dumps(record(2)).encode(), "file name says #1"),
    ],
    ids=["invalid-json", "conflict-markers", "wrong-id"],
)
def test_damaged_input_is_an_ordinary_conflict_that_check_explains(tmp_path, damage, words):
    clone = new_clone(tmp_path / "repo")
    clone.tasks("create", "one")
    clone.tasks("create", "two")
    clone.commit("base")
    clone.git("checkout", "-q", "-b", "b")
    (clone.board / "task_1.json").write_bytes(damage)  # a hand edit gone wrong, committed
    clone.tasks("update", "2", "-d", "b's change")
    clone.commit("b")
    clone.git("checkout", "-q", "main")
    clone.tasks("update", "1", "--subject", "one, renamed")
    clone.tasks("update", "2", "--status", "in_progress")
    clone.commit("a")
    ours = (clone.board / "task_1.json").read_bytes()
    merge = clone.git("merge", "--no-edit", "b", expect=1)
    assert "CONFLICT" in merge.stdout and "task_1.json" in merge.stdout
    assert words in merge.stderr
    conflicted = (clone.board / "task_1.json").read_bytes()
    assert conflicted == b"<<<<<<< ours\n" + ours + b"=======\n" + damage + b"\n" * (not damage.endswith(b"\n")) + (
        b">>>>>>> theirs\n"
    )  # both sides whole: nothing chosen, nothing half merged
    two = json.loads((clone.board / "task_2.json").read_bytes())  # the other file merged by its meaning
    assert two["status"] == "in_progress" and two["description"] == "b's change"
    problems = json.loads(clone.tasks("check", "--json", expect=6).stdout)["problems"]
    explained = [p for p in problems if p["rule"] == "merge-conflict"]
    assert explained and words in explained[0]["message"] and explained[0]["file"] == "task_1.json"
    assert any(p["rule"] == "json" and p["file"] == "task_1.json" for p in problems)
    # the person keeps one side and finishes: git is content, the board is sound
    (clone.board / "task_1.json").write_bytes(ours)
    clone.commit("merge b, keeping our #1")
    assert clone.tasks.json("check", "--fix")["ok"] is True
    judge(clone)


# -- many clones, one remote ------------------------------------------------------------------------


@pytest.mark.parametrize("pull", [["pull", "--no-rebase", "--no-edit"], ["pull", "--rebase"]], ids=["merge", "rebase"])
def test_three_clones_pull_and_push_in_turn_and_lose_nothing(tmp_path, pull):
    remote = tmp_path / "remote.git"
    first = new_clone(tmp_path / "c1")
    first.git("init", "-q", "--bare", str(remote))
    first.tasks("create", "plan")
    first.commit("plan")
    first.git("remote", "add", "origin", str(remote))
    first.git("push", "-q", "-u", "origin", "main")
    clones = [first]
    for name in ("c2", "c3"):
        clone = Clone(tmp_path / name)
        first.git("clone", "-q", str(remote), str(clone.top))
        clone.tasks("init")
        clones.append(clone)
    made: list[str] = []
    heard: list[str] = []
    for turn in range(5):
        for number, clone in enumerate(clones, 1):
            mine = [r for r in clone.records().values() if r["subject"].startswith(f"c{number} ")]
            # the clone's newest task by name: a merge may renumber it below an older one
            # (the task created first keeps a contested id; equal seconds go by uid)
            newest = max(mine, key=lambda r: r["subject"]) if mine else None
            blockers = ["--blocked-by", str(newest["id"] if newest else 1)]
            created = clone.tasks.json("create", f"c{number} task {turn}", *blockers)
            made.append(created["uid"])
            clone.commit(f"c{number}: task {turn}")
            heard.append(clone.git(*pull).stderr)  # exit 0 every time: no conflict
            judge(clone)
            if clone.dirty():
                clone.commit("tasks: finish merging the board")
            clone.git("push", "-q", "origin", "HEAD:main")
    for clone in clones:
        clone.git(*pull)
        if clone.dirty():
            clone.commit("tasks: finish merging the board")
    boards = [by_uid(judge(clone)) for clone in clones]
    assert boards[0] == boards[1] == boards[2]
    board = boards[0]
    assert len(board) == 16 and set(made) <= set(board)  # the plan and 15 tasks, none lost, none invented
    for number in (1, 2, 3):  # each clone's chain of tasks survived every renumbering
        chain = sorted(
            (r for r in board.values() if r["subject"].startswith(f"c{number} ")), key=lambda r: r["subject"]
        )
        for earlier, later in itertools.pairwise(chain):
            assert later["blockedBy"] == [earlier["uid"]], later["subject"]
    for clone in clones:
        assert clone.tasks.json("check")["ok"] is True
    assert sum("became #" in text for text in heard) >= 4  # ids collided, and tasks were renumbered
    assert not any("could not finish" in text for text in heard)


# -- one Python start per merge, not one per file ---------------------------------------------------


def test_the_first_driver_run_answers_for_every_file_and_the_rest_need_no_python(tmp_path):
    clone = new_clone(tmp_path / "repo")
    for number in range(1, 6):
        clone.tasks("create", f"task {number}")
    clone.commit("base")
    for branch, flag, text in (("a", "-d", "described on a"), ("b", "--subject", "renamed on b")):
        clone.git("checkout", "-q", "-b", branch, "main")
        for number in range(1, 6):
            clone.tasks("update", str(number), flag, f"{text} {number}")
        clone.commit(branch)
    (clone.top / ".git" / "hooks" / "post-merge").unlink()  # keep what the merge left, to look at it
    clone.git("merge", "--no-edit", "a")
    cache = clone.top / ".git" / "tasks-merge-cache"
    answers = sorted(path for path in cache.iterdir() if not path.name.startswith("."))
    assert len(answers) == 5  # every file both sides changed, answered by the first run
    for number in range(1, 6):
        merged = (clone.board / f"task_{number}.json").read_bytes()
        record = json.loads(merged)
        assert record["subject"] == f"renamed on b {number}" and record["description"] == f"described on a {number}"
        assert merged in [path.read_bytes() for path in answers]
    # the shell words in front of the driver answer from the cache alone: with no Python at all
    driver = clone.git("config", "merge.tasks.driver").stdout.strip()
    without_python = driver.rpartition("||")[0] + "|| exit 9"
    base, ours, theirs = (tmp_path / name for name in ("O", "A", "B"))
    for side, commit in ((base, "main"), (ours, "HEAD^1"), (theirs, "HEAD^2")):
        side.write_bytes(clone.git("show", f"{commit}:.tasks/task_3.json").stdout.encode())
    command = without_python.replace("%O", str(base)).replace("%A", str(ours)).replace("%B", str(theirs))
    assert clone.git("-c", f"alias.x=!{command}", "x").returncode == 0
    assert ours.read_bytes() == (clone.board / "task_3.json").read_bytes()
    ours.write_bytes(b"{}")  # bytes it never saw: no answer, so the driver itself would be asked
    assert clone.git("-c", f"alias.x=!{command}", "x", expect=9).returncode == 9
    # finishing the merge clears the cache (check still says the post-merge hook is missing)
    clone.tasks("check", "--fix", expect=6)
    assert not cache.exists() and not (clone.top / ".git" / "tasks-merge.json").exists()


@pytest.mark.parametrize("kind", ["fifo", "folder", "dev-zero", "dangling-link"])
def test_a_hook_of_the_wrong_kind_never_hangs_init_or_check(tmp_path, kind):
    """A hook `tasks init` and `check` read to see whether it is theirs: a FIFO in its place
    made both wait forever, a link to /dev/zero read forever, and a dangling link was
    written through (a file created outside .git). Now: never waited on, never read past
    a bound, left alone and named; a link is moved aside, never written through."""
    from conftest import tasks_process

    top = tmp_path / "repo"
    top.mkdir()
    Clone(top).git("init", "-q")
    hook = top / ".git" / "hooks" / "post-merge"
    hook.parent.mkdir(parents=True, exist_ok=True)
    nowhere = tmp_path / "nowhere" / "hook"
    if kind == "fifo":
        os.mkfifo(hook)
    elif kind == "folder":
        hook.mkdir()
    elif kind == "dev-zero":
        hook.symlink_to("/dev/zero")
    else:
        hook.symlink_to(nowhere)
    board = top / ".tasks"
    done = tasks_process("--dir", str(board), "init", timeout=30)
    assert done.returncode == 0 and b"Traceback" not in done.stderr, done.stderr
    assert not nowhere.parent.exists(), "a hook was written through a link"
    assert tasks_process("--dir", str(board), "create", "a").returncode == 0
    Clone(top).commit("board")
    checked = tasks_process("--dir", str(board), "check", timeout=30)
    if kind == "dangling-link":
        assert b"installed the post-merge hook" in done.stdout + done.stderr
        assert checked.returncode == 0, checked.stderr
    else:
        assert b"left your post-merge hook alone" in done.stdout + done.stderr, done.stdout + done.stderr
        assert checked.returncode == 6 and b"post-merge" in checked.stderr + checked.stdout, checked.stderr


def test_init_never_writes_through_a_linked_gitattributes(tmp_path):
    from conftest import tasks_process

    top = tmp_path / "repo"
    (top / ".tasks").mkdir(parents=True)
    Clone(top).git("init", "-q")
    outside = tmp_path / "outside"
    outside.write_text("mine\n")
    (top / ".tasks" / ".gitattributes").symlink_to(outside)
    done = tasks_process("--dir", str(top / ".tasks"), "init", timeout=30)
    assert b"Traceback" not in done.stderr and b"symbolic link" in done.stderr, done.stderr
    assert outside.read_text() == "mine\n"


@pytest.mark.parametrize("name", ["tasks-merge.json", "MERGE_HEAD"])
def test_a_fifo_in_place_of_gits_merge_files_never_hangs_a_command(tmp_path, name):
    """Every command looks for the driver's marker in the git folder, and `check --fix`
    reads MERGE_HEAD: a FIFO planted as either made them wait forever."""
    from conftest import tasks_process

    clone = new_clone(tmp_path / "repo")
    clone.tasks("create", "a")
    clone.commit("board")
    os.mkfifo(clone.top / ".git" / name)
    for args in (["list"], ["check"], ["check", "--fix"], ["create", "b"], ["update", "1", "-d", "x"]):
        done = tasks_process("--dir", str(clone.board), *args, timeout=30)
        assert b"Traceback" not in done.stderr and done.returncode in (0, 6), (args, done.returncode, done.stderr)
