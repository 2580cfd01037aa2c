"""`list` and `ready` for people: the task table."""

from __future__ import annotations

import sys

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.text import Text

from ...core.fields import DEFAULT_PRIORITY, Record
from ...core.graph import open_blockers
from ...core.model import ids_text as _ids
from ...core.states import state
from .. import viewmodel as views
from ..text import write as _write
from ..viewmodel import STATE_LABELS, Notes, task_line
from .common import (
    LABEL_STYLE,
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
    mark,
    summary_line,
    summary_phrases,
    trouble_counts,
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

    def __init__(self, records: list[Record], listing, plain: bool = False, context: Context | None = None):
        self.records = records
        self.listing = listing
        self.plain = plain
        self.context = context or Context(listing, None, None)

    def status(self, record: Record, key: str, notes: Notes, short: bool = False) -> Text:
        """`◐ in progress`, or `!` and the trouble in red; `short`: the symbol alone."""
        if notes.troubles:
            return Text(TROUBLE_MARK + ("" if short else f" {notes.troubles[0]}"), style=TROUBLE)
        if notes.elsewhere:  # held back as blocked here, but someone is on it (◐) or finished it (✔) there
            key = "completed" if notes.elsewhere.startswith("completed") else "in_progress"
        cell = mark(record, key, self.plain)
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
    context = Context(listing, facts, now)
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
        context = Context(listing, facts, now)
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
