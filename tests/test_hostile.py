"""Hostile files and hostile text (issue 10): every kind of file the board holds,
damaged or planted, full disks, escape codes in every text field, id and depth
limits, empty and odd paths. Real processes on real files; a size-limited tmpfs
for the full disk.

Rules these tests hold the board to (README, Guarantees):
- no control character from task text reaches output (C0, DEL, C1, line and
  paragraph separators, bidi overrides): it is shown escaped (`\\x1b`, `\\u009b`);
- a lone surrogate in a file is damage, named, exit 6, the rest shown;
- a lock that is not a regular file is named (exit 6), never waited on past --timeout;
- a full disk is exit 6 "no space left" naming the board, and changes nothing.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import TASKS, tasks_process
from invariants import assert_sound, hub_board, load_board, record, scratch_left, snapshot, write_board
from reserving import PausedCreate

MAX_ID = 2**63 - 1
META_DEPTH = 100  # the documented nesting limit (README, Decisions)
# Every control character a terminal may act on: C0, DEL, C1, and the Unicode line breaks.
CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029]")


def tasks(board: Path, *args: str, env: dict | None = None, input: bytes | None = None, timeout: float = 60):
    return tasks_process("--dir", str(board), *args, env=env, input=input, timeout=timeout)


def _one_gigabyte() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


def tasks_in_1gb(board: Path | None, *args: str, cwd: Path | None = None, timeout: float = 60):
    """`tasks` with 1 GB of address space: a command that reads a planted gigabyte whole
    fails (MemoryError, exit 1) instead of passing slowly."""
    where = ["--dir", str(board)] if board is not None else []
    return subprocess.run(
        [*TASKS, *where, *args], cwd=cwd, capture_output=True, timeout=timeout, preexec_fn=_one_gigabyte, check=False
    )


def error_of(result) -> dict:
    return json.loads(result.stderr.decode().strip().splitlines()[-1])["error"]


def no_trace(result) -> None:
    assert b"Traceback" not in result.stderr and b"internal error" not in result.stderr, result.stderr.decode()


@pytest.fixture
def b(tmp_path) -> Path:
    """The issue's board B: `tasks create a; tasks create b`."""
    board = tmp_path / "B"
    for subject in ("a", "b"):
        assert tasks(board, "create", subject).returncode == 0
    return board


def hand_edit(board: Path, task_id: int, **fields) -> None:
    """Rewrite one task file the way a person (or a hostile merge) would."""
    path = board / f"task_{task_id}.json"
    data = json.loads(path.read_text())
    data.update(fields)
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def try_mount(folder: Path, options: str) -> None:
    """Mount a tmpfs there for this test. The tests run as root, as CI does (.ci/run
    installs packages with apt-get): a mount that fails is a failure, never a skip."""
    folder.mkdir(parents=True, exist_ok=True)
    found = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)], capture_output=True)
    assert found.returncode == 0, f"cannot mount a tmpfs (the tests run as root): {found.stderr.decode().strip()}"


def unmount(folder: Path) -> None:
    subprocess.run(["umount", "-l", str(folder)], check=True)


# -- 1. a lone surrogate in a task file --------------------------------------------------


def _surrogate_board(board: Path) -> None:
    text = (board / "task_2.json").read_text().replace('"subject": "b"', '"subject": "b \\ud800"')
    (board / "task_2.json").write_text(text)


@pytest.mark.parametrize(
    "args, code, shown",
    [
        (["list"], 6, "#1"),
        (["list", "--json"], 6, '"id": 1'),
        (["ready"], 6, "#1"),
        (["get", "2"], 6, ""),
        (["get", "2", "--json"], 6, ""),
        (["board"], 6, "a"),
        (["board", "--json"], 6, '"id": 1'),
        (["graph"], 6, "#1"),
        (["graph", "--format", "dot"], 6, "t1"),
        (["check"], 6, ""),
        (["check", "--fix"], 6, ""),
        (["update", "1", "--add-blocks", "2"], 6, ""),
        (["delete", "1"], 6, ""),
    ],
)
def test_a_lone_surrogate_is_damage_named_by_every_reader(b, args, code, shown):
    _surrogate_board(b)
    before = snapshot(b)
    result = tasks(b, *args)
    no_trace(result)
    assert result.returncode == code, (args, result.returncode, result.stderr.decode())
    assert b"task_2.json" in result.stderr
    assert shown.encode() in result.stdout
    assert snapshot(b) == before


def test_a_lone_surrogate_leaves_the_rest_of_the_board_usable(b):
    _surrogate_board(b)
    assert tasks(b, "get", "1").returncode == 0
    assert tasks(b, "update", "1", "--subject", "still fine").returncode == 0
    report = json.loads(tasks(b, "check", "--json").stdout)
    assert not report["ok"]
    assert [p["file"] for p in report["problems"]] == ["task_2.json"]
    assert "surrogate" in report["problems"][0]["message"]


# -- 2, 3. a lock (or scratch) that is not a regular file ---------------------------------


def _folder(path: Path, outside: Path) -> None:
    path.mkdir()


def _fifo(path: Path, outside: Path) -> None:
    os.mkfifo(path)


def _socket(path: Path, outside: Path) -> None:
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(path))
    sock.close()  # the socket file stays


def _link_to_folder(path: Path, outside: Path) -> None:
    target = outside / "elsewhere"
    target.mkdir(exist_ok=True)
    os.symlink(target, path)


def _link_to_fifo(path: Path, outside: Path) -> None:
    target = outside / "a-fifo"
    os.mkfifo(target)
    os.symlink(target, path)


PLANTED = {
    "folder": _folder,
    "fifo": _fifo,
    "socket": _socket,
    "link to a folder": _link_to_folder,
    "link to a fifo": _link_to_fifo,
}
EVERY_COMMAND = [
    ["list"],
    ["list", "--json"],
    ["ready"],
    ["get", "1"],
    ["get", "1", "--json"],
    ["board"],
    ["graph"],
    ["check"],
    ["check", "--fix"],
    ["create", "x"],
    ["create", "x", "--json"],
    ["update", "1", "--subject", "y"],
    ["claim", "--owner", "bob"],
    ["delete", "2"],
    ["init"],
]


