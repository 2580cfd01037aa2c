"""`tasks sync` killed at any instant, and two syncs at once (issue 19, items 8, 11, 14):
real clones of a bare remote, every `tasks` and `git` a real process, each kill -9 at an
exact point (the sync's own test hook, or a merge driver and a post-merge hook that kill
their whole process group, as a kill inside git's merge would)."""

from __future__ import annotations

import json
import os
import signal
import subprocess

import pytest
from gitboard import Fleet, Machine, plan
from invariants import problems

POINTS = ["committed", "merged", "pushed", "marked", "board", "head", "index-locked"]


def diverged(fleet: Fleet) -> tuple[Machine, Machine]:
    """a and b share the plan, then each does work of its own: b's is pushed first."""
    a, b = fleet.planned("a", "b")
    a.tasks("claim", "1", owner="amy")
    a.tasks("done", "1", owner="amy")
    a.tasks("create", "From a", "--blocked-by", "2")
    b.tasks("claim", "4", owner="bob")
    b.tasks("done", "4", owner="bob")
    b.tasks("create", "From b", "--blocked-by", "3")
    b.tasks("sync")
    return a, b


def nothing_left(machine: Machine) -> None:
    git_dir = machine.top / ".git"
    for name in ("index.lock", "MERGE_HEAD", "tasks-merge.json"):
        assert not (git_dir / name).exists(), name
    assert not [p for p in git_dir.iterdir() if p.name.startswith("tasks-sync-")]


def agreed(*machines: Machine) -> None:
    """Every board the same by uid, sound, committed, each task once."""
    boards = [m.by_uid() for m in machines]
    assert all(board == boards[0] for board in boards)
    subjects = [subject for subject, *_ in boards[0].values()]
    assert sorted(subjects) == sorted(set(subjects))
    for machine in machines:
        assert problems(machine.board) == []
        assert machine.json("check")["ok"] is True
        assert machine.git("status", "--porcelain").stdout == ""
        nothing_left(machine)


@pytest.mark.parametrize("point", POINTS)
def test_a_sync_killed_at_any_step_is_finished_by_the_next(fleet, point):
    a, b = diverged(fleet)
    killed = a.spawn("sync", TASKS_TEST_SYNC_KILL=point)
    killed.communicate(timeout=120)
    assert killed.returncode == -signal.SIGKILL
    assert a.tasks("sync").returncode == 0
    b.tasks("sync")
    a.tasks("sync")
    agreed(a, b)
    board = a.by_uid()
    assert sorted(s for s, status, *_ in board.values() if status == "completed") == ["Docs", "Lexer"]
    assert sorted(s for s, *_ in board.values()) == ["Checker", "Docs", "From a", "From b", "Lexer", "Parser"]


KILL_GROUP = "#!/bin/sh\nkill -9 0\n"  # every process of the group: the hook or driver, git, and tasks sync


def test_a_kill_inside_the_merge_driver_or_the_post_merge_hook_jams_nothing(fleet):
    a, b = diverged(fleet)
    killer = fleet.root / "kill-group"
    killer.write_text(KILL_GROUP)
    killer.chmod(0o755)
    a.git("config", "merge.tasks.driver", f"{killer} %O %A %B %P")
    hooks = a.top / ".git" / "hooks"
    (hooks / "post-merge.local").write_text(KILL_GROUP)
    (hooks / "post-merge.local").chmod(0o755)
    first = a.spawn("sync")
    first.communicate(timeout=120)
    assert first.returncode == 0, first.stderr  # no driver and no hook runs inside sync: nothing to kill
    nothing_left(a)
    b.tasks("create", "More from b")
    b.tasks("sync")
    assert a.tasks("sync").returncode == 0
    b.tasks("sync")
    agreed(a, b)


