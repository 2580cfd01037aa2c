"""Operations on the board: each one all-or-nothing change under the board lock, and the rules of claims, gates, check, import and briefing."""
