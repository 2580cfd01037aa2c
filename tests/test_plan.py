"""Issue 9, the plan side: priority and labels, ready order, filters, the words people
type, `done` and `release`, ownership tightened, the `--meta` number rule, and where
the board is found. Through the real entry point (`main`), and real processes where
the process matters."""

from __future__ import annotations

import json
import subprocess

import pytest
from conftest import tasks_process
from invariants import assert_sound, record, snapshot, write_board

# -- the --meta number rule (DESIGN §4) ------------------------------------------------------


@pytest.mark.parametrize(
    "text, stored",
    [
        ("7", 7),
        ("-2", -2),
        ("0.5", 0.5),
        ("1.0", 1.0),
        ("12345678901234567890", 12345678901234567890),
        ("1.10", "1.10"),
        ("1e3", "1e3"),
        ("1E3", "1E3"),
        ("-0", "-0"),
        ("0.50", "0.50"),
        (" 7", " 7"),
        ("007", "007"),
        ("true", True),
        ("null", None),
        ('"1.10"', "1.10"),
        ("[1.10]", [1.1]),  # only a bare number keeps its text; inside JSON, JSON rules
        ('{"v": 2}', {"v": 2}),
        ("v1.2", "v1.2"),
    ],
)
def test_meta_number_stays_a_number_only_as_json_writes_it(run, text, stored):
    run("create", "A", "--meta", f"k={text}")
    value = run.record(1)["metadata"]["k"]
    assert value == stored and type(value) is type(stored)


# -- priority and labels -----------------------------------------------------------------------


def test_priority_and_labels_are_kept_in_metadata(run):
    made = run.json("create", "A", "--priority", "1", "--label", "ui", "--label", "api", "--label", "ui")
    assert made["metadata"] == {"priority": 1, "labels": ["api", "ui"]}
    assert run.record(1)["metadata"] == {"priority": 1, "labels": ["api", "ui"]}
    run("update", "1", "--priority", "0", "--label", "db", "--unlabel", "ui")
    assert run.record(1)["metadata"] == {"priority": 0, "labels": ["api", "db"]}
    run("update", "1", "--unlabel", "api", "--unlabel", "db", "--unlabel", "never-there")
    assert run.record(1)["metadata"] == {"priority": 0}  # no labels left: the key goes
    run("update", "1", "--meta", "priority=")
    assert run.record(1)["metadata"] == {}
    plain = run.json("create", "B")
    assert plain["metadata"] == {}  # nothing unless asked


def test_the_same_rules_hold_through_meta(run, board_dir):
    run("create", "A", "--meta", 'labels=["b","a","b"]', "--meta", "priority=3")
    assert run.record(1)["metadata"] == {"labels": ["a", "b"], "priority": 3}
    before = snapshot(board_dir)
    for bad in ("priority=7", "priority=high", "priority=true", "priority=1.0", 'labels=["", "x"]', "labels=[1]"):
        result = run("update", "1", "--meta", bad, expect=2)
        assert "priority" in result.stderr or "label" in result.stderr
    assert snapshot(board_dir) == before


def test_an_unchanged_label_set_writes_nothing(run, board_dir):
    run("create", "A", "--label", "x")
    before = snapshot(board_dir)
    run("update", "1", "--label", "x")
    run("update", "1", "--unlabel", "y")
    assert snapshot(board_dir) == before


# -- ready order ----------------------------------------------------------------------------------


def _ids(records):
    return [r["id"] for r in records]


def test_ready_order_is_priority_then_id_everywhere(run, board_dir):
    run("create", "p2 unset")  # 1
    run("create", "p4", "--priority", "4")  # 2
    run("create", "p0", "--priority", "0")  # 3
    run("create", "p2 set", "--priority", "2")  # 4
    run("create", "p0 blocked", "--priority", "0", "--blocked-by", "1")  # 5
    run("create", "p1", "--priority", "1")  # 6
    assert _ids(run.json("ready")) == [3, 6, 1, 4, 2]
    assert _ids(run.json("list", "--ready")) == [3, 6, 1, 4, 2]
    assert _ids(run.json("list", "--status", "ready")) == [3, 6, 1, 4, 2]
    assert _ids(run.json("list")) == [1, 2, 3, 4, 5, 6]  # list stays in id order
    plain = run("ready").stdout.splitlines()
    assert plain == ["[ ] #3: p0", "[ ] #6: p1", "[ ] #1: p2 unset", "[ ] #4: p2 set", "[ ] #2: p4"]
    claimed = [run.json("--as", "a", "claim")["id"] for _ in range(5)]
    assert claimed == [3, 6, 1, 4, 2]
    run("claim", "--owner", "a", expect=3)
    run("done", "1")
    assert run.json("--as", "b", "claim")["id"] == 5  # freed, and first by priority
    assert_sound(board_dir)


