"""What each page of the browser board shows, as plain data the templates lay out:
the kanban, a task with its neighbours and journal, the journal as a timeline, the
dependency graph. The terminal's words and rules (views, plain, messages) decide
every state, symbol and trouble word; nothing here imports a web library, so every
rule can be tested without a server.

User text goes through `shown` (control and bidi characters escaped, as in the
terminal); the templates escape HTML.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from ..core import graph
from ..core.errors import UsageError
from ..core.fields import Record, labels_of
from ..core.model import KEY_ORDER, MARKERS, parse_priority, parse_status
from ..core.states import held_back
from ..views import viewmodel as views
from ..views.messages import entry_words
from ..views.plain import agent_rows, priority_text, trouble_words, value_text
from ..views.text import shown, shown_lines, shown_record, shown_value
from .versions import version_of

TYPE_CHECKING = False  # typing costs ~5 ms of start-up; annotations are strings anyway
if TYPE_CHECKING:
    from typing import Any

    from ..ops.board import Board
    from ..ops.query import Listing

# The terminal's symbols (taskboard.render's colour language, README "Colours"); the
# colours live in static/board.css under the same state names.
SYMBOLS = {"blocked": "⊘", "ready": "○", "in_progress": "◐", "completed": "✔", "deleted": "✖"}
TROUBLE_MARK = "!"
DONE_SHOWN = 20  # the Done column shows the most recently finished few unless asked for all
EVENTS_SHOWN = 50  # a task's page shows this many of its last journal events
TIMELINE = 200  # the journal page shows this many of the last events unless asked for more
GRAPH_NODES = 400  # the graph draws at most this many tasks; a filter or a task narrows it


# -- filters, kept in the URL ---------------------------------------------------------


class Filters:
    """owner, labels (all given), priority (unset counts as 2), statuses (any of them:
    blocked, ready, in progress, done...), text (subject or description, any case)."""

    KEYS = ("owner", "label", "priority", "status", "q")

    def __init__(self) -> None:
        self.owner: str | None = None
        self.labels: list[str] = []
        self.priority: int | None = None
        self.statuses: list[str] = []
        self.text: str | None = None

    @classmethod
    def from_query(cls, params: Mapping[str, list[str]]) -> Filters:
        """From a query string's values; a malformed one is a usage error naming it."""
        found = cls()
        owner = _last(params, "owner")
        found.owner = owner if owner else None
        found.labels = sorted(
            {part.strip() for label in params.get("label", []) for part in label.split(",") if part.strip()}
        )
        priority = _last(params, "priority")
        if priority:
            found.priority = parse_priority(priority)
        for word in params.get("status", []):
            if word:
                status = parse_status(word, states=True)
                if status not in found.statuses:
                    found.statuses.append(status)
        text = _last(params, "q")
        found.text = text if text and text.strip() else None
        return found

    @property
    def active(self) -> bool:
        return bool(self.owner or self.labels or self.priority is not None or self.statuses or self.text)

    def pairs(self) -> list[tuple[str, str]]:
        """The filters as query pairs, in a fixed order (links keep the view)."""
        found = [("owner", self.owner)] if self.owner else []
        found += [("label", label) for label in self.labels]
        found += [("priority", str(self.priority))] if self.priority is not None else []
        found += [("status", status) for status in self.statuses]
        found += [("q", self.text)] if self.text else []
        return found

    def select(self, board: Board, listing: Listing) -> list[int] | None:
        """The ids that pass, or None when no filter is set (the whole board)."""
        if not self.active:
            return None
        from ..ops.query import Query

        query = Query(self.statuses, self.owner, labels=self.labels, priority=self.priority, grep=self.text)
        return board.select_ids(listing, query)


def _last(params: Mapping[str, list[str]], key: str) -> str:
    values = params.get(key) or [""]
    return values[-1]


STATUS_CHOICES = (
    ("blocked", "blocked"),
    ("ready", "ready"),
    ("in_progress", "in progress"),
    ("completed", "done"),
)


# -- runtime facts: leases, failed attempts, claims elsewhere --------------------------


def facts_of(board: Board, records: list[Record]) -> dict[int, dict]:
    """What the runtime state adds to these tasks (taskboard.claims, taskboard.remote), as
    the command line's views read it; nothing when it cannot be read: it never fails a page."""
    return shown_value(board.facts(records), lines=True)


