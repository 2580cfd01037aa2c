"""Many machines, one git remote (DESIGN §9): a bare repository as the remote, clones
of it as the machines, every `tasks` and `git` a real process. `tasks sync` brings the
boards together; claims are won on the remote's claim refs, exactly once."""

from __future__ import annotations

import calendar
import json
import subprocess
import sys
import time

import pytest
from conftest import after_this_second
from gitboard import TASKS, Fleet, Machine, plan
from invariants import problems


def test_sync_in_turn_until_every_board_agrees(fleet):
    a, b, c = fleet.planned("a", "b", "c")
    c.git("config", "pull.rebase", "true")  # sync merges whatever pull does
    assert b.by_uid() == a.by_uid() and len(b.records()) == 4
    b.tasks("claim", "1", owner="bob")
    b.tasks("done", "1", owner="bob")
    b.tasks("create", "Bench", "--blocked-by", "3")
    c.tasks("create", "Release notes", "--blocked-by", "4")
    a.tasks("update", "4", "--priority", "1")
    came = b.json("sync")
    assert came["pushed"] and came["new"] == [] and came["completed"] == []
    came = c.json("sync")
    assert came["merged"] and came["pushed"]
    assert came["completed"] == [1] and came["unblocked"] == [2]
    assert [c.records()[i]["subject"] for i in came["new"]] == ["Bench"]
    came = a.json("sync")
    assert sorted(a.records()[i]["subject"] for i in came["new"]) == ["Bench", "Release notes"]
    b.tasks("sync")
    c.tasks("sync")
    boards = [m.by_uid() for m in (a, b, c)]
    assert boards[0] == boards[1] == boards[2] and len(boards[0]) == 6
    for machine in (a, b, c):
        assert problems(machine.board) == []
        assert machine.json("check")["ok"] is True
        assert machine.git("status", "--porcelain").stdout == ""
    assert len(c.git("log", "--merges", "--oneline").stdout.splitlines()) >= 1  # merged, not rebased


def test_three_clones_race_for_one_task_and_exactly_one_wins(fleet):
    a, b, c = fleet.planned("a", "b", "c")
    racers = {
        name: subprocess.Popen(
            [*TASKS, "claim", "1", "--json"],
            cwd=machine.top,
            env={**machine.env, "TASKS_OWNER": name},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name, machine in (("amy", a), ("ben", b), ("cat", c))
    }
    results = {name: (p.wait(60), p.stdout.read(), p.stderr.read()) for name, p in racers.items()}
    winners = [name for name, (code, _, _) in results.items() if code == 0]
    assert len(winners) == 1, results
    winner = winners[0]
    for name, (code, _out, err) in results.items():
        if name != winner:
            assert code == 4, results
            error = json.loads(err.strip().splitlines()[-1])["error"]
            assert error["code"] == "refused" and winner in error["message"]
    refs = fleet.claim_refs()
    assert len(refs) == 1
    (doc,) = refs.values()
    assert doc["owner"] == winner and doc["state"] == "claimed" and doc["task"] == 1
    machines = {"amy": a, "ben": b, "cat": c}
    for name, machine in machines.items():
        record = machine.records()[1]
        assert (record["status"], record["owner"]) == (("in_progress", name) if name == winner else ("pending", ""))


def test_a_clone_that_has_not_synced_cannot_take_a_task_claimed_elsewhere(fleet):
    a, b, c = fleet.planned("a", "b", "c")
    b.tasks("claim", "4", owner="bob")  # b does not sync: c sees #4 pending
    assert c.records()[4]["status"] == "pending"
    refused = c.tasks("claim", "4", owner="cat", expect=4)
    assert "bob" in refused.stderr
    assert c.records()[4]["status"] == "pending"
    # claim without an id passes over it to the next ready task
    took = c.json("claim", owner="cat")
    assert took["id"] == 1
    # after a sync, c's ready leaves #4 out even though b never pushed its board
    c.tasks("sync")
    assert c.records()[4]["status"] == "pending"
    assert [r["id"] for r in c.json("ready")] == []
    assert "claimed by bob on another machine (through origin)" in c.tasks("get", "4").stdout
    a.tasks("sync")
    assert 4 not in [r["id"] for r in a.json("ready")]


def test_an_unreachable_remote_refuses_the_claim_unless_offline(fleet, tmp_path):
    a = fleet.machine("a")
    plan(a)
    before = {path.name: path.read_bytes() for path in a.board.glob("task_*.json")}
    a.git("remote", "set-url", "origin", str(tmp_path / "gone.git"))
    done = a.tasks("claim", "1", "--json", owner="amy", expect=5)
    error = json.loads(done.stderr.strip().splitlines()[-1])["error"]
    assert error["code"] == "busy" and error["exit"] == 5 and "origin" in error["message"]
    assert "--offline" in error["message"]  # the command line names its way out
    assert "--offline" in a.tasks("claim", "1", owner="amy", expect=5).stderr
    assert {path.name: path.read_bytes() for path in a.board.glob("task_*.json")} == before
    assert a.tasks("claim", "--json", owner="amy", expect=5)
    # a tool call claims the same way, worded for a tool's caller
    call = [*TASKS, "call"]
    env = {**a.env, "TASKS_OWNER": "amy"}
    for arguments in ({"taskId": 1}, {}):
        payload = json.dumps({"name": "task_claim", "input": arguments})
        done = subprocess.run(call, cwd=a.top, env=env, input=payload, capture_output=True, text=True, timeout=120)
        assert done.returncode == 5, done
        error = json.loads(done.stderr.strip().splitlines()[-1])["error"]
        assert error["code"] == "busy" and error["exit"] == 5 and "offline: true" in error["message"]
        assert "--offline" not in error["message"]
    assert {path.name: path.read_bytes() for path in a.board.glob("task_*.json")} == before
    # sync has no --offline: its refusal does not name it
    synced = a.tasks("sync", "--json", expect=5)
    assert "--offline" not in synced.stderr and "origin" in synced.stderr
    took = a.json("claim", "1", "--offline", owner="amy")
    assert (took["status"], took["owner"]) == ("in_progress", "amy")
    # the claim made offline has no ref: check says so, and once the remote is back --fix pushes it
    report = a.json("check", expect=6)
    assert any(p["rule"] == "claim-ref" and p["task"] == 1 for p in report["problems"])
    a.git("remote", "set-url", "origin", str(fleet.remote))
    assert a.json("check", "--fix")["ok"] is True
    (doc,) = fleet.claim_refs().values()
    assert (doc["owner"], doc["state"], doc["task"]) == ("amy", "claimed", 1)
    assert a.json("check")["ok"] is True


def test_sync_fails_cleanly_when_the_remote_is_unreachable(fleet, tmp_path):
    a, b = fleet.planned("a", "b")
    b.tasks("create", "From b")
    b.tasks("sync")
    a.tasks("update", "4", "--priority", "0")
    before = {path.name: path.read_bytes() for path in a.board.glob("task_*.json")}
    a.git("remote", "set-url", "origin", str(tmp_path / "gone.git"))
    a.tasks("sync", expect=5)
    assert {path.name: path.read_bytes() for path in a.board.glob("task_*.json")} == before
    a.git("remote", "set-url", "origin", str(fleet.remote))
    # a remote that refuses the push (its hook says no): the merge made on the way is undone
    hook = fleet.remote / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'no pushes today' >&2\nexit 1\n")
    hook.chmod(0o755)
    head = a.git("rev-parse", "HEAD").stdout
    done = a.tasks("sync", "--json", expect=4)
    assert "refused the push" in done.stderr
    assert {path.name: path.read_bytes() for path in a.board.glob("task_*.json")} == before
    assert a.git("rev-parse", "HEAD").stdout == head
    hook.unlink()
    came = a.json("sync")
    assert [a.records()[i]["subject"] for i in came["new"]] == ["From b"] and came["pushed"]


def test_release_and_completion_reach_the_refs_and_the_other_boards(fleet):
    a, b = fleet.planned("a", "b")
    b.tasks("claim", "1", owner="bob")
    b.tasks("release", "1", owner="bob")
    assert [doc["state"] for doc in fleet.claim_refs().values()] == ["released"]
    a.tasks("claim", "1", owner="amy")  # a never synced, and wins the released ref
    a.tasks("done", "1", owner="amy")
    (doc,) = fleet.claim_refs().values()
    assert (doc["state"], doc["owner"]) == ("done", "amy")
    refused = b.tasks("claim", "1", owner="bob", expect=4)  # b has not seen the completion yet
    assert "completed" in refused.stderr and "amy" in refused.stderr
    a.tasks("sync")
    came = b.json("sync")
    assert came["completed"] == [1] and came["unblocked"] == [2]
    assert b.records()[1]["status"] == "completed"
    assert [r["id"] for r in b.json("ready")] == [2, 4]


def test_a_ref_for_a_task_completed_here_is_reported_and_fixed(fleet, tmp_path):
    a = fleet.machine("a")
    plan(a)
    a.tasks("claim", "2", owner="amy", expect=4)  # blocked: nothing pushed
    assert fleet.claim_refs() == {}
    a.tasks("claim", "4", owner="amy")
    a.git("remote", "set-url", "origin", str(tmp_path / "gone.git"))
    done = a.tasks("done", "4", "--json", owner="amy")
    assert "was not updated" in done.stderr and "tasks check --fix" in done.stderr  # worded for the shell
    assert a.records()[4]["status"] == "completed"
    a.git("remote", "set-url", "origin", str(fleet.remote))
    report = a.json("check", expect=6)
    assert [p["task"] for p in report["problems"] if p["rule"] == "claim-ref"] == [4]
    assert a.json("check", "--fix")["ok"] is True
    assert [doc["state"] for doc in fleet.claim_refs().values()] == ["done"]


def test_a_claimer_killed_between_the_ref_and_the_task_is_settled(fleet):
    a = fleet.machine("a")
    plan(a)
    # the state a claimer leaves when killed right after its push: the ref names amy,
    # the task file is untouched (made here with the module's own push, as the claim does)
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from taskboard.git import claimrefs as remote\n"
        "from taskboard.disk.store import Store\n"
        "store = Store(Path('.tasks'))\n"
        "config = remote.config_of(store)\n"
        "uid = store.read(3 if sys.argv[1] == 'three' else 4)['uid']\n"
        "task = 3 if sys.argv[1] == 'three' else 4\n"
        "data = remote.document(uid, task, 'amy', 'claimed', config.clone)\n"
        "assert remote.push(remote.Git(store), config, uid, data, None)\n"
    )
    subprocess.run([sys.executable, "-c", script, "four"], cwd=a.top, env=a.env, check=True)
    assert a.records()[4]["status"] == "pending"
    # the same owner's next claim finds the ref its own and writes the task
    took = a.json("claim", "4", owner="amy")
    assert (took["status"], took["owner"]) == ("in_progress", "amy")
    assert len(fleet.claim_refs()) == 1
    # check --fix makes the task follow the ref
    a.tasks("update", "1", "--status", "completed")
    a.tasks("update", "2", "--status", "completed")
    subprocess.run([sys.executable, "-c", script, "three"], cwd=a.top, env=a.env, check=True)
    report = a.json("check", expect=6)
    assert [p["task"] for p in report["problems"]] == [3]
    assert a.json("check", "--fix")["ok"] is True
    assert (a.records()[3]["status"], a.records()[3]["owner"]) == ("in_progress", "amy")
    assert a.json("check")["ok"] is True