@pytest.mark.parametrize("kind", list(PLANTED))
def test_a_lock_that_is_not_a_regular_file_is_named_and_never_waited_on(b, kind):
    os.unlink(b / ".lock")
    PLANTED[kind](b / ".lock", b.parent)
    before = snapshot(b)
    for args in EVERY_COMMAND:
        # a hang past --timeout would raise TimeoutExpired here
        result = tasks(b, "--timeout", "1", *args, timeout=30)
        no_trace(result)
        assert result.returncode == 6, (kind, args, result.returncode, result.stderr.decode())
        assert b".lock" in result.stderr
        if "--json" in args:
            assert error_of(result)["code"] == "corrupt"
    assert snapshot(b) == before


@pytest.mark.parametrize("kind", ["fifo", "socket", "link to a fifo"])
def test_a_scratch_that_is_not_a_folder_never_hangs_and_is_cleared(b, kind):
    """.scratch is ours and git-ignored: whatever is planted there is removed (never
    followed), as recovery removes any leftover, and the board goes on."""
    shutil.rmtree(b / ".scratch")
    PLANTED[kind](b / ".scratch", b.parent)
    result = tasks(b, "--timeout", "1", "list", timeout=30)
    no_trace(result)
    assert result.returncode == 0 and b"#1" in result.stdout
    assert tasks(b, "--timeout", "1", "create", "c", timeout=30).returncode == 0
    assert (b / ".scratch").is_dir() and not (b / ".scratch").is_symlink()
    assert_sound(b)


@pytest.mark.parametrize("kind", ["fifo", "socket", "folder", "link to a fifo"])
def test_a_planted_intent_that_is_not_a_file_is_discarded(b, kind):
    before = snapshot(b)  # before planting: reading a FIFO would wait for a writer
    (b / ".scratch").mkdir(exist_ok=True)
    PLANTED[kind](b / ".scratch" / "intent.json", b.parent)
    result = tasks(b, "--timeout", "1", "list", timeout=30)
    no_trace(result)
    assert result.returncode == 0 and b"discarded" in result.stderr
    assert scratch_left(b) == []
    assert snapshot(b) == before


# -- 4. a full disk -------------------------------------------------------------------------


def _fill(folder: Path, leave: int) -> Path:
    """Take all the free space of folder's file system but `leave` bytes."""
    stats = os.statvfs(folder)
    free = stats.f_bavail * stats.f_frsize
    filler = folder / "filler"
    with open(filler, "wb") as out, contextlib.suppress(OSError):
        out.write(b"\0" * max(free - leave, 0))
    return filler


@pytest.fixture
def small_disk(tmp_path):
    mount = tmp_path / "disk"
    try_mount(mount, "size=1m")
    yield mount
    unmount(mount)


def test_a_full_disk_is_named_changes_nothing_and_is_never_replayed(small_disk):
    """A hub blocking 20 tasks, completed with less and less room left: every attempt
    either succeeds whole or fails with exit 6 "no space left" naming the board, leaves
    no scratch file, and nothing it failed to do is applied later when space returns."""
    failures = 0
    for leave in (0, 2048, 4096, 8192, 12288, 16384, 24576, 32768, 49152, 65536, 98304):
        board = small_disk / f"board-{leave}"
        hub_board(board, dependents=20)
        assert tasks(board, "init").returncode == 0
        before = snapshot(board)
        filler = _fill(small_disk, leave)
        result = tasks(board, "update", "1", "--status", "completed")
        no_trace(result)
        assert result.returncode in (0, 6), (leave, result.returncode, result.stderr.decode())
        if result.returncode == 6:
            failures += 1
            message = result.stderr.decode()
            assert "no space left" in message and str(board) in message, message
            assert snapshot(board) == before, f"a failed change left traces (leave={leave})"
            listed = tasks(board, "list")  # the board stays readable while the disk is full
            assert listed.returncode == 0 and b"[ ] #1: hub" in listed.stdout, listed.stderr
        filler.unlink()
        after = tasks(board, "get", "1", "--json")
        assert after.returncode == 0 and b"interrupted" not in after.stderr, after.stderr
        expected = "completed" if result.returncode == 0 else "pending"
        assert json.loads(after.stdout)["status"] == expected, leave
        assert_sound(board)
        shutil.rmtree(board)
    assert failures, "the disk never filled up: the test proved nothing"


def test_a_full_disk_on_create_and_on_a_first_write(small_disk):
    board = small_disk / "board"
    assert tasks(board, "create", "first").returncode == 0
    before = snapshot(board)
    filler = _fill(small_disk, 0)
    for args in (["create", "x", "-d", "y" * 60000], ["create", "x"], ["update", "1", "-d", "z" * 60000]):
        result = tasks(board, *args)
        no_trace(result)
        if result.returncode != 0:
            assert result.returncode == 6 and b"no space left" in result.stderr, result.stderr
        else:
            before = snapshot(board)
    assert snapshot(board) == before
    fresh = small_disk / "fresh"
    result = tasks(fresh, "create", "x", "--json")
    no_trace(result)
    assert result.returncode in (0, 6)
    if result.returncode == 6:
        assert error_of(result)["code"] == "corrupt" and "no space left" in error_of(result)["message"]
    filler.unlink()
    assert tasks(fresh, "create", "y").returncode == 0
    assert (fresh / ".gitignore").exists() and (fresh / ".gitattributes").exists()
    assert_sound(fresh)
    assert_sound(board)


def test_a_read_only_board_refuses_changes_by_name(small_disk):
    board = small_disk / "board"
    assert tasks(board, "create", "a").returncode == 0
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
    try:
        before = snapshot(board)
        result = tasks(board, "update", "1", "--status", "completed")
        no_trace(result)
        assert result.returncode == 6, result.stderr
        assert b"read-only" in result.stderr and str(board).encode() in result.stderr
        assert tasks(board, "list").returncode == 0
        assert snapshot(board) == before
    finally:
        subprocess.run(["mount", "-o", "remount,rw", str(small_disk)], check=True)


# -- 5. a first write killed right after creating the folder -------------------------------


def test_a_board_left_bare_by_a_killed_first_write_gets_its_git_files(tmp_path):
    for command in (["list"], ["get", "1"], ["create", "x"], ["check"]):
        board = tmp_path / ("bare-" + command[0])
        board.mkdir()  # all a first write killed after mkdir leaves
        tasks(board, *command)
        assert (board / ".gitignore").read_text().count(".lock") == 1, command
        assert (board / ".gitattributes").exists(), command


def test_a_first_write_killed_between_its_git_files_is_finished(tmp_path):
    board = tmp_path / "board"
    killed = tasks(board, "create", "x", env={"TASKS_TEST_CRASH_AFTER": "1"})
    assert killed.returncode == -9
    assert (board / ".gitignore").exists() and not (board / ".gitattributes").exists()
    assert tasks(board, "list").returncode == 0
    assert (board / ".gitattributes").read_text().startswith("task_*.json text eol=lf")


