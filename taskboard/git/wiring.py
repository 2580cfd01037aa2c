"""The board and git: how a clone is wired so that task files merge by their meaning,
and the step that finishes the board once git is done (the merge driver itself,
taskboard.driver, may write only its own file, so tasks two branches both created at
one id, and edges only the whole board can put right, wait for this step).

- `wire` (`tasks init`): the driver in the clone's config, `merge=tasks` for task
  files (and `merge=union` for journal shards) in the board's .gitattributes, and
  post-merge, post-commit and post-rewrite hooks (a user's own hook is kept and runs
  first). Idempotent; says what it did.
- `settle` (the hooks, `tasks check --fix`): the board again from the commits, exact by
  uid (merging.merge_boards over the merge's parents, or each picked commit of a
  rebase in turn), applied over what the work tree holds now, so edits made since are
  kept; without the commits (a cherry-pick, a merge made in a clone that never finished
  it) the parked tasks are settled from their own lists (merging.settle_pending).

Nothing here is on a command's hot path: git is spawned only by init, check, the hooks
and a settle.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import sys
from pathlib import Path

from ..core import merging
from ..core.errors import Corrupt, NotFound
from ..core.fields import OPEN
from ..core.model import ARCHIVE_FOLDER, archive_file_name, decode, encode, file_name, id_from_file_name
from .driver import CACHE, MARKER, read_small
from .driver import read_marker as driver_read_marker
from .run import GitError, checked, git

TYPE_CHECKING = False  # typing costs ~5 ms of start-up; annotations are strings anyway
if TYPE_CHECKING:
    from collections.abc import Iterable

    from ..core.fields import Record
    from ..core.outcome import Problem
    from ..disk.store import Store

DRIVER = "tasks"  # merge=tasks in .gitattributes, [merge "tasks"] in the config
DRIVER_NAME = "taskboard: merge task files by their meaning"
HOOKS = ("post-merge", "post-commit", "post-rewrite")
HOOK_SIGN = "# taskboard hook"
ATTRIBUTE_LINE = f"task_*.json merge={DRIVER}"
COMMIT_HINT = 'git add {board} && git commit -m "tasks: finish merging the board"'
_IN_PROGRESS = ("MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD", "rebase-merge", "rebase-apply")


class Repo:
    """A work tree of a git repository: its top folder and its own git folder (a linked
    worktree has one of its own; config and hooks live in the common one)."""

    def __init__(self, top: Path, git_dir: Path):
        self.top = top
        self.git_dir = git_dir
        self.marker = git_dir / MARKER

    def git(self, *args: str, input: bytes | None = None, check: bool = True) -> str:
        out = self.git_bytes(*args, input=input, check=check)
        return out.decode("utf-8", "replace").rstrip("\n")

    def git_bytes(self, *args: str, input: bytes | None = None, check: bool = True) -> bytes:
        done = git(*args, cwd=self.top, input=input)
        if check:
            checked(done, args)
        return done.stdout if done.returncode == 0 else b""

    def succeeds(self, *args: str) -> bool:
        try:
            return git(*args, cwd=self.top).returncode == 0
        except GitError:
            return False

    def in_progress(self, hook: str | None = None) -> str | None:
        """The operation git is in the middle of, if any: one stopped on a conflict, or a
        rebase or series of picks between two commits. A hook runs when its commit is made,
        while git's state files are still there: post-merge and post-commit see MERGE_HEAD
        or CHERRY_PICK_HEAD of the operation that just finished, post-rewrite the rebase's."""
        done = {
            "post-merge": {"MERGE_HEAD"},
            "post-commit": {"MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD"},
            "post-rewrite": {"rebase-merge", "rebase-apply"},
        }.get(hook or "", set())
        for name in (*_IN_PROGRESS, "sequencer"):
            if name in done or not (self.git_dir / name).exists():
                continue
            if name == "MERGE_HEAD" and self._merge_committed():
                continue
            if name == "sequencer" and hook is None:
                continue  # a finished series of picks may leave it; a stopped one has CHERRY_PICK_HEAD
            return name
        return None

    def _merge_committed(self) -> bool:
        text = read_small(str(self.git_dir / "MERGE_HEAD"), 1 << 16)  # never waits on a FIFO
        if text is None:
            return False
        heads = text.split()
        parents = self.git("rev-parse", "HEAD^@", check=False).split()
        return len(parents) > 1 and parents[1:] == heads

    def relative(self, path: Path) -> str:
        return Path(os.path.relpath(path.resolve(), self.top.resolve())).as_posix()


