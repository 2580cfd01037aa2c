"""The views for people, rendered into recording consoles of fixed widths and read
back as text: every task where it belongs, the right counts, DOT and Mermaid whose
edges are exactly the graph's, no escape codes in plain mode, user text never
taken for markup. Expected values come from small oracles written here over the
raw records, not from the code under test."""

from __future__ import annotations

import io
import os
import re
import shutil
import sys
import time
from collections import deque
from pathlib import Path
from xml.etree import ElementTree

import pytest
from conftest import Run, tasks_process
from rich.cells import cell_len
from rich.console import Console

from taskboard.core import graph
from taskboard.core.model import MARKERS, Patch, encode, file_name, new_record
from taskboard.disk.store import Store
from taskboard.ops.board import Board
from taskboard.ops.query import Query
from taskboard.views import viewmodel
from taskboard.views.render import board as board_views
from taskboard.views.render import common as common_views
from taskboard.views.render import graph as graph_views
from taskboard.views.render import svg as svg_views
from taskboard.views.render import task as task_views
from taskboard.views.render import tasklist as tasklist_views

EXAMPLE = Path(__file__).resolve().parent.parent / ".tasks.example"
WIDTHS = (40, 80, 160)
ESCAPE = "\x1b"
MARKUP_SUBJECTS = ("Fix [red] parsing", "close [/] tag", "[bold]not bold[/bold] :smile: [link=http://x]y[/link]")
WIDE_SUBJECTS = ("修复配置解析器里的编码错误并补充测试", "Ship it 🚀🎉 with émojis and ｆｕｌｌｗｉｄｔｈ")
LONG_SUBJECT = "Refactor " + "the very long subject that keeps going " * 12 + "END"


# -- helpers ---------------------------------------------------------------------------


def with_neighbours(board, task_id):
    """A task and the records its lists name, as `get` shows them to a person."""
    outcome = board.get(task_id, neighbours=True)
    return outcome.record, outcome.neighbours


def draw(renderable, width: int, colour: bool = True, height: int | None = None) -> str:
    """What a terminal of this width (and height) shows, as text (styles dropped)."""
    out = Console(
        file=io.StringIO(),
        width=width,
        height=height,
        record=True,
        force_terminal=colour,
        color_system="truecolor" if colour else None,
        no_color=not colour,
        highlight=False,
        emoji=False,
        markup=False,
    )
    out.print(renderable)
    return out.export_text()


def ansi(renderable, width: int) -> str:
    out = Console(
        file=io.StringIO(),
        width=width,
        force_terminal=True,
        color_system="truecolor",
        highlight=False,
        emoji=False,
        markup=False,
    )
    out.print(renderable)
    return out.file.getvalue()


SUMMARY_PHRASE = r"\d+ (?:tasks|ready|in progress|blocked|done|deleted|gate failed|in a cycle|lease expired|stuck)\b"


def unwrapped(text: str) -> str:
    """The text with the summary's line breaks (only ever between two phrases) read as ` · `."""
    return re.sub(rf"\n(?={SUMMARY_PHRASE})", " · ", text)


def fits(text: str, width: int) -> bool:
    return all(cell_len(line) <= width for line in text.splitlines())


def flat(text: str) -> str:
    """Text with all runs of whitespace (wrapping included) made one space; the summary
    reads as one line however it was broken."""
    return " ".join(unwrapped(text).split())


def expected_state(record: dict, by_id: dict) -> str:
    """The oracle: blocked/ready for pending tasks, else the status."""
    if record["status"] != "pending":
        return record["status"]
    for blocker in record["blockedBy"]:
        other = by_id.get(blocker)
        if other is not None and other["status"] in ("pending", "in_progress"):
            return "blocked"
    return "ready"


def expected_summary(records: list[dict]) -> str:
    by_id = {r["id"]: r for r in records}
    states = [expected_state(r, by_id) for r in records]
    live = [s for s in states if s != "deleted"]
    text = (
        f"{len(live)} tasks · {states.count('ready')} ready · {states.count('in_progress')} in progress · "
        f"{states.count('blocked')} blocked · {states.count('completed')} done"
    )
    return text + (f" · {states.count('deleted')} deleted" if "deleted" in states else "")


def expected_unlocks(records: list[dict], task_id: int) -> int:
    """Open tasks reachable from task_id along edges between open tasks (plain BFS)."""
    open_ids = {r["id"] for r in records if r["status"] in ("pending", "in_progress")}
    down: dict[int, set[int]] = {}
    for blocker, dependent in graph.edges(records):
        if blocker in open_ids and dependent in open_ids:
            down.setdefault(blocker, set()).add(dependent)
    seen, queue = set(), deque([task_id])
    while queue:
        for nxt in down.get(queue.popleft(), ()):
            if nxt not in seen:
                seen.add(nxt)
                queue.append(nxt)
    return len(seen - {task_id})


COLUMN_OF = {"blocked": "Blocked", "ready": "Ready", "in_progress": "In progress", "completed": "Done"}


def expected_columns(records: list[dict], held: frozenset[int] = frozenset()) -> dict[int, str]:
    """Each card's column; `held`: the ready tasks `ready` leaves out (stuck, claimed
    elsewhere), which wait in Blocked."""
    by_id = {r["id"]: r for r in records}
    found = {r["id"]: COLUMN_OF[expected_state(r, by_id)] for r in records if r["status"] != "deleted"}
    return {
        task_id: "Blocked" if task_id in held and column == "Ready" else column for task_id, column in found.items()
    }