def test_git_files_removed_from_a_board_with_tasks_stay_removed(b):
    """A board with tasks whose owner removed .gitattributes on purpose is left alone."""
    os.unlink(b / ".gitattributes")
    assert tasks(b, "create", "c").returncode == 0
    assert not (b / ".gitattributes").exists()


# -- 6-9. control characters in text ---------------------------------------------------------


HOSTILE = "\x1b]0;pwned\x07\x1b[2J\x9b31m\x85\u2028\u202e\x7f"


VIEWS = [
    (["list"], 0),
    (["list", "--all"], 0),
    (["ready"], 0),
    (["get", "1"], 0),
    (["get", "2"], 0),
    (["board"], 0),
    (["graph"], 0),
    (["graph", "1"], 0),
    (["graph", "--format", "dot"], 0),
    (["graph", "--format", "mermaid"], 0),
    (["update", "1", "-d", "seen"], 0),
    (["--as", "me", "claim", "1"], 4),  # refused: the message names the hostile owner
    (["--as", "me", "update", "1", "--status", "pending", "--json"], 4),
    (["check"], 6),  # reports the control characters
]


@pytest.mark.parametrize("colour", [False, True], ids=["plain", "terminal"])
def test_no_control_character_from_task_text_reaches_any_output(b, colour):
    """Hostile subject, owner, description, metadata and unknown keys, written by hand."""
    hand_edit(b, 1, subject="x" + HOSTILE, owner="o" + HOSTILE, description="d\n" + HOSTILE, blocks=[2])
    hand_edit(b, 2, blockedBy=[1], metadata={"note" + HOSTILE: "m" + HOSTILE, "deep": [{"k": HOSTILE}]})
    data = json.loads((b / "task_2.json").read_text())
    data["extra" + HOSTILE] = HOSTILE
    (b / "task_2.json").write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    env = {"FORCE_COLOR": "1", "COLUMNS": "200"} if colour else {"NO_COLOR": "1"}
    hand_edit(b, 1, status="in_progress")
    for args, code in VIEWS:
        result = tasks(b, *args, env=env)
        no_trace(result)
        assert result.returncode == code, (args, result.stderr.decode())
        for stream in (result.stdout.decode(), result.stderr.decode()):
            if colour:  # rich writes its own SGR codes; none of ours may pass
                stream = re.sub(r"\x1b\[[0-9;]*m", "", stream)
                stream = re.sub(r"\x1b\]8;[^\x1b]*\x1b\\", "", stream)  # rich's hyperlinks, if any
            assert not CONTROL.search(stream.replace("\n", "")), (args, stream)
            assert "\u202e" not in stream
    shown = tasks(b, "get", "1", env={"NO_COLOR": "1"}).stdout.decode()
    assert "\\x1b]0;pwned\\x07\\x1b[2J\\u009b31m\\u0085" in shown


def test_escape_codes_given_with_meta_reach_no_plain_output(b):
    assert tasks(b, "update", "1", "--meta", "note=\x1b[2J\x1b[31mX").returncode == 0
    shown = tasks(b, "get", "1", env={"NO_COLOR": "1"})
    assert b"\x1b" not in shown.stdout and b"\\x1b[2J\\x1b[31mX" in shown.stdout
    assert json.loads(tasks(b, "get", "1", "--json").stdout)["metadata"]["note"] == "\x1b[2J\x1b[31mX"


def test_json_output_carries_no_raw_control_character(b):
    hand_edit(b, 1, subject="x\x9b\x85\x7f\u2028y")
    for args in (["get", "1", "--json"], ["list", "--json"], ["board", "--json"], ["graph", "--json"]):
        result = tasks(b, *args)
        assert result.returncode == 0
        assert not CONTROL.search(result.stdout.decode().replace("\n", "")), args
    assert json.loads(tasks(b, "get", "1", "--json").stdout)["subject"] == "x\x9b\x85\x7f\u2028y"


def test_a_newline_in_a_hand_edited_subject_forges_no_task_line(b):
    hand_edit(b, 2, subject="x\n[x] #99: forged")
    listed = tasks(b, "list")
    assert listed.returncode == 0
    assert listed.stdout.decode().splitlines() == ["[ ] #1: a", "[ ] #2: x\\n[x] #99: forged"]
    report = json.loads(tasks(b, "check", "--json").stdout)
    assert not report["ok"]
    assert [(p["file"], p["rule"]) for p in report["problems"]] == [("task_2.json", "control-character")]
    assert tasks(b, "check").returncode == 6


@pytest.mark.parametrize(
    "field, value",
    [
        ("subject", "x\x1b[2J"),
        ("subject", "x\x9by"),
        ("owner", "amy\x85"),
        ("owner", "\x1b]0;t\x07"),
        ("description", "d\x1b[31m"),
        ("description", "d\x9b"),
    ],
)
def test_check_reports_control_characters_in_text_fields(b, field, value):
    hand_edit(b, 1, **{field: value})
    report = json.loads(tasks(b, "check", "--json").stdout)
    assert not report["ok"]
    problem = report["problems"][0]
    assert (problem["file"], problem["rule"], problem["fixed"]) == ("task_1.json", "control-character", False)
    assert not CONTROL.search(tasks(b, "check").stderr.decode().replace("\n", ""))


@pytest.mark.parametrize(
    "args",
    [
        ["create", "csi \x9b31m"],
        ["create", "next line \x85"],
        ["create", "separator \u2028 here"],
        ["create", "x", "--owner", "amy\x9b"],
        ["create", "x", "--owner", "amy\x85"],
        ["update", "1", "--owner", "x\x9b"],
        ["update", "1", "--subject", "y\x85"],
        ["create", "x", "-d", "d\x9b"],
        ["create", "x", "--meta", "k\x9b=1"],
        ["--as", "me\x9b", "update", "1", "--status", "in_progress"],
        ["--as", "me\x1b[2J", "claim"],
    ],
)
def test_c1_controls_are_refused_on_input(b, args):
    before = snapshot(b)
    result = tasks(b, *args)
    no_trace(result)
    assert result.returncode == 2, (args, result.stderr.decode())
    assert b"control character" in result.stderr
    assert not CONTROL.search(result.stderr.decode().replace("\n", ""))
    assert snapshot(b) == before