def find_repo(start: Path) -> Repo | None:
    """The work tree around `start`, found by reading `.git` (a folder, or a file naming
    the folder of a linked worktree); None outside any. Spawns nothing."""
    start = start.absolute()
    for folder in (start, *start.parents):
        dot = folder / ".git"
        if dot.is_dir():
            return Repo(folder, dot)
        if dot.is_file():
            from .driver import read_small

            text = (read_small(str(dot)) or "").strip()  # never a FIFO waited on, nor a huge file read
            if text.startswith("gitdir:"):
                return Repo(folder, (folder / text[len("gitdir:") :].strip()).resolve())
            return None
    return None


# -- the marker a driver leaves ------------------------------------------------------------------


def read_marker(repo: Repo) -> dict:
    return driver_read_marker(str(repo.git_dir))


def clear_marker(repo: Repo) -> None:
    import shutil

    shutil.rmtree(repo.git_dir / CACHE, ignore_errors=True)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(repo.marker)


# -- wiring a clone (tasks init) ---------------------------------------------------------------


def driver_command() -> str:
    """How git starts the driver: this very interpreter and package (`tasks init` again
    after moving or reinstalling taskboard), isolated from the environment's Python
    settings. In front of it, a few shell words answer from the results the first driver
    run of a merge worked out for every file (taskboard.driver.CACHE), found by the three
    versions' blob ids: a merge of a thousand changed tasks then starts Python once, not a
    thousand times. A result is only ever the driver's own answer for exactly those bytes."""
    cache = f"$d/{CACHE}/$1-$2-$3"
    return (
        "d=.git; [ -f .git ] && d=$(sed -n 's/^gitdir: //p' .git); "
        f'set -- $(git hash-object %O %A %B) && [ -f "{cache}" ] && cat "{cache}" > %A || '
        f"{_python()} merge-driver %O %A %B %P"
    )


def _interpreter(driver: str) -> str:
    """The Python a configured driver command runs (the word before `-I -m taskboard`)."""
    words = shlex.split(driver.rpartition("||")[2])
    return words[0] if words else ""


def _python() -> str:
    return f"{shlex.quote(sys.executable or 'python3')} -I -m taskboard"


def hook_script(name: str) -> str:
    return f"""#!/bin/sh
{HOOK_SIGN}: finishes merging the task board after git merges, rebases and
# cherry-picks (written by `tasks init`; run it again after moving taskboard).
# A hook you had here before was kept as {name}.local and runs first.
status=0
if [ -x "$0.local" ]; then "$0.local" "$@"; status=$?; fi
if {"true" if name == "post-merge" else f'[ -f "$(git rev-parse --git-dir)/{MARKER}" ]'}; then
    {_python()} git-hook {name} "$@" </dev/null
fi
exit $status
"""


def wire(root: Path) -> list[str] | None:
    """Wire the clone around the board `root`; what was done, in words (None outside git)."""
    repo = find_repo(root)
    if repo is None:
        return None
    done = []
    if repo.git("config", "--get", f"merge.{DRIVER}.driver", check=False) != driver_command():
        repo.git("config", f"merge.{DRIVER}.name", DRIVER_NAME)
        repo.git("config", f"merge.{DRIVER}.driver", driver_command())
        done.append(f"set the merge driver '{DRIVER}' in the clone's config")
    done += _wire_attributes(repo, root)
    done += _wire_hooks(repo)
    return done or ["the clone was already wired"]


def _wire_attributes(repo: Repo, root: Path) -> list[str]:
    """`merge=tasks` for task files and `merge=union` for journal shards, in the board's
    .gitattributes, unless the user gave them a merge attribute of their own."""
    path = root / ".gitattributes"
    if path.is_symlink():  # a board file: never written through a link (git can commit one)
        raise OSError(f"{path}: is a symbolic link; the board's .gitattributes must be a regular file")
    from ..disk.store import JOURNAL_LINE

    text = _small_file(path) or ""
    done, lines = [], []
    for patterns, line, wanted in (
        (("task_*.json", "*.json", "*"), ATTRIBUTE_LINE, DRIVER),
        (("journal/*.jsonl", "*.jsonl", "*"), JOURNAL_LINE, "union"),
    ):
        own = _merge_attribute(text, patterns)
        if own is None:
            lines.append(line)
        elif own != wanted:
            done.append(f"kept your merge={own} for {patterns[0]} in {path.name}: the board's merge rule is not used")
    if lines:
        path.write_text(
            text + ("" if text.endswith("\n") or not text else "\n") + "".join(f"{line}\n" for line in lines),
            encoding="utf-8",
        )
        done += [f"added '{line}' to {repo.relative(path)} (commit it)" for line in lines]
    return done