def test_two_syncs_of_one_clone_the_second_waits_for_the_first(fleet, tmp_path):
    a, b = diverged(fleet)
    fifo = tmp_path / "hold"
    os.mkfifo(fifo)
    first = a.spawn("sync", TASKS_TEST_SYNC_WAIT=f"pushed:{fifo}")
    reached = tmp_path / "hold.reached"
    while not reached.exists():  # the first sync stops after its push, holding the sync
        assert first.poll() is None, first.communicate()
        os.sched_yield()
    a.tasks("create", "Made meanwhile")
    second = a.spawn("sync", "--json")
    assert second.stderr is not None
    line = second.stderr.readline()  # it says it waits, and does
    assert json.loads(line) == {"warning": "another sync of this clone is running; waiting for it"}
    assert second.poll() is None
    with open(fifo, "wb") as f:
        f.write(b"go")
    out, err = first.communicate(timeout=120)
    assert first.returncode == 0, err
    out, err = second.communicate(timeout=120)
    assert second.returncode == 0, err
    assert json.loads(out)["pushed"] is True
    b.tasks("sync")
    agreed(a, b)
    assert "Made meanwhile" in [s for s, *_ in b.by_uid().values()]


def test_an_id_that_reached_the_remote_never_moves(fleet):
    a, b = fleet.planned("a", "b")
    b.tasks("create", "Made first, not pushed")  # #5 on b
    a.tasks("create", "Pushed")  # #5 on a, created later
    a.tasks("sync")
    came = b.json("sync")
    assert came["notes"] == [came["notes"][0]] and "#5 became #6" in came["notes"][0]
    a.tasks("sync")
    for machine in (a, b):
        records = machine.records()
        assert (records[5]["subject"], records[6]["subject"]) == ("Pushed", "Made first, not pushed")
    agreed(a, b)
    # both clones create again; the one that syncs second moves, whatever was created first
    a.tasks("create", "a's seventh")
    b.tasks("create", "b's seventh")
    b.tasks("sync")
    a.tasks("sync")
    b.tasks("sync")
    assert (a.records()[7]["subject"], a.records()[8]["subject"]) == ("b's seventh", "a's seventh")
    agreed(a, b)


def test_a_waiter_brings_the_board_in_when_work_it_waits_on_was_finished_elsewhere(fleet):
    """Issue 19, item 7: #2 waits on #1, which another clone completes and syncs."""
    a, b = fleet.planned("a", "b")
    a.tasks("claim", "1", owner="amy")
    a.tasks("claim", "4", owner="amy")
    b.tasks("sync")
    waiting = b.spawn("claim", "--wait", "30", "--json", TASKS_OWNER="bob")
    a.tasks("done", "1", owner="amy")
    a.tasks("sync")
    out, err = waiting.communicate(timeout=60)
    assert waiting.returncode == 0, err
    took = json.loads(out)
    assert (took["id"], took["owner"], took["status"]) == (2, "bob", "in_progress")
    assert b.records()[1]["status"] == "completed"
    changed = sorted(line[3:] for line in b.git("status", "--porcelain").stdout.splitlines())
    assert changed == [".tasks/journal/bob.jsonl", ".tasks/task_2.json"]  # the claim; the completion is committed


def test_a_waiter_pushes_its_own_completions_so_waiters_elsewhere_are_freed(fleet):
    """The README loop across clones syncs nowhere: a's agent completes #1 and goes back to
    waiting; b's waiter, blocked on #1, must get #2 without anyone running sync."""
    a, b = fleet.planned("a", "b")
    a.tasks("claim", "4", owner="cat")
    a.tasks("claim", "1", owner="amy")
    b.tasks("sync")
    waiting_b = b.spawn("claim", "--wait", "40", "--json", TASKS_OWNER="bob")
    a.tasks("done", "1", owner="amy")  # no sync: the completion is only on a
    waiting_a = a.spawn("claim", "3", "--wait", "40", "--json", TASKS_OWNER="amy")  # #3 waits on #2
    out, err = waiting_b.communicate(timeout=90)
    assert waiting_b.returncode == 0, err
    assert json.loads(out)["id"] == 2
    waiting_a.kill()
    waiting_a.communicate(timeout=30)
    assert b.records()[1]["status"] == "completed"


HELD = "were not pushed"  # the waiter's word for the code commits it leaves to the user


def on_remote(fleet: Fleet, commit: str) -> bool:
    """Whether the remote holds `commit` at all (an object a push sent, reachable or not)."""
    found = subprocess.run(
        ["git", "--git-dir", str(fleet.remote), "cat-file", "-e", f"{commit}^{{commit}}"], env=fleet.env
    )
    return found.returncode == 0