# -- 10. the id ceiling ----------------------------------------------------------------------


def test_no_ids_left_above_the_ceiling(b):
    write_board(b, [record(MAX_ID, subject="the last id", uid="7fffffffffff")])
    before = snapshot(b)
    for args in (["create", "x"], ["create", "x", "--json"]):
        result = tasks(b, *args)
        no_trace(result)
        assert result.returncode == 4 and b"no ids left" in result.stderr, result.stderr
    assert snapshot(b) == before
    assert tasks(b, "get", str(MAX_ID)).returncode == 0


@pytest.mark.parametrize("name", [f"task_{MAX_ID + 1}.json", "task_99999999999999999999999.json"])
def test_file_names_above_the_ceiling_never_count(b, name):
    (b / name).write_text(json.dumps(record(MAX_ID + 1)))
    created = tasks(b, "create", "c", "--json")
    assert created.returncode == 0 and json.loads(created.stdout)["id"] == 3
    listed = tasks(b, "list", "--json")
    assert [r["id"] for r in json.loads(listed.stdout)] == [1, 2, 3]
    report = json.loads(tasks(b, "check", "--json").stdout)
    assert [(p["file"], p["rule"]) for p in report["problems"]] == [(name, "file-name")]


def test_edges_to_ids_above_the_ceiling_are_damage(b):
    hand_edit(b, 1, blocks=[MAX_ID + 1])
    assert tasks(b, "get", "1").returncode == 6
    report = json.loads(tasks(b, "check", "--json").stdout)
    assert [(p["file"], p["rule"]) for p in report["problems"]] == [("task_1.json", "type")]


# -- 11. an empty board path ------------------------------------------------------------------


@pytest.mark.parametrize(
    "args", [["create", "x"], ["create", "x", "--json"], ["list"], ["list", "--json"], ["get", "1", "--json"]]
)
def test_an_empty_board_path_is_a_usage_error(tmp_path, args):
    found = tmp_path / ".tasks"
    assert tasks(found, "create", "existing").returncode == 0
    before = snapshot(found)
    for how in ({"flag": True}, {"flag": False}):
        if how["flag"]:
            result = tasks_process("--dir", "", *args, cwd=tmp_path)
        else:
            result = tasks_process(*args, cwd=tmp_path, env={"TASKS_DIR": ""})
        no_trace(result)
        assert result.returncode == 2, (how, args, result.returncode, result.stderr.decode())
        assert b"empty" in result.stderr and result.stdout == b""
    assert snapshot(found) == before


# -- 12. metadata nesting ------------------------------------------------------------------------


def _nested(levels: int):
    value: object = "leaf"
    for _ in range(levels):
        value = [value]
    return value


def _deep_file(board: Path, levels: int) -> None:
    """task_2.json with metadata.k nested `levels` deep, as a hand edit could write it."""
    text = (board / "task_2.json").read_text()
    deep = "[" * levels + '"leaf"' + "]" * levels
    (board / "task_2.json").write_text(text.replace('"metadata": {}', '"metadata": {"k": ' + deep + "}"))


@pytest.mark.parametrize("levels", [META_DEPTH, META_DEPTH + 1, 500, 981, 982, 990, 5000])
def test_one_nesting_limit_on_reading_in_every_command(b, levels):
    _deep_file(b, levels)
    expected = 0 if levels <= META_DEPTH else 6
    for args in (
        ["get", "2"],
        ["get", "2", "--json"],
        ["list"],
        ["list", "--json"],
        ["board"],
        ["graph", "--json"],
        ["check"],
        ["check", "--json"],
        ["update", "2", "--subject", "z", "--json"],
    ):
        result = tasks(b, *args)
        no_trace(result)
        assert result.returncode == expected, (levels, args, result.returncode, result.stderr.decode())
        if expected:
            assert b"task_2.json" in result.stderr + result.stdout and b"nested" in result.stderr + result.stdout


def test_the_same_nesting_limit_on_input(b):
    deep = json.dumps(_nested(META_DEPTH))
    assert tasks(b, "update", "1", "--meta", f"k={deep}").returncode == 0
    too_deep = tasks(b, "update", "1", "--meta", f"k={json.dumps(_nested(META_DEPTH + 1))}")
    assert too_deep.returncode == 2 and b"nested too deeply" in too_deep.stderr
    assert tasks(b, "get", "1").returncode == 0 and tasks(b, "check").returncode == 0


# -- also seen: odd paths, SVG targets, damaged neighbours ------------------------------------


@pytest.mark.parametrize("args", [["create", "x"], ["init"], ["create", "x", "--json"]])
def test_an_unusable_board_path_exits_6(args):
    result = tasks_process("--dir", "/proc/x", *args)
    no_trace(result)
    assert result.returncode == 6 and b"/proc/x" in result.stderr, result.stderr


def test_a_board_path_that_loops_exits_6(tmp_path):
    os.symlink(tmp_path / "loop", tmp_path / "loop")
    for args in (["create", "x"], ["list"], ["check"]):
        result = tasks(tmp_path / "loop", *args)
        no_trace(result)
        assert result.returncode == 6 and b"loop" in result.stderr, (args, result.stderr)


@pytest.mark.parametrize("command", ["board", "graph"])
def test_svg_to_a_missing_folder_fails_before_any_output(b, tmp_path, command):
    for target, code in (
        (tmp_path / "nonexistent" / "dir" / "x.svg", 2),
        (tmp_path, 2),  # a folder
        (b / "task_1.json" / "x.svg", 2),  # under a file
    ):
        result = tasks(b, command, "--svg", str(target))
        no_trace(result)
        assert result.returncode == code, (target, result.returncode, result.stderr)
        assert result.stdout == b"", target


@pytest.mark.parametrize("command", ["board", "graph"])
def test_svg_to_an_unwritable_folder_fails_before_any_output(b, tmp_path, command):
    readonly = tmp_path / "ro"
    try_mount(readonly, "size=64k,ro")
    try:
        result = tasks(b, command, "--svg", str(readonly / "x.svg"))
        no_trace(result)
        assert result.returncode == 6 and result.stdout == b"", result.stderr
        assert str(readonly / "x.svg").encode() in result.stderr
    finally:
        unmount(readonly)


@pytest.mark.parametrize("command", ["board", "graph"])
def test_svg_into_the_board_is_refused(b, command):
    before = snapshot(b)
    result = tasks(b, command, "--svg", str(b / "task_1.json"))
    no_trace(result)
    assert result.returncode == 2 and result.stdout == b""
    assert snapshot(b) == before


