"""Hooks on task events (DESIGN §14): `tasks hook add EVENT CMD` keeps CMD in the clone's
git config (`tasks.hook.<event>`, never in a committed file: a hook is code that runs
on this machine). After a change through `tasks` (command line or tools) is committed,
each of its events runs the hooks named for it, with the event as JSON on stdin, in
the background: a small supervisor process runs the shell command with a timeout and,
when it fails, journals `hook-failed` (the tasks stay as they are). Merges, syncs and
git's own hooks never call this, so changes merged from elsewhere run no hook.

Cost when no hook is set: one read of the clone's git config file, and only after a
change (reads never look).
"""

from __future__ import annotations

import os
import sys

from ..core.errors import NotFound, UsageError
from ..core.fields import dumps, loads
from ..core.scopes import suppress

TYPE_CHECKING = False  # typing costs ~5 ms of start-up; annotations are strings anyway
if TYPE_CHECKING:
    import subprocess
    from typing import Any

    from ..core.outcome import Outcome
    from ..disk.store import Store

EVENTS = ("created", "ready", "claimed", "released", "failed", "completed", "reopened", "deleted")
# journal events that are hook events by another name: starting a task is taking it
_JOURNAL_EVENTS = {"started": "claimed"}
KEY = "tasks.hook"  # git config: tasks.hook.<event> = CMD (one value per hook)
DEFAULT_TIMEOUT = 60.0  # seconds a hook may run (TASKS_HOOK_TIMEOUT)
TAIL = 2000  # characters of a failing hook's output kept in the journal


# -- the configuration -------------------------------------------------------------------------


def _common_dir(store: Store) -> str | None:
    """The git common folder of the clone the board is in (None outside git)."""
    from ..disk.gitdirs import clone_folder

    return clone_folder(store.path)


def _git(common: str, *args: str) -> subprocess.CompletedProcess:
    from .run import git

    return git(f"--git-dir={common}", "config", "--local", *args)


def _clone(store: Store) -> str:
    common = _common_dir(store)
    if common is None:
        raise UsageError(
            f"hooks are kept in the git config of the clone; the board {store.path} is in no git work tree",
            "hook-no-git",
        )
    return common


def check_event(event: str) -> str:
    if event not in EVENTS:
        raise UsageError(f"unknown event {event!r}; hooks run on {', '.join(EVENTS)}", "hook-event")
    return event


def check_command(command: str) -> str:
    if not command.strip() or "\n" in command or "\x00" in command:
        raise UsageError("the hook's command is empty or has more than one line", "hook-command")
    return command


def add(store: Store, event: str, command: str) -> dict[str, str]:
    common = _clone(store)
    check_event(event)
    check_command(command)
    if {"event": event, "command": command} in configured_list(store):
        return {"event": event, "command": command}  # the same hook twice would run twice: once is enough
    done = _git(common, "--add", f"{KEY}.{event}", command)
    if done.returncode != 0:
        raise UsageError(f"git config refused the hook: {done.stderr.decode(errors='replace').strip()}")
    return {"event": event, "command": command}


def remove(store: Store, event: str, command: str | None = None) -> list[dict[str, str]]:
    """Remove the hooks of `event` (only the one running `command`, when given)."""
    common = _clone(store)
    check_event(event)
    gone = [h for h in configured_list(store) if h["event"] == event and command in (None, h["command"])]
    if not gone:
        what = f" running {command!r}" if command is not None else ""
        raise NotFound(f"no hook on {event}{what}", "no-hook")
    args = ["--fixed-value", "--unset-all", f"{KEY}.{event}", command] if command else ["--unset-all", f"{KEY}.{event}"]
    _git(common, *args)
    return gone


def configured_list(store: Store) -> list[dict[str, str]]:
    """Every hook of the clone: [{"event", "command"}], in the order git keeps them."""
    common = _common_dir(store)
    if common is None:
        return []
    try:
        with open(os.path.join(common, "config"), "rb") as config:
            if b"hook" not in config.read(1 << 20).lower():
                return []  # the common case: nothing to ask git
    except OSError:
        return []
    done = _git(common, "-z", "--get-regexp", r"^tasks\.hook\.")
    found = []
    for item in done.stdout.decode("utf-8", "replace").split("\0"):
        name, _, command = item.partition("\n")
        event = name.rpartition(".")[2]
        if item and event in EVENTS:
            found.append({"event": event, "command": command})
    return found


