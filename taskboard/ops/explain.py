"""`ready --explain ID` (DESIGN §14): why a task is or is not ready, every reason by
name: its status, its open blockers (by id and subject), its `after` time, a stuck
task's failures, a lease, a claim or completion held elsewhere (another worktree of the
clone, another machine). A read: it writes nothing and reads the task, its blockers
and the runtime state, never the whole board.
"""

from __future__ import annotations

import time

from ..core.errors import Corrupt, NotFound
from ..core.fields import OPEN, TIME_FORMAT, waits, when_of

TYPE_CHECKING = False  # typing costs ~5 ms of start-up; annotations are strings anyway
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from ..core.fields import Record
    from ..disk.store import Store
    from .change import Desk


def explain(
    board: Desk[Store], task_id: int, elsewhere: Callable[[Record], dict | None] | None = None
) -> dict[str, Any]:
    """`{"id", "subject", "status", "ready": bool, "reasons": [{"reason", "message", ...}]}`:
    `ready` is what `ready` would say of it; each reason keeps it out. `elsewhere` (a port
    the front end fills: claims on other machines, taskboard.remote) says who holds the
    task beyond this clone."""
    with board.store.reading():
        record = board.store.read(task_id)
        blockers = [_blocker(board, blocker_id) for blocker_id in record["blockedBy"]]
    reasons = _status_reasons(record)
    open_ones = [blocker for blocker in blockers if blocker is not None]
    if open_ones and record["status"] in OPEN:
        reasons.append(
            {
                "reason": "blocked",
                "message": "blocked by " + ", ".join(_blocker_words(blocker) for blocker in open_ones),
                "blockers": open_ones,
            }
        )
    if record["status"] == "pending" and waits(record):
        after = when_of(record, "after")
        reasons.append({"reason": "after", "message": f"waits until {after} (after)", "after": after})
    reasons += _runtime_reasons(board, record, elsewhere)
    return {
        "id": record["id"],
        "subject": record["subject"],
        "status": record["status"],
        "ready": not reasons,
        "reasons": reasons,
    }


def _status_reasons(record: Record) -> list[dict[str, Any]]:
    status = record["status"]
    if status == "pending":
        return []
    held = f", held by {record['owner']}" if record["owner"] else ""
    words = {
        "in_progress": f"in progress{held}",
        "completed": "completed (reopen it to work on it again)",
        "deleted": "deleted",
    }
    return [{"reason": "status", "message": words[status], "status": status}]


def _blocker(board: Desk[Store], blocker_id: int) -> dict[str, Any] | None:
    """An open blocker as the explanation names it; None when it no longer blocks."""
    try:
        blocker = board.store.read(blocker_id)
    except NotFound:
        return None
    except Corrupt as exc:  # unreadable: it counts as open (nothing is called ready on a guess)
        return {"id": blocker_id, "subject": None, "status": "unreadable", "owner": "", "problem": exc.message}
    if blocker["status"] not in OPEN:
        return None
    return {"id": blocker_id, "subject": blocker["subject"], "status": blocker["status"], "owner": blocker["owner"]}


def _blocker_words(blocker: dict[str, Any]) -> str:
    if blocker["status"] == "unreadable":
        return f"#{blocker['id']} (unreadable: {blocker['problem']})"
    state = "in progress" + (f", {blocker['owner']}" if blocker["owner"] else "")
    return f"#{blocker['id']} {blocker['subject']} ({state if blocker['status'] == 'in_progress' else 'pending'})"


def _runtime_reasons(
    board: Desk[Store], record: Record, elsewhere: Callable[[Record], dict | None] | None
) -> list[dict[str, Any]]:
    """Stuck, a lease, held or completed elsewhere: what the runtime state says."""
    from . import claims

    if record["status"] not in OPEN:
        return []
    fact = claims.facts(board.store, [record]).get(record["id"], {})
    if elsewhere is not None and "elsewhere" not in fact:
        fact["elsewhere"] = elsewhere(record)
    reasons = []
    if fact.get("stuck"):
        last = f" (last: {fact['last_failure']})" if fact.get("last_failure") else ""
        reasons.append(
            {
                "reason": "stuck",
                "message": f"stuck: failed {fact['attempts']} times{last}; put it back with a retry",
                "attempts": fact["attempts"],
            }
        )
    lease = fact.get("lease")
    if lease and record["status"] == "in_progress":
        left = lease["expires"] - time.time()
        words = (
            f"lease of {lease['holder']} expired: anyone may take it over"
            if lease["expired"]
            else f"leased to {lease['holder']} for {int(left // 60)} min {int(left % 60)} s more"
        )
        expires = time.strftime(TIME_FORMAT, time.gmtime(lease["expires"]))
        reasons.append({"reason": "lease", "message": words, "holder": lease["holder"], "expires": expires})
    other = fact.get("elsewhere")
    if other:
        where = f"on another machine (through {other['remote']})" if other.get("remote") else "in another worktree"
        verb = "completed" if other["kind"] == "completed" else "claimed"
        who = f" by {other['owner']}" if other.get("owner") else ""
        reasons.append({"reason": "elsewhere", "message": f"{verb}{who} {where}", **other})
    return reasons


def explanation_text(found: dict[str, Any]) -> str:
    """The explanation for a person: one line, then one line per reason."""
    head = f"#{found['id']} {found['subject']}"
    if found["ready"]:
        return f"{head} is ready\n"
    return f"{head} is not ready:\n" + "".join(
        f"  {reason['reason']}: {reason['message']}\n" for reason in found["reasons"]
    )