def test_bad_remote_names_and_a_remote_that_is_not_git(fleet, tmp_path):
    a = fleet.machine("a", remote=False)
    plan(a)
    done = a.tasks("init", "--remote", "nosuch", "--json", expect=2)
    assert "nosuch" in done.stderr and "origin" in done.stderr
    a.tasks("init", "--remote", "-x", expect=2)
    (tmp_path / "plain").mkdir()
    a.git("remote", "add", "plain", str(tmp_path / "plain"))
    done = a.tasks("init", "--remote", "plain", expect=5)
    assert "plain" in done.stderr and "Traceback" not in done.stderr
    # nothing was configured: claims stay local and succeed
    a.tasks("claim", "1", owner="amy")
    assert fleet.claim_refs() == {}
    assert "refs/tasks" not in a.git("config", "--get-all", "remote.plain.fetch", expect=None).stdout
    a.tasks("sync", "--remote", "nosuch", expect=2)
    a.tasks("sync", "--remote", "plain", expect=5)


def test_garbage_claim_refs_are_named_and_left_alone(fleet):
    a = fleet.machine("a")
    plan(a)
    uid = a.records()[1]["uid"]
    blob = a.git("hash-object", "-w", "--stdin", expect=None)  # empty input: an empty blob
    subprocess.run(
        ["git", "push", "-q", "origin", f"{blob.stdout.strip()}:refs/tasks/claims/{uid}"],
        cwd=a.top,
        env=a.env,
        check=True,
        input="",
        text=True,
    )
    head = a.git("rev-parse", "HEAD").stdout.strip()
    subprocess.run(["git", "push", "-q", "origin", f"{head}:refs/tasks/claims/notauid"], cwd=a.top, env=a.env)
    done = a.tasks("claim", "1", "--json", owner="amy", expect=4)
    error = json.loads(done.stderr.strip().splitlines()[-1])["error"]
    assert "not a claim" in error["message"] and uid in error["message"]
    assert a.records()[1]["status"] == "pending"
    a.tasks("sync")
    report = a.json("check", "--fix", expect=6)
    flagged = [p for p in report["problems"] if p["rule"] == "claim-ref"]
    assert flagged and not any(p["fixed"] for p in flagged)
    ref = subprocess.run(
        ["git", "--git-dir", str(fleet.remote), "rev-parse", f"refs/tasks/claims/{uid}"],
        env=a.env,
        capture_output=True,
        text=True,
    )
    assert ref.stdout.strip() == blob.stdout.strip()  # nothing lost
    took = a.json("claim", owner="amy")  # the rest of the board is still claimable
    assert took["id"] == 4
    nothing = a.tasks("claim", owner="amy", expect=3)  # only #1 is left: passed over, and said so
    assert "#1 passed over" in nothing.stderr and "not a claim" in nothing.stderr
    report = a.tasks("check", expect=6)
    assert "claims/notauid on origin is not a claim (it points to something other than" in report.stdout + report.stderr