def test_claim_without_id_takes_the_best_one_a_reservation_allows(run):
    run("create", "mine later", "--priority", "3", "--owner", "amy")  # 1
    run("create", "urgent but carol's", "--priority", "0", "--owner", "carol")  # 2
    run("create", "open", "--priority", "1")  # 3
    assert run.json("claim", "--owner", "amy")["id"] == 3
    assert run.json("claim", "--owner", "amy")["id"] == 1
    run("claim", "--owner", "amy", expect=3)


def test_a_priority_written_by_hand_that_is_none_counts_as_unset(run, board_dir):
    write_board(
        board_dir,
        [
            record(1, metadata={"priority": "high"}),
            record(2, metadata={"priority": 9}),
            record(3, metadata={"priority": 1}),
            record(4, metadata={"priority": True}),
            record(5, metadata={"labels": "not a list"}),
        ],
    )
    assert _ids(run.json("ready")) == [3, 1, 2, 4, 5]
    assert _ids(run.json("ready", "--priority", "2")) == [1, 2, 4, 5]
    assert run.json("ready", "--label", "not a list") == []


def test_the_board_ready_column_is_in_ready_order(run):
    run("create", "later", "--priority", "3")
    run("create", "sooner", "--priority", "0")
    from taskboard.disk.store import Store
    from taskboard.ops.board import Board
    from taskboard.views.viewmodel import columns

    listing = Board(Store(run.board_dir)).listing()
    assert _ids(columns(listing.records, listing.lookup)["Ready"]) == [2, 1]


# -- filters ----------------------------------------------------------------------------------------


@pytest.fixture
def labelled(run):
    run("create", "Write the Parser", "--label", "core", "--label", "parser", "--priority", "1")  # 1
    run("create", "Docs", "-d", "the PARSER guide", "--label", "docs")  # 2
    run("create", "Lexer", "--label", "core", "--priority", "0", "--blocked-by", "1")  # 3
    run("create", "Release", "--priority", "4")  # 4
    run("create", "Gone", "--label", "core")  # 5
    run("delete", "5")
    return run


@pytest.mark.parametrize(
    "args, ids",
    [
        (["list", "--label", "core"], [1, 3]),
        (["list", "--label", "core", "--label", "parser"], [1]),
        (["list", "--label", "core", "--all"], [1, 3, 5]),
        (["list", "--label", "nope"], []),
        (["list", "--priority", "2"], [2]),
        (["list", "--priority", "0"], [3]),
        (["list", "--grep", "parser"], [1, 2]),
        (["list", "--grep", "PaRsEr", "--label", "docs"], [2]),
        (["list", "--grep", "the"], [1, 2]),
        (["list", "--limit", "2"], [1, 2]),
        (["list", "--limit", "99"], [1, 2, 3, 4]),
        (["ready", "--label", "core"], [1]),
        (["ready", "--limit", "2"], [1, 2]),
        (["ready", "--grep", "lexer"], []),
        (["ready", "--priority", "4"], [4]),
        (["list", "--status", "blocked"], [3]),
        (["list", "--blocked"], [3]),
        (["list", "--status", "ready", "--limit", "1"], [1]),
        (["list", "--status", "todo"], [1, 2, 3, 4]),
        (["list", "--status", "deleted"], [5]),
    ],
)
def test_list_and_ready_filters(labelled, args, ids):
    assert _ids(labelled.json(*args)) == ids