def test_a_waiters_sync_pushes_the_board_but_never_the_users_code_commits(fleet):
    """A waiter syncs by itself (work ended elsewhere; its own completions must leave): it
    pushes the board only. b's unreviewed code commit stays on b until b's user runs
    `tasks sync` (or git push); the boards still meet, and each waiter gets its task."""
    a, b = fleet.planned("a", "b")
    a.tasks("claim", "1", owner="amy")
    a.tasks("claim", "4", owner="cat")
    b.tasks("sync")
    code = b.commit_file("app.py", "print('not reviewed yet')\n", "code nobody reviewed")
    waiting_b = b.spawn("claim", "--wait", "60", "--json", TASKS_OWNER="bob")  # #2 waits on #1
    a.tasks("done", "1", owner="amy")
    a.tasks("sync")
    out, err = waiting_b.communicate(timeout=90)  # the completion came in through the waiter's sync
    assert waiting_b.returncode == 0, err
    assert json.loads(out)["id"] == 2
    assert not on_remote(fleet, code)
    said = [json.loads(line)["warning"] for line in err.splitlines() if HELD in line]
    assert len(said) == 1 and code[:12] in said[0], err  # said once, naming the commit
    b.tasks("done", "2", owner="bob")  # no sync: the completion is only on b
    waiting_a = a.spawn("claim", "3", "--wait", "60", "--json", TASKS_OWNER="amy")  # #3 waits on #2
    waiting_b = b.spawn("claim", "4", "--wait", "60", "--json", TASKS_OWNER="bob")  # b's waiter pushes #2's end
    out, err = waiting_a.communicate(timeout=90)
    assert waiting_a.returncode == 0, err
    assert json.loads(out)["id"] == 3
    waiting_b.kill()
    waiting_b.communicate(timeout=30)
    assert not on_remote(fleet, code)
    assert b.git("merge-base", "--is-ancestor", code, "HEAD").returncode == 0  # b's branch still has it
    assert (b.top / "app.py").read_text() == "print('not reviewed yet')\n"
    pushed = fleet.env | {"GIT_DIR": str(fleet.remote)}
    remote_files = subprocess.run(
        ["git", "ls-tree", "-r", "--name-only", "main"], env=pushed, capture_output=True, text=True
    )
    assert "app.py" not in remote_files.stdout.split()
    assert b.tasks("sync").returncode == 0  # the user asks: now the branch goes, code and all (DESIGN §9)
    assert on_remote(fleet, code)
    a.tasks("sync")
    b.tasks("sync")
    agreed(a, b)
    assert (a.top / "app.py").exists()


def remote_file(fleet: Fleet, path: str) -> str:
    """`path` as the remote's main branch holds it."""
    shown = ["git", "--git-dir", str(fleet.remote), "show", f"main:{path}"]
    return subprocess.run(shown, env=fleet.env, capture_output=True, text=True, check=True).stdout


def held_until_pushed(machine: Machine, fifo, *args: str, point: str = "pushed", **env: str):
    """`tasks ARGS` spawned, returned once its sync has reached `point` (pushed, by
    default) and stands there until the test writes to `fifo` (the sync's
    TASKS_TEST_SYNC_WAIT hook)."""
    os.mkfifo(fifo)
    spawned = machine.spawn(*args, TASKS_TEST_SYNC_WAIT=f"{point}:{fifo}", **env)
    while not fifo.with_name(f"{fifo.name}.reached").exists():
        assert spawned.poll() is None, spawned.communicate()
        os.sched_yield()
    return spawned


def go_on(fifo) -> None:
    with open(fifo, "wb") as f:
        f.write(b"go")


def lib_changed_on_the_remote(a: Machine, b: Machine, first: str, second: str) -> None:
    """lib.py committed on a as `first` and synced to both clones, then changed on a to
    `second` and synced: b has not seen the change."""
    a.commit_file("lib.py", first, "lib")
    a.tasks("sync")
    b.tasks("sync")
    a.commit_file("lib.py", second, "lib changed")
    a.tasks("sync")


