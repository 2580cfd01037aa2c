"""The view-model: what the views show, as plain data and text. Each task's state and
marker line, the board's columns (by state for people, by status for --json) and
summary, how much each task unlocks, and the graph as Graphviz DOT or a Mermaid
flowchart. No rich here, so DOT and Mermaid stay cheap and every rule the pictures
follow can be tested without a console.
"""

from __future__ import annotations

import re
import textwrap
import time
from collections.abc import Collection, Iterable, Mapping

from ..core import graph
from ..core.fields import OPEN, STATUSES, TIME_FORMAT, Record, labels_of, parent_of, priority_of, when_of
from ..core.model import MARKERS
from ..core.states import STATES, counts, is_stuck, state

TYPE_CHECKING = False  # typing costs ~5 ms of start-up; annotations are strings anyway
if TYPE_CHECKING:
    from typing import Any

STATE_LABELS = {
    "blocked": "blocked",
    "ready": "ready",
    "in_progress": "in progress",
    "completed": "done",
    "deleted": "deleted",
}
# Kanban columns, left to right, and the state each one holds.
COLUMNS = (("Blocked", "blocked"), ("Ready", "ready"), ("In progress", "in_progress"), ("Done", "completed"))


def task_line(record: Record) -> str:
    """`[ ] #4: Write parser`: the s12 marker, the id and the subject, on one line."""
    return f"{MARKERS[record['status']]} #{record['id']}: {record['subject']}"


def status_columns(records: Iterable[Record]) -> dict[str, list[Record]]:
    """The board as data (`board --json`): one key per open or finished status, records in id order."""
    found: dict[str, list[Record]] = {status: [] for status in STATUSES[:3]}
    for record in records:
        if record["status"] in found:
            found[record["status"]].append(record)
    return found


def columns(records: Iterable[Record], lookup: graph.Lookup, held: Collection[int] = ()) -> dict[str, list[Record]]:
    """The kanban columns in order, deleted tasks left out, cards in id order; the
    Ready column in ready order (graph.ready_order: priority, then id)."""
    found: dict[str, list[Record]] = {name: [] for name, _ in COLUMNS}
    column_of = {key: name for name, key in COLUMNS}
    for record in records:
        name = column_of.get(state(record, lookup, held))
        if name is not None:
            found[name].append(record)
    found["Ready"] = graph.in_ready_order(found["Ready"])
    return found


def summary(
    records: Iterable[Record],
    lookup: graph.Lookup,
    shown: int | None = None,
    with_deleted: bool = False,
    held: Collection[int] = (),
) -> str:
    """`12 tasks · 3 ready · 2 in progress · 5 blocked · 2 done` over the whole board;
    the four states partition the live tasks, so the parts add up to the total. When
    the view lists deleted tasks too (`list --all`), they count in the total, so the
    parts still add up and `(N shown)` compares like with like."""
    return summary_of(counts(records, lookup, held), shown, with_deleted)


def summary_of(
    tally: Mapping[str, int],
    shown: int | None = None,
    with_deleted: bool = False,
    troubles: Mapping[str, int] | None = None,
) -> str:
    """The summary line from the counts (`counts`, or a listing's own tally); what is in
    trouble (`2 stuck`) counted after the states, as the plain views print it."""
    total = tally["tasks"] + (tally["deleted"] if with_deleted else 0)
    text = (
        f"{total} tasks · {tally['ready']} ready · {tally['in_progress']} in progress · "
        f"{tally['blocked']} blocked · {tally['completed']} done"
    )
    if tally["deleted"]:
        text += f" · {tally['deleted']} deleted"
    text += "".join(f" · {count} {word}" for word, count in sorted((troubles or {}).items()) if count)
    if shown is not None and shown != total:
        text += f" ({shown} shown)"
    return text


def between_phrases(line: str, width: int | None) -> str:
    """A ` · `-joined line (a summary) broken only between its phrases to fit `width`
    columns (None: one line), as a terminal would otherwise break it mid-phrase."""
    if width is None or len(line) <= width:
        return line
    lines: list[str] = []
    for phrase in line.split(" · "):
        if lines and len(lines[-1]) + 3 + len(phrase) <= width:
            lines[-1] += " · " + phrase
        else:
            lines.append(phrase)
    return "\n".join(lines)


