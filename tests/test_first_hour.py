"""The first hour of a new team (issue 18), each trap as a newcomer met it: real git,
real `tasks` processes, real worktrees. A fresh clone has none of the board's runtime
folders; worktrees of one clone work one plan; the traps of a caller that names nobody,
a damaged file, a missing board, and a global option after `prime`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from gitboard import git_env

BIN = Path(sys.executable).parent


class Shell:
    """`tasks` and `git` as a person at a shell runs them: real processes in a folder."""

    def __init__(self, tmp_path: Path):
        self.env = {**os.environ, **git_env(tmp_path / "home")}
        self.env["PATH"] = os.pathsep.join([str(BIN), self.env.get("PATH", "")])
        for name in ("TASKS_DIR", "TASKS_OWNER", "TASKS_LEASE"):
            self.env.pop(name, None)

    def run(self, *argv: str, cwd: Path, expect: int | None = 0, env: dict | None = None):
        done = subprocess.run(
            argv, cwd=cwd, env={**self.env, **(env or {})}, capture_output=True, text=True, timeout=120
        )
        if expect is not None:
            assert done.returncode == expect, (argv, cwd, done.returncode, done.stdout, done.stderr)
        return done

    def tasks(self, *args: str, cwd: Path, expect: int | None = 0, env: dict | None = None):
        return self.run("tasks", *args, cwd=cwd, expect=expect, env=env)

    def git(self, *args: str, cwd: Path, expect: int | None = 0):
        return self.run("git", *args, cwd=cwd, expect=expect)


@pytest.fixture
def sh(tmp_path) -> Shell:
    return Shell(tmp_path)


def origin_with_plan(sh: Shell, top: Path) -> Path:
    """A repository with a board of two tasks, #2 waiting on #1, committed."""
    top.mkdir()
    sh.git("init", "-q", cwd=top)
    sh.tasks("init", cwd=top)
    sh.tasks("create", "one", cwd=top)
    sh.tasks("create", "two", "--blocked-by", "1", cwd=top)
    sh.git("add", "-A", cwd=top)
    sh.git("commit", "-qm", "plan", cwd=top)
    return top


# -- 1. runtime folders are made when first needed -------------------------------------------


def test_a_merge_in_a_fresh_clone_leaves_a_usable_board(sh, tmp_path):
    """The issue's reproduction, with per-branch boards (as every worktree had then): the
    post-merge hook rewrites exactly one task file in a clone that never had .scratch/."""
    origin_with_plan(sh, tmp_path / "repo")
    sh.git("clone", "-q", "repo", "c", cwd=tmp_path)
    c = tmp_path / "c"
    sh.tasks("init", cwd=c)
    assert not (c / ".tasks" / ".scratch").exists()  # git never brings it
    sh.git("config", "tasks.worktrees", "branch", cwd=c)
    sh.git("worktree", "add", "-q", "../ct-a", "-b", "a", cwd=c)
    sh.git("worktree", "add", "-q", "../ct-b", "-b", "b", cwd=c)
    a, b = tmp_path / "ct-a", tmp_path / "ct-b"
    sh.tasks("--as", "x", "done", "1", cwd=a)
    sh.tasks("--as", "x", "claim", "2", cwd=a)
    sh.tasks("--as", "x", "done", "2", cwd=a)
    sh.git("add", ".tasks", cwd=a)
    sh.git("commit", "-qm", "a", cwd=a)
    sh.tasks("create", "new", "--blocked-by", "2", cwd=b)
    sh.git("add", ".tasks", cwd=b)
    sh.git("commit", "-qm", "b", cwd=b)
    sh.git("merge", "-q", "a", cwd=c)
    merged = sh.git("merge", "--no-edit", "b", cwd=c)
    assert "could not finish merging" not in merged.stderr, merged.stderr
    listed = sh.tasks("list", "--json", cwd=c)
    assert {task["id"]: task["status"] for task in json.loads(listed.stdout)} == {
        1: "completed",
        2: "completed",
        3: "pending",
    }
    assert json.loads(sh.tasks("check", "--fix", "--json", cwd=c).stdout)["ok"] is True
    assert json.loads(sh.tasks("get", "3", "--json", cwd=c).stdout)["blockedBy"] == []


RUNTIME = [".scratch", ".cache", ".state"]
KINDS = ["missing", "file", "dangling-link", "link-to-a-folder"]