def test_a_waiter_never_pushes_a_merge_that_threw_the_remotes_code_away(fleet, tmp_path):
    """b merged the remote's change to lib.py keeping its own version (`merge -s ours`):
    no commit of b changes lib.py by itself (the merge equals its first parent), yet
    pushing b's branch would undo a's change on the remote. The waiter pushes the board
    alone and names the merge."""
    a, b = fleet.planned("a", "b")
    lib_changed_on_the_remote(a, b, "v1\n", "v2\n")
    a.tasks("claim", "4", owner="cat")
    b.git("fetch", "-q", "origin")
    b.git("merge", "-q", "-s", "ours", "origin/main", "-m", "keep-mine")
    kept = b.git("rev-parse", "HEAD").stdout.strip()
    b.tasks("create", "Made on b, not pushed")  # the board holds what the remote lacks: the waiter syncs
    fifo = tmp_path / "hold"
    waiting = held_until_pushed(b, fifo, "claim", "4", "--wait", "60", "--json", TASKS_OWNER="bob")
    assert remote_file(fleet, "lib.py") == "v2\n"
    assert "Made on b, not pushed" in remote_file(fleet, ".tasks/task_5.json")
    a.tasks("release", "4", owner="cat")  # before the waiter goes on: it claims once its sync is done
    go_on(fifo)
    out, err = waiting.communicate(timeout=90)
    assert waiting.returncode == 0, err
    assert json.loads(out)["id"] == 4
    said = [json.loads(line)["warning"] for line in err.splitlines() if HELD in line]
    assert len(said) == 1 and kept[:12] in said[0] and "1 commit(s)" in said[0], err
    assert not on_remote(fleet, kept)
    assert (b.top / "lib.py").read_text() == "v1\n"  # b keeps its choice, to push when its user says


def test_a_waiter_on_a_branch_the_remote_no_longer_has_pushes_nothing_and_says_nothing(fleet, tmp_path):
    """b's branch was deleted on the remote (its tracking ref stays, stale): the waiter's
    sync creates no branch there, and says nothing of commits "not pushed" by a sync that
    pushed nothing at all."""
    a, b = fleet.planned("a", "b")
    b.git("checkout", "-q", "-b", "feature")
    b.commit_file("app.py", "print('not reviewed yet')\n", "code nobody reviewed")
    b.git("push", "-q", "-u", "origin", "feature")
    a.git("push", "-q", "origin", "--delete", "feature")  # b's origin/feature is left as it was
    a.tasks("claim", "4", owner="cat")
    b.tasks("create", "Made on b, not pushed")  # the board holds what origin/feature lacks: the waiter syncs
    fifo = tmp_path / "hold"
    waiting = held_until_pushed(b, fifo, "claim", "4", "--wait", "60", "--json", point="merged", TASKS_OWNER="bob")
    a.tasks("release", "4", owner="cat")
    go_on(fifo)
    out, err = waiting.communicate(timeout=90)
    assert waiting.returncode == 0, err
    assert json.loads(out)["id"] == 4
    assert HELD not in err
    heads = ["git", "--git-dir", str(fleet.remote), "for-each-ref", "--format=%(refname)", "refs/heads/"]
    assert subprocess.run(heads, env=fleet.env, capture_output=True, text=True).stdout.split() == ["refs/heads/main"]


