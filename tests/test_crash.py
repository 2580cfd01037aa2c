"""kill -9 in the middle of multi-file changes, and what the next command makes of it.

Completing (or reopening) a hub with 40 dependents rewrites 41 files and appends its
event to the journal. Whatever
instant the writer dies at, the next command of any kind must finish or undo the
change before it does anything else, and leave a board that tests/invariants.py
(which reads the JSON files itself) finds sound, with the change applied to every
dependent or to none, and journaled exactly once when it was applied.

Exact instants come from the store's test hook TASKS_TEST_CRASH_AFTER=N (SIGKILL
right after the N-th file replacement); random instants from a real SIGKILL sent
to a process looping over completion and reopening.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time

import pytest
from conftest import TASKS
from invariants import assert_sound, hub_board, load_board, load_journal, record, scratch_left, snapshot, write_board
from reserving import PausedCreate
from watching import IN_CREATE, IN_MOVED_TO, Watch
from worker import ForkServer

from taskboard.core.model import encode
from taskboard.disk.store import Store

PIPES = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE}

DEPENDENTS = 40
HUB_FILES = DEPENDENTS + 1
# replacements a hub change makes: the intent, then the 41 task files, then its journal append
REPLACEMENTS = 1 + HUB_FILES + 1


@pytest.fixture(scope="module")
def forks():
    server = ForkServer()
    yield server
    server.close()


def hub_events(board) -> list[str]:
    """The journal's events of the hub, oldest first (the independent reader's view)."""
    return [entry["event"] for entry in load_journal(board) if entry["task"] == 1]


def hub_state(board) -> str:
    """'completed' or 'open', asserting the change is all-or-nothing across the 40 dependents."""
    records = load_board(board)
    hub = records[1]
    assert hub["blocks"] == list(range(2, HUB_FILES + 1)), "the hub lost its history edges"
    holding = [i for i in hub["blocks"] if 1 in records[i]["blockedBy"]]
    if hub["status"] == "completed":
        assert holding == [], f"hub completed but {holding} still list it"
        return "completed"
    assert hub["status"] == "pending"
    assert holding == hub["blocks"], f"hub open but only {holding} list it"
    return "open"


# -- exact crash points ----------------------------------------------------------------

CRASH_POINTS = sorted({1, 2, 3, 5, 14, 23, 32, REPLACEMENTS - 1, REPLACEMENTS})


@pytest.mark.parametrize("change", ["complete", "reopen"])
def test_kill_at_exact_points_of_a_hub_change(forks, board_dir, run, change):
    status, before, after = (
        ("completed", "open", "completed") if change == "complete" else ("pending", "completed", "open")
    )
    for point in CRASH_POINTS:
        shutil.rmtree(board_dir / "journal", ignore_errors=True)
        hub_board(board_dir, DEPENDENTS)
        if change == "reopen":
            run("update", "1", "--status", "completed")
        assert hub_state(board_dir) == before
        ended = forks.ask(args=["--dir", str(board_dir), "update", "1", "--status", status], crash_after=point)
        assert ended == {"signal": signal.SIGKILL}, (point, ended)
        # the intent was durable before the first task file was touched (the new files not yet
        # moved into place wait beside it: staged first, so a full disk fails before any change)
        assert "intent.json" in os.listdir(board_dir / ".scratch"), point
        got = run("get", "1", "--json")  # the next command, a reader, finishes the change first
        assert json.loads(got.stdout)["status"] == status
        assert_sound(board_dir)
        assert hub_state(board_dir) == after, point
        assert scratch_left(board_dir) == []
        expected = ["completed"] if change == "complete" else ["completed", "reopened"]
        assert hub_events(board_dir) == expected, point  # the event landed with the change, once


def test_the_unkilled_change_makes_exactly_the_replacements_counted(forks, board_dir):
    hub_board(board_dir, DEPENDENTS)
    ended = forks.ask(
        args=["--dir", str(board_dir), "update", "1", "--status", "completed"], crash_after=REPLACEMENTS + 1
    )
    assert ended == {"exit": 0}
    assert hub_state(board_dir) == "completed"
    assert scratch_left(board_dir) == []
    assert hub_events(board_dir) == ["completed"]


def test_kill_during_recovery_then_recovery_again(forks, board_dir, run):
    hub_board(board_dir, DEPENDENTS)
    args = ["--dir", str(board_dir), "update", "1", "--status", "completed"]
    assert forks.ask(args=args, crash_after=20) == {"signal": signal.SIGKILL}
    # the recovering reader dies after replaying 5 files: still all or nothing later
    reader = ["--dir", str(board_dir), "list"]
    assert forks.ask(args=reader, crash_after=5) == {"signal": signal.SIGKILL}
    assert "intent.json" in os.listdir(board_dir / ".scratch")
    run("list")
    assert_sound(board_dir)
    assert hub_state(board_dir) == "completed"
    assert hub_events(board_dir) == ["completed"]


# -- a real SIGKILL at random instants -------------------------------------------------


@contextlib.contextmanager
def changing(board):
    """A wait for a change to have begun on the board: its intent file appearing in the
    scratch folder, as the kernel tells (inotify), however late a loaded machine starts
    the writer; never a guess at how long that takes."""
    from taskboard.disk.watch import watcher_for

    scratch = board / ".scratch"
    scratch.mkdir(exist_ok=True)
    watcher = watcher_for([str(scratch)])
    watcher.arm()

    def begun(timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not (scratch / "intent.json").exists():
            left = deadline - time.monotonic()
            assert left > 0, "no change began on the board"
            watcher.wait(left)

    try:
        yield begun
    finally:
        watcher.close()


def test_kill_minus_nine_loop_during_completion_and_reopen(forks, board_dir, run):
    rng = random.Random(1129)
    hub_board(board_dir, DEPENDENTS)
    loop = [
        ["--dir", str(board_dir), "update", "1", "--status", "completed"],
        ["--dir", str(board_dir), "update", "1", "--status", "pending"],
    ]
    kills, mid_change = 0, 0
    # at least 12 kills, and on until 3 of them landed mid-change (a kill between two changes
    # proves nothing about recovery); nearly all of the loop's time is inside a change
    while kills < 12 or (mid_change < 3 and kills < 60):
        placed = Watch(board_dir, IN_MOVED_TO)  # each file a change puts in place
        with changing(board_dir) as begun:
            pid = forks.ask(loop=loop)["pid"]
            begun(60.0)  # the loop is inside a change however loaded the machine is (its intent is written)
        # where in the change the kill lands: after a random number of the files it puts in
        # place (0 to all 41); what is asserted does not depend on it
        for _ in range(rng.randint(0, HUB_FILES)):
            placed.wait(lambda name: name.startswith("task_"))
        placed.close()
        os.kill(pid, signal.SIGKILL)
        assert forks.ask(reap=pid) == {"signal": signal.SIGKILL}
        kills += 1
        interrupted = bool(os.listdir(board_dir / ".scratch")) if (board_dir / ".scratch").exists() else False
        result = run("--timeout", "2", "list", "--all", "--json")  # the lock died with the process
        listed = json.loads(result.stdout)
        assert len(listed) == HUB_FILES
        assert_sound(board_dir)
        state = hub_state(board_dir)  # all or nothing across the 40 dependents
        # every change the board shows was journaled once, and nothing else was
        events = hub_events(board_dir)
        assert events == ["completed", "reopened"] * (len(events) // 2) + ["completed"] * (len(events) % 2)
        assert (events[-1] if events else "reopened") == ("completed" if state == "completed" else "reopened")
        if interrupted:  # the next command finished or dropped the change, and said so
            mid_change += 1
            warnings = [json.loads(line) for line in result.stderr.splitlines()]
            assert warnings and all("warning" in line for line in warnings), result.stderr
            assert scratch_left(board_dir) == []
    assert mid_change >= 3, f"only {mid_change} of {kills} kills landed inside a change"


# -- hand-made leftovers ---------------------------------------------------------------


def _interrupted_board(board) -> dict:
    """#1 blocks #2 and #3; a change completing #1 was journaled, then the writer died
    after writing only #2, leaving a temp file of #3 behind."""
    write_board(board, [record(1, blocks=[2, 3]), record(2, blocked_by=[1]), record(3, blocked_by=[1])])
    after = {1: record(1, blocks=[2, 3], status="completed"), 2: record(2), 3: record(3)}
    files = {f"task_{i}.json": json.dumps(r, indent=2, ensure_ascii=False) + "\n" for i, r in after.items()}
    scratch = board / ".scratch"
    scratch.mkdir()
    (scratch / "intent.json").write_text(json.dumps({"intent": 1, "files": files}))
    (board / "task_2.json").write_text(files["task_2.json"])
    (scratch / ".task_3.json.4242.tmp").write_text(files["task_3.json"][:40])
    return after


