"""Views for people. Imported only when a person is reading: never on --json paths.

Every view is a rich renderable built from the records, so tests print it into a
recording console of any width and height; the `show_*` functions pick the console.
Views decide their layout at render time from the room they are given. User text
always enters rich as `Text`, never as markup, and every console here has markup off
as a second guard.

One colour language in every view (README "Colours"): what a person can act on (ready)
stands out in bold green; what waits (blocked) is quiet; what is finished is dim; work in
progress is cyan; red is kept for trouble (a cycle, a damaged file, a stale lease, a stuck
task, a failed gate). The symbols say the same without colour: ○ ready, ◐ in progress,
⊘ blocked, ✔ done, ✖ deleted, and `!` starts every word of trouble.

What the records do not hold (leases, failed attempts, gate results, journal events)
the command layer passes in as `facts`, task id → a dict (views.Notes says which keys);
a view given no facts shows what the records hold.

Plain mode (piped, NO_COLOR, TERM=dumb): no escape codes, the s12 markers instead
of coloured symbols, ASCII frames; `list` and `ready` write one unwrapped line per
task themselves, and summaries go to stderr.
"""

from __future__ import annotations

import io
import json
import os
import sys
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any
from xml.sax.saxutils import escape as xml_escape

from rich import box
from rich.cells import cell_len
from rich.color import blend_rgb
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.padding import Padding
from rich.panel import Panel
from rich.style import Style
from rich.table import Table
from rich.terminal_theme import SVG_EXPORT_THEME
from rich.text import Text
from rich.tree import Tree

from ..core.errors import UsageError
from ..core.graph import edges as graph_edges
from ..core.graph import open_blockers
from ..core.model import DEFAULT_PRIORITY, MARKERS, Record
from ..core.model import ids_text as _ids
from ..core.states import held_back, state
from . import viewmodel as views
from .plain import EVENTS_SHOWN, trouble_words
from .plain import task_text as plain_text_of_task
from .text import terminal_width
from .text import write as _write
from .viewmodel import STATE_LABELS, Notes, cyclic_ids, epoch, span, task_line, times, when_text

# -- the colour language ----------------------------------------------------------------

STATE_STYLES = {
    "blocked": "dim",
    "ready": "bold green",
    "in_progress": "cyan",
    "completed": "dim green",
    "deleted": "dim",
}
SUBJECT_STYLES = {"blocked": "", "ready": "", "in_progress": "", "completed": "dim", "deleted": "dim strike"}
HEADER_STYLES = {"blocked": "bold", "ready": "bold green", "in_progress": "bold cyan", "completed": "bold dim"}
SYMBOLS = {"blocked": "⊘", "ready": "○", "in_progress": "◐", "completed": "✔", "deleted": "✖"}
TROUBLE = "bold red"
TROUBLE_MARK = "!"
OWNER_STYLE = "magenta"
LABEL_STYLE = "dim"
PRIORITY_STYLES = {0: "bold", 1: "bold", 3: "dim", 4: "dim"}  # 2, the default, is not shown

SVG_WIDTH = 100  # pictures written when stdout is no terminal (make pictures) get a fixed width
CARD_SUBJECT = 120  # a kanban card shows at most this many characters of the subject
NARROW = 64  # below this many columns the board stacks its columns and the list drops columns
DONE_FEW = 5  # the board shows this many of the most recently finished tasks (`--all`: every one)

Facts = Mapping[int, Mapping[str, Any]]
NO_FACTS: Facts = {}


def console(plain: bool, stderr: bool = False, record: bool = False, width: int | None = None) -> Console:
    """The console a command prints to. Plain: no colour, no terminal codes at all."""
    stream = _lossy(sys.stderr if stderr else sys.stdout)
    if plain:
        return Console(
            file=stream,
            no_color=True,
            highlight=False,
            force_terminal=False,
            color_system=None,
            record=record,
            emoji=False,
            markup=False,
            width=width,
        )
    return Console(file=stream, highlight=False, record=record, emoji=False, markup=False, width=width)