def test_a_waiters_warning_names_only_commits_left_on_the_branch(fleet, tmp_path):
    """b and a both change lib.py (apart, so git merges it cleanly): the waiter's merge of
    the two differs from both parents outside the board, but it is not kept (the branch
    joins the board pushed alone instead): the warning names b's commit alone."""
    a, b = fleet.planned("a", "b")
    lib_changed_on_the_remote(a, b, "one\ntwo\nthree\nfour\nfive\n", "one\ntwo\nthree\nfour\nFIVE\n")
    a.tasks("claim", "4", owner="cat")
    code = b.commit_file("lib.py", "ONE\ntwo\nthree\nfour\nfive\n", "lib: one")
    b.tasks("create", "Made on b, not pushed")
    fifo = tmp_path / "hold"
    waiting = held_until_pushed(b, fifo, "claim", "4", "--wait", "60", "--json", TASKS_OWNER="bob")
    assert remote_file(fleet, "lib.py") == "one\ntwo\nthree\nfour\nFIVE\n"
    a.tasks("release", "4", owner="cat")
    go_on(fifo)
    out, err = waiting.communicate(timeout=90)
    assert waiting.returncode == 0, err
    assert json.loads(out)["id"] == 4
    said = [json.loads(line)["warning"] for line in err.splitlines() if HELD in line]
    assert len(said) == 1 and "1 commit(s)" in said[0] and code[:12] in said[0], err
    assert (b.top / "lib.py").read_text() == "ONE\ntwo\nthree\nfour\nFIVE\n"
    assert not on_remote(fleet, code)


@pytest.mark.parametrize("point", ["merged", "pushed", "board"])
def test_a_waiter_takes_a_task_given_back_elsewhere_while_its_own_sync_brought_the_old_claim(fleet, tmp_path, point):
    """b's waiter syncs (its board holds what the remote lacks) and fetches the board
    while cat still holds #4; cat gives #4 back on a while that sync stands at `point`,
    and a never syncs. The sync lands cat's claim: it must not push that claim back
    over the release (it did: #4 stayed claimed for cat on the remote, for good), and
    the waiter must take #4 without another sync (it waited forever)."""
    a, b = fleet.planned("a", "b")
    a.tasks("claim", "4", owner="cat")
    a.tasks("sync")
    b.tasks("create", "Made on b")  # the waiter syncs at its first poll
    fifo = tmp_path / "hold"
    waiting = held_until_pushed(b, fifo, "claim", "4", "--wait", "60", "--json", point=point, TASKS_OWNER="bob")
    a.tasks("release", "4", owner="cat")
    go_on(fifo)
    out, err = waiting.communicate(timeout=90)
    assert waiting.returncode == 0, err
    assert (json.loads(out)["id"], json.loads(out)["owner"]) == (4, "bob")
    assert [(d["state"], d["owner"]) for d in fleet.claim_refs().values() if d["task"] == 4] == [("claimed", "bob")]
    b.tasks("sync")
    a.tasks("sync")
    b.tasks("sync")
    agreed(a, b)
    assert (a.records()[4]["status"], a.records()[4]["owner"]) == ("in_progress", "bob")


@pytest.mark.parametrize("kill", ["pushed", ""])
def test_a_waiters_sync_that_pushes_the_board_alone_renumbers_once_even_when_killed(fleet, kill, tmp_path):
    """The board pushed alone is not a commit of b's branch: when the waiter's sync is
    killed right after that push, the next sync must still bring b to the board it pushed,
    renumbering and all (an id that reached the remote never moves), journaled once."""
    a, b = fleet.planned("a", "b")
    b.tasks("sync")
    code = b.commit_file("app.py", "print('not reviewed yet')\n", "code nobody reviewed")
    b.tasks("create", "Made on b first, not pushed")  # #5 on b
    a.tasks("create", "Pushed from a")  # #5 on a
    a.tasks("sync")
    a.tasks("claim", "4", owner="cat")  # held through the claim refs alone: both boards say #4 is open
    fifo = tmp_path / "hold"
    if kill:  # the waiter's sync pushes the board alone and dies; the next waiter claims what a frees
        killed = b.spawn("claim", "4", "--wait", "60", TASKS_OWNER="bob", TASKS_TEST_SYNC_KILL=kill)
        killed.communicate(timeout=90)
        assert killed.returncode == -signal.SIGKILL
        waiting = b.spawn("claim", "4", "--wait", "60", "--json", TASKS_OWNER="bob")
    else:  # the waiter's sync pushes the board alone, then stands until a has freed #4
        waiting = held_until_pushed(b, fifo, "claim", "4", "--wait", "60", "--json", TASKS_OWNER="bob")
    log = ["git", "--git-dir", str(fleet.remote), "log", "--format=%H %s", "main"]
    pushed = subprocess.run(log, env=fleet.env, capture_output=True, text=True, check=True).stdout
    assert "(alone: this branch's other commits were not pushed)" in pushed  # the board-only commit
    assert not on_remote(fleet, code)
    a.tasks("release", "4", owner="cat")
    a.tasks("sync")
    if not kill:
        go_on(fifo)
    out, err = waiting.communicate(timeout=90)
    assert waiting.returncode == 0, err
    assert json.loads(out)["id"] == 4
    assert not on_remote(fleet, code)
    for machine in (b, a):
        machine.tasks("sync")
        records = machine.records()
        assert (records[5]["subject"], records[6]["subject"]) == ("Pushed from a", "Made on b first, not pushed")
        assert 7 not in records
        entries = machine.json("log")
        assert [(e["task"], e["from"]) for e in entries if e["event"] == "renumbered"] == [(6, 5)]  # journaled once
    a.tasks("sync")
    agreed(a, b)


