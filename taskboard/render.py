"""Views for people. Imported only when a person is reading: never on --json paths.

Every view is a rich renderable built from the records, so tests print it into a
recording console of any width; the `show_*` functions pick the console. The views
that depend on width (list, board, graph) decide their layout at render time from
the width they are given. User text always enters rich as `Text`, never as markup,
and every console here has markup off as a second guard.

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
from collections.abc import Callable
from typing import Any

from rich import box
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.padding import Padding
from rich.panel import Panel
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from . import views
from .errors import UsageError
from .graph import open_blockers
from .invocation import write as _write
from .model import MARKERS, Record
from .model import ids_text as _ids
from .views import STATE_LABELS, state, task_line

STATE_STYLES = {"blocked": "red", "ready": "yellow", "in_progress": "cyan", "completed": "green", "deleted": "dim"}
SYMBOLS = {"blocked": "⊘", "ready": "○", "in_progress": "◐", "completed": "✔", "deleted": "✖"}
OWNER_STYLE = "magenta"
SVG_WIDTH = 100  # pictures written when stdout is no terminal (make pictures) get a fixed width
CARD_SUBJECT = 120  # a kanban card shows at most this many characters of the subject
NARROW = 64  # below this many columns the board stacks its columns and the list drops columns


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


def _show(renderable: RenderableType, plain: bool) -> None:
    """Print a view for a person on stdout: plain mode as trimmed text."""
    out = console(plain)
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


def summary_text(
    records: list[Record], lookup, shown: int | None = None, plain: bool = False, with_deleted: bool = False
) -> Text:
    """The one-line summary, each count coloured like its state outside plain mode."""
    line = views.summary(records, lookup, shown, with_deleted)
    if plain:
        return Text(line)
    styles = {
        "tasks": "bold",
        "ready": STATE_STYLES["ready"],
        "progress": STATE_STYLES["in_progress"],
        "blocked": STATE_STYLES["blocked"],
        "done": STATE_STYLES["completed"],
        "deleted": "dim",
    }
    text = Text()
    for index, part in enumerate(line.split(" · ")):
        if index:
            text.append(" · ", style="dim")
        count, _, rest = part.partition(" (")  # "11 tasks (3 shown)"
        text.append(count, style=styles.get(count.split()[-1], ""))
        if rest:
            text.append(" (" + rest, style="dim")
    return text


def _write_svg(renderable: RenderableType, path: str, title: str) -> None:
    """The picture of a view: always in colour, as wide as the terminal, or SVG_WIDTH
    when there is none (so `make pictures` gives the same file every time)."""
    width = os.get_terminal_size(sys.stdout.fileno()).columns if _stdout_is_terminal() else SVG_WIDTH
    picture = Console(
        file=io.StringIO(),
        record=True,
        width=width,
        force_terminal=True,
        color_system="truecolor",
        highlight=False,
        emoji=False,
        markup=False,
    )
    picture.print(renderable)
    try:
        picture.save_svg(path, title=title)
    except OSError as exc:
        raise UsageError(f"cannot write the SVG to {path}: {exc.strerror}") from None


def _stdout_is_terminal() -> bool:
    try:
        return sys.stdout.isatty() and os.get_terminal_size(sys.stdout.fileno()).columns > 0
    except (OSError, ValueError, AttributeError):
        return False


# -- list / ready ---------------------------------------------------------------------


class TaskTable:
    """The list as a table: id, status, subject, owner, open blockers, and for pending
    tasks how many tasks each one unlocks. Laid out at render time: the subject takes
    exactly the width left (ellipsis when it does not fit), and a narrow console gives
    up detail step by step instead of squeezing every column. Each row is one Text
    line built here, which keeps a 10 000-task list fast (a rich Table measures and
    renders every cell on its own)."""

    GAP = 2

    def __init__(self, records: list[Record], listing, plain: bool = False):
        self.records = records
        self.listing = listing
        self.plain = plain

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = options.max_width
        lookup = self.listing.lookup
        unlocks = views.unlocks(self.listing.records)
        rows = []
        for record in self.records:
            key = state(record, lookup)
            blockers = open_blockers(record, lookup) if record["status"] != "completed" else []
            rows.append((record, key, blockers, unlocks.get(record["id"], 0) if record["status"] == "pending" else 0))
        top = max((count for *_, count in rows), default=0)
        marks = [_mark(r, key, self.plain) for r, key, *_ in rows]
        # name: [header, cells, width, right-aligned]
        columns: dict[str, list[Any]] = {
            "id": ["id", [Text(f"#{r['id']}", style="bold") for r, *_ in rows], 0, True],
            "status": [
                "status",
                [Text(f"{SYMBOLS[key]} {STATE_LABELS[key]}", style=STATE_STYLES[key]) for _, key, *_ in rows],
                0,
                False,
            ],
            "subject": [
                "subject",
                [Text(r["subject"], style="dim" if r["status"] == "deleted" else "") for r, *_ in rows],
                0,
                False,
            ],
            "owner": ["owner", [Text(r["owner"], style=OWNER_STYLE) for r, *_ in rows], 0, False],
            "blocked": [
                "blocked by",
                [Text(_ids(b) if len(b) <= 3 else f"{_ids(b[:3])} +{len(b) - 3}", style="red") for _, _, b, _ in rows],
                0,
                False,
            ],
            "unlocks": [
                "unlocks",
                [Text(str(n) if n else "", style="bold yellow" if n == top else "") for *_, n in rows],
                0,
                True,
            ],
        }
        if self.plain:
            columns["status"][:2] = ["", marks]
        for name in ("owner", "blocked", "unlocks"):  # a column nobody needs is not shown
            if not any(cell.plain for cell in columns[name][1]):
                del columns[name]
        for name, column in columns.items():
            natural = max([cell_len(column[0])] + [cell.cell_len for cell in column[1]])
            column[2] = natural if name == "subject" else min(natural, 24)
        subject = columns["subject"]

        def room() -> int:
            return width - sum(c[2] + self.GAP for c in columns.values() if c is not subject)

        # the subject should get 40% of the width: give up detail, least useful first
        wanted = min(subject[2], max(12, width * 2 // 5))
        for step in ("symbol only", "short owner", "unlocks", "owner", "short blockers"):
            if room() >= wanted:
                break
            if step == "symbol only":
                columns["status"][:3] = ["", marks, 1]
            elif step == "short owner" and "owner" in columns:
                columns["owner"][2] = min(columns["owner"][2], 10)
            elif step in ("unlocks", "owner"):
                columns.pop(step, None)
            elif step == "short blockers" and "blocked" in columns:
                columns["blocked"][2] = min(columns["blocked"][2], 8)
        subject[2] = max(1, min(subject[2], room()))

        def line(cells: list[Text]) -> Text:
            parts = []
            for (_, _, size, right), cell in zip(columns.values(), cells, strict=True):
                fitted = cell.copy()
                fitted.truncate(size, overflow="ellipsis")
                padding = " " * (size - fitted.cell_len)
                parts.append(Text(padding) + fitted if right else fitted + padding)
            joined = Text(" " * self.GAP).join(parts)
            joined.rstrip()
            return joined

        header = line([Text(c[0], style="bold") for c in columns.values()])
        rule = Text(("-" if self.plain else "─") * header.cell_len, style="dim")
        body = [line([c[1][index] for c in columns.values()]) for index in range(len(rows))]
        table = Text("\n").join([header, rule, *body])
        table.no_wrap, table.overflow, table.end = True, "crop", "\n"
        yield table


def list_view(records: list[Record], listing, plain: bool = False) -> RenderableType:
    """The table and, under it, the summary of the whole board."""
    summary = summary_text(listing.records, listing.lookup, len(records), plain, _lists_deleted(records))
    if not records:
        return Group(Text("no tasks to show", style="dim"), summary)
    return Group(TaskTable(records, listing, plain), summary)


def _lists_deleted(records: list[Record]) -> bool:
    """Whether a list shows deleted tasks (`--all`): then they count in its summary's total."""
    return any(record["status"] == "deleted" for record in records)