def unlocks(records: Iterable[Record]) -> dict[int, int]:
    """For every open task, how many open tasks wait on it, directly or through others:
    the bottlenecks have the big numbers. One pass over the graph with bit sets, so a
    10 000-task board costs milliseconds; an illegal cycle only makes a count short."""
    live = [record for record in records if record["status"] in OPEN]
    index = {record["id"]: position for position, record in enumerate(live)}
    successors: dict[int, list[int]] = {record["id"]: [] for record in live}
    for blocker, dependent in graph.edges(live):
        successors[blocker].append(dependent)
    reach: dict[int, int] = {}
    for root, first in successors.items():
        if root in reach:
            continue
        # iterative post-order DFS: children are finished before their parent
        stack = [(root, iter(first))]
        reach[root] = 0
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                stack.pop()
                bits = 0
                for nxt in successors[node]:
                    bits |= reach[nxt] | (1 << index[nxt])
                reach[node] = bits & ~(1 << index[node])
            elif child not in reach:
                reach[child] = 0
                stack.append((child, iter(successors[child])))
    return {task_id: bits.bit_count() for task_id, bits in reach.items()}


def adjacency(edges: Iterable[tuple[int, int]]) -> tuple[dict[int, list[int]], dict[int, list[int]]]:
    """(dependents of each task, blockers of each task), both sorted."""
    down: dict[int, list[int]] = {}
    up: dict[int, list[int]] = {}
    for blocker, dependent in sorted(set(edges)):
        down.setdefault(blocker, []).append(dependent)
        up.setdefault(dependent, []).append(blocker)
    return down, up


# -- what a person reads about a task beyond its state ------------------------------


