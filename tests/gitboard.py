"""Real git for the merge tests: clones with an isolated configuration, the board's
commands run in-process for speed (git itself, its merge driver and its hooks run as
real processes), and a judge of a board after a merge that shares no code with
taskboard: invariants.py for DESIGN §2, and the board compared task by task by uid."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from conftest import Run
from invariants import load_board, problems

CONFLICT = b"<<<<<<<"


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
