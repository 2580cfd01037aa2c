"""Everything that runs git: the claim refs on a remote (claimrefs), wiring a clone (wiring), the merge driver (driver), tasks sync (sync)."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..ops.coordination import Authority


def claim_authority() -> Authority:
    """The claim authority a front end hands the board it opens: the claim refs of the
    remote `tasks init --remote` named, if any (taskboard.git.claimrefs), loaded on the
    first claim, not when the board is opened."""
    from ..ops.coordination import Deferred

    def claim_refs() -> Authority:
        from .claimrefs import ClaimRefs

        return ClaimRefs()

    return Deferred(claim_refs)
