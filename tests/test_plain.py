"""`tasks get ID` piped prints taskboard.views.plain's text, without rich (render.task.task_view
in plain mode draws the same text): it fits the width and says everything, for every
kind of task."""

from __future__ import annotations

from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from taskboard.views import plain
from taskboard.views.render import common as common_views
from taskboard.views.render import task as task_views

NOW = 1_800_000_000.0
STAMP = "2026-11-29T18:03:11Z"

words = st.text(alphabet="abcdefghij KLMNOP-_.#修复ü🚀", min_size=1, max_size=60).filter(lambda s: s.strip())


@st.composite
def tasks(draw):
    status = draw(st.sampled_from(["pending", "in_progress", "completed", "deleted"]))
    metadata = {}
    if draw(st.booleans()):
        metadata["priority"] = draw(st.sampled_from([0, 1, 3, 4, 7, "high"]))
    if draw(st.booleans()):
        metadata["labels"] = sorted(set(draw(st.lists(st.sampled_from(["ui", "core", "docs"]), max_size=3))))
    if draw(st.booleans()):
        metadata["accept"] = draw(words)
    if draw(st.booleans()):
        metadata["gate"] = "make test"
    if draw(st.booleans()):
        metadata["component"] = draw(st.sampled_from(["cli", {"nested": [1, 2]}, 5]))
    blockers = draw(st.lists(st.integers(2, 6), max_size=3, unique=True))
    dependents = draw(st.lists(st.integers(7, 9), max_size=2, unique=True))
    record = {
        "id": 1,
        "subject": draw(words),
        "description": draw(st.sampled_from(["", "one line", "two\nlines with a rather long second line " * 3])),
        "status": status,
        "blockedBy": sorted(blockers),
        "blocks": sorted(dependents),
        "owner": draw(st.sampled_from(["", "alice", "a-very-long-agent-name-that-goes-on"])),
        "uid": "0123456789ab",
        "metadata": metadata,
        "createdAt": STAMP,
        "updatedAt": STAMP,
    }
    neighbours = {}
    for other in blockers + dependents:
        if draw(st.booleans()):
            neighbours[other] = {
                "id": other,
                "subject": draw(words),
                "description": "",
                "status": draw(st.sampled_from(["pending", "in_progress", "completed"])),
                "blockedBy": [],
                "blocks": [],
                "owner": draw(st.sampled_from(["", "bob"])),
            }
        else:
            neighbours[other] = None
    fact: dict = {}
    if draw(st.booleans()):
        fact["lease"] = {"holder": "alice", "expires": NOW + draw(st.sampled_from([-300, 90, 7200]))}
    if draw(st.booleans()):
        fact["attempts"] = draw(st.integers(1, 4))
        fact["last_failure"] = draw(st.sampled_from(["", "tests failed", "two\nlines"]))
    if draw(st.booleans()):
        fact["elsewhere"] = {
            "kind": draw(st.sampled_from(["claimed", "completed"])),
            "owner": "bob",
            "board": "/x/.tasks",
        }
    if draw(st.booleans()):
        fact["gate"] = {"ok": draw(st.booleans()), "exit": 1, "at": STAMP, "tail": "line a\nline b\n", "forced": False}
    if draw(st.booleans()):
        fact["events"] = [
            {
                "at": STAMP,
                "actor": draw(st.sampled_from(["alice", "an-agent-with-a-name-longer-than-twenty"])),
                "task": 1,
                "event": draw(st.sampled_from(["claimed", "failed", "note"])),
                "text": draw(words),
            }
            for _ in range(draw(st.integers(1, 7)))
        ]
    return record, neighbours, {1: fact}


@settings(max_examples=examples(300), deadline=None)
@given(tasks(), st.sampled_from([40, 80, 100, 160]))
def test_the_plain_view_fits_its_width_and_says_everything(task, width):
    record, neighbours, facts = task
    text = plain.task_text(record, neighbours, facts, NOW, width)
    lines = text.splitlines()
    assert all(plain.cell_len(line) <= width for line in lines), [
        line for line in lines if plain.cell_len(line) > width
    ]
    assert all(line == line.rstrip() for line in lines)
    flat = "".join(text.split())
    assert "".join(f"#1: {record['subject']}".split()) in flat
    for other in record["blockedBy"] + record["blocks"]:
        assert f"#{other}" in text
    for key in ("status", "priority", "labels", "owner", "blocked by", "blocks", "uid", "created", "updated"):
        assert any(line.startswith(key) for line in lines), key
    events = facts[1].get("events") or []
    if events:
        assert ("last events" if len(events) > 5 else "events") in lines
    # render draws the same text in plain mode
    assert (
        common_views.plain_text(task_views.task_view(record, neighbours, plain=True, facts=facts, now=NOW), width)
        == text
    )


def test_fold_breaks_between_words_and_cuts_long_ones():
    assert plain.fold("one two three", 7) == ["one two", "three"]
    assert plain.fold("abcdefghij xy", 4) == ["abcd", "efgh", "ij", "xy"]
    assert plain.fold("修复修复修复", 5) == ["修复", "修复", "修复"]
    assert plain.fold("a\n\nb", 10) == ["a", "", "b"]


@settings(max_examples=examples(200), deadline=None)
@given(tasks())
def test_the_colour_view_and_the_plain_text_show_the_same_rows(task):
    """A row added to one view and not the other fails here: the colour view's panel,
    borders taken off, holds the plain text's grid, description and events line for line."""
    import io

    from rich.console import Console

    record, neighbours, facts = task
    out = Console(file=io.StringIO(), width=400, no_color=True, color_system=None, highlight=False, markup=False)
    out.print(task_views.task_view(record, neighbours, plain=False, facts=facts, now=NOW))
    inside = [line.strip()[1:-1].rstrip() for line in out.file.getvalue().splitlines()[1:-1]]  # the panel's body
    inside = [line[1:] if line.startswith(" ") else line for line in inside]  # its left padding
    # what only colour shows differently: a dash for nothing, a state's symbol for its marker
    marker = {"blocked": "[ ]", "ready": "[ ]", "in_progress": "[>]", "completed": "[x]", "deleted": "[-]"}
    swaps = [("—", "-")] + [(symbol, marker[key]) for key, symbol in common_views.SYMBOLS.items()]
    for old, new in swaps:
        inside = [line.replace(old, new) for line in inside]
    body = plain.task_text(record, neighbours, facts, NOW, 396).splitlines()[1:]  # after the task's line
    assert inside[2:] == body, "\n".join(inside[2:])