def epoch(value: Any) -> float | None:
    """Seconds since the epoch from a number or an ISO time (`...Z`); None if neither."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        from datetime import datetime, timezone  # only views with times need it

        try:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        return (moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)).timestamp()
    return None


def span(seconds: float) -> str:
    """A length of time as every view words it: `45 s`, `4 min`, `2 h 5 min`, `3 days`."""
    from ..disk.state import format_duration

    return format_duration(seconds)


def times(count: int) -> str:
    return "1 time" if count == 1 else f"{count} times"


class Notes:
    """What the views say about one task beyond its state, from the record and its facts:
    priority, labels, the lease (and whether it went stale), failed attempts, the last
    gate run, and the trouble words (`stuck`, `lease expired`, ...) that turn it red.

    Facts are what the record does not hold, passed in by the command layer, any of:
        lease:        {"holder": NAME, "expires": epoch seconds or ISO time, ...}
        attempts:     failed attempts so far;  stuck: bool (else: attempts >= STUCK_AFTER)
        last_failure: the note of the last failed attempt
        elsewhere:    {"kind": "claimed" or "completed", "owner": NAME, "board": PATH}: another
                      worktree of the clone holds or finished it (taskboard.claims.facts)
        gate:         {"ok": bool, "exit": int | None, "at": ISO time, "tail": str, "forced": bool}
        events:       the task's journal events, oldest first (only `get` shows them)
    """

    def __init__(self, record: Record, fact: Mapping[str, Any] | None, now: float, cyclic: bool = False):
        fact = fact or {}
        self.priority = priority_of(record)
        self.labels = labels_of(record)
        self.lease: str | None = None  # "held by agent-c, lease expired 4 min ago"
        self.lease_short: str | None = None  # "lease expired 4 min ago", for a card
        self.stale = False
        lease = fact.get("lease")
        expires = epoch(lease.get("expires")) if isinstance(lease, Mapping) else None
        if isinstance(lease, Mapping) and expires is not None and record["status"] == "in_progress":
            holder = str(lease.get("holder") or record["owner"] or "?")
            self.stale = expires <= now
            self.lease_short = (
                f"lease expired {span(now - expires)} ago" if self.stale else f"lease expires in {span(expires - now)}"
            )
            self.lease = f"held by {holder}, {self.lease_short}"
        attempts = fact.get("attempts")
        self.attempts = attempts if isinstance(attempts, int) and not isinstance(attempts, bool) else 0
        self.last_failure = str(fact.get("last_failure") or "")
        self.elsewhere: str | None = None  # "claimed by bob in another worktree (/src/app-2/.tasks)"
        other = fact.get("elsewhere")
        if isinstance(other, Mapping) and record["status"] in ("pending", "in_progress"):
            who = f" by {other.get('owner')}" if other.get("owner") else ""
            verb = "completed" if other.get("kind") == "completed" else "claimed"
            if other.get("remote"):  # through the claim refs of a git remote (taskboard.remote)
                self.elsewhere = f"{verb}{who} on another machine (through {other['remote']})"
            else:
                self.elsewhere = f"{verb}{who} in another worktree ({other.get('board', '?')})"
        open_task = record["status"] in ("pending", "in_progress")
        self.stuck = open_task and is_stuck(fact)
        gate = fact.get("gate")
        self.gate: Mapping[str, Any] | None = gate if isinstance(gate, Mapping) else None
        self.gate_failed = bool(self.gate and not self.gate.get("ok") and open_task)
        self.progress = _progress(fact.get("progress"))
        self.parent = parent_of(record)
        self.after, self.due, self.overdue = None, None, False  # shown while the task is open
        if open_task:
            stamp = time.strftime(TIME_FORMAT, time.gmtime(now))
            after = when_of(record, "after")
            self.after = after if after is not None and after > stamp else None
            self.due = when_of(record, "due")
            self.overdue = self.due is not None and self.due < stamp
        self.troubles: list[str] = []
        if cyclic:
            self.troubles.append("in a cycle")
        if self.stale:
            self.troubles.append("lease expired")
        if self.stuck:
            self.troubles.append("stuck")
        if self.gate_failed:
            self.troubles.append("gate failed")

    @property
    def plan(self) -> list[str]:
        """What a view says of the task's place in the plan and in time (DESIGN §14):
        `3/5 done`, `part of #12`, `after 2026-12-24 09:00`, `due 2026-12-24`, `overdue`."""
        words = []
        if self.progress is not None:
            words.append(f"{self.progress[0]}/{self.progress[1]} done")
        if self.parent is not None:
            words.append(f"part of #{self.parent}")
        if self.after is not None:
            words.append(f"after {when_text(self.after)}")
        if self.due is not None:
            words.append(f"{'overdue since' if self.overdue else 'due'} {when_text(self.due)}")
        return words

    def gate_result(self, now: float) -> str | None:
        """`failed (exit 1) 4 min ago`, `passed 2 h ago`, or None when it never ran."""
        gate = self.gate
        if gate is None:
            return None
        code = gate.get("exit")
        if gate.get("forced"):
            text = "not run: completed anyway (forced)"
        elif gate.get("ok"):
            text = "passed"
        elif gate.get("timed_out"):
            text = "timed out"
        elif gate.get("headline"):
            text = str(gate["headline"])
        else:
            text = "failed" + (f" (exit {code})" if isinstance(code, int) else "")
        at = epoch(gate.get("at"))
        return text + (f" {span(now - at)} ago" if at is not None else "")


def when_text(stamp: str) -> str:
    """A time of the record as a person reads it: `2026-12-24` at midnight UTC, else
    `2026-12-24 09:30` (UTC)."""
    day, clock = stamp[:10], stamp[11:16]
    return day if stamp[11:19] == "00:00:00" else f"{day} {clock}"


def _progress(value: Any) -> tuple[int, int] | None:
    """A parent's (done, total) from its facts (commands put it there from the listing)."""
    if isinstance(value, (list, tuple)) and len(value) == 2 and all(type(n) is int for n in value):
        return (value[0], value[1])
    return None


