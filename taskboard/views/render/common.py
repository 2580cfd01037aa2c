"""The colour language, the consoles, one-line entries and the summary lines views share."""

from __future__ import annotations

import io
import sys
import time
from collections import Counter
from collections.abc import Collection, Iterable, Mapping
from typing import Any

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.text import Text

from ...core.fields import Record
from ...core.graph import edges as graph_edges
from ...core.model import MARKERS
from ...core.states import held_back
from .. import viewmodel as views
from ..text import terminal_width
from ..viewmodel import Notes, cyclic_ids

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

CARD_SUBJECT = 120  # a kanban card shows at most this many characters of the subject
NARROW = 64  # below this many columns the board stacks its columns and the list drops columns
DONE_FEW = 5  # the board shows this many of the most recently finished tasks (`--all`: every one)

Facts = Mapping[int, Mapping[str, Any]]
NO_FACTS: Facts = {}


class _Console(Console):
    """rich's console, but a reader that goes away (a closed pipe) is the front end's to
    end (the command line exits 0 quietly), not rich's SystemExit(1), a bug's code."""

    def on_broken_pipe(self) -> None:
        self.quiet = True  # nothing more is written
        raise BrokenPipeError


def console(plain: bool, stderr: bool = False, record: bool = False, width: int | None = None) -> Console:
    """The console a command prints to. Plain: no colour, no terminal codes at all."""
    stream = _lossy(sys.stderr if stderr else sys.stdout)
    if plain:
        return _Console(
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
    return _Console(file=stream, highlight=False, record=record, emoji=False, markup=False, width=width)


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


def show(renderable: RenderableType, plain: bool, out: Console | None = None) -> None:
    """Print a view for a person on stdout: plain mode as trimmed text."""
    out = out or console(plain)
    if plain:
        out.print(Text(plain_text(renderable, out.width).rstrip("\n")), soft_wrap=True)
    else:
        out.print(renderable)


def mark(record: Record, key: str, plain: bool) -> Text:
    """The status at a glance: the s12 marker in plain mode, else a coloured symbol."""
    mark = Text()  # the style goes on the symbol only: callers append more to this Text
    if plain:
        mark.append(MARKERS[record["status"]])
    else:
        mark.append(SYMBOLS[key], style=STATE_STYLES[key])
    return mark


def fit_line(line: Text, subject: str, style: str, owner: str, owner_max: int, subject_min: int, width: int) -> Text:
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


class Context:
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


def trouble_counts(context: Context, records: Iterable[Record]) -> Counter:
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
