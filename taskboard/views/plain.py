"""One task as plain text for a person, without rich: what `tasks get ID` prints when
piped or under NO_COLOR, as light to start as --json. render.task_view draws the same
view in colour, and in plain mode draws this text. Values are folded to the width as
rich folds them (between words; a word longer than a line is cut).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping

from ..core.fields import STUCK_AFTER, Record
from ..core.model import MARKERS
from ..core.states import held_back, state
from .viewmodel import STATE_LABELS, Notes, epoch, span, task_line, times, when_text

TYPE_CHECKING = False  # typing costs ~5 ms of start-up; annotations are strings anyway
if TYPE_CHECKING:
    from typing import Any

    from ..core import graph


def task_text(
    record: Record,
    neighbours: dict[int, Record | None],
    facts: Mapping[int, Mapping[str, Any]] | None = None,
    now: float | None = None,
    width: int = 80,
) -> str:
    """`get` for a person in plain text, without rich: the task's line as in `list`, then
    every field in a two-column grid, the description and the last journal events, each
    value folded to `width` as rich folds it. The same text as render.task_view in plain
    mode is this text), at a tenth of the start-up."""

    def lookup(task_id: int) -> Record | None:
        # Only the neighbours were read: any other id counts as open (nothing is called ready on a guess).
        found = neighbours.get(task_id) if task_id != record["id"] else record
        return found if found is not None else {"status": "pending"}

    fact = (facts or {}).get(record["id"]) or {}
    now = time.time() if now is None else now
    notes = Notes(record, fact, now)
    key = state(record, lookup, held_back({record["id"]: fact}))
    metadata = record.get("metadata") or {}
    status = STATE_LABELS[key] + (f" ({record['status']})" if STATE_LABELS[key] != record["status"] else "")
    rows: list[tuple[str, list[str]]] = [
        ("status", [status] + [f"{TROUBLE_MARK} {trouble}" for trouble in trouble_words(notes)]),
        ("priority", [priority_text(record, notes)]),
        ("labels", [", ".join(notes.labels) or "-"]),
        ("owner", [record["owner"] or "-"]),
    ]
    rows += agent_rows(record, notes, now)
    for label, ids in (("blocked by", record["blockedBy"]), ("blocks", record["blocks"])):
        rows.append((label, [_neighbour_text(i, neighbours.get(i), lookup) for i in ids] or ["-"]))
    rest = [(str(k), value_text(v)) for k, v in metadata.items() if k not in OWN_ROWS]
    if rest:
        rows.append(("metadata", []))
    known = {"id", "subject", "description", "status", "blockedBy", "blocks", "owner", "metadata"}
    names = {"createdAt": "created", "updatedAt": "updated"}
    rows += [(names.get(k, k), value_text(v).split("\n")) for k, v in record.items() if k not in known]
    label_width = max(cell_len(label) for label, _ in rows)
    room = max(1, width - label_width - 2)
    lines = fold(task_line(record), width)
    for label, values in rows:
        cells = _grid([[k, v] for k, v in rest], room, last_folds=True) if label == "metadata" and not values else []
        for value in values:
            cells += fold(value, room)
        for n, cell in enumerate(cells):
            head = label + " " * (label_width - cell_len(label)) if n == 0 else " " * label_width
            lines.append((head + "  " + cell).rstrip())
    if record["description"]:
        lines += ["", *fold(record["description"], width)]
    events = [event for event in fact.get("events") or () if isinstance(event, Mapping)]
    if events:
        shown = events[-EVENTS_SHOWN:]
        lines += ["", "last events" if len(events) > len(shown) else "events"]
        lines += _grid([event_cells(event, now) for event in shown], width, last_folds=True)
    return "\n".join(lines) + "\n"


def agent_rows(record: Record, notes: Notes, now: float) -> list[tuple[str, list[str]]]:
    """The rows of DESIGN §7, each only when there is something to say."""
    metadata = record.get("metadata") or {}
    rows = []
    if notes.lease:
        rows.append(("lease", [notes.lease]))
    if notes.elsewhere:
        rows.append(("elsewhere", [notes.elsewhere]))
    if notes.attempts:
        stuck = f": stuck (`tasks update {record['id']} --status pending --retry` puts it back)" if notes.stuck else ""
        rows.append(("attempts", [f"failed {times(notes.attempts)}{stuck}"]))
        if notes.last_failure:
            rows.append(("last failure", notes.last_failure.split("\n")))
    if notes.progress is not None:
        rows.append(("children", [f"{notes.progress[0]}/{notes.progress[1]} done"]))
    if notes.parent is not None:
        rows.append(("parent", [f"#{notes.parent}"]))
    for label, stamp in (("after", notes.after), ("due", notes.due)):
        if stamp is not None:
            rows.append((label, [when_text(stamp) + (" (overdue)" if label == "due" and notes.overdue else "")]))
    if "accept" in metadata:
        rows.append(("accept", value_text(metadata["accept"]).split("\n")))
    if "gate" in metadata or notes.gate is not None:
        rows.append(("gate", gate_text(metadata, notes, now).split("\n")))
    return rows


EVENTS_SHOWN = 5  # `get` shows this many of the task's last journal events
TROUBLE_MARK = "!"
OWN_ROWS = (
    "priority",
    "labels",
    "accept",
    "gate",
    "parent",
    "after",
    "due",
)  # metadata keys with a row of their own in `get`


def value_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def trouble_words(notes: Notes) -> list[str]:
    """What is wrong with a task, in the words a card or `get` shows."""
    words = []
    for trouble in notes.troubles:
        if trouble == "lease expired" and notes.lease_short:
            words.append(notes.lease_short)
        elif trouble == "stuck":
            words.append(f"stuck: failed {times(max(notes.attempts, STUCK_AFTER))}")
        elif trouble == "gate failed" and notes.gate is not None and isinstance(notes.gate.get("exit"), int):
            words.append(f"gate failed (exit {notes.gate['exit']})")
        elif trouble == "gate failed" and notes.gate is not None and notes.gate.get("headline"):
            words.append(str(notes.gate["headline"]))
        else:
            words.append(trouble)
    return words


def priority_text(record: Record, notes: Notes) -> str:
    metadata = record.get("metadata") or {}
    text = f"P{notes.priority}"
    if "priority" not in metadata:
        return text + " (the default)"
    if notes.priority != metadata["priority"]:
        return text + f" (metadata.priority {value_text(metadata['priority'])} is not 0-4: counts as 2)"
    return text


def gate_text(metadata: Mapping[str, Any], notes: Notes, now: float) -> str:
    """The gate's command, then how its last run went and the tail of its output."""
    text = value_text(metadata["gate"]) if "gate" in metadata else ""
    result = notes.gate_result(now)
    if result:
        text += ("\n" if text else "") + "last run: " + result
    tail = str((notes.gate or {}).get("tail") or "").rstrip("\n")
    if tail:
        text += "\n" + "\n".join(tail.splitlines()[-5:])
    return text