def test_get_with_a_damaged_blocker_shows_it_and_exits_6(b):
    """As for list: shown, the damaged file named on stderr, exit 6. (`get --json` needs
    the task's own file alone, and reads nothing else: tests/test_footprint.py.)"""
    assert tasks(b, "update", "2", "--add-blocked-by", "1").returncode == 0
    (b / "task_1.json").write_text("{ damaged")
    for env in ({"NO_COLOR": "1"}, {"FORCE_COLOR": "1"}):
        result = tasks(b, "get", "2", env=env)
        no_trace(result)
        assert result.returncode == 6 and b"task_1.json" in result.stderr
        assert b"#2" in result.stdout and b"#1" in result.stdout
    assert tasks(b, "list").returncode == 6  # the same rule on the same board
    alone = tasks(b, "get", "2", "--json")
    assert alone.returncode == 0 and json.loads(alone.stdout)["blockedBy"] == [1]


def test_load_board_helper_sees_what_the_tests_wrote(b):
    """The fixture is the issue's board: two pending tasks, sound."""
    assert sorted(load_board(b)) == [1, 2]
    assert_sound(b)


# -- the review: the next ten, found by trying every file the board holds ----------------------


def _mknod_zero(path: Path) -> None:
    """A character device that reads zeros forever, like /dev/zero (root makes it: the
    tests run as root, as CI does; a failure to make it fails the test)."""
    os.mknod(path, 0o644 | stat.S_IFCHR, os.makedev(1, 5))


@pytest.mark.parametrize("kind", ["device", "sparse 3 GB"])
def test_a_device_or_a_huge_file_as_a_task_file_is_damage_named_at_once(b, kind):
    """A planted /dev/zero or a sparse 3 GB task_3.json once hung `list` or filled memory."""
    if kind == "device":
        _mknod_zero(b / "task_3.json")
    else:
        with open(b / "task_3.json", "wb") as out:
            out.truncate(3 << 30)
    for args in (["list"], ["list", "--json"], ["get", "3"], ["board"], ["check"], ["create", "c", "--blocks", "3"]):
        result = tasks_in_1gb(b, "--timeout", "2", *args)
        no_trace(result)
        assert result.returncode == 6 and b"task_3.json" in result.stderr, (args, result.stderr)
    assert [r["id"] for r in json.loads(tasks(b, "list", "--json").stdout)] == [1, 2]


def test_no_change_writes_a_task_file_larger_than_a_reader_takes(b):
    text = (b / "task_1.json").read_text()
    (b / "task_1.json").write_text(text.replace('"metadata": {}', '"metadata": {"big": "' + "x" * (16 << 20) + '"}'))
    assert tasks(b, "get", "1").returncode == 6  # past 16 MiB: damaged, as for every reader
    (b / "task_1.json").write_text(
        text.replace('"metadata": {}', '"metadata": {"big": "' + "x" * ((16 << 20) - 400) + '"}')
    )
    assert tasks(b, "get", "1", "--json").returncode == 0
    before = snapshot(b)
    result = tasks(b, "update", "1", "--meta", "more=" + "y" * 1000)
    no_trace(result)
    assert result.returncode == 2 and b"16 MiB" in result.stderr
    assert snapshot(b) == before


def test_a_journal_line_without_end_costs_no_memory_and_is_reported(b):
    shard = next((b / "journal").iterdir())
    with open(shard, "ab") as out:
        out.write(b"x" * (40 << 20))  # 40 MB and no newline: a planted or torn line
    for args in (["log"], ["log", "--limit", "2"], ["get", "1"], ["log", "--json"]):
        result = tasks_in_1gb(b, *args)
        no_trace(result)
        assert result.returncode == 0 and b"damaged journal line" in result.stderr, (args, result.stderr)
    report = tasks(b, "check", "--json", timeout=60)
    assert any("longer than 4 MiB" in p["message"] for p in json.loads(report.stdout)["problems"])


@pytest.mark.parametrize("line", ['"actor": "x\\ud800"', '"deep": ' + "[" * 200 + "]" * 200])
def test_a_journal_line_with_half_a_character_or_deep_nesting_is_damaged_not_a_crash(b, line):
    shard = next((b / "journal").iterdir())
    with open(shard, "a") as out:
        out.write('{"at": "2026-12-01T00:00:00.000Z", "actor": "x", "task": 1, "event": "note", ' + line + "}\n")
    for args in (["log"], ["log", "--json"], ["get", "1"], ["log", "1", "--limit", "5"]):
        result = tasks(b, *args)
        no_trace(result)
        assert result.returncode == 0 and b"damaged journal line" in result.stderr, (args, result.stderr)
    report = json.loads(tasks(b, "check", "--json").stdout)
    assert not report["ok"] and [p["rule"] for p in report["problems"]] == ["journal"]


def test_a_huge_planted_cache_is_never_read_and_is_rebuilt(b):
    assert tasks(b, "list").returncode == 0  # the cache exists
    for name in ("index", "history"):
        path = b / ".cache" / name
        path.unlink(missing_ok=True)
        with open(path, "wb") as out:
            out.truncate(3 << 30)
    for args in (["list"], ["list", "--json"], ["board"], ["ready"]):
        result = tasks_in_1gb(b, *args)
        no_trace(result)
        assert result.returncode == 0 and (b"#1" in result.stdout or b'"id": 1' in result.stdout), args
    assert (b / ".cache" / "index").stat().st_size < 1 << 20  # a real cache again


@pytest.mark.parametrize("kind", ["fifo", "huge file"])
def test_a_hostile_dot_git_beside_the_board_never_hangs(tmp_path, kind):
    """Every command looks for an unfinished merge by reading `.git`: a FIFO there hung them."""
    if kind == "fifo":
        os.mkfifo(tmp_path / ".git")
    else:
        with open(tmp_path / ".git", "wb") as out:
            out.truncate(3 << 30)
    for args in (["create", "a"], ["list"], ["--as", "amy", "claim"], ["check"], ["get", "1"]):
        result = tasks_in_1gb(None, "--timeout", "2", *args, cwd=tmp_path, timeout=30)
        no_trace(result)
        assert result.returncode in (0, 6), (args, result.returncode, result.stderr)
    assert json.loads(tasks_process("get", "1", "--json", cwd=tmp_path).stdout)["status"] == "in_progress"


