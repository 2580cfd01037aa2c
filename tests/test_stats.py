"""Issue 24, DESIGN §14, flow from the journal: `tasks stats [--since WHEN]`, finished per
day, lead and cycle time (median, 90th percentile), work in progress by age, failed
attempts per task; a table for people, --json for machines."""

from __future__ import annotations

import json

import pytest

from taskboard.core.stats import flow, parse_since, seconds_of, spread

DAY = 86400.0
T0 = seconds_of("2026-11-01T00:00:00.000Z")


def entry(task: int, event: str, at: float, **data) -> dict:
    import time

    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(at)) + f".{round(at % 1 * 1000):03d}Z"
    return {"at": stamp, "actor": data.pop("actor", "a"), "task": task, "event": event, **data}


def test_flow_from_hand_made_entries():
    assert T0 is not None
    journal = []
    # ten tasks: task n created at T0, claimed n hours later, completed on day 1 + n % 3
    for n in range(1, 11):
        journal.append(entry(n, "created", T0))
    for n in range(1, 11):
        journal.append(entry(n, "claimed", T0 + n * 3600, owner="a"))
    for n in range(1, 11):
        journal.append(entry(n, "completed", T0 + DAY * (1 + n % 3)))
    journal.sort(key=lambda e: e["at"])
    journal += [entry(11, "created", T0), entry(11, "claimed", T0 + 10, owner="bob")]  # still in progress
    journal += [entry(12, "created", T0), entry(12, "claimed", T0 + 20, owner="c"), entry(12, "released", T0 + 30)]
    journal += [entry(12, "failed", T0 + 30), entry(12, "failed", T0 + 40), entry(11, "failed", T0 + 50)]
    now = T0 + 10 * DAY
    found = flow(journal, now)
    assert found["finished"]["total"] == 10
    assert found["finished"]["per_day"] == [
        {"day": "2026-11-02", "count": 3},
        {"day": "2026-11-03", "count": 4},
        {"day": "2026-11-04", "count": 3},
    ]
    leads = sorted(DAY * (1 + n % 3) for n in range(1, 11))
    assert found["lead_time"] == {"count": 10, "median": (leads[4] + leads[5]) / 2, "p90": leads[8]}
    cycles = sorted(DAY * (1 + n % 3) - n * 3600 for n in range(1, 11))
    assert found["cycle_time"]["median"] == (cycles[4] + cycles[5]) / 2 and found["cycle_time"]["p90"] == cycles[8]
    assert found["wip"]["total"] == 1 and found["wip"]["tasks"][0]["task"] == 11
    assert found["wip"]["tasks"][0]["owner"] == "bob"
    assert found["wip"]["by_age"] == {"under 1 h": 0, "1 h – 1 day": 0, "1 – 7 days": 0, "over 7 days": 1}
    assert found["failed"] == [{"task": 12, "attempts": 2}, {"task": 11, "attempts": 1}]
    since = flow(journal, now, T0 + DAY * 2.5)  # only what finished (and failed) from then on
    assert since["finished"]["total"] == 3 and since["failed"] == []
    assert since["since"] == "2026-11-03T12:00:00Z"


def test_spread_and_since():
    assert spread([]) == {"count": 0, "median": None, "p90": None}
    assert spread([5.0]) == {"count": 1, "median": 5.0, "p90": 5.0}
    assert spread([float(n) for n in range(1, 11)]) == {"count": 10, "median": 5.5, "p90": 9.0}
    assert parse_since("2d", now=1000 * DAY) == 998 * DAY
    assert parse_since("2026-11-01", now=0) == T0


def test_stats_through_the_command_line(run):
    run("create", "A")
    run("create", "B")
    run("create", "C")
    run("--as", "alice", "claim", "1")
    run("done", "1")
    run("--as", "bob", "claim", "2")
    run("--as", "bob", "release", "2", "--failed", "--note", "flaky")
    run("--as", "bob", "claim", "3")
    found = run.json("stats")
    assert found["finished"]["total"] == 1 and len(found["finished"]["per_day"]) == 1
    assert found["lead_time"]["count"] == 1 and found["cycle_time"]["count"] == 1
    assert found["lead_time"]["median"] >= found["cycle_time"]["median"] >= 0
    assert found["wip"]["total"] == 1 and found["wip"]["tasks"][0]["task"] == 3
    assert found["wip"]["by_age"]["under 1 h"] == 1
    assert found["failed"] == [{"task": 2, "attempts": 1}]
    assert run.json("stats", "--since", "2030-01-01")["finished"]["total"] == 0
    text = run("stats").stdout
    assert "finished: 1" in text and "lead time (created → completed): median" in text
    assert "in progress: 1" in text and "#2  1" in text
    rich = run("stats", env={"FORCE_COLOR": "1", "COLUMNS": "100"}).stdout
    assert "Lead and cycle time" in rich and "Failed attempts" in rich


@pytest.mark.parametrize("since", ["soon", "2026-02-30", "3y"])
def test_a_since_that_is_no_moment_is_a_usage_error(run, since):
    result = run("stats", "--since", since, "--json", expect=2)
    assert "is not a moment" in json.loads(result.stderr.splitlines()[-1])["error"]["message"]