def _plant(path: Path, kind: str, elsewhere: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_dir() and not path.is_symlink():
        import shutil

        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()
    if kind == "file":
        path.write_text("not a folder\n")
    elif kind == "dangling-link":
        path.symlink_to(elsewhere / "nowhere")
    elif kind == "link-to-a-folder":
        path.symlink_to(elsewhere)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("folder", RUNTIME)
def test_a_missing_or_wrong_kind_runtime_folder_never_stops_the_board(sh, tmp_path, folder, kind):
    """Every command path that writes (one file, several files, the runtime state, the
    cache) makes the folder it needs; nothing is written through a planted link."""
    board = tmp_path / "board"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {"TASKS_DIR": str(board)}
    sh.tasks("create", "one", cwd=tmp_path, env=env)
    sh.tasks("create", "two", "--blocked-by", "1", cwd=tmp_path, env=env)
    steps = [
        ("update", "2", "--subject", "two, renamed"),  # one file
        ("--as", "amy", "claim", "1", "--lease", "10m"),  # the runtime state
        ("--as", "amy", "renew", "1"),
        ("--as", "amy", "done", "1"),  # several files and the journal
        ("list",),
        ("ready",),
        ("board",),
        ("--as", "bob", "claim", "--lease", "10m"),
        ("--as", "bob", "release", "2", "--failed", "--note", "flaky"),
        ("check", "--fix"),
    ]
    for step in steps:
        _plant(board / folder, kind, elsewhere)
        done = sh.tasks(*step, "--json", cwd=tmp_path, env=env, expect=None)
        assert done.returncode == 0, (folder, kind, step, done.stderr)
        assert "cannot be used" not in done.stderr, (step, done.stderr)
    assert os.listdir(elsewhere) == [], "written through a link"
    assert json.loads(sh.tasks("get", "1", "--json", cwd=tmp_path, env=env).stdout)["status"] == "completed"


@pytest.mark.parametrize("kind", KINDS)
def test_a_missing_or_wrong_kind_state_folder_in_a_clone(sh, tmp_path, kind):
    """In a clone the runtime state lives in git's folder, which a clone never has."""
    top = origin_with_plan(sh, tmp_path / "repo")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    state = top / ".git" / "tasks" / ".tasks"
    for step in (("--as", "amy", "claim", "1", "--lease", "10m"), ("--as", "amy", "done", "1"), ("ready",)):
        _plant(state, kind, elsewhere)
        done = sh.tasks(*step, "--json", cwd=top, expect=None)
        assert done.returncode == 0, (kind, step, done.stderr)
    assert os.listdir(elsewhere) == []


# -- 4. the smaller traps ------------------------------------------------------------------------


def test_prime_takes_the_global_options_after_the_command(sh, tmp_path):
    env = {"TASKS_DIR": str(tmp_path / "board")}
    sh.tasks("create", "one", cwd=tmp_path, env=env)
    sh.tasks("claim", "1", "--owner", "agent-x", cwd=tmp_path, env=env)
    brief = json.loads(sh.tasks("prime", "--as", "agent-x", "--json", cwd=tmp_path, env=env).stdout)
    assert brief["caller"] == "agent-x" and [task["id"] for task in brief["held"]] == [1]
    other = tmp_path / "other"
    brief = json.loads(sh.tasks("prime", "--dir", str(other), "--json", cwd=tmp_path, env=env).stdout)
    assert brief["board"] == str(other) and brief["counts"]["tasks"] == 0


# -- 2. linked worktrees of one clone work one plan ------------------------------------------


def clone_with_worktrees(sh: Shell, tmp_path: Path, names=("wt-1", "wt-2")) -> tuple[Path, list[Path]]:
    """The issue's team: a repository with one root task and two tasks after it, and a
    worktree per agent made as the README says (a branch each)."""
    top = tmp_path / "repo"
    top.mkdir()
    sh.git("init", "-q", cwd=top)
    sh.tasks("init", cwd=top)
    sh.tasks("create", "root", cwd=top)
    for subject in ("left", "right"):
        sh.tasks("create", subject, "--blocked-by", "1", cwd=top)
    sh.git("add", "-A", cwd=top)
    sh.git("commit", "-qm", "plan", cwd=top)
    trees = []
    for name in names:
        sh.git("worktree", "add", "-q", f"../{name}", "-b", name, cwd=top)
        trees.append(tmp_path / name)
    return top, trees


def claimed(sh: Shell, cwd: Path, owner: str, *args: str, expect: int = 0):
    done = sh.tasks("--as", owner, "claim", *args, "--json", cwd=cwd, expect=expect)
    return json.loads(done.stdout)["id"] if expect == 0 else done.stderr


def test_agents_in_worktrees_work_one_plan(sh, tmp_path):
    """Before: agent-2 got exit 3 ("the plan is finished") the moment agent-1 completed the
    root in its worktree, and one agent did all the work."""
    top, (one, two) = clone_with_worktrees(sh, tmp_path)
    assert claimed(sh, one, "agent-1") == 1
    assert "no ready task" in claimed(sh, two, "agent-2", expect=3)
    sh.tasks("--as", "agent-1", "done", "1", cwd=one)
    assert claimed(sh, two, "agent-2") == 2  # downstream of #1 is ready in every worktree
    assert claimed(sh, one, "agent-1") == 3
    main_board = json.loads(sh.tasks("list", "--json", cwd=top).stdout)
    assert [(task["id"], task["status"], task["owner"]) for task in main_board] == [
        (1, "completed", "agent-1"),
        (2, "in_progress", "agent-2"),
        (3, "in_progress", "agent-1"),
    ]
    for tree in (one, two):  # a linked worktree's own board files are not written
        assert sh.git("status", "--porcelain", cwd=tree).stdout == ""
        assert json.loads((tree / ".tasks" / "task_1.json").read_text())["status"] == "pending"
    # from a subfolder of a worktree too, and a worktree on a branch without the board
    (one / "src").mkdir()
    assert json.loads(sh.tasks("get", "1", "--json", cwd=one / "src").stdout)["status"] == "completed"
    sh.git("worktree", "add", "-q", "../wt-3", "-b", "no-board", cwd=top)
    three = tmp_path / "wt-3"
    sh.git("rm", "-rq", ".tasks", cwd=three)
    sh.git("commit", "-qm", "a branch without the board", cwd=three)
    assert not (three / ".tasks").exists()
    assert [task["id"] for task in json.loads(sh.tasks("list", "--json", cwd=three).stdout)] == [1, 2, 3]


def test_prime_check_and_board_say_which_board_is_used(sh, tmp_path):
    top, (one, _two) = clone_with_worktrees(sh, tmp_path)
    main, own = str(top / ".tasks"), str(one / ".tasks")
    brief = sh.tasks("--as", "agent-1", "prime", cwd=one).stdout
    assert brief.splitlines()[0].startswith(f"using the main worktree's board {main}"), brief
    assert own in brief.splitlines()[0]
    document = json.loads(sh.tasks("--as", "agent-1", "prime", "--json", cwd=one).stdout)
    assert document["board"] == main and document["checkout_board"] == own
    board = sh.tasks("board", cwd=one, env={"NO_COLOR": "1"}).stdout
    assert board.splitlines()[0].startswith(f"using the main worktree's board {main}"), board
    checked = sh.tasks("check", cwd=one)
    assert f"using the main worktree's board {main}" in checked.stderr
    checked = sh.tasks("check", "--json", cwd=one)
    assert json.loads(checked.stderr.splitlines()[0])["board"] == {"path": main, "checkout_board": own}
    # in the main worktree itself nothing is said: it is its own board
    for args in (("prime",), ("check",), ("board",)):
        done = sh.tasks(*args, cwd=top, env={"NO_COLOR": "1"})
        assert "main worktree" not in done.stdout + done.stderr, args


def test_per_branch_boards_when_git_config_asks(sh, tmp_path):
    """`git config tasks.worktrees branch`: each worktree its own board, claims shared, and
    the exit-3 message names why nothing can come."""
    top, (one, two) = clone_with_worktrees(sh, tmp_path)
    sh.git("config", "tasks.worktrees", "branch", cwd=top)
    assert claimed(sh, one, "agent-1") == 1
    sh.tasks("--as", "agent-1", "done", "1", cwd=one)
    assert json.loads((one / ".tasks" / "task_1.json").read_text())["status"] == "completed"
    assert json.loads((top / ".tasks" / "task_1.json").read_text())["status"] == "pending"
    said = claimed(sh, two, "agent-2", "--wait", expect=3)
    assert "nothing is left that could come to agent-2" in said
    assert "#1 completed in another worktree" in said and "#2, #3 waiting on one of those" in said, said
    assert "main worktree" not in sh.tasks("--as", "agent-2", "prime", cwd=two).stdout


def test_a_main_worktree_without_a_board_leaves_each_worktree_its_own(sh, tmp_path):
    top = tmp_path / "repo"
    top.mkdir()
    sh.git("init", "-q", cwd=top)
    (top / "README").write_text("hi\n")
    sh.git("add", "-A", cwd=top)
    sh.git("commit", "-qm", "start", cwd=top)
    sh.git("worktree", "add", "-q", "../wt", "-b", "wt", cwd=top)
    wt = tmp_path / "wt"
    sh.tasks("init", cwd=wt)
    sh.tasks("create", "only here", cwd=wt)
    assert (wt / ".tasks" / "task_1.json").exists() and not (top / ".tasks").exists()
    assert "main worktree" not in sh.tasks("--as", "x", "prime", cwd=wt).stdout


def test_a_bare_clone_gives_each_worktree_its_own_board(sh, tmp_path):
    top, _ = clone_with_worktrees(sh, tmp_path, names=())
    sh.git("clone", "-q", "--bare", str(top), str(tmp_path / "bare.git"), cwd=tmp_path)
    bare = tmp_path / "bare.git"
    for name in ("b-1", "b-2"):
        sh.git("worktree", "add", "-q", str(tmp_path / name), "-b", name, cwd=bare)
    sh.tasks("--as", "amy", "done", "1", cwd=tmp_path / "b-1")
    assert json.loads((tmp_path / "b-1" / ".tasks" / "task_1.json").read_text())["status"] == "completed"
    assert json.loads((tmp_path / "b-2" / ".tasks" / "task_1.json").read_text())["status"] == "pending"


def test_finding_the_main_worktree_runs_no_git(sh, tmp_path):
    """Start-up stays cheap: the main worktree is read from `.git` files, never asked of git."""
    _top, (one, _two) = clone_with_worktrees(sh, tmp_path)
    spy = tmp_path / "spy"
    spy.mkdir()
    log = tmp_path / "git-calls"
    (spy / "git").write_text(f'#!/bin/sh\necho "$@" >> {log}\nexit 1\n')
    (spy / "git").chmod(0o755)
    env = {"PATH": os.pathsep.join([str(spy), str(BIN), "/usr/bin:/bin"])}
    for args in (("list", "--json"), ("ready", "--json"), ("get", "2", "--json"), ("--as", "amy", "prime")):
        done = sh.tasks(*args, cwd=one, env=env)
        assert "main worktree" in done.stdout or args[0] != "--as", done.stdout
    assert not log.exists(), log.read_text()


def journal_of(board: Path) -> list[dict]:
    return [
        json.loads(line)
        for shard in sorted((board / "journal").glob("*.jsonl"))
        for line in shard.read_text().splitlines()
    ]


@pytest.mark.parametrize("args", [("done", "1"), ("release", "1"), ("update", "1", "--owner", "bob"), ("delete", "1")])
def test_a_caller_that_names_nobody_overrides_a_holder_never_silently(sh, tmp_path, args):
    board = tmp_path / "board"
    env = {"TASKS_DIR": str(board)}
    sh.tasks("create", "one", cwd=tmp_path, env=env)
    sh.tasks("--as", "agent-1", "claim", "1", cwd=tmp_path, env=env)
    done = sh.tasks(*args, cwd=tmp_path, env=env)  # trusted: it goes through
    assert "was held by agent-1" in done.stderr and "override" in done.stderr, done.stderr
    login = next(e["actor"] for e in journal_of(board) if e["event"] == "created")  # the login name
    forced = [entry for entry in journal_of(board) if entry["event"] == "forced"]
    assert [(e["task"], e["holder"], e["by"], e["actor"]) for e in forced] == [(1, "agent-1", login, login)]
    sh.tasks("create", "two", cwd=tmp_path, env=env)
    sh.tasks("--as", "agent-1", "claim", "2", cwd=tmp_path, env=env)
    as_json = sh.tasks("done", "2", "--json", cwd=tmp_path, env=env)
    assert any("was held by agent-1" in json.loads(line).get("warning", "") for line in as_json.stderr.splitlines())
    # the holder itself, and a task nobody holds: nothing to say
    sh.tasks("create", "three", cwd=tmp_path, env=env)
    assert "override" not in sh.tasks("done", "3", cwd=tmp_path, env=env).stderr


def test_damage_is_reported_as_damage_with_a_hint(sh, tmp_path):
    """One bad comma, no merge: before, check --fix said `merge-unfinished`."""
    top = origin_with_plan(sh, tmp_path / "repo")
    path = top / ".tasks" / "task_1.json"
    path.write_text(path.read_text().replace('"subject": "one",', '"subject": "one",,'))
    for args in (("check", "--fix"), ("check",)):
        done = sh.tasks(*args, "--json", cwd=top, expect=6)
        problems = json.loads(done.stdout)["problems"]
        assert [(p["rule"], p["file"]) for p in problems] == [("json", "task_1.json")], problems
        assert "not valid JSON" in problems[0]["message"] and "repair it by hand" in problems[0]["message"]
    plain = sh.tasks("check", "--fix", cwd=top, expect=6)
    assert "merge" not in plain.stdout + plain.stderr


def test_a_missing_board_is_named_and_claim_does_not_call_the_plan_finished(sh, tmp_path):
    """The wrong folder: a warning naming the path on every read, and claim exits 3 saying
    there is no board (before: an empty board in silence, and "the plan is finished")."""
    where = tmp_path / "somewhere"
    where.mkdir()
    board = where / ".tasks"
    for args in (("list",), ("ready",), ("board",), ("prime",), ("check",), ("log",), ("graph",)):
        done = sh.tasks(*args, cwd=where, env={"NO_COLOR": "1"})
        assert f"there is no board at {board}" in done.stderr and "tasks init" in done.stderr, (args, done.stderr)
        done = sh.tasks(*args, "--json", cwd=where)
        warnings = [json.loads(line) for line in done.stderr.splitlines()]
        assert any(f"there is no board at {board}" in line.get("warning", "") for line in warnings), (args, warnings)
    assert json.loads(sh.tasks("list", "--json", cwd=where).stdout) == []
    for args in (("claim",), ("claim", "--wait"), ("claim", "--wait", "5"), ("claim", "1")):
        done = sh.tasks("--as", "agent-1", *args, "--json", cwd=where, expect=3)
        error = json.loads(done.stderr.splitlines()[-1])["error"]
        assert f"there is no board at {board}" in error["message"] and "plan" not in error["message"], error
    assert not board.exists()  # nothing was made by reading or claiming
    sh.tasks("create", "first", cwd=where)  # a write makes the board, as before
    assert "no board" not in sh.tasks("list", cwd=where).stderr


def test_the_exit_3_of_a_waiting_claim_names_every_reason(sh, tmp_path):
    board = tmp_path / "board"
    env = {"TASKS_DIR": str(board)}
    for subject in ("flaky", "after flaky", "mine", "for bob"):
        sh.tasks("create", subject, cwd=tmp_path, env=env)
    sh.tasks("update", "2", "--add-blocked-by", "1", cwd=tmp_path, env=env)
    sh.tasks("update", "4", "--owner", "bob", cwd=tmp_path, env=env)
    for _ in range(3):
        sh.tasks("--as", "amy", "claim", "1", cwd=tmp_path, env=env)
        sh.tasks("--as", "amy", "release", "1", "--failed", "--note", "hangs", cwd=tmp_path, env=env)
    sh.tasks("--as", "amy", "claim", "3", cwd=tmp_path, env=env)
    said = sh.tasks("--as", "amy", "claim", "--wait", cwd=tmp_path, env=env, expect=3).stderr
    assert "nothing is left that could come to amy" in said
    for reason in ("#1 stuck", "#2 waiting on one of those", "#3 held by you", "#4 reserved for someone else"):
        assert reason in said, (reason, said)
    for task in (1, 2, 4):
        sh.tasks("done", str(task), cwd=tmp_path, env=env)
    sh.tasks("--as", "amy", "done", "3", cwd=tmp_path, env=env)
    said = sh.tasks("--as", "amy", "claim", "--wait", cwd=tmp_path, env=env, expect=3).stderr
    assert "nothing is left that could come to amy: every task is done" in said, said


def test_a_plain_claim_that_finds_nothing_says_why(sh, tmp_path):
    """Issue 19 (left from 18): `claim` without --wait names what holds the work back, as
    the waiting claim's exit 3 does: held by whom, blocked, or nothing left at all."""
    board = tmp_path / "board"
    env = {"TASKS_DIR": str(board)}
    for subject in ("parser", "checker", "docs"):
        sh.tasks("create", subject, cwd=tmp_path, env=env)
    sh.tasks("update", "2", "--add-blocked-by", "1", cwd=tmp_path, env=env)
    sh.tasks("--as", "bob", "claim", "1", cwd=tmp_path, env=env)
    sh.tasks("--as", "cat", "claim", "3", cwd=tmp_path, env=env)
    said = sh.tasks("--as", "amy", "claim", cwd=tmp_path, env=env, expect=3).stderr
    assert "no ready task to claim for amy: #1, #3 held by bob, cat; #2 blocked by unfinished tasks" in said, said
    said = sh.tasks("--as", "amy", "--json", "claim", cwd=tmp_path, env=env, expect=3).stderr
    assert json.loads(said)["error"]["message"].endswith("#2 blocked by unfinished tasks")
    for task, who in ((1, "bob"), (3, "cat")):
        sh.tasks("--as", who, "done", str(task), cwd=tmp_path, env=env)
    sh.tasks("--as", "bob", "claim", "2", cwd=tmp_path, env=env)
    said = sh.tasks("--as", "bob", "claim", cwd=tmp_path, env=env, expect=3).stderr
    assert "no ready task to claim for bob: #2 held by you" in said, said
    # with another's task that may yet come, the caller's own is still its own (it was
    # "held in another worktree or on another machine")
    sh.tasks("create", "bench", cwd=tmp_path, env=env)
    sh.tasks("--as", "cat", "claim", "4", cwd=tmp_path, env=env)
    said = sh.tasks("--as", "bob", "claim", cwd=tmp_path, env=env, expect=3).stderr
    assert "no ready task to claim for bob: #4 held by cat; #2 held by you" in said, said
    # nor is a task reserved for someone else, or one stuck here
    sh.tasks("create", "site", "--owner", "dan", cwd=tmp_path, env=env)
    sh.tasks("create", "flaky", cwd=tmp_path, env=env)
    for _ in range(3):
        sh.tasks("--as", "bob", "claim", "6", cwd=tmp_path, env=env)
        sh.tasks("--as", "bob", "release", "6", "--failed", "--note", "hangs", cwd=tmp_path, env=env)
    said = sh.tasks("--as", "bob", "claim", cwd=tmp_path, env=env, expect=3).stderr
    assert "#5 reserved for dan" in said and "#6 stuck" in said, said
    assert "another worktree" not in said, said


def test_tasks_worktrees_set_in_an_included_git_config_file_counts(sh, tmp_path):
    """Issue 19 (left from 18): the git config reader follows `[include] path`, as git
    does (relative to the including file, two levels deep here)."""
    top, (one, _two) = clone_with_worktrees(sh, tmp_path)
    (tmp_path / "team.gitconfig").write_text("[include]\n\tpath = tasks.gitconfig\n")
    (tmp_path / "tasks.gitconfig").write_text("[tasks]\n\tworktrees = branch\n")
    sh.git("config", "include.path", "../../team.gitconfig", cwd=top)  # from .git/config
    assert sh.git("config", "tasks.worktrees", cwd=one).stdout.strip() == "branch"  # git reads it so
    assert claimed(sh, one, "agent-1") == 1
    sh.tasks("--as", "agent-1", "done", "1", cwd=one)
    assert json.loads((one / ".tasks" / "task_1.json").read_text())["status"] == "completed"
    assert json.loads((top / ".tasks" / "task_1.json").read_text())["status"] == "pending"


def test_make_uninstall_without_pipx_or_uv_says_no_error(tmp_path):
    """`make uninstall` where neither pipx nor uv is installed (make install's own venv)
    printed "make: [Makefile:36: uninstall] Error 127 (ignored)" twice: the test for the
    tool was the recipe line, and a missing tool failed it. It now removes the venv and
    the link quietly."""
    import shutil

    make = shutil.which("make")
    assert make is not None
    tools = tmp_path / "tools"  # a PATH with neither pipx nor uv: only what the recipe runs
    tools.mkdir()
    for name in ("rm", "sh"):
        found = shutil.which(name)
        assert found is not None
        (tools / name).symlink_to(found)
    prefix = tmp_path / "prefix"
    venv = prefix / "share" / "repo-taskboard" / "bin"
    venv.mkdir(parents=True)
    (venv / "tasks").write_text("#!/bin/sh\n")
    (prefix / "bin").mkdir()
    (prefix / "bin" / "tasks").symlink_to(venv / "tasks")
    top = Path(__file__).resolve().parent.parent
    done = subprocess.run(
        [make, "-C", str(top), "uninstall", f"PREFIX={prefix}"],
        env={"PATH": str(tools), "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done
    assert "Error" not in done.stdout + done.stderr, done
    assert not (prefix / "share" / "repo-taskboard").exists()
    assert not (prefix / "bin" / "tasks").is_symlink()