@pytest.mark.parametrize(
    "command",
    [
        ["get", "3", "--json"],
        ["list", "--json"],
        ["create", "next", "--json"],
        ["ready", "--json"],
        ["board", "--json"],
        ["graph", "--json"],
    ],
)
def test_next_command_of_any_kind_completes_a_leftover_intent(board_dir, run, command):
    after = _interrupted_board(board_dir)
    result = run(*command)
    assert "completed an interrupted change" in result.stderr
    records = assert_sound(board_dir)
    for task_id, expected in after.items():
        assert {k: records[task_id][k] for k in ("status", "blockedBy", "blocks")} == {
            k: expected[k] for k in ("status", "blockedBy", "blocks")
        }
    assert scratch_left(board_dir) == []
    if command[0] == "create":
        assert json.loads(result.stdout)["id"] == 4
    if command[0] == "get":
        assert json.loads(result.stdout)["blockedBy"] == []


def test_check_reports_the_completed_intent_as_fixed(board_dir, run):
    _interrupted_board(board_dir)
    result = run("check", "--json")
    report = json.loads(result.stdout)
    assert report["ok"] is True
    rules = [(p["rule"], p["fixed"]) for p in report["problems"]]
    assert ("interrupted-change", True) in rules
    assert all(fixed for _, fixed in rules)
    assert_sound(board_dir)
    assert json.loads(run("check", "--json").stdout) == {"ok": True, "problems": []}


