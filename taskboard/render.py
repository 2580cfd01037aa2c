"""Views for people. Imported only when a person is reading: never on --json paths.

User text always enters rich as `Text`, never as markup.
"""

from __future__ import annotations

import sys
from typing import Optional

from rich.console import Console
from rich.table import Table
from rich.text import Text

from . import graph
from .model import MARKERS, Record

STYLES = {"pending": "yellow", "in_progress": "cyan", "completed": "green", "deleted": "dim"}


def console(plain: bool, stderr: bool = False, record: bool = False) -> Console:
    if plain:
        return Console(file=sys.stderr if stderr else sys.stdout, no_color=True, highlight=False,
                       force_terminal=False, color_system=None, soft_wrap=True, record=record, emoji=False)
    return Console(stderr=stderr, highlight=False, record=record, emoji=False)


def task_line(record: Record) -> str:
    return f"{MARKERS[record['status']]} #{record['id']}: {record['subject']}"


def summary(records: list[Record], lookup) -> str:
    live = [r for r in records if r["status"] != "deleted"]
    ready = sum(graph.is_ready(r, lookup) for r in live)
    blocked = sum(graph.is_blocked(r, lookup) for r in live)
    in_progress = sum(r["status"] == "in_progress" for r in live)
    done = sum(r["status"] == "completed" for r in live)
    return f"{len(live)} tasks · {ready} ready · {in_progress} in progress · {blocked} blocked · {done} done"


def show_list(records: list[Record], listing, plain: bool) -> None:
    if plain:
        out = sys.stdout
        for record in records:
            out.write(task_line(record) + "\n")
        out.flush()
        sys.stderr.write(summary(listing.records, listing.lookup) + "\n")
        return
    table = Table(show_edge=False, header_style="bold")
    table.add_column("#", justify="right")
    table.add_column("status")
    table.add_column("subject", overflow="ellipsis", ratio=1)
    table.add_column("owner")
    table.add_column("blocked by")
    for record in records:
        blockers = graph.open_blockers(record, listing.lookup)
        table.add_row(str(record["id"]), Text(record["status"], style=STYLES[record["status"]]),
                      Text(record["subject"]), Text(record["owner"]), Text(", ".join(f"#{b}" for b in blockers)))
    out = console(plain)
    out.print(table)
    out.print(Text(summary(listing.records, listing.lookup), style="dim"))


def show_board(listing, plain: bool, svg: Optional[str] = None) -> None:
    columns = {"Blocked": [], "Ready": [], "In progress": [], "Done": []}
    for record in listing.records:
        status = record["status"]
        if status == "deleted":
            continue
        if status == "completed":
            columns["Done"].append(record)
        elif status == "in_progress":
            columns["In progress"].append(record)
        elif graph.is_ready(record, listing.lookup):
            columns["Ready"].append(record)
        else:
            columns["Blocked"].append(record)
    table = Table(show_lines=False, expand=True)
    for name in columns:
        table.add_column(f"{name} ({len(columns[name])})")
    height = max((len(c) for c in columns.values()), default=0)
    for row in range(height):
        cells = []
        for name, cards in columns.items():
            if row < len(cards):
                record = cards[row]
                card = Text(f"{MARKERS[record['status']]} #{record['id']} " if plain else f"#{record['id']} ")
                card.append(record["subject"])
                if record["owner"]:
                    card.append(f" @{record['owner']}", style="cyan")
                blockers = graph.open_blockers(record, listing.lookup)
                if blockers and name == "Blocked":
                    card.append(" ⟵ " + ", ".join(f"#{b}" for b in blockers), style="red")
                cells.append(card)
            else:
                cells.append(Text(""))
        table.add_row(*cells)
    out = console(plain, record=bool(svg))
    out.print(table)
    if svg:
        out.save_svg(svg, title="tasks board")


def show_task(record: Record, neighbours: dict, plain: bool) -> None:
    out = console(plain)
    lines = Text()
    lines.append(f"{MARKERS[record['status']]} #{record['id']}: ", style="bold")
    lines.append(record["subject"], style="bold")
    lines.append(f"\nstatus: {record['status']}   owner: {record['owner'] or '-'}")
    if record["description"]:
        lines.append("\n\n")
        lines.append(record["description"])
    for title, ids in (("blocked by", record["blockedBy"]), ("blocks", record["blocks"])):
        if ids:
            lines.append(f"\n\n{title}:")
            for other_id in ids:
                other = neighbours.get(other_id)
                if other is None:
                    lines.append(f"\n  #{other_id} (missing or unreadable)")
                else:
                    lines.append(f"\n  {MARKERS[other['status']]} #{other_id} ")
                    lines.append(other["subject"])
                    lines.append(f" ({other['status']})")
    if record.get("metadata"):
        import json
        lines.append("\n\nmetadata: " + json.dumps(record["metadata"], ensure_ascii=False))
    lines.append(f"\ncreated {record.get('createdAt', '?')}   updated {record.get('updatedAt', '?')}")
    out.print(lines)


def show_graph(records, edges, listing, fmt: str, focus: Optional[int], plain: bool, svg: Optional[str] = None) -> None:
    if fmt == "dot":
        sys.stdout.write(to_dot(records, edges))
        return
    if fmt == "mermaid":
        sys.stdout.write(to_mermaid(records, edges))
        return
    out = console(plain, record=bool(svg))
    by_id = {r["id"]: r for r in records}
    for blocker, dependent in edges:
        line = Text(f"#{blocker} ")
        line.append(by_id[blocker]["subject"])
        line.append(f" → #{dependent} ")
        line.append(by_id[dependent]["subject"])
        out.print(line)
    if svg:
        out.save_svg(svg, title="tasks graph")


def to_dot(records, edges) -> str:
    lines = ["digraph tasks {", "  rankdir=LR;"]
    for r in records:
        label = f"#{r['id']} {r['subject']}".replace("\\", "\\\\").replace('"', '\\"')
        lines.append(f'  t{r["id"]} [label="{label}"];')
    lines += [f"  t{a} -> t{b};" for a, b in edges]
    return "\n".join(lines + ["}"]) + "\n"


def to_mermaid(records, edges) -> str:
    lines = ["flowchart LR"]
    for r in records:
        label = f"#{r['id']} {r['subject']}".replace('"', "#quot;")
        lines.append(f'  t{r["id"]}["{label}"]')
    lines += [f"  t{a} --> t{b}" for a, b in edges]
    return "\n".join(lines) + "\n"


def show_check(problems: list[dict], ok: bool, plain: bool) -> None:
    for problem in problems:
        mark = "fixed" if problem["fixed"] else problem["rule"]
        sys.stderr.write(f"{mark}: {problem['message']}\n")
    sys.stderr.write(("board is sound\n" if ok else f"{sum(not p['fixed'] for p in problems)} problem(s) left\n"))


def watch_board(board) -> None:
    show_board(board.listing(), plain=_plain_default())


def _plain_default() -> bool:
    return not sys.stdout.isatty()
