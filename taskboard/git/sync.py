"""`tasks sync`: the board meets the remote (DESIGN §9). Commit the board's own pending
changes (only paths under the board: the user's other work, staged or not, is never
part of it), fetch, merge as in §8, push; when the push is refused because the remote
moved meanwhile, fetch and merge again (a bounded number of times). Then say what came
in: new tasks, tasks completed elsewhere, tasks now ready.

Crash-only: a kill -9 at any instant leaves nothing that jams git or the next sync.
Every commit is built with plumbing on a private index (`GIT_INDEX_FILE` in the git
folder): the board's commit, and the merge, made by `git merge-tree --write-tree`
(no merge driver, no hook, no MERGE_HEAD, no `index.lock` of git's) with the board's
files merged exactly by uid here (merging.merge_boards; a task the remote already has
keeps its id, the local one not pushed yet moves: DESIGN §8). Only when the new commit
is pushed (or needs no push) is it landed, the one step that touches what the user
sees: a marker names it in the git folder, the board's files are written as one
all-or-nothing change of the store (edits made meanwhile are kept, merged by uid),
files outside the board that the remote changed are checked out, HEAD moves by a
compare-and-swap, and the index's board entries follow under an `index.lock` this
process takes itself, tagged so that the next sync knows it as its own. The next sync,
before anything else, finishes a landing the marker names and removes what a killed
sync left (its tagged lock, its private files). A sync lock in the git folder makes a
second sync of the clone wait for the first.

Failures: no git work tree, a detached HEAD, no remote: usage (2); git in the middle of
a merge or rebase, a merge git cannot make without a person (a conflict outside the
board, local changes in a file the merge would change): refused (4), with nothing
merged; the remote cannot be reached: busy (5). Either way the board's own changes are
committed and nothing else moved.

sync always merges, whatever `pull.rebase` says: a merge never rewrites commits other
clones may already have, and needs no clean work tree.

A sync nobody asked for (a waiter's: bring_in) pushes the board, never the user's other
work: when a commit it would push changes a file outside the board (code not reviewed
yet, say), it pushes instead a commit of its own on the remote's branch, that branch
with the board as merged here, and merges that commit in here; the branch's other
commits stay here (`Synced.held`) until the user runs `tasks sync` or `git push`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..core import graph
from ..core.errors import Busy, Refused, UsageError
from . import wiring as gitwire
from .claimrefs import config_of
from .run import NETWORK_TIMEOUT, Git, failure

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any

    from ..core.fields import Record
    from ..disk.store import Store
    from ..ops.board import Board

ATTEMPTS = 5  # pushes tried while the remote keeps moving
MESSAGE = "tasks: sync the board"
BOARD_ONLY = "tasks: sync the board (alone: this branch's other commits were not pushed)"
PREFIX = "tasks-sync"  # the names of sync's own files in the work tree's git folder
LOCK = f"{PREFIX}.lock"  # one sync of a work tree at a time
MARKER = f"{PREFIX}.json"  # a landing under way: {"from", "to", "snapshot"}
TAG = b"taskboard sync: a lock of the index taken by tasks sync\n"  # in an index.lock it took
ZERO = "0" * 40
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"  # git's empty tree


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
        self.held: list[str] = []  # commits that change files outside the board, not pushed (a waiter's sync)

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


def sync(board: Board, name: str | None = None, waiting: Any = None, board_only: bool = False) -> Synced:
    """One sync (see the module's words); `waiting` is called once if another sync of this
    work tree runs and this one waits for it. `board_only` (a sync nobody asked for): push
    no commit that changes a file outside the board."""
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
    with _sync_lock(repo, store, waiting):
        plumbing = _Plumbing(git, repo, path)
        try:
            return _sync_locked(board, plumbing, branch, name, board_only)
        finally:
            plumbing.clean()


def _sync_locked(board: Board, plumbing: _Plumbing, branch: str, name: str | None, board_only: bool) -> Synced:
    store, git, repo = board.store, plumbing.git, plumbing.repo
    plumbing.recover(board)
    busy = repo.in_progress()
    if busy:
        raise Refused(f"git is in the middle of an operation ({busy}): finish or abort it, then sync", "git-busy")
    name, merge_ref = _where(git, store, branch, name)
    result = Synced(name, merge_ref.removeprefix("refs/heads/"))
    before = _snapshot(board)
    config = config_of(store)
    old = _rev(git, "HEAD")
    with store.writing():  # the board as one moment shows it: no change is half in the commit
        commit = plumbing.commit_board(old)
    _stop("committed")
    if commit != old and commit is not None:
        result.committed.append(commit)
    try:
        target = _exchange(plumbing, name, merge_ref, commit, result, board_only)
    except (Busy, Refused):
        plumbing.land(board, old, commit, commit)  # the board's own commit stays; nothing else moves
        raise
    plumbing.land(board, old, target, commit)
    if config is not None and config.name == name:  # claim refs: fetched, and ours brought up to date
        from .claimrefs import check_problems

        for problem in check_problems(board, fix=True):
            if not problem.fixed:
                result.notes.append(problem.message)
    _came_in(before, _snapshot(board), result)
    return result


def _exchange(
    plumbing: _Plumbing, name: str, merge_ref: str, commit: str | None, result: Synced, board_only: bool = False
) -> str | None:
    """Fetch, merge, push; again while the remote moves meanwhile. The commit to land.
    With `board_only`, when the merge holds commits that change files outside the board,
    what is pushed is the remote's branch with the board as merged (plumbing.board_on),
    and what lands here is the merge joined to it (plumbing.join)."""
    git = plumbing.git
    tracking = f"refs/remotes/{name}/{result.branch}"
    for attempt in range(1, ATTEMPTS + 1):
        result.attempts = attempt
        remote_head = _fetch(git, name, merge_ref, tracking)
        target, notes = plumbing.combine(commit, remote_head, name, tracking)
        merged = target not in (commit, remote_head)
        _stop("merged")
        if target is None or target == remote_head:
            return _settled(result, target, merged, notes)
        sent = _to_send(plumbing, target, remote_head, result) if board_only else target
        if sent is None or sent == remote_head:  # the remote has the board already; nothing else may go
            return _settled(result, target, merged, notes)
        pushed = git.run("push", "--porcelain", "--no-verify", name, f"{sent}:{merge_ref}", network=True)
        flag = _push_flag(pushed, merge_ref)
        if flag is None:
            raise Busy(f"the remote {name} cannot be reached: {failure(pushed)}", "remote-unreachable", remote=name)
        if flag != "!":
            result.pushed = True
            if sent != target:  # the board went alone: this branch joins it (its own merge, if any, is not kept)
                if merged:  # on no branch, so not to name
                    result.held = [held for held in result.held if held != target]
                target, merged = plumbing.join(commit or target, target, sent, name), True
            _stop("pushed")
            return _settled(result, target, merged, notes)
        moved = git.run("ls-remote", name, merge_ref, network=True).stdout.decode().split()
        if (moved[0] if moved else None) == remote_head:  # not a race: the remote refuses this push
            raise Refused(f"{name} refused the push: {failure(pushed)}", "push-refused", remote=name)
    raise Busy(f"{name} kept moving: {ATTEMPTS} pushes were refused; sync again", "remote-moving", remote=name)


def _settled(result: Synced, target: str | None, merged: bool, notes: list[str]) -> str | None:
    """The commit a sync lands, recorded in `result`: the merge it made (or the join of the
    board pushed alone), if any, among the commits it made, and what the merge had to say."""
    result.merged = merged
    if merged and target is not None:
        result.committed.append(target)
    result.notes += notes
    return target


def _fetch(git: Git, name: str, merge_ref: str, tracking: str) -> str | None:
    """The remote's branch, fetched into `tracking`: its commit, or None when it has none."""
    fetched = git.run("fetch", "-q", "--no-tags", name, f"+{merge_ref}:{tracking}", network=True)
    if fetched.returncode == 0:
        return _rev(git, tracking)
    if b"couldn't find remote ref" not in fetched.stderr:
        raise Busy(f"the remote {name} cannot be reached: {failure(fetched)}", "remote-unreachable", remote=name)
    return None


def _to_send(plumbing: _Plumbing, target: str, remote_head: str | None, result: Synced) -> str | None:
    """What a sync nobody asked for pushes: nothing when the remote has no such branch;
    `target` when every commit it would send changes the board alone and its files
    outside the board are the remote's; else the remote's branch with the board as
    `target` holds it (the commits it leaves out are `result.held`)."""
    result.held = []
    if remote_head is None:  # a branch the remote lacks is the user's to publish: nothing goes
        return None
    result.held = plumbing.outside_commits(target, remote_head)
    if not result.held:
        if not plumbing.differs_outside(remote_head, target):
            return target
        # no commit changes a file outside the board, yet the tip differs there from the
        # remote's: a merge kept one side (`git merge -s ours`) and would undo the other's
        result.held = plumbing.outside_commits(target, remote_head, "-m")
    return plumbing.board_on(remote_head, target)


def _stop(point: str) -> None:
    # Test hook (tests/test_sync_kill.py): TASKS_TEST_SYNC_KILL=POINT makes this process
    # SIGKILL itself there; TASKS_TEST_SYNC_WAIT=POINT:FIFO makes it say so in FIFO.reached
    # and wait until the test writes to the FIFO.
    if os.environ.get("TASKS_TEST_SYNC_KILL") == point:
        import signal

        os.kill(os.getpid(), signal.SIGKILL)
    wait = os.environ.get("TASKS_TEST_SYNC_WAIT", "")
    if wait.partition(":")[0] == point:
        fifo = wait.partition(":")[2]
        Path(f"{fifo}.reached").touch()
        with open(fifo, "rb") as f:
            f.read(1)


def _sync_lock(repo: gitwire.Repo, store: Store, waiting: Any = None) -> Any:
    """One sync of a work tree at a time: a second one waits for the first (the kernel's
    lock, dropped when its holder dies), then runs on what the first left."""
    import contextlib
    import time

    from ..disk.locks import wait_for

    @contextlib.contextmanager
    def held() -> Iterator[None]:
        fd = os.open(repo.git_dir / LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o644)
        try:
            deadline = time.monotonic() + store.timeout + 2 * NETWORK_TIMEOUT  # the other may be on the network
            if not wait_for(fd, deadline, longest=0.05, waiting=waiting):
                raise Busy("another sync of this clone is still running; sync again later", "sync-busy")
            yield
        finally:
            os.close(fd)

    return held()


class _Plumbing:
    """The commits of a sync, built on a private index, and their landing."""

    def __init__(self, git: Git, repo: gitwire.Repo, path: str):
        self.git, self.repo, self.path = git, repo, path
        self.private = str(repo.git_dir / f"{PREFIX}-index")
        self.scratch = repo.git_dir / f"{PREFIX}-scratch"
        self.trees = gitwire.Trees(repo, path, archive=True)  # an archived file is the same task (DESIGN §11)

    def env(self, index: str | None = None) -> dict[str, str]:
        return {"GIT_INDEX_FILE": index or self.private}

    # -- what a killed sync left ------------------------------------------------------------

    def recover(self, board: Board) -> None:
        """Before anything else (under the sync lock, so no sync of ours is running): our
        tagged index.lock and private files go; a landing the marker names is finished."""

        lock = self.index_path() + ".lock"
        if _read_head(lock, len(TAG)) == TAG:
            _unlink(lock)
        self.clean()
        marker = self.read_marker()
        if marker is None:
            return
        head, old, target = _rev(self.git, "HEAD"), marker.get("from"), marker.get("to")
        if head in (old, target) and target:
            self.land(board, old, target, marker.get("snapshot"))
        elif head and old and target and self._ancestor(old, head) and not self._ancestor(target, head):
            self._land_under(board, head, target, marker.get("snapshot"))
        _unlink(str(self.repo.git_dir / MARKER))

    def _land_under(self, board: Board, head: str, target: str, snapshot: str | None) -> None:
        """A landing cut off before HEAD moved, after which the user committed: the board's
        files may hold what `target` brought (the remote's), which committed now would be
        this clone's edits, set against the remote's newer values by the next merge (a tie
        in one second went to the old one). `target` is merged under the new HEAD instead,
        and that merge landed; the files' edits since `snapshot` kept either way. Where that
        merge cannot be made without a person (files outside the board the landing already
        wrote), the board is committed as it is, as before."""
        try:
            merged, _notes = self.merge(head, target, "the interrupted sync", target)
        except (Refused, UsageError):
            return
        self.land(board, head, merged, snapshot)

    def clean(self) -> None:
        """sync's private files in the git folder, gone (the marker and the lock stay)."""
        import shutil

        for name in os.listdir(self.repo.git_dir):
            if name.startswith(f"{PREFIX}-"):
                target = self.repo.git_dir / name
                if target.is_dir() and not target.is_symlink():
                    shutil.rmtree(target, ignore_errors=True)
                else:
                    _unlink(str(target))

    def read_marker(self) -> dict | None:
        try:
            found = json.loads((self.repo.git_dir / MARKER).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return found if isinstance(found, dict) else None

    def index_path(self) -> str:
        where = self.git.out("rev-parse", "--git-path", "index")
        return where if os.path.isabs(where) else os.path.join(self.repo.top, where)

    # -- the board's own commit --------------------------------------------------------------

    def commit_board(self, old: str | None) -> str | None:
        """HEAD's tree with the board as the work tree holds it: a new commit on HEAD, or
        HEAD itself when the board has nothing to commit. The user's index is not read."""
        _unlink(self.private)
        self.git.run("read-tree", *([old] if old else ["--empty"]), env=self.env(), check=True)
        self.git.run("add", "-A", "--", self.path, env=self.env(), check=True)
        tree = self.git.out("write-tree", env=self.env())
        if old is not None and tree == self.git.out("rev-parse", f"{old}^{{tree}}"):
            return old
        return self._commit(tree, [old] if old else [], MESSAGE)

    def _commit(self, tree: str, parents: list[str], message: str, what: str = "the board") -> str:
        """A new commit of `tree` on `parents` (git commit-tree: no hook, no index); a usage
        error naming `what` when git cannot make it."""
        done = self.git.run("commit-tree", tree, *(flag for p in parents for flag in ("-p", p)), "-m", message)
        if done.returncode != 0:
            raise UsageError(f"cannot commit {what}: {failure(done)}", "commit-failed")
        return done.stdout.decode().strip()

    # -- the merge ---------------------------------------------------------------------------

    def combine(self, commit: str | None, remote: str | None, name: str, tracking: str) -> tuple[str | None, list[str]]:
        """The commit that holds both `commit` (ours) and `remote`, and what to say of it."""
        if remote is None or commit == remote:
            return commit, []
        if commit is None or self._ancestor(commit, remote):
            self._outside_clean(commit, remote)
            return remote, []
        if self._ancestor(remote, commit):
            return commit, []
        return self.merge(commit, remote, name, tracking)

    # -- a sync nobody asked for pushes the board alone ---------------------------------------

    def outside_commits(self, target: str, remote: str | None, parents: str = "-c") -> list[str]:
        """The commits a push of `target` would send (those `remote` lacks) that change a
        file outside the board: a merge only when it differs outside the board from every
        parent (its own resolution), as `git diff-tree -c` tells; with `parents` "-m",
        from any parent (a merge that kept one side's files counts)."""
        listed = self.git.run("rev-list", target, *([f"^{remote}"] if remote else []), check=True).stdout
        commits = set(listed.decode().split())
        if not commits:
            return []
        done = self.git.run(
            "diff-tree",
            "--stdin",
            "-z",
            "-r",
            parents,
            "--root",
            "--name-only",
            "--",
            ".",
            f":(exclude){self.path}",
            input=listed,
            check=True,
        )
        held: list[str] = []
        current = None
        for word in done.stdout.decode("utf-8", "surrogateescape").split("\0"):
            if word in commits:
                current = word
            elif word and current is not None and (not held or held[-1] != current):
                held.append(current)
        return held

    def differs_outside(self, remote: str, target: str) -> bool:
        """Whether `target`'s files outside the board differ from `remote`'s."""
        same = self.git.run("diff", "--quiet", remote, target, "--", ".", f":(exclude){self.path}")
        return same.returncode != 0

    def board_on(self, remote: str | None, target: str) -> str | None:
        """A commit on `remote` whose tree is the remote's with the board as `target` holds
        it (`remote` itself when the board is the same; None when the remote has no branch:
        a branch is the user's to publish)."""
        if remote is None:
            return None
        _unlink(self.private)
        self.git.run("read-tree", remote, env=self.env(), check=True)
        prefix = self.path.rstrip("/")
        self.git.run("rm", "-r", "-q", "-f", "--cached", "--ignore-unmatch", "--", prefix, env=self.env(), check=True)
        if self.git.run("rev-parse", "-q", "--verify", f"{target}:{prefix}").returncode == 0:
            self.git.run("read-tree", f"--prefix={prefix}/", f"{target}:{prefix}", env=self.env(), check=True)
        tree = self.git.out("write-tree", env=self.env())
        if tree == self.git.out("rev-parse", f"{remote}^{{tree}}"):
            return remote
        return self._commit(tree, [remote], BOARD_ONLY)

    def join(self, ours: str, target: str, sent: str, name: str) -> str:
        """This branch (`ours`) merged with `sent` (the remote's branch with the board
        pushed alone): `target`'s tree, the merge of `ours` and the remote already made."""
        return self._commit(f"{target}^{{tree}}", [ours, sent], f"tasks: merge {name}'s board", "the merge")

    def _ancestor(self, older: str, newer: str) -> bool:
        return self.git.run("merge-base", "--is-ancestor", older, newer).returncode == 0

    def merge(self, ours: str, theirs: str, name: str, tracking: str) -> tuple[str, list[str]]:
        from ..core import merging

        found = self.git.run("merge-base", ours, theirs)
        base = found.stdout.decode().strip() if found.returncode == 0 else None
        if base is None and not self._board_only(ours):
            raise Refused(
                f"git cannot merge {tracking} without a person (its history is unrelated to this branch's); "
                "nothing was merged: merge it yourself, then sync",
                "merge-failed",
            )
        tree = self._merge_tree(ours, theirs, tracking, base is None)
        boards = self.trees.boards([c for c in (base, ours, theirs) if c])
        exact = merging.merge_boards(boards.get(base or "", []), boards[ours], boards[theirs], published=True)
        shelf = self.trees.archived
        folded = gitwire.fold_archived(shelf.get(base or "", set()), shelf[ours], shelf[theirs], exact.records.values())
        tree = self._with_board(tree, exact, base, ours, theirs, gitwire.stays_archived(exact.records, folded))
        target = self._commit(tree, [ours, theirs], f"tasks: merge {name}'s board", "the merge")
        self._outside_clean(ours, target)
        notes = [
            f"#{old} became #{new} (uid {uid}): both branches had created a #{old}" for uid, old, new in exact.moved
        ]
        notes += [note for note in exact.notes if "cycle" in note or "history edge" in note]
        return target, notes

    def _board_only(self, commit: str) -> bool:
        """Whether every commit of this branch touches the board alone (commits sync made in
        a clone of an empty remote): its history may join the remote's. Any other history
        unrelated to the remote's is a person's to join."""
        outside = self.git.run("rev-list", "-n", "1", commit, "--", ".", f":(exclude){self.path}")
        return outside.returncode == 0 and not outside.stdout.strip()

    def _merge_tree(self, ours: str, theirs: str, tracking: str, unrelated: bool) -> str:
        """git's merge of the two commits as a tree, made in memory. No attribute is read
        (an empty work tree and index are named), so no driver runs and nothing is written
        beside the user's files; the board's files are merged here instead (_with_board)."""
        empty = self.scratch / "empty"
        empty.mkdir(parents=True, exist_ok=True)
        env = {"GIT_DIR": str(self.repo.git_dir), "GIT_WORK_TREE": str(empty), **self.env(str(empty / "index"))}
        flags = ["--allow-unrelated-histories"] if unrelated else []
        done = self.git.run("merge-tree", "--write-tree", "--name-only", *flags, ours, theirs, env=env, cwd=str(empty))
        lines = done.stdout.decode("utf-8", "replace").split("\n")
        if done.returncode not in (0, 1) or not lines[0]:
            raise Refused(
                f"git cannot merge {tracking} without a person ({failure(done)}); nothing was merged: "
                "merge it yourself, then sync",
                "merge-failed",
            )
        conflicts = []
        for line in lines[1:]:
            if not line:
                break
            if not self._ours_to_merge(line):
                conflicts.append(line)
        if conflicts:
            raise Refused(
                f"git cannot merge {tracking} without a person (conflicts in {', '.join(sorted(set(conflicts))[:5])}); "
                "nothing was merged: merge it yourself, then sync",
                "merge-failed",
            )
        return lines[0]

    def _ours_to_merge(self, path: str) -> bool:
        """A board file this module merges itself: a task file, live or archived, or a
        journal shard."""
        from ..core.model import board_file_id
        from ..disk.journal import JOURNAL_DIR, SUFFIX

        prefix = self.path.rstrip("/") + "/"
        if not path.startswith(prefix):
            return False
        inside = path[len(prefix) :]
        return board_file_id(inside) is not None or (
            inside.startswith(f"{JOURNAL_DIR}/") and inside.endswith(SUFFIX) and inside.count("/") == 1
        )

    def _with_board(self, tree: str, exact: Any, base: str | None, ours: str, theirs: str, archived: set[int]) -> str:
        """`tree` with the board's task files the exact merge (the `archived` ids in the
        archive folder, every other task live, each in one place), its journal shards every
        line of both sides, and the renumbering journaled once, by uid."""
        from ..core.model import archive_file_name, encode, file_name

        prefix = self.path.rstrip("/") + "/"
        listing = {c: self._files(c) for c in (tree, ours, theirs, *([base] if base else []))}
        contents: dict[str, bytes] = {}
        for task_id, record in exact.records.items():
            place = archive_file_name(task_id) if task_id in archived else file_name(task_id)
            contents[prefix + place] = encode(record)
        shards = {p for c in (ours, theirs) for p in listing[c] if self._ours_to_merge(p) and "/journal/" in "/" + p}
        blobs = self._cat(
            {listing[c][p] for c in (ours, theirs, *([base] if base else [])) for p in shards if p in listing[c]}
        )
        for shard in sorted(shards):
            base_text, ours_text, theirs_text = (
                blobs.get(listing[c].get(shard, ""), b"") if c in listing else b"" for c in (base or "", ours, theirs)
            )
            contents[shard] = _union(base_text, ours_text, theirs_text)
        moves = gitwire.journal_moves(exact.moved)
        for shard, lines in (moves or {}).items():
            contents[prefix + shard] = contents.get(prefix + shard, b"") + lines
        removed = [
            p for p in listing[tree] if self._ours_to_merge(p) and "/journal/" not in "/" + p and p not in contents
        ]
        return self._write_tree(tree, listing[tree], contents, removed)

    def _files(self, commit: str) -> dict[str, str]:
        """path -> blob id of every file under the board in `commit`."""
        raw = self.git.run("ls-tree", "-r", "-z", commit, "--", self.path.rstrip("/") + "/", check=True).stdout
        found = {}
        for item in raw.split(b"\0"):
            meta, _, name = item.partition(b"\t")
            if meta and meta.split()[1] == b"blob":
                found[name.decode("utf-8", "surrogateescape")] = meta.split()[2].decode()
        return found

    def _cat(self, shas: set[str]) -> dict[str, bytes]:
        wanted = sorted(shas)
        found = {}
        done = self.git.run("cat-file", "--batch", input="".join(f"{sha}\n" for sha in wanted).encode())
        out, at = done.stdout, 0
        for sha in wanted:
            end = out.index(b"\n", at)
            header = out[at:end].split()
            at = end + 1
            if len(header) != 3:
                continue
            size = int(header[2])
            found[sha] = out[at : at + size]
            at += size + 1
        return found

    def _write_tree(self, tree: str, listed: dict[str, str], contents: dict[str, bytes], removed: list[str]) -> str:
        """`tree` with `contents` written at their paths and `removed` gone, as a new tree."""
        import hashlib

        changed = {}
        for path, data in contents.items():
            sha = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()  # git's object id
            if listed.get(path) != sha:
                changed[path] = data
        if not changed and not removed:
            return tree
        self.scratch.mkdir(parents=True, exist_ok=True)
        files = []
        for n, data in enumerate(changed.values()):
            file = self.scratch / f"blob-{n}"
            file.write_bytes(data)
            files.append(str(file))
        made = self.git.out(
            "hash-object", "-w", "--no-filters", "--stdin-paths", input="".join(f"{f}\n" for f in files).encode()
        )
        lines = [f"100644 {sha}\t{path}" for path, sha in zip(changed, made.split(), strict=True)]
        lines += [f"0 {ZERO}\t{path}" for path in removed]
        _unlink(self.private)
        self.git.run("read-tree", tree, env=self.env(), check=True)
        self.git.run(
            "update-index",
            "--index-info",
            input="".join(f"{line}\n" for line in lines).encode(),
            env=self.env(),
            check=True,
        )
        return self.git.out("write-tree", env=self.env())

    def _outside_clean(self, old: str | None, new: str) -> None:
        """Files outside the board that landing `new` over `old` changes must hold what
        `old` holds, in the work tree and the index: a person's changes are never overwritten."""
        changed = self._outside(old, new)
        if not changed:
            return
        paths = [path for _status, path in changed]
        dirty = self.git.run("diff", "--name-only", old or EMPTY_TREE, "--", *paths)
        staged = self.git.run("diff", "--cached", "--name-only", old or EMPTY_TREE, "--", *paths)
        untracked = [p for s, p in changed if s == "A" and os.path.lexists(self.repo.top / p)]
        local = set(dirty.stdout.decode().split()) | set(staged.stdout.decode().split()) | set(untracked)
        if local:
            raise Refused(
                f"the merge would change files you changed and did not commit ({', '.join(sorted(local)[:5])}); "
                "nothing was merged: commit or stash them, then sync",
                "merge-failed",
            )

    def _outside(self, old: str | None, new: str) -> list[tuple[str, str]]:
        """(status, path) of the files outside the board that differ between two commits."""
        done = self.git.run(
            "diff-tree",
            "-r",
            "-z",
            "--no-renames",
            "--name-status",
            old or EMPTY_TREE,
            new,
            "--",
            ".",
            f":(exclude){self.path}",
        )
        words = done.stdout.decode("utf-8", "surrogateescape").split("\0")
        return [(words[i], words[i + 1]) for i in range(0, len(words) - 1, 2) if words[i]]

    # -- landing -----------------------------------------------------------------------------

    def land(self, board: Board, old: str | None, target: str | None, snapshot: str | None) -> None:
        """Make `target` what the user has: the board's files, the files outside it the
        merge changed, HEAD and the index's board entries. A marker names the landing
        first, so a sync killed half-way is finished by the next one."""
        if target is None or target == old:
            return
        marker = self.repo.git_dir / MARKER
        text = json.dumps({"from": old, "to": target, "snapshot": snapshot})
        temp = self.repo.git_dir / f"{PREFIX}-marker.tmp"
        temp.write_text(text, encoding="utf-8")
        os.replace(temp, marker)
        _stop("marked")
        if target != snapshot:
            self._land_board(board, snapshot, target)
        _stop("board")
        self._land_outside(old, target)
        moved = self.git.run("update-ref", "-m", "tasks: sync", "HEAD", target, old or ZERO)
        if moved.returncode != 0 and _rev(self.git, "HEAD") != target:
            _unlink(str(marker))
            raise Refused(
                f"HEAD moved while sync ran ({failure(moved)}); the board holds the merge: sync again", "head-moved"
            )
        _stop("head")
        self._land_index(target)
        _unlink(str(marker))

    def _land_board(self, board: Board, snapshot: str | None, target: str) -> None:
        """The board's files become `target`'s, live and archived, with what changed since
        `snapshot` (edits made here while sync ran) kept, by uid; one all-or-nothing change
        of the store. A task is in one place: archived only if `target` (or an edit made
        here) archived it and it is still closed (DESIGN §11)."""
        from ..core import merging

        boards = self.trees.boards([c for c in (snapshot, target) if c])
        shelf = self.trees.archived
        prefix = self.path.rstrip("/") + "/"
        theirs, before_files = self._files(target), self._files(snapshot) if snapshot else {}
        shards = [p for p in theirs if self._ours_to_merge(p) and "/journal/" in "/" + p]
        blobs = self._cat({theirs[p] for p in shards} | {before_files[p] for p in shards if p in before_files})
        store = board.store
        with store.writing():
            current, damaged, here, doubles = gitwire.board_on_disk(store)
            if damaged:
                raise damaged[0]
            mine = {r["id"]: r for r in current}
            before = {r["id"]: r for r in boards.get(snapshot or "", [])}
            wanted = {r["id"]: r for r in boards[target]}
            was = shelf.get(snapshot or "", set())
            archived = shelf[target]
            if not (
                mine.keys() == before.keys() and here == was and all(merging.same(mine[i], before[i]) for i in mine)
            ):
                wanted = merging.merge_boards(before.values(), mine.values(), wanted.values()).records
                archived = gitwire.fold_archived(was, here, archived, wanted.values())
            result = gitwire.Settled("exact")
            shelved = {r["id"] for r in current if r.get("uid") in here}
            gitwire.apply_merged(
                store, current, wanted, result, shelved, gitwire.stays_archived(wanted, archived), doubles
            )
            for path in shards:
                old = blobs.get(before_files.get(path, ""), b"")
                _land_shard(store.root / path[len(prefix) :], old, blobs.get(theirs[path], b""))

    def _land_outside(self, old: str | None, target: str) -> None:
        """Files outside the board that the remote changed, checked out (their absence of
        local changes was checked before anything was pushed)."""
        changed = self._outside(old, target)
        if not changed:
            return
        gone = [p for s, p in changed if s == "D"]
        kept = [p for s, p in changed if s != "D"]
        if kept:
            self.git.run("checkout", target, "--", *kept, check=True)
        if gone:
            self.git.run("rm", "-q", "--cached", "--ignore-unmatch", "--", *gone, check=True)
            for path in gone:
                _unlink(str(self.repo.top / path))

    def _land_index(self, target: str) -> None:
        """The index's board entries become `target`'s: built on a copy, under an
        index.lock this process takes itself (tagged), then renamed into place."""
        import shutil
        import time

        index = self.index_path()
        lock = index + ".lock"
        tag = self.repo.git_dir / f"{PREFIX}-tag"
        tag.write_bytes(TAG)
        deadline = time.monotonic() + 5
        while True:
            try:
                os.link(tag, lock)  # all at once, with our tag in it: never an empty lock of unknown owner
                break
            except FileExistsError:
                if time.monotonic() >= deadline:
                    _unlink(str(tag))
                    return  # a git of the user's holds it: `git status` shows the board as changed until a reset
                time.sleep(0.02)
        try:
            _unlink(str(tag))
            _stop("index-locked")
            copy = str(self.repo.git_dir / f"{PREFIX}-index-user")
            if os.path.exists(index):
                shutil.copyfile(index, copy)
            self.git.run("reset", "-q", target, "--", self.path, env=self.env(copy))
            self.git.run("update-index", "-q", "--refresh", env=self.env(copy))
            os.replace(copy, index)
        finally:
            _unlink(lock)


def _union(base: bytes, ours: bytes, theirs: bytes) -> bytes:
    """A journal shard both sides appended to: ours, then theirs' lines ours lacks."""
    if theirs in (ours, base):
        return ours
    if ours == base:
        return theirs
    have = set(ours.splitlines(keepends=True))
    extra = [line for line in theirs.splitlines(keepends=True) if line not in have]
    return ours + (b"" if ours.endswith(b"\n") or not ours else b"\n") + b"".join(extra)


def _land_shard(path: Path, snapshot: bytes, wanted: bytes) -> None:
    """A journal shard becomes what the landed commit holds, with the lines written here
    since the snapshot kept after it (git's checkout would replace it the same way)."""
    try:
        here = path.read_bytes()
    except FileNotFoundError:
        here = b""
    if here == wanted:
        return
    if here != snapshot:
        wanted = _union(snapshot, wanted, here)
    path.parent.mkdir(exist_ok=True)
    temp = path.with_name(f".{path.name}.{os.getpid()}.sync")
    with open(temp, "wb") as f:
        f.write(wanted)
        f.flush()
        os.fsync(f.fileno())
    os.replace(temp, path)


def _read_head(path: str, size: int) -> bytes:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return b""
    try:
        return os.read(fd, size)
    except OSError:
        return b""
    finally:
        os.close(fd)


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    except IsADirectoryError:
        import shutil

        shutil.rmtree(path, ignore_errors=True)


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


def _push_flag(done: Any, ref: str) -> str | None:
    for line in done.stdout.decode("utf-8", "replace").splitlines():
        parts = line.split("\t")
        if len(parts) >= 2 and parts[1].endswith(":" + ref):
            return parts[0][:1] or " "
    return None


def _snapshot(board: Board) -> dict[str, tuple[int, str, bool]]:
    """Each readable live task by uid: (id, status, ready); under the key "" the ids of
    the archived tasks (a task brought back from the archive is not new)."""
    records, _damaged = board.store.read_all()
    by_id: dict[int, Record] = {r["id"]: r for r in records}
    found: dict[str, Any] = {
        r["uid"]: (r["id"], r["status"], graph.is_ready(r, by_id.get)) for r in records if isinstance(r.get("uid"), str)
    }
    found[""] = set(board.store.archived_ids())
    return found


def _came_in(before: dict, after: dict, result: Synced) -> None:
    shelved = before.get("", set())
    tasks = [(uid, found) for uid, found in after.items() if uid]
    for uid, (task_id, status, ready) in sorted(tasks, key=lambda item: item[1][0]):
        old = before.get(uid)
        if old is None:
            if task_id not in shelved:
                result.new.append(task_id)
            continue
        if status == "completed" and old[1] != "completed":
            result.completed.append(task_id)
        if ready and not old[2]:
            result.unblocked.append(task_id)


# -- waiting across clones -------------------------------------------------------------------------


RETRY_AFTER = 30.0  # seconds before a waiter tries again to push what a failed sync left here
_failed: dict[str, tuple[str, float]] = {}  # board path: (what was not pushed, when the sync failed)


def waiter(say: Callable[[str], None]) -> Callable[[Board], None]:
    """The `catch_up` of one waiter (`claim --wait`): bring_in, with what its syncs did not
    push (the branch's commits outside the board) said once, through `say`."""
    said: list[str] = []

    def once(message: str) -> None:
        if not said:
            said.append(message)
            say(message)

    return lambda board: bring_in(board, once)


def bring_in(board: Board, say: Callable[[str], None] | None = None) -> None:
    """What a waiter does at every poll of the claim refs (claimrefs.ClaimRefs.poll): sync
    when they say an open task here was finished or given back on another machine and
    the remote's branch moved since this clone last fetched it (a completion frees
    dependents only once the task files say so); and sync when this clone's board holds
    what the remote's branch does not (its own completions leave it while its agent
    waits, instead of waiting for a sync nobody runs). A sync that fails is left to a
    later poll. Nobody asked for these syncs: they push the board alone, never a commit
    that changes a file outside it (the user's code), and say so through `say`."""
    import time

    from ..core.errors import TaskError
    from .claimrefs import ended_elsewhere

    try:
        git = Git(board.store)
        branch = git.run("symbolic-ref", "-q", "--short", "HEAD").stdout.decode().strip()
        if not branch:
            return
        name, merge_ref = _where(git, board.store, branch, None)
        tracking = f"refs/remotes/{name}/{merge_ref.removeprefix('refs/heads/')}"
        if ended_elsewhere(board.store):
            heads = git.run("ls-remote", name, merge_ref, network=True).stdout.decode().split()
            if heads and heads[0] != _rev(git, tracking):
                _held(sync(board, name, board_only=True), say)
                return
        unpushed = _unpushed(git, board.store, tracking)
        if not unpushed:
            return
        failed = _failed.get(board.store.path)
        if failed is not None and failed[0] == unpushed and time.monotonic() - failed[1] < RETRY_AFTER:
            return
        try:
            _held(sync(board, name, board_only=True), say)
        except TaskError:
            _failed[board.store.path] = (unpushed, time.monotonic())
            raise
        _failed.pop(board.store.path, None)
    except TaskError:
        return


def _held(result: Synced, say: Callable[[str], None] | None) -> None:
    if not result.held or say is None:  # none when the remote has no branch: that sync synced nothing
        return
    shown = ", ".join(commit[:12] for commit in result.held[:3]) + (", ..." if len(result.held) > 3 else "")
    say(
        f"synced the board with {result.remote}/{result.branch} alone: {len(result.held)} commit(s) of this "
        f"branch that change files outside the board were not pushed ({shown}); "
        "`tasks sync` or `git push` publishes them"
    )


def _unpushed(git: Git, store: Store, tracking: str) -> str:
    """What of the board the remote's branch (as last fetched) does not hold: the paths
    that differ from it, new files included; "" when nothing (or no such branch)."""
    if _rev(git, tracking) is None:
        return ""
    where = str(store.root)
    changed = git.run("diff", "--name-only", tracking, "--", where).stdout.decode()
    new = git.run("ls-files", "--others", "--exclude-standard", "--", where).stdout.decode()
    return changed + new
