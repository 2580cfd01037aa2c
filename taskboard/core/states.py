"""A task's state as a person and `ready` see it: a pending task is ready or blocked,
held back (stuck, or claimed or completed elsewhere) counting as blocked; and how many
tasks are in each state. One rule for every view, the board's tally and the briefing.
"""

from __future__ import annotations

from . import graph
from .fields import STUCK_AFTER

TYPE_CHECKING = False  # typing costs ~5 ms of start-up; annotations are strings anyway
if TYPE_CHECKING:
    from collections.abc import Collection, Iterable, Mapping
    from typing import Any

    from .fields import Record

# The state a person cares about: a pending task is either ready or blocked.
STATES = ("blocked", "ready", "in_progress", "completed", "deleted")


def state(record: Record, lookup: graph.Lookup, held: Collection[int] = ()) -> str:
    """blocked / ready for a pending task, else its status. An in-progress task stays
    `in_progress` even with an open blocker (someone is on it); its card says what blocks it.
    One rule for every view: a pending task is ready when `ready` would list it, so one
    that `ready` holds back (`held`: stuck, or claimed or completed elsewhere, see
    held_back) counts as blocked, waiting on a retry or on another worktree."""
    status = record["status"]
    if status == "pending":
        return "ready" if graph.is_ready(record, lookup) and record["id"] not in held else "blocked"
    return status


def held_back(facts: Mapping[int, Mapping[str, Any]] | None) -> set[int]:
    """The tasks `ready` leaves out although no blocker holds them, from their runtime facts
    (taskboard.commands.runtime_facts): stuck, or claimed or completed elsewhere."""
    return {task_id for task_id, fact in (facts or {}).items() if fact.get("elsewhere") or is_stuck(fact)}


def is_stuck(fact: Mapping[str, Any]) -> bool:
    """Stuck, as Notes reads it: the runtime state says so, else as many failures as STUCK_AFTER."""
    attempts = fact.get("attempts")
    counted = attempts if isinstance(attempts, int) and not isinstance(attempts, bool) else 0
    return bool(fact.get("stuck", counted >= STUCK_AFTER))


def counts(records: Iterable[Record], lookup: graph.Lookup, held: Collection[int] = ()) -> dict[str, int]:
    """How many tasks are in each state; `tasks` counts the live (non-deleted) ones."""
    tally = dict.fromkeys(STATES, 0)
    for record in records:
        tally[state(record, lookup, held)] += 1
    tally["tasks"] = sum(tally[key] for key in STATES if key != "deleted")
    return tally