# -- the kanban -----------------------------------------------------------------------


def card(
    record: Record,
    lookup: Any,
    facts: Mapping[int, Mapping[str, Any]],
    held: set[int],
    now: float,
    remember: Any,
    text: str | None = None,
) -> dict:
    """One card: what the terminal's card says, and the actions it offers."""
    key = views.state(record, lookup, held)
    notes = views.Notes(record, facts.get(record["id"]), now)
    safe = shown_record(record)
    waits = graph.open_blockers(record, lookup) if key in ("blocked", "in_progress") else []
    return {
        "id": record["id"],
        "subject": safe["subject"],
        "state": key,
        "symbol": SYMBOLS[key],
        "word": views.STATE_LABELS[key],
        "owner": safe["owner"],
        "priority": notes.priority if "priority" in (record.get("metadata") or {}) else None,
        "labels": [shown(label) for label in notes.labels],
        "troubles": trouble_words(notes),
        "lease": notes.lease_short if not notes.stale else None,
        "plan": notes.plan,  # `3/5 done · part of #12 · due 2026-12-24`, the terminal's card words
        "overdue": notes.overdue,
        "waits": waits,
        "version": remember(record, text),
        "updated": record.get("updatedAt") or "",
    }


def board_page(
    board: Board, filters: Filters, every: bool = False, now: float | None = None, remember: Any = None
) -> dict:
    """The kanban: Blocked · Ready · In progress · Done, filtered; the summary line over
    the whole board, as `tasks board` prints it. Done holds the most recently finished
    DONE_SHOWN unless `every`: the years of history are not decoded for a page."""
    now = time.time() if now is None else now
    listing = board.listing()
    chosen = filters.select(board, listing)
    wanted = None if chosen is None else set(chosen)
    opened = [record for record in listing.open_records if wanted is None or record["id"] in wanted]
    facts = views.with_progress(facts_of(board, listing.open_records), listing.progress())
    held = held_back(facts)
    columns = views.columns(opened, listing.lookup, held)
    done, hidden = _recent_done(listing, wanted, None if every else DONE_SHOWN)
    columns["Done"] = done
    shown_count = None if chosen is None else len([i for i in chosen if listing.shot.status(i) != "deleted"])
    summary = views.summary_of(listing.tally(held), shown_count)
    troubles = views.troubles(listing.open_records, facts, now)
    texts = listing.shot
    shown_columns: list[dict[str, Any]] = []
    for name, key in views.COLUMNS:
        cards = [
            card(record, listing.lookup, facts, held, now, remember or version_of, texts.text(record["id"]))
            for record in columns[name]
        ]
        shown_columns.append({"name": name, "state": key, "symbol": SYMBOLS[key], "cards": cards})
    shown_columns[-1]["hidden"] = hidden
    return {
        "columns": shown_columns,
        "summary": summary,
        "troubles": [f"{count} {word}" for word, count in sorted(troubles.items()) if count],
        "owners": sorted({shown(record["owner"]) for record in listing.open_records if record["owner"]}),
        "labels": sorted({shown(label) for record in listing.open_records for label in labels_of(record)}),
        "damaged": [shown(str(exc)) for exc in listing.damaged],
        "empty": next(iter(listing.shot.statuses()), None) is None and not listing.damaged,
    }


_UPDATED = '"updatedAt": "'


def _recent_done(listing: Listing, wanted: set[int] | None, count: int | None) -> tuple[list[Record], int]:
    """The completed tasks, most recently finished first (at most `count`), and how many
    more there are. Ordered by the time in each record's JSON text, found without
    decoding it: only the ones shown are decoded."""
    shot = listing.shot
    done = [i for i, status in shot.statuses() if status == "completed" and (wanted is None or i in wanted)]

    def finished(task_id: int) -> tuple[str, int]:
        text = shot.text(task_id)
        at = text.rfind(_UPDATED)
        return (text[at + len(_UPDATED) : at + len(_UPDATED) + 20] if at >= 0 else "", task_id)

    ordered = sorted(done, key=finished, reverse=True)
    kept = ordered if count is None else ordered[:count]
    records = sorted(
        (shot.record(task_id) for task_id in kept), key=lambda r: (r.get("updatedAt") or "", r["id"]), reverse=True
    )
    return records, len(ordered) - len(kept)


# -- one task -------------------------------------------------------------------------


