"""`board --by-parent`: each parent with its children."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text

from ...core.fields import Record
from ...core.states import state
from .common import OWNER_STYLE, STATE_STYLES, SUBJECT_STYLES, TROUBLE, Context, Facts, mark, show


def groups_view(listing, groups: list, plain: bool, context: Context) -> RenderableType:
    """`board --by-parent`: each parent's line (its state, subject and progress), its
    children's lines under it, then the tasks no plan holds."""
    lines = []
    for parent, children in groups:
        if parent is None:
            lines.append(Text("no parent", style="bold"))
        else:
            lines.append(_group_line(parent, context, plain, head=True))
        lines += [_group_line(child, context, plain) for child in children]
        lines.append(Text(""))
    return Group(*lines[:-1]) if lines else Text("no tasks to show", style="dim")


def _group_line(record: Record, context: Context, plain: bool, head: bool = False) -> Text:
    key = state(record, context.lookup, context.held)
    notes = context.notes(record)
    line = Text("" if head else "  ")
    line.append_text(mark(record, key, plain))
    line.append(f" #{record['id']}", style=f"bold {STATE_STYLES[key]}")
    line.append(" " + record["subject"], style="bold" if head else SUBJECT_STYLES[key])
    words = [word for word in notes.plan if not word.startswith("part of")]
    if record["owner"]:
        line.append(f" @{record['owner']}", style=OWNER_STYLE)
    if words:
        line.append("  " + " · ".join(words), style=TROUBLE if notes.overdue else "dim")
    line.no_wrap, line.overflow = True, "ellipsis"
    return line


def show_groups(listing, groups: list, plain: bool, facts: Facts | None = None, now: float | None = None) -> None:
    context = Context(listing, facts, now)
    show(groups_view(listing, groups, plain, context), plain)