def _merge_attribute(text: str, patterns: tuple[str, ...]) -> str | None:
    """The merge attribute the board's .gitattributes gives files matching one of the
    patterns (the last line wins)."""
    found = None
    for line in text.splitlines():
        words = line.split()
        if len(words) < 2 or words[0].startswith("#") or words[0] not in patterns:
            continue
        for word in words[1:]:
            if word.startswith("merge="):
                found = word[len("merge=") :]
            elif word in ("-merge", "!merge", "merge"):
                found = word
    return found


def hooks_dir(repo: Repo) -> tuple[Path, bool]:
    """Where git looks for hooks, and whether that lies inside the git folder (a hooks
    path of the user's own, such as a committed `.husky/`, is theirs to edit)."""
    path = Path(repo.git("rev-parse", "--git-path", "hooks"))
    path = (repo.top / path).resolve() if not path.is_absolute() else path.resolve()
    common = Path(repo.git("rev-parse", "--git-common-dir"))
    common = (repo.top / common).resolve() if not common.is_absolute() else common.resolve()
    return path, path == common / "hooks" or common in path.parents


def _wire_hooks(repo: Repo) -> list[str]:
    folder, ours = hooks_dir(repo)
    if not ours:
        return [
            f'left the hooks in {folder} alone (core.hooksPath): add `{_python()} git-hook NAME "$@"` to its '
            f"{', '.join(HOOKS)} hooks; until then `tasks check --fix` finishes a merge"
        ]
    folder.mkdir(parents=True, exist_ok=True)
    done = []
    for name in HOOKS:
        path, script = folder / name, hook_script(name)
        try:
            current = _small_file(path)
        except OSError:  # a FIFO, a folder, a device, a link to one: never read, never replaced
            done.append(f"left your {name} hook alone: it is not a regular file; add the line from `tasks init --help`")
            continue
        if current is None and path.is_symlink():  # a link to nothing: never written through
            current = ""
        if current == script:
            continue
        if current is not None and HOOK_SIGN not in current:
            if (folder / f"{name}.local").exists():
                done.append(
                    f"left your {name} hook alone ({name}.local exists too): add the line from `tasks init --help`"
                )
                continue
            os.replace(path, folder / f"{name}.local")
            done.append(f"kept your {name} hook as {name}.local (it runs first)")
        path.write_text(script, encoding="utf-8")
        path.chmod(0o755)
        done.append(f"{'updated' if current is not None and HOOK_SIGN in current else 'installed'} the {name} hook")
    return done


def wiring_problems(root: Path) -> list[str]:
    """What keeps this clone from merging the board by its meaning (empty when it is wired,
    or when the board is not committed in a git work tree)."""
    repo = find_repo(root)
    if repo is None:
        return []
    try:
        board = repo.relative(root)
        if not repo.git("ls-files", "--", board, check=False):
            return []  # not committed: git never merges it
        problems = []
        driver = repo.git("config", "--get", f"merge.{DRIVER}.driver", check=False)
        if not driver:
            problems.append("the merge driver is not set in this clone's config")
        elif _interpreter(driver) != sys.executable and not Path(_interpreter(driver)).exists():
            problems.append(f"the merge driver runs {_interpreter(driver)}, which does not exist any more")
        attribute = repo.git("check-attr", "merge", "--", f"{board}/task_1.json").rpartition(": ")[2]
        if attribute != DRIVER:
            problems.append(f"task files do not use the merge driver (their merge attribute is '{attribute}')")
        folder, _ours = hooks_dir(repo)
        missing = [name for name in HOOKS if "git-hook" not in _read_text(folder / name)]
        if missing:
            problems.append(f"the {', '.join(missing)} hook(s) in {folder} do not finish merges of the board")
    except GitError as exc:
        return [f"git cannot tell how this clone is wired: {exc}"]
    return problems


def _read_text(path: Path) -> str:
    try:
        return _small_file(path) or ""
    except OSError:
        return ""


def _small_file(path: Path, limit: int = 1 << 20) -> str | None:
    """The text of a hook or an attributes file, following a link as git does; None when
    there is none. A FIFO, folder or device in its place, or a file past `limit`, raises
    OSError at once: it is never waited on and never read whole (a link to /dev/zero)."""
    import errno
    import stat

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            raise OSError(errno.EINVAL, f"{path}: not a regular file of at most {limit >> 20} MiB")
        parts, total = [], 0
        while total <= limit and (chunk := os.read(fd, 1 << 16)):
            parts.append(chunk)
            total += len(chunk)
        return b"".join(parts).decode("utf-8", errors="replace")
    finally:
        os.close(fd)