def task_page(board: Board, task_id: int, now: float | None = None, remember: Any = None) -> dict:
    """Every field of a task, its blockers and dependents as links with their states,
    what the runtime state says (lease, attempts, gate), and its journal."""
    now = time.time() if now is None else now
    outcome = board.get(task_id, neighbours=True)
    record = outcome.record
    assert record is not None
    neighbours = outcome.neighbours
    # the version its forms carry is of the record as filed: an archived task is shown
    # marked so (never written), and archiving moves a file without changing it
    filed = {k: v for k, v in record.items() if k != "archived"} if task_id in board.store.archived else record

    def lookup(other: int) -> Record | None:
        if other == task_id:
            return record
        found = neighbours.get(other)
        return found if found is not None else {"status": "pending"}  # unread: never called ready on a guess

    history = board.log(task_id, EVENTS_SHOWN)
    events = history.journaled
    fact = dict(facts_of(board, [record]).get(task_id) or {})
    progress = board.progress_of(record)
    if progress is not None:
        fact["progress"] = progress
    gate = views.gate_fact(events)
    if gate is not None:
        fact["gate"] = shown_value(gate, lines=True)
    held = held_back({task_id: fact})
    key = views.state(record, lookup, held)
    notes = views.Notes(record, fact, now)
    safe = shown_record(record)
    metadata = safe.get("metadata") or {}
    rows: list[tuple[str, list[str]]] = [
        (
            "status",
            [
                views.STATE_LABELS[key]
                + (f" ({record['status']})" if views.STATE_LABELS[key] != record["status"] else "")
            ],
        ),
        ("priority", [priority_text(record, notes)]),
        ("labels", [", ".join(shown(label) for label in notes.labels) or "-"]),
        ("owner", [safe["owner"] or "-"]),
    ]
    rows += agent_rows(safe, notes, now)
    own = {"priority", "labels", "accept", "gate"}
    rows += [(shown(str(name)), value_text(value).split("\n")) for name, value in metadata.items() if name not in own]
    rows += [
        ("created", [safe.get("createdAt", "")]),
        ("updated", [safe.get("updatedAt", "")]),
        ("uid", [safe.get("uid", "")]),
    ]
    known = set(KEY_ORDER)  # the record's own keys: the rest are shown as they are
    rows += [
        (shown(str(name)), value_text(shown_value(value, lines=True)).split("\n"))
        for name, value in record.items()
        if name not in known
    ]

    def link(other: int) -> dict:
        found = neighbours.get(other)
        if found is None:
            return {"id": other, "subject": "(missing or unreadable)", "state": "deleted", "symbol": "?", "word": "?"}
        other_key = views.state(found, lambda i: neighbours.get(i) or lookup(i))
        return {
            "id": other,
            "subject": shown(found["subject"]),
            "state": other_key,
            "symbol": SYMBOLS[other_key],
            "word": views.STATE_LABELS[other_key],
        }

    return {
        "task": {
            "id": task_id,
            "subject": safe["subject"],
            "description": shown_lines(record["description"]),
            "state": key,
            "symbol": SYMBOLS[key],
            "word": views.STATE_LABELS[key],
            "status": record["status"],
            "owner": safe["owner"],
            "marker": MARKERS[record["status"]],
            "troubles": trouble_words(notes),
            "version": (remember or version_of)(filed),
        },
        "rows": rows,
        "blockers": [link(other) for other in record["blockedBy"]],
        "dependents": [link(other) for other in record["blocks"]],
        "events": timeline_events(events, now)[::-1],
        "events_total": len(events),
        "form": {  # the fields as the file holds them, for the edit form (the template escapes HTML)
            "subject": record["subject"],
            "description": record["description"],
            "priority": notes.priority if "priority" in (record.get("metadata") or {}) else None,
            "labels": ", ".join(notes.labels),
        },
    }


# -- the journal ------------------------------------------------------------------------


def timeline_events(entries: list[dict], now: float) -> list[dict]:
    """Journal entries as the timeline shows them (oldest first, as given)."""
    found = []
    for entry in entries:
        words = entry_words({"event": "?", **{key: value for key, value in entry.items() if key != "gate"}})
        gate = entry.get("gate")
        if isinstance(gate, Mapping):
            from ..views.plain import gate_words

            words.append(gate_words(gate))
        at = views.epoch(entry.get("at"))
        found.append(
            {
                "at": shown(str(entry.get("at", "?"))),
                "ago": f"{views.span(max(0.0, now - at))} ago" if at is not None else "",
                "day": shown(str(entry.get("at", "?"))[:10]),
                "actor": shown(str(entry.get("actor", "?"))),
                "task": entry.get("task") if isinstance(entry.get("task"), int) else None,
                "event": shown(str(entry.get("event", "?"))),
                "words": shown_lines(" ".join(words[1:])),
            }
        )
    return found


