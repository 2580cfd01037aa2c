"""Whole screens as a person sees them: every view at 40, 80 and 160 columns and 24 and
50 lines, on a 25-task plan under way, a finished one and one in trouble (stale leases,
stuck tasks, a failed gate: facts made up here, as the command layer will pass them);
the colour language checked on the styles themselves; golden snapshots of whole views
at 80 columns (UPDATE_GOLDEN=1 rewrites them after a deliberate change)."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import TASKS, Run
from rich.cells import cell_len
from rich.console import Console
from rich.style import Style
from test_render import (
    ESCAPE,
    EXAMPLE,
    NODE,
    SUMMARY_PHRASE,
    board_columns,
    draw,
    expected_columns,
    fits,
    flat,
    split_legend,
    with_neighbours,
    write_board,
)

from taskboard.core import graph
from taskboard.core.model import new_record
from taskboard.disk.store import Store
from taskboard.ops.board import Board
from taskboard.ops.query import Query
from taskboard.views.render import board as board_views
from taskboard.views.render import common as common_views
from taskboard.views.render import graph as graph_views
from taskboard.views.render import task as task_views
from taskboard.views.render import tasklist as tasklist_views

GOLDEN = Path(__file__).resolve().parent / "golden"
WIDTHS = (40, 80, 160)
HEIGHTS = (24, 50)
NOW = 1_796_000_000.0  # "now" for the facts below: 2026-11-29T...; every time is printed relative to it
SUBJECTS = [
    "Map every caller of load_config",
    "Write characterisation tests for config parsing",
    "Design the Settings object and its defaults",
    "Port CLI entry points to Settings",
    "Port the web app to Settings",
    "Port the batch jobs to Settings",
    "Remove the legacy loader and settings.ini",
    "Update the deployment docs for the new variables",
    "Release 2.0 with the new settings",
    "Add schema validation for environment variables",
    "Fix [red] markup in the settings banner",
    "Benchmark config load time on cold start",
    "Write the migration guide for plugin authors",
    "Teach the linter about deprecated keys",
    "Support TOML overrides per environment",
    "Add secrets provider for vault",
    "Wire secrets provider into the web app",
    "Audit logging of changed settings",
    "Translate error messages",
    "Ship a settings diff command",
    "Deprecation warnings for old env names",
    "Update the Helm chart",
    "Canary rollout of 2.0",
    "Remove compatibility shims after 2.1",
    "Retrospective and cleanup",
]
BLOCKERS = {
    2: [1],
    3: [1],
    4: [2, 3],
    5: [2, 3],
    6: [3],
    7: [4, 5, 6],
    8: [3],
    9: [7, 8],
    10: [3],
    12: [3],
    13: [8],
    14: [10],
    15: [3],
    16: [3],
    17: [16, 5],
    18: [5],
    19: [10],
    20: [15],
    21: [7],
    22: [8],
    23: [9, 22],
    24: [23],
    25: [24],
}
METADATA = {
    4: {"priority": 1},
    11: {"priority": 0, "labels": ["bug", "ui"]},
    17: {"priority": 1, "accept": "the web app reads its secrets from vault", "gate": "pytest tests/web"},
    19: {"labels": ["ui"]},
    22: {"priority": 4, "labels": ["ops"]},
}
KINDS = {
    # kind: (done, in progress with owner)
    "plan": ((1, 3), {2: "codex-agent-2", 16: "claude-agent-1", 12: None}),
    "finished": (tuple(range(1, 26)), {}),
    "trouble": ((1, 2, 3), {4: "agent-c", 5: "agent-a", 16: "agent-b"}),
}


def plan_records(kind: str) -> list[dict]:
    """The 25-task plan in one of KINDS, with its edges kept as the board keeps them
    (a completed blocker stays only in its own `blocks`). Tasks finish a minute apart,
    in id order, so "most recently finished" is well defined."""
    done, working = KINDS[kind]
    records = {
        i: new_record(i, subject, "", "", dict(METADATA.get(i, {})), "2026-11-29T18:00:00Z")
        for i, subject in enumerate(SUBJECTS, 1)
    }
    for task_id, record in records.items():
        record["uid"] = f"{task_id:012x}"  # fixed, for the golden snapshots
    for dependent, blockers in BLOCKERS.items():
        for blocker in blockers:
            records[blocker]["blocks"].append(dependent)
            records[dependent]["blockedBy"].append(blocker)
    for task_id in done:
        records[task_id]["status"] = "completed"
        records[task_id]["owner"] = f"agent-{task_id % 3}"
        records[task_id]["updatedAt"] = f"2026-11-29T19:{task_id:02d}:00Z"
    for task_id, owner in working.items():
        if owner is None:  # a reservation: pending with an owner
            records[task_id]["owner"] = "bob"
            continue
        records[task_id]["status"] = "in_progress"
        records[task_id]["owner"] = owner
    for record in records.values():
        record["blockedBy"] = sorted(b for b in record["blockedBy"] if records[b]["status"] != "completed")
        record["blocks"].sort()
    return list(records.values())


def trouble_facts() -> dict[int, dict]:
    """What the runtime state and the journal will say about the trouble plan."""
    events = [
        {"at": "2026-11-29T18:00:00Z", "actor": "alice", "task": 4, "event": "created"},
        {"at": NOW - 7200, "actor": "agent-b", "task": 4, "event": "claimed", "owner": "agent-b"},
        {"at": NOW - 6000, "actor": "agent-b", "task": 4, "event": "failed", "note": "tests hang"},
        {"at": NOW - 5000, "actor": "agent-b", "task": 4, "event": "released"},
        {"at": NOW - 3600, "actor": "agent-c", "task": 4, "event": "claimed", "owner": "agent-c"},
        {"at": NOW - 1500, "actor": "agent-c", "task": 4, "event": "note", "text": "parser half done"},
        {"at": NOW - 1200, "actor": "agent-c", "task": 4, "event": "edited", "fields": ["description"]},
    ]
    return {
        4: {"lease": {"holder": "agent-c", "expires": NOW - 240}, "attempts": 1, "events": events},
        5: {"lease": {"holder": "agent-a", "expires": NOW + 660}},
        6: {"attempts": 3},
        8: {
            "attempts": 2,
            "gate": {"ok": False, "exit": 1, "at": NOW - 300, "tail": "FAILED tests/test_docs.py\n1 failed, 40 passed"},
        },
        16: {"gate": {"ok": True, "exit": 0, "at": NOW - 30}},
    }


@pytest.fixture(scope="module", params=sorted(KINDS))
def plan(request, tmp_path_factory) -> tuple[str, Board, dict]:
    kind = request.param
    board = write_board(tmp_path_factory.mktemp(kind) / ".tasks", plan_records(kind))
    return kind, board, trouble_facts() if kind == "trouble" else {}


def unframed(text: str) -> str:
    """A drawn view as one line of words, panel and table frames left out."""
    return flat(re.sub(r"[│╭╮╰╯─]", " ", text))


def view_of(name: str, board: Board, facts: dict, plain: bool, height: int | None = None):
    listing = board.listing()
    if name == "list":
        return tasklist_views.list_view(board.select(listing, Query()), listing, plain, facts, NOW)
    if name == "ready":
        return tasklist_views.list_view(board.select(listing, Query(ready=True)), listing, plain, facts, NOW)
    if name == "board":
        return board_views.board_view(listing, plain, facts=facts, now=NOW, height=height)
    if name == "get":
        record, neighbours = with_neighbours(board, 4)
        return task_views.task_view(record, neighbours, plain, facts, NOW)
    live = [r for r in listing.records if r["status"] != "deleted"]
    return graph_views.graph_view(live, graph.edges(live), listing.lookup, plain=plain, facts=facts, now=NOW)


# -- every view at every size -----------------------------------------------------------


@pytest.mark.parametrize("plain", [False, True], ids=["colour", "plain"])
@pytest.mark.parametrize("height", HEIGHTS)
@pytest.mark.parametrize("width", WIDTHS)
def test_every_view_fits_every_screen(plan, width, height, plain):
    kind, board, facts = plan
    records = board.listing().records
    for name in ("list", "ready", "board", "get", "graph"):
        # a board is fitted to the terminal, less a line for the next prompt (as show_board does)
        view = view_of(name, board, facts, plain, height - 1 if name == "board" else None)
        text = draw(view, width, colour=not plain, height=height)
        assert fits(text, width), (name, kind)
        if plain:
            assert ESCAPE not in text and ESCAPE not in common_views.plain_text(view, width, height)
        if name == "board":
            lines = text.rstrip("\n").splitlines()
            assert len(lines) <= height - 1, (kind, len(lines))
            for column in ("Blocked", "Ready", "In progress", "Done"):  # every header stays in sight
                assert re.search(rf"{column} \(\d+\)", text), (kind, column)
            drawn = board_columns(text)
            stuck = frozenset(task_id for task_id, fact in facts.items() if fact.get("attempts", 0) >= 3)
            expected = expected_columns(records, stuck)
            assert all(expected[task_id] == column for task_id, column in drawn.items())
            more = sum(int(n) for n in re.findall(r"\+(\d+) more", text))
            assert len(drawn) + more == len(expected)  # every card drawn or counted
            hidden = re.search(r"(\d+) more cards: tasks board --all", flat(text))
            assert int(hidden.group(1)) == more if more else hidden is None
            continue
        # the other views scroll like any output: the height changes nothing
        assert text == draw(view, width, colour=not plain), name
        if name in ("list", "ready"):
            rows = [int(m) for m in re.findall(r"^\s*#(\d+)\s", text, re.M)]
            wanted = [r["id"] for r in board.select(board.listing(), Query(ready=name == "ready"))]
            assert rows == wanted  # one line per task, in order
            below = text.splitlines()[2 + len(rows) :] if rows else text.splitlines()[1:]
            assert not rows or text.splitlines()[1].strip("─-") == ""  # the header and the rule
            assert 1 <= len(below) <= 3 and all(re.match(SUMMARY_PHRASE, line) for line in below)
        if name == "graph":
            tree, legend = split_legend(text)
            ids = {int(NODE.search(line).group(2)) for line in tree.splitlines()[1:] if NODE.search(line)}
            assert ids == {r["id"] for r in records}
            assert ("[ ] pending" if plain else "○ ready") in legend


@pytest.mark.parametrize("width", WIDTHS)
def test_the_summary_breaks_only_between_phrases(plan, width):
    _, board, facts = plan
    text = draw(view_of("list", board, facts, plain=False), width)
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if re.match(r"\d+ tasks", line))
    for line in lines[start:]:
        assert cell_len(line) <= width
        for phrase in line.split(" · "):
            assert re.fullmatch(SUMMARY_PHRASE + r"( \(\d+ shown\))?", phrase), (width, line)
    one_line = " · ".join(lines[start:])
    assert len(lines) - start == (1 if cell_len(one_line) <= width else len(lines) - start) >= 1


def test_stacked_cards_keep_a_blank_line_between_them(plan):
    kind, board, facts = plan
    text = draw(board_views.board_view(board.listing(), facts=facts, now=NOW, every=True), 40)
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if re.match(r"  #\d+ ", line)]
    assert len(starts) >= 20
    for index in starts:
        previous = lines[index - 1]
        assert previous == "" or re.match(r"(Blocked|Ready|In progress|Done) \(\d+\)", previous), (kind, index)


def test_board_gives_its_room_to_what_can_be_acted_on(tmp_path):
    """A short terminal shows Ready and In progress first; Done shows the last few finished."""
    board = write_board(tmp_path / ".tasks", plan_records("plan"))
    text = draw(board_views.board_view(board.listing(), height=23), 40, height=24)
    columns = board_columns(text)
    assert "Ready" in columns.values() and "In progress" in columns.values()
    ready = [task_id for task_id, column in columns.items() if column == "Ready"]
    # ready order: priority, then id (#11 is P0)
    full = board_columns(draw(board_views.board_view(board.listing(), every=True), 160))
    assert [task_id for task_id, column in full.items() if column == "Ready"] == [11, 6, 8, 10, 12, 15]
    assert ready == [11, 6, 8, 10, 12, 15][: len(ready)]


# -- the colour language ----------------------------------------------------------------


def segments(renderable, width: int = 120) -> list[tuple[str, Style]]:
    out = Console(
        file=io.StringIO(), width=width, force_terminal=True, color_system="truecolor", highlight=False, markup=False
    )
    return [
        (segment.text, segment.style or Style())
        for line in out.render_lines(renderable, out.options, pad=False)
        for segment in line
        if segment.text.strip()
    ]


def red(style: Style) -> bool:
    return style.color is not None and style.color.name in ("red", "bright_red")


TROUBLE_WORDS = re.compile(r"^!|lease expired|stuck|gate failed|in a cycle|\d+ (stuck|lease expired|gate failed)")


def test_red_is_only_for_trouble(plan):
    kind, board, facts = plan
    for name in ("list", "ready", "board", "graph"):
        reds = [text for text, style in segments(view_of(name, board, facts, plain=False)) if red(style)]
        if kind != "trouble":
            assert reds == [], (kind, name)  # a healthy plan has no alarm in it, blocked or not
            continue
        assert reds, name
        for text in reds:  # the words of trouble, and in the list the id of a task in trouble
            assert TROUBLE_WORDS.search(text.strip()) or text.strip() in ("#4", "#6", "#8"), (name, text)
    for task_id in (4, 7, 8, 16):
        record, neighbours = with_neighbours(board, task_id)
        troubled = kind == "trouble" and task_id in (4, 8)
        styled = segments(task_views.task_view(record, neighbours, facts=facts, now=NOW))
        assert any(red(style) for _, style in styled) is troubled, (kind, task_id)


def test_ready_stands_out_blocked_is_quiet_done_is_dim(tmp_path):
    board = write_board(tmp_path / ".tasks", plan_records("plan"))
    styled = segments(view_of("list", board, {}, plain=False))

    def style_of(text: str) -> Style:
        return next(style for segment, style in styled if segment.strip() == text)

    ready, blocked, done = style_of("#6"), style_of("#7"), style_of("#1")
    assert ready.bold and ready.color.name == "green" and not ready.dim
    assert blocked.dim and blocked.color is None
    assert done.dim
    assert style_of("○").color.name == "green" and style_of("⊘").dim and style_of("✔").dim
    board_styled = segments(board_views.board_view(board.listing()))
    assert next(style for text, style in board_styled if text.startswith("Ready")).color.name == "green"


def test_monochrome_reads_without_colour(tmp_path):
    """Without colour the symbols and `!` say it all."""
    board = write_board(tmp_path / ".tasks", plan_records("trouble"))
    facts = trouble_facts()
    plain_board = draw(view_of("board", board, facts, plain=True), 160, colour=False)
    assert "! lease expired 4 min ago" in plain_board and "! stuck: failed 3 times" in plain_board
    assert "! gate failed (exit 1)" in plain_board
    table = draw(view_of("list", board, facts, plain=True), 160, colour=False)
    row = {int(m.group(1)): m.group(0) for m in re.finditer(r"^\s*#(\d+)\s.*$", table, re.M)}
    assert "! lease expired" in row[4] and "! stuck" in row[6] and "! gate failed" in row[8]
    assert "[>] in progress" in row[5] and "[ ] ready" in row[10] and "[ ] blocked" in row[7]
    assert "1 gate failed · 1 lease expired · 1 stuck" in flat(table)
    plain_graph = draw(view_of("graph", board, facts, plain=True), 80, colour=False)
    assert re.search(r"\[>\] #4 ! Port CLI", plain_graph) and "! trouble" in plain_graph


# -- the new fields where a person looks for them ---------------------------------------


def test_get_shows_priority_labels_lease_attempts_gate_and_last_events(tmp_path):
    board = write_board(tmp_path / ".tasks", plan_records("trouble"))
    facts = trouble_facts()
    text = unframed(draw(view_of("get", board, facts, plain=False), 100))
    assert "! lease expired 4 min ago" in text
    assert "priority P1" in text and "lease held by agent-c, lease expired 4 min ago" in text
    assert "attempts failed 1 time" in text
    # the last five of its seven events, oldest first, when, who, what
    events = text.split("last events")[1]
    assert "alice" not in events and "created" not in events
    assert re.search(
        r"1 h 40 min ago agent-b failed note=tests hang .* 25 min ago agent-c note parser half done 20 min ago agent-c edited description",
        events,
    )
    record, neighbours = with_neighbours(board, 8)
    text = unframed(draw(task_views.task_view(record, neighbours, facts=facts, now=NOW), 100))
    assert "gate last run: failed (exit 1) 5 min ago FAILED tests/test_docs.py 1 failed, 40 passed" in text
    assert "attempts failed 2 times" in text and "priority P2 (the default)" in text
    record, neighbours = with_neighbours(board, 6)
    text = unframed(draw(task_views.task_view(record, neighbours, facts=facts, now=NOW), 100))
    assert "failed 3 times: stuck (`tasks update 6 --status pending --retry` puts it back)" in text
    record, neighbours = with_neighbours(board, 17)
    text = unframed(draw(task_views.task_view(record, neighbours, facts=facts, now=NOW), 100))
    assert "accept the web app reads its secrets from vault" in text and "gate pytest tests/web" in text
    assert "metadata" not in text  # priority, labels, accept and gate have rows of their own
    record, neighbours = with_neighbours(board, 5)
    text = unframed(draw(task_views.task_view(record, neighbours, facts=facts, now=NOW), 100))
    assert "lease held by agent-a, lease expires in 11 min" in text and "!" not in text


def test_list_shows_priority_and_labels_without_getting_wider(tmp_path):
    board = write_board(tmp_path / ".tasks", plan_records("plan"))
    for width in (80, 160):
        text = draw(view_of("list", board, {}, plain=False), width)
        assert fits(text, width)
        row = {int(m.group(1)): m.group(0) for m in re.finditer(r"^\s*#(\d+)\s.*$", text, re.M)}
        assert "P0" in row[11] and "P1" in row[4] and "P4" in row[22] and "P2" not in text
        if width == 160:
            assert "bug, ui" in row[11] and "ops" in row[22]
    narrow = draw(view_of("list", board, {}, plain=False), 40)
    assert "labels" not in narrow and fits(narrow, 40)  # the first detail to go


def test_board_cards_carry_the_new_fields(tmp_path):
    board = write_board(tmp_path / ".tasks", plan_records("trouble"))
    text = unframed(draw(view_of("board", board, trouble_facts(), plain=False), 60))  # stacked: cards read whole
    assert "#11 Fix [red] markup in the settings banner P0 · bug, ui" in text
    assert "#5 Port the web app to Settings @agent-a lease expires in 11 min" in text
    assert "#8 Update the deployment docs for the new variables unlocks 6 ! gate failed (exit 1) failed 2 times" in text
    # a stuck task is not offered: it waits in Blocked (on a retry), not in Ready
    columns = board_columns(draw(view_of("board", board, trouble_facts(), plain=False), 160))
    assert columns[6] == "Blocked" and "Ready" in columns.values()


# -- the board's filters and --all through the command ----------------------------------


def test_board_filters_and_all(tmp_path):
    root = tmp_path / ".tasks"
    write_board(root, plan_records("finished"))
    run = Run(root)
    collapsed = run("board").stdout
    assert len(board_columns(collapsed)) == common_views.DONE_FEW and f"+{25 - common_views.DONE_FEW} more" in collapsed
    assert f"{25 - common_views.DONE_FEW} more cards: tasks board --all" in run("board").stderr
    everything = run("board", "--all")
    assert len(board_columns(everything.stdout)) == 25 and "more" not in everything.stdout + everything.stderr
    # the most recently finished first: #25 was finished last
    assert [int(m) for m in re.findall(r"#(\d+) ", collapsed)][:2] == [25, 24]
    root = tmp_path / "plan"
    write_board(root, plan_records("plan"))
    run = Run(root)
    labelled = run("board", "--label", "ui")
    assert set(board_columns(labelled.stdout)) == {11, 19}
    assert labelled.stderr.strip().endswith("(2 shown)")
    assert set(board_columns(run("board", "--label", "ui", "--label", "bug").stdout)) == {11}
    assert set(board_columns(run("board", "--owner", "bob").stdout)) == {12}
    as_json = run.json("board", "--owner", "codex-agent-2")
    assert [r["id"] for r in as_json["in_progress"]] == [2] and as_json["pending"] == as_json["completed"] == []
    assert run.json("board", "--label", "nothing") == {"pending": [], "in_progress": [], "completed": []}


# -- watch ------------------------------------------------------------------------------


def test_watch_highlights_what_changed_and_its_clock_ticks(tmp_path):
    board = write_board(tmp_path / ".tasks", plan_records("plan"))
    out = Console(file=io.StringIO(), width=160, height=60, force_terminal=True, color_system="truecolor", record=True)
    clock = [NOW]
    naps = []

    def nap(seconds: float) -> None:  # stands in for time.sleep: time moves on, the board changes
        naps.append(seconds)
        clock[0] += seconds
        if len(naps) == 2:
            board.create("Appeared while watching")
        if len(naps) == 8:
            raise KeyboardInterrupt

    board_views.watch_board(board, plain=False, out=out, sleep=nap, clock=lambda: clock[0])
    styled = out.file.getvalue()
    text = out.export_text()
    seconds = {time for time in re.findall(r"(\d\d:\d\d:\d\d) · Ctrl-C to stop", text)}
    assert len(seconds) == 4  # 8 naps of 0.5 s: the clock moved on with no change to the board
    assert "changed 0 s ago: #26 new" in text or "changed 1 s ago: #26 new" in text
    reverse = r"\x1b\[(?:\d+;)*7(?:;\d+)*m"
    assert re.search(reverse + "#26", styled)  # the new card is highlighted (reverse video)
    assert re.search(r"\x1b\[[\d;]*m#11", styled) and not re.search(reverse + "#11", styled)


def test_watch_says_what_changed_in_a_few_words(tmp_path):
    from taskboard.core.model import Patch

    board = write_board(tmp_path / ".tasks", plan_records("plan"))
    watcher = board_views.Watcher(board, clock=lambda: NOW)
    watcher.read()
    board.update(6, Patch(status="in_progress", owner="zed"))
    board.update(12, Patch(owner=""))
    board.update(10, Patch(subject="Schema validation for the environment"))
    watcher.read()
    assert watcher.news == ["#6 in progress", "#10 edited", "#12 released"]
    assert watcher.recent(NOW + 10) == {6, 10, 12} and watcher.recent(NOW + board_views.HIGHLIGHT) == set()


# -- golden snapshots of whole views at 80 columns --------------------------------------


def golden_views(tmp_path: Path) -> dict[str, str]:
    shutil.copytree(EXAMPLE, tmp_path / "sample")  # reading takes a lock file: leave the original alone
    sample = Board(Store(tmp_path / "sample"))
    listing = sample.listing()
    live = [r for r in listing.records if r["status"] != "deleted"]
    record, neighbours = with_neighbours(sample, 7)
    shots = {
        "list": draw(tasklist_views.list_view(sample.select(listing, Query()), listing), 80),
        "ready": draw(tasklist_views.list_view(sample.select(listing, Query(ready=True)), listing), 80),
        "board": draw(board_views.board_view(listing), 80),
        "get": draw(task_views.task_view(record, neighbours), 80),
        "graph": draw(graph_views.graph_view(live, graph.edges(live), listing.lookup), 80),
        "graph-plain": draw(
            graph_views.graph_view(live, graph.edges(live), listing.lookup, plain=True), 80, colour=False
        ),
    }
    return shots


def golden_trouble(tmp_path: Path) -> dict[str, str]:
    board = write_board(tmp_path / ".tasks", plan_records("trouble"))
    facts = trouble_facts()
    return {
        "trouble-list": draw(view_of("list", board, facts, plain=False), 80),
        "trouble-board": draw(view_of("board", board, facts, plain=False, height=49), 80, height=50),
        "trouble-get": draw(view_of("get", board, facts, plain=False), 80),
        "trouble-board-40": draw(view_of("board", board, facts, plain=False, height=23), 40, height=24),
    }


def test_golden_snapshots(tmp_path):
    """Whole views compared line for line; a layout change shows up as a diff here."""
    shots = {**golden_views(tmp_path), **golden_trouble(tmp_path)}
    if os.environ.get("UPDATE_GOLDEN"):
        GOLDEN.mkdir(exist_ok=True)
        for name, text in shots.items():
            (GOLDEN / f"{name}.txt").write_text(text, encoding="utf-8")
    for name, text in shots.items():
        expected = (GOLDEN / f"{name}.txt").read_text(encoding="utf-8")
        assert text == expected, f"{name} changed; UPDATE_GOLDEN=1 rewrites tests/golden/ after a deliberate change"


def test_get_shows_the_tasks_last_events_from_the_journal(tmp_path):
    run = Run(tmp_path / ".tasks")
    run("create", "Write parser")
    run("create", "Write tests", "--blocked-by", "1")
    run("--as", "alice", "claim", "1")
    run("note", "1", "half done")
    for word in ("first", "second", "third"):
        run("--as", "alice", "update", "1", "-d", word)  # the holder: no override to journal
    shown = run("get", "1").stdout
    events = shown.split("last events")[1]
    assert "created" not in events  # the last five of seven, oldest first
    lines = [line.split() for line in events.strip().splitlines()]
    assert [line[3:5] for line in lines[:2]] == [["alice", "claimed"], [lines[1][3], "note"]]
    assert "half done" in events and events.count("edited") == 3 and "description" in events
    assert "events" in run("get", "2").stdout and "last events" not in run("get", "2").stdout
    assert "events" not in run("get", "1", "--json").stdout  # the record, and only it


def test_views_show_leases_and_stuck_tasks_from_the_runtime_state(tmp_path):
    """Real runtime state: a claim with a lease whose renewal is moved 20 minutes back
    (as if its agent died), and a task that failed three times."""
    root = tmp_path / ".tasks"
    run = Run(root)
    for subject in ("Port the parser", "Flaky deploy", "Docs"):
        run("create", subject)
    run("claim", "1", "--as", "agent-c", "--lease", "15m")
    for attempt in (1, 2, 3):
        run("claim", "2", "--as", f"bot-{attempt}")
        run("release", "2", "--failed", "--note", f"CI hangs ({attempt})", "--as", f"bot-{attempt}")
    entry = next(path for path in (root / ".state").iterdir() if '"task": 1' in path.read_text())
    state = json.loads(entry.read_text())
    state["claim"]["renewed"] -= 20 * 60 + 30  # the 15-minute lease ran out five and a half minutes ago
    entry.write_text(json.dumps(state))
    shown = unframed(run("get", "1").stdout)
    assert re.search(r"! lease expired [56] min ago .* lease held by agent-c, lease expired [56] min ago", shown)
    shown = unframed(run("get", "2").stdout)
    assert "! stuck: failed 3 times" in shown and "last failure CI hangs (3)" in shown
    listed = run("list")
    assert listed.stderr.strip() == "3 tasks · 1 ready · 1 in progress · 1 blocked · 0 done · 1 lease expired · 1 stuck"
    board = run("board", env={"COLUMNS": "60"}).stdout  # stacked: each card's lines whole
    assert re.search(r"! lease expired [56] min ago", board) and "! stuck: failed 3 times" in board
    assert "[>] #1 ! Port the parser" in run("graph").stdout


def test_watch_reads_again_when_only_the_runtime_state_changed(tmp_path):
    """A renewal changes no task file: the watcher also polls the runtime state's signature."""
    board = write_board(tmp_path / ".tasks", plan_records("plan"))
    out = Console(file=io.StringIO(), width=100, force_terminal=False, color_system=None)
    version, naps, reads = [0], [], []

    def nap(seconds: float) -> None:
        naps.append(seconds)
        if len(naps) == 2:
            version[0] += 1  # as if a lease was renewed
        if len(naps) == 4:
            raise KeyboardInterrupt

    def facts(listing) -> dict:
        reads.append(len(naps))
        return {}

    board_views.watch_board(board, plain=True, out=out, sleep=nap, facts=facts, signature=lambda: version[0])
    assert reads == [0, 2]  # at the start, and after the state changed; not on the quiet naps


