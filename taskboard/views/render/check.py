"""`check`: the problems found, for people."""

from __future__ import annotations

import sys

# -- check ----------------------------------------------------------------------------


def show_check(problems: list[dict], ok: bool, plain: bool) -> None:
    for problem in problems:
        mark = "fixed" if problem["fixed"] else problem["rule"]
        sys.stderr.write(f"{mark}: {problem['message']}\n")
    sys.stderr.write(
        "board is sound\n" if ok else f"{sum(not (p['fixed'] or p.get('notice')) for p in problems)} problem(s) left\n"
    )
