"""Graph rules as pure functions, and the board against an independent model
under random operation sequences (hypothesis state machine)."""

from __future__ import annotations

import json
import os
from itertools import pairwise

import pytest
from conftest import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from taskboard.core import graph
from taskboard.core.errors import NotFound, Refused
from taskboard.core.model import Patch
from taskboard.disk.store import Store
from taskboard.ops.board import Board
from taskboard.ops.query import Query


def rec(task_id, status="pending", blocked_by=(), blocks=()):
    return {
        "id": task_id,
        "subject": f"t{task_id}",
        "description": "",
        "status": status,
        "blockedBy": list(blocked_by),
        "blocks": list(blocks),
        "owner": "",
    }


# -- pure functions ---------------------------------------------------------------


def test_ready_ignores_completed_and_missing_blockers():
    board = {1: rec(1, "completed"), 2: rec(2, "in_progress"), 3: rec(3, blocked_by=[1, 99])}
    assert graph.is_ready(board[3], board.get)
    board[3]["blockedBy"].append(2)
    assert not graph.is_ready(board[3], board.get)
    assert graph.open_blockers(board[3], board.get) == [2]
    assert graph.is_blocked(board[3], board.get)


def test_in_progress_is_never_ready():
    assert not graph.is_ready(rec(1, "in_progress"), {}.get)


def test_cycle_through_new_edge_names_the_whole_cycle():
    successors = {3: [5], 5: [8], 8: []}.get
    assert graph.cycle_through_new_edge(8, 3, lambda n: successors(n) or []) == [8, 3, 5, 8]
    assert graph.format_cycle([3, 5, 3]) == "#3 → #5 → #3"
    assert graph.cycle_through_new_edge(4, 4, lambda n: []) == [4, 4]
    assert graph.cycle_through_new_edge(3, 8, lambda n: successors(n) or []) is None


def test_find_cycles_reports_each_cyclic_component_once():
    successors = {1: [2], 2: [3], 3: [1], 4: [4], 5: [6], 6: []}
    assert graph.find_cycles(successors) == [[1, 2, 3, 1], [4, 4]]


def test_find_cycles_handles_a_deep_chain_without_recursion():
    chain = {i: [i + 1] for i in range(1, 5000)}
    chain[5000] = [1]
    (cycle,) = graph.find_cycles(chain)
    assert cycle[0] == 1 and cycle[-1] == 1 and len(cycle) == 5001


def test_edges_union_both_directions_and_skip_deleted():
    records = [rec(1, "completed", blocks=[2]), rec(2, blocked_by=[3]), rec(3, blocks=[2]), rec(4, "deleted")]
    assert graph.edges(records) == [(1, 2), (3, 2)]


@given(st.lists(st.tuples(st.integers(1, 12), st.integers(1, 12)), max_size=40))
def test_find_path_agrees_with_reachability(pairs):
    successors: dict[int, list[int]] = {}
    for a, b in pairs:
        successors.setdefault(a, []).append(b)
    reach = {n: graph.downstream(n, lambda x: successors.get(x, [])) for n in range(1, 13)}
    for a in range(1, 13):
        for b in range(1, 13):
            path = graph.find_path(a, b, lambda x: successors.get(x, []))
            if a == b:
                assert path == [a]
            elif b in reach[a]:
                assert path[0] == a and path[-1] == b
                assert all(y in successors.get(x, []) for x, y in pairwise(path))
            else:
                assert path is None


@given(st.lists(st.tuples(st.integers(1, 10), st.integers(1, 10)), max_size=30))
def test_find_cycles_is_empty_exactly_for_acyclic_graphs(pairs):
    successors: dict[int, list[int]] = {n: [] for n in range(1, 11)}
    for a, b in pairs:
        successors[a].append(b)
    cyclic = any(graph.find_path(b, a, lambda x: successors[x]) for a in successors for b in successors[a])
    cycles = graph.find_cycles(successors)
    assert bool(cycles) == cyclic
    for cycle in cycles:
        assert cycle[0] == cycle[-1]
        assert all(y in successors[x] for x, y in pairwise(cycle))