class _Lossy:
    """A text stream that replaces what its encoding cannot show (`?`) instead of
    failing: a subject typed in any script must not crash a view on an ASCII
    terminal. rich reads `encoding` and draws ASCII frames and tree guides for it."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text: str) -> int:
        encoding = self._stream.encoding
        self._stream.write(text.encode(encoding, "replace").decode(encoding))
        return len(text)

    def __getattr__(self, name):
        return getattr(self._stream, name)


def _lossy(stream):
    encoding = (getattr(stream, "encoding", None) or "utf-8").lower().replace("_", "-")
    return stream if encoding.startswith("utf") else _Lossy(stream)


def plain_text(renderable: RenderableType, width: int, height: int | None = None) -> str:
    """A view as plain-mode text: no codes, and no trailing spaces (rich pads grids
    and indents to the full width)."""
    buffer = io.StringIO()
    out = Console(
        file=buffer,
        width=width,
        height=height,
        no_color=True,
        color_system=None,
        force_terminal=False,
        highlight=False,
        emoji=False,
        markup=False,
    )
    out.print(renderable)
    return "".join(line.rstrip() + "\n" for line in buffer.getvalue().splitlines())


def _show(renderable: RenderableType, plain: bool, out: Console | None = None) -> None:
    """Print a view for a person on stdout: plain mode as trimmed text."""
    out = out or console(plain)
    if plain:
        out.print(Text(plain_text(renderable, out.width).rstrip("\n")), soft_wrap=True)
    else:
        out.print(renderable)


def _mark(record: Record, key: str, plain: bool) -> Text:
    """The status at a glance: the s12 marker in plain mode, else a coloured symbol."""
    mark = Text()  # the style goes on the symbol only: callers append more to this Text
    if plain:
        mark.append(MARKERS[record["status"]])
    else:
        mark.append(SYMBOLS[key], style=STATE_STYLES[key])
    return mark


class _Context:
    """What every row of a view needs from the whole board, computed once."""

    def __init__(self, listing, facts: Facts | None, now: float | None):
        self.listing = listing
        self.lookup = listing.lookup
        self.facts = facts or NO_FACTS
        self.now = time.time() if now is None else now
        self.cyclic = cyclic_ids(graph_edges(listing.records))
        self.held = held_back(self.facts)  # what `ready` leaves out counts as blocked

    def notes(self, record: Record) -> Notes:
        return Notes(record, self.facts.get(record["id"]), self.now, record["id"] in self.cyclic)


# -- phrases that wrap only between each other ------------------------------------------


class Phrases:
    """Short phrases joined by ` · `, wrapped only between phrases, never inside one:
    at 40 columns `24 tasks · 6 ready` stays whole on its line."""

    def __init__(self, phrases: list[Text], separator: str = " · "):
        self.phrases = [phrase for phrase in phrases if phrase.plain]
        self.separator = separator

    def text(self, width: int) -> Text:
        lines: list[Text] = []
        line = Text()
        for phrase in self.phrases:
            if line.plain and line.cell_len + len(self.separator) + phrase.cell_len > width:
                lines.append(line)
                line = Text()
            if line.plain:
                line.append(self.separator, style="dim")
            line.append_text(phrase)
        lines.append(line)
        text = Text("\n").join(lines)
        text.overflow = "fold"
        return text

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self.text(options.max_width)


def trouble_counts(context: _Context, records: Iterable[Record]) -> Counter:
    tally: Counter = Counter()
    for record in records:
        tally.update(context.notes(record).troubles)
    return tally


def summary_line(
    records: list[Record], lookup, shown: int | None = None, with_deleted: bool = False, troubles=None, held=()
):
    """The summary as plain text for stderr, trouble counted after the states: one line,
    or, when stderr is a terminal, broken between phrases at its width (the terminal
    would otherwise break it mid-phrase)."""
    line = Phrases(summary_phrases(records, lookup, shown, True, with_deleted, troubles, held)).text(10**9).plain
    return views.between_phrases(line, terminal_width(sys.stderr))


def summary_phrases(
    records: list[Record],
    lookup,
    shown: int | None = None,
    plain: bool = False,
    with_deleted: bool = False,
    troubles: Counter | None = None,
    held: Collection[int] = (),
) -> list[Text]:
    """`12 tasks · 3 ready · 2 in progress · 5 blocked · 2 done`, each count in its
    state's colour, then what is in trouble (red), then `(N shown)` for a filtered view;
    `held` (what `ready` leaves out) counts as blocked."""
    line = views.summary(records, lookup, shown, with_deleted, held)
    line, _, shown_part = line.partition(" (")
    styles = {
        "tasks": "bold",
        "ready": STATE_STYLES["ready"],
        "progress": STATE_STYLES["in_progress"],
        "blocked": STATE_STYLES["blocked"],
        "done": STATE_STYLES["completed"],
        "deleted": "dim",
    }
    # styles as spans, not as a Text's base style: `(N shown)` joins the last phrase unstyled
    phrases = [Text.assemble((part, "" if plain else styles.get(part.split()[-1], ""))) for part in line.split(" · ")]
    for word, count in sorted((troubles or {}).items()):
        phrases.append(Text.assemble((f"{count} {word}", "" if plain else TROUBLE)))
    if shown_part:
        phrases[-1].append(" (" + shown_part, style="" if plain else "dim")
    return phrases


# -- pictures ---------------------------------------------------------------------------


def _write_svg(renderable: RenderableType, path: str, title: str) -> None:
    """The picture of a view: always in colour, as wide as the terminal, or SVG_WIDTH
    when there is none (so `make pictures` gives the same file every time)."""
    width = os.get_terminal_size(sys.stdout.fileno()).columns if _stdout_is_terminal() else SVG_WIDTH
    try:
        with open(path, "w", encoding="utf-8") as out:
            out.write(svg_picture(renderable, width, title))
    except OSError as exc:
        raise UsageError(f"cannot write the SVG to {path}: {exc.strerror}") from None


def _stdout_is_terminal() -> bool:
    try:
        return sys.stdout.isatty() and os.get_terminal_size(sys.stdout.fileno()).columns > 0
    except (OSError, ValueError, AttributeError):
        return False


# An SVG renders the same in librsvg, Chromium and Firefox only if nothing depends on the
# font the viewer picks: every character is placed at its own cell (an `x` per glyph, so a
# fallback font with other advances cannot run `#4` into `Port`), and frames and tree
# guides are drawn as lines, not box-drawing glyphs (which fallback fonts size unevenly).
SVG_FONTS = "'DejaVu Sans Mono', Menlo, Consolas, 'Liberation Mono', 'Noto Sans Mono', monospace"
SVG_CELL = 8.4  # px per cell: 0.6 em, the advance of the common monospace fonts at 14 px
SVG_LINE = 18.0  # px per line
SVG_FONT_SIZE = 14
SVG_MARGIN = 16.0
SVG_BASELINE = 13.0  # px from a line's top to the baseline of its text
# box-drawing characters as the arms they draw: (up, right, down, left), 1 light, 2 heavy
_BOX_ARMS = {
    "─": (0, 1, 0, 1),
    "│": (1, 0, 1, 0),
    "┌": (0, 1, 1, 0),
    "┐": (0, 0, 1, 1),
    "└": (1, 1, 0, 0),
    "┘": (1, 0, 0, 1),
    "├": (1, 1, 1, 0),
    "┤": (1, 0, 1, 1),
    "┬": (0, 1, 1, 1),
    "┴": (1, 1, 0, 1),
    "┼": (1, 1, 1, 1),
    "━": (0, 2, 0, 2),
    "┃": (2, 0, 2, 0),
    "┏": (0, 2, 2, 0),
    "┓": (0, 0, 2, 2),
    "┗": (2, 2, 0, 0),
    "┛": (2, 0, 0, 2),
    "┣": (2, 2, 2, 0),
    "┫": (2, 0, 2, 2),
    "┳": (0, 2, 2, 2),
    "┻": (2, 2, 0, 2),
    "╋": (2, 2, 2, 2),
    "╴": (0, 0, 0, 1),
    "╵": (1, 0, 0, 0),
    "╶": (0, 1, 0, 0),
    "╷": (0, 0, 1, 0),
}
_ROUNDED = {"╭": (0, 1, 1, 0), "╮": (0, 0, 1, 1), "╯": (1, 0, 0, 1), "╰": (1, 1, 0, 0)}
_STROKES = {1: 1.2, 2: 2.4}


def _number(value: float) -> str:
    return f"{value:.2f}".rstrip("0").rstrip(".")


def _xml_text(text: str) -> str:
    """User text as XML character data: escaped, and without the characters XML forbids."""
    kept = "".join(
        char
        if char in "\t\n\r" or 0x20 <= ord(char) <= 0xD7FF or 0xE000 <= ord(char) <= 0xFFFD or ord(char) > 0xFFFF
        else "\ufffd"
        for char in text
    )
    return xml_escape(kept, {'"': "&quot;"})


class _Canvas:
    """An SVG drawn cell by cell: backgrounds as rectangles, box drawing as merged
    strokes, text as `<text>` runs with an `x` for every glyph."""

    def __init__(self) -> None:
        self.theme = SVG_EXPORT_THEME
        self.rects: list[str] = []
        self.texts: list[str] = []
        self.curves: list[str] = []
        # (direction, line position, colour, weight) -> stretches along it
        self.strokes: dict[tuple[str, float, str, int], list[tuple[float, float]]] = {}

    def colours(self, style: Style) -> tuple[str, str | None]:
        """Foreground and background as the terminal theme shows them (dim blends in)."""
        background = self.theme.background_color
        fore = style.color.get_truecolor(self.theme, True) if style.color else self.theme.foreground_color
        back = style.bgcolor.get_truecolor(self.theme, False) if style.bgcolor else None
        if style.reverse:
            fore, back = back or background, fore
        if style.dim:
            fore = blend_rgb(fore, back or background, 0.4)
        return fore.hex, back.hex if back else None

    def text(self, run: list[tuple[int, str]], style: Style, top: float) -> None:
        if not run:
            return
        fill, _ = self.colours(style)
        xs = " ".join(_number(SVG_MARGIN + column * SVG_CELL) for column, _ in run)
        weight = ' font-weight="bold"' if style.bold else ""
        glyphs = _xml_text("".join(text for _, text in run))
        self.texts.append(f'<text x="{xs}" y="{_number(top + SVG_BASELINE)}" fill="{fill}"{weight}>{glyphs}</text>')
        run.clear()

    def box(self, char: str, column: int, top: float, colour: str) -> None:
        """A box-drawing character as strokes from the cell's centre to its edges."""
        left = SVG_MARGIN + column * SVG_CELL
        middle, right = left + SVG_CELL / 2, left + SVG_CELL
        centre, bottom = top + SVG_LINE / 2, top + SVG_LINE
        if char in _ROUNDED:
            up, east, _, _ = _ROUNDED[char]
            x_end, y_end = (right if east else left), (top if up else bottom)
            self.curves.append(
                f'<path d="M{_number(x_end)} {_number(centre)} Q{_number(middle)} {_number(centre)} '
                f'{_number(middle)} {_number(y_end)}" stroke="{colour}" stroke-width="{_STROKES[1]}" fill="none"/>'
            )
            return
        up, east, down, west = _BOX_ARMS[char]
        for weight, direction, at, stretch in (
            (west, "h", centre, (left, middle)),
            (east, "h", centre, (middle, right)),
            (up, "v", middle, (top, centre)),
            (down, "v", middle, (centre, bottom)),
        ):
            if weight:
                self.strokes.setdefault((direction, at, colour, weight), []).append(stretch)

    def row(self, segments: list[tuple[str, Style]], top: float) -> None:
        column = 0
        for text, style in segments:
            fill, back = self.colours(style)
            start = column
            run: list[tuple[int, str]] = []  # (column, glyph cluster) drawn as one <text>
            for char in text:
                size = cell_len(char)
                if size == 0 and run:  # a combining mark joins the glyph before it
                    run[-1] = (run[-1][0], run[-1][1] + char)
                    continue
                astral = len(char.encode("utf-16-le")) > 2  # outside the BMP: its own element
                if char == " " or char in _BOX_ARMS or char in _ROUNDED or astral:
                    self.text(run, style, top)
                if char in _BOX_ARMS or char in _ROUNDED:
                    self.box(char, column, top, fill)
                elif char != " ":
                    run.append((column, char))
                    if astral:
                        self.text(run, style, top)
                column += size
            self.text(run, style, top)
            if back and column > start:
                self.rects.append(
                    f'<rect x="{_number(SVG_MARGIN + start * SVG_CELL)}" y="{_number(top)}" '
                    f'width="{_number((column - start) * SVG_CELL)}" height="{_number(SVG_LINE)}" fill="{back}"/>'
                )

    def lines(self) -> list[str]:
        """The strokes, touching stretches merged so that no seam shows between cells."""
        drawn = []
        for (direction, at, colour, weight), stretches in sorted(self.strokes.items()):
            merged: list[list[float]] = []
            for begin, end in sorted(stretches):
                if merged and begin <= merged[-1][1] + 0.01:
                    merged[-1][1] = max(merged[-1][1], end)
                else:
                    merged.append([begin, end])
            path = " ".join(
                f"M{_number(begin)} {_number(at)}H{_number(end)}"
                if direction == "h"
                else f"M{_number(at)} {_number(begin)}V{_number(end)}"
                for begin, end in merged
            )
            drawn.append(f'<path d="{path}" stroke="{colour}" stroke-width="{_STROKES[weight]}" fill="none"/>')
        return drawn


