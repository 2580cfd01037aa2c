"""`tasks merge-driver %O %A %B %P`: what git runs for each task file both sides of a
merge changed (the wiring is taskboard.gitwire's). Git starts it once per such file, so
it stays lean: json, os, sys and the pure merge (taskboard.merging), no pathlib, no
subprocess, nothing synced to disk (git reads %A back at once; a crash is a failed merge).

It writes merging.merge_file's answer into %A and exits 0; on damaged input or any error
it writes whole-file conflict markers (both sides complete) and exits 1: an ordinary git
conflict, never a half-merged file. Either way it notes in the work tree's git folder
(MARKER) that the board needs finishing, from which operation, and what failed.
"""

from __future__ import annotations

import os
import stat
import sys

from ..core.fields import dumps, loads
from ..core.model import id_from_file_name
from ..disk.gitdirs import MERGE_MARKER as MARKER  # a merge that touched the board
from ..disk.gitdirs import git_dir as find_git_dir

MAX_MARKER = 1 << 20  # the marker names boards and failed files: far below this
CACHE = "tasks-merge-cache"  # beside it: this driver's answers by blob ids, for the shell words in front of it
_PICKS = r"^(?:pick|p|reword|r|edit|e|squash|s|fixup|f)\s+([0-9a-f]{40})\b"


def _picks(todo: str) -> list[str]:
    """The commits a rebase's todo list picks, in order (`re` is imported here: every
    command loads this module, and only a rebase reads a todo list)."""
    import re

    return re.findall(_PICKS, todo, re.MULTILINE)


def main(argv: list[str]) -> int:
    """Git hands over the ancestor, ours and theirs as files (the ancestor empty when both
    sides added the file) and the path; the result goes into ours (%A)."""
    if len(argv) != 4:
        sys.stderr.write("usage: tasks merge-driver BASE OURS THEIRS PATH (git runs it: see tasks init)\n")
        return 2
    from ..core import merging

    base_path, ours_path, theirs_path, path = argv
    git_dir = find_git_dir(os.getcwd())  # git runs a driver at the top of the work tree
    board = board_of(path)
    if git_dir is not None:
        try:  # noqa: SIM105 - contextlib is one more import on a path git starts a thousand times
            answer_ahead(git_dir, board)
        except Exception:  # only ever a shortcut: every file is still merged right below if it fails
            pass
    versions = []
    try:
        for name in (base_path, ours_path, theirs_path):
            with open(name, "rb") as f:
                versions.append(f.read())
        base, ours, theirs = versions
        merged = merging.merge_file(base, ours, theirs, os.path.basename(path))
    except merging.Unmergeable as exc:
        return _failed(git_dir, board, path, ours_path, versions, str(exc))
    except Exception as exc:  # a bug or an unreadable file: still an ordinary conflict, never a half merge
        return _failed(git_dir, board, path, ours_path, versions, f"{type(exc).__name__}: {exc}")
    _replace(ours_path, merged, git_dir)
    if git_dir is not None:
        note_run(git_dir, board)
    return 0


def board_of(path: str) -> str:
    """The board a task file belongs to: its folder, or for an archived task
    (`BOARD/archive/task_N.json`, DESIGN §11) the folder above, unless the archive
    folder is a board of its own (it holds the board's `.gitattributes`)."""
    folder = os.path.dirname(path) or "."
    if os.path.basename(folder) == "archive" and not os.path.exists(os.path.join(folder, ".gitattributes")):
        return os.path.dirname(folder) or "."
    return folder


def _failed(git_dir: str | None, board: str, path: str, ours_path: str, versions: list[bytes], reason: str) -> int:
    ours = versions[1] if len(versions) > 1 else b""
    theirs = versions[2] if len(versions) > 2 else b""
    conflict = b"<<<<<<< ours\n" + _line_end(ours) + b"=======\n" + _line_end(theirs) + b">>>>>>> theirs\n"
    try:
        _replace(ours_path, conflict, git_dir)
        if git_dir is not None:
            note_run(git_dir, board, (path, reason))
    except OSError:
        pass
    sys.stderr.write(f"tasks merge-driver: {path}: {reason}; left as a conflict for you to resolve\n")
    return 1


def _line_end(data: bytes) -> bytes:
    return data if not data or data.endswith(b"\n") else data + b"\n"