def board_columns(text: str) -> dict[int, str]:
    """Which column each card sits in, read back from a drawn board: side by side
    (cells between │ or |) or stacked (a `Name (n)` heading, then indented cards). A
    card starts right under its column's header or after a blank line (the views keep
    one between cards), so the wrapped tail of `waits on #4, #5,` is never taken for one."""
    lines = text.splitlines()
    found: dict[int, str] = {}
    card = re.compile(r"(?:\[.\] )?#(\d+)(?: \S|$)")

    def add(task_id: int, column: str | None) -> None:
        assert task_id not in found, f"#{task_id} drawn twice"
        found[task_id] = column  # type: ignore[assignment]

    header = next((line for line in lines if "Blocked (" in line), "")
    if "Ready (" in header:  # side by side
        names = [re.sub(r" \(\d+\)$", "", cell.strip()) for cell in re.split(r"[│|]", header)[1:-1]]
        starting = dict.fromkeys(names, True)
        for line in lines[lines.index(header) + 1 :]:
            cells = re.split(r"[│|]", line)[1:-1]
            if len(cells) != len(names):
                continue
            for name, cell in zip(names, cells, strict=True):
                match = card.match(cell.strip())
                if match and starting[name]:
                    add(int(match.group(1)), name)
                starting[name] = not cell.strip() or set(cell.strip()) <= set("─-+=")
        return found
    # stacked: a column with no blank line in it is drawn compact (a short screen), one line per card
    column, starting, compact = None, False, False
    for number, line in enumerate(lines):
        heading = re.fullmatch(r"(Blocked|Ready|In progress|Done) \((\d+)\)\s*", line)
        if heading:
            column, starting = heading.group(1), True
            body = []  # the column's lines, up to the next heading or the summary
            for other in lines[number + 1 :]:
                if other.strip() and not other.startswith("  "):
                    break
                body.append(other)
            body = body[: len(body) - 1] if body and not body[-1].strip() else body  # the blank before a heading
            compact = len(body) > 0 and all(re.match(r"  (?:(?:\[.\] )?#\d+ \S|\+\d+ more)", other) for other in body)
            continue
        match = re.match(r"  " + card.pattern, line)
        if match and (starting or compact):
            add(int(match.group(1)), column)
        starting = not line.strip()
    return found


DOT_NODE = re.compile(r'\s*t(\d+) \[((?:\w+=(?:"(?:[^"\\]|\\.)*"|[\w.]+)(?:, )?)+)\];')
DOT_EDGE = re.compile(r"\s*t(\d+) -> t(\d+);")


def parse_dot(text: str) -> tuple[dict[int, str], list[tuple[int, int]]]:
    """Nodes (id → label) and edges of our DOT, checking every line is well formed."""
    lines = text.splitlines()
    assert lines[0] == "digraph tasks {" and lines[-1] == "}"
    nodes, edges = {}, []
    for line in lines[1:-1]:
        if node := DOT_NODE.fullmatch(line):
            label = re.search(r'label="((?:[^"\\]|\\.)*)"', node.group(2)).group(1)
            nodes[int(node.group(1))] = re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), label)
        elif edge := DOT_EDGE.fullmatch(line):
            edges.append((int(edge.group(1)), int(edge.group(2))))
        else:
            assert re.fullmatch(r"\s*(rankdir=LR|(node|edge) \[.*\]);", line), line
    return nodes, edges


MERMAID_NODE = re.compile(r'\s*t(\d+)\["([^"]*)"\]:::(\w+)')
MERMAID_EDGE = re.compile(r"\s*t(\d+) --> t(\d+)")


def parse_mermaid(text: str) -> tuple[dict[int, str], list[tuple[int, int]]]:
    lines = text.splitlines()
    assert lines[0] == "flowchart LR"
    nodes, edges, classes, used = {}, [], set(), set()
    for line in lines[1:]:
        if node := MERMAID_NODE.fullmatch(line):
            nodes[int(node.group(1))] = node.group(2)
            used.add(node.group(3))
        elif edge := MERMAID_EDGE.fullmatch(line):
            edges.append((int(edge.group(1)), int(edge.group(2))))
        elif classdef := re.fullmatch(r"\s*classDef (\w+) [\w:#,.\- ]+", line):
            classes.add(classdef.group(1))
        else:
            raise AssertionError(f"unexpected Mermaid line {line!r}")
    assert used <= classes
    for label in nodes.values():  # user text can open no tag and no entity of its own
        assert "<" not in label.replace("<br/>", "") and ">" not in label.replace("<br/>", "")
    return nodes, edges


def unmermaid(label: str) -> str:
    return re.sub(r"#(\d+);", lambda m: chr(int(m.group(1))), label.replace("<br/>", " "))


# -- boards ----------------------------------------------------------------------------


@pytest.fixture
def sample(tmp_path) -> Board:
    """A copy of the sample board (reading takes a lock file; the original stays untouched)."""
    root = tmp_path / "sample"
    shutil.copytree(EXAMPLE, root)
    return Board(Store(root))


def write_board(root: Path, records: list[dict]) -> Board:
    """Many records written as one change through the store: real files, made fast by
    skipping fsync (it only matters when the machine crashes, and a test board needs none)."""
    store = Store(root)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "fsync", lambda fd: None)
        with store.writing():
            store.write({file_name(r["id"]): encode(r) for r in records})
    return Board(store)


def thousand_records() -> list[dict]:
    """1 000 tasks in chains of 25 with cross edges; the first 300 done, then a mix, with
    the edges kept the way the board keeps them (completed blockers only in `blocks`)."""
    stamp = "2026-11-29T18:00:00Z"
    records = {i: new_record(i, f"Task number {i} of the big board", "", "", {}, stamp) for i in range(1, 1001)}
    for i, record in records.items():
        record["status"] = (
            "completed" if i <= 300 else "in_progress" if i % 11 == 0 else "deleted" if i % 97 == 0 else "pending"
        )
        record["owner"] = f"agent-{i % 7}" if record["status"] == "in_progress" else ""
    for i in records:
        blockers = ([i - 1] if i % 25 != 1 else []) + ([i - 30] if i > 30 and i % 7 == 0 else [])
        for blocker in blockers:
            if "deleted" in (records[i]["status"], records[blocker]["status"]):
                continue
            records[blocker]["blocks"].append(i)
            if records[blocker]["status"] != "completed":
                records[i]["blockedBy"].append(blocker)
    return list(records.values())


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> Board:
    return write_board(tmp_path_factory.mktemp("big") / ".tasks", thousand_records())


