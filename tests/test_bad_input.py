"""Bad input, everywhere: each invocation below must exit with its code, say what
is wrong, show no traceback, and leave every byte of the board as it was.

The board every case starts from: #1 pending blocks #2; #3 completed; #4 deleted;
#5 in progress held by amy; #6 is a symbolic link to a task file outside; #7 pending,
reserved for carol.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from invariants import record, snapshot, write_board

MB = 1 << 20
DEEP = "[" * 200 + "]" * 200

# (args, stdin, exit code, words that name the problem (case-insensitive), env)
CASES = [
    # -- subjects, descriptions, owners --------------------------------------------------
    (["create", ""], None, 2, "subject is empty", None),
    (["create", "   "], None, 2, "subject is empty", None),
    (["create", "two\nlines"], None, 2, "control character", None),
    (["create", "\x1b[31mred"], None, 2, "control character", None),
    (["create", "nul\x00"], None, 2, "control character", None),
    (["create", "x" * 501], None, 2, "at most 500", None),
    (["create", "x" * 100_000], None, 2, "at most 500", None),
    (["update", "1", "--subject", ""], None, 2, "subject is empty", None),
    (["update", "1", "--subject", "tab\there"], None, 2, "control character", None),
    (["create", "x", "-d", "bell\x07"], None, 2, "control character", None),
    (["create", "x", "-d", "x" * 65537], None, 2, "65536", None),
    (["create", "x", "-d", "-"], b"x" * MB, 2, "longer than 65536", None),
    (["create", "x", "-d", "-"], "é".encode() * (MB // 2), 2, "longer than 65536", None),
    (["update", "1", "-d", "-"], b"a" * 65537, 2, "65536", None),
    (["create", "x", "-d", "-"], b"caf\xe9 latin-1", 2, "utf-8", None),
    (["create", "x", "-d", "-"], b"\xff\xfe\x00", 2, "utf-8", None),
    (["update", "1", "-d", "-"], b"ok then \x80", 2, "utf-8", None),
    (["create", "x", "-d", "-"], b"esc \x1b[2J", 2, "control character", None),
    (["create", "x", "--owner", " amy"], None, 2, "surrounding spaces", None),
    (["create", "x", "--owner", "a\tb"], None, 2, "control characters", None),
    (["create", "x", "--owner", "o" * 201], None, 2, "at most 200", None),
    (["update", "1", "--owner", "bob\n"], None, 2, "control characters", None),
    # -- metadata ---------------------------------------------------------------------------
    (["create", "x", "--meta", "priority"], None, 2, "has no '='", None),
    (["update", "1", "--meta", "novalue"], None, 2, "has no '='", None),
    (["create", "x", "--meta", "=1"], None, 2, "empty or unprintable key", None),
    (["create", "x", "--meta", " =1"], None, 2, "empty or unprintable key", None),
    (["create", "x", "--meta", "k\x01=1"], None, 2, "empty or unprintable key", None),
    (["create", "x", "--meta", "k=NaN"], None, 2, "not a finite number", None),
    (["create", "x", "--meta", "k=Infinity"], None, 2, "not a finite number", None),
    (["update", "1", "--meta", "k=-Infinity"], None, 2, "not a finite number", None),
    (["create", "x", "--meta", "k=1e999"], None, 2, "not a finite number", None),
    (["create", "x", "--meta", 'k={"a": [1, NaN]}'], None, 2, "not a finite number", None),
    (["create", "x", "--meta", f"k={DEEP}"], None, 2, "nested too deeply", None),
    (["create", "x", "--meta", "k=" + "[" * 5000 + "]" * 5000], None, 2, "nested too deeply", None),
    # -- ids ------------------------------------------------------------------------------------
    (["get", "abc"], None, 2, "not a task id", None),
    (["get", "0"], None, 2, "not a task id", None),
    (["get", "-1"], None, 2, "-1", None),
    (["get", "1.5"], None, 2, "not a task id", None),
    (["get", "1e3"], None, 2, "not a task id", None),
    (["get", "0x10"], None, 2, "not a task id", None),
    (["get", "007"], None, 2, "not a task id", None),
    (["get", "١٢"], None, 2, "not a task id", None),
    (["get", "9" * 30], None, 2, "not a task id", None),
    (["get", "9223372036854775808"], None, 2, "at most 9223372036854775807", None),
    (["get", ""], None, 2, "not a task id", None),
    (["get"], None, 2, "missing argument", None),
    (["create", "x", "--blocked-by", "-3"], None, 2, "not a task id", None),
    (["create", "x", "--blocks", "two"], None, 2, "not a task id", None),
    (["update", "1", "--add-blocks", "99999999999999999999"], None, 2, "not a task id", None),
    (["update", "abc", "--status", "completed"], None, 2, "not a task id", None),
    (["claim", "-7", "--owner", "amy"], None, 2, "-7", None),
    # -- statuses, flags, commands --------------------------------------------------------
    (["update", "1", "--status", "finished"], None, 2, "unknown status 'finished'", None),
    (["update", "1", "--status", ""], None, 2, "unknown status", None),
    (["update", "1", "--status", "Completed"], None, 2, "unknown status", None),
    (["update", "1", "--status", "ready"], None, 2, "unknown status 'ready'", None),
    (["list", "--status", "finished"], None, 2, "unknown status", None),
    (["update", "1", "--status"], None, 2, "requires an argument", None),
    (["list", "--ready", "--blocked"], None, 2, "exclude each other", None),
    (["update", "1", "--add-blocks", "2", "--remove-blocks", "2"], None, 2, "both name #2", None),
    (["update", "2", "--add-blocked-by", "1", "--remove-blocked-by", "1"], None, 2, "both name #1", None),
    (["update", "1", "--status", "deleted", "--add-blocks", "2"], None, 2, "leave out the edge flags", None),
    (["graph", "--format", "png"], None, 2, "'png' is not one of", None),
    (["frobnicate"], None, 2, "no such command", None),
    (["list", "--colour"], None, 2, "no such option", None),
    (["create"], None, 2, "missing argument", None),
    (["claim"], None, 2, "claim needs an owner", None),
    (["claim", "--owner", ""], None, 2, "claim needs an owner", None),
    # -- leases and waiting (runtime state) ------------------------------------------------------
    (["claim", "--owner", "amy", "--lease", "0"], None, 2, "'0' is not a lease", None),
    (["claim", "--owner", "amy", "--lease", "-5m"], None, 2, "'-5m' is not a lease", None),
    (["claim", "--owner", "amy", "--lease", "10x"], None, 2, "'10x' is not a lease", None),
    (["claim", "--owner", "amy", "--lease", "31d"], None, 2, "at most 30 days", None),
    (["claim", "--owner", "amy", "--lease", ""], None, 2, "is not a lease", None),
    (["claim", "--owner", "amy"], None, 2, "TASKS_LEASE='soon' is not a lease", {"TASKS_LEASE": "soon"}),
    (["claim", "--owner", "amy"], None, 2, "TASKS_LEASE='0' is not a lease", {"TASKS_LEASE": "0"}),
    (["claim", "--owner", "amy", "--wait", "abc"], None, 2, "not a finite number of seconds", None),
    (["claim", "--owner", "amy", "--wait", "-1"], None, 2, "-1", None),
    (["claim", "--owner", "amy", "--wait", "1e999"], None, 2, "not a finite number of seconds", None),
    (["claim", "1", "--owner", "amy", "--wait", "nan"], None, 2, "not a finite number of seconds", None),
    (["claim", "--wait"], None, 2, "claim needs an owner", None),
    (["renew", "5"], None, 2, "renew needs the holder's name", None),
    (["--as", "amy", "renew", "5", "--lease", "0"], None, 2, "'0' is not a lease", None),
    (["--as", "amy", "renew", "x"], None, 2, "not a task id", None),
    (["--as", "amy", "renew", "42"], None, 3, "no task #42", None),
    (["--as", "bob", "renew", "5"], None, 4, "#5 is held by amy", None),
    (["--as", "amy", "renew", "1"], None, 4, "#1 is pending, not in progress", None),
    (["update", "42", "--retry"], None, 3, "no task #42", None),
    (["update", "4", "--retry", "--status", "pending"], None, 4, "#4 is deleted", None),
    (["--timeout", "abc", "list"], None, 2, "not a finite number of seconds", None),
    (["--timeout", "-1", "create", "x"], None, 2, "not a finite number of seconds", None),
    (["--timeout", "nan", "list"], None, 2, "not a finite number of seconds", None),
    (["--timeout", "1e999", "list"], None, 2, "not a finite number of seconds", None),
    (["list"], None, 2, "TASKS_LOCK_TIMEOUT", {"TASKS_LOCK_TIMEOUT": "soon"}),
    (["--as", "bob\n", "update", "1", "--subject", "mine"], None, 2, "control characters", None),
    # -- usage before not-found before refusal ------------------------------------------------
    (["update", "42", "--status", "bogus"], None, 2, "unknown status", None),
    (["update", "4", "--add-blocks", "99"], None, 3, "no task #99", None),
    # -- missing tasks ---------------------------------------------------------------------------
    (["get", "42"], None, 3, "no task #42", None),
    (["get", "9223372036854775807"], None, 3, "no task #9223372036854775807", None),
    (["update", "42", "--subject", "x"], None, 3, "no task #42", None),
    (["delete", "42"], None, 3, "no task #42", None),
    (["claim", "42", "--owner", "amy"], None, 3, "no task #42", None),
    (["create", "x", "--blocked-by", "42"], None, 3, "no task #42", None),
    (["update", "1", "--add-blocked-by", "77"], None, 3, "no task #77", None),
    (["graph", "42"], None, 3, "no task #42", None),
    # -- refusals ----------------------------------------------------------------------------------
    (["update", "1", "--add-blocks", "1"], None, 4, "#1 → #1", None),
    (["update", "2", "--add-blocks", "1"], None, 4, "cycle #2 → #1 → #2", None),
    (["create", "x", "--blocked-by", "2", "--blocks", "1"], None, 4, "cycle", None),
    (["update", "2", "--status", "in_progress"], None, 4, "#2 is blocked by #1", None),
    (["update", "2", "--status", "completed"], None, 4, "#2 is blocked by #1", None),
    (["update", "4", "--subject", "revive"], None, 4, "#4 is deleted", None),
    (["update", "4", "--status", "pending"], None, 4, "#4 is deleted", None),
    (["delete", "4"], None, 4, "#4 is already deleted", None),
    (["create", "x", "--blocked-by", "4"], None, 4, "#4 is deleted", None),
    (["update", "1", "--add-blocks", "4"], None, 4, "#4 is deleted", None),
    (["--as", "bob", "update", "5", "--status", "completed"], None, 4, "held by amy", None),
    (["update", "5", "--owner", "bob"], None, 4, "held by amy", {"TASKS_OWNER": "bob"}),
    (["--as", "bob", "delete", "5"], None, 4, "held by amy", None),
    (["claim", "5", "--owner", "bob"], None, 4, "#5 is held by amy", None),
    (["claim", "3", "--owner", "bob"], None, 4, "#3 is already completed", None),
    (["claim", "2", "--owner", "bob"], None, 4, "#2 is blocked by #1", None),
    (["claim", "4", "--owner", "bob"], None, 4, "#4 is deleted", None),
    # -- priority, labels, filters, status words (issue 9) ----------------------------------------
    (["create", "x", "--priority", "5"], None, 2, "priority must be a whole number from 0", None),
    (["create", "x", "--priority", "-1"], None, 2, "priority must be a whole number from 0", None),
    (["create", "x", "--priority", "1.5"], None, 2, "priority must be a whole number from 0", None),
    (["create", "x", "--priority", "high"], None, 2, "priority must be a whole number from 0", None),
    (["create", "x", "--priority", ""], None, 2, "priority must be a whole number from 0", None),
    (["create", "x", "--priority", " 1"], None, 2, "priority must be a whole number from 0", None),
    (["create", "x", "--priority", "01"], None, 2, "priority must be a whole number from 0", None),
    (["create", "x", "--priority", "٣"], None, 2, "priority must be a whole number from 0", None),
    (["update", "1", "--priority", "9"], None, 2, "priority must be a whole number from 0", None),
    (["update", "42", "--priority", "9"], None, 2, "priority must be a whole number from 0", None),
    (["list", "--priority", "7"], None, 2, "priority must be a whole number from 0", None),
    (["ready", "--priority", "x"], None, 2, "priority must be a whole number from 0", None),
    (["create", "x", "--meta", "priority=7"], None, 2, "priority must be a whole number from 0", None),
    (["update", "1", "--meta", "priority=high"], None, 2, "priority must be a whole number from 0", None),
    (["update", "1", "--meta", "priority=1.0"], None, 2, "priority must be a whole number from 0", None),
    (["create", "x", "--label", ""], None, 2, "label is empty", None),
    (["create", "x", "--label", "   "], None, 2, "label is empty", None),
    (["create", "x", "--label", "a\x01b"], None, 2, "control characters", None),
    (["create", "x", "--label", "a\nb"], None, 2, "control characters", None),
    (["create", "x", "--label", " ui"], None, 2, "surrounding spaces", None),
    (["create", "x", "--label", "l" * 101], None, 2, "at most 100", None),
    (["create", "x", "--label", "ok", "--label", "\x1b[31m"], None, 2, "control characters", None),
    (["update", "1", "--label", ""], None, 2, "label is empty", None),
    (["update", "1", "--unlabel", "\t"], None, 2, "label is empty", None),
    (["update", "1", "--label", "a", "--unlabel", "a"], None, 2, "both adds and removes the label 'a'", None),
    (["update", "42", "--label", ""], None, 2, "label is empty", None),
    (["create", "x", "--meta", 'labels=["ok", ""]'], None, 2, "label is empty", None),
    (["create", "x", "--meta", "labels=[1]"], None, 2, "label must be text", None),
    (["create", "x", "--meta", 'labels="ui"'], None, 2, "labels must be a list", None),
    (["list", "--label", ""], None, 2, "label is empty", None),
    (["ready", "--label", "a\x00"], None, 2, "control characters", None),
    (["list", "--limit", "0"], None, 2, "limit must be a whole number of at least 1", None),
    (["list", "--limit", "-1"], None, 2, "limit must be a whole number of at least 1", None),
    (["list", "--limit", "abc"], None, 2, "limit must be a whole number of at least 1", None),
    (["ready", "--limit", "1.5"], None, 2, "limit must be a whole number of at least 1", None),
    (["ready", "--limit", "9" * 30], None, 2, "limit must be a whole number of at least 1", None),
    (["list", "--grep", ""], None, 2, "text to search for is empty", None),
    (["list", "--status", "Done"], None, 2, "unknown status 'Done'", None),
    (["list", "--status", "in progress"], None, 2, "unknown status", None),
    (["update", "1", "--status", "blocked"], None, 2, "unknown status 'blocked'", None),
    (["list", "--ready", "--blocked", "--grep", "x"], None, 2, "exclude each other", None),
    # -- done, release (issue 9) ----------------------------------------------------------------
    (["done"], None, 2, "missing argument", None),
    (["done", "abc"], None, 2, "not a task id", None),
    (["release", "0"], None, 2, "not a task id", None),
    (["done", "1", "--note", "bell\x07"], None, 2, "control character", None),
    (["release", "1", "--failed", "--note", "\x1b[2J"], None, 2, "control character", None),
    (["done", "1", "--note", "n" * 65537], None, 2, "65536", None),
    (["release", "1", "--bogus"], None, 2, "no such option", None),
    (["done", "42"], None, 3, "no task #42", None),
    (["release", "42"], None, 3, "no task #42", None),
    (["release", "42", "--failed", "--note", "x"], None, 3, "no task #42", None),
    (["done", "2"], None, 4, "#2 is blocked by #1", None),
    (["done", "4"], None, 4, "#4 is deleted", None),
    (["release", "4"], None, 4, "#4 is deleted", None),
    (["release", "3"], None, 4, "#3 is completed", None),
    (["release", "3", "--failed"], None, 4, "reopen it", None),
    (["--as", "bob", "done", "5"], None, 4, "held by amy", None),
    (["--as", "bob", "release", "5", "--failed"], None, 4, "held by amy", None),
    (["prime", "--limit", "0"], None, 2, "limit must be a whole number of at least 1", None),
    (["log", "--limit", "0"], None, 2, "limit must be a whole number of at least 1", None),
    (["prime", "--limit", "many"], None, 2, "limit must be a whole number of at least 1", None),
    (["prime", "7"], None, 2, "unexpected extra argument", None),
    # -- ownership, tightened (issue 9) -----------------------------------------------------------------
    (["--as", "bob", "update", "5", "--subject", "mine"], None, 4, "held by amy; you are bob", None),
    (["--as", "bob", "update", "5", "-d", "mine"], None, 4, "held by amy; you are bob", None),
    (["update", "5", "-d", "-"], b"mine", 4, "held by amy", {"TASKS_OWNER": "bob"}),
    (["--as", "bob", "update", "7", "--status", "in-progress"], None, 4, "reserved for carol; you are bob", None),
    (["--as", "bob", "update", "7", "--status", "done"], None, 4, "reserved for carol", None),
    (["--as", "bob", "done", "7"], None, 4, "you are bob (pass --force to override)", None),
    # -- a symlinked task file --------------------------------------------------------------
    (["get", "6"], None, 6, "task_6.json: is a symbolic link", None),
    (["update", "6", "--subject", "x"], None, 6, "task_6.json: is a symbolic link", None),
    (["update", "1", "--add-blocks", "6"], None, 6, "task_6.json: is a symbolic link", None),
    (["claim", "6", "--owner", "amy"], None, 6, "task_6.json: is a symbolic link", None),
    (["list"], None, 6, "task_6.json: is a symbolic link", None),
]

CODES = {2: "usage", 3: "not_found", 4: "refused", 5: "busy", 6: "corrupt"}


@pytest.fixture
def board(board_dir, tmp_path):
    write_board(
        board_dir,
        [
            record(1, blocks=[2]),
            record(2, blocked_by=[1]),
            record(3, status="completed"),
            record(4, status="deleted"),
            record(5, status="in_progress", owner="amy"),
            record(7, owner="carol"),
        ],
    )
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps(record(6), indent=2) + "\n")
    os.symlink(outside, board_dir / "task_6.json")
    return board_dir


def test_the_table_is_big_enough():
    assert len(CASES) >= 60


def _check_failure(result, code: int, words: str, json_mode: bool) -> None:
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr)
    assert "Traceback" not in result.stdout + result.stderr
    if code != 6:  # with damage, listings still show every readable task
        assert result.stdout == ""
    if json_mode:
        error = json.loads(result.stderr.strip().splitlines()[-1])["error"]
        assert (error["code"], error["exit"]) == (CODES[code], code)
        assert words.lower() in error["message"].lower()
    else:
        assert words.lower() in result.stderr.lower()


@pytest.mark.parametrize(
    "args, stdin, code, words, env", CASES, ids=[f"{i:03}-{' '.join(c[0])[:40]}" for i, c in enumerate(CASES)]
)
def test_bad_invocation(board, run, tmp_path, args, stdin, code, words, env):
    outside = (tmp_path / "outside.json").read_bytes()
    before = snapshot(board)
    _check_failure(run(*args, input=stdin, env=env, expect=None), code, words, json_mode=False)
    _check_failure(run("--json", *args, input=stdin, env=env, expect=None), code, words, json_mode=True)
    assert snapshot(board) == before, "a failed command changed the board"
    assert (tmp_path / "outside.json").read_bytes() == outside


@pytest.mark.parametrize("args", [["create", "x"], ["list"], ["get", "1"], ["check"], ["init"]])
def test_board_path_that_is_a_file(run, tmp_path, args):
    blocker = tmp_path / "a-file"
    blocker.write_bytes(b"not a folder")
    for path in (blocker, blocker / "sub" / ".tasks"):
        result = run("--dir", str(path), *args, expect=None)
        assert result.exit_code == 2, (path, result.exit_code, result.stderr)
        assert "not a folder" in result.stderr or "under a file" in result.stderr
        assert "Traceback" not in result.stderr
        assert blocker.read_bytes() == b"not a folder"


def test_a_symlinked_lock_file_is_refused(board, run, tmp_path):
    os.unlink(board / ".lock") if os.path.lexists(board / ".lock") else None
    target = tmp_path / "lock-target"
    os.symlink(target, board / ".lock")
    before = snapshot(board)
    for args in (["list"], ["create", "x"], ["update", "1", "--subject", "y"]):
        result = run(*args, expect=None)
        assert result.exit_code == 6 and ".lock" in result.stderr and "Traceback" not in result.stderr
    assert not target.exists(), "the lock was created through a link"
    assert snapshot(board) == before


LOCK_HOLDER = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
fcntl.flock(fd, fcntl.LOCK_EX)
sys.stdout.write("locked\\n"); sys.stdout.flush()
sys.stdin.read()  # hold the lock until the test closes our stdin
"""