def test_check_fix_also_completes_it(board_dir, run):
    _interrupted_board(board_dir)
    report = json.loads(run("check", "--fix", "--json").stdout)
    assert report["ok"] is True
    assert any(p["rule"] == "interrupted-change" and p["fixed"] for p in report["problems"])
    assert_sound(board_dir)


def test_temp_files_without_intent_are_discarded_and_nothing_changes(board_dir, run):
    """Killed before the intent was durable: the change never happened."""
    write_board(board_dir, [record(1, blocks=[2]), record(2, blocked_by=[1])])
    before = snapshot(board_dir)
    scratch = board_dir / ".scratch"
    scratch.mkdir()
    (scratch / ".intent.json.77.tmp").write_text('{"intent": 1, "files": {"task_1.js')
    (scratch / ".task_2.json.77.tmp").write_text("{")
    result = run("list")
    assert "leftover temporary" in result.stderr
    assert scratch_left(board_dir) == []
    assert {k: v for k, v in snapshot(board_dir).items() if k != ".scratch"} == before
    assert_sound(board_dir)


def test_an_unreadable_intent_is_discarded(board_dir, run):
    write_board(board_dir, [record(1)])
    before = snapshot(board_dir)
    (board_dir / ".scratch").mkdir()
    (board_dir / ".scratch" / "intent.json").write_bytes(b'{"intent": 1, "files": {"task_1.json": 7}')
    result = run("get", "1")
    assert "discarded an unreadable intent" in result.stderr
    assert {k: v for k, v in snapshot(board_dir).items() if k != ".scratch"} == before
    assert scratch_left(board_dir) == []


def test_an_intent_writes_only_task_files_of_the_board(board_dir, run, tmp_path):
    """A planted intent cannot write outside the board nor any file but task_<id>.json."""
    write_board(board_dir, [record(1)])
    (board_dir / ".scratch").mkdir()
    files = {
        "../escaped.txt": "x",
        ".gitignore": "evil\n",
        "task_1.json/../../x": "y",
        "task_1.json": json.dumps(record(1, subject="replayed"), indent=2) + "\n",
    }
    (board_dir / ".scratch" / "intent.json").write_text(json.dumps({"intent": 1, "files": files}))
    run("list")
    assert not (tmp_path / "escaped.txt").exists() and not (tmp_path / "x").exists()
    assert not (board_dir / ".gitignore").exists() or (board_dir / ".gitignore").read_text() != "evil\n"
    assert load_board(board_dir)[1]["subject"] == "replayed"
    assert scratch_left(board_dir) == []