# -- the board against a model ------------------------------------------------------------


class BoardModel(RuleBasedStateMachine):
    """Random creates, edge changes, completions, reopens, releases, deletes, archives and
    restores, each checked against a model of the contract; the files are read back raw.
    Every rule but `archive` works on archived tasks as on live ones (DESIGN §11): the
    model's statuses and edges do not depend on where a task's file is."""

    def __init__(self):
        super().__init__()
        import tempfile

        self.folder = tempfile.mkdtemp(prefix="taskboard-model-")
        self.board = Board(Store(os.path.join(self.folder, ".tasks")))
        self.status: dict[int, str] = {}
        self.edges: set[tuple[int, int]] = set()
        self.archived: set[int] = set()  # what the model knows is archived
        self.owner: dict[int, str] = {}  # DESIGN §3: release and restoring a deleted task clear it
        self.named: set[int] = set()  # the tasks the last rule named: only they and their neighbours leave the archive

    def teardown(self):
        import shutil

        shutil.rmtree(self.folder, ignore_errors=True)

    # model helpers
    def live(self):
        return sorted(t for t, s in self.status.items() if s != "deleted")

    def reaches(self, start, goal):
        return goal in graph.downstream(start, lambda n: [b for a, b in self.edges if a == n]) or start == goal

    def open_blockers(self, task):
        return sorted(a for a, b in self.edges if b == task and self.status[a] in ("pending", "in_progress"))

    def ready(self, task):
        return self.status[task] == "pending" and not self.open_blockers(task)

    def is_open(self, task):
        return self.status[task] in ("pending", "in_progress")

    def named_by_open(self, task):
        """An open task names it: one that blocks it (a completed task is in no blockedBy)."""
        return any(b == task and self.is_open(a) for a, b in self.edges)

    def on_disk_archived(self):
        folder = os.path.join(self.board.store.path, "archive")
        names = os.listdir(folder) if os.path.isdir(folder) else []
        return {int(name[5:-5]) for name in names if name.startswith("task_") and name.endswith(".json")}

    def neighbours(self, tasks):
        return {other for a, b in self.edges for other in (a, b) if a in tasks or b in tasks}

    @rule()
    def create_alone(self):
        """A task with no edges (a create naming missing tasks is refused: boards grow here)."""
        self.create([], [])

    @precondition(lambda self: bool(self.status))
    @rule(data=st.data())
    def work_through(self, data):
        """Several tasks completed in a row (each drawn: done or left), as a plan advances."""
        for task in sorted(self.status):
            if self.ready(task) and data.draw(st.booleans()):
                self.set_status(task, "completed")

    def history(self):
        """Finished tasks not archived yet, the highest id aside: what `archive` may move."""
        highest = max(self.status, default=0)
        return [t for t, s in self.status.items() if s in ("completed", "deleted") and t != highest]

    @precondition(lambda self: bool(set(self.history()) - self.archived))
    @rule()
    def archive(self):
        highest = max(self.status, default=0)
        expected = sorted(
            t
            for t, s in self.status.items()
            if s in ("completed", "deleted") and t != highest and t not in self.archived and not self.named_by_open(t)
        )
        outcome = self.board.archive(days=0)
        assert [r["id"] for r in outcome.written] == expected
        self.archived |= set(expected)
        self.named = set()

    @rule(task=st.integers(1, 12))
    def restore(self, task):
        self.named = {task}
        if task not in self.status:
            with pytest.raises(NotFound):
                self.board.restore(task)
            return
        if task not in self.archived and self.status[task] != "deleted":
            with pytest.raises(Refused):
                self.board.restore(task)
            return
        outcome = self.board.restore(task)
        if self.status[task] == "deleted":
            self.status[task] = "pending"
            self.owner[task] = ""  # pending work nobody reserved, as a release leaves it
        assert outcome.record["status"] == self.status[task]
        assert outcome.record["owner"] == self.owner[task]
        self.archived.discard(task)
        assert task not in self.on_disk_archived()

    @precondition(lambda self: "deleted" in self.status.values() or bool(self.archived))
    @rule(data=st.data())
    def restore_one_that_can_be(self, data):
        """`restore` of a task that is deleted or archived (one that exists, so the rule
        above is not left to chance)."""
        deleted = [t for t, s in self.status.items() if s == "deleted"]
        self.restore(data.draw(st.sampled_from(sorted(set(deleted) | self.archived))))

    ids = st.integers(1, 12)

    @rule(blocked_by=st.lists(ids, max_size=2), blocks=st.lists(ids, max_size=2))
    def create(self, blocked_by, blocks):
        new = max(self.status, default=0) + 1
        missing = [i for i in blocked_by + blocks if i not in self.status]
        deleted = [i for i in blocked_by + blocks if self.status.get(i) == "deleted"]
        new_edges = {(a, new) for a in blocked_by} | {(new, b) for b in blocks}
        cyclic = any(self.reaches(b, a) for a in blocked_by for b in blocks)
        self.named = set(blocked_by + blocks)
        try:
            outcome = self.board.create(f"task {new}", blocked_by=blocked_by, blocks=blocks)
        except NotFound:
            assert missing
            return
        except Refused:
            assert not missing and (deleted or cyclic)
            return
        assert not missing and not deleted and not cyclic
        assert outcome.record["id"] == new
        self.status[new] = "pending"
        self.owner[new] = ""
        self.edges |= new_edges

    @precondition(lambda self: len(self.status) >= 2)
    @rule(a=ids, b=ids)
    def add_edge(self, a, b):
        self.named = {a, b}
        if a not in self.status or b not in self.status:
            with pytest.raises(NotFound):
                self.board.update(b, Patch(add_blocked_by=[a]))
            return
        refuse = "deleted" in (self.status[a], self.status[b]) or self.reaches(b, a)
        try:
            self.board.update(b, Patch(add_blocked_by=[a]))
        except Refused:
            assert refuse
            return
        assert not refuse
        self.edges.add((a, b))

    @precondition(lambda self: len(self.status) >= 2)
    @rule(data=st.data())
    def add_edge_between_tasks(self, data):
        """An edge between two tasks that exist (an open one onto a finished one, often:
        what keeps a finished task out of the archive)."""
        a, b = data.draw(st.lists(st.sampled_from(sorted(self.status)), min_size=2, max_size=2, unique=True))
        self.add_edge(a, b)

    @precondition(lambda self: bool(self.edges))
    @rule(data=st.data())
    def remove_edge(self, data):
        a, b = data.draw(st.sampled_from(sorted(self.edges)))
        self.named = {a, b}
        outcome = self.board.update(a, Patch(remove_blocks=[b]))
        was_ready = self.ready(b)
        self.edges.discard((a, b))
        assert (b in outcome.unblocked) == (self.ready(b) and not was_ready)

    @rule(task=ids, new_status=st.sampled_from(["in_progress", "completed", "pending"]))
    def set_status(self, task, new_status):
        target = new_status
        self.named = {task}
        if task not in self.status:
            return
        old = self.status[task]
        allowed = old != "deleted" and (target in (old, "pending") or not self.open_blockers(task))
        before = {t: self.ready(t) for t in self.status if self.status[t] != "deleted"}
        try:
            outcome = self.board.update(task, Patch(status=target))
        except Refused:
            assert not allowed
            return
        assert allowed
        self.status[task] = target
        if old == "in_progress" and target == "pending":
            self.owner[task] = ""  # a release
        if target == "completed" and old != "completed":
            freed = sorted(t for t, was in before.items() if not was and self.ready(t) and t != task)
            assert outcome.unblocked == freed

    @precondition(lambda self: bool(self.status))
    @rule(data=st.data(), new_status=st.sampled_from(["completed", "completed", "pending", "deleted"]))
    def finish_a_task(self, data, new_status):
        """A task that exists completed, reopened or deleted: history for `archive`."""
        task = data.draw(st.sampled_from(sorted(self.status)))
        if new_status == "deleted":
            self.delete(task)
        else:
            self.set_status(task, new_status)

    @precondition(lambda self: any(s != "deleted" for s in self.status.values()))
    @rule(data=st.data(), name=st.sampled_from(["ada", "bob"]))
    def give_to(self, data, name):
        """An owner set by a person (reserving a pending task, or naming who did the work)."""
        task = data.draw(st.sampled_from([t for t, s in sorted(self.status.items()) if s != "deleted"]))
        self.named = {task}
        outcome = self.board.update(task, Patch(owner=name))
        self.owner[task] = name
        assert outcome.record["owner"] == name

    @precondition(lambda self: any(s != "deleted" for s in self.status.values()))
    @rule(data=st.data(), name=st.sampled_from(["ada", "bob"]))
    def drop_held_work(self, data, name):
        """A task someone holds or reserved, deleted (its owner stays on the deleted record)."""
        self.give_to(data, name)
        (task,) = self.named
        self.delete(task)

    @rule(task=ids)
    def delete(self, task):
        self.named = {task}
        if task not in self.status:
            return
        try:
            self.board.delete(task)
        except Refused:
            assert self.status[task] == "deleted"
            return
        self.status[task] = "deleted"
        self.edges = {(a, b) for a, b in self.edges if task not in (a, b)}

    @invariant()
    def files_match_the_model(self):
        root = self.board.store.root
        for task, status in self.status.items():
            live, archived = root / f"task_{task}.json", root / "archive" / f"task_{task}.json"
            assert live.exists() != archived.exists(), f"#{task}: one file, live or archived"
            with open(live if live.exists() else archived, encoding="utf-8") as handle:
                record = json.load(handle)
            assert record["status"] == status
            assert record["owner"] == self.owner[task]
            assert record["blocks"] == sorted(b for a, b in self.edges if a == task)
            assert record["blockedBy"] == sorted(
                a for a, b in self.edges if b == task and self.status[a] != "completed"
            )
        assert not any(self.reaches(b, a) for a, b in self.edges if a != b) or False
        assert not os.listdir(root / ".scratch") if (root / ".scratch").exists() else True

    @invariant()
    def the_archive_holds_closed_history_only(self):
        """Only `archive` puts a task there; a task leaves it only when a rule named it or
        its neighbour (a change to it brings it back); what is there is closed and no open
        task names it; the highest id stays live; `list --all` sees every task."""
        on_disk = self.on_disk_archived()
        assert on_disk <= self.archived
        left = self.archived - on_disk
        assert left <= self.named | self.neighbours(self.named), (left, self.named)
        self.archived = on_disk
        for task in on_disk:
            assert self.status[task] in ("completed", "deleted") and not self.named_by_open(task)
        assert max(self.status, default=0) not in on_disk
        if self.status:
            listing = self.board.listing(archive=True)
            assert dict(listing.shot.statuses()) == self.status

    @invariant()
    def ready_set_is_the_definition(self):
        if not self.status:
            return
        listing = self.board.listing()
        ready = [r["id"] for r in self.board.select(listing, Query(ready=True))]
        assert ready == [t for t in sorted(self.status) if self.ready(t)]

    @invariant()
    def check_finds_nothing(self):
        if self.status:
            assert self.board.check() == []


TestBoardModel = BoardModel.TestCase
TestBoardModel.settings = settings(
    max_examples=examples(40), stateful_step_count=25, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