def test_no_round_trip_to_the_remote_holds_the_board_lock(fleet, tmp_path):
    """Issue 19, item 10: `done` moves its claim ref with the board lock let go, so a
    remote that does not answer does not make `create`, `ready` and `claim` busy."""
    a = fleet.machine("a")
    plan(a)
    a.tasks("claim", "4", owner="amy")
    fifo = tmp_path / "silent"
    os.mkfifo(fifo)
    hook = fleet.remote / "hooks" / "pre-receive"
    hook.write_text(
        f'#!/bin/sh\nif [ -p "{fifo}" ]; then touch "{fifo}.reached"; cat "{fifo}" >/dev/null; rm -f "{fifo}"; fi\n'
    )
    hook.chmod(0o755)
    done = a.spawn("done", "4", "--json", TASKS_OWNER="amy")
    reached = tmp_path / "silent.reached"
    while not reached.exists():  # done is in its push, which the remote holds
        assert done.poll() is None, done.communicate()
        os.sched_yield()
    a.tasks("--timeout", "1", "create", "Meanwhile")
    assert [r["id"] for r in a.json("--timeout", "1", "ready")] == [1, 5]
    assert a.json("--timeout", "1", "claim", "5", "--offline", owner="cat")["owner"] == "cat"  # the remote is silent
    with open(fifo, "wb") as f:
        f.write(b"answer")
    out, err = done.communicate(timeout=60)
    assert done.returncode == 0, err
    assert json.loads(out)["status"] == "completed"
    assert [(d["task"], d["state"]) for d in fleet.claim_refs().values() if d["task"] == 4] == [(4, "done")]


def test_a_claim_whose_lease_runs_is_honoured_when_a_stash_rewound_its_file(tmp_path):
    """Issue 19, item 13: `git stash` under a live lease must not hand the task to another."""
    fleet = Fleet(tmp_path)
    a = fleet.machine("a", remote=False)
    for subject in ("Lexer", "Parser", "Docs"):
        a.tasks("create", subject)
    for path in a.board.glob("task_*.json"):  # the plan was made an hour before the claim
        task = json.loads(path.read_text())
        task["createdAt"] = task["updatedAt"] = "2026-01-01T10:00:00Z"
        path.write_text(json.dumps(task, indent=2, ensure_ascii=False) + "\n")
    a.git("add", "-A")
    a.git("commit", "-q", "-m", "plan")
    a.tasks("claim", "3", "--lease", "10m", owner="amy")
    a.git("stash", "-q", "--include-untracked")  # the claim's file and journal line rewound
    assert a.records()[3]["status"] == "pending"
    assert [r["id"] for r in a.json("ready")] == [1, 2]
    refused = a.tasks("claim", "3", expect=4, owner="bob")
    assert "held by amy" in refused.stderr and "rewound" in refused.stderr
    assert a.json("claim", owner="bob")["id"] == 1
    checked = a.json("check", expect=6)
    assert [p["task"] for p in checked["problems"]] == [3] and "rewound" in checked["problems"][0]["message"]
    done = a.json("done", "3", owner="amy")
    assert (done["status"], done["owner"]) == ("completed", "")
    assert a.json("check")["ok"] is True