def svg_picture(renderable: RenderableType, width: int, title: str) -> str:
    """The view as a standalone SVG: a dark terminal-like card with `$ <title>` on top."""
    picture = Console(
        file=io.StringIO(),
        width=width,
        force_terminal=True,
        color_system="truecolor",
        highlight=False,
        emoji=False,
        markup=False,
        legacy_windows=False,
    )
    lines = picture.render_lines(renderable, picture.options, pad=False)
    while lines and not "".join(segment.text for segment in lines[-1]).strip():
        lines.pop()
    grid: list[list[tuple[str, Style]]] = [[(f"$ {title}", Style(dim=True))], []]
    grid += [[(segment.text, segment.style or Style()) for segment in line] for line in lines]
    canvas = _Canvas()
    for row, segments in enumerate(grid):
        canvas.row(segments, SVG_MARGIN + row * SVG_LINE)
    columns = max([width] + [sum(cell_len(text) for text, _ in line) for line in grid])
    total_width = _number(2 * SVG_MARGIN + columns * SVG_CELL)
    total_height = _number(2 * SVG_MARGIN + len(grid) * SVG_LINE)
    size = f'width="{total_width}" height="{total_height}"'
    return "\n".join(
        [
            f'<svg xmlns="http://www.w3.org/2000/svg" {size} viewBox="0 0 {total_width} {total_height}" '
            f'role="img" aria-label="{_xml_text(title)}">',
            f"<title>{_xml_text(title)}</title>",
            f'<rect {size} rx="8" fill="{canvas.theme.background_color.hex}"/>',
            *canvas.rects,
            *canvas.lines(),
            *canvas.curves,
            f'<g font-family="{SVG_FONTS}" font-size="{SVG_FONT_SIZE}">',
            *canvas.texts,
            "</g>",
            "</svg>",
            "",
        ]
    )


# -- list / ready ---------------------------------------------------------------------


class _Column:
    __slots__ = ("cells", "header", "right", "size")

    def __init__(self, header: str, cells: list[Text], right: bool = False):
        self.header, self.cells, self.right, self.size = header, cells, right, 0


