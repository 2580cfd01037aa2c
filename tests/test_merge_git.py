"""Branches that both changed the board merge with no hand edit, through real git:
every scenario of issue 11, each merged both ways, rebased both ways and cherry-picked.
After each: git exits 0, no conflict marker, nothing written outside the board, every
invariant of DESIGN §2 (tests/invariants.py), nothing lost or invented (by uid), the
same board whichever side merged into which, and `tasks check` clean once the user has
committed what the hook asked for."""

from __future__ import annotations

import json

import pytest
from gitboard import Clone, branches, by_uid, judge, new_clone

from taskboard.git.wiring import HOOKS

VARIANTS = {
    "merge b into a": ("a", ["merge", "--no-edit", "b"]),
    "merge a into b": ("b", ["merge", "--no-edit", "a"]),
    "rebase b onto a": ("b", ["rebase", "a"]),
    "rebase a onto b": ("a", ["rebase", "b"]),
    "cherry-pick b onto a": ("a", ["cherry-pick", "b"]),
}


pytestmark = pytest.mark.usefixtures("git_identity")  # conftest: git with the tests' own configuration


def journal_events(clone: Clone) -> set[str]:
    """The eid of every journal line on the board (tests/invariants-style: read directly)."""
    found = set()
    for shard in (clone.board / "journal").glob("*.jsonl"):
        for line in shard.read_text(encoding="utf-8").splitlines():
            assert not line.startswith(("<<<<<<<", "=======", ">>>>>>>")), f"{shard.name}: conflict markers"
            found.add(json.loads(line)["eid"])
    return found


def every_way(tmp_path, repo: Clone, cycles: bool = False) -> dict[str, dict]:
    """The board after each variant (by uid), judged on the way; merges must agree byte for byte,
    and every journal event of both branches is kept."""
    boards, files = {}, {}
    events = set()
    for branch in ("a", "b"):
        repo.git("checkout", "-q", branch)
        events |= journal_events(repo)
    repo.git("checkout", "-q", "main")
    for label, (branch, command) in VARIANTS.items():
        clone = repo.copy(tmp_path / label.replace(" ", "-"))
        clone.git("checkout", "-q", branch)
        done = clone.git(*command)  # exit 0: no conflict
        records = judge(clone, cycles=cycles)
        assert events <= journal_events(clone), f"{label}: journal events lost"
        if clone.dirty():  # the hook finished the board: the user is told to commit it
            assert "commit them" in done.stderr, (label, done.stderr)
            clone.commit("tasks: finish merging the board")
        check = clone.tasks("check", "--json", expect=6 if cycles else 0)
        assert json.loads(check.stdout)["ok"] is not cycles, (label, check.stdout)
        assert clone.dirty() == [], label
        boards[label] = by_uid(records)
        if label.startswith("merge"):
            files[label] = {path.name: path.read_bytes() for path in clone.board.glob("task_*.json")}
    assert files["merge b into a"] == files["merge a into b"], "the merge depends on who merged"
    stable = {label: {uid: {**r, "updatedAt": ""} for uid, r in board.items()} for label, board in boards.items()}
    for label, board in stable.items():
        assert board == stable["merge b into a"], f"{label} differs from the merge"
    return boards["merge b into a"]


def subjects(board: dict[str, dict]) -> dict[str, dict]:
    """Each task by subject, its edges by subject too."""
    subject = {uid: record["subject"] for uid, record in board.items()}
    return {
        record["subject"]: {
            **record,
            "blocks": sorted(subject[u] for u in record["blocks"]),
            "blockedBy": sorted(subject[u] for u in record["blockedBy"]),
        }
        for record in board.values()
    }


def sides(repo: Clone) -> tuple[dict, dict]:
    found = []
    for name in ("a", "b"):
        repo.git("checkout", "-q", name)
        found.append(by_uid(repo.records()))
    repo.git("checkout", "-q", "main")
    return found[0], found[1]


# -- the scenarios of the issue ------------------------------------------------------------------