def test_limit_keeps_the_first_of_the_order(labelled):
    labelled("update", "4", "--priority", "0")
    assert _ids(labelled.json("ready", "--limit", "2")) == [4, 1]
    assert _ids(labelled.json("list", "--limit", "2")) == [1, 2]


# -- the words people type ----------------------------------------------------------------------------


def test_status_words_are_accepted_wherever_a_status_is_typed(run):
    run("create", "A")
    run("create", "B", "--blocked-by", "1")
    run("create", "C")
    assert run.json("update", "1", "--status", "in-progress")["status"] == "in_progress"
    assert _ids(run.json("list", "--status", "in-progress")) == [1]
    assert run.json("update", "1", "--status", "done")["status"] == "completed"
    assert _ids(run.json("list", "--status", "done")) == [1]
    assert run.json("update", "1", "--status", "todo")["status"] == "pending"  # a reopen
    assert _ids(run.json("list", "--status", "todo")) == [1, 2, 3]
    assert _ids(run.json("list", "--status", "blocked")) == [2]
    assert _ids(run.json("list", "--status", "ready", "--status", "blocked")) == [1, 2, 3]
    run("update", "3", "--status", "in_progress")
    assert _ids(run.json("list", "--status", "ready", "--status", "in-progress")) == [1, 3]


# -- done and release ----------------------------------------------------------------------------------


def test_done_and_release(run, board_dir):
    run("create", "A")
    run("create", "B", "--blocked-by", "1")
    run("--as", "amy", "claim", "1")
    released = run("--as", "amy", "release", "1", "--note", "out of time")
    assert released.stdout == "[ ] #1: A\n"
    assert run.record(1)["status"] == "pending" and run.record(1)["owner"] == ""
    run("--as", "amy", "claim", "1")
    done = run("--as", "amy", "done", "1", "--note", "shipped")
    assert done.stdout == "[x] #1: A\n" and "unblocked #2" in done.stderr
    assert run.record(1)["owner"] == "amy"
    assert run.json("done", "1")["status"] == "completed"  # again: nothing to do, no error
    run("release", "1", expect=4)  # a finished task is reopened, not released
    run("release", "1", "--failed", expect=4)
    assert run.json("release", "2")["status"] == "pending"  # pending stays pending
    failed = run.json("--as", "bob", "claim", "2")
    assert failed["owner"] == "bob"
    after = run.json("--as", "bob", "release", "2", "--failed", "--note", "tests hang")
    assert (after["status"], after["owner"]) == ("pending", "")
    assert_sound(board_dir)


def test_done_and_release_outcomes_carry_the_note_and_the_failure():
    """The journal (issue 9) writes an outcome's events: the note and the failure are among them."""
    import os
    import tempfile
    from pathlib import Path

    from taskboard.disk.store import Store
    from taskboard.ops.board import Board

    with tempfile.TemporaryDirectory() as folder:
        board = Board(Store(Path(folder) / ".tasks"), caller="amy")
        board.create("A")
        board.claim(1, "amy")
        outcome = board.release(1, note="tests hang", failed=True)
        assert [e.what for e in outcome.events] == ["released", "failed"]
        # the runtime state counts the attempt
        assert outcome.events[-1].data == {"note": "tests hang", "attempts": 1, "by": "amy"}
        board.claim(1, "amy")
        outcome = board.done(1, note="ok now")
        assert [e.what for e in outcome.events] == ["completed", "note"]
        assert outcome.events[-1].data == {"text": "ok now"}
        assert os.listdir(Path(folder) / ".tasks" / ".scratch") == []


# -- ownership, tightened (DESIGN §7) ---------------------------------------------------------------------


def test_a_named_caller_cannot_edit_what_another_holds(run, board_dir):
    run("create", "A", "-d", "text")
    run("--as", "alice", "claim", "1")
    before = snapshot(board_dir)
    for args in (
        ["update", "1", "--subject", "mine now"],
        ["update", "1", "-d", "other text"],
        ["update", "1", "--status", "pending"],
        ["update", "1", "--owner", ""],
        ["done", "1"],
        ["release", "1"],
        ["release", "1", "--failed"],
        ["delete", "1"],
    ):
        result = run("--as", "bob", *args, expect=4)
        assert "held by alice" in result.stderr and "you are bob" in result.stderr and "--force" in result.stderr
    assert snapshot(board_dir) == before
    run("--as", "bob", "update", "1", "--subject", "A", "-d", "text", "--status", "in_progress", "--owner", "alice")
    assert snapshot(board_dir) == before  # naming the values it already has changes nothing: allowed
    run("--as", "bob", "update", "1", "--priority", "1", "--label", "x", "--meta", "k=v")  # not guarded
    run("update", "1", "--subject", "a person at the shell is trusted")
    forced = run("--as", "bob", "update", "1", "--subject", "B", "--force")
    assert forced.exit_code == 0 and run.record(1)["subject"] == "B"