@pytest.fixture
def odd(tmp_path) -> Board:
    """Markup-like, wide and very long subjects, with owners and edges between them."""
    board = Board(Store(tmp_path / "odd"))
    first = board.create(
        MARKUP_SUBJECTS[0],
        description="[red]not red[/red] and [/]",
        owner="[blue]eve",
        metadata={"note": "[bold]x", "labels": ["[ui]"]},
    ).record["id"]
    second = board.create(MARKUP_SUBJECTS[1], blocked_by=[first]).record["id"]
    third = board.create(MARKUP_SUBJECTS[2], blocked_by=[second], owner="修").record["id"]
    for subject in WIDE_SUBJECTS:
        board.create(subject, blocked_by=[third])
    board.create(LONG_SUBJECT, blocks=[first])
    board.update(first + 5, Patch(status="in_progress"))  # the long one: it waits on nothing
    return board


def records_of(board: Board) -> list[dict]:
    return board.listing().records


# -- list ------------------------------------------------------------------------------


@pytest.mark.parametrize("width", WIDTHS)
def test_list_shows_every_task_once_in_order_with_the_summary(sample, width):
    listing = sample.listing()
    chosen = sample.select(listing, Query())
    text = draw(tasklist_views.list_view(chosen, listing), width)
    assert fits(text, width)
    rows = [int(m.group(1)) for m in re.finditer(r"^\s*#(\d+)\s", text, re.M)]
    assert rows == [r["id"] for r in listing.records if r["status"] != "deleted"] == [1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12]
    assert expected_summary(listing.records) == "11 tasks · 2 ready · 2 in progress · 5 blocked · 2 done · 1 deleted"
    assert expected_summary(listing.records) + " (11 shown)" not in flat(text)
    assert expected_summary(listing.records) in flat(text)


def test_list_subjects_run_on_over_empty_cells_and_use_wide_terminals(sample):
    listing = sample.listing()
    chosen = sample.select(listing, Query())
    narrow, wide = (
        draw(tasklist_views.list_view(chosen, listing), 80),
        draw(tasklist_views.list_view(chosen, listing), 160),
    )
    assert "Update the deployment docs for the new variables" in wide
    # at 80 the subject column is narrower, but #8 has no owner and no blocker: its subject
    # runs on over those empty cells, up to its unlocks count
    row_8 = next(line for line in narrow.splitlines() if re.match(r"\s*#8\s", line))
    assert "Update the deployment docs for the new variables" in row_8 and row_8.rstrip().endswith("1")
    # #12 has an owner: its subject stops short of the owner's column
    row_12 = next(line for line in narrow.splitlines() if re.match(r"\s*#12\s", line))
    assert re.search(r"Fix \[red\] markup in the .*…\s+bob", row_12)
    rule = narrow.splitlines()[1]
    assert set(rule) == {"─"} and len(rule) == max(cell_len(line) for line in narrow.splitlines()[2:13])
    row = next(line for line in wide.splitlines() if re.match(r"\s*#2\s", line))
    assert "in progress" in row and "codex-agent-2" in row


def test_list_counts_what_each_pending_task_unlocks(sample):
    listing = sample.listing()
    text = draw(tasklist_views.list_view(sample.select(listing, Query()), listing), 160)
    header = next(line for line in text.splitlines() if "unlocks" in line)
    end = header.index("unlocks") + len("unlocks")
    for record in listing.records:
        if record["status"] != "pending":
            continue
        row = next(line for line in text.splitlines() if re.match(rf"\s*#{record['id']}\s", line))
        shown = row[:end].split()[-1]
        count = expected_unlocks(listing.records, record["id"])
        assert (shown == str(count)) if count else not shown.isdigit(), (record["id"], shown, count)
    assert expected_unlocks(listing.records, 4) == 3


def test_list_filtered_says_how_many_are_shown(sample):
    listing = sample.listing()
    text = flat(draw(tasklist_views.list_view(sample.select(listing, Query(ready=True)), listing), 120))
    assert expected_summary(listing.records) + " (2 shown)" in text
    assert flat(draw(tasklist_views.list_view([], listing), 80)).startswith("no tasks to show")


def test_plain_lines_are_exactly_marker_id_and_subject(odd):
    listing = odd.listing()
    lines = tasklist_views.plain_lines(listing.records, listing)
    assert lines == [f"{MARKERS[r['status']]} #{r['id']}: {r['subject']}" for r in listing.records]
    assert lines[:2] == ["[ ] #1: Fix [red] parsing", "[ ] #2: close [/] tag"]
    assert any(LONG_SUBJECT in line for line in lines)  # never cut, never wrapped


def test_show_list_plain_writes_lines_to_stdout_and_the_summary_to_stderr(sample, capsys):
    listing = sample.listing()
    tasklist_views.show_list(sample.select(listing, Query()), listing, plain=True)
    out, err = capsys.readouterr()
    assert [line[:7] for line in out.splitlines()][:3] == ["[x] #1:", "[>] #2:", "[x] #3:"]
    assert len(out.splitlines()) == 11
    assert err.strip() == expected_summary(listing.records)
    assert ESCAPE not in out + err


def test_piped_commands_print_no_escape_codes(tmp_path):
    root = tmp_path / "board"
    shutil.copytree(EXAMPLE, root)
    listed = tasks_process("--dir", str(root), "list")
    assert listed.returncode == 0, listed.stderr
    out = listed.stdout.decode()
    assert ESCAPE.encode() not in listed.stdout + listed.stderr
    assert out.splitlines()[3].startswith("[ ] #4: Port CLI entry points to Settings")
    assert "[ ] #12: Fix [red] markup in the settings banner" in out
    assert listed.stderr.decode().strip() == "11 tasks · 2 ready · 2 in progress · 5 blocked · 2 done · 1 deleted"
    for args in (("board",), ("graph",), ("get", "7")):
        shown = tasks_process("--dir", str(root), *args, env={"TERM": "xterm-256color"})
        assert shown.returncode == 0, shown.stderr
        assert ESCAPE.encode() not in shown.stdout + shown.stderr
        assert b"#7" in shown.stdout