def test_both_branches_create_tasks_with_the_same_ids(tmp_path):
    def base(tasks):
        tasks("create", "one")
        tasks("create", "two")

    def side_a(tasks):
        tasks("create", "a3", "--blocked-by", "1")
        tasks("create", "a4", "--blocked-by", "3")

    def side_b(tasks):
        tasks("create", "b3", "--blocked-by", "2")
        tasks("create", "b4")
        tasks("update", "1", "--add-blocks", "4")

    repo = branches(tmp_path, base, side_a, side_b)
    a, b = sides(repo)
    board = every_way(tmp_path, repo)
    assert set(board) == set(a) | set(b)  # nothing lost, nothing invented
    tasks = subjects(board)
    assert tasks["a3"]["blockedBy"] == ["one"] and tasks["a4"]["blockedBy"] == ["a3"]
    assert tasks["b3"]["blockedBy"] == ["two"] and tasks["b4"]["blockedBy"] == ["one"]
    assert tasks["one"]["blocks"] == ["a3", "b4"] and tasks["two"]["blocks"] == ["b3"]
    # the renumbering is journaled: which task, its id on its branch, the new one
    clone = repo.copy(tmp_path / "journal")
    clone.git("checkout", "-q", "a")
    clone.git("merge", "--no-edit", "b")
    events = [e for e in clone.tasks.json("log") if e["event"] == "renumbered"]
    moved = {e["uid"]: (e["from"], e["task"]) for e in events}
    assert len(events) == 2 and {old for old, _new in moved.values()} == {3, 4}
    for uid, (_old, new) in moved.items():
        assert clone.tasks.json("get", str(new))["uid"] == uid


def test_completion_on_one_side_unblocks_the_other_sides_new_dependent(tmp_path):
    def base(tasks):
        tasks("create", "one")
        tasks("create", "two")

    def side_a(tasks):
        tasks("update", "2", "--status", "completed")

    def side_b(tasks):
        tasks("create", "three", "--blocked-by", "2")

    tasks = subjects(every_way(tmp_path, branches(tmp_path, base, side_a, side_b)))
    assert tasks["two"]["status"] == "completed" and tasks["two"]["blocks"] == ["three"]
    assert tasks["three"]["blockedBy"] == []  # ready: its blocker was completed on the other branch


def test_one_side_changes_status_the_other_the_description(tmp_path):
    def base(tasks):
        tasks("create", "one", "-d", "short")

    def side_a(tasks):
        tasks("update", "1", "--status", "in_progress", "--owner", "alice")

    def side_b(tasks):
        tasks("update", "1", "-d", "a longer description")

    tasks = subjects(every_way(tmp_path, branches(tmp_path, base, side_a, side_b)))
    assert tasks["one"]["status"] == "in_progress" and tasks["one"]["owner"] == "alice"
    assert tasks["one"]["description"] == "a longer description"


def test_both_sides_add_different_metadata_keys(tmp_path):
    def base(tasks):
        tasks("create", "one", "--meta", "keep=1")

    def side_a(tasks):
        tasks("update", "1", "--meta", "a=1")

    def side_b(tasks):
        tasks("update", "1", "--meta", "b=x", "--meta", "keep=")

    tasks = subjects(every_way(tmp_path, branches(tmp_path, base, side_a, side_b)))
    assert tasks["one"]["metadata"] == {"a": 1, "b": "x"}


def test_a_deletion_wins_over_a_new_edge(tmp_path):
    def base(tasks):
        for name in ("one", "two", "three", "four", "five"):
            tasks("create", name)

    def side_a(tasks):
        tasks("delete", "3")

    def side_b(tasks):
        tasks("update", "3", "--add-blocks", "5", "--subject", "three, renamed")

    tasks = subjects(every_way(tmp_path, branches(tmp_path, base, side_a, side_b)))
    deleted = tasks["three, renamed"]
    assert deleted["status"] == "deleted" and deleted["blocks"] == [] and deleted["blockedBy"] == []
    assert tasks["five"]["blockedBy"] == []


def test_a_cycle_made_by_the_merge_is_reported(tmp_path):
    def base(tasks):
        for name in ("one", "two", "three", "four"):
            tasks("create", name)

    def side_a(tasks):
        tasks("update", "1", "--add-blocks", "4")

    def side_b(tasks):
        tasks("update", "4", "--add-blocks", "1")

    repo = branches(tmp_path, base, side_a, side_b)
    tasks = subjects(every_way(tmp_path, repo, cycles=True))
    assert tasks["one"]["blocks"] == ["four"] and tasks["four"]["blocks"] == ["one"]
    clone = repo.copy(tmp_path / "look")
    clone.git("checkout", "-q", "a")
    clone.git("merge", "--no-edit", "b")
    check = clone.tasks("check", expect=6)
    assert "#1 → #4 → #1" in check.stdout + check.stderr


def test_two_blockers_completed_on_two_branches(tmp_path):
    def base(tasks):
        tasks("create", "one")
        tasks("create", "two")
        tasks("create", "three", "--blocked-by", "1", "--blocked-by", "2")

    def side_a(tasks):
        tasks("update", "1", "--status", "completed")

    def side_b(tasks):
        tasks("update", "2", "--status", "completed")

    tasks = subjects(every_way(tmp_path, branches(tmp_path, base, side_a, side_b)))
    assert tasks["three"]["blockedBy"] == [] and tasks["three"]["status"] == "pending"