def test_views_show_a_failed_gate_as_trouble_and_its_last_run_in_get(tmp_path):
    run = Run(tmp_path / ".tasks")
    run("create", "Ship it", "--gate", "echo compiling; echo 2 tests failed >&2; exit 3", "--accept", "tests pass")
    run("create", "Docs", "--gate", "true")
    run("create", "Hotfix", "--gate", "exit 1")
    run("done", "1", expect=7)
    run("done", "2")
    run("done", "3", "--force")
    shown = unframed(run("get", "1").stdout)
    assert "! gate failed (exit 3)" in shown and "accept tests pass" in shown
    assert re.search(r"last run: failed \(exit 3\) \d+ s ago compiling 2 tests failed", shown)
    assert re.search(r"failed note=gate failed with exit status 3 .*gate exit 3", shown)
    assert "last run: passed" in unframed(run("get", "2").stdout)
    forced = unframed(run("get", "3").stdout)
    assert "last run: not run: completed anyway (forced)" in forced and "!" not in forced
    assert run("list").stderr.strip().endswith("· 1 gate failed")
    board = run("board", env={"COLUMNS": "60"}).stdout
    assert "  ! gate failed with exit status 3\n  failed 1 time" in board


# -- one rule for "ready": the summary, the board, `ready` and `list --status` agree ----------


