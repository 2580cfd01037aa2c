"""Acceptance gates: a shell command stored in a task (`metadata.gate`) that must pass
before the task is completed, by any front end (`update --status completed`, `done`,
MCP). A gate is code kept in the repository and run by whoever completes the task,
like a Makefile target; it never runs on a read, a check or a merge.

A gate may take minutes, so it runs outside the board lock. The lock dance:
1. Under the lock, the completion is rehearsed: every rule that could refuse it is
   checked (missing, deleted, blocked, held by another owner) and the task file must be
   one `check` finds sound; nothing is written. The rehearsal stops with the command to
   run and what the task looked like (status, owner, gate).
2. The lock is released and the gate runs in the top of the work tree (else the board's
   parent), in a process group of its own, killed whole at the timeout.
3. Passed: the lock is taken again and the completion runs for real, after checking the
   task still looks as it did in step 1 (else it is refused, nothing completed); the
   completed event carries the gate's result. Failed (or timed out): the task is not
   completed; the attempt, exit status and output tail are journaled, and the caller
   gets exit 7 (`gate_failed`).
`force` completes without running the gate and journals the override.
"""

from __future__ import annotations

import json
import os

from ..core.errors import GateFailed, Refused, UsageError
from ..core.fields import OPEN
from ..core.model import check_gate
from ..core.outcome import Data, Event, Outcome

TYPE_CHECKING = False  # typing costs ~5 ms of start-up; annotations are strings anyway
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path
    from typing import Any

    from ..core.fields import Record
    from ..disk.store import Store
    from .change import Change, Desk

DEFAULT_TIMEOUT = 600.0
OUTPUT_TAIL = 2000  # characters of a failed gate's output kept in the journal
MESSAGE_LINES = 15  # lines of it the error message shows


class GateResult(Data):
    """How a gate run ended: `exit` (None when it was killed at the timeout), the
    seconds it took, and the tail of its output (stdout and stderr, interleaved)."""

    def __init__(self, command: str, exit: int | None, seconds: float, output: str, timed_out: bool = False):
        self.command, self.exit, self.seconds, self.output, self.timed_out = command, exit, seconds, output, timed_out

    @property
    def passed(self) -> bool:
        return self.exit == 0 and not self.timed_out

    def summary(self) -> dict[str, Any]:
        """The result as the journal keeps it (the output only when the gate failed)."""
        found: dict[str, Any] = {"command": self.command, "exit": self.exit, "seconds": round(self.seconds, 1)}
        if self.timed_out:
            found["timedOut"] = True
        if not self.passed:
            found["output"] = self.output
        return found


# -- the fields ----------------------------------------------------------------------------


def gate_of(record: Record) -> str | None:
    """The task's gate command, or None when it has none."""
    metadata = record.get("metadata")
    gate = metadata.get("gate") if isinstance(metadata, dict) else None
    return gate if isinstance(gate, str) and gate.strip() else None


def check_timeout(value: float) -> float:
    import math

    if not math.isfinite(value) or value <= 0:
        raise UsageError(f"the gate timeout must be a number of seconds above 0, not {value}", "gate-timeout")
    return value


# -- completing ------------------------------------------------------------------------------


class _RunFirst(Exception):
    """The rehearsal's end: the gate to run before the completion, outside the lock."""

    def __init__(self, command: str, seen: tuple):
        super().__init__(command)
        self.command, self.seen = command, seen


def complete(board: Desk[Store], task_id: int, timeout: float | None, attempt: Callable[[Any], Outcome]) -> Outcome:
    """Complete through the gate: `attempt(check)` runs the board's update with `check`
    called under the lock just before its commit (see the module's lock dance)."""
    timeout = DEFAULT_TIMEOUT if timeout is None else check_timeout(timeout)
    try:
        return attempt(_rehearse(board))  # no gate to run: done (or refused) in one pass
    except _RunFirst as first:
        command, seen = first.command, first.seen
    result = run(command, work_tree_top(board.store.root), timeout, task_id)
    if not result.passed:
        recorded = _record_failure(board, task_id, result)
        failure = GateFailed(failure_text(task_id, result), "gate-failed", task=task_id, result=result.summary())
        failure.recorded = recorded  # the failed attempt it journaled: its hooks run (git.hooks)
        raise failure
    return attempt(_confirm(board, command, seen, result))


def _completing(change: Change, task_id: int) -> tuple[Record, Record] | None:
    """The task as it was and as it will be, when this change completes it."""
    before = change.before.get(task_id)
    edited = change.get(task_id)
    if not before or edited["status"] != "completed":
        return None
    original = json.loads(before)
    return None if original["status"] == "completed" else (original, edited)


def _seen(record: Record, command: str) -> tuple:
    return (record["status"], record["owner"], command)


def _rehearse(board: Desk[Store]) -> Callable[[Change, int, Outcome, bool], None]:
    def check(change: Change, task_id: int, outcome: Outcome, force: bool) -> None:
        completing = _completing(change, task_id)
        command = gate_of(completing[1]) if completing else None
        if completing is None or command is None:
            return
        if force:  # completed without running the gate: journaled as an override
            _gate_data(outcome, task_id, {"command": command, "overridden": True})
            outcome.events.append(Event(task_id, "forced", overrode="gate", command=command, by=board.caller))
            return
        problem = unsound(change, completing[0]) or _refused_by_input(command)
        if problem:
            raise Refused(
                f"#{task_id}'s gate is not run: {problem}; repair the task (see check) first",
                "gate-unsound",
                task=task_id,
            )
        raise _RunFirst(command, _seen(completing[0], command))

    return check