def test_a_scratch_link_is_removed_without_touching_its_target(board_dir, run, tmp_path):
    """git can commit a symbolic link; recovery must never delete what it points to."""
    write_board(board_dir, [record(1)])
    victim = tmp_path / "victim"
    (victim / "sub").mkdir(parents=True)
    (victim / "precious").write_text("keep me")
    (victim / "sub" / "x").write_text("and me")
    (victim / "intent.json").write_text(json.dumps({"intent": 1, "files": {"task_1.json": "{}"}}))
    os.symlink(victim, board_dir / ".scratch")
    run("list")
    run("create", "two")
    assert sorted(os.listdir(victim)) == ["intent.json", "precious", "sub"]
    assert (victim / "sub" / "x").read_text() == "and me"
    assert not (board_dir / ".scratch").is_symlink()
    assert_sound(board_dir)
    assert load_board(board_dir)[1]["subject"] == "task 1"


# -- the journal: events land with their change, exactly once --------------------------


@pytest.mark.parametrize("point", [1, 2])
def test_kill_during_a_note_journals_it_once(forks, board_dir, run, point):
    """A note changes no task file: its intent carries only the journal line. Killed
    after the intent (1) or after the append (2), the next command appends it once."""
    run("create", "one")
    task = (board_dir / "task_1.json").read_bytes()
    ended = forks.ask(args=["--dir", str(board_dir), "--as", "alice", "note", "1", "hello"], crash_after=point)
    assert ended == {"signal": signal.SIGKILL}
    assert os.listdir(board_dir / ".scratch") == ["intent.json"]
    result = run("list")
    assert "completed an interrupted change" in result.stderr
    notes = [e for e in load_journal(board_dir) if e["event"] == "note"]
    assert [(e["actor"], e["text"]) for e in notes] == [("alice", "hello")]
    assert (board_dir / "task_1.json").read_bytes() == task
    assert scratch_left(board_dir) == []


def _intent_with_lines(board, lines: list[dict]) -> bytes:
    """Plant the intent of a change that completes #1 and journals `lines` for alice."""
    write_board(board, [record(1)])
    data = "".join(json.dumps(line) + "\n" for line in lines)
    files = {"task_1.json": json.dumps(record(1, status="completed"), indent=2) + "\n"}
    intent = {"intent": 1, "files": files, "appends": {"journal/alice.jsonl": data, "../escape.jsonl": data}}
    (board / ".scratch").mkdir()
    (board / ".scratch" / "intent.json").write_text(json.dumps(intent))
    return data.encode()


def _line(n: int) -> dict:
    return {
        "at": "2026-01-01T00:00:00.000Z",
        "actor": "alice",
        "task": 1,
        "event": "note",
        "text": f"n{n}",
        "eid": f"{n:016x}",
    }


def test_recovery_appends_only_the_lines_not_yet_written(board_dir, run, tmp_path):
    data = _intent_with_lines(board_dir, [_line(1), _line(2)])
    (board_dir / "journal").mkdir()
    earlier = json.dumps(_line(0)) + "\n"
    (board_dir / "journal" / "alice.jsonl").write_bytes(earlier.encode() + data.split(b"\n")[0] + b"\n")
    run("list")
    assert [e["text"] for e in load_journal(board_dir)] == ["n0", "n1", "n2"]
    assert not (tmp_path / "escape.jsonl").exists() and not (board_dir / "escape.jsonl").exists()
    assert load_board(board_dir)[1]["status"] == "completed"


def test_recovery_cuts_a_torn_line_and_writes_it_whole(board_dir, run):
    data = _intent_with_lines(board_dir, [_line(1), _line(2)])
    (board_dir / "journal").mkdir()
    (board_dir / "journal" / "alice.jsonl").write_bytes(json.dumps(_line(0)).encode() + b"\n" + data[:30])
    run("list")
    assert [e["text"] for e in load_journal(board_dir)] == ["n0", "n1", "n2"]  # no torn line, nothing twice


def test_recovery_of_lines_all_written_adds_nothing(board_dir, run):
    data = _intent_with_lines(board_dir, [_line(1), _line(2)])
    (board_dir / "journal").mkdir()
    (board_dir / "journal" / "alice.jsonl").write_bytes(data)
    run("list")
    run("list")
    assert [e["text"] for e in load_journal(board_dir)] == ["n1", "n2"]


# -- creates that do not queue: reserved and written before the lock, placed under it ----------