def test_sync_commits_only_the_board_and_leaves_the_users_work_alone(fleet):
    a = fleet.machine("a")
    (a.top / "notes.txt").write_text("one\n")
    (a.top / "staged.txt").write_text("first\n")
    a.git("add", "notes.txt", "staged.txt")
    a.git("commit", "-q", "-m", "user files")
    plan(a)
    (a.top / "notes.txt").write_text("two, not committed\n")
    (a.top / "staged.txt").write_text("second, staged\n")
    a.git("add", "staged.txt")
    (a.top / "untracked.txt").write_text("mine\n")
    a.tasks("create", "More")
    came = a.json("sync")
    assert came["pushed"] and came["committed"]
    shown = a.git("show", "--name-only", "--format=", "HEAD").stdout.split()
    assert shown and all(name.startswith(".tasks/") for name in shown)
    status = sorted(a.git("status", "--porcelain").stdout.splitlines())
    assert status == sorted(["M  staged.txt", " M notes.txt", "?? untracked.txt"])
    assert (a.top / "notes.txt").read_text() == "two, not committed\n"
    a.git("checkout", "-q", "--detach")
    done = a.tasks("sync", expect=4)
    assert "detached" in done.stderr


def test_a_lease_that_ran_out_on_another_machine_is_taken_over(fleet):
    a, b = fleet.planned("a", "b")
    a.tasks("claim", "4", "--lease", "15m", owner="amy")
    (doc,) = fleet.claim_refs().values()
    assert doc["lease"] == 900
    a.tasks("sync")
    b.tasks("sync")
    assert (b.records()[4]["status"], b.records()[4]["owner"]) == ("in_progress", "amy")
    b.tasks("claim", "4", owner="bob", expect=4)  # amy's lease holds
    # amy's machine went away and her lease ran out: the ref as it would be by then
    lapse(a, 4)
    b.tasks("sync")
    took = b.tasks("claim", "4", "--json", owner="bob")
    assert json.loads(took.stdout)["owner"] == "bob"
    assert "amy" in took.stderr and "ran out" in took.stderr
    (doc,) = fleet.claim_refs().values()
    assert (doc["owner"], doc["state"]) == ("bob", "claimed")
    assert (b.records()[4]["status"], b.records()[4]["owner"]) == ("in_progress", "bob")


LAPSE = (  # the claim ref as it would be once its lease has run out (the holder's machine went away)
    "import json, sys\n"
    "from pathlib import Path\n"
    "from taskboard.git import claimrefs as remote\n"
    "from taskboard.disk.store import Store\n"
    "store = Store(Path('.tasks'))\n"
    "config = remote.config_of(store)\n"
    "git = remote.Git(store)\n"
    "uid = store.read(int(sys.argv[1]))['uid']\n"
    "seen = remote.fetch_one(git, config, uid)\n"
    "doc = dict(seen.doc, at=seen.doc['at'] - 2 * seen.doc['lease'] - 60)\n"
    "assert remote.push(git, config, uid, json.dumps(doc).encode(), seen.sha)\n"
)


def lapse(machine: Machine, task: int) -> None:
    subprocess.run([sys.executable, "-c", LAPSE, str(task)], cwd=machine.top, env=machine.env, check=True)


def taken_over(fleet: Fleet) -> tuple[Machine, Machine, bytes]:
    """amy claims #4 on a with a lease; it runs out; bob takes it over on b. a has not
    synced since: its board still says amy holds #4. Returns (a, b, a's #4 file)."""
    a, b = fleet.planned("a", "b")
    a.tasks("claim", "4", "--lease", "15m", owner="amy")
    a.tasks("sync")
    lapse(a, 4)
    b.tasks("sync")
    took = b.tasks("claim", "4", "--json", owner="bob")
    assert "ran out" in took.stderr
    return a, b, (a.board / "task_4.json").read_bytes()


@pytest.mark.parametrize("command", [["done", "4"], ["release", "4"], ["renew", "4", "--lease", "1h"]])
def test_an_old_holder_cannot_end_a_claim_taken_over_on_another_machine(fleet, command):
    a, b, before = taken_over(fleet)
    ref = fleet.claim_refs()
    refused = a.tasks(*command, "--json", owner="amy", expect=4)
    error = json.loads(refused.stderr.strip().splitlines()[-1])["error"]
    assert error["code"] == "refused" and "bob" in error["message"] and "amy" in error["message"]
    assert (a.board / "task_4.json").read_bytes() == before  # nothing changed here
    assert (a.records()[4]["status"], a.records()[4]["owner"]) == ("in_progress", "amy")
    assert fleet.claim_refs() == ref  # the ref still names bob's claim
    # having fetched the claim refs (but not b's board) changes nothing: still refused
    a.git("fetch", "-q", "origin")
    a.tasks(*command, owner="amy", expect=4)
    assert fleet.claim_refs() == ref
    # bob, who holds it, ends it as usual
    b.tasks("done", "4", owner="bob")
    assert [(d["state"], d["owner"]) for d in fleet.claim_refs().values()] == [("done", "bob")]


def test_an_old_holder_cannot_end_a_claim_given_back_after_a_takeover(fleet):
    a, b, before = taken_over(fleet)
    b.tasks("release", "4", owner="bob")
    refused = a.tasks("done", "4", owner="amy", expect=4)
    assert "given back" in refused.stderr and "amy" in refused.stderr
    assert (a.board / "task_4.json").read_bytes() == before
    assert [d["state"] for d in fleet.claim_refs().values()] == ["released"]
    # a person may override, and the ref follows the override
    a.tasks("done", "4", "--force")
    assert [d["state"] for d in fleet.claim_refs().values()] == ["done"]


def test_a_takeover_whose_machine_died_before_it_synced_is_taken_over_in_turn(fleet):
    # bob took #4 over from amy on b, then b went away before it pushed its board, and
    # bob's lease ran out too: every other board still says amy holds #4, the ref says bob
    a, b = fleet.planned("a", "b")
    a.tasks("claim", "4", "--lease", "15m", owner="amy")
    a.tasks("sync")
    lapse(a, 4)
    b.tasks("sync")
    assert "ran out" in b.tasks("claim", "4", "--lease", "15m", owner="bob").stderr
    lapse(b, 4)
    c = fleet.machine("c")
    c.tasks("sync")
    assert (c.records()[4]["status"], c.records()[4]["owner"]) == ("in_progress", "amy")
    c.tasks("claim", "1", owner="cat")
    took = c.tasks("claim", "--lease", "15m", "--json", owner="cat")  # without an id, as the agent loop claims
    assert json.loads(took.stdout)["id"] == 4 and "bob" in took.stderr and "ran out" in took.stderr
    doc = fleet.claim_refs()[c.records()[4]["uid"]]
    assert (doc["owner"], doc["state"]) == ("cat", "claimed")
    assert (c.records()[4]["status"], c.records()[4]["owner"]) == ("in_progress", "cat")
    assert c.json("check")["ok"] is True
    # amy's clone, where the claim the ref stopped bearing was made, may take it over too
    lapse(c, 4)
    a.tasks("sync")  # c never pushed its board: a's still says amy, and its sync leaves the ref to cat
    assert fleet.claim_refs()[a.records()[4]["uid"]]["owner"] == "cat"
    took = a.tasks("claim", "4", "--json", owner="dan")
    assert json.loads(took.stdout)["owner"] == "dan"
    assert fleet.claim_refs()[a.records()[4]["uid"]]["owner"] == "dan"