def event_cells(event: Mapping[str, Any], now: float) -> list[str]:
    """`4 min ago`, then who and what worded as `tasks log` words it (a gate's result in
    two words: its command and output are in the gate row)."""
    from .messages import entry_words

    at = epoch(event.get("at"))
    entry = {"event": "?", **{key: value for key, value in event.items() if value != "" and key != "gate"}}
    words = entry_words(entry)
    gate = event.get("gate")
    if isinstance(gate, Mapping):
        words.append(gate_words(gate))
    what = " ".join([str(event.get("actor", "?")), words[0].rstrip(":"), *words[1:]])
    return [f"{span(now - at)} ago" if at is not None else str(event.get("at", "?")), what]


def gate_words(gate: Mapping[str, Any]) -> str:
    if gate.get("overridden"):
        return "gate not run"
    if gate.get("timedOut"):
        return "gate timed out"
    return "gate passed" if gate.get("exit") == 0 else f"gate exit {gate.get('exit')}"


def _grid(rows: list[list[str]], width: int, last_folds: bool, capped: dict[int, int] | None = None) -> list[str]:
    """Rows of cells as a grid two spaces apart: each column as wide as its widest cell
    (a capped one cut with an ellipsis), the last folded into the width that is left;
    when that leaves too little, the widest columns give way first."""
    if not rows:
        return []
    capped = capped or {}
    rows = [[_ellipsis(cell, capped[n]) if n in capped else cell for n, cell in enumerate(row)] for row in rows]
    widths = [max(cell_len(row[n]) for row in rows) for n in range(len(rows[0]) - 1)]
    while width - sum(widths) - 2 * len(widths) < MIN_ROOM and max(widths, default=0) > 4:
        widths[widths.index(max(widths))] -= 1
    room = max(1, width - sum(widths) - 2 * len(widths))
    lines = []
    for row in rows:
        cells = [_ellipsis(cell, w) for cell, w in zip(row[:-1], widths, strict=True)]
        head = "".join(cell + " " * (w - cell_len(cell)) + "  " for cell, w in zip(cells, widths, strict=True))
        for n, part in enumerate(fold(row[-1], room) if last_folds else [row[-1]]):
            lines.append(((head if n == 0 else " " * len(head)) + part).rstrip())
    return lines


MIN_ROOM = 12  # the last column of a grid keeps at least this many cells while others have room to give


def _ellipsis(text: str, width: int) -> str:
    return text if cell_len(text) <= width else _cut(text, width - 1) + "…"


def _neighbour_text(other_id: int, other: Record | None, lookup: graph.Lookup) -> str:
    if other is None:
        return f"{TROUBLE_MARK} #{other_id} (missing or unreadable)"
    key = state(other, lookup)
    line = f"{MARKERS[other['status']]} #{other_id} {other['subject']}  {STATE_LABELS[key]}"
    return line + (f"  @{other['owner']}" if other["owner"] else "")


_WORD = re.compile(r"\s*\S+\s*")


def fold(text: str, width: int) -> list[str]:
    """Text as lines of at most `width` cells: each line broken between words, a word
    longer than a line cut, trailing spaces dropped (rich's wrapping with overflow fold)."""
    lines = []
    for paragraph in text.split("\n"):
        line, used = "", 0
        for match in _WORD.finditer(paragraph):
            word = match.group(0)
            length = cell_len(word.rstrip())
            if width - used >= length:
                line, used = line + word, used + cell_len(word)
                continue
            if line:
                lines.append(line.rstrip())
            line, used = "", 0
            while cell_len(word.rstrip()) > width:
                head = _cut(word, width)
                lines.append(head)
                word = word[len(head) :]
            line, used = word, cell_len(word)
        lines.append(line.rstrip())
    return lines


def _cut(text: str, width: int) -> str:
    """The longest start of `text` that fits in `width` cells (at least one character)."""
    used = 0
    for end, char in enumerate(text):
        used += cell_len(char)
        if used > width:
            return text[: max(end, 1)]
    return text


def cell_len(text: str) -> int:
    """Terminal cells `text` takes: 2 for wide East Asian characters, 0 for combining marks."""
    if text.isascii():
        return len(text)
    import unicodedata

    return sum(
        0
        if unicodedata.combining(char) or unicodedata.category(char) in ("Mn", "Me", "Cf")
        else 2
        if unicodedata.east_asian_width(char) in ("W", "F")
        else 1
        for char in text
    )