def test_what_ready_holds_back_counts_as_blocked_in_every_view(tmp_path):
    """A task that failed three times (stuck) and one claimed in another worktree of the
    clone have no open blocker, yet `ready` leaves them out: the summary of every view, the
    board's Ready column, `prime` and `list --status ready` say the same (real git
    worktrees, real processes)."""

    def git(*args: str, cwd: Path) -> None:
        subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)

    def tasks(*args: str, cwd: Path, owner: str = "") -> subprocess.CompletedProcess:
        env = {**os.environ, "TASKS_OWNER": owner} if owner else dict(os.environ)
        env.pop("COLUMNS", None), env.pop("LINES", None)
        done = subprocess.run([*TASKS, *args], cwd=cwd, env=env, capture_output=True, text=True)
        assert done.returncode == 0, (args, done.stdout, done.stderr)
        return done

    repo = tmp_path / "repo"
    repo.mkdir()
    git("init", "-q", "-b", "main", cwd=repo)
    for subject in ("Flaky deploy", "Port the parser", "Docs", "Changelog"):
        tasks("create", subject, cwd=repo)
    tasks("create", "Release", "--blocked-by", "1", cwd=repo)
    git("add", "-A", cwd=repo)
    git("-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "plan", cwd=repo)
    git("config", "tasks.worktrees", "branch", cwd=repo)  # a board per worktree, claims shared
    git("worktree", "add", "-q", "-b", "two", str(tmp_path / "two"), cwd=repo)
    tasks("claim", "2", cwd=tmp_path / "two", owner="bob")  # held in the other worktree
    for attempt in (1, 2, 3):
        tasks("claim", "1", cwd=repo, owner=f"bot-{attempt}")
        tasks("release", "1", "--failed", "--note", "CI hangs", cwd=repo, owner=f"bot-{attempt}")

    counts = "5 tasks · 2 ready · 0 in progress · 3 blocked · 0 done · 1 stuck"
    ready = tasks("ready", cwd=repo)
    assert ready.stdout == "[ ] #3: Docs\n[ ] #4: Changelog\n"
    assert ready.stderr.strip() == counts + " (2 shown)"
    assert tasks("list", cwd=repo).stderr.strip() == counts
    assert tasks("list", "--status", "ready", cwd=repo).stdout == ready.stdout
    # the filter stays the contract's (an open blocker): held back is not the same as blocked
    assert tasks("list", "--status", "blocked", cwd=repo).stdout == "[ ] #5: Release\n"
    assert tasks("prime", cwd=repo).stdout.splitlines()[0].endswith(": " + counts.removesuffix(" · 1 stuck"))
    board = tasks("board", cwd=repo)
    assert board.stderr.splitlines()[0] == counts
    columns = board_columns(board.stdout)
    assert sorted(task_id for task_id, column in columns.items() if column == "Ready") == [3, 4]
    assert sorted(task_id for task_id, column in columns.items() if column == "Blocked") == [1, 2, 5]