def test_svg_through_a_link_into_the_board_is_refused(b, tmp_path):
    os.symlink(b / "task_1.json", tmp_path / "picture.svg")
    before = snapshot(b)
    for command in ("board", "graph"):
        result = tasks(b, command, "--svg", str(tmp_path / "picture.svg"))
        no_trace(result)
        assert result.returncode == 2 and result.stdout == b"" and b"inside the board" in result.stderr
    assert snapshot(b) == before


@pytest.mark.parametrize("how", ["flag", "env"])
def test_a_caller_name_with_control_characters_is_a_usage_error(b, how):
    name = "ev\x1b[2Jil"
    before = snapshot(b)
    for args in (["create", "x"], ["update", "1", "--status", "in_progress"], ["note", "1", "hi"], ["claim"]):
        result = tasks(b, "--as", name, *args) if how == "flag" else tasks(b, *args, env={"TASKS_OWNER": name})
        no_trace(result)
        assert result.returncode == 2 and b"control characters" in result.stderr, (args, result.stderr)
        assert b"\x1b" not in result.stderr
    assert snapshot(b) == before


def test_a_full_standard_output_is_named_and_a_change_made_stays_made(b):
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)  # Linux always has it: a write to it fails with ENOSPC
    for args in (["list"], ["get", "1"], ["list", "--json"], ["create", "c"], ["create", "d", "--json"]):
        with open("/dev/full", "wb") as full:
            done = subprocess.run(
                [*TASKS, "--dir", str(b), *args], stdout=full, stderr=subprocess.PIPE, timeout=60, check=False
            )
        no_trace(done)
        assert done.returncode == 6 and b"standard output" in done.stderr, (args, done.stderr)
    assert [r["subject"] for r in json.loads(tasks(b, "list", "--json").stdout)] == ["a", "b", "c", "d"]
    with open("/dev/full", "wb") as full:  # stderr full too: the exit code still says what happened
        done = subprocess.run([*TASKS, "--dir", str(b), "get", "9"], stderr=full, capture_output=False, timeout=60)
    assert done.returncode == 3


def _close_stdout() -> None:
    os.close(1)  # `tasks ... >&-`: the command starts with no standard output at all


# the fast path (list, ready, get, create --json) and the click tree (board, log, create, claim --as)
CLOSED_OUT_READS = (["list", "--json"], ["ready"], ["get", "1"], ["board"], ["log", "--json"])
CLOSED_OUT_WRITES = ((["create", "c", "--json"], 3), (["create", "d"], 4), (["claim", "1", "--as", "bob", "--json"], 1))


def test_a_closed_standard_output_is_named_and_a_change_made_names_its_task(b):
    """`tasks list --json >&-` was an internal error (None has no `write`) and a write
    made its change and then called itself a bug; now: exit 6 naming standard output,
    and a write says that its change was made and which task to look at."""
    for args in CLOSED_OUT_READS:
        done = subprocess.run(
            [*TASKS, "--dir", str(b), *args], stderr=subprocess.PIPE, preexec_fn=_close_stdout, timeout=60, check=False
        )
        no_trace(done)
        assert done.returncode == 6 and b"standard output: cannot be written (closed" in done.stderr, (
            args,
            done.stderr,
        )
    for args, task_id in CLOSED_OUT_WRITES:
        done = subprocess.run(
            [*TASKS, "--dir", str(b), *args], stderr=subprocess.PIPE, preexec_fn=_close_stdout, timeout=60, check=False
        )
        no_trace(done)
        last = done.stderr.decode().strip().splitlines()[-1]
        assert done.returncode == 6 and "standard output" in last, (args, done.stderr)
        assert f"the change was made: tasks get {task_id} shows #{task_id}" in last, (args, last)
    records = json.loads(tasks(b, "list", "--json").stdout)
    assert [r["subject"] for r in records] == ["a", "b", "c", "d"]
    assert (records[0]["status"], records[0]["owner"]) == ("in_progress", "bob")


def test_a_reader_that_goes_away_ends_the_command_quietly(b):
    """A closed pipe (`tasks log --json | head -c 1`): exit 0 and nothing on stderr, as
    Unix tools at the head of a pipe end, through click as on the fast path (click
    exited 1, the contract's code for a bug); a write it made stays made."""
    reading, writing = os.pipe()
    os.close(reading)  # the reader is gone before the first byte: every write meets EPIPE
    try:
        for args in (["list", "--json"], ["get", "1"], ["log", "--json"], ["board"], ["claim", "1", "--as", "bob"]):
            done = subprocess.run(
                [*TASKS, "--dir", str(b), *args], stdout=writing, stderr=subprocess.PIPE, timeout=60, check=False
            )
            assert (done.returncode, done.stderr) == (0, b""), (args, done.stderr)
    finally:
        os.close(writing)
    assert json.loads(tasks(b, "get", "1", "--json").stdout)["owner"] == "bob"


def test_a_planted_intent_of_damaged_records_is_never_replayed(b):
    before = snapshot(b)
    (b / ".scratch").mkdir(exist_ok=True)
    files = {"task_1.json": "garbage", "task_2.json": json.dumps({"id": 2})}
    (b / ".scratch" / "intent.json").write_text(json.dumps({"intent": 1, "files": files}))
    result = tasks(b, "list")
    no_trace(result)
    assert result.returncode == 0 and b"discarded" in result.stderr
    assert snapshot(b) == before and scratch_left(b) == []


def test_a_planted_intent_whose_runtime_is_junk_replays_its_files_and_nothing_else(b):
    """An intent names the tasks whose status or owner it moves, for the runtime state to
    follow them when it is replayed; a planted one naming junk, or tasks it carries no file
    of, changes nothing there and never stops the command."""
    before = snapshot(b)
    (b / ".scratch").mkdir(exist_ok=True)
    one = (b / "task_1.json").read_text()
    uid = json.loads(one)["uid"]
    runtime = [
        5,
        {"task": [1], "uid": uid, "was": ["in_progress", "cat"]},
        {"task": 1, "uid": uid, "was": "in_progress"},
        {"task": 1, "uid": uid, "was": ["in_progress", 7]},
        {"task": 1, "uid": "0" * 12, "was": ["in_progress", "cat"]},
        {"task": 2, "uid": uid, "was": ["in_progress", "cat"]},
    ]
    intent = {"intent": 1, "files": {"task_1.json": one}, "runtime": runtime}
    (b / ".scratch" / "intent.json").write_text(json.dumps(intent))
    result = tasks(b, "list")
    no_trace(result)
    assert result.returncode == 0 and b"completed an interrupted change" in result.stderr
    assert snapshot(b) == before and scratch_left(b) == []