def plain_lines(records: list[Record], listing) -> list[str]:
    """One line per task for plain mode, never wrapped, and nothing after the subject:
    `[ ] #4: Write parser`, so a script can take everything after `#4: ` as the subject
    (a subject may contain anything). Owners and blockers are in `board`, `get`, --json."""
    return [task_line(record) for record in records]


def show_list(records: list[Record], listing, plain: bool) -> None:
    if plain:
        text = "".join(line + "\n" for line in plain_lines(records, listing))
        _write(sys.stdout, text)
        _write(sys.stderr, views.summary(listing.records, listing.lookup, len(records), _lists_deleted(records)) + "\n")
        return
    console(plain).print(list_view(records, listing, plain))


# -- board ----------------------------------------------------------------------------


def _card(record: Record, key: str, lookup, unlock: int, plain: bool) -> Text:
    card = Text(overflow="fold")
    if plain:
        card.append(MARKERS[record["status"]] + " ")
    card.append(f"#{record['id']}", style=f"bold {STATE_STYLES[key]}")
    subject = record["subject"]
    card.append(
        " " + (subject if len(subject) <= CARD_SUBJECT else subject[: CARD_SUBJECT - 1] + "…"),
        style="dim" if key == "completed" else "",
    )
    if record["owner"]:
        card.append("\n@" + record["owner"], style=OWNER_STYLE)
    blockers = open_blockers(record, lookup) if key != "completed" else []
    if blockers:
        card.append("\nwaits on " + _ids(blockers), style="red")
    if key == "ready" and unlock:
        card.append(f"\nunlocks {unlock}", style="yellow")
    return card