def test_a_claim_made_offline_here_is_not_taken_over_by_an_older_lapsed_ref(fleet, tmp_path):
    # the ref names bob's claim, whose lease ran out; amy then claimed #4 on a while the
    # remote could not be reached: the ref lags behind her claim, which holds
    a, b = fleet.planned("a", "b")
    b.tasks("claim", "4", "--lease", "15m", owner="bob")
    lapse(b, 4)
    a.tasks("sync")  # a has seen the ref, not b's board
    a.git("remote", "set-url", "origin", str(tmp_path / "gone.git"))
    a.tasks("claim", "4", "--offline", owner="amy")
    a.git("remote", "set-url", "origin", str(fleet.remote))
    before = (a.board / "task_4.json").read_bytes()
    refused = a.tasks("claim", "4", owner="cat", expect=4)
    assert "amy" in refused.stderr
    assert (a.board / "task_4.json").read_bytes() == before
    assert a.tasks("claim", "--json", owner="cat").stdout.count('"id": 1') == 1  # passed over for #1


def test_each_change_moves_the_ref_from_what_this_clone_believes(fleet):
    a, b = fleet.planned("a", "b")

    def ref() -> tuple:
        (doc,) = fleet.claim_refs().values()
        return doc["state"], doc["owner"]

    a.tasks("claim", "4", "--lease", "1h", owner="amy")
    assert ref() == ("claimed", "amy")
    at = next(iter(fleet.claim_refs().values()))["at"]
    a.tasks("renew", "4", "--lease", "2h", owner="amy")
    renewed = next(iter(fleet.claim_refs().values()))
    assert renewed["lease"] == 7200 and renewed["at"] >= at and renewed["owner"] == "amy"
    a.tasks("release", "4", owner="amy")
    assert ref() == ("released", "")
    a.tasks("claim", "4", owner="amy")
    a.tasks("done", "4", owner="amy")
    assert ref() == ("done", "amy")
    a.tasks("reopen", "4")
    assert ref() == ("released", "")
    # an edit to in_progress is a claim on the remote too: refused while another holds it
    b.tasks("claim", "4", owner="bob")
    refused = a.tasks("update", "4", "--status", "in_progress", "--owner", "amy", expect=4)
    assert "bob" in refused.stderr
    assert a.records()[4]["status"] == "pending" and ref() == ("claimed", "bob")
    # deleting a task another machine holds is refused too; a person's --force overrides it
    a.tasks("delete", "4", expect=4)
    assert a.records()[4]["status"] == "pending"
    a.tasks("delete", "4", "--force")
    assert ref() == ("released", "")


def test_a_waiter_learns_of_a_task_given_back_on_another_machine(fleet):
    a, b = fleet.planned("a", "b")
    a.tasks("claim", "1", owner="amy")
    a.tasks("claim", "4", owner="amy")
    b.tasks("sync")  # b has seen amy's claims: nothing is claimable for bob
    assert b.json("ready") == []
    a.tasks("release", "4", owner="amy")  # the ref says released; no file of b's changes
    code, out, err = waiter(b, "bob", "--wait", "30")
    assert code == 0, err
    took = json.loads(out)
    assert (took["id"], took["owner"]) == (4, "bob")
    assert [(d["task"], d["state"], d["owner"]) for d in fleet.claim_refs().values() if d["task"] == 4] == [
        (4, "claimed", "bob")
    ]


def test_clones_of_an_empty_remote_each_with_a_board_sync_into_one(fleet):
    a, b, c = fleet.machine("a"), fleet.machine("b"), fleet.machine("c")  # all set up before any sync
    for machine, subject in ((a, "From a"), (b, "From b"), (c, "From c")):
        machine.tasks("create", subject)
    notes = [note for machine in (a, b, c, a, b) for note in machine.json("sync")["notes"]]
    boards = [m.by_uid() for m in (a, b, c)]
    assert boards[0] == boards[1] == boards[2]
    assert sorted(subject for subject, *_ in boards[0].values()) == ["From a", "From b", "From c"]
    assert sum("#1 became" in note for note in notes) == 2, notes  # b's #1 and c's #1 moved, and sync says so
    for machine in (a, b, c):
        assert machine.json("check")["ok"] is True
    # a history of the user's own that has nothing to do with the remote's is not joined by sync
    d = Machine(fleet.root / "d", fleet.env)
    subprocess.run(["git", "init", "-q", str(d.top)], env=fleet.env, check=True)
    d.commit_file("mine.txt", "my project\n", "my own project")
    d.git("remote", "add", "origin", str(fleet.remote))
    d.tasks("init")
    refused = d.tasks("sync", expect=4)
    assert "unrelated" in refused.stderr and not (d.top / ".tasks" / "task_1.json").exists()


KILLER = """#!/bin/sh
# the remote's post-receive hook: once a claim ref has moved, kill -9 the `tasks` process
# that pushed it (an ancestor of this hook), once per marker file
[ -f "{marker}" ] || exit 0
rm -f "{marker}"
pid=$PPID
while [ "$pid" -gt 1 ]; do
    if tr '\\0' ' ' < /proc/$pid/cmdline | grep -q -- '-m taskboard'; then kill -9 "$pid"; exit 0; fi
    pid=$(sed 's/.*) //' /proc/$pid/stat | cut -d' ' -f2)
done
"""


def test_a_claimer_killed_after_its_push_is_settled_by_the_next_command_or_check(fleet):
    a = fleet.machine("a")
    plan(a)
    marker = fleet.root / "kill-the-next-claimer"
    hook = fleet.remote / "hooks" / "post-receive"
    hook.write_text(KILLER.format(marker=marker))
    hook.chmod(0o755)
    marker.touch()
    killed = a.tasks("claim", "4", owner="amy", expect=None)
    assert killed.returncode == -9 and not marker.exists()
    assert [(d["task"], d["owner"], d["state"]) for d in fleet.claim_refs().values()] == [(4, "amy", "claimed")]
    assert a.records()[4]["status"] == "pending"  # the ref was won, the task not written
    refused = a.tasks("claim", "4", owner="bob", expect=4)  # the ref names amy: no one else takes it
    assert "amy" in refused.stderr and "tasks check --fix" in refused.stderr
    took = a.json("claim", "4", owner="amy")  # amy's next claim finds the ref hers and writes the task
    assert (took["status"], took["owner"]) == ("in_progress", "amy")
    assert a.json("check")["ok"] is True
    # killed again, on another task: check --fix makes the task follow the ref
    marker.touch()
    assert a.tasks("claim", "1", owner="amy", expect=None).returncode == -9
    assert a.records()[1]["status"] == "pending"
    fixed = a.json("check", "--fix", expect=None)
    assert [p["task"] for p in fixed["problems"] if p["fixed"]] == [1], fixed
    assert (a.records()[1]["status"], a.records()[1]["owner"]) == ("in_progress", "amy")
    assert a.json("check")["ok"] is True