# -- the review after the next ten: permissions, forged caches, machinery of the wrong kind -------


def _as_nobody() -> list[str]:
    """Run as an unprivileged user when the tests run as root (root ignores permissions,
    so a permission test as root would prove nothing); as the caller otherwise."""
    if os.geteuid() != 0:
        return []
    assert shutil.which("setpriv"), "running as root without setpriv (util-linux): permissions cannot be tested"
    return ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


def _board_of_the_other_user(open_folder: Path, tasks_for_anyone: list[str]):
    """A board folder `B` of the unprivileged user (_as_nobody), and `tasks --dir B ...` run
    as that user from the copy anyone can read (tasks_for_anyone)."""
    user = _as_nobody()
    board = open_folder / "B"
    board.mkdir()
    if user:
        os.chown(board, 65534, 65534)

    def run(*command: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [*user, *tasks_for_anyone, "--dir", str(board), *command], capture_output=True, timeout=60
        )

    return board, run


@pytest.fixture
def open_folder():
    """A folder an unprivileged user can reach (pytest's tmp_path is private to root)."""
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="taskboard-perm-"))
    folder.chmod(0o755)
    yield folder
    for path in [folder, *folder.rglob("*")]:
        with contextlib.suppress(OSError):
            if path.is_dir() and not path.is_symlink():
                path.chmod(0o755)
    shutil.rmtree(folder)


# What `tasks` imports (click for the command line, rich for people, filelock for its lock).
_PRODUCT = ("taskboard", "click", "filelock", "rich", "markdown_it", "mdurl", "pygments")


@pytest.fixture(scope="module")
def tasks_for_anyone():
    """`tasks` as another user can run it, wherever this checkout lies: a clone in a
    `mktemp -d` folder (0700) is out of that user's reach, so the product and what it
    imports are copied to a folder anyone may read, and run by an interpreter that user
    can run (before: "No module named taskboard" in any private checkout)."""
    import importlib
    import sys
    import tempfile

    if not _as_nobody():
        yield TASKS
        return
    folder = Path(tempfile.mkdtemp(prefix="taskboard-product-"))
    folder.chmod(0o755)
    for name in _PRODUCT:
        source = Path(importlib.import_module(name).__file__ or "").parent
        shutil.copytree(source, folder / name, ignore=shutil.ignore_patterns("__pycache__"))
    candidates = [sys.executable, os.path.realpath(sys.executable), shutil.which("python3"), "/usr/bin/python3"]
    command = []
    for python in filter(None, candidates):
        command = ["env", f"PYTHONPATH={folder}", python, "-s", "-m", "taskboard"]
        probe = subprocess.run([*_as_nobody(), *command, "--version"], capture_output=True, timeout=60)
        if probe.returncode == 0:
            break
    else:
        pytest.fail(f"no Python interpreter that the user nobody may run: {candidates}")
    yield command
    shutil.rmtree(folder)


@pytest.mark.parametrize(
    "args",
    [["update", "1", "-d", "x"], ["done", "1"], ["create", "c"], ["delete", "2"], ["claim", "1", "--owner", "z"]],
)
def test_a_board_folder_without_write_access_changes_nothing_then_or_later(open_folder, tasks_for_anyone, args):
    """The board folder is read-only to its user but `.scratch/` and `journal/` are not: a
    change stages its files and intent, then cannot move them into place. It must undo
    that and say nothing changed, and no later command may apply it (before: exit 6 "the
    next command completes the change", every read exit 6, and the failed change applied
    once the permission came back)."""
    board, run = _board_of_the_other_user(open_folder, tasks_for_anyone)
    assert run("create", "a").returncode == 0 and run("create", "b", "--blocked-by", "1").returncode == 0
    before = snapshot(board)
    board.chmod(0o500)
    result = run(*args)
    no_trace(result)
    assert result.returncode == 6, result.stderr
    assert b"nothing was changed" in result.stderr and str(board).encode() in result.stderr, result.stderr
    assert snapshot(board) == before and scratch_left(board) == []
    listed = run("list")
    assert listed.returncode == 0 and listed.stdout == b"[ ] #1: a\n[ ] #2: b\n", listed.stderr
    board.chmod(0o700)
    after = run("list")
    assert after.returncode == 0 and b"interrupted" not in after.stderr, after.stderr
    assert snapshot(board) == before
    assert_sound(board)


def _out_of_reach(path: Path) -> None:
    """A file of the test's user that the other user cannot open: a umask of 077 made it so
    where the other user is nobody; where the tests run unprivileged, that other user is the
    test's user itself, and mode 0 keeps its own later processes out."""
    if not _as_nobody():
        path.chmod(0)


def test_a_reservation_another_user_cannot_open_is_held_until_one_who_can_finds_it_dead(open_folder, tasks_for_anyone):
    """A board two users share; one of them creates under umask 077, so the file a create
    reserves its id with (.scratch/task_N.json.new, Store.reserve: flocked while its create
    lives) is its own to open. The other user's commands cannot look at its flock. They took
    it for a leftover and removed it: another create then reserved the same id, and the first
    put that one's file in place while printing its own record (lost), the other failing with
    its record on the board. A reservation no one can look into is held: passed by, its id
    given to nobody else, live or dead; once its process is gone, the next command of a user
    who can look at it (its own, or root) removes it."""
    user = _as_nobody()
    board, other = _board_of_the_other_user(open_folder, tasks_for_anyone)
    assert other("create", "theirs").returncode == 0  # the board, its scratch folder: the other user's
    dead = board / ".scratch" / "task_2.json.new"
    killed = subprocess.run(
        [
            sys.executable,
            "-c",
            "import os, signal, sys\nfrom taskboard.disk.store import Store\nos.umask(0o077)\n"
            "Store(sys.argv[1]).reserve(lambda task_id: b'{}')\nos.kill(os.getpid(), signal.SIGKILL)",
            str(board),
        ],
        check=False,
    )
    assert killed.returncode == -signal.SIGKILL and dead.exists()
    _out_of_reach(dead)
    live = PausedCreate(board, "mine", umask=0o077)
    assert live.reserved() == 3
    held = board / ".scratch" / "task_3.json.new"
    _out_of_reach(held)
    before = os.lstat(held)
    listed = other("list")
    assert listed.returncode == 0 and b"leftover" not in listed.stderr, listed.stderr
    assert listed.stdout == b"[ ] #1: theirs\n"
    assert sorted(os.listdir(board / ".scratch")) == ["task_2.json.new", "task_3.json.new"]
    assert os.lstat(held).st_ino == before.st_ino
    created = other("create", "theirs too", "--json")
    assert (created.returncode, created.stderr) == (0, b""), created.stderr
    assert json.loads(created.stdout)["id"] == 4  # neither reservation's id, the dead one's included
    if not user:
        dead.chmod(0o600)  # back in its owner's reach (root needs no such thing)
    done = live.go_on()  # its owner's next command: it finds the dead one dead, and removes it
    assert done.returncode == 0 and json.loads(done.stderr) == {
        "warning": "removed 1 leftover temporary file(s) of an interrupted change"
    }, done.stderr
    mine = json.loads(done.stdout)
    assert (mine["id"], mine["subject"]) == (3, "mine")
    if not user:
        (board / "task_3.json").chmod(0o644)  # the reservation's file itself, mode 0 and all
    records = assert_sound(board)  # no scratch file left
    assert {n: found["subject"] for n, found in records.items()} == {1: "theirs", 3: "mine", 4: "theirs too"}
    assert records[3] == mine