def test_json_paths_never_import_rich(tmp_path):
    root = tmp_path / "board"
    shutil.copytree(EXAMPLE, root)
    code = (
        "import sys; from taskboard.__main__ import main\n"
        f"for argv in (['list'], ['board'], ['graph'], ['get', '7']):\n"
        f"    assert main(['--dir', {str(root)!r}, *argv, '--json']) == 0\n"
        "assert not any(name == 'rich' or name.startswith('rich.') for name in sys.modules)\n"
    )
    import subprocess

    done = subprocess.run([sys.executable, "-c", code], capture_output=True)
    assert done.returncode == 0, done.stderr.decode()


# -- board -----------------------------------------------------------------------------


@pytest.mark.parametrize("width", WIDTHS)
def test_board_puts_every_card_in_its_column(sample, width):
    listing = sample.listing()
    text = draw(board_views.board_view(listing), width)
    assert fits(text, width)
    assert board_columns(text) == expected_columns(listing.records)
    assert "#10" not in text  # deleted: hidden
    for name, count in (("Blocked", 5), ("Ready", 2), ("In progress", 2), ("Done", 2)):
        assert f"{name} ({count})" in text
    assert expected_summary(listing.records) in flat(text)


def test_board_cards_show_owner_and_what_blocks_them(sample):
    text = draw(board_views.board_view(sample.listing()), 160)
    assert "waits on #4, #5, #6" in text
    assert "@codex-agent-2" in text and "@bob" in text
    plain = draw(board_views.board_view(sample.listing(), plain=True), 100, colour=False)
    assert board_columns(plain) == expected_columns(sample.listing().records)
    assert "[ ] #7 Remove" in plain and "[>] #2 Write" in plain and ESCAPE not in plain


def test_show_board_writes_an_svg_picture(sample, tmp_path, capsys):
    picture = tmp_path / "board.svg"
    board_views.show_board(sample.listing(), plain=True, svg=str(picture))
    out, err = capsys.readouterr()
    assert ESCAPE not in out and "Blocked (5)" in out
    assert err.strip() == expected_summary(sample.listing().records)
    svg = picture.read_text()
    assert svg.startswith("<svg") and svg.rstrip().endswith("</svg>")
    # the picture is the colour view at SVG_WIDTH, glyph for glyph where the terminal has it
    assert svg_lines(svg) == [
        "$ tasks board",
        "",
        *without_frames(draw(board_views.board_view(sample.listing()), svg_views.SVG_WIDTH)),
    ]
    fills = set(re.findall(r'<text [^>]*fill="(#[0-9a-f]{6})"', svg))
    assert len(fills) >= 5  # coloured even though stdout was plain
    assert svg.count("<path ") >= 3  # the frame is drawn as strokes


def without_frames(text: str) -> list[str]:
    """The lines of a drawn view with box-drawing characters blanked (an SVG draws them as strokes)."""
    lines = [
        "".join(" " if "\u2500" <= char <= "\u257f" else char for char in line).rstrip() for line in text.splitlines()
    ]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def svg_lines(svg: str) -> list[str]:
    """The text of an SVG from svg_views.svg_picture put back on its character grid, each
    glyph at the cell its own x and y name: if the picture relied on the font's advances
    instead, this would not give back the terminal's lines."""
    root = ElementTree.fromstring(svg)  # also: the document is well-formed XML
    cells: dict[int, dict[int, str]] = {}
    for text in root.iter("{http://www.w3.org/2000/svg}text"):
        xs = [float(x) for x in text.get("x", "").split()]
        row = (float(text.get("y", "")) - svg_views.SVG_MARGIN - svg_views.SVG_BASELINE) / svg_views.SVG_LINE
        assert row == int(row) and len(xs) == len(text.text or "")
        for x, char in zip(xs, text.text or "", strict=True):
            column = (x - svg_views.SVG_MARGIN) / svg_views.SVG_CELL
            assert abs(column - round(column)) < 1e-6
            cells.setdefault(int(row), {})[round(column)] = char
    lines = []
    for row in range(max(cells, default=-1) + 1):
        line = ""
        for column, char in sorted(cells.get(row, {}).items()):
            line += " " * (column - cell_len(line)) + char
        lines.append(line)
    return lines


# -- one task --------------------------------------------------------------------------


@pytest.mark.parametrize("width", WIDTHS)
def test_task_panel_shows_every_field_and_its_neighbours(sample, width):
    record, neighbours = with_neighbours(sample, 7)
    text = flat(draw(task_views.task_view(record, neighbours), width))
    assert "#7" in text and "blocked" in text
    for other in (4, 5, 6, 9, 11):
        assert f"#{other}" in text
    if width == 160:  # narrower panels wrap these lines
        assert "#6 Port the batch jobs to Settings in progress @claude-agent-1" in text
        assert "#4 Port CLI entry points to Settings blocked" in text  # its own blocker #2 is open
        assert "2026-11-29T19:50:51Z" in text and record["uid"] in text
    record, neighbours = with_neighbours(sample, 12)
    text = flat(draw(task_views.task_view(record, neighbours), 160))
    assert "Fix [red] markup in the settings banner" in text and "labels ui, bug" in text and "metadata" not in text
    assert "bob" in text


def test_task_panel_plain_starts_like_a_list_line(sample):
    record, neighbours = with_neighbours(sample, 2)
    text = draw(task_views.task_view(record, neighbours, plain=True), 80, colour=False)
    assert text.startswith("[>] #2: Write characterisation tests for config parsing")
    assert "[ ] #4 Port CLI" in text and ESCAPE not in text
    assert "grep" not in text  # #1's description is not #2's
    record, neighbours = with_neighbours(sample, 1)
    assert "grep for load_config" in draw(task_views.task_view(record, neighbours, plain=True), 80, colour=False)