def journal_page(board: Board, task_id: int | None, limit: int, now: float | None = None) -> dict:
    """The last `limit` events, newest first, grouped by day."""
    now = time.time() if now is None else now
    outcome = board.log(task_id, limit)
    events = timeline_events(outcome.journaled, now)[::-1]
    days: list[dict] = []
    for event in events:
        if not days or days[-1]["day"] != event["day"]:
            days.append({"day": event["day"], "events": []})
        days[-1]["events"].append(event)
    return {"days": days, "count": len(events), "limit": limit, "task": task_id}


# -- the dependency graph -----------------------------------------------------------------

NODE_W, NODE_H, GAP_X, GAP_Y, PAD = 200, 44, 64, 14, 12


def graph_page(board: Board, filters: Filters, focus: int | None, everything: bool) -> dict:
    """The dependency graph as a layered drawing (blockers left of what they block): the
    open work and the finished tasks it was built on, or `everything`, or the
    neighbourhood of `focus`. Tasks with no edge are listed beside it, not drawn."""
    listing = board.listing(archive=everything or focus is not None)  # as `graph --all`: archived tasks too
    records = [record for record in listing.records if record["status"] != "deleted"]
    chosen = filters.select(board, listing)
    if chosen is not None:
        wanted = set(chosen)
        records = [record for record in records if record["id"] in wanted]
    if focus is not None:
        if all(record["id"] != focus for record in listing.records):
            board.get(focus)  # the right error: missing or damaged
        records = graph.neighbourhood(records, focus)
    elif not everything:
        opened = {record["id"] for record in records if record["status"] in ("pending", "in_progress")}
        near = set(opened)
        for blocker, dependent in graph.edges(records):
            if dependent in opened or blocker in opened:
                near.update((blocker, dependent))
        records = [record for record in records if record["id"] in near]
    edges = graph.edges(records)
    linked = {task_id for edge in edges for task_id in edge}
    drawn = [record for record in records if record["id"] in linked]
    cut = max(0, len(drawn) - GRAPH_NODES)
    if cut:
        drawn = drawn[-GRAPH_NODES:]  # the newest work
        kept = {record["id"] for record in drawn}
        edges = [(a, b) for a, b in edges if a in kept and b in kept]
    facts = facts_of(board, [record for record in drawn if record["status"] in ("pending", "in_progress")])
    held = held_back(facts)
    cyclic = views.cyclic_ids(edges)
    nodes, width, height = _layout(drawn, edges)
    by_record = {record["id"]: record for record in drawn}  # whole records: lookup knows only open work
    for node in nodes:
        record = by_record[node["id"]]
        key = views.state(record, listing.lookup, held)
        node.update(
            subject=shown_record(record)["subject"],  # an archived task's marked so
            state=key,
            symbol=SYMBOLS[key],
            word=views.STATE_LABELS[key],
            cyclic=node["id"] in cyclic,
            owner=shown(str(record.get("owner", ""))),
        )
    by_id = {node["id"]: node for node in nodes}
    lines = [_edge_path(by_id[a], by_id[b]) | {"from": a, "to": b} for a, b in edges if a in by_id and b in by_id]
    down, up = views.adjacency(edges)
    return {
        "nodes": nodes,
        "edges": lines,
        "width": width,
        "height": height,
        "cut": cut,
        "alone": [
            {
                "id": record["id"],
                "subject": shown_record(record)["subject"],
                "state": (k := views.state(record, listing.lookup, held)),
                "symbol": SYMBOLS[k],
                "word": views.STATE_LABELS[k],
            }
            for record in records
            if record["id"] not in linked
        ][:GRAPH_NODES],
        "rows": [
            {
                "id": node["id"],
                "subject": node["subject"],
                "symbol": node["symbol"],
                "state": node["state"],
                "word": node["word"],
                "waits": up.get(node["id"], []),
                "unlocks": down.get(node["id"], []),
            }
            for node in sorted(nodes, key=lambda node: node["id"])
        ],
        "focus": focus,
        "everything": everything,
    }


