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
