"""Pure functions over task records: readiness, paths and cycles, what an edge or a
completion changes. Nothing here reads files; callers pass a `lookup(id)` that
returns a record or None, so the same rules serve one task or ten thousand.
"""

from __future__ import annotations

from .fields import OPEN, Record, parent_of, priority_of, waits, when_of

TYPE_CHECKING = False  # typing costs ~5 ms of start-up; annotations are strings anyway
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator

    Lookup = Callable[[int], Record | None]


def open_blockers(record: Record, lookup: Lookup) -> list[int]:
    """Blockers that still hold the task back. A stale id of a finished (or missing)
    task does not block; an unreadable one is looked up as None by callers that
    cannot tell, so they pass a lookup that says what they know."""
    found = []
    for blocker_id in record["blockedBy"]:
        blocker = lookup(blocker_id)
        if blocker is not None and blocker["status"] in OPEN:
            found.append(blocker_id)
    return sorted(set(found))


def is_ready(record: Record, lookup: Lookup) -> bool:
    """Pending, no open blocker, and not kept out until a later time (`after`, decided now)."""
    return record["status"] == "pending" and not open_blockers(record, lookup) and not waits(record)


def ready_ids(
    facts: Iterable[tuple[int, str, tuple, int, str, str | None]], is_open: Callable[[int], bool], at: str
) -> list[int]:
    """The ready tasks among open ones, in ready order: what is_ready and ready_order
    decide, over each task's (id, status, blockers, priority, due time or `~`, after
    time or None) at the time `at`; `is_open`: whether a blocker still holds (an open
    or unreadable task). One pass, no call per task: `ready` runs it over all open work."""
    found = [
        (priority, due, task_id)
        for task_id, status, blockers, priority, due, after in facts
        if status == "pending" and (after is None or after <= at) and not (blockers and any(map(is_open, blockers)))
    ]
    found.sort()
    return [task_id for _, _, task_id in found]


def is_blocked(record: Record, lookup: Lookup) -> bool:
    return record["status"] in OPEN and bool(open_blockers(record, lookup))


def ready_order(record: Record) -> tuple[int, str, int]:
    """Where a task comes in ready order (`ready`, `claim` without ID, the Ready column):
    priority first (0 most urgent … 4; unset counts as 2), then the earlier due time
    (none comes after every time), then the lowest id."""
    return (priority_of(record), when_of(record, "due") or "~", record["id"])


def in_ready_order(records: Iterable[Record]) -> list[Record]:
    return sorted(records, key=ready_order)


def progress(records: Iterable[Record]) -> dict[int, tuple[int, int]]:
    """Each parent's children (the tasks whose metadata names it, deleted ones aside):
    (how many are completed, how many in all)."""
    found: dict[int, list[int]] = {}
    for record in records:
        parent = parent_of(record)
        if parent is not None and record["status"] != "deleted":
            counted = found.setdefault(parent, [0, 0])
            counted[0] += record["status"] == "completed"
            counted[1] += 1
    return {parent: (done, total) for parent, (done, total) in found.items()}


def find_path(start: int, goal: int, successors: Callable[[int], Iterable[int]]) -> list[int] | None:
    """The shortest path start → … → goal following `successors`, or None."""
    if start == goal:
        return [start]
    parent: dict[int, int] = {start: start}
    queue = [start]  # a list walked while it grows: a queue without collections' import
    for node in queue:
        for nxt in successors(node):
            if nxt in parent:
                continue
            parent[nxt] = node
            if nxt == goal:
                path = [goal]
                while path[-1] != start:
                    path.append(parent[path[-1]])
                return path[::-1]
            queue.append(nxt)
    return None


def cycle_through_new_edge(
    blocker: int, dependent: int, successors: Callable[[int], Iterable[int]]
) -> list[int] | None:
    """The cycle that the edge blocker → dependent would close, as a closed walk
    [blocker, dependent, …, blocker], or None when the edge is safe."""
    if blocker == dependent:
        return [blocker, blocker]
    path = find_path(dependent, blocker, successors)
    return None if path is None else [blocker, *path]


def format_cycle(cycle: list[int]) -> str:
    return " → ".join(f"#{node}" for node in cycle)


def find_cycles(successors_of: dict[int, list[int]]) -> list[list[int]]:
    """One closed walk for every cycle-bearing strongly connected component (and every
    self-edge), each starting at its lowest id."""
    cycles = []
    for component in strongly_connected(successors_of):
        members = set(component)
        first = min(component)
        if first in successors_of.get(first, ()):
            cycles.append([first, first])
            continue
        if len(component) == 1:
            continue

        def inside(node: int, members: set[int] = members) -> list[int]:
            return [n for n in successors_of.get(node, ()) if n in members]

        back = next(n for n in sorted(members) if first in successors_of.get(n, ()))
        path = find_path(first, back, inside)
        cycles.append([*(path or [first, back]), first])
    return sorted(cycles)


def strongly_connected(successors_of: dict[int, list[int]]) -> list[list[int]]:
    """The strongly connected components of the graph (nodes not in `successors_of`
    are left out); iterative Tarjan, so deep graphs are fine."""
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    on_stack: set[int] = set()
    stack: list[int] = []
    components: list[list[int]] = []

    def visit(node: int) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        work.append((node, iter(successors_of.get(node, ()))))

    for root in sorted(successors_of):
        if root in index:
            continue
        work: list[tuple[int, Iterator[int]]] = []
        visit(root)
        while work:
            node, children = work[-1]
            child = next((c for c in children if c in successors_of and (c not in index or c in on_stack)), None)
            if child is not None:
                if child in index:  # on the stack: a back edge
                    low[node] = min(low[node], index[child])
                else:
                    visit(child)
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = [stack.pop()]
                while component[-1] != node:
                    component.append(stack.pop())
                on_stack.difference_update(component)
                components.append(component)
    return components


def downstream(task_id: int, successors: Callable[[int], Iterable[int]]) -> set[int]:
    """Every task reachable from task_id along `blocks` (not including itself)."""
    seen: set[int] = set()
    queue = [task_id]  # walked while it grows
    for node in queue:
        for nxt in successors(node):
            if nxt not in seen and nxt != task_id:
                seen.add(nxt)
                queue.append(nxt)
    return seen


def edges(records: Iterable[Record]) -> list[tuple[int, int]]:
    """Every edge blocker → dependent between live tasks, each once: the union of both
    directions, so history edges of completed tasks and one-sided edges both show."""
    live = {record["id"]: record for record in records if record["status"] != "deleted"}
    found: set[tuple[int, int]] = set()
    for task_id, record in live.items():
        found.update((task_id, dep) for dep in record["blocks"] if dep in live)
        found.update((blocker, task_id) for blocker in record["blockedBy"] if blocker in live)
    return sorted(found)


def neighbourhood(records: list[Record], task_id: int) -> list[Record]:
    """The task, everything upstream of it and everything downstream, in id order."""
    by_id = {record["id"]: record for record in records}
    down: dict[int, list[int]] = {}
    up: dict[int, list[int]] = {}
    for blocker, dependent in edges(records):
        down.setdefault(blocker, []).append(dependent)
        up.setdefault(dependent, []).append(blocker)
    keep = (
        {task_id}
        | downstream(task_id, lambda node: down.get(node, ()))
        | downstream(task_id, lambda node: up.get(node, ()))
    )
    return [by_id[i] for i in sorted(keep) if i in by_id]