def test_a_named_caller_cannot_start_or_complete_a_task_reserved_for_another(run, board_dir):
    run("create", "A", "--owner", "carol")
    before = snapshot(board_dir)
    for args in (["update", "1", "--status", "in_progress"], ["update", "1", "--status", "done"], ["done", "1"]):
        result = run("--as", "bob", *args, expect=4)
        assert "reserved for carol" in result.stderr and "you are bob" in result.stderr
    run("--as", "bob", "claim", "1", expect=4)
    assert snapshot(board_dir) == before
    run("--as", "bob", "update", "1", "--subject", "renamed")  # a reservation is not a hold
    outcome = run.json("--as", "bob", "done", "1", "--force")
    assert (outcome["status"], outcome["owner"]) == ("completed", "carol")
    run.json("--as", "carol", "update", "1", "--status", "todo")
    assert run.json("--as", "carol", "done", "1")["status"] == "completed"


def test_overrides_are_events_with_both_names():
    import tempfile
    from pathlib import Path

    from taskboard.core.model import Patch
    from taskboard.disk.store import Store
    from taskboard.ops.board import Board

    with tempfile.TemporaryDirectory() as folder:
        store = Store(Path(folder) / ".tasks")
        Board(store, caller="carol").create("A", owner="carol")
        outcome = Board(store, caller="bob").done(1, force=True)
        forced = [e for e in outcome.events if e.what == "forced"]
        assert [(e.task, e.data) for e in forced] == [(1, {"holder": "carol", "by": "bob"})]
        assert [e.what for e in outcome.events][-1] == "completed"
        outcome = Board(store, caller="carol").update(1, Patch(subject="B"))
        assert not [e for e in outcome.events if e.what == "forced"]  # not held any more: nothing to override


# -- where the board is ---------------------------------------------------------------------------------------


def test_discovery_stops_at_the_top_of_the_work_tree(tmp_path):
    home = tmp_path / "home"
    (home / ".tasks").mkdir(parents=True)
    write_board(home / ".tasks", [record(1, "someone else's plan")])
    repo = home / "code" / "repo"
    (repo / "src" / "deep").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    listed = tasks_process("list", "--json", cwd=repo / "src" / "deep")
    assert listed.returncode == 0 and json.loads(listed.stdout) == []  # not the board above the repository
    made = tasks_process("init", "--json", cwd=repo / "src" / "deep")
    assert made.returncode == 0, made.stderr
    assert json.loads(made.stdout)["board"] == str(repo / ".tasks")
    assert tasks_process("create", "ours", cwd=repo / "src").returncode == 0
    assert json.loads((repo / ".tasks" / "task_1.json").read_text())["subject"] == "ours"
    assert json.loads((home / ".tasks" / "task_1.json").read_text())["subject"] == "someone else's plan"
    outside = home / "code"
    assert json.loads(tasks_process("list", "--json", cwd=outside).stdout)[0]["subject"] == "someone else's plan"