class BoardView:
    """The kanban board: Blocked · Ready · In progress · Done, cards in id order.
    Side by side when there is room; stacked, one titled list per column, below NARROW.
    `limit` caps the cards drawn per column (the rest become `+N more`), for a view
    that must fit a terminal's height."""

    def __init__(self, listing, plain: bool = False, limit: int | None = None):
        self.listing = listing
        self.plain = plain
        self.limit = limit
        self._cards: dict[str, list[Text]] | None = None

    def cards(self) -> dict[str, list[Text]]:
        if self._cards is None:
            lookup = self.listing.lookup
            unlocks = views.unlocks(self.listing.records)
            self._cards = {}
            columns = views.columns(self.listing.records, lookup).values()
            for (name, key), records in zip(views.COLUMNS, columns, strict=True):
                self._cards[name] = [_card(r, key, lookup, unlocks.get(r["id"], 0), self.plain) for r in records]
        return self._cards

    def header(self, name: str, key: str, count: int) -> Text:
        return Text(f"{name} ({count})", style="" if self.plain else f"bold {STATE_STYLES[key]}")

    def shown(self, column: list[Text]) -> list[Text]:
        """The cards drawn for a column: all, or `limit` of them and `+N more`."""
        if self.limit is None or len(column) <= self.limit:
            return column
        return [*column[: self.limit], Text(f"+{len(column) - self.limit} more", style="dim")]

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        cards = self.cards()
        keys = dict(views.COLUMNS)
        if options.max_width < NARROW:
            for name, column in cards.items():
                yield self.header(name, keys[name], len(column))
                for card in self.shown(column):
                    yield Padding(card, (0, 0, 0, 2))
                yield Text("")
            return
        table = Table(
            box=box.ASCII2 if self.plain else box.ROUNDED, expand=True, show_lines=False, padding=(0, 1), safe_box=True
        )
        for name, column in cards.items():
            table.add_column(self.header(name, keys[name], len(column)), ratio=1, overflow="fold")
        cells = []
        for column in cards.values():
            stacked: list[RenderableType] = []
            for card in self.shown(column):
                if stacked:
                    stacked.append(Text(""))
                stacked.append(card)
            cells.append(Group(*stacked))
        table.add_row(*cells)
        yield table


def board_view(listing, plain: bool = False) -> RenderableType:
    """The board with the summary under it (colour mode; plain mode puts it on stderr)."""
    if plain:
        return BoardView(listing, plain)
    return Group(BoardView(listing, plain), summary_text(listing.records, listing.lookup))


def show_board(listing, plain: bool, svg: str | None = None) -> None:
    _show(board_view(listing, plain), plain)
    if plain:
        _write(sys.stderr, views.summary(listing.records, listing.lookup) + "\n")
    if svg:
        _write_svg(board_view(listing, plain=False), svg, title="tasks board")


