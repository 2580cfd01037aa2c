"""`board --watch`: the board redrawn as it changes, changed cards highlighted."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.text import Text

from ...core.model import Record
from ...core.states import state
from ..viewmodel import STATE_LABELS, span
from .board import BoardScreen, BoardView, board_summary
from .common import NO_FACTS, TROUBLE, TROUBLE_MARK, Context, Facts, Phrases, console, plain_text

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