# -- settling the board after git is done -------------------------------------------------------


class Settled:
    """What finishing a merge did to the board: tasks moved to free ids, files written and
    removed, and what a person should hear (cycles the merge closed, tasks it set free)."""

    def __init__(self, how: str):
        self.how = how  # "exact", "parked" (without the commits), "waiting" (git is mid-operation), "none"
        self.moved: list[tuple[str, int, int]] = []
        self.written: list[int] = []
        self.removed: list[int] = []
        self.archived: list[int] = []  # tasks the merge left archived that the work tree held live
        self.restored: list[int] = []  # tasks brought back from the archive (reopened on one side)
        self.unblocked: list[int] = []
        self.notes: list[str] = []


class Trees:
    """Boards as committed, read with two git commands per batch of commits; a blob read
    once serves every commit that holds it."""

    def __init__(self, repo: Repo, board: str, archive: bool = False):
        self.repo, self.board = repo, board
        self.folders = [board + "/", f"{board}/{ARCHIVE_FOLDER}/"] if archive else [board + "/"]
        self.blobs: dict[str, list[Record]] = {}
        self.archived: dict[str, set[str]] = {}  # by commit: the uids of its archived tasks (DESIGN §11)

    def boards(self, commits: Iterable[str]) -> dict[str, list[Record]]:
        """Each commit's tasks, live and archived (an archived file is the same task as a
        live one: merged by uid); `archived` says which were archived in each."""
        listing: dict[str, list[tuple[str, str, bool]]] = {}
        for commit in commits:
            raw = self.repo.git_bytes("ls-tree", "-z", commit, "--", *self.folders)
            entries = []
            for item in raw.split(b"\0"):
                if not item:
                    continue
                meta, _, name = item.partition(b"\t")
                _mode, kind, sha = meta.decode().split()
                folder, _, base = name.decode("utf-8", "replace").rpartition("/")
                if kind == "blob" and id_from_file_name(base) is not None:
                    shelved = folder.rpartition("/")[2] == ARCHIVE_FOLDER and folder != self.board
                    entries.append((sha, base, shelved))
            listing[commit] = entries
        wanted = sorted({sha for entries in listing.values() for sha, _, _ in entries} - set(self.blobs))
        if wanted:
            self._read_blobs(wanted, {sha: name for entries in listing.values() for sha, name, _ in entries})
        for commit, entries in listing.items():
            kept = listing[commit] = self._one_copy_each(entries)
            shas = [sha for sha, _, shelved in kept if shelved]
            self.archived[commit] = {r["uid"] for sha in shas for r in self.blobs[sha] if isinstance(r.get("uid"), str)}
        return {commit: [r for sha, _, _ in entries for r in self.blobs[sha]] for commit, entries in listing.items()}

    def _one_copy_each(self, entries: list[tuple[str, str, bool]]) -> list[tuple[str, str, bool]]:
        """A commit's task files with one copy of a task that is both live and archived
        there (committed by a sync before DESIGN §11's rule held): the one
        merging.live_kept keeps, as `check --fix` does."""
        live = {name: sha for sha, name, shelved in entries if not shelved}
        dropped = set()
        for sha, name, shelved in entries:
            if shelved and name in live:
                mine, other = self.blobs[live[name]][0], self.blobs[sha][0]
                if mine.get("uid") == other.get("uid"):
                    dropped.add((sha, name, True) if merging.live_kept(mine, other) else (live[name], name, False))
        return [entry for entry in entries if entry not in dropped] if dropped else entries

    def _read_blobs(self, shas: list[str], names: dict[str, str]) -> None:
        out = self.repo.git_bytes("cat-file", "--batch", input="".join(f"{sha}\n" for sha in shas).encode())
        at = 0
        for sha in shas:
            end = out.index(b"\n", at)
            header = out[at:end].split()
            size = int(header[2])
            data = out[end + 1 : end + 1 + size]
            at = end + 1 + size + 1
            record = decode(data, names[sha])  # Corrupt when a committed file is damaged
            if merging.PENDING_KEY in record:  # parked tasks: merging unpacks them, once proved sound
                merging.read_version(data, names[sha], f"{names[sha]} as committed")
            self.blobs[sha] = [record]


