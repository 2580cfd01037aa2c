"""`tasks sync`: the board meets the remote (DESIGN §9). Commit the board's own pending
changes (only paths under the board: the user's other work, staged or not, is never
part of it), fetch, merge as in §8 (the merge driver and the settle of taskboard.gitwire),
finish the board so `check` is clean, push; when the push is refused because the remote
moved meanwhile, fetch and merge again (a bounded number of times). Then say what came
in: new tasks, tasks completed elsewhere, tasks now ready.

Failures: no git work tree, a detached HEAD, no remote: usage (2); git in the middle of
a merge or rebase, a merge git cannot make without a person (a conflict outside the
board, local changes in the way, staged changes): refused (4), with the merge undone;
the remote cannot be reached: busy (5), and the board is as it was before the sync
(a merge already made is undone with `git reset --keep`, which keeps every local change).

sync always merges, whatever `pull.rebase` says: a merge never rewrites commits other
clones may already have, and needs no clean work tree.
"""

from __future__ import annotations

import sys

from ..cli.invocation import Invocation, write
from ..core import graph
from ..core.errors import Busy, Refused, UsageError
from . import wiring as gitwire
from .claimrefs import Git, config_of, err

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ..core.model import Record
    from ..ops.board import Board

ATTEMPTS = 5  # pushes tried while the remote keeps moving
MESSAGE = "tasks: sync the board"


class Synced:
    """What one sync did and what came in."""

    def __init__(self, remote: str, branch: str):
        self.remote, self.branch = remote, branch
        self.committed: list[str] = []
        self.merged = False
        self.pushed = False
        self.attempts = 0
        self.new: list[int] = []
        self.completed: list[int] = []
        self.unblocked: list[int] = []
        self.notes: list[str] = []

    def document(self) -> dict[str, Any]:
        return {
            "remote": self.remote,
            "branch": self.branch,
            "committed": self.committed,
            "merged": self.merged,
            "pushed": self.pushed,
            "attempts": self.attempts,
            "new": self.new,
            "completed": self.completed,
            "unblocked": self.unblocked,
            "notes": self.notes,
        }


def run(inv: Invocation, remote: str | None) -> int:
    result = sync(inv.board, remote)
    if inv.json:
        inv.data(result.document())
        for line in result.notes:
            inv.warn(line)
        return 0
    lines = []
    if result.committed:
        lines.append(f"committed the board ({len(result.committed)} commit(s))")
    came = [
        (result.new, "new"),
        (result.completed, "completed elsewhere"),
        (result.unblocked, "ready now"),
    ]
    for ids, words in came:
        if ids:
            lines.append(f"{words}: " + ", ".join(f"#{i}" for i in ids))
    if not any(ids for ids, _ in came):
        lines.append("nothing new came in")
    lines.append(
        f"{'pushed to' if result.pushed else 'in step with'} {result.remote}/{result.branch}"
        + (f" after {result.attempts} attempts" if result.attempts > 1 else "")
    )
    write(sys.stderr, "".join(f"{line}\n" for line in [*lines, *result.notes]))
    return 0


def sync(board: Board, name: str | None = None) -> Synced:
    store = board.store
    repo = gitwire.find_repo(store.root)
    if repo is None or not store.root.is_dir():
        raise UsageError("sync needs the board inside a git work tree", "no-git")
    git = Git(store)
    git.cwd = str(repo.top)  # paths below are relative to the top of the work tree
    path = repo.relative(store.root)
    branch = git.run("symbolic-ref", "-q", "--short", "HEAD").stdout.decode().strip()
    if not branch:
        raise Refused("HEAD is detached: check out a branch, then sync", "detached-head")
    busy = repo.in_progress()
    if busy:
        raise Refused(f"git is in the middle of an operation ({busy}): finish or abort it, then sync", "git-busy")
    name, merge_ref = _where(git, store, branch, name)
    result = Synced(name, merge_ref.removeprefix("refs/heads/"))
    before = _snapshot(board)
    config = config_of(store)
    commit = _commit_board(git, path)
    if commit:
        result.committed.append(commit)
    start = _rev(git, "HEAD")  # what a failed sync comes back to: the board as it was, committed
    try:
        _exchange(board, git, repo, path, name, merge_ref, result)
    except (Busy, Refused):
        _undo(git, start, result)
        raise
    if config is not None and config.name == name:  # claim refs: fetched, and ours brought up to date
        from .claimrefs import check_problems

        for problem in check_problems(board, fix=True):
            if not problem.fixed:
                result.notes.append(problem.message)
    _came_in(before, _snapshot(board), result)
    return result


def _exchange(board: Board, git: Git, repo: gitwire.Repo, path: str, name: str, merge_ref: str, result: Synced) -> None:
    """Fetch, merge, finish the board, push; again while the remote moves meanwhile."""
    store = board.store
    tracking = f"refs/remotes/{name}/{result.branch}"
    for attempt in range(1, ATTEMPTS + 1):
        result.attempts = attempt
        fetched = git.run("fetch", "-q", "--no-tags", name, f"+{merge_ref}:{tracking}", network=True)
        remote_head = None
        if fetched.returncode == 0:
            remote_head = _rev(git, tracking)
        elif b"couldn't find remote ref" not in fetched.stderr:
            raise Busy(f"the remote {name} cannot be reached: {err(fetched)}", "remote-unreachable", remote=name)
        if remote_head and git.run("merge-base", "--is-ancestor", remote_head, "HEAD").returncode != 0:
            result.notes += _merge(git, repo, name, tracking, path)
            result.merged = True
            settled = gitwire.settle(store)
            result.notes += [line for line in gitwire.describe(settled, path) if "commit them" not in line]
            board.check(fix=True)
            commit = _commit_board(git, path, "tasks: finish merging the board")
            if commit:
                result.committed.append(commit)
        if _rev(git, "HEAD") == remote_head:
            return
        pushed = git.run("push", "--porcelain", "--no-verify", name, f"HEAD:{merge_ref}", network=True)
        flag = _push_flag(pushed, merge_ref)
        if flag is None:
            raise Busy(f"the remote {name} cannot be reached: {err(pushed)}", "remote-unreachable", remote=name)
        if flag != "!":
            result.pushed = True
            return
        moved = git.run("ls-remote", name, merge_ref, network=True).stdout.decode().split()
        if (moved[0] if moved else None) == remote_head:  # not a race: the remote refuses this push
            raise Refused(f"{name} refused the push: {err(pushed)}", "push-refused", remote=name)
    raise Busy(f"{name} kept moving: {ATTEMPTS} pushes were refused; sync again", "remote-moving", remote=name)