class TaskTable:
    """The list as a table: id, status, priority, subject, labels, owner, open blockers,
    and for pending tasks how many tasks each one unlocks. Laid out at render time: a
    column nobody needs is not shown, the subject takes the width left and runs on over
    the empty cells of its row (ellipsis only when it meets a filled one), and a narrow
    console gives up detail step by step instead of squeezing every column. Each row is
    one Text line built here, which keeps a 10 000-task list fast (a rich Table measures
    and renders every cell on its own)."""

    GAP = 2

    def __init__(self, records: list[Record], listing, plain: bool = False, context: _Context | None = None):
        self.records = records
        self.listing = listing
        self.plain = plain
        self.context = context or _Context(listing, None, None)

    def status(self, record: Record, key: str, notes: Notes, short: bool = False) -> Text:
        """`◐ in progress`, or `!` and the trouble in red; `short`: the symbol alone."""
        if notes.troubles:
            return Text(TROUBLE_MARK + ("" if short else f" {notes.troubles[0]}"), style=TROUBLE)
        if notes.elsewhere:  # held back as blocked here, but someone is on it (◐) or finished it (✔) there
            key = "completed" if notes.elsewhere.startswith("completed") else "in_progress"
        cell = _mark(record, key, self.plain)
        if not short:
            cell.append(f" {'elsewhere' if notes.elsewhere else STATE_LABELS[key]}", style=STATE_STYLES[key])
        return cell

    def columns(self) -> tuple[dict[str, _Column], list[Text]]:
        """Every column that has something to show, and the short status cells."""
        context = self.context
        lookup = context.lookup
        unlocks = views.unlocks(self.listing.records)
        rows = []
        for record in self.records:
            key = state(record, lookup, context.held)
            blockers = open_blockers(record, lookup) if record["status"] != "completed" else []
            count = unlocks.get(record["id"], 0) if record["status"] == "pending" else 0
            rows.append((record, key, context.notes(record), blockers, count))
        top = max((count for _, key, _, _, count in rows if key == "ready"), default=0)

        def unlock_style(key: str, count: int) -> str:
            return ("bold" if count == top else "") if key == "ready" else "dim"

        def priority(notes: Notes) -> Text:
            shown = "" if notes.priority == DEFAULT_PRIORITY else f"P{notes.priority}"
            return Text(shown, style=PRIORITY_STYLES.get(notes.priority, ""))

        def blocked_by(ids: list[int]) -> Text:
            return Text(_ids(ids) if len(ids) <= 3 else f"{_ids(ids[:3])} +{len(ids) - 3}", style="dim")

        columns = {
            "id": _Column(
                "id",
                [Text(f"#{r['id']}", style=TROUBLE if n.troubles else STATE_STYLES[key]) for r, key, n, *_ in rows],
                right=True,
            ),
            "status": _Column("status", [self.status(r, key, notes) for r, key, notes, *_ in rows]),
            "priority": _Column("pri", [priority(notes) for _, _, notes, *_ in rows]),
            "subject": _Column("subject", [_subject_cell(r, key, n) for r, key, n, *_ in rows]),
            "labels": _Column("labels", [Text(", ".join(n.labels), style=LABEL_STYLE) for _, _, n, *_ in rows]),
            "owner": _Column("owner", [Text(r["owner"], style=OWNER_STYLE) for r, *_ in rows]),
            "blocked": _Column("blocked by", [blocked_by(ids) for *_, ids, _ in rows]),
            "unlocks": _Column(
                "unlocks", [Text(str(n) if n else "", style=unlock_style(key, n)) for _, key, *_, n in rows], right=True
            ),
        }
        for name in ("priority", "labels", "owner", "blocked", "unlocks"):  # a column nobody needs is not shown
            if not any(cell.plain for cell in columns[name].cells):
                del columns[name]
        for name, column in columns.items():
            natural = max([cell_len(column.header)] + [cell.cell_len for cell in column.cells])
            column.size = natural if name == "subject" else min(natural, 16 if name == "labels" else 24)
        return columns, [self.status(r, key, notes, short=True) for r, key, notes, *_ in rows]

    def fit(self, columns: dict[str, _Column], short: list[Text], width: int) -> None:
        """Give the subject 40% of the width by giving up detail, least useful first."""
        subject = columns["subject"]

        def room() -> int:
            return width - sum(c.size + self.GAP for c in columns.values() if c is not subject)

        wanted = min(subject.size, max(12, width * 2 // 5))
        for step in ("labels", "symbol only", "short owner", "unlocks", "owner", "short blockers"):
            if room() >= wanted:
                break
            if step == "symbol only":
                status = columns["status"]
                status.header, status.cells, status.size = "", short, max((c.cell_len for c in short), default=1)
            elif step == "short owner" and "owner" in columns:
                columns["owner"].size = min(columns["owner"].size, 10)
            elif step in ("labels", "unlocks", "owner"):
                columns.pop(step, None)
            elif step == "short blockers" and "blocked" in columns:
                columns["blocked"].size = min(columns["blocked"].size, 8)
        subject.size = max(1, min(subject.size, room()))

    def line(self, order: list[_Column], cells: list[Text], at_subject: int) -> Text:
        """One row: every cell cut to its column, the subject running on over empty cells."""
        parts = []
        index = 0
        while index < len(order):
            column, cell = order[index], cells[index].copy()
            size, following = column.size, index + 1
            if index == at_subject:  # run on over the empty cells to the right
                while following < len(order) and not cells[following].plain:
                    size += self.GAP + order[following].size
                    following += 1
            cell.truncate(size, overflow="ellipsis")
            padding = " " * (size - cell.cell_len)  # unstyled: a struck-through subject ends where it ends
            parts.append(Text.assemble(padding, cell) if column.right else Text.assemble(cell, padding))
            index = following
        joined = Text(" " * self.GAP).join(parts)
        joined.rstrip()
        return joined

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = options.max_width
        columns, short = self.columns()
        self.fit(columns, short, width)
        order = list(columns.values())
        at_subject = order.index(columns["subject"])
        header = self.line(order, [Text(c.header, style="bold") for c in order], at_subject)
        span_ = sum(c.size for c in order) + self.GAP * (len(order) - 1)  # the rule spans the table
        rule = Text(("-" if self.plain else "─") * min(span_, width), style="dim")
        body = [self.line(order, [c.cells[index] for c in order], at_subject) for index in range(len(self.records))]
        table = Text("\n").join([header, rule, *body])
        table.no_wrap, table.overflow, table.end = True, "crop", "\n"
        yield table


def _subject_cell(record: Record, key: str, notes: Notes) -> Text:
    """The subject, then what the plan and time say of the task (`3/5 done · due 2026-12-24`)."""
    cell = Text(record["subject"], style=SUBJECT_STYLES[key])
    if notes.plan:
        cell.append("  " + " · ".join(notes.plan), style=TROUBLE if notes.overdue else "dim")
    return cell


def list_view(
    records: list[Record], listing, plain: bool = False, facts: Facts | None = None, now: float | None = None
) -> RenderableType:
    """The table and, under it, the summary of the whole board."""
    context = _Context(listing, facts, now)
    summary = Phrases(
        summary_phrases(
            listing.records,
            listing.lookup,
            len(records),
            plain,
            _lists_deleted(records),
            trouble_counts(context, listing.records),
            context.held,
        )
    )
    if not records:
        return Group(Text("no tasks to show", style="dim"), summary)
    return Group(TaskTable(records, listing, plain, context), summary)


def _lists_deleted(records: list[Record]) -> bool:
    """Whether a list shows deleted tasks (`--all`): then they count in its summary's total."""
    return any(record["status"] == "deleted" for record in records)


def plain_lines(records: list[Record], listing) -> list[str]:
    """One line per task for plain mode, never wrapped, and nothing after the subject:
    `[ ] #4: Write parser`, so a script can take everything after `#4: ` as the subject
    (a subject may contain anything). Owners and blockers are in `board`, `get`, --json."""
    return [task_line(record) for record in records]


def show_list(
    records: list[Record], listing, plain: bool, facts: Facts | None = None, now: float | None = None
) -> None:
    if plain:
        text = "".join(line + "\n" for line in plain_lines(records, listing))
        _write(sys.stdout, text)
        context = _Context(listing, facts, now)
        summary = summary_line(
            listing.records,
            listing.lookup,
            len(records),
            _lists_deleted(records),
            trouble_counts(context, listing.records),
            context.held,
        )
        _write(sys.stderr, summary + "\n")
        return
    console(plain).print(list_view(records, listing, plain, facts, now))


# -- board ----------------------------------------------------------------------------


def _card(record: Record, key: str, lookup, unlock: int, plain: bool, notes: Notes, changed: bool = False) -> Text:
    """A kanban card: id and subject, then one line each for what a person looks for:
    priority and labels, owner, the lease, what it waits on, what it unlocks, and trouble
    (every trouble line starts with `!`)."""
    card = Text(overflow="fold")
    if plain:
        card.append(MARKERS[record["status"]] + " ")
    card.append(f"#{record['id']}", style=f"bold {STATE_STYLES[key]}" + (" reverse" if changed else ""))
    subject = record["subject"]
    card.append(
        " " + (subject if len(subject) <= CARD_SUBJECT else subject[: CARD_SUBJECT - 1] + "…"),
        style=SUBJECT_STYLES[key],
    )
    tags = Text()
    if notes.priority != DEFAULT_PRIORITY:
        tags.append(f"P{notes.priority}", style=PRIORITY_STYLES.get(notes.priority, ""))
    if notes.labels:
        tags.append((" · " if tags.plain else "") + ", ".join(notes.labels), style=LABEL_STYLE)
    if tags.plain:
        card.append("\n")
        card.append_text(tags)
    if record["owner"]:
        card.append("\n@" + record["owner"], style=OWNER_STYLE)
    if notes.lease_short and not notes.stale:
        card.append("\n" + notes.lease_short, style="dim")
    if notes.elsewhere:
        card.append("\n" + notes.elsewhere, style="cyan")
    blockers = open_blockers(record, lookup) if key != "completed" else []
    if blockers:
        card.append("\nwaits on " + _ids(blockers), style="dim")
    if key == "ready" and unlock:
        card.append(f"\nunlocks {unlock}")
    if notes.plan:
        card.append("\n" + " · ".join(notes.plan), style=TROUBLE if notes.overdue else "dim")
    for trouble in trouble_words(notes):
        card.append(f"\n{TROUBLE_MARK} {trouble}", style=TROUBLE)
    if notes.attempts and not notes.stuck:
        card.append(f"\nfailed {times(notes.attempts)}", style="dim")
    return card


def _fit_line(line: Text, subject: str, style: str, owner: str, owner_max: int, subject_min: int, width: int) -> Text:
    """Finish a one-line entry in `width` cells: the subject cut to what is left, then the
    owner (cut to `owner_max`, and left out when it would leave the subject fewer than
    `subject_min` cells)."""
    tail = Text()
    if owner:
        tail = Text(owner, style=OWNER_STYLE)
        tail.truncate(owner_max + 2, overflow="ellipsis")
    room = width - line.cell_len - 1
    if room - tail.cell_len < min(subject_min, cell_len(subject)):
        tail = Text()
    text = Text(" " + subject, style=style)
    text.truncate(max(0, room - tail.cell_len) + 1, overflow="ellipsis")
    line.append_text(text)
    line.append_text(tail)
    line.truncate(width, overflow="ellipsis")
    line.no_wrap = True
    return line


class _CardLine:
    """A card in one line, for a narrow board that cannot show every card whole: the id,
    `!` when in trouble, the subject cut to the width, and the owner (`tasks get ID` has
    the rest)."""

    OWNER_MAX = 14

    def __init__(self, record: Record, key: str, plain: bool, notes: Notes, changed: bool = False):
        self.record, self.key, self.plain, self.notes, self.changed = record, key, plain, notes, changed

    def text(self, width: int) -> Text:
        record, key = self.record, self.key
        line = Text(MARKERS[record["status"]] + " " if self.plain else "")
        line.append(f"#{record['id']}", style=f"bold {STATE_STYLES[key]}" + (" reverse" if self.changed else ""))
        if self.notes.troubles:
            line.append(f" {TROUBLE_MARK}", style=TROUBLE)
        owner = " @" + record["owner"] if record["owner"] else ""
        return _fit_line(line, record["subject"], SUBJECT_STYLES[key], owner, self.OWNER_MAX, 12, width)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self.text(options.max_width)


def _recent_first(record: Record) -> tuple:
    return (record.get("updatedAt") or "", record["id"])


class BoardView:
    """The kanban board: Blocked · Ready · In progress · Done. Side by side when there
    is room; stacked, one titled list per column, below NARROW. Ready cards come in
    ready order (priority, then id; a stuck task last), Done cards most recent first and
    only the first DONE_FEW of them unless `every`, the others in id order with the
    ones in trouble first. `caps` limits the cards
    drawn per column (the rest become `+N more`), for a view that must fit a height.
    `records` narrows what is shown (filters); blockers are still read from the whole
    board."""

    ORDER = ("Ready", "In progress", "Blocked", "Done")  # who gets room first when it is short

    def __init__(
        self,
        listing,
        plain: bool = False,
        *,
        records: list[Record] | None = None,
        context: _Context | None = None,
        every: bool = False,
        changed: Iterable[int] = (),
    ):
        self.listing = listing
        self.plain = plain
        self.caps: dict[str, int] = {}
        self.records = listing.records if records is None else records
        self.context = context or _Context(listing, None, None)
        self.every = every
        self.changed = set(changed)
        self._cards: dict[str, list[Text]] | None = None
        self._lines: dict[str, list[_CardLine]] = {}  # the same cards in one line each
        self.compact = False  # stacked and short of room: one line per card
        self.troubled: dict[str, list[bool]] = {}  # per column, per card: in trouble?

    def cards(self) -> dict[str, list[Text]]:
        if self._cards is None:
            context = self.context
            lookup = context.lookup
            unlocks = views.unlocks(self.listing.records)
            found = views.columns(self.records, lookup, context.held)  # Ready: what `ready` lists, in its order
            for name in ("Blocked", "In progress"):  # trouble first, where a short screen still shows it
                found[name].sort(key=lambda r: not context.notes(r).troubles)
            found["Done"].sort(key=_recent_first, reverse=True)
            if self.changed:  # what just changed comes first, where a capped column still shows it
                for column in found.values():
                    column.sort(key=lambda r: r["id"] not in self.changed)
            self._cards = {}
            self.troubled = {name: [bool(context.notes(r).troubles) for r in found[name]] for name in found}
            for name, key in views.COLUMNS:
                self._cards[name] = [
                    _card(
                        r, key, lookup, unlocks.get(r["id"], 0), self.plain, context.notes(r), r["id"] in self.changed
                    )
                    for r in found[name]
                ]
                self._lines[name] = [
                    _CardLine(r, key, self.plain, context.notes(r), r["id"] in self.changed) for r in found[name]
                ]
        return self._cards

    def header(self, name: str, key: str, count: int) -> Text:
        return Text(f"{name} ({count})", style="" if self.plain else HEADER_STYLES[key])

    def cap(self, name: str) -> int | None:
        caps = [self.caps[name]] if name in self.caps else []
        if name == "Done" and not self.every:
            caps.append(DONE_FEW)
        return min(caps) if caps else None

    def shown(self, name: str, column: list) -> list:
        """The cards drawn for a column: all, or as many as its cap and `+N more`."""
        cap = self.cap(name)
        if cap is None or len(column) <= cap:
            return column
        return [*column[:cap], Text(f"+{len(column) - cap} more", style="dim")]

    def hidden(self) -> int:
        """How many cards the caps leave out."""
        total = 0
        for name, column in self.cards().items():
            cap = self.cap(name)
            total += max(0, len(column) - cap) if cap is not None else 0
        return total

    @staticmethod
    def widths(width: int) -> list[int]:
        """The text width of each column side by side: what is left after the frame
        (5 cells) and the padding (2 per column), shared out evenly."""
        room = max(4, width - 5 - 2 * len(views.COLUMNS))
        share, extra = divmod(room, len(views.COLUMNS))
        return [share + (1 if index < extra else 0) for index in range(len(views.COLUMNS))]

    def fit(self, console: Console, options: ConsoleOptions, room: int) -> None:
        """Cap the columns so that the board takes at most `room` lines: cards are handed
        out one per column in turn, a card in trouble first, then the columns to act on,
        while they fit. Stacked (a narrow screen), each card then takes one line."""
        cards = self.cards()
        width = options.max_width
        stacked = width < NARROW
        widths = dict(zip(cards, [width - 2] * len(cards) if stacked else self.widths(width), strict=True))
        heights: dict[str, list[int]] = {name: [] for name in cards}

        def card_height(name: str, index: int) -> int:
            known = heights[name]
            while len(known) <= index:
                card = cards[name][len(known)]
                known.append(len(console.render_lines(card, options.update_width(widths[name]), pad=False)))
            return known[index]

        def full_height(name: str, cap: int) -> int:
            items = min(cap, len(cards[name])) + (1 if cap < len(cards[name]) else 0)
            lines = sum(card_height(name, index) for index in range(min(cap, len(cards[name]))))
            return lines + (1 if cap < len(cards[name]) else 0) + max(0, items - 1)

        keys = dict(views.COLUMNS)
        head = {
            name: len(
                console.render_lines(
                    self.header(name, keys[name], len(cards[name])), options.update_width(widths[name]), pad=False
                )
            )
            for name in cards
        }

        # stacked and short of room: a card takes one line, no blank line between cards or columns
        self.compact = stacked

        def column_height(name: str, cap: int) -> int:
            if self.compact:
                return min(cap, len(cards[name])) + (1 if cap < len(cards[name]) else 0)
            return full_height(name, cap)

        def total(caps: dict[str, int]) -> int:
            if stacked:
                return sum(head[name] + column_height(name, caps[name]) for name in cards)
            return 3 + max(head.values()) + max([1] + [column_height(name, caps[name]) for name in cards])

        limits = {name: len(cards[name]) for name in cards}
        if not self.every:
            limits["Done"] = min(limits["Done"], DONE_FEW)
        caps = dict.fromkeys(cards, 0)

        def turn(name: str) -> tuple[bool, int]:  # a card in trouble goes before all others
            troubled = caps[name] < limits[name] and self.troubled[name][caps[name]]
            return (not troubled, self.ORDER.index(name))

        growing = True
        while growing:
            growing = False
            for name in sorted(self.ORDER, key=turn):
                if caps[name] < limits[name]:
                    caps[name] += 1
                    if total(caps) <= room:
                        growing = True
                    else:
                        caps[name] -= 1
        self.caps = caps
        # the arithmetic above mirrors the layout; the real thing has the last word
        while len(console.render_lines(self, options, pad=False)) > room and any(caps.values()):
            fullest = max(caps, key=lambda name: caps[name])
            caps[fullest] -= 1

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        cards = self.cards()
        keys = dict(views.COLUMNS)
        if options.max_width < NARROW and self.compact:  # a short screen: one line per card
            for name, column in cards.items():
                yield self.header(name, keys[name], len(column))
                for card in self.shown(name, self._lines[name]):
                    yield Padding(card, (0, 0, 0, 2))
            return
        if options.max_width < NARROW:
            for index, (name, column) in enumerate(cards.items()):
                if index:
                    yield Text("")
                yield self.header(name, keys[name], len(column))
                for number, card in enumerate(self.shown(name, column)):
                    if number:
                        yield Text("")  # a blank line between cards, as side by side
                    yield Padding(card, (0, 0, 0, 2))
            return
        table = Table(box=box.ASCII2 if self.plain else box.ROUNDED, show_lines=False, padding=(0, 1), safe_box=True)
        for (name, column), width in zip(cards.items(), self.widths(options.max_width), strict=True):
            table.add_column(self.header(name, keys[name], len(column)), width=width, overflow="fold")
        cells = []
        for name, column in cards.items():
            stacked: list[RenderableType] = []
            for card in self.shown(name, column):
                if stacked:
                    stacked.append(Text(""))
                stacked.append(card)
            cells.append(Group(*stacked))
        table.add_row(*cells)
        yield table


class BoardScreen:
    """The board with what goes around it: `top` lines above (the watch view's clock),
    the summary below (colour mode; plain mode writes it to stderr, `reserve` lines),
    and a hint when cards were left out. With `height`, the cards per column are capped
    so that the whole screen fits: every column's header stays in sight."""

    def __init__(
        self,
        view: BoardView,
        summary: RenderableType | None,
        height: int | None = None,
        top: Iterable[RenderableType] = (),
        reserve: int = 0,
    ):
        self.view = view
        self.summary = summary
        self.height = height
        self.top = list(top)
        self.reserve = reserve

    def hint(self) -> Text | None:
        hidden = self.view.hidden()
        if not hidden:
            return None
        return Text(f"{hidden} more cards: tasks board --all", style="dim")

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        view = self.view
        around = [*self.top, *([self.summary] if self.summary is not None else [])]
        if self.height is not None:
            measure = options.update(height=None)
            fixed = self.reserve + (len(console.render_lines(Group(*around), measure, pad=False)) if around else 0)
            room = self.height - fixed
            hint = self.hint()
            hint_lines = len(console.render_lines(hint, measure, pad=False)) if hint and not self.reserve else 0
            if len(console.render_lines(view, measure, pad=False)) + hint_lines > room:
                view.fit(console, measure, room - (0 if self.reserve else 1))  # a line kept for the hint
        yield from self.top
        yield view
        if self.summary is not None:
            yield self.summary
        hint = self.hint()
        if hint is not None and not self.reserve:
            yield hint


def board_view(
    listing,
    plain: bool = False,
    *,
    records: list[Record] | None = None,
    facts: Facts | None = None,
    now: float | None = None,
    every: bool = False,
    height: int | None = None,
    reserve: int = 0,
) -> BoardScreen:
    """The board with the summary under it (colour mode; plain mode puts it on stderr)."""
    context = _Context(listing, facts, now)
    view = BoardView(listing, plain, records=records, context=context, every=every)
    summary = None if plain else Phrases(_board_summary(listing, records, context))
    return BoardScreen(view, summary, height, reserve=reserve)


def _board_summary(listing, records: list[Record] | None, context: _Context) -> list[Text]:
    shown = None if records is None else sum(1 for r in records if r["status"] != "deleted")
    return summary_phrases(
        listing.records, listing.lookup, shown, False, False, trouble_counts(context, listing.records), context.held
    )


def show_board(
    listing,
    plain: bool,
    svg: str | None = None,
    *,
    records: list[Record] | None = None,
    facts: Facts | None = None,
    every: bool = False,
    now: float | None = None,
) -> None:
    """The board on stdout, fitted to the terminal's height unless `every`; in plain
    mode the summary (and the hint about cards left out) go to stderr."""
    out = console(plain)
    context = _Context(listing, facts, now)
    # fit the terminal, less one line for the next prompt; piped or `--all`: everything
    height = max(8, out.size.height - 1) if _stdout_is_terminal() and not every else None
    view = BoardView(listing, plain, records=records, context=context, every=every)
    screen = BoardScreen(view, None if plain else Phrases(_board_summary(listing, records, context)), height)
    if plain:
        shown = None if records is None else sum(1 for r in records if r["status"] != "deleted")
        summary = summary_line(
            listing.records, listing.lookup, shown, False, trouble_counts(context, listing.records), context.held
        )
        # the summary and the hint go to stderr, one unwrapped line each: as many rows as
        # the terminal wraps them into (the hint's length is known before its count)
        width = max(1, out.width)
        rows = sum(-(-cell_len(line) // width) for line in summary.splitlines())
        screen.reserve = rows + -(-len("9999 more cards: tasks board --all") // width)
        _show(screen, plain, out)
        hint = screen.hint()
        _write(sys.stderr, summary + "\n" + (hint.plain + "\n" if hint else ""))
    else:
        out.print(screen)
    if svg:
        picture = BoardScreen(
            BoardView(listing, False, records=records, context=context, every=every),
            Phrases(_board_summary(listing, records, context)),
        )
        _write_svg(picture, svg, title="tasks board")


def groups_view(listing, groups: list, plain: bool, context: _Context) -> RenderableType:
    """`board --by-parent`: each parent's line (its state, subject and progress), its
    children's lines under it, then the tasks no plan holds."""
    lines = []
    for parent, children in groups:
        if parent is None:
            lines.append(Text("no parent", style="bold"))
        else:
            lines.append(_group_line(parent, context, plain, head=True))
        lines += [_group_line(child, context, plain) for child in children]
        lines.append(Text(""))
    return Group(*lines[:-1]) if lines else Text("no tasks to show", style="dim")


def _group_line(record: Record, context: _Context, plain: bool, head: bool = False) -> Text:
    key = state(record, context.lookup, context.held)
    notes = context.notes(record)
    line = Text("" if head else "  ")
    line.append_text(_mark(record, key, plain))
    line.append(f" #{record['id']}", style=f"bold {STATE_STYLES[key]}")
    line.append(" " + record["subject"], style="bold" if head else SUBJECT_STYLES[key])
    words = [word for word in notes.plan if not word.startswith("part of")]
    if record["owner"]:
        line.append(f" @{record['owner']}", style=OWNER_STYLE)
    if words:
        line.append("  " + " · ".join(words), style=TROUBLE if notes.overdue else "dim")
    line.no_wrap, line.overflow = True, "ellipsis"
    return line


def show_groups(listing, groups: list, plain: bool, facts: Facts | None = None, now: float | None = None) -> None:
    context = _Context(listing, facts, now)
    _show(groups_view(listing, groups, plain, context), plain)


HIGHLIGHT = 60.0  # seconds a changed card stays highlighted in the watch view


class Watcher:
    """A watch session: the board as last read, and what changed when. Reading is the
    only thing that touches the disk; the view is drawn again from here every second
    (for the clock) without reading anything."""

    def __init__(self, board, clock: Callable[[], float] = time.time, facts_of=None):
        self.board = board
        self.clock = clock
        self.facts_of: Callable[[Any], Facts] | None = facts_of  # the runtime facts of a listing
        self.facts: Facts = NO_FACTS
        self.listing = None
        self.error: str | None = None
        self.changed_at: dict[int, float] = {}
        self.last_change: float | None = None
        self.news: list[str] = []

    def read(self) -> None:
        from ..core.errors import TaskError

        try:
            listing = self.board.listing()
        except TaskError as exc:
            self.error = exc.message
            return
        self.error = None
        self.facts = self.facts_of(listing) if self.facts_of else NO_FACTS
        now = self.clock()
        if self.listing is not None:
            before = {record["id"]: record for record in self.listing.records}
            news = []
            for record in listing.records:
                old = before.get(record["id"])
                if old != record:
                    self.changed_at[record["id"]] = now
                    news.append(_what_changed(old, record, self.listing.lookup, listing.lookup))
            if news:
                self.last_change, self.news = now, news
        self.listing = listing

    def recent(self, now: float) -> set[int]:
        return {task_id for task_id, at in self.changed_at.items() if now - at < HIGHLIGHT}


def _what_changed(old: Record | None, new: Record, old_lookup, new_lookup) -> str:
    """`#13 new`, `#4 in progress`, `#4 @bob`, `#4 edited`: the change in a few words."""
    if old is None:
        return f"#{new['id']} new"
    was, now = state(old, old_lookup), state(new, new_lookup)
    if was != now:
        return f"#{new['id']} {STATE_LABELS[now]}"
    if old["owner"] != new["owner"]:
        return f"#{new['id']} " + (f"@{new['owner']}" if new["owner"] else "released")
    return f"#{new['id']} edited"


class WatchView:
    """The board as the watcher shows it: first what must stay in sight (the summary,
    a live clock, how to stop, what changed last, any damage), then the board with the
    cards that changed in the last minute highlighted. With `fit`, the board keeps as
    many cards per column as the console's height leaves room for, so nothing below the
    cards is ever cut off and the top never scrolls away."""

    def __init__(
        self,
        watcher: Watcher,
        plain: bool = False,
        fit: bool = False,
        now: float | None = None,
        select: Callable[[Any], list[Record] | None] | None = None,
        every: bool = False,
    ):
        self.watcher = watcher
        self.plain = plain
        self.fit = fit
        self.now = now
        self.select = select
        self.every = every

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        watcher = self.watcher
        now = watcher.clock() if self.now is None else self.now
        dot = " - " if self.plain else " · "
        clock = time.strftime("%H:%M:%S", time.localtime(now))
        top: list[RenderableType] = []
        listing = watcher.listing
        records = self.select(listing) if self.select and listing is not None else None
        if listing is not None:
            context = _Context(listing, watcher.facts, now)
            top.append(Phrases(_board_summary(listing, records, context)))
        top.append(Text(f"{watcher.board.store.root}{dot}{clock}{dot}Ctrl-C to stop", style="dim"))
        if watcher.news and watcher.last_change is not None:
            first = Text.assemble((f"changed {span(now - watcher.last_change)} ago: ", "bold"), watcher.news[0])
            top.append(Phrases([first, *(Text(item) for item in watcher.news[1:])], ", "))
        if watcher.error is not None:
            top.append(Text(f"{TROUBLE_MARK} cannot read the board: {watcher.error}", style=TROUBLE))
        if listing is None:
            yield from top
            return
        top += [Text(f"{TROUBLE_MARK} damaged: {damage.message}", style=TROUBLE) for damage in listing.damaged]
        view = BoardView(
            listing, self.plain, records=records, context=context, every=self.every, changed=watcher.recent(now)
        )
        height = options.max_height if self.fit and options.max_height else None
        yield BoardScreen(view, None, height, top=top)


def watch_view(board, plain: bool = False, fit: bool = False, now: float | None = None) -> RenderableType:
    """The watch view of the board as it is now (one read)."""
    watcher = Watcher(board)
    watcher.read()
    return WatchView(watcher, plain, fit, now)


def watch_board(
    board,
    plain: bool,
    out: Console | None = None,
    interval: float = 0.5,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.time,
    select: Callable[[Any], list[Record] | None] | None = None,
    every: bool = False,
    facts: Callable[[Any], Facts] | None = None,
    signature: Callable[[], Any] | None = None,
) -> None:
    """Redraw the board whenever a file under it changes, until Ctrl-C. Polls the board's
    signature (and `signature`: the runtime state's) every `interval` seconds (cheap: no
    file is read unless one changed); `facts` gives the runtime facts of a fresh listing.
    On a terminal the view is redrawn in place (rich Live), fits its height, and its clock
    ticks every second; plain mode prints each new view after the last one, which suits a
    log."""
    from rich.live import Live

    out = out or console(plain)
    store = board.store
    watcher = Watcher(board, clock, facts)

    def changes() -> Any:
        return (store.signature(), signature() if signature else None)

    seen = None
    try:
        if plain or not out.is_terminal:
            while True:
                now_seen = changes()
                if now_seen != seen:
                    if seen is not None:
                        out.print(Text("-" * min(out.width, 40)))
                    seen = now_seen
                    watcher.read()
                    view = WatchView(watcher, plain, fit=out.is_terminal, select=select, every=every)
                    if plain:
                        out.print(Text(plain_text(view, out.width, out.height).rstrip("\n")), soft_wrap=True)
                    else:
                        out.print(view)
                sleep(interval)
        with Live(
            console=out, auto_refresh=False, redirect_stdout=False, redirect_stderr=False, vertical_overflow="ellipsis"
        ) as live:
            shown_second = None
            while True:
                now_seen = changes()  # polled here: the clock ticks between changes
                now = clock()
                if now_seen != seen:
                    seen = now_seen
                    watcher.read()
                    shown_second = None
                if int(now) != shown_second:  # the clock moves on even when the board does not
                    shown_second = int(now)
                    live.update(WatchView(watcher, plain, True, now, select, every), refresh=True)
                sleep(interval)
    except KeyboardInterrupt:
        pass


# -- one task -------------------------------------------------------------------------


def _neighbour_line(other_id: int, other: Record | None, lookup, plain: bool) -> Text:
    if other is None:
        return Text(f"{TROUBLE_MARK} #{other_id} (missing or unreadable)", style=TROUBLE)
    key = state(other, lookup)
    line = _mark(other, key, plain)
    line.append(f" #{other_id} ", style="bold")
    line.append(other["subject"], style=SUBJECT_STYLES[key])
    line.append(f"  {STATE_LABELS[key]}", style=STATE_STYLES[key])
    if other["owner"]:
        line.append("  ")
        line.append("@" + other["owner"], style=OWNER_STYLE)
    return line


# metadata keys with a row of their own in `get` (DESIGN §7), shown in this order
_OWN_ROWS = ("priority", "labels", "accept", "gate", "parent", "after", "due")


def _value(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _events(events: list[Mapping[str, Any]], now: float) -> Table:
    """`4 min ago  agent-c claimed lease=15m`: when, then who and what, wrapped between
    words so that a narrow panel keeps them readable."""
    from .messages import entry_words

    grid = Table.grid(padding=(0, 2))
    grid.add_column(no_wrap=True, style="dim")
    grid.add_column(overflow="fold")
    for event in events:
        at = epoch(event.get("at"))
        # a gate's result in two words (its command and output are in the gate row above)
        entry = {"event": "?", **{key: value for key, value in event.items() if value != "" and key != "gate"}}
        words = entry_words(entry)
        gate = event.get("gate")
        if isinstance(gate, Mapping):
            words.append(_gate_words(gate))
        failed = entry["event"] == "failed" or (isinstance(gate, Mapping) and gate.get("exit") not in (0, None))
        what = Text()
        what.append(str(event.get("actor", "?")), style=OWNER_STYLE)
        what.append(" ")
        what.append(words[0].rstrip(":"), style=TROUBLE if failed else "bold")
        if words[1:]:
            what.append(" " + " ".join(words[1:]))
        grid.add_row(f"{span(now - at)} ago" if at is not None else str(event.get("at", "?")), what)
    return grid


def _gate_words(gate: Mapping[str, Any]) -> str:
    if gate.get("overridden"):
        return "gate not run"
    if gate.get("timedOut"):
        return "gate timed out"
    return "gate passed" if gate.get("exit") == 0 else f"gate exit {gate.get('exit')}"


def _status_cell(record: Record, key: str, notes: Notes) -> Text:
    status = Text()
    status.append(STATE_LABELS[key], style=STATE_STYLES[key])
    if STATE_LABELS[key] != record["status"]:
        status.append(f" ({record['status']})", style="dim")
    for trouble in trouble_words(notes):
        status.append(f"\n{TROUBLE_MARK} {trouble}", style=TROUBLE)
    return status


def _priority_cell(record: Record, notes: Notes) -> Text:
    metadata = record.get("metadata") or {}
    priority = Text()
    priority.append(f"P{notes.priority}", style=PRIORITY_STYLES.get(notes.priority, ""))
    if "priority" not in metadata:
        priority.append(" (the default)", style="dim")
    elif notes.priority != metadata["priority"]:
        priority.append(f" (metadata.priority {_value(metadata['priority'])} is not 0-4: counts as 2)", style="dim")
    return priority


def _gate_cell(record: Record, notes: Notes, now: float) -> Text:
    """The gate's command, then how its last run went and the tail of its output."""
    metadata = record.get("metadata") or {}
    gate = Text()
    gate.append(_value(metadata["gate"]) if "gate" in metadata else "", style="bold")
    result = notes.gate_result(now)
    if result:
        gate.append(("\n" if gate.plain else "") + "last run: " + result, style=TROUBLE if notes.gate_failed else "dim")
    tail = str((notes.gate or {}).get("tail") or "").rstrip("\n")
    if tail:
        gate.append("\n" + "\n".join(tail.splitlines()[-5:]), style="dim")
    return gate


def _agent_rows(fields: Table, record: Record, notes: Notes, now: float) -> None:
    """The rows of DESIGN §7, each only when there is something to say."""
    metadata = record.get("metadata") or {}
    if notes.lease:
        fields.add_row("lease", Text(notes.lease, style=TROUBLE if notes.stale else ""))
    if notes.elsewhere:
        fields.add_row("elsewhere", Text(notes.elsewhere, style="cyan"))
    if notes.attempts:
        attempts = Text(f"failed {times(notes.attempts)}", style=TROUBLE if notes.stuck else "")
        if notes.stuck:
            attempts.append(f": stuck (`tasks update {record['id']} --status pending --retry` puts it back)")
        fields.add_row("attempts", attempts)
        if notes.last_failure:
            fields.add_row("last failure", Text(notes.last_failure))
    if notes.progress is not None:
        fields.add_row("children", Text(f"{notes.progress[0]}/{notes.progress[1]} done"))
    if notes.parent is not None:
        fields.add_row("parent", Text(f"#{notes.parent}"))
    for label, stamp in (("after", notes.after), ("due", notes.due)):
        if stamp is not None:
            overdue = label == "due" and notes.overdue
            shown = when_text(stamp) + (" (overdue)" if overdue else "")
            fields.add_row(label, Text(shown, style=TROUBLE if overdue else ""))
    if "accept" in metadata:
        fields.add_row("accept", Text(_value(metadata["accept"])))
    if "gate" in metadata or notes.gate is not None:
        fields.add_row("gate", _gate_cell(record, notes, now))


def task_view(
    record: Record, neighbours: dict, plain: bool = False, facts: Facts | None = None, now: float | None = None
) -> RenderableType:
    """Every field of one task: state and any trouble, priority, labels, owner and lease,
    failed attempts, acceptance and gate, blockers and dependents each with subject and
    status, the rest of the metadata, identity and times, the description, then the
    task's last journal events."""

    if plain:  # the plain view is taskboard.plain's text: what a piped `get` prints, without rich
        return _Folded(lambda width: plain_text_of_task(record, neighbours, facts, now, width))

    def lookup(task_id: int) -> Record | None:
        # Only the task's neighbours were read. Any other id (a neighbour's own blocker)
        # or an unreadable neighbour counts as open: nothing is called ready on a guess,
        # and on a sound board a completed task is in no blockedBy anyway.
        found = neighbours.get(task_id) if task_id != record["id"] else record
        return found if found is not None else {"status": "pending"}

    fact = (facts or NO_FACTS).get(record["id"]) or {}
    now = time.time() if now is None else now
    notes = Notes(record, fact, now)
    key = state(record, lookup, held_back({record["id"]: fact}))
    none = Text("-" if plain else "—", style="dim")

    fields = Table.grid(padding=(0, 2))
    fields.add_column(style="bold" if not plain else "", no_wrap=True)
    fields.add_column(overflow="fold")
    fields.add_row("status", _status_cell(record, key, notes))
    fields.add_row("priority", _priority_cell(record, notes))
    fields.add_row("labels", Text(", ".join(notes.labels), style=LABEL_STYLE) if notes.labels else none)
    fields.add_row("owner", Text(record["owner"], style=OWNER_STYLE) if record["owner"] else none)
    _agent_rows(fields, record, notes, now)
    for label, ids in (("blocked by", record["blockedBy"]), ("blocks", record["blocks"])):
        if not ids:
            fields.add_row(label, none)
            continue
        fields.add_row(label, Group(*(_neighbour_line(i, neighbours.get(i), lookup, plain) for i in ids)))
    rest = {name: value for name, value in (record.get("metadata") or {}).items() if name not in _OWN_ROWS}
    if rest:
        meta = Table.grid(padding=(0, 2))
        meta.add_column(no_wrap=True)
        meta.add_column(overflow="fold")
        for meta_key, value in rest.items():
            meta.add_row(Text(str(meta_key)), Text(_value(value)))
        fields.add_row("metadata", meta)
    known = {"id", "subject", "description", "status", "blockedBy", "blocks", "owner", "metadata"}
    names = {"createdAt": "created", "updatedAt": "updated"}
    for extra in record:
        if extra not in known:
            fields.add_row(Text(names.get(extra, extra)), Text(_value(record[extra])))
    parts: list[RenderableType] = [fields]
    if record["description"]:
        parts += [Text(""), Text(record["description"], overflow="fold")]
    events = [event for event in fact.get("events") or () if isinstance(event, Mapping)]
    if events:
        shown = events[-EVENTS_SHOWN:]
        heading = "last events" if len(events) > len(shown) else "events"
        parts += [Text(""), Text(heading, style="bold"), _events(shown, now)]
    if plain:  # the first line reads like the task's line in `list`
        return Group(Text(task_line(record), overflow="fold"), *parts)
    # The subject goes in the body, where it wraps: a panel title is cut to one line.
    # The title keeps what always fits: status and id.
    title = _mark(record, key, plain)
    title.append(f" #{record['id']} · {STATE_LABELS[key]}", style="bold")
    subject = Text(record["subject"], style="bold", overflow="fold")
    return Panel(
        Group(subject, Text(""), *parts),
        title=title,
        title_align="left",
        border_style="red" if notes.troubles else STATE_STYLES[key],
        box=box.ROUNDED,
        expand=False,
    )


class _Folded:
    """Plain text laid out by a function of the width it is given."""

    def __init__(self, text_of: Callable[[int], str]):
        self.text_of = text_of

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield Text(self.text_of(options.max_width).rstrip("\n"), no_wrap=True, overflow="ignore")


def show_task(
    record: Record, neighbours: dict, plain: bool, facts: Facts | None = None, now: float | None = None
) -> None:
    _show(task_view(record, neighbours, plain, facts, now), plain)


# -- graph ----------------------------------------------------------------------------


class _AsciiTree(Tree):
    """A rich Tree drawn with ASCII guides (`+--`, `|`), for plain mode."""

    TREE_GUIDES = [Tree.ASCII_GUIDES] * 3


class GraphNode:
    """One node line of the graph tree, laid out at the width it gets: status, then
    the essentials (`↑` when the task is drawn above already, the id, `(after #N)`
    when it continues a chain cut for depth, `!` when it is in trouble), then the
    subject, truncated to leave room for the owner. What comes first is never cut by
    what comes after."""

    OWNER_MAX = 20  # an owner takes at most this many cells
    SUBJECT_MIN = 24  # the owner is left out when the subject would get fewer cells (unless it fits whole)

    def __init__(
        self, view: GraphView, task_id: int, again: bool = False, after: int | None = None, word: str = "after"
    ):
        self.view = view
        self.task_id = task_id
        self.again = again
        self.after = after
        self.word = word

    def text(self, width: int) -> Text:
        view = self.view
        record = view.by_id.get(self.task_id)
        if record is None:
            line = Text(f"#{self.task_id} (not shown)", style="dim")
        else:
            key = state(record, view.lookup, view.held)
            line = _mark(record, key, view.plain)
            if self.again:
                line.append(" " + view.glyphs["again"], style="dim")
            line.append(f" #{self.task_id}", style=f"bold {STATE_STYLES[key]}")
            if self.after is not None:
                line.append(f" ({self.word} #{self.after})", style="dim")
            if not self.again and view.notes(record).troubles:
                line.append(f" {TROUBLE_MARK}", style=TROUBLE)
            owner = "  @" + record["owner"] if record["owner"] and not self.again else ""
            style = "dim" if self.again else SUBJECT_STYLES[key]
            return _fit_line(line, record["subject"], style, owner, self.OWNER_MAX, self.SUBJECT_MIN, width)
        line.truncate(width, overflow="ellipsis")
        line.no_wrap = True
        return line

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self.text(options.max_width)


class Continues:
    """The line that says a subtree goes on below as new roots, ids first: as many
    as fit, then how many more."""

    def __init__(self, ids: list[int], plain: bool):
        self.ids = ids
        self.plain = plain

    def text(self, width: int) -> Text:
        lead = "..." if self.plain else "…"
        ids = self.ids
        for shown in range(len(ids), 0, -1):
            rest = f" +{len(ids) - shown}" if shown < len(ids) else ""
            verb = "continues" if len(ids) == 1 else "continue"
            for tail in (f" {verb} below", " below", ""):
                words = f"{lead} {_ids(ids[:shown])}{rest}{tail}"
                if cell_len(words) <= width:
                    return Text(words, style="dim", no_wrap=True)
        line = Text(f"{lead} {_ids(ids[:1])}", style="dim", no_wrap=True)
        line.truncate(width, overflow="ellipsis")
        return line

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self.text(options.max_width)


class GraphView:
    """The dependency graph as a tree of one-line nodes, with a legend of its glyphs
    under it. The whole board: every task without a blocker is a root and its dependents
    hang below it; a task reached again is shown once more as a reference (`↑ #7`). With
    a focus: what the task waits on (upstream) and what waits on it (downstream). Depth
    is capped by the width; a subtree that would go deeper continues as a new root
    below, marked with the task it comes from (`#15 (after #14)`), so no task is lost
    or looks unblocked."""

    def __init__(
        self,
        records: list[Record],
        edges: list[tuple[int, int]],
        lookup,
        focus: int | None = None,
        plain: bool = False,
        facts: Facts | None = None,
        now: float | None = None,
    ):
        self.records = records
        self.by_id = {r["id"]: r for r in records}
        self.edges = edges
        self.lookup = lookup
        self.focus = focus
        self.plain = plain
        self.facts = facts or NO_FACTS
        self.held = held_back(self.facts)  # what `ready` leaves out is drawn blocked
        self.now = time.time() if now is None else now
        self.cyclic = cyclic_ids(edges)
        self.glyphs = {"again": "^", "dot": ", "} if plain else {"again": "↑", "dot": " · "}
        self.repeated = False
        self.cut = False
        self.troubled = False

    def notes(self, record: Record) -> Notes:
        return Notes(record, self.facts.get(record["id"]), self.now, record["id"] in self.cyclic)

    def tree(self, label: RenderableType) -> Tree:
        if self.plain:
            return _AsciiTree(label)
        return Tree(label, guide_style="dim")

    def grow(
        self,
        tree: Tree,
        start: int,
        follow: dict[int, list[int]],
        seen: set[int],
        max_depth: int,
        continued: list[tuple[int, int]],
        after: int | None = None,
        word: str = "after",
    ) -> None:
        """Hang start's subtree (along `follow`) under tree, iteratively. Children cut
        for depth go to `continued` as (child, the task they hang from)."""
        stack = [(tree, start, 1, after)]
        while stack:
            parent, node, depth, came_after = stack.pop()
            if node in seen:
                self.repeated = True
                parent.add(GraphNode(self, node, again=True))
                continue
            seen.add(node)
            branch = parent.add(GraphNode(self, node, after=came_after, word=word))
            children = follow.get(node, [])
            if not children:
                continue
            if depth >= max_depth:
                self.cut = True
                branch.add(Continues(children, self.plain))
                continued.extend((child, node) for child in children)
                continue
            for child in reversed(children):
                stack.append((branch, child, depth + 1, None))

    def legend(self) -> Phrases:
        """What the glyphs mean: the states drawn, then the marks that were used."""
        present = {state(record, self.lookup, self.held) for record in self.records}
        if self.plain:
            phrases = [Text("[ ] pending"), Text("[>] in progress"), Text("[x] done")]
            if any(record["status"] == "deleted" for record in self.records):
                phrases.append(Text("[-] deleted"))
        else:
            order = ("ready", "in_progress", "blocked", "completed", "deleted")
            phrases = [
                Text.assemble((SYMBOLS[key], STATE_STYLES[key]), (f" {STATE_LABELS[key]}", "dim"))
                for key in order
                if key != "deleted" or key in present
            ]
        if self.repeated:
            phrases.append(Text(f"{self.glyphs['again']} #N drawn above", style="dim"))
        if self.cut:
            phrases.append(Text(("..." if self.plain else "…") + " continues below", style="dim"))
        if self.troubled:
            phrases.append(Text.assemble((TROUBLE_MARK, TROUBLE), (" trouble (tasks get ID says what)", "dim")))
        return Phrases(phrases, self.glyphs["dot"])

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        max_depth = max(1, (options.max_width - 24) // 4)
        self.repeated = self.cut = False
        self.troubled = any(self.notes(record).troubles for record in self.records)
        down, up = views.adjacency(self.edges)
        if self.focus is not None and self.focus not in self.by_id:
            yield Text(f"#{self.focus} is deleted: it has no edges left (`tasks graph --all` lists it)", style="dim")
            return
        if self.focus is not None:
            tree = self.tree(GraphNode(self, self.focus))
            for title, follow, word in (("waits on", up, "before"), ("unlocks", down, "after")):
                branch = tree.add(Text(title, style="bold"))
                cut: list[tuple[int, int]] = []
                drawn = {self.focus}
                for start in follow.get(self.focus, []):
                    self.grow(branch, start, follow, drawn, max_depth - 1, cut, word=word)
                if not follow.get(self.focus):
                    branch.add(Text("nothing", style="dim"))
                self._continue(branch, cut, follow, drawn, max_depth - 1, word)
            yield tree
            yield self.legend()
            return
        heading = Text(f"{len(self.records)} tasks{self.glyphs['dot']}{len(self.edges)} edges", style="bold")
        tree = self.tree(heading)
        seen: set[int] = set()
        continued: list[tuple[int, int]] = []
        roots = [r["id"] for r in self.records if not up.get(r["id"])]
        for root in roots:
            self.grow(tree, root, down, seen, max_depth, continued)
        self._continue(tree, continued, down, seen, max_depth)
        # a cycle (only on a damaged board) has no root: show what is left, with a blocker
        for record in self.records:
            if record["id"] not in seen:
                self.grow(tree, record["id"], down, seen, max_depth, continued, after=up[record["id"]][0])
                self._continue(tree, continued, down, seen, max_depth)
        yield tree
        yield self.legend()

    def _continue(
        self, tree: Tree, continued: list[tuple[int, int]], follow, seen: set[int], max_depth: int, word: str = "after"
    ) -> None:
        while continued:
            node, parent = continued.pop(0)
            if node in seen:
                continue
            self.grow(tree, node, follow, seen, max_depth, continued, after=parent, word=word)


def graph_view(
    records: list[Record],
    edges,
    lookup,
    focus: int | None = None,
    plain: bool = False,
    facts: Facts | None = None,
    now: float | None = None,
) -> RenderableType:
    return GraphView(records, list(edges), lookup, focus, plain, facts, now)


def show_graph(
    records,
    edges,
    listing,
    fmt: str,
    focus: int | None,
    plain: bool,
    svg: str | None = None,
    facts: Facts | None = None,
) -> str | None:
    """Print the graph in `fmt`; the DOT or Mermaid text it printed, if any."""
    text = None
    if fmt == "dot":
        text = views.to_dot(records, edges, listing.lookup)
    elif fmt == "mermaid":
        text = views.to_mermaid(records, edges, listing.lookup)
    if text is not None:
        _write(sys.stdout, text)
    else:
        _show(graph_view(records, edges, listing.lookup, focus, plain, facts), plain)
    if svg:
        _write_svg(graph_view(records, edges, listing.lookup, focus, False, facts), svg, title="tasks graph")
    return text


# -- check ----------------------------------------------------------------------------


def show_check(problems: list[dict], ok: bool, plain: bool) -> None:
    for problem in problems:
        mark = "fixed" if problem["fixed"] else problem["rule"]
        sys.stderr.write(f"{mark}: {problem['message']}\n")
    sys.stderr.write(
        "board is sound\n" if ok else f"{sum(not (p['fixed'] or p.get('notice')) for p in problems)} problem(s) left\n"
    )


# -- stats ------------------------------------------------------------------------------


def show_stats(found: dict) -> None:
    """`tasks stats` for a person: the flow figures as a few small tables."""
    from rich.table import Table as RichTable

    from ..core.stats import duration_words

    window = f"since {found['since']}" if found["since"] else "over the whole journal"
    parts: list[RenderableType] = [Text(f"Flow {window}, until {found['until']}", style="bold")]
    times = RichTable(title="Lead and cycle time", title_justify="left", box=None, padding=(0, 2))
    for column in ("", "tasks", "median", "90%"):
        times.add_column(column, justify="right" if column else "left")
    for key, label in (("lead_time", "lead (created → done)"), ("cycle_time", "cycle (claimed → done)")):
        figures = found[key]
        times.add_row(label, str(figures["count"]), duration_words(figures["median"]), duration_words(figures["p90"]))
    parts.append(times)
    days = RichTable(title=f"Finished: {found['finished']['total']}", title_justify="left", box=None, padding=(0, 2))
    days.add_column("day")
    days.add_column("done", justify="right")
    for day in found["finished"]["per_day"]:
        days.add_row(day["day"], str(day["count"]))
    parts.append(days)
    wip = RichTable(title=f"In progress: {found['wip']['total']}", title_justify="left", box=None, padding=(0, 2))
    wip.add_column("age")
    wip.add_column("tasks", justify="right")
    for label, count in found["wip"]["by_age"].items():
        wip.add_row(label, str(count), style="" if count else "dim")
    parts.append(wip)
    failed = RichTable(title="Failed attempts", title_justify="left", box=None, padding=(0, 2))
    failed.add_column("task")
    failed.add_column("attempts", justify="right")
    for item in found["failed"]:
        failed.add_row(f"#{item['task']}", str(item["attempts"]), style=TROUBLE if item["attempts"] >= 3 else "")
    if not found["failed"]:
        failed.add_row("none", "", style="dim")
    parts.append(failed)
    console(False).print(Group(*parts))