def _replace(path: str, data: bytes, scratch: str | None) -> None:
    """A file whole or not at all: written beside it (or in the git folder), then renamed."""
    temp = os.path.join(scratch or os.path.dirname(os.path.abspath(path)), f".tasks-{os.getpid()}.tmp")
    try:
        with open(temp, "wb") as out:
            out.write(data)
        os.replace(temp, path)
    except OSError:
        from contextlib import suppress  # the rare path pays for the import

        with suppress(OSError):
            os.unlink(temp)
        with open(path, "wb") as out:  # another file system: git reads %A only after we exit
            out.write(data)


# -- the git folder, read without spawning git ------------------------------------------------


def read_small(path: str, limit: int = 4096) -> str | None:
    """A small text file git keeps (`.git` naming a worktree's folder, `commondir`), or None:
    never waits on a FIFO planted in its place, never reads a device or a huge file whole."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, limit).decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    finally:
        os.close(fd)


def read_marker(git_dir: str) -> dict:
    """The marker, or {} when it is missing, damaged, or not a regular file (a FIFO planted
    in its place is never waited on)."""
    try:
        found = loads(read_small(os.path.join(git_dir, MARKER), MAX_MARKER) or "{}")
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


def note_run(git_dir: str, board: str, failure: tuple[str, str] | None = None) -> None:
    """Record that the driver merged a file of `board` (or could not), for the operation
    running now; written only when it changes (git runs the driver once per file)."""
    current = {"head": _head(git_dir), **_operation(git_dir)}
    old = read_marker(git_dir)
    marker = dict(old) if all(old.get(key) == value for key, value in current.items()) else dict(current)
    marker["boards"] = sorted({*marker.get("boards", []), board})
    if failure is not None:
        marker["failed"] = {**marker.get("failed", {}), failure[0]: failure[1]}
    if marker != old:
        _replace(
            os.path.join(git_dir, MARKER),
            (dumps(marker, indent=2, sort_keys=True, ascii=True) + "\n").encode(),
            git_dir,
        )


def _operation(git_dir: str) -> dict:
    """Which git operation runs the driver now, and what finishing it needs to know.
    During a rebase git's own state names the base and every picked commit; a merge has
    no MERGE_HEAD yet while its drivers run, and is known by its reflog action."""
    rebase = os.path.join(git_dir, "rebase-merge")
    if os.path.isdir(rebase):
        try:
            with open(os.path.join(rebase, "onto"), encoding="utf-8") as f:
                onto = f.read().strip()
            todo = ""
            for name in ("done", "git-rebase-todo"):
                if os.path.exists(os.path.join(rebase, name)):
                    with open(os.path.join(rebase, name), encoding="utf-8") as f:
                        todo += f.read()
        except (OSError, UnicodeDecodeError):
            return {"op": "other"}
        return {"op": "rebase", "onto": onto, "picks": list(dict.fromkeys(_picks(todo)))}
    if os.environ.get("GIT_REFLOG_ACTION", "").startswith(("merge", "pull")):
        return {"op": "merge"}
    return {"op": "other"}


def _head(git_dir: str) -> str:
    """HEAD's commit, read from the git folder."""
    try:
        with open(os.path.join(git_dir, "HEAD"), encoding="utf-8") as f:
            text = f.read().strip()
        if not text.startswith("ref:"):
            return text
        ref = text[4:].strip()
        common = git_dir
        if os.path.exists(os.path.join(git_dir, "commondir")):
            with open(os.path.join(git_dir, "commondir"), encoding="utf-8") as f:
                common = os.path.normpath(os.path.join(git_dir, f.read().strip()))
        for folder in (git_dir, common):
            if os.path.isfile(os.path.join(folder, ref)):
                with open(os.path.join(folder, ref), encoding="utf-8") as f:
                    return f.read().strip()
        with open(os.path.join(common, "packed-refs"), encoding="utf-8") as f:
            for line in f:
                if line.rstrip("\n").endswith(" " + ref):
                    return line.split()[0]
    except (OSError, UnicodeDecodeError):
        pass
    return ""


# -- answering ahead -----------------------------------------------------------------------------