def settle(store: Store, hook: str | None = None) -> Settled:
    """Finish the board after a merge, rebase or cherry-pick touched it: under the board
    lock, the exact result from the commits when they are known, applied over what the
    work tree holds now, or the parked tasks settled from their own lists."""
    repo = find_repo(store.root)
    if repo is None:
        return Settled("none")
    marker = read_marker(repo)
    board = repo.relative(store.root)
    if marker and board not in marker.get("boards", [board]):
        return Settled("none")
    waiting = repo.in_progress(hook)
    if waiting:
        result = Settled("waiting")
        result.notes.append(f"git is in the middle of an operation ({waiting}); the board is finished after it")
        return result
    with store.writing():
        exact = _exact(repo, board, marker, hook) if marker else None
        if exact == _STALE:  # what the driver merged was thrown away: only parked tasks need a home
            clear_marker(repo)
            marker, exact = {}, None
        if isinstance(exact, tuple) and _unchanged_since_commit(repo, board, exact[0]):
            _commit, before, expected, (was, shelved) = exact  # the work tree holds what the commit holds
            after = expected.records
        else:
            before, damaged, was = _work_tree(store)
            shelved = was
            if damaged:  # damage, not a merge, when no merge touched the board: check names it as such
                result = Settled("none")
                if marker or any(merging.PENDING_KEY in record for record in before):  # else no merge to finish
                    result.notes.append(f"cannot finish merging the board: {damaged[0].message}")
                return result
            if isinstance(exact, tuple):  # edits since the commit: kept, and the exact merge applied over them
                _commit, committed, exactly, (at_commit, merged) = exact
                expected = merging.merge_boards(committed, before, exactly.records.values())
                expected.moved, expected.notes = exactly.moved, exactly.notes
                after = expected.records
                shelved = fold_archived(at_commit, was, merged, after.values())
            elif marker or any(merging.PENDING_KEY in record for record in before):
                expected = merging.settle_pending(before)
                after = expected.records
            else:
                clear_marker(repo)
                return Settled("none")
        result = Settled("exact" if exact is not None else "parked")
        result.moved = expected.moved
        result.notes = [note for note in expected.notes if "cycle" in note or "history edge" in note]
        apply_merged(store, before, after, result, _archived_ids(before, was), stays_archived(after, shelved))
    clear_marker(repo)
    return result


def _unchanged_since_commit(repo: Repo, board: str, commit: str) -> bool:
    """The operation's commit is HEAD, no task file of the board differs from it, none is new."""
    if repo.git("rev-parse", "HEAD", check=False) != commit:
        return False
    changed = repo.git("status", "--porcelain", "--untracked-files=all", "--", board, check=False)
    return not any(id_from_file_name(line[3:].rpartition("/")[2]) is not None for line in changed.splitlines())


_STALE = "stale"  # what _exact answers for an operation that left nothing at HEAD (aborted)


def _exact(
    repo: Repo, board: str, marker: dict, hook: str | None = None
) -> tuple[str, list[Record], merging.BoardMerge, tuple[set[str], set[str]]] | str | None:
    """(the commit the operation made, its board, the exact merge) from the commits the
    marker names; _STALE when a rebase left nothing in HEAD's history (aborted); None
    when the commits cannot be had (then the parked tasks settle from their own lists)."""
    try:
        trees = Trees(repo, board, archive=True)
        if marker.get("op") == "merge":
            made = _merge_commit(repo, marker.get("head", ""))
            if made is None:
                return None  # squashed, or never committed: what the work tree holds is all there is
            commit, parents = made
            base = repo.git("merge-base", *parents)
            got = trees.boards([commit, base, *parents])
            merge = merging.merge_boards(got[base], got[parents[0]], got[parents[1]])
            shelf = trees.archived
            merged = fold_archived(shelf[base], shelf[parents[0]], shelf[parents[1]], merge.records.values())
            return commit, got[commit], merge, (shelf[commit], merged)
        if marker.get("op") == "rebase":
            onto, picks = marker.get("onto", ""), list(marker.get("picks", []))
            tip = _rebase_tip(repo, hook)
            if not onto or tip is None or not repo.succeeds("merge-base", "--is-ancestor", onto, tip):
                return _STALE  # the rebase was aborted: nothing of it is at HEAD
            parent_of = dict(zip(picks, repo.git("rev-parse", *(f"{p}^" for p in picks)).split(), strict=True))
            got = trees.boards([tip, onto, *picks, *parent_of.values()])
            folded = got[onto]
            shelf, flags = trees.archived, trees.archived[onto]
            expected = merging.BoardMerge({r["id"]: r for r in folded})
            moved: list[tuple[str, int, int]] = []
            for pick in picks:  # each picked commit merged in turn, as the rebase did, but exactly
                expected = merging.merge_boards(got[parent_of[pick]], folded, got[pick])
                moved += expected.moved
                folded = list(expected.records.values())
                flags = fold_archived(shelf[parent_of[pick]], flags, shelf[pick], folded)
            expected.moved = moved
            return tip, got[tip], expected, (shelf[tip], flags)
    except (GitError, Corrupt, merging.Unmergeable, ValueError, IndexError):
        return None
    return None