class WatchView:
    """The board as the watcher shows it: first what must stay in sight (the summary,
    the time of the view, how to stop, any damage), then the board. With `fit`, the
    board keeps as many cards per column as the console's height leaves room for, so
    nothing below the cards is ever cut off and the top never scrolls away."""

    def __init__(self, board, plain: bool = False, fit: bool = False):
        self.board = board
        self.plain = plain
        self.fit = fit

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        from .errors import TaskError

        try:
            listing = self.board.listing()
        except TaskError as exc:
            yield Text(f"cannot read the board: {exc.message}", style="red")
            return
        dot = " - " if self.plain else " · "
        top: list[RenderableType] = [
            summary_text(listing.records, listing.lookup, plain=self.plain),
            Text(f"{self.board.store.root}{dot}{time.strftime('%H:%M:%S')}{dot}Ctrl-C to stop", style="dim"),
        ]
        top += [Text(f"damaged: {damage.message}", style="red") for damage in listing.damaged]
        view = BoardView(listing, self.plain)
        if self.fit and options.max_height:
            room = options.max_height - len(console.render_lines(Group(*top), options, pad=False))
            view.limit = self._limit(view, console, options.update(height=None), room)
        yield Group(*top, view)

    @staticmethod
    def _limit(view: BoardView, console: Console, options: ConsoleOptions, room: int) -> int | None:
        """The most cards per column whose board is at most `room` lines (at least 0)."""

        def height(limit: int | None) -> int:
            view.limit = limit
            return len(console.render_lines(view, options, pad=False))

        longest = max((len(column) for column in view.cards().values()), default=0)
        # a card is at least one line and one blank line before it: no need to try more
        low, high = 0, min(longest, max(0, room) // 2 + 1)
        if high == longest and height(None) <= room:
            return None
        while low < high:  # the largest limit that fits; 0 (only `+N more`) when none does
            middle = (low + high + 1) // 2
            if height(middle) <= room:
                low = middle
            else:
                high = middle - 1
        return low


def watch_view(board, plain: bool = False, fit: bool = False) -> RenderableType:
    return WatchView(board, plain, fit)


def watch_board(
    board,
    plain: bool,
    out: Console | None = None,
    interval: float = 0.5,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """Redraw the board whenever a file under it changes, until Ctrl-C (the store
    watches: no file is read unless one changed). On a terminal the view is redrawn in
    place (rich Live) and fits its height; plain mode prints each new view after the
    last one, which suits a log."""
    from rich.live import Live

    out = out or console(plain)
    try:
        if plain or not out.is_terminal:
            for count, _ in enumerate(board.store.changes(interval, sleep)):
                if count:
                    out.print(Text("-" * min(out.width, 40)))
                view = watch_view(board, plain, fit=out.is_terminal)
                if plain:
                    out.print(Text(plain_text(view, out.width, out.height).rstrip("\n")), soft_wrap=True)
                else:
                    out.print(view)
        with Live(
            console=out, auto_refresh=False, redirect_stdout=False, redirect_stderr=False, vertical_overflow="ellipsis"
        ) as live:
            for _ in board.store.changes(interval, sleep):
                live.update(watch_view(board, plain, fit=True), refresh=True)
    except KeyboardInterrupt:
        pass


# -- one task -------------------------------------------------------------------------


def _neighbour_line(other_id: int, other: Record | None, lookup, plain: bool) -> Text:
    if other is None:
        return Text(f"#{other_id} (missing or unreadable)", style="red")
    key = state(other, lookup)
    line = _mark(other, key, plain)
    line.append(f" #{other_id} ", style="bold")
    line.append(other["subject"])
    line.append(f"  {STATE_LABELS[key]}", style=STATE_STYLES[key])
    if other["owner"]:
        line.append("  ")
        line.append("@" + other["owner"], style=OWNER_STYLE)
    return line


def task_view(record: Record, neighbours: dict, plain: bool = False) -> RenderableType:
    """Every field of one task: state, owner, blockers and dependents each with subject
    and status, metadata, identity and times, then the description."""

    def lookup(task_id: int) -> Record | None:
        # Only the task's neighbours were read. Any other id (a neighbour's own blocker)
        # or an unreadable neighbour counts as open: nothing is called ready on a guess,
        # and on a sound board a completed task is in no blockedBy anyway.
        found = neighbours.get(task_id) if task_id != record["id"] else record
        return found if found is not None else {"status": "pending"}

    key = state(record, lookup)
    none = Text("-" if plain else "—", style="dim")

    fields = Table.grid(padding=(0, 2))
    fields.add_column(style="bold" if not plain else "", no_wrap=True)
    fields.add_column(overflow="fold")
    status = Text(STATE_LABELS[key], style=STATE_STYLES[key])
    if STATE_LABELS[key] != record["status"]:
        status.append(f" ({record['status']})", style="dim")
    fields.add_row("status", status)
    fields.add_row("owner", Text(record["owner"], style=OWNER_STYLE) if record["owner"] else none)
    for label, ids in (("blocked by", record["blockedBy"]), ("blocks", record["blocks"])):
        if not ids:
            fields.add_row(label, none)
            continue
        fields.add_row(label, Group(*(_neighbour_line(i, neighbours.get(i), lookup, plain) for i in ids)))
    metadata = record.get("metadata") or {}
    if metadata:
        meta = Table.grid(padding=(0, 2))
        meta.add_column(no_wrap=True)
        meta.add_column(overflow="fold")
        for meta_key, value in metadata.items():
            meta.add_row(
                Text(str(meta_key)), Text(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))
            )
        fields.add_row("metadata", meta)
    known = {"id", "subject", "description", "status", "blockedBy", "blocks", "owner", "metadata"}
    names = {"createdAt": "created", "updatedAt": "updated"}
    for extra in record:
        if extra not in known:
            value = record[extra]
            fields.add_row(
                Text(names.get(extra, extra)),
                Text(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)),
            )
    parts: list[RenderableType] = [fields]
    if record["description"]:
        parts += [Text(""), Text(record["description"], overflow="fold")]
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
        border_style=STATE_STYLES[key],
        box=box.ROUNDED,
        expand=False,
    )