def waiter(machine: Machine, owner: str, *args: str) -> tuple[int, str, str]:
    """`claim --wait` as a real process, waited on with a timeout (no sleeps)."""
    process = machine.spawn("claim", *args, "--json", TASKS_OWNER=owner)
    try:
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    return process.returncode, out, err


def test_a_task_this_board_says_is_held_but_was_given_back_elsewhere_can_be_taken(fleet):
    a, b = fleet.planned("a", "b")
    a.tasks("claim", "1", owner="amy")
    a.tasks("claim", "4", owner="amy")
    a.tasks("sync")
    b.tasks("sync")  # b's files now say amy holds #1 and #4
    assert (b.records()[4]["status"], b.records()[4]["owner"]) == ("in_progress", "amy")
    a.tasks("release", "4", owner="amy")  # given back on a; a does not sync its board
    code, out, err = waiter(b, "bob", "--wait", "30")
    assert code == 0, err
    assert (json.loads(out)["id"], json.loads(out)["owner"]) == (4, "bob")
    assert "amy gave back in another clone" in err
    assert [(d["state"], d["owner"]) for d in fleet.claim_refs().values() if d["task"] == 4] == [("claimed", "bob")]
    # #1, which amy still holds on a, is not taken
    b.tasks("claim", "1", owner="cat", expect=4)
    assert [(d["state"], d["owner"]) for d in fleet.claim_refs().values() if d["task"] == 1] == [("claimed", "amy")]
    # the boards come together: bob holds #4 everywhere
    b.tasks("sync")
    a.tasks("sync")
    assert (a.records()[4]["status"], a.records()[4]["owner"]) == ("in_progress", "bob")
    assert a.json("check")["ok"] is True and b.json("check")["ok"] is True


def test_a_release_elsewhere_ends_the_claim_this_board_wrote_later_without_a_clock(fleet):
    """b's board says cat holds #4 in a version written after cat gave #4 back on a (b's
    own later edit of #4, merged with cat's claim by b's sync): the claim ref decides,
    not which clock wrote later. b's sync must not push cat's claim back over the
    release, and b's waiter takes #4 (it waited forever when the release had to be newer
    than b's file)."""
    a, b = fleet.planned("a", "b")
    a.tasks("claim", "4", owner="cat")
    a.tasks("sync")
    a.tasks("release", "4", owner="cat")  # the ref says released; a does not sync its board
    (released,) = [d for d in fleet.claim_refs().values() if d["task"] == 4]
    # after the release's second: its ref moved first, its file was written after, maybe in the
    # next second; a change of #4 in the same second as the file's would tie with it in a merge
    # (updatedAt names a second) and the tie goes to the greater JSON, here the release's
    written = calendar.timegm(time.strptime(a.records()[4]["updatedAt"], "%Y-%m-%dT%H:%M:%SZ"))
    after_this_second(max(released["at"], written))
    b.tasks("create", "Review the docs", "--blocked-by", "4")  # b writes #4 after the release
    b.tasks("sync")  # cat's claim comes in, merged with b's later edit of #4
    held = b.records()[4]
    assert (held["status"], held["owner"]) == ("in_progress", "cat")
    assert held["updatedAt"] > time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(released["at"]))
    assert [(d["state"], d["owner"]) for d in fleet.claim_refs().values() if d["task"] == 4] == [("released", "")]
    assert b.json("check")["ok"] is True  # the board lags the ref: nothing to repair here
    code, out, err = waiter(b, "bob", "4", "--wait", "30")
    assert code == 0, err
    assert (json.loads(out)["id"], json.loads(out)["owner"]) == (4, "bob")
    assert "cat gave back in another clone" in err
    assert [(d["state"], d["owner"]) for d in fleet.claim_refs().values() if d["task"] == 4] == [("claimed", "bob")]
    b.tasks("sync")
    a.tasks("sync")
    assert (a.records()[4]["status"], a.records()[4]["owner"]) == ("in_progress", "bob")
    assert a.json("check")["ok"] is True and b.json("check")["ok"] is True


def ref_of(fleet: Fleet, task: int) -> list[tuple[str, str]]:
    return [(d["state"], d["owner"]) for d in fleet.claim_refs().values() if d["task"] == task]


def test_a_claim_that_trusts_a_stale_tracking_ref_is_won_on_the_remote(fleet):
    """cat (one name in two clones) claims #4 on a; b fetches the claim refs; cat gives #4
    back on a; cat claims #4 on b. b's tracking ref still says cat holds it: the claim must
    be won on the remote, not taken from that stale ref (it was, and then counted as one
    the remote bore, so bob's waiter took #4 from cat at once)."""
    a, b = fleet.planned("a", "b")
    a.tasks("claim", "4", owner="cat")
    b.tasks("sync")  # b's tracking ref: claimed by cat; b's board: pending (a did not sync)
    a.tasks("release", "4", owner="cat")
    b.tasks("claim", "4", owner="cat")
    assert ref_of(fleet, 4) == [("claimed", "cat")]
    code, _out, err = waiter(b, "bob", "4", "--wait", "3")
    assert code == 3, err
    assert ref_of(fleet, 4) == [("claimed", "cat")]


def test_an_update_to_in_progress_is_confirmed_on_the_remote_and_ended_by_a_release_elsewhere(fleet):
    """b sets #4 in progress for cat while b's tracking ref already says cat holds it: the
    claim is confirmed on the remote, so cat's release on a ends it, and b's sync does not
    push cat's claim back over that release (it did)."""
    a, b = fleet.planned("a", "b")
    a.tasks("claim", "4", owner="cat")
    b.tasks("sync")
    b.tasks("update", "4", "--status", "in_progress", "--owner", "cat", owner="cat")
    a.tasks("release", "4", owner="cat")  # a does not sync its board
    b.tasks("sync")
    assert ref_of(fleet, 4) == [("released", "")]
    assert b.json("check")["ok"] is True


def forget_marks(machine: Machine) -> None:
    """What a kill -9 between a claim and its mark leaves, or a claim made before marks
    were kept: the runtime state's claims without their mark (`ref`)."""
    for path in (machine.top / ".git" / "tasks").rglob("*.json"):
        document = json.loads(path.read_text())
        if isinstance(document, dict) and isinstance(document.get("claim"), dict):
            assert document["claim"].pop("ref", None), path
            path.write_text(json.dumps(document))