def _created_once(board) -> dict[int, int]:
    """How often the journal says each task was created."""
    found: dict[int, int] = {}
    for entry in load_journal(board):
        if entry["event"] == "created":
            found[entry["task"]] = found.get(entry["task"], 0) + 1
    return found


@pytest.mark.parametrize("point", [1, 2, 3])
def test_a_create_killed_under_the_lock_is_finished_by_the_next_command(forks, board_dir, run, point):
    """A create reserves its id and writes its file before the lock; under it come the intent
    (killed after 1), the journal line (2), the file in place (3). Its syncs wait until the lock
    is let go, so the intent is not durable, but a kill loses nothing the kernel was given."""
    run("create", "first")
    ended = forks.ask(args=["--dir", str(board_dir), "create", "second", "--json"], crash_after=point)
    assert ended == {"signal": signal.SIGKILL}
    assert "intent.json" in os.listdir(board_dir / ".scratch")
    result = run("list", "--json")
    assert "completed an interrupted change" in result.stderr
    records = assert_sound(board_dir)
    assert [records[i]["subject"] for i in sorted(records)] == ["first", "second"]
    assert _created_once(board_dir) == {1: 1, 2: 1}
    assert scratch_left(board_dir) == []


def test_a_create_killed_between_removing_and_renaming_the_record_of_the_highest_id(board_dir, run):
    """Under the lock a create's record of the highest id (.cache/last) is replaced by removing
    the old file and renaming the new one to the free name (taskboard.disk.cache.write_in: no
    rename over a file, which ext4 writes out at once). Killed in between, the board keeps
    the task it put in place and no record: the next creates list the folder and take the
    next ids, each journaled once."""
    for subject in ("first", "second"):
        run("create", subject)
    record_file = board_dir / ".cache" / "last"
    recorded = record_file.exists()  # only where the kernel gives multigrain ctimes (remember_last)
    killed = subprocess.run(
        [*TASKS, "--dir", str(board_dir), "create", "third", "--json"],
        env={**os.environ, "TASKS_TEST_CACHE_CRASH": "unlinked"},
        capture_output=True,
        timeout=60,
        check=False,
    )
    if recorded:
        assert killed.returncode == -signal.SIGKILL, killed.stderr
        assert not record_file.exists()
        assert [name for name in os.listdir(board_dir / ".cache") if name.startswith(".last.")]
    made = [json.loads(run("create", subject, "--json").stdout)["id"] for subject in ("fourth", "fifth")]
    assert made == [4, 5]
    records = assert_sound(board_dir)
    assert [records[i]["subject"] for i in sorted(records)] == ["first", "second", "third", "fourth", "fifth"]
    assert _created_once(board_dir) == dict.fromkeys(range(1, 6), 1)


def _reserve_and_die(board_dir: os.PathLike) -> None:
    """A create's process killed -9 once it reserved its id: its reservation is left behind."""
    killed = subprocess.run(
        [
            sys.executable,
            "-c",
            "import os, signal, sys\nfrom taskboard.disk.store import Store\n"
            "Store(sys.argv[1]).reserve(lambda task_id: b'{}')\nos.kill(os.getpid(), signal.SIGKILL)",
            str(board_dir),
        ],
        check=False,
    )
    assert killed.returncode == -signal.SIGKILL


def test_a_reservation_at_work_is_passed_by_and_a_dead_ones_is_swept(board_dir, run):
    """A create that reserved its id (Store.reserve: its file written and flocked, named
    task_N.json.new) and has not taken the lock yet is no leftover: readers and other creates
    pass it by, and they take other ids. The reservation of a killed process is one: the next
    command removes it and says so."""
    run("create", "first")
    store = Store(str(board_dir))
    held = store.reserve(lambda task_id: encode(record(task_id, subject="held")))
    assert held is not None and held[0] == 2
    _reserve_and_die(board_dir)
    assert sorted(os.listdir(board_dir / ".scratch")) == ["task_2.json.new", "task_3.json.new"]
    listed = run("list", "--json")
    assert "removed 1 leftover" in listed.stderr
    assert os.listdir(board_dir / ".scratch") == ["task_2.json.new"]
    other = json.loads(run("create", "other", "--json").stdout)
    assert other["id"] == 3  # the dead one's id was never given to anyone; the live one's is kept
    run("list")
    assert os.listdir(board_dir / ".scratch") == ["task_2.json.new"]
    store.drop_reserved(*held)
    assert sorted(assert_sound(board_dir)) == [1, 3]


