"""Archived on one branch, edited on the other (DESIGN §11), through real git with the
clone wired by `tasks init` (its merge driver and hooks run as real processes): an
archived file is the same task as the live one (by uid), the edit is kept, and the task
stays archived only if it is still closed. Each merged both ways, judged by
tests/invariants.py (live and archived files together)."""

from __future__ import annotations

import json

import pytest
from gitboard import Clone, branches, by_uid, judge
from invariants import archived_ids

pytestmark = pytest.mark.usefixtures("git_identity")  # conftest: git with the tests' own configuration


def base_board(tasks) -> None:
    """#1 one → #2 two, both completed; #3 three open (the highest id: it stays live)."""
    tasks("create", "one")
    tasks("create", "two", "--blocked-by", "1")
    tasks("create", "three")
    tasks("done", "1")
    tasks("done", "2")


def archive(tasks) -> None:
    assert tasks.json("archive", "--older-than", "0")["archived"] == [1, 2]


def merged(tmp_path, repo: Clone, into: str, other: str) -> tuple[Clone, dict[int, dict]]:
    """`git merge` of `other` into `into` in a copy; what the hook wrote is committed as
    the user is told to; then `tasks check` is clean and nothing is left to commit."""
    clone = repo.copy(tmp_path / f"{other}-into-{into}")
    clone.git("checkout", "-q", into)
    done = clone.git("merge", "--no-edit", other)
    records = judge(clone)
    if clone.dirty():
        assert "commit them" in done.stderr, done.stderr
        clone.commit("tasks: finish merging the board")
    check = json.loads(clone.tasks("check", "--json").stdout)
    assert check["ok"] is True, check
    assert clone.dirty() == []
    return clone, records


def both_ways(tmp_path, repo: Clone) -> tuple[dict[str, dict], set[str]]:
    """The board merged both ways (by uid) and the uids archived; the same either way."""
    found = []
    for into, other in (("a", "b"), ("b", "a")):
        clone, records = merged(tmp_path, repo, into, other)
        shelved = {records[task_id]["uid"] for task_id in archived_ids(clone.board)}
        found.append((by_uid(records), shelved))
    (one, shelved_one), (two, shelved_two) = found
    assert shelved_one == shelved_two, "archived or not depends on who merged"
    strip = lambda board: {uid: {**r, "updatedAt": ""} for uid, r in board.items()}  # noqa: E731
    assert strip(one) == strip(two), "the merge depends on who merged"
    return one, shelved_one


def by_subject(board: dict[str, dict]) -> dict[str, dict]:
    return {record["subject"]: record for record in board.values()}


def test_archived_on_one_side_edited_and_still_closed_on_the_other_stays_archived_with_the_edit(tmp_path):
    def side_b(tasks):
        tasks("update", "1", "--meta", "note=kept")

    board, shelved = both_ways(tmp_path, branches(tmp_path, base_board, archive, side_b))
    tasks = by_subject(board)
    assert tasks["one"]["metadata"] == {"note": "kept"} and tasks["one"]["status"] == "completed"
    assert shelved == {tasks["one"]["uid"], tasks["two"]["uid"]}


def test_archived_on_one_side_reopened_on_the_other_comes_back_open(tmp_path):
    def side_b(tasks):
        tasks("reopen", "2")

    repo = branches(tmp_path, base_board, archive, side_b)
    board, shelved = both_ways(tmp_path, repo)
    tasks = by_subject(board)
    assert tasks["two"]["status"] == "pending"
    assert shelved == {tasks["one"]["uid"]}  # #1's history edge names #2, but #2 does not name #1: it stays
    clone = Clone(tmp_path / "b-into-a")
    assert 2 in [record["id"] for record in clone.tasks.json("ready")]  # open work sees it again


def test_edited_then_archived_on_one_side_edited_on_the_other_goes_through_the_driver(tmp_path):
    """Both sides changed the record: git hands the driver the archived path, which merges
    by meaning; the task stays archived with both edits (it is still closed)."""

    def side_a(tasks):
        tasks("update", "1", "--subject", "one, renamed")
        archive(tasks)

    def side_b(tasks):
        tasks("update", "1", "--meta", "from=b")

    board, shelved = both_ways(tmp_path, branches(tmp_path, base_board, side_a, side_b))
    tasks = by_subject(board)
    assert tasks["one, renamed"]["metadata"] == {"from": "b"}
    assert shelved == {tasks["one, renamed"]["uid"], tasks["two"]["uid"]}


def test_edited_then_archived_on_one_side_reopened_on_the_other_comes_back_with_both_edits(tmp_path):
    def side_a(tasks):
        tasks("update", "2", "--subject", "two, renamed")
        archive(tasks)

    def side_b(tasks):
        tasks("reopen", "2")

    board, shelved = both_ways(tmp_path, branches(tmp_path, base_board, side_a, side_b))
    tasks = by_subject(board)
    assert tasks["two, renamed"]["status"] == "pending"
    assert tasks["two, renamed"]["uid"] not in shelved


def test_archived_on_one_side_restored_on_the_other_after_both_archived(tmp_path):
    """Both branches archived (the same rename); one brought #1 back: it ends live."""

    def side_a(tasks):
        tasks("update", "3", "--meta", "side=a")

    def side_b(tasks):
        tasks("restore", "1")

    def base(tasks):
        base_board(tasks)
        archive(tasks)

    board, shelved = both_ways(tmp_path, branches(tmp_path, base, side_a, side_b))
    tasks = by_subject(board)
    assert shelved == {tasks["two"]["uid"]}
    assert tasks["three"]["metadata"] == {"side": "a"}


def test_a_rebase_over_an_archive_is_finished_by_one_check_fix(tmp_path):
    """No hook runs for a rebase the driver had no part in: one `check --fix` brings the
    reopened task back (DESIGN §8: at most one is needed)."""

    def side_b(tasks):
        tasks("reopen", "2")

    repo = branches(tmp_path, base_board, archive, side_b)
    clone = repo.copy(tmp_path / "rebase")
    clone.git("checkout", "-q", "b")
    clone.git("rebase", "a")
    found = json.loads(clone.tasks("check", "--json", expect=6).stdout)["problems"]
    assert {p["rule"] for p in found} >= {"archived-open"}
    assert json.loads(clone.tasks("check", "--fix", "--json").stdout)["ok"] is True
    records = judge(clone)
    assert 2 not in archived_ids(clone.board) and records[2]["status"] == "pending"
