"""`stats`: the board's figures, for people."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text

from .common import TROUBLE, console

# -- stats ------------------------------------------------------------------------------


def show_stats(found: dict) -> None:
    """`tasks stats` for a person: the flow figures as a few small tables."""
    from rich.table import Table as RichTable

    from ...core.stats import duration_words

    window = f"since {found['since']}" if found["since"] else "over the whole journal"
    parts: list[RenderableType] = [Text(f"Flow {window}, until {found['until']}", style="bold")]
    times = RichTable(title="Lead and cycle time", title_justify="left", box=None, padding=(0, 2))
    for column in ("", "tasks", "median", "90%"):
        times.add_column(column, justify="right" if column else "left")
    for key, label in (("lead_time", "lead (created → done)"), ("cycle_time", "cycle (claimed → done)")):
        figures = found[key]
        times.add_row(label, str(figures["count"]), duration_words(figures["median"]), duration_words(figures["p90"]))
    parts.append(times)
    days = RichTable(title=f"Finished: {found['finished']['total']}", title_justify="left", box=None, padding=(0, 2))
    days.add_column("day")
    days.add_column("done", justify="right")
    for day in found["finished"]["per_day"]:
        days.add_row(day["day"], str(day["count"]))
    parts.append(days)
    wip = RichTable(title=f"In progress: {found['wip']['total']}", title_justify="left", box=None, padding=(0, 2))
    wip.add_column("age")
    wip.add_column("tasks", justify="right")
    for label, count in found["wip"]["by_age"].items():
        wip.add_row(label, str(count), style="" if count else "dim")
    parts.append(wip)
    failed = RichTable(title="Failed attempts", title_justify="left", box=None, padding=(0, 2))
    failed.add_column("task")
    failed.add_column("attempts", justify="right")
    for item in found["failed"]:
        failed.add_row(f"#{item['task']}", str(item["attempts"]), style=TROUBLE if item["attempts"] >= 3 else "")
    if not found["failed"]:
        failed.add_row("none", "", style="dim")
    parts.append(failed)
    console(False).print(Group(*parts))