# -- graph -----------------------------------------------------------------------------


@pytest.mark.parametrize("width", WIDTHS)
def test_graph_tree_shows_every_task_with_its_status(sample, width):
    listing = sample.listing()
    records = [r for r in listing.records if r["status"] != "deleted"]
    text = draw(graph_views.graph_view(records, graph.edges(records), listing.lookup), width)
    assert fits(text, width)
    ids = {int(m) for m in re.findall(r"[✔◐○⊘] #(\d+)", text)}
    assert ids == {r["id"] for r in records}
    assert re.search(r"◐ #2 ", text) and re.search(r"✔ #1 ", text) and re.search(r"○ #8 ", text)
    plain = draw(graph_views.graph_view(records, graph.edges(records), listing.lookup, plain=True), width, colour=False)
    assert {int(m) for m in re.findall(r"\[.\] #(\d+)", plain)} == ids


def test_graph_of_one_task_shows_upstream_and_downstream(sample, run, board_dir):
    shutil.copytree(sample.store.root, board_dir)
    text = run("graph", "7").stdout
    waits, unlocks = text.split("unlocks")
    assert text.splitlines()[0].startswith("[ ] #7 Remove the legacy loader")
    assert {int(m) for m in re.findall(r"#(\d+)", waits)} == {7, 4, 5, 6, 2, 3, 1}
    assert {int(m) for m in re.findall(r"#(\d+)", unlocks)} == {9, 11}
    assert "#10 is deleted" in run("graph", "10").stdout


@pytest.mark.parametrize("board_name", ["sample", "odd", "big"])
def test_dot_and_mermaid_edges_are_the_graph_edges(board_name, request):
    board = request.getfixturevalue(board_name)
    listing = board.listing()
    records = [r for r in listing.records if r["status"] != "deleted"]
    edges = graph.edges(records)
    from taskboard.views import viewmodel as views

    dot_nodes, dot_edges = parse_dot(views.to_dot(records, edges, listing.lookup))
    mermaid_nodes, mermaid_edges = parse_mermaid(views.to_mermaid(records, edges, listing.lookup))
    assert sorted(dot_edges) == dot_edges == edges and len(set(dot_edges)) == len(dot_edges)
    assert sorted(mermaid_edges) == mermaid_edges == edges
    assert set(dot_nodes) == set(mermaid_nodes) == {r["id"] for r in records}
    for record in records:  # labels carry the user's text back unchanged
        assert " ".join(dot_nodes[record["id"]].split()).startswith(
            f"#{record['id']} {' '.join(record['subject'].split())}"[:30]
        )
        assert unmermaid(mermaid_nodes[record["id"]]).startswith(f"#{record['id']} ")


def test_dot_and_mermaid_escape_user_text(tmp_path):
    board = Board(Store(tmp_path / "b"))
    nasty = 'He said "hi" \\N <b>bold</b> & #12; `code`'
    board.create(nasty)
    board.create("after", blocked_by=[1])
    listing = board.listing()
    from taskboard.views import viewmodel as views

    dot_nodes, _ = parse_dot(views.to_dot(listing.records, graph.edges(listing.records), listing.lookup))
    assert " ".join(dot_nodes[1].split()) == "#1 " + nasty
    mermaid_nodes, _ = parse_mermaid(views.to_mermaid(listing.records, graph.edges(listing.records), listing.lookup))
    assert " ".join(unmermaid(mermaid_nodes[1]).split()) == "#1 " + nasty
    assert "#12;" not in mermaid_nodes[1]


def test_graph_cli_formats_and_svg(sample, run, board_dir, tmp_path):
    shutil.copytree(sample.store.root, board_dir)
    records = [r for r in sample.listing().records if r["status"] != "deleted"]
    assert parse_dot(run("graph", "--format", "dot").stdout)[1] == graph.edges(records)
    assert parse_mermaid(run("graph", "--format", "mermaid").stdout)[1] == graph.edges(records)
    with_deleted = parse_mermaid(run("graph", "--format", "mermaid", "--all").stdout)[0]
    assert 10 in with_deleted and 10 not in parse_mermaid(run("graph", "--format", "mermaid").stdout)[0]
    picture = tmp_path / "graph.svg"
    run("graph", "--svg", str(picture))
    listing = sample.listing()
    view = graph_views.graph_view(records, graph.edges(records), listing.lookup)
    assert svg_lines(picture.read_text())[2:] == without_frames(draw(view, svg_views.SVG_WIDTH))


# -- edge cases ------------------------------------------------------------------------


@pytest.mark.parametrize("width", WIDTHS)
def test_empty_board_renders_every_view(tmp_path, width):
    board = Board(Store(tmp_path / "nothing"))
    listing = board.listing()
    summary = "0 tasks · 0 ready · 0 in progress · 0 blocked · 0 done"
    assert summary in flat(draw(tasklist_views.list_view([], listing), width))
    board_text = draw(board_views.board_view(listing), width)
    assert summary in flat(board_text) and "Blocked (0)" in board_text and "Done (0)" in board_text
    assert "0 tasks · 0 edges" in draw(graph_views.graph_view([], [], listing.lookup), width)
    from taskboard.views import viewmodel as views

    assert parse_dot(views.to_dot([], [], listing.lookup)) == ({}, [])
    assert views.to_mermaid([], [], listing.lookup) == "flowchart LR\n"
    assert tasklist_views.plain_lines([], listing) == []


