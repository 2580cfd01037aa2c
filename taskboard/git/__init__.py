"""Everything that runs git: the claim refs on a remote (claimrefs), wiring a clone (wiring), the merge driver (driver), tasks sync (sync)."""