def _merge_commit(repo: Repo, ours: str) -> tuple[str, list[str]] | None:
    """The merge commit (and its two parents) made on top of `ours`: HEAD itself, or one
    in HEAD's recent history when commits were made after it."""
    for line in repo.git("rev-list", "--merges", "--parents", "-n", "50", "HEAD", check=False).splitlines():
        commit, *parents = line.split()
        if len(parents) == 2 and (parents[0] == ours or not ours):
            return commit, parents
    return None


def _rebase_tip(repo: Repo, hook: str | None) -> str | None:
    """The commit a finished rebase left its branch at: HEAD in post-rewrite, else found in
    HEAD's reflog (`rebase (finish)`, `pull --rebase (finish)`: commits may have been made
    on top since)."""
    if hook == "post-rewrite":
        return repo.git("rev-parse", "HEAD")
    for line in repo.git("reflog", "-n", "100", "--format=%H %gs", "HEAD", check=False).splitlines():
        commit, _, subject = line.partition(" ")
        if "(finish)" in subject:
            return commit if repo.succeeds("merge-base", "--is-ancestor", commit, "HEAD") else None
    return None


def apply_merged(
    store: Store,
    before: list[Record],
    after: dict[int, Record],
    result: Settled,
    shelved: set[int] | None = None,
    archived: set[int] | None = None,
    doubles: Iterable[str] = (),
) -> None:
    """Write what changed (all or nothing, through the store's journaled write), and find
    the tasks that became ready. `shelved`: the ids archived in the work tree now;
    `archived`: the ids archived after the merge (a task that moves is written at its
    new place and removed from the old one); `doubles`: files of second copies to remove
    (board_on_disk)."""
    shelved, archived = shelved or set(), archived or set()
    was = {record["id"]: record for record in before}

    def place(task_id: int, there: set[int]) -> str:
        return archive_file_name(task_id) if task_id in there else file_name(task_id)

    files, remove = {}, []
    for task_id, record in sorted(after.items()):
        moves = task_id in was and (task_id in shelved) != (task_id in archived)
        if moves or not merging.same(was.get(task_id), record):
            files[place(task_id, archived)] = encode(record)
            result.written.append(task_id)
        if moves:
            remove.append(place(task_id, shelved))
            (result.archived if task_id in archived else result.restored).append(task_id)
    result.removed = sorted(set(was) - set(after))
    remove += [place(task_id, shelved) for task_id in result.removed]
    remove += [name for name in doubles if name not in files and name not in remove]
    store.write(files, journal_moves(result.moved), remove=remove)
    from ..core import graph

    moved = {uid for uid, _, _ in result.moved}
    touched = set(result.written) | {i for task_id in result.written for i in after[task_id]["blocks"]}
    result.unblocked = [
        task_id
        for task_id in sorted(touched & set(after))
        if graph.is_ready(after[task_id], after.get)
        and not (task_id in was and graph.is_ready(was[task_id], was.get))
        and after[task_id].get("uid") not in moved
    ]


def _work_tree(store: Store) -> tuple[list[Record], list, set[str]]:
    """The board the work tree holds, live and archived (one copy of a task in both
    places: see board_on_disk), the damage met, and the uids of the archived tasks."""
    records, damaged, uids, _doubles = board_on_disk(store)
    return records, damaged, uids


def board_on_disk(store: Store) -> tuple[list[Record], list, set[str], list[str]]:
    """The board's files, live and archived, in id order; the damage met; the uids of the
    archived tasks; and the files of the copies not kept of a task that is both live and
    archived (merging.live_kept chooses, as `check --fix` does)."""
    records, damaged = store.read_all()
    live = {record["id"]: record for record in records}
    shelf, more = store.read_archive()
    kept, doubles = [], []
    for record in shelf:
        other = live.get(record["id"])
        if other is None or other.get("uid") != record.get("uid"):
            if other is None:
                kept.append(record)
            continue  # two tasks at one id: the live one is read, check names the other
        if merging.live_kept(other, record):
            doubles.append(archive_file_name(record["id"]))
        else:
            doubles.append(file_name(record["id"]))
            del live[record["id"]]
            kept.append(record)
    uids = {record["uid"] for record in kept}
    return sorted([*live.values(), *kept], key=lambda record: record["id"]), damaged + more, uids, doubles