@pytest.mark.parametrize("width", WIDTHS)
def test_markup_wide_and_long_subjects_are_shown_as_typed(odd, width):
    listing = odd.listing()
    records = listing.records
    views = {
        "list": tasklist_views.list_view(records, listing),
        "board": board_views.board_view(listing),
        "graph": graph_views.graph_view(records, graph.edges(records), listing.lookup),
    }
    for name, view in views.items():
        text = draw(view, width)
        assert fits(text, width), name
        assert ESCAPE not in draw(view, width, colour=False)
        if width == 160:  # cards are a quarter of the width: look at the board on a wider console
            wide = draw(view, 400) if name == "board" else text
            for subject in MARKUP_SUBJECTS + WIDE_SUBJECTS:
                assert subject in wide, (name, subject)
    # the styled output too: brackets reach the terminal as brackets
    assert "close [/] tag" in ansi(views["list"], 160)
    list_80 = draw(views["list"], 80)
    long_row = next(line for line in list_80.splitlines() if "Refactor" in line)
    assert "…" in long_row and "END" not in long_row
    record, neighbours = with_neighbours(odd, 1)
    panel = flat(draw(task_views.task_view(record, neighbours), width))
    assert "[blue]eve" in panel.replace(" ", "") or width < 80
    if width == 160:
        assert "[red]not red[/red] and [/]" in panel and "[bold]x" in panel and "labels [ui]" in panel


def test_board_card_caps_a_very_long_subject(odd):
    text = flat(draw(board_views.board_view(odd.listing()), 160))
    assert "Refactor the very long subject" in text and "END" not in text and "…" in text


def test_thousand_tasks_every_view(big):
    listing = big.listing()
    records = listing.records
    live = [r for r in records if r["status"] != "deleted"]
    assert len(records) == 1000
    text = draw(tasklist_views.list_view(big.select(listing, Query()), listing), 80)
    assert [int(m) for m in re.findall(r"^\s*#(\d+)\s", text, re.M)] == [r["id"] for r in live]
    assert expected_summary(records) in flat(text)
    for width in (40, 160):
        assert board_columns(draw(board_views.board_view(listing, every=True), width)) == expected_columns(records)
        # without --all, Done shows the most recently finished few and counts the rest
        collapsed = draw(board_views.board_view(listing), width)
        done = sorted((r for r in records if r["status"] == "completed"), key=lambda r: (r["updatedAt"], r["id"]))
        recent = {r["id"] for r in done[-common_views.DONE_FEW :]}
        assert {i for i, column in board_columns(collapsed).items() if column == "Done"} == recent
        assert f"+{300 - common_views.DONE_FEW} more" in collapsed and "Done (300)" in collapsed
        assert f"{300 - common_views.DONE_FEW} more cards: tasks board --all" in collapsed
    for width in (40,):  # the narrowest is the hard one: deep chains continue as new roots
        tree = draw(graph_views.graph_view(live, graph.edges(live), listing.lookup), width)
        assert fits(tree, width)
        assert {int(m) for m in re.findall(r"[✔◐○⊘] #(\d+)", tree)} == {r["id"] for r in live}
    unlocks = viewmodel.unlocks(records)
    for task_id in (301, 326, 350, 999):
        assert unlocks.get(task_id, 0) == expected_unlocks(records, task_id)


# -- watch -----------------------------------------------------------------------------


@pytest.mark.parametrize("plain", [False, True])
def test_watch_redraws_when_a_file_changes_and_stops_on_ctrl_c(sample, plain):
    out = Console(
        file=io.StringIO(),
        width=160,
        record=True,
        force_terminal=not plain,
        color_system=None if plain else "truecolor",
        highlight=False,
        markup=False,
    )
    naps = []

    def nap(seconds: float) -> None:  # stands in for time.sleep: acts instead of waiting
        naps.append(seconds)
        if len(naps) == 1:
            sample.create("Appeared while watching")
        elif len(naps) == 3:
            raise KeyboardInterrupt

    # a clock that stands still: a second ticking by between the naps (a slow machine) would redraw once more
    still = time.time()
    board_views.watch_board(sample, plain=plain, out=out, sleep=nap, clock=lambda: still)  # Ctrl-C ends it cleanly
    text = out.export_text()
    assert naps == [0.5, 0.5, 0.5]
    assert "Appeared while watching" in text and "#13" in text
    # drawn at the start and again after the change (Live adds a last refresh when it stops)
    assert text.count("Blocked (5)") == (2 if plain else 3)
    assert (ESCAPE in out.file.getvalue()) is not plain


def test_board_signature_sees_content_changes(sample):
    before = sample.store.signature()
    assert before == sample.store.signature()
    sample.update(8, Patch(subject="Docs for the new variables"))
    assert sample.store.signature() != before
    assert Store(sample.store.root / "missing").signature() == ()


# -- reviewed defects ------------------------------------------------------------------

NODE = re.compile(r"(?:[✔◐○⊘✖]|\[.\]) (?:(↑|\^) )?#(\d+)( \((?:after|before) #(\d+)\))?")
TOP_LEVEL = re.compile(r"(?:[├└]── |[+`]-- )")  # a tree line hanging right under the heading


def chain_records(length: int, fan: int = 0) -> list[dict]:
    """A chain 1 → 2 → … → length, then `fan` tasks all waiting on the last one."""
    stamp = "2026-11-29T18:00:00Z"
    records = [new_record(i, f"Step {i} of a long chain", "", "", {}, stamp) for i in range(1, length + fan + 1)]
    for record in records[1:length]:
        record["blockedBy"].append(record["id"] - 1)
        records[record["id"] - 2]["blocks"].append(record["id"])
    for record in records[length:]:
        record["blockedBy"].append(length)
        records[length - 1]["blocks"].append(record["id"])
    return records


def split_legend(text: str) -> tuple[str, str]:
    """A drawn graph as (the tree, its legend): the legend is the lines after the tree,
    the first that starts with no tree guide."""
    lines = text.splitlines()
    start = next(i for i in range(1, len(lines) + 1) if i == len(lines) or not re.match(r"[├└│ +`|]", lines[i]))
    return "\n".join(lines[:start]) + "\n", "\n".join(lines[start:])


def graph_text(board: Board, width: int, plain: bool = False) -> str:
    """The tree of the board's graph, without its legend."""
    return split_legend(graph_drawn(board, width, plain))[0]


