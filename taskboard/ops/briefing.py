"""`tasks prime`: what an agent starting or resuming a session needs to know, as data.

What the caller holds (with its lease), what it could take next (the first few ready
tasks in ready order that are not reserved for someone else), what is stuck, and the
board's counts. The command line words it (taskboard.commands) and adds the rules of
the loop; nothing here names a command or a flag.
"""

from __future__ import annotations

from ..core.fields import OPEN, Record, labels_of, priority_of
from ..core.states import counts, held_back

TYPE_CHECKING = False  # typing costs ~5 ms of start-up; annotations are strings anyway
if TYPE_CHECKING:
    from typing import Any

    from .board import Board
    from .query import Listing

DEFAULT_READY = 5  # how many ready tasks a briefing names


class Briefing:
    """`caller` (may be ""), `board` (its folder), `counts` (views.counts), `held` (the
    caller's tasks in progress), `reserved` (pending tasks reserved for the caller),
    `ready` (the first few it could claim, in ready order) and `ready_total`, `stuck`;
    `facts`: the runtime state's facts by id (taskboard.claims.facts); `listing`: what
    was read (its damage included)."""

    def __init__(self, caller: str, board: str, listing: Listing):
        self.caller = caller
        self.board = board
        self.listing = listing
        self.counts: dict[str, int] = {}
        self.held: list[Record] = []
        self.reserved: list[Record] = []
        self.ready: list[Record] = []
        self.ready_total = 0
        self.stuck: list[Record] = []
        self.facts: dict[int, dict] = {}

    def item(self, record: Record) -> dict[str, Any]:
        """A task in a briefing: id, subject, status, owner, priority (2 when unset),
        labels, and its runtime facts (lease, attempts, stuck) when it has any."""
        found: dict[str, Any] = {
            "id": record["id"],
            "subject": record["subject"],
            "status": record["status"],
            "owner": record["owner"],
            "priority": priority_of(record),
            "labels": labels_of(record),
        }
        fact = self.facts.get(record["id"], {})
        for key in ("lease", "attempts", "stuck", "last_failure"):
            if key in fact:
                found[key] = fact[key]
        return found

    def document(self) -> dict[str, Any]:
        return {
            "caller": self.caller,
            "board": self.board,
            "counts": self.counts,
            "held": [self.item(record) for record in self.held],
            "reserved": [self.item(record) for record in self.reserved],
            "ready": [self.item(record) for record in self.ready],
            "ready_total": self.ready_total,
            "stuck": [self.item(record) for record in self.stuck],
        }


def brief(board: Board, limit: int = DEFAULT_READY) -> Briefing:
    """The briefing for the board's caller: one listing, one look at the runtime state."""
    from . import claims
    from .query import Query

    listing = board.listing()
    caller = board.caller
    found = Briefing(caller, str(board.store.root.absolute()), listing)
    open_records = [record for record in listing.records if record["status"] in OPEN]
    found.facts = claims.facts(board.store, open_records)
    found.counts = counts(listing.records, listing.lookup, held_back(found.facts))  # ready: what `ready` lists
    found.stuck = [record for record in open_records if found.facts.get(record["id"], {}).get("stuck")]
    if caller:
        mine = [record for record in open_records if record["owner"] == caller]
        found.held = [record for record in mine if record["status"] == "in_progress"]
        found.reserved = [record for record in mine if record["status"] == "pending"]
    takeable = [
        record for record in board.select(listing, Query(ready=True)) if record["owner"] in ("", caller) or not caller
    ]
    found.ready_total = len(takeable)
    found.ready = takeable[:limit]  # select gives ready tasks in ready order (graph.ready_order)
    return found
