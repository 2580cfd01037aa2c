"""Runtime state through the real command: leases, renewals, takeovers, failed attempts
and stuck tasks, where the state lives (a board's `.state/`, or git's common folder
shared by worktrees), damaged state, and `claim --wait`'s decisions.

Time is never waited out here: a lease that must have run out is one whose state file
says it was renewed long ago (the state is a plain file; editing it is how a test
moves the clock), and one that must not have run out is an hour long.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from conftest import after_this_second
from invariants import assert_sound, record, snapshot, write_board

from taskboard.disk.state import STATE_FOLDER, State, iso, locate, parse_duration, reopened_since
from taskboard.disk.store import Store
from taskboard.ops import claims

# -- helpers ------------------------------------------------------------------------------------


def state_files(board: Path) -> dict[str, dict]:
    """The runtime state entries of a board, by uid."""
    folder, _ = locate(str(board))
    if not os.path.isdir(folder):
        return {}
    return {
        name[: -len(".json")]: json.loads(Path(folder, name).read_text())
        for name in os.listdir(folder)
        if name.endswith(".json") and not name.startswith(".")
    }


def entry_of(board: Path, task_id: int) -> dict:
    uid = json.loads((board / f"task_{task_id}.json").read_text())["uid"]
    return state_files(board).get(uid, {})


def age_lease(board: Path, task_id: int, seconds_ago: float) -> None:
    """Move the clock for one claim: its last renewal was `seconds_ago` seconds ago."""
    uid = json.loads((board / f"task_{task_id}.json").read_text())["uid"]
    folder, _ = locate(str(board))
    path = Path(folder, f"{uid}.json")
    entry = json.loads(path.read_text())
    entry["claim"]["renewed"] = entry["claim"]["at"] = time.time() - seconds_ago
    path.write_text(json.dumps(entry))


def committed(board: Path) -> dict:
    """Every file git would commit from the board (what `.gitignore` does not hide)."""
    return {k: v for k, v in snapshot(board).items() if not k.startswith((".lock", ".scratch", ".state"))}


def stderr_lines(result) -> list[dict]:
    return [json.loads(line) for line in result.stderr.strip().splitlines()]


def fail(run, task_id: int, note: str, caller: str) -> None:
    """One failed attempt by `caller`: claimed, then released as failed."""
    run("--as", caller, "claim", str(task_id))
    run("--as", caller, "release", str(task_id), "--failed", "--note", note)


# -- durations ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, seconds",
    [("90s", 90), ("15m", 900), ("2h", 7200), ("1h30m", 5400), ("1.5h", 5400), ("45", 45), ("1d", 86400)],
)
def test_durations_people_write(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["0", "0s", "-5m", "10x", "", "m", "5m3", "1..5h", "31d", "1e3s", "٣m", "5 m"])
def test_durations_that_are_not(text):
    with pytest.raises(ValueError):
        parse_duration(text)


# -- leases -------------------------------------------------------------------------------------


@pytest.fixture
def three(run, board_dir):
    write_board(board_dir, [record(1, blocks=[2]), record(2, blocked_by=[1]), record(3)])
    return board_dir


def test_no_lease_unless_asked(run, three):
    run("--as", "ann", "claim", "1")
    assert entry_of(three, 1) == {}  # an unshared board keeps nothing for a plain claim
    assert not (three / STATE_FOLDER).exists()


def test_a_lease_is_kept_outside_the_committed_files(run, three):
    run("init")
    assert ".state/" in (three / ".gitignore").read_text()
    before = committed(three)
    result = run("--as", "ann", "claim", "--lease", "15m", "--json")
    assert json.loads(result.stdout)["id"] == 1
    lease = stderr_lines(result)[0]["lease"]
    assert (lease["task"], lease["owner"], lease["seconds"]) == (1, "ann", 900)
    claim = entry_of(three, 1)["claim"]
    assert (claim["owner"], claim["lease"]) == ("ann", 900)
    assert claim["renewed"] + claim["lease"] == pytest.approx(time.time() + 900, abs=60)
    changed = {name for name in committed(three) if committed(three)[name] != before.get(name)}
    assert changed == {"task_1.json", "journal", "journal/ann.jsonl"}  # the claim itself, and its journal event


def test_tasks_lease_sets_the_lease(run, three):
    run("--as", "ann", "claim", env={"TASKS_LEASE": "2h"})
    assert entry_of(three, 1)["claim"]["lease"] == 7200


def test_a_live_lease_keeps_others_out(run, three):
    run("--as", "ann", "claim", "1", "--lease", "1h")
    refused = run("--as", "bob", "claim", "1", expect=4)
    assert "#1 is held by ann" in refused.stderr
    assert run("--as", "bob", "claim", "--json", expect=0).stdout and run.record(3)["owner"] == "bob"


def test_an_expired_lease_is_taken_over_with_and_without_id(run, three):
    run("--as", "ann", "claim", "1", "--lease", "1m")
    run("--as", "cat", "claim", "3", "--lease", "1m")
    age_lease(three, 1, 61)
    age_lease(three, 3, 61)
    took = run("--as", "bob", "claim", "--json")  # in ready order: #1 first
    assert json.loads(took.stdout)["id"] == 1 and run.record(1)["owner"] == "bob"
    assert any("took #1 over from ann" in line.get("warning", "") for line in stderr_lines(took))
    run("--as", "dan", "claim", "3")
    assert run.record(3)["owner"] == "dan"
    assert entry_of(three, 3) == {}  # dan asked for no lease: on an unshared board nothing is kept
    assert_sound(three)


def test_renewing_changes_no_committed_file(run, three):
    run("--as", "ann", "claim", "1", "--lease", "1m")
    age_lease(three, 1, 50)
    before = committed(three)
    result = run("--as", "ann", "renew", "1", "--json")
    assert committed(three) == before
    assert json.loads(result.stdout)["id"] == 1
    assert entry_of(three, 1)["claim"]["renewed"] == pytest.approx(time.time(), abs=30)
    run("--as", "ann", "renew", "1", "--lease", "2h")
    assert entry_of(three, 1)["claim"]["lease"] == 7200
    assert committed(three) == before


def test_renewing_a_lease_someone_took_over_is_refused(run, three):
    run("--as", "ann", "claim", "1", "--lease", "1m")
    age_lease(three, 1, 120)
    run("--as", "bob", "claim", "1")
    before = snapshot(three)
    refused = run("--as", "ann", "renew", "1", expect=4)
    assert "#1 is held by bob" in refused.stderr
    assert snapshot(three) == before
    assert run("--as", "ann", "update", "1", "--status", "completed", expect=4).exit_code == 4


def test_renewing_without_a_lease_or_a_name(run, three):
    run("--as", "ann", "claim", "1")
    result = run("--as", "ann", "renew", "1")
    assert "has no lease" in result.stderr
    assert "renew needs the holder's name" in run("renew", "1", expect=2).stderr
    assert "not in progress" in run("--as", "ann", "renew", "3", expect=4).stderr
    assert run("--as", "ann", "renew", "42", expect=3).exit_code == 3


def test_any_change_the_holder_makes_renews(run, three):
    run("--as", "ann", "claim", "1", "--lease", "1m")
    age_lease(three, 1, 50)
    run("--as", "ann", "update", "1", "--meta", "progress=half")
    assert entry_of(three, 1)["claim"]["renewed"] == pytest.approx(time.time(), abs=30)
    age_lease(three, 1, 50)
    run("--as", "ann", "note", "1", "halfway")  # a note changes no task file, but it is the holder at work
    assert entry_of(three, 1)["claim"]["renewed"] == pytest.approx(time.time(), abs=30)
    age_lease(three, 1, 50)
    run("--as", "bob", "update", "1", "--meta", "seen=yes", "--force")  # someone else's change is no renewal
    assert entry_of(three, 1)["claim"]["renewed"] < time.time() - 40


def test_releasing_and_completing_end_the_claim(run, three):
    run("--as", "ann", "claim", "1", "--lease", "1h")
    run("--as", "ann", "update", "1", "--status", "pending")
    assert entry_of(three, 1) == {}
    run("--as", "ann", "claim", "1", "--lease", "1h")
    run("--as", "ann", "update", "1", "--status", "completed")
    assert entry_of(three, 1) == {}  # an unshared board keeps no record of completion


def test_stale_lease_in_plain_words(run, three):
    run("--as", "agent-c", "claim", "1", "--lease", "1m")
    age_lease(three, 1, 60 + 4 * 60 + 5)
    store = Store(three)
    fact = claims.facts(store, [run.record(1), run.record(2), run.record(3)])
    assert set(fact) == {1}
    assert fact[1]["lease"]["holder"] == "agent-c" and fact[1]["lease"]["expired"] is True
    assert "held by agent-c, lease expired 4 min ago" in claims.describe(fact[1])
    assert "held by agent-c, lease expired 4 min ago" in run("get", "1").stdout
    assert "lease expired" in run("board").stdout  # a card, wrapped at its width
    run("--as", "agent-c", "renew", "1", "--lease", "15m")
    fresh = claims.facts(Store(three), [run.record(1)])[1]
    assert fresh["lease"]["expired"] is False
    assert claims.describe(fresh)[0].startswith("held by agent-c, lease 15m, expires in 1")


# -- failed attempts ------------------------------------------------------------------------------------


def test_a_caller_is_not_handed_back_what_it_failed_while_other_work_exists(run, three):
    fail(run, 1, "tests fail", "ann")
    entry = entry_of(three, 1)
    assert [(f["by"], f["note"]) for f in entry["failures"]] == [("ann", "tests fail")]
    assert run.json("--as", "ann", "claim")["id"] == 3  # not #1 again
    assert run.json("--as", "bob", "claim")["id"] == 1  # someone else may take it
    run("--as", "bob", "update", "1", "--status", "pending")
    assert run.json("--as", "ann", "claim")["id"] == 1  # nothing else left: its own failed task comes back


def test_three_failures_make_a_task_stuck_until_retried(run, three):
    for caller in ("ann", "bob", "cat"):
        fail(run, 1, f"broke for {caller}", caller)
    refused = run("--as", "dan", "claim", "1", expect=4)
    assert "#1 is stuck: it failed 3 times (last: broke for cat)" in refused.stderr
    assert "--retry" in refused.stderr
    error = stderr_lines(run("--as", "dan", "claim", "1", "--json", expect=4))[-1]["error"]
    assert error["code"] == "refused" and "--retry" in error["message"]
    assert run.json("--as", "dan", "claim")["id"] == 3  # not offered without an id either
    assert [r["id"] for r in run.json("ready")] == []  # nor listed as ready
    assert "stuck: failed 3 times" in claims.describe(claims.facts(Store(three), [run.record(1)])[1])[0]
    assert "stuck" in run("get", "1").stdout
    run("update", "1", "--status", "pending", "--retry")
    assert "failures" not in entry_of(three, 1)
    assert [r["id"] for r in run.json("ready")] == [1]
    assert run.json("--as", "dan", "claim", "1")["owner"] == "dan"


def test_a_failed_gate_records_an_attempt_without_changing_the_task(run, three):
    run("--as", "ann", "claim", "1")
    before = committed(three)
    from taskboard.ops.board import Board

    outcome = Board(Store(three), "ann").fail(1, "gate exit 1")
    assert [e.what for e in outcome.events] == ["failed"]
    after = committed(three)
    assert {name for name in after if after[name] != before.get(name)} == {"journal/ann.jsonl"}
    assert b'"event": "failed", "note": "gate exit 1"' in after["journal/ann.jsonl"]
    assert entry_of(three, 1)["failures"][0]["note"] == "gate exit 1"


# -- where the state lives --------------------------------------------------------------------------


def git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture
def clone(tmp_path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    git("init", "-q", "-b", "main", cwd=repo)
    git("config", "user.email", "t@example.com", cwd=repo)
    git("config", "user.name", "t", cwd=repo)
    write_board(repo / ".tasks", [record(1, blocks=[2]), record(2, blocked_by=[1]), record(3)])
    git("add", "-A", cwd=repo)
    git("commit", "-qm", "plan", cwd=repo)
    return repo


def test_state_outside_git_is_in_the_board(tmp_path):
    assert locate(str(tmp_path / ".tasks")) == (str(tmp_path / ".tasks" / STATE_FOLDER), False)


def test_state_in_a_clone_is_in_gits_common_folder(clone, tmp_path):
    assert locate(str(clone / ".tasks")) == (str(clone / ".git" / "tasks" / ".tasks"), True)
    (clone / "sub").mkdir()
    assert locate(str(clone / "sub" / ".tasks"))[0] == str(clone / ".git" / "tasks" / "sub%2F.tasks")
    git("worktree", "add", "-q", str(tmp_path / "other"), cwd=clone)
    assert locate(str(tmp_path / "other" / ".tasks")) == (str(clone / ".git" / "tasks" / ".tasks"), True)


def test_a_broken_git_file_keeps_the_state_in_the_board(tmp_path):
    (tmp_path / ".git").write_text("not a gitdir line\n")
    assert locate(str(tmp_path / ".tasks")) == (str(tmp_path / ".tasks" / STATE_FOLDER), False)
    (tmp_path / ".git").write_text(f"gitdir: {tmp_path / 'missing'}\n")
    assert locate(str(tmp_path / ".tasks"))[1] is False


def test_worktrees_share_claims_and_completions(clone, tmp_path):
    git("worktree", "add", "-q", str(tmp_path / "other"), cwd=clone)
    here, there = clone / ".tasks", tmp_path / "other" / ".tasks"

    def tasks(board: Path, *args: str, expect: int = 0):
        result = subprocess.run(
            [sys.executable, "-m", "taskboard", "--dir", str(board), *args], capture_output=True, text=True
        )
        assert result.returncode == expect, (args, result.returncode, result.stderr)
        return result

    assert json.loads(tasks(here, "--as", "ann", "claim", "--json").stdout)["id"] == 1
    assert [r["id"] for r in json.loads(tasks(there, "ready", "--json").stdout)] == [3]
    refused = tasks(there, "--as", "bob", "claim", "1", expect=4)
    assert "#1 is held by ann in another worktree" in refused.stderr
    assert json.loads(tasks(there, "--as", "bob", "claim", "--json").stdout)["id"] == 3
    assert [r["id"] for r in json.loads(tasks(here, "ready", "--json").stdout)] == []
    tasks(here, "--as", "ann", "update", "1", "--status", "completed")
    assert "was completed in another worktree" in tasks(there, "--as", "bob", "claim", "1", expect=4).stderr
    tasks(there, "--as", "bob", "update", "3", "--status", "pending")  # a release frees it everywhere
    assert json.loads(tasks(here, "--as", "ann", "claim", "--json").stdout)["id"] == 2
    assert json.loads(tasks(there, "--as", "bob", "claim", "--json").stdout)["id"] == 3
    # the task files stay each worktree's own
    assert json.loads((there / "task_1.json").read_text())["status"] == "pending"
    assert (clone / ".git" / "tasks" / ".tasks").is_dir() and not (here / STATE_FOLDER).exists()


def test_an_expired_lease_in_another_worktree_is_taken_over(clone, tmp_path):
    git("worktree", "add", "-q", str(tmp_path / "other"), cwd=clone)
    here, there = clone / ".tasks", tmp_path / "other" / ".tasks"
    run_here = _runner(here)
    run_there = _runner(there)
    run_here("--as", "ann", "claim", "1", "--lease", "1m")
    assert run_there("--as", "bob", "claim", "1", expect=4).exit_code == 4
    age_lease(here, 1, 61)
    took = run_there("--as", "bob", "claim", "1", "--json")
    assert any("took #1 over from ann" in line.get("warning", "") for line in stderr_lines(took))
    # ann's copy still says she holds it, but the clone's claim is bob's now
    refused = run_here("--as", "ann", "update", "1", "--status", "completed", expect=4)
    assert "taken over by bob" in refused.stderr
    assert "taken over by bob" in run_here("--as", "ann", "renew", "1", expect=4).stderr


@contextmanager
def immutable(path: Path) -> Iterator[None]:
    """The file made immutable (chattr +i), so that a rename over it fails with EPERM,
    as it does for any user: the first move of a change refused by the file system."""
    subprocess.run(["chattr", "+i", str(path)], check=True)
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)


@pytest.mark.parametrize("failed", [False, True])
def test_a_release_refused_when_its_file_will_not_move_changes_no_runtime_state(clone, tmp_path, failed):
    git("config", "tasks.worktrees", "branch", cwd=clone)  # the other worktree has its own board
    git("worktree", "add", "-q", "-b", "feat", str(tmp_path / "other"), cwd=clone)
    here, there = clone / ".tasks", tmp_path / "other" / ".tasks"
    run_here, run_there = _runner(here), _runner(there)
    run_here("--as", "ann", "claim", "1", "--lease", "1h")
    before = entry_of(here, 1)
    args = ["--as", "ann", "release", "1"] + (["--failed", "--note", "flaky"] if failed else [])
    with immutable(here / "task_1.json"):
        refused = run_here(*args, expect=None)
    assert refused.exit_code != 0 and "nothing was changed" in refused.stderr
    assert run_here.record(1)["status"] == "in_progress" and run_here.record(1)["owner"] == "ann"
    assert entry_of(here, 1) == before  # the claim, its lease, and no failure counted
    assert "held by ann in another worktree" in run_there("--as", "bob", "claim", "1", expect=4).stderr
    run_here(*args)  # the release goes through once the file may move
    assert run_there.json("--as", "bob", "claim", "1")["owner"] == "bob"


def test_a_killed_release_replayed_late_leaves_the_claim_its_owner_made_since_in_another_worktree(clone, tmp_path):
    """ann's release in one worktree is killed once its file moved (and the state followed
    it); ann claims the task again in a branch worktree, with a lease; the first
    worktree's next command replays the release: it ends only the claim the release
    ended (it forgot ann's new claim and its lease: bob then took the task there)."""
    git("config", "tasks.worktrees", "branch", cwd=clone)
    git("worktree", "add", "-q", "-b", "feat", str(tmp_path / "other"), cwd=clone)
    here, there = clone / ".tasks", tmp_path / "other" / ".tasks"
    run_here, run_there = _runner(here), _runner(there)
    run_here("--as", "ann", "claim", "1")
    env = {**os.environ, "TASKS_TEST_CRASH_AFTER": "3"}
    killed = subprocess.run(
        [sys.executable, "-m", "taskboard", "--dir", str(here), "--as", "ann", "release", "1"], env=env
    )
    assert killed.returncode == -9
    run_there("--as", "ann", "claim", "1", "--lease", "1h")
    claim = entry_of(there, 1)["claim"]
    run_here("list")  # the recovery completes the release
    assert run_here.record(1)["status"] == "pending"
    assert entry_of(here, 1)["claim"] == claim
    assert "held by ann in another worktree" in run_here("--as", "bob", "claim", "1", expect=4).stderr


def _runner(board: Path):
    from conftest import Run

    return Run(board)


# -- damaged state --------------------------------------------------------------------------------------


def test_damaged_state_is_reported_read_as_empty_and_fixed(run, three):
    run("--as", "ann", "claim", "1", "--lease", "1h")
    folder = three / STATE_FOLDER
    (entry,) = [p for p in folder.iterdir() if p.suffix == ".json"]
    entry.write_text('{"claim": "half a wri')
    (folder / "0000000000ff.json").write_text("[]")
    assert run("--as", "bob", "claim", "1", expect=4).exit_code == 4  # the task file still says ann holds it
    checked = run("check", "--json", expect=6)
    problems = json.loads(checked.stdout)["problems"]
    assert {p["rule"] for p in problems} == {"state"} and len(problems) == 2
    assert all(str(folder) in p["file"] for p in problems)
    fixed = run("check", "--fix", "--json")
    assert json.loads(fixed.stdout)["ok"] is True
    assert run("check", "--json").exit_code == 0
    assert not entry.exists()


def test_a_state_lock_held_elsewhere_is_busy_and_a_killed_holder_frees_it(clone):
    board = clone / ".tasks"
    folder, shared = locate(str(board))
    assert shared
    os.makedirs(folder, exist_ok=True)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, os, sys\n"
            "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)\n"
            "fcntl.flock(fd, fcntl.LOCK_EX)\n"
            "print('locked', flush=True)\n"
            "sys.stdin.read()\n",
            os.path.join(folder, ".lock"),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    run = _runner(board)
    try:
        assert holder.stdout.readline() == "locked\n"
        before = snapshot(board)
        busy = run("--timeout", "0.2", "--as", "ann", "claim", "--json", expect=5)
        assert stderr_lines(busy)[-1]["error"]["code"] == "busy"
        assert snapshot(board) == before
    finally:
        holder.kill()
        holder.wait(timeout=10)
    assert run.json("--as", "ann", "claim")["id"] == 1


def test_a_lock_that_is_not_a_file_is_refused(clone):
    board = clone / ".tasks"
    folder, _ = locate(str(board))
    os.makedirs(os.path.join(folder, ".lock"))
    result = _runner(board)("--as", "ann", "claim", expect=6)
    assert ".lock" in result.stderr and "Traceback" not in result.stderr


def test_state_reads_tolerate_anything(tmp_path):
    state = State(str(tmp_path / ".tasks"))
    os.makedirs(state.folder)
    cases = {
        "00000000000a": b"\xff\xfe",
        "00000000000b": b'{"uid": "00000000000b", "claim": {"owner": 1}}',
        "00000000000c": b'{"uid": "00000000000c", "failures": [{"by": "x", "at": "y", "note": ""}]}',
        "00000000000d": b'{"uid": "wrong"}',
        "00000000000e": b'{"uid": "00000000000e", "claim": {"owner": "a", "board": "b", "at": 1, "renewed": 1, "lease": -1}}',
    }
    for uid, data in cases.items():
        Path(state.folder, f"{uid}.json").write_bytes(data)
    os.mkdir(Path(state.folder, "00000000000f.json"))
    for uid in [*cases, "00000000000f"]:
        entry = state.read(uid)
        assert entry.damaged and entry.is_empty(), uid
    assert len(state.damaged()) == 6


def test_check_drops_a_claim_the_task_file_no_longer_bears_out(clone, tmp_path):
    git("worktree", "add", "-q", str(tmp_path / "other"), cwd=clone)
    here, there = clone / ".tasks", tmp_path / "other" / ".tasks"
    run_here, run_there = _runner(here), _runner(there)
    run_here("--as", "ann", "claim", "1")
    run_here("--as", "ann", "done", "3")
    # a checkout puts the files back as they were; the shared state still says ann holds #1 here
    git("checkout", "--", ".tasks/task_1.json", ".tasks/task_3.json", cwd=clone)
    assert "held by ann in another worktree" in run_there("--as", "bob", "claim", "1", expect=4).stderr
    run_here("init")  # wire the clone, so that what check finds is only the runtime state's
    checked = json.loads(run_here("check", "--json", expect=6).stdout)
    messages = sorted(p["message"] for p in checked["problems"])
    # the file that ended ann's claim wins (DESIGN §13): the claim is dropped, not reported
    assert messages == ["#3: the runtime state says it is completed here, but its file says pending"]
    elsewhere = json.loads(run_there("check", "--json", expect=None).stdout)["problems"]
    assert [p for p in elsewhere if p["rule"] == "state"] == []  # the other worktree's marks are not its own
    fixed = json.loads(run_here("check", "--fix", "--json").stdout)
    assert fixed["ok"] is True and all(p["fixed"] for p in fixed["problems"])
    assert run_there.json("--as", "bob", "claim", "1")["owner"] == "bob"
    assert run_here("check", "--json").exit_code == 0


def test_a_change_in_the_other_worktree_is_no_reopen(clone, tmp_path):
    """A completion in one worktree keeps the task closed in another whose copy still
    says pending, also once a change there rewrote that copy (an edge to it: its `blocks`
    grew and its `updatedAt` moved past the completion): that write is no reopen. A
    reopen that reaches the copy later (another writer's, merged in) ends it."""
    here, there = clone / ".tasks", tmp_path / "other" / ".tasks"
    _runner(here)("init")  # wire the clone: its merges go through the board's merge driver
    git("add", "-A", cwd=clone)
    git("commit", "-qm", "wired", cwd=clone)
    git("worktree", "add", "-q", "-b", "other", str(tmp_path / "other"), cwd=clone)
    run_here, run_there = _runner(here), _runner(there)
    run_here("--as", "ann", "done", "3")
    after_this_second(time.time())  # the rewrite names a later second than the completion
    run_there("create", "Follow-up", "--blocked-by", "3")
    assert json.loads((there / "task_3.json").read_text())["blocks"] == [4]
    assert 3 not in [r["id"] for r in run_there.json("ready")]
    assert "was completed in another worktree" in run_there("--as", "bob", "claim", "3", expect=4).stderr
    git("add", "-A", cwd=tmp_path / "other")
    git("commit", "-qm", "follow-up", cwd=tmp_path / "other")
    # another writer (DESIGN §13) reopens #3 in the first worktree, later; the second merges it
    after_this_second(time.time())
    reopened = json.loads((here / "task_3.json").read_text())
    reopened.update(status="pending", updatedAt=iso(time.time()))
    (here / "task_3.json").write_text(json.dumps(reopened, indent=2) + "\n")
    git("commit", "-qam", "reopened by hand", cwd=clone)
    git("merge", "-q", "--no-edit", "main", cwd=tmp_path / "other")
    merged = json.loads((there / "task_3.json").read_text())
    assert (merged["status"], merged["blocks"]) == ("pending", [4])
    assert 3 in [r["id"] for r in run_there.json("ready")]
    assert run_there.json("--as", "bob", "claim", "3")["owner"] == "bob"


def test_a_completion_mark_yields_only_to_a_file_written_in_a_later_second():
    """The one rule claim and check follow (disk.state.reopened_since): a completion made
    in another worktree, or on this board, gives way to a task file that says open and
    was written after it; `updatedAt` names a second, so a file of the mark's own second
    is not known to be later, an older one is a checkout that rewound the completion, and
    a version this board wrote itself while the mark stood (`kept`) is no reopen."""
    at = 1_800_000_000.75
    here = "/here/.tasks"
    done = {"board": "/elsewhere/.tasks", "by": "ann", "at": at}

    def written(status: str, moment: float) -> dict:
        return {"status": status, "updatedAt": iso(moment)}

    assert reopened_since(written("pending", at + 1), done, here)
    assert reopened_since(written("in_progress", at + 1), done, here)
    assert not reopened_since(written("pending", at - 0.5), done, here)  # the same second
    assert not reopened_since(written("pending", at - 1), done, here)  # rewound
    assert not reopened_since(written("completed", at + 1), done, here)
    assert not reopened_since({"status": "pending"}, done, here)  # no time: nothing says it is later
    assert not reopened_since(written("pending", at + 1), None, here)
    kept = {**done, "kept": {here: iso(at + 5)}}
    assert not reopened_since(written("pending", at + 5), kept, here)  # this board's own write
    assert reopened_since(written("pending", at + 6), kept, here)  # a later one merged in
    assert reopened_since(written("pending", at + 5), kept, "/third/.tasks")  # another board's
    assert reopened_since(written("pending", at + 1), {**done, "kept": "garbage"}, here)


# -- waking up ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["inotify", "poll"])
def test_a_watcher_wakes_on_a_replaced_file_and_not_on_dot_names(tmp_path, kind):
    from taskboard.disk import watch

    folder = tmp_path / "board"
    folder.mkdir()
    watcher = watch.Inotify([str(folder)]) if kind == "inotify" else watch.Poller([str(folder)])
    try:
        watcher.arm()
        (folder / ".lock").write_text("")  # what every command touches: no wake
        if kind == "inotify":
            assert watcher.wait(0.2) is False
        (folder / ".task_1.json.tmp").write_text("{}")
        os.replace(folder / ".task_1.json.tmp", folder / "task_1.json")
        assert watcher.wait(30) is True
    finally:
        watcher.close()