def _confirm(board: Desk[Store], command: str, seen: tuple, result: GateResult) -> Callable[..., None]:
    def check(change: Change, task_id: int, outcome: Outcome, force: bool) -> None:
        completing = _completing(change, task_id)
        now = _seen(completing[0], gate_of(completing[1]) or "") if completing else None
        if now != seen:
            raise Refused(
                f"#{task_id} changed while its gate ran; nothing was completed (complete it again)",
                "gate-raced",
                task=task_id,
            )
        _gate_data(outcome, task_id, result.summary())

    return check


def _gate_data(outcome: Outcome, task_id: int, data: dict[str, Any]) -> None:
    for event in outcome.events:
        if event.task == task_id and event.what == "completed":
            event.data["gate"] = data


def _refused_by_input(command: str) -> str | None:
    """Why input would refuse this gate (written by hand: two lines, a control character),
    as `check` reports it (rule metadata), or None."""
    try:
        check_gate(command)
    except UsageError as exc:
        return f"its gate command is not one that input allows ({exc.message})"
    return None


def unsound(change: Change, record: Record) -> str | None:
    """Why `check` would call the task file unsound (its edges disagree with its
    neighbours'), or None. The file itself parsed and validated when it was read."""
    task_id = record["id"]

    def original(other_id: int) -> Record | None:  # as on disk: the rehearsal has edited some already
        before = change.before.get(other_id)
        return json.loads(before) if before else change.find(other_id)

    for blocker_id in record["blockedBy"]:
        blocker = original(blocker_id)
        if blocker is None or blocker["status"] == "deleted" or task_id not in blocker["blocks"]:
            return f"its blockedBy names #{blocker_id}, which does not block it"
    for dependent_id in record["blocks"]:
        dependent = original(dependent_id)
        if dependent is None or dependent["status"] == "deleted":
            return f"it blocks #{dependent_id}, which is missing or deleted"
        if record["status"] in OPEN and task_id not in dependent["blockedBy"]:
            return f"it blocks #{dependent_id}, whose blockedBy does not name it"
    return None


def _record_failure(board: Desk[Store], task_id: int, result: GateResult) -> Outcome:
    """A failed attempt, as `release --failed` records one (counted in the runtime state,
    taskboard.ops.claims, through the change's hook), journaled with the gate's result; the
    task file stays as it is."""
    with board.store.writing():
        change = board.change()
        change.get(task_id)
        outcome = Outcome()
        if change.plan is not None:
            change.plan(change, task_id, outcome, failure=_headline(result), force=True)
        for event in outcome.events:
            if event.what == "failed":
                event.data["gate"] = result.summary()
        outcome.written = change.commit(outcome.events)
        outcome.journaled = change.journaled
    return outcome


def is_gate_failure(note: str) -> bool:
    """Whether a failed attempt's note is one a gate's failure wrote (see _headline)."""
    return note.startswith(("gate failed with exit status ", "gate timed out after ", "gate killed by signal "))


def _headline(result: GateResult) -> str:
    if result.timed_out:
        return f"gate timed out after {result.seconds:.0f} s"
    if result.exit is not None and result.exit < 0:
        return f"gate killed by signal {-result.exit}"
    return f"gate failed with exit status {result.exit}"


def failure_text(task_id: int, result: GateResult) -> str:
    """Why the completion was refused: the command, how it ended, its last output lines."""
    lines = result.output.rstrip("\n").splitlines()[-MESSAGE_LINES:]
    tail = "".join(f"\n  | {line}" for line in lines) if lines else "\n  (no output)"
    return f"#{task_id} was not completed: its {_headline(result)}: {result.command}{tail}"


# -- running --------------------------------------------------------------------------------


def work_tree_top(board: Path) -> Path:
    """Where a gate runs: the top of the git work tree the board is in (a `.git` folder,
    or file in a linked worktree), else the board's parent folder."""
    start = board.absolute().parent
    for folder in (start, *start.parents):
        if os.path.lexists(folder / ".git"):
            return folder
    return start


def run(command: str, cwd: Path, timeout: float, task_id: int) -> GateResult:
    """Run a gate with /bin/sh in a new session (its own process group), stdin closed,
    stdout and stderr into one temporary file; at the timeout the whole group is killed
    (counts as failed). The environment is the caller's plus TASKS_TASK_ID."""
    import signal
    import subprocess
    import tempfile
    import time

    env = {**os.environ, "TASKS_TASK_ID": str(task_id)}
    with tempfile.TemporaryFile() as output:
        started = time.monotonic()
        process = subprocess.Popen(
            ["/bin/sh", "-c", command],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        timed_out = False
        try:
            code: int | None = process.wait(timeout)
        except subprocess.TimeoutExpired:
            timed_out, code = True, None
            _kill_group(process.pid, signal.SIGKILL)
            process.wait()
        except BaseException:  # Ctrl-C: the gate's processes go with us
            _kill_group(process.pid, signal.SIGKILL)
            process.wait()
            raise
        seconds = time.monotonic() - started
        size = output.seek(0, os.SEEK_END)
        output.seek(max(0, size - OUTPUT_TAIL * 4))
        text = output.read().decode("utf-8", "replace")[-OUTPUT_TAIL:]
    return GateResult(command, code, seconds, text, timed_out)


def _kill_group(pid: int, sig: int) -> None:
    import contextlib

    with contextlib.suppress(ProcessLookupError, PermissionError):  # the group is gone already
        os.killpg(pid, sig)