def fold_archived(base: set[str], ours: set[str], theirs: set[str], records: Iterable[Record]) -> set[str]:
    """Whether each merged task is archived, merged as one field by uid: the side that
    changed it from the ancestor decides (both sides that changed it agree: it is a yes or no)."""
    found: set[str] = set()
    for record in records:
        uid = str(record.get("uid"))
        was, mine = uid in base, uid in ours
        if mine if mine != was else uid in theirs:
            found.add(uid)
    return found


def _archived_ids(records: Iterable[Record], uids: set[str]) -> set[int]:
    return {record["id"] for record in records if record.get("uid") in uids}


def stays_archived(after: dict[int, Record], uids: set[str]) -> set[int]:
    """The tasks archived after the merge: those merged as archived that are still closed
    and named by no open task (DESIGN §11: reopened on the other side, it comes back)."""
    opened = {task_id for task_id, record in after.items() if record["status"] in OPEN}
    linked = {other for task_id in opened for other in after[task_id]["blocks"] + after[task_id]["blockedBy"]}
    return {
        task_id
        for task_id, record in after.items()
        if record.get("uid") in uids and record["status"] not in OPEN and task_id not in linked
    }


def journal_moves(moved: list[tuple[str, int, int]]) -> dict[str, bytes] | None:
    """The journal lines of the renumbering, appended in the same change: one `renumbered`
    event per task, under its new id, with the id it had on its branch and its uid."""
    if not moved:
        return None
    from ..core.outcome import Event
    from ..disk import journal

    actor = journal.actor_of(os.environ.get("TASKS_OWNER", ""))
    events = [Event(new, "renumbered", **{"from": old, "uid": uid, "by": "merge"}) for uid, old, new in moved]
    return {journal.shard_name(actor): journal.encode(journal.entries(events, actor, journal.stamp()))}


def run_hook(argv: list[str]) -> int:
    """`tasks git-hook NAME [ARGS]`, run by the hooks `tasks init` installs: finish the
    board when the driver said a merge touched it. Never fails git: exit 0 whatever happens."""
    name = argv[0] if argv else ""
    if name == "post-rewrite" and argv[1:2] == ["amend"]:
        return 0
    repo = find_repo(Path.cwd())
    if repo is None:
        return 0
    from ..disk.store import Store, find_board

    try:
        boards = read_marker(repo).get("boards", []) if repo.marker.exists() else []
        if not boards and name == "post-merge":  # a pull may bring a merge another clone did not finish
            board = repo.relative(find_board(None, shared=False))  # this worktree's own files
            changed = repo.git("diff", "--name-only", "ORIG_HEAD", "HEAD", "--", board, check=False).splitlines()
            if any(merging.PENDING_KEY in _read_text(repo.top / path) for path in changed):
                boards = [board]
        for board in boards:
            result = settle(Store(repo.top / board), hook=name)
            for line in describe(result, board, hook_run=True):
                sys.stderr.write(f"tasks: {line}\n")
        if name == "post-merge":  # archived files git merged without the driver (a rename one side made)
            board = repo.relative(find_board(None, shared=False))
            if board not in boards:
                result = unshelve(repo, Store(repo.top / board))
                for line in describe(result, board, hook_run=True):
                    sys.stderr.write(f"tasks: {line}\n")
    except Exception as exc:  # a hook must not break git; check explains what is left
        if os.environ.get("TASKS_DEBUG"):
            raise
        sys.stderr.write(f"tasks: could not finish merging the board ({type(exc).__name__}: {exc}); run tasks check\n")
    return 0