def graph_drawn(board: Board, width: int, plain: bool = False) -> str:
    listing = board.listing()
    live = [r for r in listing.records if r["status"] != "deleted"]
    return draw(graph_views.graph_view(live, graph.edges(live), listing.lookup, plain=plain), width, colour=not plain)


@pytest.mark.parametrize("width", WIDTHS)
def test_task_panel_keeps_the_whole_subject_in_its_body(sample, odd, width):
    record, neighbours = with_neighbours(sample, 7)
    text = draw(task_views.task_view(record, neighbours), width)
    assert fits(text, width)
    title = text.splitlines()[0]
    assert "#7 · blocked" in title and "Remove" not in title  # the title is short and always fits
    assert "Remove the legacy loader and settings.ini" in flat(text.replace("│", " "))
    long_id = next(r["id"] for r in odd.listing().records if r["subject"] == LONG_SUBJECT)
    record, neighbours = with_neighbours(odd, long_id)
    text = draw(task_views.task_view(record, neighbours), width)
    assert fits(text, width) and flat(LONG_SUBJECT) in flat(text.replace("│", " "))


@pytest.mark.parametrize("plain", [False, True])
@pytest.mark.parametrize("width", WIDTHS)
def test_graph_marks_a_repeated_task_before_its_subject(sample, width, plain):
    text = graph_text(sample, width, plain)
    assert fits(text, width)
    firsts, repeats = [], []
    for line in text.splitlines()[1:]:
        node = NODE.search(line)
        if not node:
            assert "below" in line, line  # only a cut-for-depth line is no node
            continue
        (repeats if node.group(1) else firsts).append(int(node.group(2)))
    assert sorted(firsts) == [1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12]  # each task once unmarked
    # #7 waits on #4, #5, #6: drawn once, then marked at each other blocker (unless cut for depth)
    assert repeats.count(7) == 2 or width == 40
    assert {4, 5} <= set(repeats)
    legend = flat(split_legend(graph_drawn(sample, width, plain))[1])
    assert ("^ #N drawn above" if plain else "↑ #N drawn above") in legend


def test_graph_owner_never_pushes_the_subject_out(tmp_path):
    board = Board(Store(tmp_path / "owners"))
    board.create("Write the parser for the configuration files", owner="an-agent-with-a-very-long-name-indeed")
    board.create("Second task", blocked_by=[1], owner="bob")
    board.create("Third", blocked_by=[1, 2])
    for width in (40, 80):
        text = graph_text(board, width)
        assert fits(text, width)
        first = next(line for line in text.splitlines() if "#1 " in line)
        assert "Write the parser for the" in first  # at least 24 cells of subject, owner or not
        assert "↑ #3 Third" in text
    wide = graph_text(board, 160)
    assert "Write the parser for the configuration files  @an-agent-with-a-" in wide  # owners are capped
    assert "indeed" not in wide and "…" in wide
    assert "#2 Second task  @bob" in wide


@pytest.mark.parametrize("plain", [False, True])
def test_graph_cut_for_depth_keeps_ids_and_says_where_roots_come_from(tmp_path, sample, plain):
    board = write_board(tmp_path / "chain", chain_records(40, fan=6))
    records = records_of(board)
    blockers = {r["id"]: set(r["blockedBy"]) for r in records}
    for width in (40, 80):
        text = graph_text(board, width, plain)
        assert fits(text, width)
        lines = text.splitlines()
        drawn = [int(NODE.search(line).group(2)) for line in lines[1:] if NODE.search(line)]
        assert sorted(drawn) == [r["id"] for r in records]  # every task once, none lost
        continued = set()
        for line in lines:
            if "below" in line or re.search(r"(\.\.\.|…) #\d+", line):
                shown = re.search(r"(?:\.\.\.|…) ((?:#\d+(?:, )?)+)( \+(\d+))?", line)
                assert shown, line  # the ids are never cut
                continued |= {int(i) for i in re.findall(r"#(\d+)", shown.group(1))}
        assert continued
        for line in lines[1:]:
            node = NODE.search(line)
            if node and TOP_LEVEL.match(line) and node.group(2) != "1":
                # every top-level node but the real root says which blocker it continues from
                assert node.group(3), line
                assert int(node.group(4)) in blockers[int(node.group(2))]
        assert continued <= {
            int(NODE.search(line).group(2)) for line in lines if NODE.search(line) and TOP_LEVEL.match(line)
        }
    sample_40 = graph_text(sample, 40, plain)
    assert re.search(r"^(?:└── |`-- )(?:○|⊘|\[ \]) #11 \(after #7\)", sample_40, re.M)


def test_graph_focus_continues_upstream_with_before(tmp_path):
    board = write_board(tmp_path / "chain", chain_records(30))
    listing = board.listing()
    text = draw(graph_views.graph_view(listing.records, graph.edges(listing.records), listing.lookup, focus=30), 40)
    waits = text.split("unlocks")[0]
    assert re.search(r"#\d+ \(before #\d+\)", waits) and "after" not in waits
    assert {int(m) for m in re.findall(r"#(\d+)", waits)} == set(range(1, 31))


def test_the_watch_views_status_line_is_one_line_whatever_the_boards_path(sample, tmp_path):
    """The clock and the way out (Ctrl-C) always show, on one line under the summary; a long
    path is cut to fit (a board 4 folders deep in /tmp wrapped it into 3 lines, and fitting
    the view to the terminal then pushed "Ctrl-C to stop" off the top of the screen)."""
    deep = tmp_path / ("very-long-folder-name-" * 4) / "project" / ".tasks"
    shutil.copytree(sample.store.root, deep)
    for width in (40, 60):
        lines = draw(board_views.watch_view(Board(Store(deep)), fit=True, now=0), width, height=24).splitlines()
        status = [line for line in lines if "Ctrl-C to stop" in line]
        assert len(status) == 1 and time.strftime("%H:%M:%S", time.localtime(0)) in status[0], lines[:4]
        assert lines.index(status[0]) <= 3 and cell_len(status[0].rstrip()) <= width


