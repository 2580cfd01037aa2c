"""`graph`: the dependency graph as a tree."""

from __future__ import annotations

import sys
import time

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.text import Text
from rich.tree import Tree

from ...core.fields import Record
from ...core.model import ids_text as _ids
from ...core.states import held_back, state
from .. import viewmodel as views
from ..text import write as _write
from ..viewmodel import STATE_LABELS, Notes, cyclic_ids
from .common import (
    NO_FACTS,
    STATE_STYLES,
    SUBJECT_STYLES,
    SYMBOLS,
    TROUBLE,
    TROUBLE_MARK,
    Facts,
    Phrases,
    fit_line,
    mark,
    show,
)
from .svg import write_svg

# -- graph ----------------------------------------------------------------------------


class _AsciiTree(Tree):
    """A rich Tree drawn with ASCII guides (`+--`, `|`), for plain mode."""

    TREE_GUIDES = [Tree.ASCII_GUIDES] * 3


class GraphNode:
    """One node line of the graph tree, laid out at the width it gets: status, then
    the essentials (`↑` when the task is drawn above already, the id, `(after #N)`
    when it continues a chain cut for depth, `!` when it is in trouble), then the
    subject, truncated to leave room for the owner. What comes first is never cut by
    what comes after."""

    OWNER_MAX = 20  # an owner takes at most this many cells
    SUBJECT_MIN = 24  # the owner is left out when the subject would get fewer cells (unless it fits whole)

    def __init__(
        self, view: GraphView, task_id: int, again: bool = False, after: int | None = None, word: str = "after"
    ):
        self.view = view
        self.task_id = task_id
        self.again = again
        self.after = after
        self.word = word

    def text(self, width: int) -> Text:
        view = self.view
        record = view.by_id.get(self.task_id)
        if record is None:
            line = Text(f"#{self.task_id} (not shown)", style="dim")
        else:
            key = state(record, view.lookup, view.held)
            line = mark(record, key, view.plain)
            if self.again:
                line.append(" " + view.glyphs["again"], style="dim")
            line.append(f" #{self.task_id}", style=f"bold {STATE_STYLES[key]}")
            if self.after is not None:
                line.append(f" ({self.word} #{self.after})", style="dim")
            if not self.again and view.notes(record).troubles:
                line.append(f" {TROUBLE_MARK}", style=TROUBLE)
            owner = "  @" + record["owner"] if record["owner"] and not self.again else ""
            style = "dim" if self.again else SUBJECT_STYLES[key]
            return fit_line(line, record["subject"], style, owner, self.OWNER_MAX, self.SUBJECT_MIN, width)
        line.truncate(width, overflow="ellipsis")
        line.no_wrap = True
        return line

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self.text(options.max_width)


class Continues:
    """The line that says a subtree goes on below as new roots, ids first: as many
    as fit, then how many more."""

    def __init__(self, ids: list[int], plain: bool):
        self.ids = ids
        self.plain = plain

    def text(self, width: int) -> Text:
        lead = "..." if self.plain else "…"
        ids = self.ids
        for shown in range(len(ids), 0, -1):
            rest = f" +{len(ids) - shown}" if shown < len(ids) else ""
            verb = "continues" if len(ids) == 1 else "continue"
            for tail in (f" {verb} below", " below", ""):
                words = f"{lead} {_ids(ids[:shown])}{rest}{tail}"
                if cell_len(words) <= width:
                    return Text(words, style="dim", no_wrap=True)
        line = Text(f"{lead} {_ids(ids[:1])}", style="dim", no_wrap=True)
        line.truncate(width, overflow="ellipsis")
        return line

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self.text(options.max_width)