def show_task(record: Record, neighbours: dict, plain: bool) -> None:
    _show(task_view(record, neighbours, plain), plain)


# -- graph ----------------------------------------------------------------------------


class _AsciiTree(Tree):
    """A rich Tree drawn with ASCII guides (`+--`, `|`), for plain mode."""

    TREE_GUIDES = [Tree.ASCII_GUIDES] * 3


class GraphNode:
    """One node line of the graph tree, laid out at the width it gets: status, then
    the essentials (`↑` when the task is drawn above already, the id, `(after #N)`
    when it continues a chain cut for depth), then the subject, truncated to leave
    room for the owner. What comes first is never cut by what comes after."""

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
            key = state(record, view.lookup)
            line = _mark(record, key, view.plain)
            if self.again:
                line.append(" " + view.glyphs["again"], style="dim")
            line.append(f" #{self.task_id}", style=f"bold {STATE_STYLES[key]}")
            if self.after is not None:
                line.append(f" ({self.word} #{self.after})", style="dim")
            owner = Text()
            if record["owner"] and not self.again:
                owner = Text("  @" + record["owner"], style=OWNER_STYLE)
                owner.truncate(self.OWNER_MAX + 2, overflow="ellipsis")
            room = width - line.cell_len - 1
            if room - owner.cell_len < min(self.SUBJECT_MIN, cell_len(record["subject"])):
                owner = Text()
            subject = Text(" " + record["subject"], style="dim" if self.again or key == "completed" else "")
            subject.truncate(max(0, room - owner.cell_len) + 1, overflow="ellipsis")
            line.append_text(subject)
            line.append_text(owner)
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
                line = f"{lead} {_ids(ids[:shown])}{rest}{tail}"
                if cell_len(line) <= width:
                    return Text(line, style="dim", no_wrap=True)
        cut = Text(f"{lead} {_ids(ids[:1])}", style="dim", no_wrap=True)
        cut.truncate(width, overflow="ellipsis")
        return cut

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self.text(options.max_width)


