"""The one git runner: every git the package runs starts in `git` here, and a git that
said no is told one way (`failure`: its first lines, else its exit status). `Git` is a
runner for the board's work tree that answers in the contract's errors: a git that
cannot start is a usage error, a remote that does not answer in time is busy.
"""

from __future__ import annotations

import os

from ..core.errors import Busy, UsageError

TYPE_CHECKING = False  # typing costs ~5 ms of start-up; annotations are strings anyway
if TYPE_CHECKING:
    import subprocess
    from pathlib import Path
    from typing import Protocol

    class Rooted(Protocol):
        """What the runner needs of a board (a taskboard.disk.store.Store is one): its folder."""

        @property
        def root(self) -> Path: ...


NETWORK_TIMEOUT = 60.0  # seconds a git command talking to the remote may take


class GitError(Exception):
    """git could not start, or said no: the message says so in the one way (failure)."""


def git(
    *args: str,
    cwd: str | os.PathLike | None = None,
    input: bytes | None = None,
    env: dict[str, str] | None = None,
    timeout: float | None = None,
) -> subprocess.CompletedProcess:
    """Run git with these arguments, its output captured; never raises for an exit status
    (`failure` words one). A git that cannot start is a GitError; one that runs past
    `timeout` raises subprocess.TimeoutExpired."""
    import subprocess  # here: `ready` asks git.claimrefs whether claims go to a remote, and must not pay for it

    try:
        return subprocess.run(
            ["git", *args], cwd=cwd, input=input, capture_output=True, env=env, timeout=timeout, check=False
        )
    except OSError as exc:
        raise GitError(f"cannot run git: {exc.strerror}") from None


def failure(done: subprocess.CompletedProcess) -> str:
    """What a git that said no said: its first three lines, else its exit status."""
    text = done.stderr.decode("utf-8", "replace").strip()
    lines = [line for line in text.splitlines() if line.strip()]
    return "; ".join(lines[:3]) or f"exit {done.returncode}"


def checked(done: subprocess.CompletedProcess, args: tuple[str, ...]) -> subprocess.CompletedProcess:
    """The run, or GitError when git said no."""
    if done.returncode != 0:
        raise GitError(f"git {args[0]} failed: {failure(done)}")
    return done


class Git:
    """git run in the board's work tree, never asking a person (no prompt, no password,
    ssh in batch mode) and in the C locale; a failure to start it is a usage error."""

    def __init__(self, store: Rooted):
        self.cwd = str(store.root if store.root.is_dir() else store.root.parent)

    def run(
        self,
        *args: str,
        input: bytes | None = None,
        network: bool = False,
        check: bool = False,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
    ) -> subprocess.CompletedProcess:
        env = {**os.environ, **(env or {}), "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "true", "LC_ALL": "C"}
        env.setdefault("GIT_SSH_COMMAND", "ssh -o BatchMode=yes -o ConnectTimeout=10")
        import subprocess

        try:
            done = git(*args, cwd=cwd or self.cwd, input=input, env=env, timeout=NETWORK_TIMEOUT if network else None)
        except subprocess.TimeoutExpired:
            raise Busy(f"git {args[0]} got no answer within {NETWORK_TIMEOUT:g} s", "remote-timeout") from None
        except GitError as exc:
            raise UsageError(str(exc), "no-git") from None
        if check and done.returncode != 0:
            raise UsageError(f"git {args[0]} failed: {failure(done)}", "git-failed")
        return done

    def out(self, *args: str, input: bytes | None = None, env: dict[str, str] | None = None) -> str:
        return self.run(*args, input=input, check=True, env=env).stdout.decode("utf-8", "replace").strip()