def _forge_cache(board: Path, name: str, payload: object | bytes) -> None:
    """A cache file with the right header and checksum around any payload."""
    import marshal
    import zlib

    from taskboard.disk.cache import FORMAT

    body = payload if isinstance(payload, bytes) else marshal.dumps(payload)
    path = board / ".cache" / name
    path.unlink()
    path.write_bytes(FORMAT + zlib.crc32(body).to_bytes(4, "big") + body)


_EMPTY_INDEX = {
    **{"ids": b"", "ctimes": b"", "inodes": b"", "kinds": b"", "folder": None, "names": ""},
    **{"open_ids": b"", "open_kinds": b"", "texts": "", "records": b"\xa9\x00", "priority": b""},
    **{"blocked": (), "due": (), "after": ()},
}


@pytest.mark.parametrize(
    "name, payload",
    [
        ("index", {**_EMPTY_INDEX, "names": 5}),
        ("index", {**_EMPTY_INDEX, "kinds": 2**62}),
        ("index", {**_EMPTY_INDEX, "open_ids": (1).to_bytes(8, "little"), "texts": "x"}),
        ("index", {**_EMPTY_INDEX, "open_ids": (1).to_bytes(8, "little"), "texts": "{}", "open_kinds": b"p"}),
        ("index", b"[\xff\xff\xff\x7fN"),  # a list of two billion items, declared
    ],
    ids=["names", "kinds", "open", "open-columns", "huge-list"],
)
def test_a_forged_cache_with_a_right_checksum_is_no_cache(b, name, payload):
    """`.cache/` is the board's own, ignored by git, but anything can write it: a file
    with our header and a right checksum around another shape is rebuilt, never a crash
    (before: exit 1, AttributeError, MemoryError, ValueError)."""
    assert tasks(b, "list").returncode == 0 and tasks(b, "log").returncode == 0  # both cache files written
    _forge_cache(b, name, payload)
    index = (b / ".cache" / "index").read_bytes()
    for args in (["list"], ["list", "--json"], ["ready"], ["board"], ["get", "1"], ["list", "--status", "completed"]):
        result = tasks_in_1gb(b, *args)
        no_trace(result)
        assert result.returncode == 0, (args, result.stderr)
    assert tasks(b, "list").stdout == b"[ ] #1: a\n[ ] #2: b\n"
    assert (b / ".cache" / "index").read_bytes() != index, "the forged index was kept"


def _git_board(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    board = repo / ".tasks"
    for subject in ("a", "b"):
        assert tasks(board, "create", subject).returncode == 0
    assert tasks(board, "claim", "1", "--owner", "me").returncode == 0
    return board


def _plant(path: Path, kind: str) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif os.path.lexists(path):
        path.unlink()
    if kind == "file":
        path.write_text("x")
    elif kind == "folder":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    else:  # a link to a folder outside the board
        outside = path.parent / f"outside-{path.name}"
        outside.mkdir()
        path.symlink_to(outside)


@pytest.mark.parametrize(
    "where, kind, rule",
    [
        ("journal", "file", "journal"),
        ("journal", "fifo", "journal"),
        (".gitignore", "folder", "git-files"),
        (".gitattributes", "folder", "git-files"),
        ("state-root", "file", "state"),
        ("state", "link", "state"),
        ("state-lock", "fifo", "state"),
        ("state-lock", "folder", "state"),
    ],
)
def test_check_names_machinery_of_the_wrong_kind(tmp_path, where, kind, rule):
    """A file where the journal folder belongs, a folder as `.gitignore`, a runtime state
    folder or lock in git's common folder of the wrong kind: the change that needs it
    exits 6 naming it, and `check` says so too (before: "board is sound", exit 0)."""
    board = _git_board(tmp_path)
    common = board.parent / ".git" / "tasks"
    path = {
        "journal": board / "journal",
        ".gitignore": board / ".gitignore",
        ".gitattributes": board / ".gitattributes",
        "state-root": common,
        "state": common / ".tasks",
        "state-lock": common / ".tasks" / ".lock",
    }[where]
    _plant(path, kind)
    before = snapshot(board) if kind != "fifo" else None  # the helper would wait on a FIFO
    for args in (["check"], ["check", "--json"]):
        result = tasks(board, *args)
        no_trace(result)
        assert result.returncode == 6, (args, result.stdout, result.stderr)
    found = json.loads(tasks(board, "check", "--json").stdout)
    problems = found["problems"] if isinstance(found, dict) else found
    assert any(p["rule"] == rule and path.name in p["message"] for p in problems), problems
    assert before is None or snapshot(board) == before


def test_a_sparse_gigabyte_planted_as_the_intent_is_discarded_unread(b):
    """An intent is read whole to be replayed; a planted 3 GB sparse file must not be (before:
    MemoryError, exit 1, with 1 GB of address space; 3 GB of memory without a limit). A hole
    reads as NUL bytes, which no intent holds: it is discarded at once."""
    before = snapshot(b)
    with open(b / ".scratch" / "intent.json", "wb") as planted:
        planted.truncate(3 << 30)
    result = tasks_in_1gb(b, "list")
    no_trace(result)
    assert result.returncode == 0 and result.stdout == b"[ ] #1: a\n[ ] #2: b\n", result.stderr
    assert b"discarded" in result.stderr
    assert scratch_left(b) == [] and snapshot(b) == before
