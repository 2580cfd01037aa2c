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
from typing import Callable, Iterable, Optional

from rich import box
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.padding import Padding
from rich.panel import Panel
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from . import diagram
from .errors import UsageError
from .diagram import STATE_LABELS, state
from .graph import open_blockers
from .model import MARKERS, Record

STATE_STYLES = {"blocked": "red", "ready": "yellow", "in_progress": "cyan", "completed": "green", "deleted": "dim"}
SYMBOLS = {"blocked": "⊘", "ready": "○", "in_progress": "◐", "completed": "✔", "deleted": "✖"}
OWNER_STYLE = "magenta"
SVG_WIDTH = 100  # pictures written when stdout is no terminal (make pictures) get a fixed width
CARD_SUBJECT = 120  # a kanban card shows at most this many characters of the subject
NARROW = 64  # below this many columns the board stacks its columns and the list drops columns


def console(plain: bool, stderr: bool = False, record: bool = False, width: Optional[int] = None) -> Console:
    """The console a command prints to. Plain: no colour, no terminal codes at all."""
    stream = sys.stderr if stderr else sys.stdout
    if plain:
        return Console(file=stream, no_color=True, highlight=False, force_terminal=False, color_system=None,
                       record=record, emoji=False, markup=False, width=width)
    return Console(file=stream, highlight=False, record=record, emoji=False, markup=False, width=width)


def task_line(record: Record) -> str:
    return f"{MARKERS[record['status']]} #{record['id']}: {record['subject']}"


def _mark(record: Record, key: str, plain: bool) -> Text:
    """The status at a glance: the s12 marker in plain mode, else a coloured symbol."""
    mark = Text()  # the style goes on the symbol only: callers append more to this Text
    if plain:
        mark.append(MARKERS[record["status"]])
    else:
        mark.append(SYMBOLS[key], style=STATE_STYLES[key])
    return mark


def _ids(ids: Iterable[int]) -> str:
    return ", ".join(f"#{task_id}" for task_id in ids)


def summary_text(records: list[Record], lookup, shown: Optional[int] = None, plain: bool = False) -> Text:
    """The one-line summary, each count coloured like its state outside plain mode."""
    line = diagram.summary(records, lookup, shown)
    if plain:
        return Text(line)
    styles = {"tasks": "bold", "ready": STATE_STYLES["ready"], "progress": STATE_STYLES["in_progress"],
              "blocked": STATE_STYLES["blocked"], "done": STATE_STYLES["completed"], "deleted": "dim"}
    text = Text()
    for index, part in enumerate(line.split(" · ")):
        if index:
            text.append(" · ", style="dim")
        count, _, rest = part.partition(" (")  # "11 tasks (3 shown)"
        text.append(count, style=styles.get(count.split()[-1], ""))
        if rest:
            text.append(" (" + rest, style="dim")
    return text


def _print(out: Console, renderable: RenderableType) -> None:
    out.print(renderable)


