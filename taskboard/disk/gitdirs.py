"""Git's folders, found the way git finds them but by reading `.git` (a folder, or a
file saying `gitdir: ...`) and `commondir`, never by running git: every command asks
whether a merge left its board to finish, and every change where its clone keeps hooks
and runtime state, so this is a few stats and small reads, and a leaf (os and stat).
"""

from __future__ import annotations

import os
import stat

MERGE_MARKER = "tasks-merge.json"  # in the work tree's own git folder: a merge that touched the board (git.driver)
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


def small_text(path: str, limit: int = 4096) -> str | None:
    """A small text file git keeps, or None: never waits on a FIFO planted in its place,
    never reads a device or a huge file whole."""
    try:
        fd = os.open(path, _READ_FLAGS)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, limit).decode("utf-8", "replace")
    except OSError:
        return None
    finally:
        os.close(fd)


def git_dir(top: str) -> str | None:
    """The git folder of the work tree whose top is `top`: `.git` itself, or the folder a
    `.git` file names (a linked worktree's own); None when `top` holds no usable `.git`."""
    dot_git = os.path.join(top, ".git")
    try:
        info = os.stat(dot_git)
    except OSError:
        return None
    if stat.S_ISDIR(info.st_mode):
        return dot_git
    if not stat.S_ISREG(info.st_mode):
        return None
    text = small_text(dot_git)
    if text is None or not text.startswith("gitdir:"):
        return None
    return os.path.normpath(os.path.join(top, text[len("gitdir:") :].strip()))


def common_dir(top: str) -> str | None:
    """Git's common folder when `top` is the top of a work tree: its git folder, followed
    by its `commondir` (linked worktrees); None when `top` holds no usable `.git`."""
    own = git_dir(top)
    if own is None:
        return None
    common = small_text(os.path.join(own, "commondir"))
    folder = os.path.join(own, common.strip()) if common and common.strip() else own
    return os.path.normpath(folder) if os.path.isdir(folder) else None


def clone_folder(board: str) -> str | None:
    """Git's common folder of the clone whose work tree holds `board` (None outside git):
    where a clone keeps what it never commits (its config, taskboard's hooks among it)."""
    here = os.path.realpath(board)
    while True:
        common = common_dir(here)
        if common is not None:
            return common
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def merge_pending(board: str) -> bool:
    """Did a merge leave the board at `board` to finish (git.driver's marker in the git
    folder of the work tree that holds it)?"""
    folder = os.path.abspath(board)
    while True:
        if os.path.exists(os.path.join(folder, ".git")):
            own = git_dir(folder)
            return own is not None and os.path.exists(os.path.join(own, MERGE_MARKER))
        parent = os.path.dirname(folder)
        if parent == folder:
            return False
        folder = parent