def test_a_reservation_made_the_instant_a_dead_one_is_swept_keeps_its_name(board_dir, run):
    """Recovery sweeps a killed create's reservation under its flock; from that instant its
    name is free, and a live create may take it at once (reservations take no lock). Recovery
    removed every leftover's name a second time, so the live create's name went too: another
    create could then reserve that id, and the first one, putting its reservation in place by
    name, put the other's file there and printed its own record (a create said ok and was lost;
    seen once under load in the test below)."""
    run("create", "first")
    _reserve_and_die(board_dir)
    assert os.listdir(board_dir / ".scratch") == ["task_2.json.new"]
    live: list = []

    class SweptThenReserved(Store):
        """The real store; a live create reserves the instant after the dead one is swept."""

        def _reservation(self, name: str, sweep: bool) -> str:
            state = super()._reservation(name, sweep)
            if sweep and name == "task_2.json.new":
                live.append(Store(self.path).reserve(lambda task_id: encode(record(task_id, subject="live"))))
            return state

    with SweptThenReserved(str(board_dir)).writing() as notes:
        pass
    assert [note.code for note in notes] == ["leftovers-removed"]
    assert live[0] is not None and live[0][0] == 2
    named, held = os.lstat(board_dir / ".scratch" / "task_2.json.new"), os.fstat(live[0][1])
    assert (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino)  # the live create's name, still there
    other = json.loads(run("create", "other", "--json").stdout)
    assert other["id"] == 3  # the live reservation's id is not given to anyone else
    Store(str(board_dir)).drop_reserved(*live[0])
    assert sorted(assert_sound(board_dir)) == [1, 3]


@pytest.mark.parametrize("first_on", ["the create robbed of its name", "the one that reserved it again"])
def test_a_create_whose_reservation_name_is_taken_from_it_puts_only_its_own_record_in_place(board_dir, run, first_on):
    """A create puts its reserved file in place through the file it holds open, never by its
    reservation's name. Should the name go while the create waits for the lock (removed by
    something that takes no lock: a person's rm, another version's recovery), a second create
    reserves the same id under the same name. Linked by name, the first create put the second's
    file in place and printed its own record, which was lost, and the second failed (exit 6,
    "nothing was changed") with its record on the board; or, the second first, the first
    failed so. Two real creates, each stopped right after it reserved: each must end well,
    its own record on the board at the id it printed, and the robbed one at another id."""
    run("create", "first")
    robbed = PausedCreate(board_dir, "robbed")
    assert robbed.reserved() == 2
    (board_dir / ".scratch" / "task_2.json.new").unlink()
    again = PausedCreate(board_dir, "again")
    assert again.reserved() == 2
    order = [robbed, again] if first_on == "the create robbed of its name" else [again, robbed]
    printed = {}
    for create in order:
        done = create.go_on()
        assert (done.returncode, done.stderr) == (0, b""), done.stderr
        made = json.loads(done.stdout)
        printed[made["subject"]] = made
    records = assert_sound(board_dir)  # no scratch file left either
    assert (printed["again"]["id"], printed["robbed"]["id"]) == (2, 3)
    for made in printed.values():
        assert records[made["id"]] == made  # what each printed is on the board, its own bytes
    assert _created_once(board_dir) == {1: 1, 2: 1, 3: 1}