def test_a_claim_left_unmarked_is_marked_by_the_next_sync_and_ended_by_a_release_elsewhere(fleet):
    """cat's claim on a bore its ref but lost its mark: a's sync finds the remote bearing
    it and marks it, so a release made on b afterwards ends it, and a's next sync does not
    push cat's claim back over it (it did)."""
    a, b = fleet.planned("a", "b")
    a.tasks("claim", "4", owner="cat")
    forget_marks(a)
    a.tasks("sync")
    b.tasks("sync")
    b.tasks("release", "4", owner="cat")  # b does not sync its board
    a.tasks("sync")
    assert ref_of(fleet, 4) == [("released", "")]
    assert a.json("check")["ok"] is True


def test_a_release_of_this_clone_killed_before_its_file_is_reported_and_put_back(fleet):
    """`release` moved the ref first and was killed before it wrote the file (the ref moved
    from this clone, the file still says cat holds #4): check reports it, and check --fix
    puts the ref back, as for a change that did not happen (it said nothing, for good)."""
    a, b = fleet.planned("a", "b")
    a.tasks("claim", "4", owner="cat")
    a.tasks("sync")
    uid = a.records()[4]["uid"]
    clone = json.loads(next((a.top / ".git" / "tasks").rglob(".remote")).read_text())["clone"]
    made = "\n".join(
        [
            "import sys",
            "from taskboard.git import claimrefs",
            f"sys.stdout.buffer.write(claimrefs.document({uid!r}, 4, '', 'released', {clone!r}))",
        ]
    )
    data = subprocess.run([sys.executable, "-c", made], cwd=a.top, env=a.env, capture_output=True, check=True).stdout
    blob = subprocess.run(
        ["git", "hash-object", "-w", "--stdin"], cwd=a.top, env=a.env, input=data, capture_output=True, check=True
    ).stdout.decode()
    a.git("push", "-q", "--force", "origin", f"{blob.strip()}:refs/tasks/claims/{uid}")
    a.git("fetch", "-q", "origin")
    report = a.json("check", expect=6)
    assert [(p["task"], p["rule"]) for p in report["problems"]] == [(4, "claim-ref")], report
    assert a.json("check", "--fix")["ok"] is True
    assert ref_of(fleet, 4) == [("claimed", "cat")]
    b.tasks("claim", "4", owner="bob", expect=4)


def test_a_plain_git_fetch_is_enough_for_ready_to_leave_out_a_task_claimed_elsewhere(fleet):
    # init configured the fetch refspec for claim refs: what a fetch brings, ready uses
    _, b, c = fleet.planned("a", "b", "c")
    b.tasks("claim", "4", owner="bob")
    assert 4 in [r["id"] for r in c.json("ready")]  # c has heard nothing yet
    c.git("fetch", "-q", "origin")
    assert 4 not in [r["id"] for r in c.json("ready")]
    assert "claimed by bob on another machine (through origin)" in c.tasks("get", "4").stdout
    b.tasks("release", "4", owner="bob")
    c.git("fetch", "-q", "origin")
    assert 4 in [r["id"] for r in c.json("ready")]


def test_a_reopen_synced_in_from_another_clone_leaves_check_clean(fleet):
    """Completed in one clone, reopened in another, synced both ways: the file wins (DESIGN
    §9, §13), so the first clone's record that it completed the task is dropped, not left
    for check to call a problem; a checkout that rewinds a completion is still reported."""
    a, b = fleet.planned("a", "b")
    a.tasks("claim", "4", owner="alice")
    a.tasks("update", "4", "--status", "completed", owner="alice")
    completed = time.time()
    a.tasks("sync")
    b.tasks("sync")
    after_this_second(completed)  # a reopen in the completion's own second is not known to be later
    b.tasks("update", "4", "--status", "pending")
    b.tasks("sync")
    a.tasks("sync")
    assert a.json("get", "4")["status"] == "pending"
    assert "board is sound" in a.tasks("check").stderr  # exit 0 (expect=0)


def test_a_reopen_merged_into_a_second_worktree_frees_the_claim_there(fleet):
    """A task completed in one worktree of a clone and reopened in another clone: once the
    reopen is synced into a second worktree of the first clone (one board per worktree,
    `tasks.worktrees branch`), the file there says pending and was written after the
    completion, so the file wins (DESIGN §8, §9, §13) and the task can be claimed there.
    A file older than the completion (a checkout that rewound it) still meets the
    completion made in the other worktree: refused, and left out of ready. (The reopen
    keeps alice, who did the work, as the owner: the task is hers to claim again.)"""
    a, b = fleet.planned("a", "b")
    a.git("config", "tasks.worktrees", "branch")
    second = a.worktree("second")
    a.tasks("claim", "4", owner="alice")
    a.tasks("done", "4", owner="alice")
    completed = time.time()
    a.tasks("sync")
    behind = second.git("rev-parse", "HEAD").stdout.strip()  # its task_4.json: pending, from before
    assert "was completed in another worktree" in second.tasks("claim", "4", owner="alice", expect=4).stderr
    b.tasks("sync")
    after_this_second(completed)
    b.tasks("reopen", "4")
    b.tasks("sync")
    second.tasks("sync")
    assert second.json("get", "4")["status"] == "pending"
    assert 4 in [r["id"] for r in second.json("ready")]
    second.git("checkout", behind, "--", ".tasks/task_4.json")  # rewound: older than the completion
    assert 4 not in [r["id"] for r in second.json("ready")]
    assert "was completed in another worktree" in second.tasks("claim", "4", owner="alice", expect=4).stderr
    second.git("checkout", "HEAD", "--", ".tasks/task_4.json")
    took = second.json("claim", "4", owner="alice")
    assert (took["status"], took["owner"]) == ("in_progress", "alice")
    assert [(d["state"], d["owner"]) for d in fleet.claim_refs().values() if d["task"] == 4] == [("claimed", "alice")]


def _claim_refs_of(fleet, task_id: int) -> list[tuple[str, str]]:
    return [(doc["state"], doc["owner"]) for doc in fleet.claim_refs().values() if doc["task"] == task_id]


def _held_by_cat_with_a_branch_worktree(fleet) -> tuple[Machine, Machine, Machine]:
    """Clones a and b; cat claims #4 in a's main worktree and syncs; then a branch worktree
    of a (tasks.worktrees branch) starts from there: its file says cat holds #4."""
    a, b = fleet.planned("a", "b")
    a.git("config", "tasks.worktrees", "branch")
    a.tasks("claim", "4", owner="cat")
    a.tasks("sync")
    return a, b, a.worktree("feat")