def answer_ahead(git_dir: str, board: str) -> None:
    """On the first run of a merge (or of a rebase's pick), merge every task file of the
    board both sides changed, and keep each answer under the three versions' blob ids:
    git then runs the shell words in front of this driver (gitwire.driver_command), which
    find the answer without starting Python. Which commit is "theirs" is read from the
    rebase's state or the merge's reflog action; a wrong guess costs only the shortcut,
    since an answer is used only for exactly the bytes it was computed from."""
    from ..core import merging
    from .run import checked
    from .run import git as run_git

    def git(*args: str, data: bytes | None = None) -> bytes:
        return checked(run_git(*args, input=data), args).stdout

    operation = _operation(git_dir)
    theirs = _theirs(git_dir, operation, git)
    if theirs is None:
        return
    cache = os.path.join(git_dir, CACHE)
    made_for = f"{_head(git_dir)} {theirs} {board}\n"
    try:
        with open(os.path.join(cache, ".made-for"), encoding="utf-8") as f:
            if made_for in f.read():
                return
    except OSError:
        pass
    if operation["op"] == "rebase":
        base = git("rev-parse", f"{theirs}^").decode().strip()
    else:
        base = git("merge-base", "HEAD", theirs).decode().strip()
    prefix = board.rstrip("/") + "/"
    changed = [
        set(git("diff", "--name-only", "-z", "--no-renames", base, side, "--", prefix).decode().split("\0"))
        for side in ("HEAD", theirs)
    ]
    paths = sorted(p for p in changed[0] & changed[1] if id_from_file_name(os.path.basename(p)) is not None)
    if not paths:
        return
    blobs = [_tree(git, commit, prefix) for commit in (base, "HEAD", theirs)]
    empty = git("hash-object", "-t", "blob", "--stdin", data=b"").decode().strip()
    wanted = sorted({tree[p] for tree in blobs for p in paths if p in tree})
    content = _cat(git, wanted)
    os.makedirs(cache, exist_ok=True)
    for path in paths:
        ids = [tree.get(path, empty) for tree in blobs]
        if ids[1] == empty or ids[2] == empty:
            continue
        try:
            merged = merging.merge_file(
                content.get(ids[0], b""), content[ids[1]], content[ids[2]], os.path.basename(path)
            )
        except merging.Unmergeable:
            continue  # the driver itself says why, when git asks for this file
        _replace(os.path.join(cache, "-".join(ids)), merged, cache)
    with open(os.path.join(cache, ".made-for"), "a", encoding="utf-8") as f:
        f.write(made_for)


def _theirs(git_dir: str, operation: dict, git) -> str | None:
    """The commit merged in: a rebase's current pick, else the one a merge or pull names."""
    if operation["op"] == "rebase":
        try:
            with open(os.path.join(git_dir, "rebase-merge", "done"), encoding="utf-8") as f:
                picks = _picks(f.read())
        except OSError:
            return None
        return picks[-1] if picks else None
    if operation["op"] != "merge":
        return None
    words = os.environ.get("GIT_REFLOG_ACTION", "").split()
    if words[:1] == ["merge"] and len(words) == 2:
        return git("rev-parse", "--verify", "-q", f"{words[1]}^{{commit}}").decode().strip() or None
    if words[:1] == ["pull"]:
        with open(os.path.join(git_dir, "FETCH_HEAD"), encoding="utf-8") as f:
            heads = [line.split()[0] for line in f if line.strip() and "\tnot-for-merge\t" not in line]
        return heads[0] if len(heads) == 1 else None
    return None


def _tree(git, commit: str, prefix: str) -> dict[str, str]:
    """path -> blob id of the task files under `prefix` in `commit`."""
    found = {}
    for item in git("ls-tree", "-z", commit, "--", prefix).split(b"\0"):
        meta, _, name = item.partition(b"\t")
        if meta:
            found[name.decode("utf-8", "surrogateescape")] = meta.split()[2].decode()
    return found


def _cat(git, ids: list[str]) -> dict[str, bytes]:
    out = git("cat-file", "--batch", data="".join(f"{i}\n" for i in ids).encode())
    found, at = {}, 0
    for blob in ids:
        end = out.index(b"\n", at)
        size = int(out[at:end].split()[2])
        found[blob] = out[end + 1 : end + 1 + size]
        at = end + 1 + size + 1
    return found