# -- when the hooks cannot finish the board ---------------------------------------------------------


def _both_create(tmp_path) -> Clone:
    def base(tasks):
        tasks("create", "one")

    def side_a(tasks):
        tasks("create", "a2", "--blocked-by", "1")

    def side_b(tasks):
        tasks("create", "b2")
        tasks("create", "b3", "--blocked-by", "2")

    return branches(tmp_path, base, side_a, side_b)


def _notes_on_both(tmp_path) -> Clone:
    """_both_create, then each branch writes notes.txt its own way: merging them stops on it."""
    repo = _both_create(tmp_path)
    for branch in ("a", "b"):
        repo.git("checkout", "-q", branch)
        (repo.top / "notes.txt").write_text(f"{branch}\n")
        repo.commit(f"notes on {branch}")
    return repo


def _expect_both_create(records: dict[int, dict]) -> None:
    tasks = subjects(by_uid(records))
    assert sorted(tasks) == ["a2", "b2", "b3", "one"]
    assert tasks["a2"]["blockedBy"] == ["one"] and tasks["b3"]["blockedBy"] == ["b2"]


def test_without_hooks_the_next_command_finishes_the_merge(tmp_path):
    clone = _both_create(tmp_path).copy(tmp_path / "clone")
    for name in HOOKS:
        (clone.top / ".git" / "hooks" / name).unlink()
    clone.git("checkout", "-q", "a")
    clone.git("merge", "--no-edit", "b")
    ready = clone.tasks("ready")  # finishes the merge first, and says what to commit
    assert "commit them" in ready.stderr
    _expect_both_create(judge(clone))
    assert "one" in ready.stdout and "b2" in ready.stdout and "a2" not in ready.stdout
    clone.commit("tasks: finish merging the board")
    problems = clone.tasks.json("check", expect=6)["problems"]
    assert [p["rule"] for p in problems] == ["git-wiring"] and "hook" in problems[0]["message"]


def test_a_series_of_cherry_picks_is_finished_by_the_next_command(tmp_path):
    repo = _both_create(tmp_path)
    repo.git("checkout", "-q", "b")
    repo.tasks("update", "1", "-d", "a second commit on b")
    repo.commit("more on b")
    clone = repo.copy(tmp_path / "clone")
    clone.git("checkout", "-q", "a")
    done = clone.git("cherry-pick", "main..b")  # two picks: the hooks wait for the last one
    assert "commit them" not in done.stderr
    listed = clone.tasks("list")
    assert "commit them" in listed.stderr
    records = judge(clone)
    _expect_both_create(records)
    assert subjects(by_uid(records))["one"]["description"] == "a second commit on b"


def test_a_merge_that_stops_on_another_file_is_finished_when_committed(tmp_path):
    clone = _notes_on_both(tmp_path).copy(tmp_path / "clone")
    clone.git("checkout", "-q", "a")
    clone.git("merge", "--no-edit", "b", expect=1)  # notes.txt conflicts; the board merged
    problems = clone.tasks.json("check", expect=6)["problems"]  # a merge in progress: not finished yet
    assert any("finished when git's merge is committed" in p["message"] for p in problems)
    (clone.top / "notes.txt").write_text("a and b\n")
    clone.git("add", "notes.txt", ".tasks")
    done = clone.git("commit", "--no-edit")
    assert "commit them" in done.stderr  # post-commit finished the board
    (clone.top / "notes.txt").unlink()
    clone.commit("drop notes")
    _expect_both_create(judge(clone))


def test_a_merge_pushed_before_it_was_finished_is_finished_elsewhere(tmp_path):
    repo = _both_create(tmp_path)
    clone = repo.copy(tmp_path / "clone")
    for name in HOOKS:
        (clone.top / ".git" / "hooks" / name).unlink()
    clone.git("checkout", "-q", "a")
    puller = Clone(tmp_path / "puller")  # a wired clone that pulls the unfinished merge: its hook finishes it
    clone.git("clone", "-q", "-b", "a", str(clone.top), str(puller.top))
    puller.tasks("init")
    clone.git("merge", "--no-edit", "b")  # committed with a task parked in task_2.json
    pulled = puller.git("pull", "--no-rebase", "--no-edit")
    assert "commit them" in pulled.stderr
    _expect_both_create(judge(puller))
    other = Clone(tmp_path / "other")
    clone.git("clone", "-q", str(clone.top), str(other.top))
    other.tasks("init")
    problems = other.tasks.json("check", expect=6)["problems"]
    assert "parked-task" in [p["rule"] for p in problems]
    fixed = other.tasks.json("check", "--fix")
    assert fixed["ok"] is True
    _expect_both_create(judge(other))