def parent_groups(records: Iterable[Record]) -> list[tuple[Record | None, list[Record]]]:
    """`board --by-parent`: each parent (in id order) with its live children, then the
    tasks that are no one's child and no one's parent (None, and those). A parent that is
    itself a child shows under its own parent too."""
    live = [record for record in records if record["status"] != "deleted"]
    by_id = {record["id"]: record for record in live}
    children: dict[int, list[Record]] = {}
    for record in live:
        parent = parent_of(record)
        if parent is not None and parent in by_id:
            children.setdefault(parent, []).append(record)
    groups: list[tuple[Record | None, list[Record]]] = [(by_id[p], children[p]) for p in sorted(children)]
    loose = [r for r in live if r["id"] not in children and (parent_of(r) is None or parent_of(r) not in by_id)]
    if loose:
        groups.append((None, loose))
    return groups


def with_progress(facts: dict[int, dict], progress: Mapping[int, tuple[int, int]]) -> dict[int, dict]:
    """The runtime facts with each parent's progress added (what Notes reads)."""
    for parent, counted in progress.items():
        facts.setdefault(parent, {})["progress"] = counted
    return facts


def gate_fact(events: Iterable[Mapping[str, Any]]) -> dict | None:
    """The last run of a task's gate as a view shows it, from the task's journal events
    (oldest first): how it ended, when, and the tail of its output; None if it never ran."""
    for event in reversed(list(events)):
        gate = event.get("gate")
        if not isinstance(gate, Mapping):
            continue
        if gate.get("overridden"):
            return {"ok": False, "forced": True, "at": event.get("at")}
        code = gate.get("exit")
        timed_out = bool(gate.get("timedOut"))
        return {
            "ok": code == 0 and not timed_out,
            "exit": code,
            "timed_out": timed_out,
            "at": event.get("at"),
            "tail": str(gate.get("output") or ""),
        }
    return None


def cyclic_ids(edges: Iterable[tuple[int, int]]) -> set[int]:
    """The tasks on a cycle (only a damaged or badly merged board has one)."""
    successors: dict[int, list[int]] = {}
    for blocker, dependent in edges:
        successors.setdefault(blocker, []).append(dependent)
        successors.setdefault(dependent, [])
    found: set[int] = set()
    for component in graph.strongly_connected(successors):
        if len(component) > 1 or component[0] in successors[component[0]]:
            found.update(component)
    return found


# -- Graphviz DOT ---------------------------------------------------------------------

# fill, outline, font colour, extra style per state
_DOT_STYLES = {
    "blocked": ('"#fde2e1"', '"#c62828"', '"#3b0a0a"', ""),
    "ready": ('"#fff5cc"', '"#b8860b"', '"#3b2f00"', ""),
    "in_progress": ('"#d8ecff"', '"#1565c0"', '"#0b2545"', ",bold"),
    "completed": ('"#dcf5dc"', '"#2e7d32"', '"#4b5b4b"', ""),
    "deleted": ('"#eeeeee"', '"#9e9e9e"', '"#9e9e9e"', ",dashed"),
}
_LABEL_WIDTH = 32


