"""`board`: the kanban, printed once or, with `--watch`, redrawn as it changes (changed
cards highlighted)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable
from typing import Any

from rich import box
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from ...core.fields import DEFAULT_PRIORITY, Record
from ...core.graph import open_blockers
from ...core.model import MARKERS
from ...core.model import ids_text as _ids
from ...core.states import state
from .. import viewmodel as views
from ..plain import trouble_words
from ..text import write as _write
from ..viewmodel import STATE_LABELS, Notes, span, times
from .common import (
    CARD_SUBJECT,
    DONE_FEW,
    HEADER_STYLES,
    LABEL_STYLE,
    NARROW,
    NO_FACTS,
    OWNER_STYLE,
    PRIORITY_STYLES,
    STATE_STYLES,
    SUBJECT_STYLES,
    TROUBLE,
    TROUBLE_MARK,
    Context,
    Facts,
    Phrases,
    console,
    fit_line,
    plain_text,
    show,
    summary_line,
    summary_phrases,
    trouble_counts,
)
from .svg import stdout_is_terminal, write_svg

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
        return fit_line(line, record["subject"], SUBJECT_STYLES[key], owner, self.OWNER_MAX, 12, width)

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
        context: Context | None = None,
        every: bool = False,
        changed: Iterable[int] = (),
    ):
        self.listing = listing
        self.plain = plain
        self.caps: dict[str, int] = {}
        self.records = listing.records if records is None else records
        self.context = context or Context(listing, None, None)
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
    context = Context(listing, facts, now)
    view = BoardView(listing, plain, records=records, context=context, every=every)
    summary = None if plain else Phrases(board_summary(listing, records, context))
    return BoardScreen(view, summary, height, reserve=reserve)


def board_summary(listing, records: list[Record] | None, context: Context) -> list[Text]:
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
    context = Context(listing, facts, now)
    # fit the terminal, less one line for the next prompt; piped or `--all`: everything
    height = max(8, out.size.height - 1) if stdout_is_terminal() and not every else None
    view = BoardView(listing, plain, records=records, context=context, every=every)
    screen = BoardScreen(view, None if plain else Phrases(board_summary(listing, records, context)), height)
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
        show(screen, plain, out)
        hint = screen.hint()
        _write(sys.stderr, summary + "\n" + (hint.plain + "\n" if hint else ""))
    else:
        out.print(screen)
    if svg:
        picture = BoardScreen(
            BoardView(listing, False, records=records, context=context, every=every),
            Phrases(board_summary(listing, records, context)),
        )
        write_svg(picture, svg, title="tasks board")


# -- board --watch ------------------------------------------------------------------------

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
        from ...core.errors import TaskError

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
            context = Context(listing, watcher.facts, now)
            top.append(Phrases(board_summary(listing, records, context)))
        # one line whatever the board's path: the clock and the way out first, the path cut to fit
        status = f"{clock}{dot}Ctrl-C to stop{dot}{watcher.board.store.root}"
        top.append(Text(status, style="dim", no_wrap=True, overflow="ellipsis"))
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