def test_the_journal_follows_tasks_by_uid_across_renumbering(fleet):
    """Issue 19, item 12: both clones create and complete their own #5 and sync."""
    a, b = fleet.planned("a", "b")
    for machine, owner in ((a, "amy"), (b, "bob")):
        machine.tasks("create", f"Made by {owner}")
        machine.tasks("claim", "5", owner=owner)
        machine.tasks("done", "5", owner=owner)
    a.tasks("sync")
    b.tasks("sync")  # b's #5 moves to #6: it was not pushed yet
    a.tasks("sync")
    for machine in (a, b):
        assert {r["id"]: r["subject"] for r in machine.records().values() if r["id"] > 4} == {
            5: "Made by amy",
            6: "Made by bob",
        }
        entries = machine.json("log")
        completed = sorted((e["task"], e["actor"]) for e in entries if e["event"] == "completed")
        assert completed == [(5, "amy"), (6, "bob")]
        assert [(e["task"], e["from"]) for e in entries if e["event"] == "renumbered"] == [(6, 5)]  # journaled once
        for task, owner in ((5, "amy"), (6, "bob")):  # each its own events; the renumbering names both
            said = [(e["event"], e["actor"]) for e in machine.json("log", str(task))]
            assert said[:3] == [("created", "root"), ("claimed", owner), ("completed", owner)]
            assert [event for event, _actor in said[3:]] == ["renumbered"]


def test_a_claim_taken_over_on_another_machine_leaves_check_clean_once_synced_in(fleet):
    """The file wins (DESIGN §13) over this clone's claim when a sync brings in the task
    held by someone else: amy's lease ran out and bob took #4 over on another clone."""
    import time

    a, b = fleet.planned("a", "b")
    claimed = a.json("claim", "4", "--lease", "1s", owner="amy")
    expired = time.time() + 1 + 1  # a lease of D runs out no later than D + 1 s after the claim (DESIGN §7)
    a.tasks("sync")
    b.tasks("sync")
    time.sleep(max(0.0, expired - time.time()))  # the condition a takeover waits for is the clock itself
    took = b.json("claim", "4", owner="bob")
    assert (claimed["owner"], took["owner"]) == ("amy", "bob")
    b.tasks("sync")
    a.tasks("sync")
    assert (a.records()[4]["status"], a.records()[4]["owner"]) == ("in_progress", "bob")
    assert a.json("check") == {"ok": True, "problems": []}


@pytest.mark.parametrize("point", ["marked", "board", "head"])
def test_a_landing_cut_off_before_head_moved_is_merged_under_the_commit_made_after_it(fleet, point):
    """A sync killed after it marked its landing, after it wrote the board's files (HEAD
    not moved yet: the case that failed), or after HEAD moved; the user then commits (git
    alone) and syncs. Where the board on disk came from the remote (what the landing
    brought) and HEAD did not, the next sync must merge that landing in, not commit the
    remote's old values as edits of this clone, which a three-way merge sets against the
    remote's newer ones. b's hand edit completes #1
    keeping the second of its claim (a change in the same second as another reads the
    same): committed as c's own edit, the claim won that tie and undid the completion on
    the remote, and check said sound (found by the README's loop, three clones)."""
    b, c = fleet.planned("b", "c")
    b.tasks("claim", "1", owner="bob")
    b.tasks("sync")
    killed = c.spawn("sync", TASKS_TEST_SYNC_KILL=point)
    killed.communicate(timeout=120)
    assert killed.returncode == -signal.SIGKILL
    done = json.loads((b.board / "task_1.json").read_text())
    done["status"] = "completed"  # by hand, its updatedAt kept: the claim's second
    (b.board / "task_1.json").write_text(json.dumps(done, indent=2) + "\n")
    b.git("commit", "-q", "-am", "Lexer done (by hand)")
    b.tasks("sync")
    c.commit_file("notes.txt", "c's own work\n", "c: notes")
    synced = c.tasks("sync")
    assert "notes.txt" in c.git("ls-tree", "--name-only", "origin/main").stdout, synced
    assert json.loads(remote_file(fleet, ".tasks/task_1.json"))["status"] == "completed"
    b.tasks("sync")
    agreed(b, c)
    assert c.records()[1]["status"] == "completed"