def _layout(records: list[Record], edges: list[tuple[int, int]]) -> tuple[list[dict], int, int]:
    """Layers by longest path from the tasks nothing blocks (a cycle's rest goes last);
    within a layer, ordered by where their blockers sit (one barycentre pass)."""
    ids = [record["id"] for record in records]
    blockers: dict[int, list[int]] = {task_id: [] for task_id in ids}
    dependents: dict[int, list[int]] = {task_id: [] for task_id in ids}
    for a, b in edges:
        blockers[b].append(a)
        dependents[a].append(b)
    waiting = {task_id: len(blockers[task_id]) for task_id in ids}
    layer: dict[int, int] = {}
    ready = [task_id for task_id in ids if waiting[task_id] == 0]
    while ready:
        task_id = ready.pop()
        layer[task_id] = max((layer[b] + 1 for b in blockers[task_id] if b in layer), default=0)
        for dependent in dependents[task_id]:
            waiting[dependent] -= 1
            if waiting[dependent] == 0:
                ready.append(dependent)
    deepest = max(layer.values(), default=-1)
    for task_id in ids:
        layer.setdefault(task_id, deepest + 1)  # on a cycle
    layers: dict[int, list[int]] = {}
    for task_id in sorted(ids):
        layers.setdefault(layer[task_id], []).append(task_id)
    row: dict[int, float] = {}
    for depth in sorted(layers):
        members = layers[depth]
        members.sort(
            key=lambda t: (sum(row.get(b, 0) for b in blockers[t]) / len(blockers[t]) if blockers[t] else 0, t)
        )
        for position, task_id in enumerate(members):
            row[task_id] = position
    nodes = [
        {"id": task_id, "x": PAD + depth * (NODE_W + GAP_X), "y": PAD + position * (NODE_H + GAP_Y)}
        for depth, members in layers.items()
        for position, task_id in enumerate(members)
    ]
    width = PAD * 2 + (max(layers, default=0) + 1) * (NODE_W + GAP_X) - GAP_X
    height = PAD * 2 + max((len(members) for members in layers.values()), default=0) * (NODE_H + GAP_Y)
    return nodes, max(width, NODE_W), max(height, NODE_H)


def _edge_path(start: dict, end: dict) -> dict:
    """An arrow from a blocker's right side to its dependent's left. One that spans
    several layers runs along the gap between two rows of nodes (the one nearest its
    ends), never behind a task it does not join: drawn straight, it passed behind the
    tasks in between and seemed to end at one of them."""
    x1, y1 = start["x"] + NODE_W, start["y"] + NODE_H / 2
    x2, y2 = end["x"], end["y"] + NODE_H / 2
    if x2 <= x1:  # same layer or backwards (a cycle): loop around below
        x2 = end["x"] + NODE_W / 2
        y2 = end["y"] + NODE_H
    elif x2 - x1 > GAP_X:  # layers in between: down (or up) to a gap between rows, along it, and back
        step = NODE_H + GAP_Y
        gap = round(((y1 + y2) / 2 - PAD + GAP_Y / 2) / step)  # gap k lies above row k
        yc = PAD + gap * step - GAP_Y / 2
        xa, xb, bend = x1 + GAP_X, x2 - GAP_X, GAP_X / 2
        return {
            "d": f"M{x1:.0f},{y1:.0f} C{x1 + bend:.0f},{y1:.0f} {xa - bend:.0f},{yc:.0f} {xa:.0f},{yc:.0f} "
            f"L{xb:.0f},{yc:.0f} C{xb + bend:.0f},{yc:.0f} {x2 - bend:.0f},{y2:.0f} {x2:.0f},{y2:.0f}"
        }
    bend = max(24.0, (x2 - x1) / 2)
    return {"d": f"M{x1:.0f},{y1:.0f} C{x1 + bend:.0f},{y1:.0f} {x2 - bend:.0f},{y2:.0f} {x2:.0f},{y2:.0f}"}


def parse_limit(text: str | None, default: int) -> int:
    if not text:
        return default
    if not text.isdigit() or not 1 <= int(text) <= 100_000:
        raise UsageError(f"limit must be a whole number from 1 to 100000, not {text[:20]!r}")
    return int(text)