def _dot_string(text: str) -> str:
    """A DOT double-quoted string: backslash and quote escaped (a backslash would
    otherwise start an escape such as \\N or \\l in a label)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _label_lines(record: Record) -> list[str]:
    lines = textwrap.wrap(
        f"#{record['id']} {record['subject']}", _LABEL_WIDTH, break_long_words=True, break_on_hyphens=False
    ) or [f"#{record['id']}"]
    if record["owner"]:
        lines.append(f"@{record['owner']}")
    return lines


def to_dot(records: list[Record], edges: Iterable[tuple[int, int]], lookup: graph.Lookup) -> str:
    """A Graphviz digraph: one node `t<id>` per task styled by its state, one edge
    `tA -> tB` per "A blocks B"."""
    lines = [
        "digraph tasks {",
        "  rankdir=LR;",
        '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=11];',
        '  edge [color="#607d8b"];',
    ]
    for record in records:
        key = state(record, lookup)
        fill, outline, font, extra = _DOT_STYLES[key]
        label = "\\n".join(_dot_string(line)[1:-1] for line in _label_lines(record))
        lines.append(
            f'  t{record["id"]} [label="{label}", fillcolor={fill}, color={outline}, '
            f'fontcolor={font}, style="rounded,filled{extra}", '
            f"tooltip={_dot_string(STATE_LABELS[key])}];"
        )
    lines += [f"  t{blocker} -> t{dependent};" for blocker, dependent in edges]
    return "\n".join([*lines, "}"]) + "\n"


# -- Mermaid flowchart ----------------------------------------------------------------

_MERMAID_CLASSES = {
    "blocked": "fill:#fde2e1,stroke:#c62828,color:#3b0a0a",
    "ready": "fill:#fff5cc,stroke:#b8860b,color:#3b2f00",
    "in_progress": "fill:#d8ecff,stroke:#1565c0,color:#0b2545,stroke-width:2px",
    "completed": "fill:#dcf5dc,stroke:#2e7d32,color:#4b5b4b",
    "deleted": "fill:#eeeeee,stroke:#9e9e9e,color:#9e9e9e,stroke-dasharray:4 3",
}
# Mermaid decodes `#name;` / `#123;` entity codes anywhere and reads HTML in labels,
# so these characters of user text go in as numeric entity codes (a `#` only where it
# would start an entity code, so `#4 Write parser` stays readable in the source).
_MERMAID_ESCAPES = {'"': "#34;", "<": "#60;", ">": "#62;", "&": "#38;", "`": "#96;"}
_ENTITY_LIKE = re.compile(r"#(?=\w+;)")


def _mermaid_text(text: str) -> str:
    text = _ENTITY_LIKE.sub("#35;", text)
    return "".join(_MERMAID_ESCAPES.get(char, char) for char in text)


def to_mermaid(records: list[Record], edges: Iterable[tuple[int, int]], lookup: graph.Lookup) -> str:
    """A Mermaid `flowchart` that GitHub renders: nodes `t<id>` classed by state,
    one edge `tA --> tB` per "A blocks B"."""
    lines = ["flowchart LR"]
    used = set()
    for record in records:
        key = state(record, lookup)
        used.add(key)
        label = "<br/>".join(_mermaid_text(line) for line in _label_lines(record))
        lines.append(f'  t{record["id"]}["{label}"]:::{_mermaid_class(key)}')
    lines += [f"  t{blocker} --> t{dependent}" for blocker, dependent in edges]
    lines += [f"  classDef {_mermaid_class(key)} {_MERMAID_CLASSES[key]}" for key in STATES if key in used]
    return "\n".join(lines) + "\n"


# GitHub's Mermaid refuses a diagram past these (its maxEdges and maxTextSize).
MERMAID_MAX_EDGES = 500
MERMAID_MAX_CHARS = 50_000


def mermaid_warning(text: str, edge_count: int) -> str | None:
    """Why GitHub will not draw this flowchart, or None when it will (front ends add
    how to draw less)."""
    over = []
    if edge_count > MERMAID_MAX_EDGES:
        over.append(f"{edge_count} edges (GitHub draws at most {MERMAID_MAX_EDGES})")
    if len(text) > MERMAID_MAX_CHARS:
        over.append(f"{len(text)} characters (GitHub draws at most {MERMAID_MAX_CHARS})")
    if not over:
        return None
    return f"the Mermaid diagram has {' and '.join(over)}, so GitHub will not render it"


def _mermaid_class(key: str) -> str:
    return "inProgress" if key == "in_progress" else key


def troubles(opened: list[Record], facts: dict[int, dict] | None = None, now: float | None = None) -> dict[str, int]:
    """What is in trouble (`in a cycle`, and with the runtime facts `stuck`, `lease
    expired`, `gate failed`), counted among the open tasks: the only ones a trouble
    can be news about, and all a listing without history holds in full."""
    import time
    from collections import Counter

    cyclic = cyclic_ids(graph.edges(opened))
    now = time.time() if now is None else now
    found: Counter = Counter()
    for record in opened:
        found.update(Notes(record, (facts or {}).get(record["id"]), now, record["id"] in cyclic).troubles)
    return dict(found)