def _where(git: Git, store: Any, branch: str, name: str | None) -> tuple[str, str]:
    """(the remote, the branch there) to sync with."""
    upstream = git.run("config", "--get", f"branch.{branch}.remote").stdout.decode().strip()
    if name is None:
        config = config_of(store)
        remotes = git.run("remote").stdout.decode().split()
        name = config.name if config else upstream or (remotes[0] if len(remotes) == 1 else "")
        if not name:
            raise UsageError("no remote to sync with: name one, or set the branch's upstream", "no-remote")
    if git.run("remote", "get-url", name).returncode != 0:
        raise UsageError(f"no remote named {name!r} in this clone", "bad-remote", remote=name)
    merge = git.run("config", "--get", f"branch.{branch}.merge").stdout.decode().strip()
    return name, merge if merge and upstream == name else f"refs/heads/{branch}"


def _rev(git: Git, ref: str) -> str | None:
    done = git.run("rev-parse", "-q", "--verify", f"{ref}^{{commit}}")
    return done.stdout.decode().strip() or None if done.returncode == 0 else None


def _commit_board(git: Git, path: str, message: str = MESSAGE) -> str | None:
    """Commit what changed under the board, and nothing else: the user's other staged
    changes stay staged and out of the commit (a commit of the board's paths only)."""
    git.run("add", "-A", "--", path, check=True)
    if git.run("diff", "--cached", "--quiet", "--", path).returncode == 0:
        return None
    done = git.run("commit", "-q", "--no-verify", "-m", message, "--only", "--", path)
    if done.returncode != 0:
        raise UsageError(f"cannot commit the board: {err(done)}", "commit-failed")
    return _rev(git, "HEAD")


def _merge(git: Git, repo: gitwire.Repo, name: str, tracking: str, path: str) -> list[str]:
    """Merge the remote's branch; what the board's hook said of it (tasks renumbered, tasks
    set free), but its hint to commit, which sync does itself."""
    unrelated = []
    if git.run("merge-base", "HEAD", tracking).returncode != 0 and _board_only(git, path):
        unrelated = ["--allow-unrelated-histories"]  # clones of an empty remote, each with a board of its own
    done = git.run("merge", "-q", "--no-edit", *unrelated, "-m", f"tasks: merge {name}'s board", tracking)
    if done.returncode == 0:
        said = done.stderr.decode("utf-8", "replace").splitlines()
        return [line[len("tasks: ") :] for line in said if line.startswith("tasks: ") and "commit them" not in line]
    conflicts = git.run("diff", "--name-only", "--diff-filter=U").stdout.decode().split()
    if (repo.git_dir / "MERGE_HEAD").exists():
        git.run("merge", "--abort")
    what = f"conflicts in {', '.join(conflicts[:5])}" if conflicts else err(done)
    raise Refused(
        f"git cannot merge {tracking} without a person ({what}); nothing was merged: merge it yourself, then sync",
        "merge-failed",
    )


def _board_only(git: Git, path: str) -> bool:
    """Whether every commit of this branch touches the board alone (commits sync made in a
    clone of an empty remote): its history may join the remote's. Any other history
    unrelated to the remote's is a person's to join."""
    outside = git.run("rev-list", "-n", "1", "HEAD", "--", ".", f":(exclude){path}")
    return outside.returncode == 0 and not outside.stdout.strip()


def _push_flag(done: Any, ref: str) -> str | None:
    for line in done.stdout.decode("utf-8", "replace").splitlines():
        parts = line.split("\t")
        if len(parts) >= 2 and parts[1].endswith(":" + ref):
            return parts[0][:1] or " "
    return None


def _undo(git: Git, start: str | None, result: Synced) -> None:
    """The push failed: the merge made in this attempt is undone (local changes kept)."""
    if start and _rev(git, "HEAD") != start:
        git.run("reset", "-q", "--keep", start)
        result.merged = False


def _snapshot(board: Board) -> dict[str, tuple[int, str, bool]]:
    """Each readable task by uid: (id, status, ready)."""
    records, _damaged = board.store.read_all()
    by_id: dict[int, Record] = {r["id"]: r for r in records}
    return {
        r["uid"]: (r["id"], r["status"], graph.is_ready(r, by_id.get)) for r in records if isinstance(r.get("uid"), str)
    }


def _came_in(before: dict, after: dict, result: Synced) -> None:
    for uid, (task_id, status, ready) in sorted(after.items(), key=lambda item: item[1][0]):
        old = before.get(uid)
        if old is None:
            result.new.append(task_id)
            continue
        if status == "completed" and old[1] != "completed":
            result.completed.append(task_id)
        if ready and not old[2]:
            result.unblocked.append(task_id)