# -- running them ---------------------------------------------------------------------------------


def fire(store: Store, outcome: Outcome) -> None:
    """Run the hooks of every event of a committed change, in the background. Nothing
    here fails the change: a hook that cannot even start is journaled by its supervisor
    or, when that cannot start either, ignored."""
    if not (outcome.journaled or outcome.unblocked):
        return
    hooks = configured_list(store)
    if not hooks:
        return
    for event in events_of(outcome):
        for hook in hooks:
            if hook["event"] == event["event"]:
                _spawn(store, hook["command"], event)


def events_of(outcome: Outcome) -> list[dict[str, Any]]:
    """The hook events of a change: its journal entries that are hook events, then a
    `ready` event for each task it set free. Each carries the task's record when the
    change wrote it."""
    records = {record["id"]: record for record in outcome.written}
    if outcome.record is not None:
        records.setdefault(outcome.record["id"], outcome.record)
    found = []
    for entry in outcome.journaled:
        name = str(entry.get("event"))
        event = _JOURNAL_EVENTS.get(name, name)
        if event in EVENTS:
            found.append({**entry, "event": event, "record": records.get(entry.get("task"))})
    actor = outcome.journaled[0].get("actor", "") if outcome.journaled else ""
    for task_id in outcome.unblocked:
        found.append({"event": "ready", "task": task_id, "actor": actor, "record": records.get(task_id)})
    return found


def _spawn(store: Store, command: str, event: dict[str, Any]) -> None:
    import subprocess

    job = {"board": os.path.abspath(store.path), "command": command, "event": event, "timeout": _timeout()}
    try:
        supervisor = subprocess.Popen(
            [sys.executable, "-m", "taskboard.git.hooks"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # a Ctrl-C at the terminal does not reach it
            close_fds=True,
        )
        assert supervisor.stdin is not None
        supervisor.stdin.write(dumps(job).encode("utf-8"))
        supervisor.stdin.close()
    except OSError:
        return


def _timeout() -> float:
    raw = os.environ.get("TASKS_HOOK_TIMEOUT", "")
    try:
        value = float(raw)
    except ValueError:
        return DEFAULT_TIMEOUT
    return value if 0 < value <= 24 * 3600 else DEFAULT_TIMEOUT


def _top(board: str) -> str:
    """Where a hook runs: the top of the work tree the board is in, else the board's parent."""
    here = os.path.realpath(board)
    while True:
        if os.path.exists(os.path.join(here, ".git")):
            return here
        parent = os.path.dirname(here)
        if parent == here:
            return os.path.dirname(os.path.realpath(board))
        here = parent


def supervise(job: dict[str, Any]) -> None:
    """Run one hook (in its own process group, killed whole at the timeout) and journal
    its failure."""
    import signal
    import subprocess

    event, board = job["event"], job["board"]
    payload = dumps(event).encode("utf-8")
    env = {**os.environ, "TASKS_DIR": board, "TASKS_HOOK_EVENT": event["event"]}
    failure: dict[str, Any] | None = None
    try:
        hook = subprocess.Popen(
            ["/bin/sh", "-c", job["command"]],
            cwd=_top(board),
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    except OSError as exc:
        failure = {"exit": None, "output": f"could not start: {exc.strerror}"}
    else:
        try:
            output, _ = hook.communicate(payload, timeout=job["timeout"])
            if hook.returncode != 0:
                failure = {"exit": hook.returncode, "output": output.decode("utf-8", "replace")[-TAIL:]}
        except subprocess.TimeoutExpired:
            with suppress(OSError):
                os.killpg(hook.pid, signal.SIGKILL)
            output, _ = hook.communicate()
            failure = {"exit": None, "timed_out": True, "output": output.decode("utf-8", "replace")[-TAIL:]}
    if failure is not None:
        _journal_failure(board, job["command"], event, failure)


def _journal_failure(board: str, command: str, event: dict[str, Any], failure: dict[str, Any]) -> None:
    from ..core.outcome import Event
    from ..disk.store import Store
    from ..ops.board import Board

    store = Store(board)
    task = int(event["task"])
    with store.writing():
        change = Board(store, "").change()
        change.actor = str(event.get("actor") or "")
        change.guard = None
        change.commit([Event(task, "hook-failed", hook=event["event"], command=command, **failure)])


if __name__ == "__main__":  # the supervisor: one job as JSON on stdin
    supervise(loads(sys.stdin.buffer.read()))