def _write_svg(renderable: RenderableType, path: str, title: str) -> None:
    """The picture of a view: always in colour, as wide as the terminal, or SVG_WIDTH
    when there is none (so `make pictures` gives the same file every time)."""
    width = os.get_terminal_size(sys.stdout.fileno()).columns if _stdout_is_terminal() else SVG_WIDTH
    picture = Console(file=io.StringIO(), record=True, width=width, force_terminal=True,
                      color_system="truecolor", highlight=False, emoji=False, markup=False)
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
        unlocks = diagram.unlocks(self.listing.records)
        rows = []
        for record in self.records:
            key = state(record, lookup)
            blockers = open_blockers(record, lookup) if record["status"] != "completed" else []
            rows.append((record, key, blockers, unlocks.get(record["id"], 0) if record["status"] == "pending" else 0))
        top = max((count for *_, count in rows), default=0)
        marks = [_mark(r, key, self.plain) for r, key, *_ in rows]
        # name: [header, cells, width, right-aligned]
        columns = {
            "id": ["id", [Text(f"#{r['id']}", style="bold") for r, *_ in rows], 0, True],
            "status": ["status", [Text(f"{SYMBOLS[key]} {STATE_LABELS[key]}", style=STATE_STYLES[key])
                                  for _, key, *_ in rows], 0, False],
            "subject": ["subject", [Text(r["subject"], style="dim" if r["status"] == "deleted" else "")
                                    for r, *_ in rows], 0, False],
            "owner": ["owner", [Text(r["owner"], style=OWNER_STYLE) for r, *_ in rows], 0, False],
            "blocked": ["blocked by", [Text(_ids(b) if len(b) <= 3 else f"{_ids(b[:3])} +{len(b) - 3}", style="red")
                                       for _, _, b, _ in rows], 0, False],
            "unlocks": ["unlocks", [Text(str(n) if n else "", style="bold yellow" if n == top else "")
                                    for *_, n in rows], 0, True],
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
            for (_, _, size, right), cell in zip(columns.values(), cells):
                cell = cell.copy()
                cell.truncate(size, overflow="ellipsis")
                padding = " " * (size - cell.cell_len)
                parts.append(Text(padding) + cell if right else cell + padding)
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
    summary = summary_text(listing.records, listing.lookup, len(records), plain)
    if not records:
        return Group(Text("no tasks to show", style="dim"), summary)
    return Group(TaskTable(records, listing, plain), summary)


def plain_lines(records: list[Record], listing) -> list[str]:
    """One line per task for plain mode, never wrapped, and nothing after the subject:
    `[ ] #4: Write parser`, so a script can take everything after `#4: ` as the subject
    (a subject may contain anything). Owners and blockers are in `board`, `get`, --json."""
    return [task_line(record) for record in records]


def show_list(records: list[Record], listing, plain: bool) -> None:
    if plain:
        text = "".join(line + "\n" for line in plain_lines(records, listing))
        _write(sys.stdout, text)
        _write(sys.stderr, diagram.summary(listing.records, listing.lookup, len(records)) + "\n")
        return
    _print(console(plain), list_view(records, listing, plain))


def _write(stream, text: str) -> None:
    if hasattr(stream, "buffer"):
        stream.buffer.write(text.encode("utf-8"))
    else:
        stream.write(text)
    stream.flush()


# -- board ----------------------------------------------------------------------------


def _card(record: Record, key: str, lookup, unlock: int, plain: bool) -> Text:
    card = Text(overflow="fold")
    if plain:
        card.append(MARKERS[record["status"]] + " ")
    card.append(f"#{record['id']}", style=f"bold {STATE_STYLES[key]}")
    subject = record["subject"]
    card.append(" " + (subject if len(subject) <= CARD_SUBJECT else subject[:CARD_SUBJECT - 1] + "…"),
                style="dim" if key == "completed" else "")
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
    Side by side when there is room; stacked, one titled list per column, below NARROW."""

    def __init__(self, listing, plain: bool = False):
        self.listing = listing
        self.plain = plain

    def cards(self) -> dict[str, list[Text]]:
        lookup = self.listing.lookup
        unlocks = diagram.unlocks(self.listing.records)
        found = {}
        for (name, key), records in zip(diagram.COLUMNS, diagram.columns(self.listing.records, lookup).values()):
            found[name] = [_card(r, key, lookup, unlocks.get(r["id"], 0), self.plain) for r in records]
        return found

    def header(self, name: str, key: str, count: int) -> Text:
        return Text(f"{name} ({count})", style="" if self.plain else f"bold {STATE_STYLES[key]}")

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        cards = self.cards()
        keys = dict(diagram.COLUMNS)
        if options.max_width < NARROW:
            for name, column in cards.items():
                yield self.header(name, keys[name], len(column))
                for card in column:
                    yield Padding(card, (0, 0, 0, 2))
                yield Text("")
            return
        table = Table(box=box.ASCII2 if self.plain else box.ROUNDED, expand=True, show_lines=False,
                      padding=(0, 1), safe_box=True)
        for name, column in cards.items():
            table.add_column(self.header(name, keys[name], len(column)), ratio=1, overflow="fold")
        cells = []
        for column in cards.values():
            stacked: list[RenderableType] = []
            for card in column:
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


def show_board(listing, plain: bool, svg: Optional[str] = None) -> None:
    _print(console(plain), board_view(listing, plain))
    if plain:
        _write(sys.stderr, diagram.summary(listing.records, listing.lookup) + "\n")
    if svg:
        _write_svg(board_view(listing, plain=False), svg, title="tasks board")


def board_signature(root) -> tuple:
    """What changes when any file on the board changes: names, sizes, mtimes and
    inodes of the board folder's entries (one scandir, no file opened). The lock and
    scratch entries are left out: readers and writers touch them without a change."""
    try:
        with os.scandir(root) as entries:
            found = []
            for entry in entries:
                if entry.name in (".lock", ".scratch"):
                    continue
                try:
                    stat = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                found.append((entry.name, stat.st_size, stat.st_mtime_ns, stat.st_ino))
    except OSError:
        return ()
    return tuple(sorted(found))


def watch_view(board, plain: bool = False) -> RenderableType:
    """The board as the watcher shows it: the board, the summary, the time of the view."""
    from .errors import TaskError

    try:
        listing = board.listing()
    except TaskError as exc:
        return Text(f"cannot read the board: {exc.message}", style="red")
    parts: list[RenderableType] = [BoardView(listing, plain), summary_text(listing.records, listing.lookup, plain=plain)]
    for damage in listing.damaged:
        parts.append(Text(f"damaged: {damage.message}", style="red"))
    parts.append(Text(f"{board.store.root} · {time.strftime('%H:%M:%S')} · Ctrl-C to stop", style="dim"))
    return Group(*parts)


def watch_board(board, plain: Optional[bool] = None, out: Optional[Console] = None, interval: float = 0.5,
                sleep: Callable[[float], None] = time.sleep) -> None:
    """Redraw the board whenever a file under it changes, until Ctrl-C. Polls the
    folder's file stats every `interval` seconds (cheap: no file is read unless one
    changed). On a terminal the view is redrawn in place (rich Live); plain mode
    prints each new view after the last one, which suits a log."""
    from rich.live import Live

    if plain is None:
        plain = _plain_default()
    out = out or console(plain)
    root = board.store.root
    seen = None
    try:
        if plain or not out.is_terminal:
            while True:
                signature = board_signature(root)
                if signature != seen:
                    if seen is not None:
                        out.print(Text("-" * min(out.width, 40)))
                    seen = signature
                    _print(out, watch_view(board, plain))
                sleep(interval)
        with Live(console=out, auto_refresh=False, redirect_stdout=False, redirect_stderr=False,
                  vertical_overflow="ellipsis") as live:
            while True:
                signature = board_signature(root)
                if signature != seen:
                    seen = signature
                    live.update(watch_view(board, plain), refresh=True)
                sleep(interval)
    except KeyboardInterrupt:
        pass


def _plain_default() -> bool:
    from .app import plain_output

    return plain_output()


# -- one task -------------------------------------------------------------------------


def _neighbour_line(other_id: int, other: Optional[Record], lookup, plain: bool) -> Text:
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
    def lookup(task_id: int) -> Optional[Record]:
        # Only the task's neighbours were read. Any other id (a neighbour's own blocker)
        # or an unreadable neighbour counts as open: nothing is called ready on a guess,
        # and on a sound board a completed task is in no blockedBy anyway.
        found = neighbours.get(task_id) if task_id != record["id"] else record
        return found if found is not None else {"status": "pending"}

    key = state(record, lookup)
    title = _mark(record, key, plain)
    title.append(f" #{record['id']}: ", style="bold")
    title.append(record["subject"], style="bold")

    fields = Table.grid(padding=(0, 2))
    fields.add_column(style="bold" if not plain else "", no_wrap=True)
    fields.add_column(overflow="fold")
    status = Text(STATE_LABELS[key], style=STATE_STYLES[key])
    if STATE_LABELS[key] != record["status"]:
        status.append(f" ({record['status']})", style="dim")
    fields.add_row("status", status)
    fields.add_row("owner", Text(record["owner"], style=OWNER_STYLE) if record["owner"] else Text("—", style="dim"))
    for label, ids in (("blocked by", record["blockedBy"]), ("blocks", record["blocks"])):
        if not ids:
            fields.add_row(label, Text("—", style="dim"))
            continue
        fields.add_row(label, Group(*(_neighbour_line(i, neighbours.get(i), lookup, plain) for i in ids)))
    metadata = record.get("metadata") or {}
    if metadata:
        meta = Table.grid(padding=(0, 2))
        meta.add_column(no_wrap=True)
        meta.add_column(overflow="fold")
        for meta_key, value in metadata.items():
            meta.add_row(Text(str(meta_key)), Text(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)))
        fields.add_row("metadata", meta)
    known = {"id", "subject", "description", "status", "blockedBy", "blocks", "owner", "metadata"}
    names = {"createdAt": "created", "updatedAt": "updated"}
    for extra in record:
        if extra not in known:
            value = record[extra]
            fields.add_row(Text(names.get(extra, extra)),
                           Text(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)))
    parts: list[RenderableType] = [fields]
    if record["description"]:
        parts += [Text(""), Text(record["description"], overflow="fold")]
    if plain:
        return Group(title, *parts)
    return Panel(Group(*parts), title=title, title_align="left", border_style=STATE_STYLES[key],
                 box=box.ROUNDED, expand=False)


def show_task(record: Record, neighbours: dict, plain: bool) -> None:
    _print(console(plain), task_view(record, neighbours, plain))


# -- graph ----------------------------------------------------------------------------


class GraphView:
    """The dependency graph as a tree of one-line nodes. The whole board: every task
    without a blocker is a root and its dependents hang below it; a task reached again
    is shown once more as a reference (↑). With a focus: what the task waits on
    (upstream) and what waits on it (downstream). Depth is capped by the width; a
    subtree that would go deeper continues as a new root below, so no task is lost."""

    def __init__(self, records: list[Record], edges: list[tuple[int, int]], lookup, focus: Optional[int] = None,
                 plain: bool = False):
        self.records = records
        self.by_id = {r["id"]: r for r in records}
        self.edges = edges
        self.lookup = lookup
        self.focus = focus
        self.plain = plain

    def label(self, task_id: int, again: bool = False) -> Text:
        record = self.by_id.get(task_id)
        if record is None:
            return Text(f"#{task_id} (not shown)", style="dim", no_wrap=True, overflow="ellipsis")
        key = state(record, self.lookup)
        text = _mark(record, key, self.plain)
        text.no_wrap, text.overflow = True, "ellipsis"
        text.append(f" #{task_id} ", style=f"bold {STATE_STYLES[key]}")
        text.append(record["subject"], style="dim" if again or key == "completed" else "")
        if record["owner"] and not again:
            text.append("  ")
            text.append("@" + record["owner"], style=OWNER_STYLE)
        if again:
            text.append("  ↑ above", style="dim")
        return text

    def grow(self, tree: Tree, start: int, follow: dict[int, list[int]], seen: set[int], max_depth: int,
             continued: list[int]) -> None:
        """Hang start's subtree (along `follow`) under tree, iteratively."""
        stack = [(tree, start, 1)]
        while stack:
            parent, node, depth = stack.pop()
            if node in seen:
                parent.add(self.label(node, again=True))
                continue
            seen.add(node)
            branch = parent.add(self.label(node))
            children = follow.get(node, [])
            if not children:
                continue
            if depth >= max_depth:
                branch.add(Text(f"… continues below ({_ids(children)})", style="dim", no_wrap=True, overflow="ellipsis"))
                continued.extend(children)
                continue
            for child in reversed(children):
                stack.append((branch, child, depth + 1))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        max_depth = max(1, (options.max_width - 24) // 4)
        down, up = diagram.adjacency(self.edges)
        if self.focus is not None and self.focus not in self.by_id:
            yield Text(f"#{self.focus} is deleted: it has no edges left (`tasks graph --all` lists it)", style="dim")
            return
        if self.focus is not None:
            tree = Tree(self.label(self.focus), guide_style="dim")
            for title, follow in (("waits on", up), ("unlocks", down)):
                branch = tree.add(Text(title, style="bold"))
                continued: list[int] = []
                seen = {self.focus}
                for start in follow.get(self.focus, []):
                    self.grow(branch, start, follow, seen, max_depth - 1, continued)
                if not follow.get(self.focus):
                    branch.add(Text("nothing", style="dim"))
                self._continue(branch, continued, follow, seen, max_depth - 1)
            yield tree
            return
        heading = Text(f"{len(self.records)} tasks · {len(self.edges)} edges", style="bold")
        tree = Tree(heading, guide_style="dim")
        seen: set[int] = set()
        continued: list[int] = []
        roots = [r["id"] for r in self.records if not up.get(r["id"])]
        for root in roots:
            self.grow(tree, root, down, seen, max_depth, continued)
        self._continue(tree, continued, down, seen, max_depth)
        # a cycle (only on a damaged board) has no root: show what is left
        for record in self.records:
            if record["id"] not in seen:
                self.grow(tree, record["id"], down, seen, max_depth, continued)
                self._continue(tree, continued, down, seen, max_depth)
        yield tree

    def _continue(self, tree: Tree, continued: list[int], follow, seen: set[int], max_depth: int) -> None:
        while continued:
            node = continued.pop(0)
            if node in seen:
                continue
            self.grow(tree, node, follow, seen, max_depth, continued)


def graph_view(records: list[Record], edges, lookup, focus: Optional[int] = None, plain: bool = False) -> RenderableType:
    return GraphView(records, list(edges), lookup, focus, plain)


def show_graph(records, edges, listing, fmt: str, focus: Optional[int], plain: bool, svg: Optional[str] = None) -> None:
    if fmt == "dot":
        _write(sys.stdout, diagram.to_dot(records, edges, listing.lookup))
    elif fmt == "mermaid":
        _write(sys.stdout, diagram.to_mermaid(records, edges, listing.lookup))
    else:
        _print(console(plain), graph_view(records, edges, listing.lookup, focus, plain))
    if svg:
        _write_svg(graph_view(records, edges, listing.lookup, focus, plain=False), svg, title="tasks graph")


# -- check ----------------------------------------------------------------------------


def show_check(problems: list[dict], ok: bool, plain: bool) -> None:
    for problem in problems:
        mark = "fixed" if problem["fixed"] else problem["rule"]
        sys.stderr.write(f"{mark}: {problem['message']}\n")
    sys.stderr.write(("board is sound\n" if ok else f"{sum(not p['fixed'] for p in problems)} problem(s) left\n"))
