"""`get`: one task, its neighbours, its runtime facts and its last events."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from typing import Any

from rich import box
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from ...core.fields import Record
from ...core.states import held_back, state
from ..plain import EVENTS_SHOWN, OWN_ROWS, trouble_words
from ..plain import task_text as plain_text_of_task
from ..viewmodel import STATE_LABELS, Notes, epoch, span, task_line, times, when_text
from .common import (
    LABEL_STYLE,
    NO_FACTS,
    OWNER_STYLE,
    PRIORITY_STYLES,
    STATE_STYLES,
    SUBJECT_STYLES,
    TROUBLE,
    TROUBLE_MARK,
    Facts,
    mark,
    show,
)

# -- one task -------------------------------------------------------------------------


def _neighbour_line(other_id: int, other: Record | None, lookup, plain: bool) -> Text:
    if other is None:
        return Text(f"{TROUBLE_MARK} #{other_id} (missing or unreadable)", style=TROUBLE)
    key = state(other, lookup)
    line = mark(other, key, plain)
    line.append(f" #{other_id} ", style="bold")
    line.append(other["subject"], style=SUBJECT_STYLES[key])
    line.append(f"  {STATE_LABELS[key]}", style=STATE_STYLES[key])
    if other["owner"]:
        line.append("  ")
        line.append("@" + other["owner"], style=OWNER_STYLE)
    return line


# metadata keys with a row of their own in `get` (DESIGN §7), shown in this order


def _value(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _events(events: list[Mapping[str, Any]], now: float) -> Table:
    """`4 min ago  agent-c claimed lease=15m`: when, then who and what, wrapped between
    words so that a narrow panel keeps them readable."""
    from ..messages import entry_words

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
    rest = {name: value for name, value in (record.get("metadata") or {}).items() if name not in OWN_ROWS}
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
    title = mark(record, key, plain)
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
    show(task_view(record, neighbours, plain, facts, now), plain)
