"""Real git for the merge and remote tests: clones with an isolated configuration, the
board's commands run in-process for speed (git itself, its merge driver and its hooks
run as real processes), and a judge of a board after a merge that shares no code with
taskboard: invariants.py for DESIGN §2, and the board compared task by task by uid.
For many machines, a `Fleet`: a bare remote and its wired clones, every `tasks` a real
process (the `fleet` fixture of conftest.py)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import Run
from invariants import load_board, problems

CONFLICT = b"<<<<<<<"
TASKS = [sys.executable, "-m", "taskboard"]


def git_env(home: Path) -> dict[str, str]:
    """Who commits, and no configuration but the one written here (never the machine's)."""
    home.mkdir(parents=True, exist_ok=True)
    (home / ".gitconfig").write_text("[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n")
    return {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "Ada",
        "GIT_AUTHOR_EMAIL": "ada@example.com",
        "GIT_COMMITTER_NAME": "Ada",
        "GIT_COMMITTER_EMAIL": "ada@example.com",
        "GIT_EDITOR": "true",
        "GIT_MERGE_AUTOEDIT": "no",
    }


class Clone:
    """A work tree with a board in `.tasks/`: `tasks` runs in-process, `git` for real."""

    def __init__(self, top: Path):
        self.top = top
        self.board = top / ".tasks"
        self.tasks = Run(self.board)

    def git(self, *args: str, expect: int | None = 0) -> subprocess.CompletedProcess:
        done = subprocess.run(["git", *args], cwd=self.top, capture_output=True, text=True, timeout=120)
        if expect is not None:
            assert done.returncode == expect, (args, done.returncode, done.stdout, done.stderr)
        return done

    def commit(self, message: str) -> None:
        self.git("add", "-A")
        self.git("commit", "-q", "-m", message)

    def dirty(self, ignored: bool = False) -> list[str]:
        """Paths git sees changed or new in the work tree (and ignored ones, if asked)."""
        lines = self.git("status", "--porcelain", "-uall", *(["--ignored"] if ignored else [])).stdout.splitlines()
        return sorted(line[3:] for line in lines)

    def copy(self, to: Path) -> Clone:
        shutil.copytree(self.top, to, symlinks=True)
        return Clone(to)

    def records(self) -> dict[int, dict]:
        return load_board(self.board)


def new_clone(top: Path) -> Clone:
    top.mkdir(parents=True)
    clone = Clone(top)
    clone.git("init", "-q")
    clone.tasks("init")
    return clone


def branches(root: Path, base, side_a, side_b) -> Clone:
    """A repository in `root`/repo whose `main` holds the board `base` made (given the
    clone's `tasks`), and branches `a` and `b` from it, each with what its side did."""
    repo = new_clone(root / "repo")
    base(repo.tasks)
    repo.commit("base")
    for name, side in (("a", side_a), ("b", side_b)):
        repo.git("checkout", "-q", "-b", name, "main")
        side(repo.tasks)
        repo.commit(f"work on {name}")
    repo.git("checkout", "-q", "main")
    return repo


def by_uid(records: dict[int, dict]) -> dict[str, dict]:
    """Each task by uid, its edges as uids: what must not depend on ids or on who merged."""
    uid = {task_id: record["uid"] for task_id, record in records.items()}
    found = {}
    for record in records.values():
        copy = {key: value for key, value in record.items() if key != "id"}
        copy["blocks"] = sorted(uid[i] for i in record["blocks"])
        copy["blockedBy"] = sorted(uid[i] for i in record["blockedBy"])
        found[record["uid"]] = copy
    return found


def judge(clone: Clone, cycles: bool = False) -> dict[int, dict]:
    """After a merge: no conflict marker, nothing outside the board changed, every
    invariant of DESIGN §2 (a cycle only where the merge made one), one uid once."""
    archive = clone.board / "archive"
    for path in [*clone.board.iterdir(), *(archive.iterdir() if archive.is_dir() else [])]:
        if path.is_file():
            assert CONFLICT not in path.read_bytes(), f"{path.name} has conflict markers"
    outside = [path for path in clone.dirty(ignored=True) if not path.startswith(".tasks/")]
    assert outside == [], f"written outside the board: {outside}"
    assert sorted(os.listdir(clone.top)) == [".git", ".tasks"]
    found = problems(clone.board)
    if cycles:
        assert found and all(problem.startswith("cycle") for problem in found), found
    else:
        assert found == [], found
    records = clone.records()
    uids = [record["uid"] for record in records.values()]
    assert len(uids) == len(set(uids)), "a uid under two ids"
    assert not any("pendingRenumber" in json.dumps(record) for record in records.values())
    return records


# -- many machines, one remote ----------------------------------------------------------


class Machine:
    """One clone of the remote with its board in `.tasks/`."""

    def __init__(self, top: Path, env: dict[str, str]):
        self.top, self.env = top, env
        self.board = top / ".tasks"

    def tasks(self, *args: str, expect: int | None = 0, owner: str | None = None) -> subprocess.CompletedProcess:
        env = {**self.env, **({"TASKS_OWNER": owner} if owner else {})}
        done = subprocess.run([*TASKS, *args], cwd=self.top, env=env, capture_output=True, text=True, timeout=120)
        if expect is not None:
            assert done.returncode == expect, (args, done.returncode, done.stdout, done.stderr)
        return done

    def json(self, *args: str, **kwargs) -> dict | list:
        return json.loads(self.tasks(*args, "--json", **kwargs).stdout)

    def git(self, *args: str, expect: int | None = 0) -> subprocess.CompletedProcess:
        done = subprocess.run(["git", *args], cwd=self.top, env=self.env, capture_output=True, text=True, timeout=120)
        if expect is not None:
            assert done.returncode == expect, (args, done.returncode, done.stdout, done.stderr)
        return done

    def commit_file(self, name: str, text: str, message: str) -> str:
        """`name` (at the top of the work tree) written with `text`, added and committed
        with `message` by git alone (no `tasks`): the commit's id."""
        (self.top / name).write_text(text)
        self.git("add", name)
        self.git("commit", "-q", "-m", message)
        return self.git("rev-parse", "HEAD").stdout.strip()

    def spawn(self, *args: str, **env: str) -> subprocess.Popen:
        """`tasks ARGS` started, not waited on, in its own process group (a hook may kill
        the whole of it); `env` adds to the machine's environment."""
        return subprocess.Popen(
            [*TASKS, *args],
            cwd=self.top,
            env={**self.env, **env},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )

    def records(self) -> dict[int, dict]:
        return load_board(self.board)

    def worktree(self, name: str) -> Machine:
        """A linked worktree of this clone beside it, on a new branch `name` from
        origin/main (git worktree add): the clone's runtime state is shared with it."""
        top = self.top.parent / f"{self.top.name}-{name}"
        self.git("worktree", "add", "-q", "-b", name, str(top), "origin/main")
        return Machine(top, self.env)

    def by_uid(self) -> dict[str, tuple]:
        """The board as it must agree across machines: by uid, edges as uids."""
        records = self.records()
        uid = {task_id: record["uid"] for task_id, record in records.items()}
        return {
            record["uid"]: (
                record["subject"],
                record["status"],
                record["owner"],
                sorted(uid[i] for i in record["blockedBy"]),
                sorted(uid[i] for i in record["blocks"]),
            )
            for record in records.values()
        }


class Fleet:
    """A bare repository as the remote (`remote.git`) and its clones as machines, each
    wired by `tasks init --remote origin`; git with the configuration of git_env only."""

    def __init__(self, root: Path):
        self.root = root
        self.env = {**os.environ, **git_env(root / "home")}
        self.remote = root / "remote.git"
        subprocess.run(["git", "init", "-q", "--bare", str(self.remote)], env=self.env, check=True)

    def machine(self, name: str, remote: bool = True) -> Machine:
        top = self.root / name
        subprocess.run(
            ["git", "clone", "-q", str(self.remote), str(top)], env=self.env, check=True, capture_output=True
        )
        machine = Machine(top, self.env)
        machine.tasks("init", *(["--remote", "origin"] if remote else []))
        return machine

    def planned(self, *names: str) -> list[Machine]:
        """Machines named `names`: the first makes the plan (`plan`) and syncs it, the
        others are cloned after it and so start with it."""
        first = self.machine(names[0])
        plan(first)
        return [first, *(self.machine(name) for name in names[1:])]

    def claim_refs(self) -> dict[str, dict]:
        """The claim refs on the remote, each as its document."""
        git = ["git", "--git-dir", str(self.remote)]
        lines = subprocess.run(
            [*git, "for-each-ref", "--format=%(refname) %(objectname)", "refs/tasks/claims/"],
            env=self.env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split("\n")
        found = {}
        for line in filter(None, lines):
            ref, sha = line.split()
            blob = subprocess.run([*git, "cat-file", "-p", sha], env=self.env, capture_output=True, check=True).stdout
            found[ref.rpartition("/")[2]] = json.loads(blob)
        return found


def plan(machine: Machine) -> None:
    """#1 → #2 → #3, and #4 alone, synced to the remote."""
    machine.tasks("create", "Lexer")
    machine.tasks("create", "Parser", "--blocked-by", "1")
    machine.tasks("create", "Checker", "--blocked-by", "2")
    machine.tasks("create", "Docs")
    machine.tasks("sync")
