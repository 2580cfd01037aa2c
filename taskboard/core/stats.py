"""`tasks stats [--since WHEN]` (DESIGN §14): how work flows, from the journal alone.

Tasks finished per day (UTC), lead time (created → completed) and cycle time (first
claim → completed) as median and 90th percentile, the work in progress by age, and
failed attempts per task. Pure: it takes the journal's entries (oldest first) and the
time now; the front end reads the journal and words the result.
"""

from __future__ import annotations

import calendar
import math
import time

from .fields import TIME_FORMAT

TYPE_CHECKING = False  # typing costs ~5 ms of start-up; annotations are strings anyway
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

# Work in progress by age: (label, at most this many seconds old).
AGES = (("under 1 h", 3600), ("1 h – 1 day", 86400), ("1 – 7 days", 7 * 86400), ("over 7 days", math.inf))
_STARTS = ("claimed", "started")
_STOPS = ("released", "completed", "deleted", "reopened")


def seconds_of(stamp: Any) -> float | None:
    """A journal time (`2026-12-01T15:14:43.737Z`) as seconds since the epoch; None if it is none."""
    if not isinstance(stamp, str) or len(stamp) < 20 or not stamp.endswith("Z"):
        return None
    try:
        whole = calendar.timegm(time.strptime(stamp[:19], "%Y-%m-%dT%H:%M:%S"))
        fraction = float("0" + stamp[19:-1]) if stamp[19:-1] else 0.0
    except ValueError:
        return None
    return whole + fraction


def spread(values: list[float]) -> dict[str, Any]:
    """How many, the median and the 90th percentile (nearest rank), in seconds."""
    if not values:
        return {"count": 0, "median": None, "p90": None}
    ordered = sorted(values)
    middle = len(ordered) // 2
    median = ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
    p90 = ordered[max(0, math.ceil(0.9 * len(ordered)) - 1)]
    return {"count": len(ordered), "median": round(median, 3), "p90": round(p90, 3)}


def flow(entries: Iterable[dict[str, Any]], now: float, since: float | None = None) -> dict[str, Any]:
    """The figures of `tasks stats` from the journal's entries, oldest first: completions
    (and failures) counted from `since` on (all of them when None); work in progress as
    it stands now."""
    created: dict[int, float] = {}
    first_claim: dict[int, float] = {}
    in_progress: dict[int, tuple[float, str]] = {}  # task: (since when, who)
    finished: dict[int, float] = {}  # task: its last completion in the window
    failed: dict[int, int] = {}
    for entry in entries:
        task, event, at = entry.get("task"), entry.get("event"), seconds_of(entry.get("at"))
        if type(task) is not int or at is None:
            continue
        if event == "created":
            created.setdefault(task, at)
        elif event in _STARTS:
            first_claim.setdefault(task, at)
            in_progress[task] = (at, str(entry.get("owner") or entry.get("actor") or ""))
        elif event in _STOPS:
            in_progress.pop(task, None)
        if since is not None and at < since:
            continue
        if event == "completed":
            finished[task] = at
        elif event == "failed":
            failed[task] = failed.get(task, 0) + 1
    per_day: dict[str, int] = {}
    for at in finished.values():
        day = time.strftime("%Y-%m-%d", time.gmtime(at))
        per_day[day] = per_day.get(day, 0) + 1
    lead = [at - created[task] for task, at in finished.items() if task in created and created[task] <= at]
    cycle = [at - first_claim[task] for task, at in finished.items() if task in first_claim and first_claim[task] <= at]
    ordered = sorted(in_progress.items(), key=lambda item: item[1][0])
    ages = [now - began for _, (began, _) in ordered]
    wip = [
        {"task": task, "owner": owner, "since": _iso(began), "age": round(now - began, 3)}
        for task, (began, owner) in ordered
    ]
    return {
        "since": None if since is None else _iso(since),
        "until": _iso(now),
        "finished": {"total": len(finished), "per_day": [{"day": d, "count": per_day[d]} for d in sorted(per_day)]},
        "lead_time": spread(lead),
        "cycle_time": spread(cycle),
        "wip": {"total": len(wip), "by_age": _by_age(ages), "tasks": wip},
        "failed": [
            {"task": task, "attempts": count} for task, count in sorted(failed.items(), key=lambda i: (-i[1], i[0]))
        ],
    }


def _by_age(ages: Iterable[float]) -> dict[str, int]:
    found = {label: 0 for label, _ in AGES}
    for age in ages:
        label = next(label for label, most in AGES if age <= most)
        found[label] += 1
    return found


def _iso(moment: float) -> str:
    return time.strftime(TIME_FORMAT, time.gmtime(moment))


def parse_since(text: str, now: float | None = None) -> float:
    """`--since`: `7d`, `12h`, `2w` ago, or an ISO date or time (UTC unless it says)."""
    from .model import parse_when, span_seconds

    moment = time.time() if now is None else now
    span = span_seconds(text)
    if span is not None:
        return moment - span
    from .errors import UsageError

    try:
        found = seconds_of(parse_when(text, moment))
    except UsageError:
        raise UsageError(
            f"{text!r} is not a moment: give 7d, 12h, 2w (ago), a date 2026-12-24 or a time 2026-12-24T09:00 (UTC)",
            "since",
        ) from None
    assert found is not None  # parse_when gives the record's form
    return found


def duration_words(seconds: float | None) -> str:
    """A lead or cycle time for people: `45 s`, `12 min`, `3.5 h`, `2.1 days`."""
    if seconds is None:
        return "-"
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    if seconds < 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def stats_text(found: dict[str, Any]) -> str:
    """The figures as plain lines (piped, NO_COLOR)."""
    lines = [
        f"flow {'since ' + found['since'] if found['since'] else 'over the whole journal'}, until {found['until']}"
    ]
    lines.append(f"finished: {found['finished']['total']}")
    lines += [f"  {day['day']}  {day['count']}" for day in found["finished"]["per_day"]]
    for key, label in (
        ("lead_time", "lead time (created → completed)"),
        ("cycle_time", "cycle time (claimed → completed)"),
    ):
        figures = found[key]
        lines.append(
            f"{label}: median {duration_words(figures['median'])}, 90% within {duration_words(figures['p90'])} "
            f"({figures['count']} tasks)"
        )
    wip = found["wip"]
    lines.append(f"in progress: {wip['total']}")
    lines += [f"  {label}  {count}" for label, count in wip["by_age"].items() if count]
    lines += [f"    #{item['task']} {item['owner']}  {duration_words(item['age'])}" for item in wip["tasks"]]
    lines.append(
        "failed attempts: " + (str(sum(item["attempts"] for item in found["failed"])) if found["failed"] else "none")
    )
    lines += [f"  #{item['task']}  {item['attempts']}" for item in found["failed"]]
    return "\n".join(lines) + "\n"