def test_agents_in_two_worktrees_merge_their_branches(tmp_path):
    repo = new_clone(tmp_path / "repo")
    repo.tasks("create", "plan")
    repo.commit("plan")
    worktrees = []
    for name in ("w1", "w2"):
        repo.git("worktree", "add", "-q", "-b", name, str(tmp_path / name))
        worktree = Clone(tmp_path / name)
        worktree.tasks("create", f"from {name}", "--blocked-by", "1")
        worktree.commit(f"work in {name}")
        worktrees.append(worktree)
    w1, _w2 = worktrees
    (repo.top / ".git" / "hooks" / "post-merge").rename(tmp_path / "post-merge")  # see what the driver leaves
    w1.git("merge", "--no-edit", "w2")
    own = repo.top / ".git" / "worktrees" / "w1" / "tasks-merge.json"
    assert own.exists() and not (repo.top / ".git" / "tasks-merge.json").exists()  # the worktree's own folder
    (tmp_path / "post-merge").rename(repo.top / ".git" / "hooks" / "post-merge")
    w1.git("reset", "-q", "--hard", "HEAD^")
    done = w1.git("merge", "--no-edit", "w2")  # the hooks are the clone's, shared by its worktrees
    assert "commit them" in done.stderr and not own.exists()
    tasks = subjects(by_uid(judge(w1)))
    assert tasks["from w1"]["blockedBy"] == ["plan"] and tasks["from w2"]["blockedBy"] == ["plan"]
    assert sorted(r["id"] for r in w1.records().values()) == [1, 2, 3]


def test_commits_made_on_an_unfinished_merge_are_kept_when_it_is_finished(tmp_path):
    clone = _both_create(tmp_path).copy(tmp_path / "clone")
    for name in HOOKS:
        (clone.top / ".git" / "hooks" / name).unlink()
    clone.git("checkout", "-q", "a")
    clone.git("merge", "--no-edit", "b")
    path = clone.board / "task_1.json"  # a hand edit, committed before any tasks command ran
    path.write_text(path.read_text().replace('"description": ""', '"description": "edited after the merge"'))
    clone.commit("edit after the merge")
    assert "commit them" in clone.tasks("list").stderr  # finished from the merge commit, not from HEAD
    records = judge(clone)
    _expect_both_create(records)
    assert subjects(by_uid(records))["one"]["description"] == "edited after the merge"


def test_an_aborted_rebase_leaves_the_board_alone(tmp_path):
    clone = _notes_on_both(tmp_path).copy(tmp_path / "clone")
    clone.git("checkout", "-q", "b")
    clone.git("rebase", "a", expect=1)  # stops on notes.txt, after the board's commit was merged
    clone.git("rebase", "--abort")
    assert (clone.top / ".git" / "tasks-merge.json").exists()  # the driver had merged the board's commit
    before = {path.name: path.read_bytes() for path in clone.board.glob("task_*.json")}
    listed = clone.tasks("list")
    assert "commit them" not in listed.stderr
    assert {path.name: path.read_bytes() for path in clone.board.glob("task_*.json")} == before
    assert not (clone.top / ".git" / "tasks-merge.json").exists()
    assert clone.dirty() == []


def test_check_fix_on_an_older_checkout_keeps_the_marks_other_worktrees_rely_on(tmp_path):
    """A checkout of an older commit lacks the tasks made since; the claim and completion
    this worktree recorded for them in git's common folder are not stale there, only out
    of sight. `check --fix` must leave them, or another worktree offers a claimed task
    again (before: --fix dropped them as "this board has no such task")."""
    repo = new_clone(tmp_path / "repo")
    repo.tasks("create", "old")
    repo.commit("one task")
    repo.tasks("create", "claimed later")
    repo.tasks("create", "completed later")
    repo.commit("two more")
    repo.git("worktree", "add", "-q", "-b", "other", str(tmp_path / "other"))
    other = Clone(tmp_path / "other")  # its files: #2 and #3 pending
    repo.tasks("claim", "2", "--owner", "alice")
    repo.tasks("update", "3", "--status", "completed")
    repo.commit("work")
    repo.git("checkout", "-q", "HEAD~2")
    repo.tasks("check", "--fix", expect=None)
    repo.git("checkout", "-q", "main")
    assert repo.tasks("check").exit_code == 0
    offered = other.tasks("ready", "--json", expect=None)
    assert [task["id"] for task in json.loads(offered.stdout)] == [1], offered.stdout
    assert other.tasks("claim", "2", "--owner", "bob", expect=None).exit_code == 4
    assert other.tasks("claim", "3", "--owner", "bob", expect=None).exit_code == 4