def test_a_lock_held_by_another_process_is_busy(board, run):
    holder = subprocess.Popen(
        [sys.executable, "-c", LOCK_HOLDER, str(board / ".lock")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline() == "locked\n"
        before = snapshot(board)
        for args in (
            ["create", "x"],
            ["update", "1", "--status", "completed"],
            ["claim", "--owner", "bob"],
            ["list"],
            ["get", "1"],
            ["board"],
            ["check", "--fix"],
        ):
            result = run("--timeout", "0.2", *args, expect=None)
            assert result.exit_code == 5, (args, result.exit_code, result.stderr)
            assert "busy" in result.stderr and "Traceback" not in result.stderr
            result = run("--timeout", "0", *args, "--json", expect=None)
            assert json.loads(result.stderr.strip().splitlines()[-1])["error"]["code"] == "busy"
        result = run("create", "x", env={"TASKS_LOCK_TIMEOUT": "0.2"}, expect=None)
        assert result.exit_code == 5
        assert snapshot(board) == before
    finally:
        holder.stdin.close()
        holder.wait(timeout=10)
    assert run.json("create", "after the holder left")["id"] == 8


def test_nothing_in_a_task_is_interpreted_as_markup_or_run(board_dir, run, tmp_path):
    marker = tmp_path / "pwned"
    subject = f"$(touch {marker}) `touch {marker}` %s {{0}} [red]"
    created = run.json("create", subject, "--meta", f"cmd=$(touch {marker})")
    shown = run.json("create", "[b]x[/b]")
    for args in (["get", str(shown["id"])], ["list"], ["board"], ["graph"], ["get", str(created["id"])]):
        result = run(*args)
        assert "[b]x[/b]" in result.stdout or args[-1] == str(created["id"]), args
    assert not marker.exists()
    assert run.json("get", str(created["id"]))["subject"] == subject