@pytest.mark.parametrize("width", (40, 100))
def test_watch_view_fits_the_terminal_with_the_summary_on_top(big, sample, width):
    height = 24
    text = draw(board_views.watch_view(big, fit=True), width, height=height)
    lines = text.rstrip("\n").splitlines()
    assert len(lines) <= height and fits(text, width)
    assert flat(lines[0] + "\n" + lines[1]).startswith(expected_summary(records_of(big)))
    assert "Ctrl-C to stop" in " ".join(lines[:4])
    drawn = board_columns(text)
    shown_more = [int(n) for n in re.findall(r"\+(\d+) more", text)]
    expected = expected_columns(records_of(big))
    for name in ("Blocked", "Ready", "In progress", "Done"):
        total = sum(1 for column in expected.values() if column == name)
        assert f"{name} ({total})" in text
    assert len(drawn) + sum(shown_more) == len(expected)  # every card drawn or counted
    assert all(expected[task_id] == column for task_id, column in drawn.items())
    # a board that fits is drawn whole, and a view without fit never caps
    small = draw(board_views.watch_view(sample, fit=True), 160, height=60)
    assert "more" not in small and board_columns(small) == expected_columns(records_of(sample))
    # without fit only Done is collapsed
    assert re.findall(r"\+(\d+) more", draw(board_views.watch_view(big), 100)) == [str(300 - common_views.DONE_FEW)]


def test_mermaid_too_big_for_github_warns_on_stderr(big, sample, tmp_path):
    from taskboard.views import viewmodel as views

    listing = big.listing()
    live = [r for r in listing.records if r["status"] != "deleted"]
    edges = graph.edges(live)
    assert len(edges) > 500
    result = Run(big.store.root)("graph", "--format", "mermaid")
    assert parse_mermaid(result.stdout)[1] == edges  # stdout keeps the full diagram
    assert result.stderr.startswith("warning: ") and f"{len(edges)} edges" in result.stderr
    assert "tasks graph ID --format mermaid" in result.stderr
    assert Run(sample.store.root)("graph", "--format", "mermaid").stderr == ""
    assert Run(sample.store.root)("graph", "--format", "dot").stderr == ""
    json_run = Run(big.store.root)("graph", "--format", "mermaid", "--json")
    assert json_run.stderr == ""  # no diagram, nothing to warn about
    small = "flowchart LR\n" + "x" * 49_000
    assert views.mermaid_warning(small, 500) is None
    assert "characters" in views.mermaid_warning(small + "x" * 2_000, 10)


def test_board_watch_refuses_svg_and_json(sample, tmp_path):
    run = Run(sample.store.root)
    picture = tmp_path / "never.svg"
    refused = run("board", "--watch", "--svg", str(picture), expect=2)
    assert "--watch" in refused.stderr and "--svg" in refused.stderr and not picture.exists()
    refused = run("board", "--json", "--watch", expect=2)
    error = refused.stderr.strip().splitlines()[-1]
    assert '"code": "usage"' in error and "--watch" in error and refused.stdout == ""


def test_list_all_summary_adds_up(sample, capsys):
    listing = sample.listing()
    everything = sample.select(listing, Query(include_deleted=True))
    assert len(everything) == 12
    text = flat(draw(tasklist_views.list_view(everything, listing), 160))
    assert "12 tasks · 2 ready · 2 in progress · 5 blocked · 2 done · 1 deleted" in text and "shown" not in text
    tasklist_views.show_list(everything, listing, plain=True)
    summary = capsys.readouterr().err.strip()
    total, *parts = [int(n) for n in re.findall(r"(\d+) ", summary)]
    assert total == sum(parts) == len(everything) and "shown" not in summary
    only_deleted = sample.select(listing, Query(["deleted"]))
    assert flat(draw(tasklist_views.list_view(only_deleted, listing), 160)).endswith("1 deleted (1 shown)")
    live = sample.select(listing, Query())
    assert "shown" not in flat(draw(tasklist_views.list_view(live, listing), 160))


def test_plain_views_are_ascii_without_trailing_spaces(tmp_path):
    root = tmp_path / "board"
    shutil.copytree(EXAMPLE, root)
    for columns in ("40", "100"):
        for args in (("get", "2"), ("get", "7"), ("graph",), ("graph", "7"), ("board",)):
            shown = tasks_process("--dir", str(root), *args, env={"COLUMNS": columns, "PYTHONIOENCODING": "ascii"})
            assert shown.returncode == 0, (args, shown.stderr)
            out = shown.stdout.decode("ascii")  # the sample is all ASCII, so is every plain view of it
            assert "#2" in out or "#7" in out
            assert not [line for line in out.splitlines() if line != line.rstrip()], (args, columns)
    add = tasks_process("--dir", str(root), "create", "Ünïcødé 修复 🚀", "--blocked-by", "12")
    assert add.returncode == 0, add.stderr
    for env in ({"PYTHONIOENCODING": "ascii"}, {"PYTHONIOENCODING": "ascii", "FORCE_COLOR": "1"}):
        for args in (("get", "13"), ("graph",), ("graph", "13"), ("board",)):
            shown = tasks_process("--dir", str(root), *args, env=env)
            assert shown.returncode == 0, (args, env, shown.stderr)
            assert "#13" in shown.stdout.decode("ascii")  # what the encoding cannot show became ?
    utf8 = tasks_process("--dir", str(root), "get", "13", env={"PYTHONIOENCODING": "utf-8"})
    assert "Ünïcødé 修复 🚀" in utf8.stdout.decode()


def test_plain_get_and_graph_use_ascii_guides(sample):
    record, neighbours = with_neighbours(sample, 2)
    text = draw(task_views.task_view(record, neighbours, plain=True), 80, colour=False)
    assert "blocked by  -" in text and "—" not in text
    plain = graph_text(sample, 80, plain=True)
    assert plain.isascii() and "+-- [x] #1 " in plain and "|   " in plain
    assert plain.splitlines()[0].startswith("11 tasks, 14 edges")