class GraphView:
    """The dependency graph as a tree of one-line nodes, with a legend of its glyphs
    under it. The whole board: every task without a blocker is a root and its dependents
    hang below it; a task reached again is shown once more as a reference (`↑ #7`). With
    a focus: what the task waits on (upstream) and what waits on it (downstream). Depth
    is capped by the width; a subtree that would go deeper continues as a new root
    below, marked with the task it comes from (`#15 (after #14)`), so no task is lost
    or looks unblocked."""

    def __init__(
        self,
        records: list[Record],
        edges: list[tuple[int, int]],
        lookup,
        focus: int | None = None,
        plain: bool = False,
        facts: Facts | None = None,
        now: float | None = None,
    ):
        self.records = records
        self.by_id = {r["id"]: r for r in records}
        self.edges = edges
        self.lookup = lookup
        self.focus = focus
        self.plain = plain
        self.facts = facts or NO_FACTS
        self.held = held_back(self.facts)  # what `ready` leaves out is drawn blocked
        self.now = time.time() if now is None else now
        self.cyclic = cyclic_ids(edges)
        self.glyphs = {"again": "^", "dot": ", "} if plain else {"again": "↑", "dot": " · "}
        self.repeated = False
        self.cut = False
        self.troubled = False

    def notes(self, record: Record) -> Notes:
        return Notes(record, self.facts.get(record["id"]), self.now, record["id"] in self.cyclic)

    def tree(self, label: RenderableType) -> Tree:
        if self.plain:
            return _AsciiTree(label)
        return Tree(label, guide_style="dim")

    def grow(
        self,
        tree: Tree,
        start: int,
        follow: dict[int, list[int]],
        seen: set[int],
        max_depth: int,
        continued: list[tuple[int, int]],
        after: int | None = None,
        word: str = "after",
    ) -> None:
        """Hang start's subtree (along `follow`) under tree, iteratively. Children cut
        for depth go to `continued` as (child, the task they hang from)."""
        stack = [(tree, start, 1, after)]
        while stack:
            parent, node, depth, came_after = stack.pop()
            if node in seen:
                self.repeated = True
                parent.add(GraphNode(self, node, again=True))
                continue
            seen.add(node)
            branch = parent.add(GraphNode(self, node, after=came_after, word=word))
            children = follow.get(node, [])
            if not children:
                continue
            if depth >= max_depth:
                self.cut = True
                branch.add(Continues(children, self.plain))
                continued.extend((child, node) for child in children)
                continue
            for child in reversed(children):
                stack.append((branch, child, depth + 1, None))

    def legend(self) -> Phrases:
        """What the glyphs mean: the states drawn, then the marks that were used."""
        present = {state(record, self.lookup, self.held) for record in self.records}
        if self.plain:
            phrases = [Text("[ ] pending"), Text("[>] in progress"), Text("[x] done")]
            if any(record["status"] == "deleted" for record in self.records):
                phrases.append(Text("[-] deleted"))
        else:
            order = ("ready", "in_progress", "blocked", "completed", "deleted")
            phrases = [
                Text.assemble((SYMBOLS[key], STATE_STYLES[key]), (f" {STATE_LABELS[key]}", "dim"))
                for key in order
                if key != "deleted" or key in present
            ]
        if self.repeated:
            phrases.append(Text(f"{self.glyphs['again']} #N drawn above", style="dim"))
        if self.cut:
            phrases.append(Text(("..." if self.plain else "…") + " continues below", style="dim"))
        if self.troubled:
            phrases.append(Text.assemble((TROUBLE_MARK, TROUBLE), (" trouble (tasks get ID says what)", "dim")))
        return Phrases(phrases, self.glyphs["dot"])

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        max_depth = max(1, (options.max_width - 24) // 4)
        self.repeated = self.cut = False
        self.troubled = any(self.notes(record).troubles for record in self.records)
        down, up = views.adjacency(self.edges)
        if self.focus is not None and self.focus not in self.by_id:
            yield Text(f"#{self.focus} is deleted: it has no edges left (`tasks graph --all` lists it)", style="dim")
            return
        if self.focus is not None:
            tree = self.tree(GraphNode(self, self.focus))
            for title, follow, word in (("waits on", up, "before"), ("unlocks", down, "after")):
                branch = tree.add(Text(title, style="bold"))
                cut: list[tuple[int, int]] = []
                drawn = {self.focus}
                for start in follow.get(self.focus, []):
                    self.grow(branch, start, follow, drawn, max_depth - 1, cut, word=word)
                if not follow.get(self.focus):
                    branch.add(Text("nothing", style="dim"))
                self._continue(branch, cut, follow, drawn, max_depth - 1, word)
            yield tree
            yield self.legend()
            return
        heading = Text(f"{len(self.records)} tasks{self.glyphs['dot']}{len(self.edges)} edges", style="bold")
        tree = self.tree(heading)
        seen: set[int] = set()
        continued: list[tuple[int, int]] = []
        roots = [r["id"] for r in self.records if not up.get(r["id"])]
        for root in roots:
            self.grow(tree, root, down, seen, max_depth, continued)
        self._continue(tree, continued, down, seen, max_depth)
        # a cycle (only on a damaged board) has no root: show what is left, with a blocker
        for record in self.records:
            if record["id"] not in seen:
                self.grow(tree, record["id"], down, seen, max_depth, continued, after=up[record["id"]][0])
                self._continue(tree, continued, down, seen, max_depth)
        yield tree
        yield self.legend()

    def _continue(
        self, tree: Tree, continued: list[tuple[int, int]], follow, seen: set[int], max_depth: int, word: str = "after"
    ) -> None:
        while continued:
            node, parent = continued.pop(0)
            if node in seen:
                continue
            self.grow(tree, node, follow, seen, max_depth, continued, after=parent, word=word)


def graph_view(
    records: list[Record],
    edges,
    lookup,
    focus: int | None = None,
    plain: bool = False,
    facts: Facts | None = None,
    now: float | None = None,
) -> RenderableType:
    return GraphView(records, list(edges), lookup, focus, plain, facts, now)


def show_graph(
    records,
    edges,
    listing,
    fmt: str,
    focus: int | None,
    plain: bool,
    svg: str | None = None,
    facts: Facts | None = None,
) -> str | None:
    """Print the graph in `fmt`; the DOT or Mermaid text it printed, if any."""
    text = None
    if fmt == "dot":
        text = views.to_dot(records, edges, listing.lookup)
    elif fmt == "mermaid":
        text = views.to_mermaid(records, edges, listing.lookup)
    if text is not None:
        _write(sys.stdout, text)
    else:
        show(graph_view(records, edges, listing.lookup, focus, plain, facts), plain)
    if svg:
        write_svg(graph_view(records, edges, listing.lookup, focus, False, facts), svg, title="tasks graph")
    return text