def test_many_creates_killed_at_random_instants_lose_nothing_they_said_was_made(board_dir, run):
    """Eight real `tasks create` at once, round after round, three of each round killed -9 at a
    random instant (starting, reserving and writing, waiting for the lock, under it, syncing
    after it). After each round the next command leaves a sound board: every create that said
    ok is there as it printed it and journaled as created once; every task on the board is
    journaled as created exactly once (no file without its line, no line without its file);
    no id twice; no scratch file left."""
    rng = random.Random(2525)
    run("create", "first")  # the board and its scratch folder: creates reserve from here on
    said_ok: dict[int, dict] = {}
    interrupted, rounds = 0, 0
    while rounds < 6 or (interrupted < 3 and rounds < 30):
        rounds += 1
        # every other round another writer holds the board lock meanwhile: the creates reserve
        # their ids and wait, and the kills land among them (else mostly in a start-up)
        lock = os.open(board_dir / ".lock", os.O_RDONLY) if rounds % 2 else None
        if lock is not None:
            fcntl.flock(lock, fcntl.LOCK_EX)
        reserved = Watch(board_dir / ".scratch", IN_CREATE)
        creates = [
            subprocess.Popen([*TASKS, "--dir", str(board_dir), "create", f"r{rounds} n{n}", "--json"], **PIPES)
            for n in range(8)
        ]
        # where the kills land: once a random number of the creates reserved their ids (none:
        # in a start-up; all eight: while writing, or waiting for the lock when it is held);
        # what is asserted does not depend on it
        for _ in range(rng.randint(1 if lock is not None else 0, 8)):
            reserved.wait(lambda name: name.endswith(".json.new"))
        reserved.close()
        for victim in rng.sample(creates, 3):
            victim.kill()
        if lock is not None:
            os.close(lock)
        said = []
        for create in creates:
            out, err = create.communicate(timeout=60)
            said.append(err.decode())
            if create.returncode == 0:
                made = json.loads(out)
                assert made["id"] not in said_ok, "an id given twice"
                said_ok[made["id"]] = made
        # the next command finishes or drops what was left (a create that came later may have)
        said.append(run("--timeout", "5", "list", "--all", "--json").stderr)
        interrupted += any("leftover" in text or "interrupted change" in text for text in said)
        records = assert_sound(board_dir)  # no scratch file either
        assert _created_once(board_dir) == dict.fromkeys(records, 1)
        for task_id, made in said_ok.items():
            assert records[task_id] == made
    assert interrupted >= 3, f"only {interrupted} of {rounds} rounds killed a create mid-way"


def test_a_change_of_one_file_that_moves_a_task_has_its_intent_before_the_state_follows(board_dir, run):
    """The runtime state follows a change that moves a task (Store.write's `then`) once the
    change's intent is in place, whose `runtime` the recovery replays: a change of one file
    with nothing to journal took the fast path, which has no intent, so a kill between its
    file and the follow would have left the state behind for good."""
    run("--as", "ann", "claim", str(json.loads(run("create", "first", "--json").stdout)["id"]))
    claimed = json.loads((board_dir / "task_1.json").read_text())
    released = encode({**claimed, "status": "pending", "owner": ""})
    intent = board_dir / ".scratch" / "intent.json"
    seen: list[dict] = []
    store = Store(str(board_dir))
    with store.writing():
        store.write(
            {"task_1.json": released},
            then=lambda: seen.append(json.loads(intent.read_text())),
            runtime=[{"task": 1, "uid": claimed["uid"], "was": ["in_progress", "ann"]}],
        )
    assert [item["runtime"] for item in seen] == [[{"task": 1, "uid": claimed["uid"], "was": ["in_progress", "ann"]}]]
    assert not intent.exists() and json.loads((board_dir / "task_1.json").read_text())["status"] == "pending"


def test_an_intent_ends_only_the_claim_it_names(board_dir, run):
    """Another worktree asks a board's intent whether it ends a claim marked as being ended
    from there (claimrefs._intended): only a move away from that claim's owner, and, where
    the intent recorded which claim it ends, that very claim. (Any move away from any
    holder counted: a release of bob's ended cat's claim, as did cat's earlier claim's.)"""
    from taskboard.disk.store import intent_ends

    run("create", "first")
    uid = json.loads((board_dir / "task_1.json").read_text())["uid"]
    claim = {"owner": "cat", "board": str(board_dir), "at": 100.0, "renewed": 100.0, "lease": None}

    def ends(*items: dict) -> bool:
        runtime = [{"task": 1, "uid": uid, **item} for item in items]
        (board_dir / ".scratch" / "intent.json").write_text(json.dumps({"intent": 1, "files": {}, "runtime": runtime}))
        return intent_ends(str(board_dir), uid, claim)

    assert ends({"was": ["in_progress", "cat"], "ends": 100.0})
    assert ends({"was": ["in_progress", "cat"]})  # an intent written before `ends` was kept
    assert not ends({"was": ["in_progress", "bob"], "ends": 100.0})
    assert not ends({"was": ["in_progress", "cat"], "ends": 99.0})
    assert not ends({"was": ["in_progress", "cat"], "ends": None})
    assert not ends({"was": ["pending", ""]})