def test_a_release_made_in_one_worktree_is_not_undone_by_the_check_of_another(fleet):
    """A clone's worktrees and branches share its id and its runtime state. cat claims #4 in
    the main worktree and syncs; a branch worktree (tasks.worktrees branch, DESIGN §8) starts
    from origin/main, so its file says cat holds #4; cat gives #4 back in the main worktree.
    That release is finished (the runtime state forgot the claim): the branch worktree's
    check is sound and its --fix pushes nothing back, and a waiter in the branch worktree
    takes it. (51e2dd9 took every release from this
    clone for a killed one, and check --fix put cat's claim back for good.)"""
    a, _b, branch = _held_by_cat_with_a_branch_worktree(fleet)
    assert (branch.records()[4]["status"], branch.records()[4]["owner"]) == ("in_progress", "cat")
    a.tasks("release", "4", owner="cat")
    assert _claim_refs_of(fleet, 4) == [("released", "")]
    assert json.loads(branch.tasks("check", "--json").stdout)["ok"] is True
    branch.tasks("check", "--fix")
    assert _claim_refs_of(fleet, 4) == [("released", "")]
    code, out, err = waiter(branch, "dan", "4", "--wait", "20")
    assert code == 0 and json.loads(out)["id"] == 4, err
    assert _claim_refs_of(fleet, 4) == [("claimed", "dan")]


def test_a_release_is_not_undone_by_checking_out_a_branch_from_before_it(fleet):
    a, _b = fleet.planned("a", "b")
    a.tasks("claim", "4", owner="cat")
    a.tasks("sync")
    a.git("branch", "old")
    a.tasks("release", "4", owner="cat")
    a.tasks("sync")
    a.git("checkout", "-q", "old")
    a.tasks("check", "--fix")
    assert _claim_refs_of(fleet, 4) == [("released", "")]


@pytest.mark.parametrize("claimed_in", ["main", "branch"])
def test_a_release_made_in_another_worktree_than_the_claim_ends_it_there_too(fleet, claimed_in):
    """Branch worktrees (tasks.worktrees branch) of one clone share its runtime state. cat
    claims #4 in one worktree, both sync, cat gives #4 back in the other. The release
    forgets cat's claim wherever in the clone it was made: the claiming worktree, whose
    file still says cat holds #4, is sound, its check --fix and its sync push nothing back,
    and bob claims #4 from another clone. (It forgot only a claim made in its own
    worktree: the claiming worktree took the release for its own change killed before its
    file and pushed cat's claim back, for good.)"""
    a, b = fleet.planned("a", "b")
    a.git("config", "tasks.worktrees", "branch")
    branch = a.worktree("feat")
    claiming, releasing = (a, branch) if claimed_in == "main" else (branch, a)
    claiming.tasks("claim", "4", owner="cat")
    claiming.tasks("sync")
    releasing.tasks("sync")
    assert (releasing.records()[4]["status"], releasing.records()[4]["owner"]) == ("in_progress", "cat")
    releasing.tasks("release", "4", owner="cat")
    assert _claim_refs_of(fleet, 4) == [("released", "")]
    assert (claiming.records()[4]["status"], claiming.records()[4]["owner"]) == ("in_progress", "cat")
    assert json.loads(claiming.tasks("check", "--json").stdout)["ok"] is True
    claiming.tasks("check", "--fix")
    claiming.tasks("sync")
    assert _claim_refs_of(fleet, 4) == [("released", "")]
    took = b.json("claim", "4", owner="bob")
    assert (took["status"], took["owner"]) == ("in_progress", "bob")


def test_a_waiter_in_the_claiming_worktree_takes_a_task_given_back_in_another(fleet):
    a, _b, branch = _held_by_cat_with_a_branch_worktree(fleet)
    branch.tasks("release", "4", owner="cat")
    code, out, err = waiter(a, "dan", "4", "--wait", "20")
    assert code == 0 and json.loads(out)["id"] == 4, err
    assert _claim_refs_of(fleet, 4) == [("claimed", "dan")]


def test_a_killed_release_replayed_late_leaves_the_claim_its_owner_made_since_in_another_worktree(fleet):
    """A branch worktree starts from origin/main (#4 pending there); cat claims #4 in the
    main worktree, and its release there is killed (-9) once its file moved and the state
    followed it. cat then claims #4 again in the branch worktree, with a lease. The main
    worktree's next command replays the release's intent: it ends the claim the release
    ended, not the one made since (the replay forgot any claim of cat's: dan took #4 in
    the main worktree while cat held it in the branch, and the lease was gone)."""
    a, _b = fleet.planned("a", "b")
    a.git("config", "tasks.worktrees", "branch")
    branch = a.worktree("feat")
    a.tasks("claim", "4", owner="cat")
    killed = Machine(a.top, {**a.env, "TASKS_TEST_CRASH_AFTER": "3"}).tasks("release", "4", owner="cat", expect=None)
    assert killed.returncode == -9, killed.stderr
    branch.tasks("claim", "4", "--lease", "1h", owner="cat")
    assert _claim_refs_of(fleet, 4) == [("claimed", "cat")]
    a.tasks("list")  # completes the release there
    assert a.records()[4]["status"] == "pending"
    assert "held by cat in another worktree" in a.tasks("claim", "4", owner="dan", expect=4).stderr
    branch.tasks("check", "--fix")
    assert _claim_refs_of(fleet, 4) == [("claimed", "cat")]
    assert "held by cat, lease" in branch.tasks("get", "4").stdout  # the lease made in the branch stands


@pytest.mark.parametrize("point", [2, 3])
@pytest.mark.parametrize(("command", "ended"), [("release", "released"), ("done", "done")])
def test_a_release_or_completion_killed_after_its_intent_ends_the_claim_in_every_worktree(fleet, command, ended, point):
    """cat claims #4 in the main worktree and syncs; a branch worktree starts from there
    (its file says cat holds #4). cat's release or completion in the main worktree moves
    the ref, puts its intent in place and is killed (-9) once it appended to the journal
    (point 2) or once its task file moved (3), before anything else ran in that worktree:
    the change happened (the next command there completes it). At 3 the runtime state
    says so (it follows the change before the files move); at 2 the claim is marked as
    being ended from that worktree, whose intent says so. The branch worktree's check
    --fix pushes nothing back, a waiter there takes a released task, and bob's claim from
    another clone is refused for a completed one. (The runtime state followed only after
    the files, so the kill left cat's claim in it, and check --fix there pushed `claimed
    cat` back, over a completion too.)"""
    a, b, branch = _held_by_cat_with_a_branch_worktree(fleet)
    killed = Machine(a.top, {**a.env, "TASKS_TEST_CRASH_AFTER": str(point)}).tasks(
        command, "4", owner="cat", expect=None
    )
    assert killed.returncode == -9, killed.stderr
    assert _claim_refs_of(fleet, 4) == [(ended, "cat" if ended == "done" else "")]
    assert (branch.records()[4]["status"], branch.records()[4]["owner"]) == ("in_progress", "cat")
    branch.tasks("check", "--fix", expect=None)
    assert _claim_refs_of(fleet, 4) == [(ended, "cat" if ended == "done" else "")]
    a.tasks("list")  # completes the change there
    assert a.records()[4]["status"] == ("completed" if ended == "done" else "pending")
    if ended == "released":  # a waiter in the branch worktree is not kept waiting on cat
        code, out, err = waiter(branch, "dan", "4", "--wait", "20")
        assert code == 0 and json.loads(out)["id"] == 4, err
        assert _claim_refs_of(fleet, 4) == [("claimed", "dan")]
    else:
        b.tasks("claim", "4", owner="bob", expect=4)