def test_a_linked_worktree_has_its_own_top(tmp_path):
    """A board above a linked worktree is never found by walking up (its `.git` file marks a top)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "start"], check=True)
    (repo / ".tasks").mkdir()
    write_board(repo / ".tasks", [record(1, "main's")])
    subprocess.run([*git, "worktree", "add", "-q", str(repo / "wt" / "feature")], check=True)
    inside = repo / "wt" / "feature"
    subprocess.run([*git, "config", "tasks.worktrees", "branch"], check=True)  # a board per branch
    assert tasks_process("create", "feature's", cwd=inside).returncode == 0
    assert json.loads((inside / ".tasks" / "task_1.json").read_text())["subject"] == "feature's"
    assert json.loads((repo / ".tasks" / "task_1.json").read_text())["subject"] == "main's"
    # by default worktrees work the main worktree's board: found by git's folders, not by walking up
    subprocess.run([*git, "config", "--unset", "tasks.worktrees"], check=True)
    assert tasks_process("create", "for everyone", cwd=inside).returncode == 0
    assert json.loads((repo / ".tasks" / "task_2.json").read_text())["subject"] == "for everyone"
    assert not (inside / ".tasks" / "task_2.json").exists()


# -- prime ------------------------------------------------------------------------------------------------------


def test_prime_tells_an_agent_where_it_stands(run):
    run("create", "Setup", "--priority", "1")  # 1
    run("create", "Mine", "--owner", "agent-7")  # 2
    run("create", "Carol's", "--owner", "carol", "--priority", "0")  # 3
    run("create", "Urgent", "--priority", "0")  # 4
    run("create", "Later", "--blocked-by", "1")  # 5
    run("create", "Flaky")  # 6
    for attempt in range(3):
        run("--as", "bot", "claim", "6")
        run("--as", "bot", "release", "6", "--failed", "--note", f"hangs {attempt}")
    run("--as", "agent-7", "claim", "1", "--lease", "15m")
    text = run("--as", "agent-7", "prime").stdout
    lines = text.splitlines()
    assert lines[0].startswith(f"board {run.board_dir}: 6 tasks")
    assert "you are agent-7" in lines
    held = lines.index("you hold:")
    assert lines[held + 1].startswith("  [>] #1: Setup — held by agent-7, lease 15m, expires in")
    assert lines[lines.index("reserved for you:") + 1] == "  [ ] #2: Mine"
    ready = next(i for i, line in enumerate(lines) if line.startswith("ready for you (2;"))
    assert lines[ready + 1 : ready + 3] == ["  [ ] #4: Urgent  [priority 0]", "  [ ] #2: Mine  [priority 2]"]
    stuck = next(i for i, line in enumerate(lines) if line.startswith("stuck"))
    assert "--retry" in lines[stuck] and lines[stuck + 1] == "  [ ] #6: Flaky — stuck: failed 3 times (last: hangs 2)"
    # the loop as the README teaches it: a claim with a lease, so a killed agent's task is taken over
    assert "tasks claim --wait --lease 15m --json" in text and "tasks release ID --failed" in text
    assert "tasks done ID" in text

    brief = run.json("--as", "agent-7", "prime", "--limit", "1")
    assert [item["id"] for item in brief["held"]] == [1] and brief["held"][0]["lease"]["holder"] == "agent-7"
    assert [item["id"] for item in brief["reserved"]] == [2]
    assert [item["id"] for item in brief["ready"]] == [4] and brief["ready_total"] == 2
    assert brief["stuck"] == [
        {
            "id": 6,
            "subject": "Flaky",
            "status": "pending",
            "owner": "",
            "priority": 2,
            "labels": [],
            "attempts": 3,
            "stuck": True,
            "last_failure": "hangs 2",
        }
    ]
    assert brief["counts"]["tasks"] == 6 and brief["caller"] == "agent-7"
    assert brief["loop"][0]["command"] == "tasks claim --wait --lease 15m --json"


def test_prime_for_someone_without_a_name_and_on_an_empty_board(run, board_dir):
    text = run("prime").stdout
    assert "you have no name" in text and "nothing is ready for you now" in text
    assert not board_dir.exists()  # a read: creates nothing
    run("create", "A", "--owner", "carol")
    assert [item["id"] for item in run.json("prime")["ready"]] == [1]  # a person sees all that is ready
    assert run.json("--as", "bob", "prime")["ready"] == []  # an agent, what it could take


def test_prime_needs_no_journal_and_writes_nothing(run, board_dir):
    run("create", "A")
    run("note", "1", "hello")
    before = snapshot(board_dir)
    (board_dir / "journal").rename(board_dir / "journal-away")
    run("--as", "x", "prime")
    (board_dir / "journal-away").rename(board_dir / "journal")
    assert snapshot(board_dir) == before
