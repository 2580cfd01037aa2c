"""Everything that runs git: the claim refs on a remote (claimrefs), wiring a clone (wiring), the merge driver (driver), tasks sync (sync)."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..disk.store import Store
    from ..ops.coordination import Authority


def claim_authority() -> Authority:
    """The claim authority a front end hands the board it opens: the claim refs of the
    remote `tasks init --remote` named, if any (taskboard.git.claimrefs), loaded on the
    first claim, not when the board is opened."""
    from ..ops.coordination import Deferred

    def claim_refs() -> Authority:
        from .claimrefs import ClaimRefs

        return ClaimRefs()

    return Deferred(claim_refs, named=_remote_named)


def _remote_named(store: Store) -> bool:
    """Whether `tasks init --remote` named a remote for this clone's claims: one stat,
    with no import of the claim refs (~3 ms of every `ready` and `claim`)."""
    import os

    from ..disk.state import REMOTE_NAME, state_of

    state = state_of(store)
    return state.shared and os.path.exists(os.path.join(state.folder, REMOTE_NAME))