class GraphView:
    """The dependency graph as a tree of one-line nodes. The whole board: every task
    without a blocker is a root and its dependents hang below it; a task reached again
    is shown once more as a reference (`↑ #7`). With a focus: what the task waits on
    (upstream) and what waits on it (downstream). Depth is capped by the width; a
    subtree that would go deeper continues as a new root below, marked with the task
    it comes from (`#15 (after #14)`), so no task is lost or looks unblocked."""

    def __init__(
        self,
        records: list[Record],
        edges: list[tuple[int, int]],
        lookup,
        focus: int | None = None,
        plain: bool = False,
    ):
        self.records = records
        self.by_id = {r["id"]: r for r in records}
        self.edges = edges
        self.lookup = lookup
        self.focus = focus
        self.plain = plain
        self.glyphs = {"again": "^", "dot": ", "} if plain else {"again": "↑", "dot": " · "}
        self.repeated = False

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
                branch.add(Continues(children, self.plain))
                continued.extend((child, node) for child in children)
                continue
            for child in reversed(children):
                stack.append((branch, child, depth + 1, None))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        max_depth = max(1, (options.max_width - 24) // 4)
        self.repeated = False
        down, up = views.adjacency(self.edges)
        if self.focus is not None and self.focus not in self.by_id:
            yield Text(f"#{self.focus} is deleted: it has no edges left (`tasks graph --all` lists it)", style="dim")
            return
        if self.focus is not None:
            tree = self.tree(GraphNode(self, self.focus))
            for title, follow, word in (("waits on", up, "before"), ("unlocks", down, "after")):
                branch = tree.add(Text(title, style="bold"))
                continued: list[tuple[int, int]] = []
                seen: set[int] = {self.focus}
                for start in follow.get(self.focus, []):
                    self.grow(branch, start, follow, seen, max_depth - 1, continued, word=word)
                if not follow.get(self.focus):
                    branch.add(Text("nothing", style="dim"))
                self._continue(branch, continued, follow, seen, max_depth - 1, word)
            yield tree
            return
        heading = Text(f"{len(self.records)} tasks{self.glyphs['dot']}{len(self.edges)} edges", style="bold")
        tree = self.tree(heading)
        seen = set()
        continued = []
        roots = [r["id"] for r in self.records if not up.get(r["id"])]
        for root in roots:
            self.grow(tree, root, down, seen, max_depth, continued)
        self._continue(tree, continued, down, seen, max_depth)
        # a cycle (only on a damaged board) has no root: show what is left, with a blocker
        for record in self.records:
            if record["id"] not in seen:
                self.grow(tree, record["id"], down, seen, max_depth, continued, after=up[record["id"]][0])
                self._continue(tree, continued, down, seen, max_depth)
        if self.repeated:  # the tree is drawn after this: the legend can still go in
            heading.append(f"{self.glyphs['dot']}{self.glyphs['again']} #N: drawn above", style="dim")
        yield tree

    def _continue(
        self, tree: Tree, continued: list[tuple[int, int]], follow, seen: set[int], max_depth: int, word: str = "after"
    ) -> None:
        while continued:
            node, parent = continued.pop(0)
            if node in seen:
                continue
            self.grow(tree, node, follow, seen, max_depth, continued, after=parent, word=word)


def graph_view(records: list[Record], edges, lookup, focus: int | None = None, plain: bool = False) -> RenderableType:
    return GraphView(records, list(edges), lookup, focus, plain)


def show_graph(records, edges, listing, fmt: str, focus: int | None, plain: bool, svg: str | None = None) -> str | None:
    """Print the graph in `fmt`; the DOT or Mermaid text it printed, if any."""
    text = None
    if fmt == "dot":
        text = views.to_dot(records, edges, listing.lookup)
    elif fmt == "mermaid":
        text = views.to_mermaid(records, edges, listing.lookup)
    if text is not None:
        _write(sys.stdout, text)
    else:
        _show(graph_view(records, edges, listing.lookup, focus, plain), plain)
    if svg:
        _write_svg(graph_view(records, edges, listing.lookup, focus, plain=False), svg, title="tasks graph")
    return text


# -- check ----------------------------------------------------------------------------


def show_check(problems: list[dict], ok: bool, plain: bool) -> None:
    for problem in problems:
        mark = "fixed" if problem["fixed"] else problem["rule"]
        sys.stderr.write(f"{mark}: {problem['message']}\n")
    sys.stderr.write("board is sound\n" if ok else f"{sum(not p['fixed'] for p in problems)} problem(s) left\n")