def test_a_release_killed_after_its_intent_before_its_file_ends_the_claim_once_recovered(fleet):
    """Killed (-9) once its intent is in place, before the journal or any file: the next
    command in that worktree completes it, runtime state included (the intent says which
    tasks moved and from what), and then no other worktree undoes it."""
    a, b, branch = _held_by_cat_with_a_branch_worktree(fleet)
    killed = Machine(a.top, {**a.env, "TASKS_TEST_CRASH_AFTER": "1"}).tasks("release", "4", owner="cat", expect=None)
    assert killed.returncode == -9, killed.stderr
    assert (a.records()[4]["status"], a.records()[4]["owner"]) == ("in_progress", "cat")
    a.tasks("list")  # any command there completes the change first
    assert a.records()[4]["status"] == "pending"
    branch.tasks("check", "--fix", expect=None)
    assert _claim_refs_of(fleet, 4) == [("released", "")]
    took = b.json("claim", "4", owner="bob")
    assert (took["status"], took["owner"]) == ("in_progress", "bob")


def test_a_release_killed_before_its_intent_is_put_back_by_another_worktree(fleet):
    """Killed (-9) after the ref moved and before the change's intent was in place: no file
    will ever say it, the runtime state still holds cat's claim, and the branch worktree's
    check --fix puts the ref back (as 9386cb2 kept). The kill comes once the intent is in
    place (the first file a change puts anywhere), and the intent is then named as the
    temporary file it was just before its rename: what a kill an instant earlier leaves."""
    a, b, branch = _held_by_cat_with_a_branch_worktree(fleet)
    killed = Machine(a.top, {**a.env, "TASKS_TEST_CRASH_AFTER": "1"}).tasks("release", "4", owner="cat", expect=None)
    assert killed.returncode == -9, killed.stderr
    scratch = a.top / ".tasks" / ".scratch"
    (scratch / "intent.json").rename(scratch / ".intent.json.999999.tmp")
    assert _claim_refs_of(fleet, 4) == [("released", "")]
    assert (a.records()[4]["status"], a.records()[4]["owner"]) == ("in_progress", "cat")
    branch.tasks("check", "--fix", expect=None)
    assert _claim_refs_of(fleet, 4) == [("claimed", "cat")]
    b.tasks("claim", "4", owner="bob", expect=4)
    a.tasks("check", "--fix")  # the leftover goes; the claim stands
    assert (a.records()[4]["status"], a.records()[4]["owner"]) == ("in_progress", "cat")
    assert sorted(p.name for p in scratch.iterdir()) == []


def test_a_recovered_completion_is_marked_as_of_when_it_was_made(fleet):
    """A completion killed once its intent was in place is completed by the next command,
    which brings the clone's runtime state up to date as the change would have: the claim
    ended, the completion marked on that board as of the second the change stamped on the
    file (a reopen merged in later must still count as later), not of the replay."""
    a, _b = fleet.planned("a", "b")
    a.tasks("claim", "4", owner="cat")
    killed = Machine(a.top, {**a.env, "TASKS_TEST_CRASH_AFTER": "1"}).tasks("done", "4", owner="cat", expect=None)
    assert killed.returncode == -9, killed.stderr
    a.tasks("list")
    record = a.records()[4]
    assert record["status"] == "completed"
    (found,) = [p for p in (a.top / ".git" / "tasks").rglob(f"{record['uid']}.json")]
    entry = json.loads(found.read_text())
    assert "claim" not in entry
    assert entry["done"]["by"] == "cat"
    assert entry["done"]["at"] == calendar.timegm(time.strptime(record["updatedAt"], "%Y-%m-%dT%H:%M:%SZ"))


def test_an_agent_restarted_under_its_name_resumes_its_task_once_the_ref_lease_runs_out(fleet):
    """A claim ref naming the same owner, whose lease ran out: on the clone where it was
    made (its runtime lease ran out too) and on another clone (a restarted agent on a new
    machine, whose board only knows the ref), that owner's claim without ID resumes it,
    a waiting claim waits for it (no exit 3, "held by you"), and the ref is its own anew."""
    a, b = fleet.planned("a", "b")
    for task in ("1", "2", "3"):
        a.tasks("update", task, "--status", "completed")
    a.tasks("claim", "4", "--lease", "1s", owner="amy")
    took = a.tasks("claim", "--wait", "30", "--lease", "15m", "--json", owner="amy")
    assert json.loads(took.stdout)["id"] == 4, took.stderr
    assert "resumed #4" in took.stderr, took.stderr
    (doc,) = [doc for doc in fleet.claim_refs().values() if doc["task"] == 4]
    assert (doc["owner"], doc["lease"]) == ("amy", 900)
    a.tasks("sync")
    b.tasks("sync")
    assert (b.records()[4]["status"], b.records()[4]["owner"]) == ("in_progress", "amy")
    b.tasks("claim", owner="amy", expect=3)  # amy's lease holds: her waiting claim waits for it to run out
    waited = b.tasks("claim", "--wait", "1", owner="amy", expect=3)
    assert "waited 1 s; no task became claimable for amy" in waited.stderr, waited.stderr
    lapse(a, 4)  # amy's machine went away and her lease ran out: she starts again on b
    b.tasks("sync")
    again = b.tasks("claim", "--wait", "30", "--lease", "15m", "--json", owner="amy")
    assert json.loads(again.stdout)["id"] == 4, again.stderr
    (doc,) = [doc for doc in fleet.claim_refs().values() if doc["task"] == 4]
    assert (doc["owner"], doc["state"], doc["lease"]) == ("amy", "claimed", 900)
    assert doc["at"] > time.time() - 60
    b.tasks("claim", owner="bob", expect=3)


def test_a_release_whose_runtime_state_cannot_be_written_keeps_its_claim_ref_moved(fleet):
    """The runtime state follows a change right after its first file moved; when that
    fails (here the task's state entry is a folder, debris no command made), the change is
    complete on its files all the same (the next command replays the intent, exit 6 says
    so), so the claim ref it moved must stand: it was put back to cat's claim, the file
    said pending, and nobody could claim the task (found by the review of 1ae1d2e)."""
    a, b = fleet.planned("a", "b")
    a.tasks("claim", "4", owner="cat")
    a.tasks("sync")
    (entry,) = [p for p in (a.top / ".git" / "tasks").rglob(f"{a.records()[4]['uid']}.json")]
    entry.unlink()
    entry.mkdir()
    (entry / "debris").write_text("not a state entry\n")
    released = a.tasks("release", "4", owner="cat", expect=6)
    assert "the next command completes the change" in released.stderr
    assert _claim_refs_of(fleet, 4) == [("released", "")]
    (entry / "debris").unlink()
    entry.rmdir()
    a.tasks("list")
    assert (a.records()[4]["status"], a.records()[4]["owner"]) == ("pending", "")
    a.tasks("sync")
    b.tasks("sync")
    took = b.json("claim", "4", owner="dan")
    assert (took["status"], took["owner"]) == ("in_progress", "dan")
