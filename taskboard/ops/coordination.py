"""The claim authority port: who decides that a claim wins (DESIGN §9).

The board's own rules (taskboard.ops.claims) decide on this clone; claims through a git
remote are decided by its claim refs (taskboard.git.claimrefs). The board does not know
which: the front end that opens it hands it an authority, and the board asks that one
before it claims, renews or moves a task's status or owner. `LOCAL` is the board alone.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs ~5 ms of start-up; annotations are strings anyway
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from ..core.fields import Record
    from ..core.outcome import Note, Outcome
    from ..disk.store import Store
    from .change import Change  # the change about to be written (Board.change)

    Board = Any  # the board that asks (taskboard.ops.board), which imports this port: no arrow back
    Undo = Callable[[], None]


class Authority:
    """Claims decided on this clone alone: the board's own rules, nothing else asked."""

    def claim(self, board: Board, task_id: int | None, owner: str, lease: float | None) -> Outcome | None:
        """Take task_id, or the first claimable task in ready order, for owner; None: the
        authority has no say, and the board claims by its own rules (taskboard.ops.claims)."""
        return None

    def poll(
        self, store: Store, board: Board | None = None, catch_up: Callable[[Board], None] | None = None
    ) -> tuple[float, Callable[[], None]] | None:
        """While `claim --wait` waits (for `board`): (every how many seconds, what to fetch),
        or None; `catch_up` brings the board in when work ended elsewhere."""
        return None

    def renew(self, board: Board, task_id: int, lease: float | None) -> list[Note]:
        """Before the caller's lease on task_id is renewed here: what the authority said."""
        return []

    def held_elsewhere(self, store: Store, pending: Callable[[], list[Record]]) -> set[int]:
        """The ids among the pending records (`pending()`, made when asked for) that
        someone else holds where this clone does not see."""
        return set()

    def elsewhere(self, store: Store, records: list[Record]) -> dict[int, dict]:
        """For views, by id: who holds or completed each of these tasks where this clone
        does not see (`{"kind": "claimed" or "completed", "owner", "remote"}`)."""
        return {}

    def leased(self, store: Store, records: list[Record]) -> dict[int, float]:
        """By id: when the lease of each of these in-progress tasks' claim, kept where this
        clone does not see (a claim ref on the remote), runs out; a claim without a lease,
        or whose lease ran out, is left out."""
        return {}

    def guard(self, board: Board, change: Change, moved: list[Record]) -> tuple[list[Note], Undo | None]:
        """Before a change that moves status or owner is written: (notes, an undo if
        anything moved). Raising refuses the change: nothing is written."""
        return [], None

    def first(self, board: Board, run: Callable[[], Outcome]) -> Outcome:
        """Run a change that may move status or owner: what must happen before it takes
        the board lock happens here (the claim refs move first, outside the lock)."""
        return run()


LOCAL = Authority()


class Deferred(Authority):
    """An authority made on first use: opening a board costs no import of it. With
    `named`, made only for a board it names as having one (asked on every use until
    then: a long-lived server sees one configured later); until then the board alone
    decides, as the deferred authority does without one."""

    def __init__(self, make: Callable[[], Authority], named: Callable[[Store], bool] | None = None):
        self._make = make
        self._named = named
        self._made: Authority | None = None

    def _for(self, store: Store) -> Authority:
        if self._made is None:
            if self._named is not None and not self._named(store):
                return LOCAL
            self._made = self._make()
        return self._made

    def claim(self, board: Board, task_id: int | None, owner: str, lease: float | None) -> Outcome | None:
        return self._for(board.store).claim(board, task_id, owner, lease)

    def poll(
        self, store: Store, board: Board | None = None, catch_up: Callable[[Board], None] | None = None
    ) -> tuple[float, Callable[[], None]] | None:
        return self._for(store).poll(store, board, catch_up)

    def renew(self, board: Board, task_id: int, lease: float | None) -> list[Note]:
        return self._for(board.store).renew(board, task_id, lease)

    def held_elsewhere(self, store: Store, pending: Callable[[], list[Record]]) -> set[int]:
        return self._for(store).held_elsewhere(store, pending)

    def elsewhere(self, store: Store, records: list[Record]) -> dict[int, dict]:
        return self._for(store).elsewhere(store, records)

    def leased(self, store: Store, records: list[Record]) -> dict[int, float]:
        return self._for(store).leased(store, records)

    def guard(self, board: Board, change: Change, moved: list[Record]) -> tuple[list[Note], Undo | None]:
        return self._for(board.store).guard(board, change, moved)

    def first(self, board: Board, run: Callable[[], Outcome]) -> Outcome:
        return self._for(board.store).first(board, run)