def unshelve(repo: Repo, store: Store) -> Settled:
    """After a merge the driver had no part in: the archived tasks it changed that are open
    now, or linked to open work (reopened on the branch that did not archive them), come
    back to the live board (DESIGN §11). Only the archived files the merge changed are read."""
    board = repo.relative(store.root)
    changed = repo.git("diff", "--name-only", "ORIG_HEAD", "HEAD", "--", f"{board}/{ARCHIVE_FOLDER}/", check=False)
    ids = sorted({i for line in changed.splitlines() if (i := id_from_file_name(line.rpartition("/")[2])) is not None})
    result = Settled("none")
    if not ids:
        return result
    with store.writing():
        files, remove = {}, []
        for task_id in ids:
            try:
                record = store.read(task_id)
            except (Corrupt, NotFound):  # damaged: check names it; gone: nothing to bring back
                continue
            if task_id in store.archived and _belongs_live(store, record):
                files[file_name(task_id)] = encode(record)
                remove.append(archive_file_name(task_id))
                result.restored.append(task_id)
        for task_id in list(result.restored):  # a task back open names others: archived ones come back too
            opened = [r for r in [_decoded(files[file_name(task_id)])] if r["status"] in OPEN]
            for other in [i for r in opened for i in r["blocks"] + r["blockedBy"]]:
                try:
                    found = store.read(other)
                except (Corrupt, NotFound):
                    continue
                if other in store.archived and other not in result.restored:
                    files[file_name(other)] = encode(found)
                    remove.append(archive_file_name(other))
                    result.restored.append(other)
        result.restored.sort()
        store.write(files, remove=remove, new=list(files))
    result.how = "exact" if files else "none"
    result.written = list(result.restored)
    return result


def _decoded(data: bytes) -> Record:
    import json

    return json.loads(data)


def _belongs_live(store: Store, record: Record) -> bool:
    """An archived task that is open, or that an open task names (its lists name the
    task back, when the other task is open: DESIGN §2)."""
    if record["status"] in OPEN:
        return True
    for other in record["blockedBy"]:
        try:
            if store.read(other)["status"] in OPEN:
                return True
        except (Corrupt, NotFound):
            continue
    return False


def finish_for_check(store: Store) -> list[Problem]:
    """`check --fix` first finishes what a merge left, so the check sees the finished board."""
    from ..core.outcome import Problem

    settled = settle(store)
    done = settled.how in ("exact", "parked")
    return [
        Problem(None, None, "merge-unfinished", line, fixed=done, fixable=done)
        for line in describe(settled, store.root.name)
    ]


def check_problems(store: Store, fix: bool) -> list[Problem]:
    """What `check` adds in a clone: a file the driver gave up on, a merge not finished,
    a clone not wired to merge the board."""
    from ..core.outcome import Problem

    problems: list[Problem] = []
    repo = find_repo(store.root)
    if repo is None:
        return problems
    marker = read_marker(repo)
    for path, reason in sorted(marker.get("failed", {}).items()):
        name = path.rpartition("/")[2]
        problems.append(
            Problem(
                name,
                id_from_file_name(name),
                "merge-conflict",
                f"the merge driver could not merge {path} ({reason}), so git left it as a conflict: "
                "keep one side, then run tasks check --fix",
            )
        )
    waiting = repo.in_progress() if marker else None
    if waiting:
        problems.append(
            Problem(
                None,
                None,
                "merge-unfinished",
                f"git is in the middle of an operation ({waiting}) that touched the board; "
                "it is finished when git's merge is committed",
            )
        )
    elif marker and not fix and not problems:
        problems.append(
            Problem(
                None, None, "merge-unfinished", "a merge touched the board and was not finished: run tasks check --fix"
            )
        )
    wiring = wiring_problems(store.root)
    if wiring:
        hint = _init_command(store.root)
        problems += [Problem(None, None, "git-wiring", f"{message}; run {hint}") for message in wiring]
    return problems


def _init_command(root: Path) -> str:
    """The `tasks init` that wires this board's clone: a board other than the work tree's
    `.tasks` is named, or init would make a new board at the top."""
    repo = find_repo(root)
    if repo is not None and repo.relative(root) == ".tasks":
        return "tasks init"
    import shlex

    return f"tasks --dir {shlex.quote(str(root))} init"


def describe(result: Settled, board: str, hook_run: bool = False) -> list[str]:
    """What a person should hear after a settle, and what to commit."""
    if result.how == "waiting" and hook_run:
        return []  # a hook between the commits of a rebase or a series of picks: the last one finishes
    if result.how == "none" and not result.notes:
        return []
    lines = []
    for uid, old, new in result.moved:
        lines.append(f"#{old} became #{new} (uid {uid}): both branches had created a #{old}")
    if result.unblocked:
        lines.append("ready now: " + ", ".join(f"#{i}" for i in result.unblocked))
    if result.restored:
        lines.append("back from the archive (open after the merge): " + ", ".join(f"#{i}" for i in result.restored))
    lines += result.notes
    changed = len(result.written) + len(result.removed)
    if changed:
        lines.append(
            f"finished merging the board: {changed} file(s) changed in {board}; commit them: "
            + COMMIT_HINT.format(board=board)
        )
    return lines
