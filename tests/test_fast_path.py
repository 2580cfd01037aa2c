"""The click-free fast path (taskboard.__main__.fast_command) and click are two parsers of
one command line: generated command lines must get the same stdout, stderr and exit
code through either, on the same board, so the two cannot drift apart."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from unittest import mock

import pytest
from click.testing import CliRunner
from conftest import _Entry, examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from invariants import record, write_board

import taskboard.__main__
from taskboard.__main__ import fire_hooks
from taskboard.cli.invocation import Invocation
from taskboard.git import claim_authority

COMMANDS = ["get", "list", "ready", "create", "claim"]
OPERANDS = ["1", "2", "3", "9", "#2", "0", "07", "-1", "x", "", "Write parser", "Fix [red] it", "tab\there", "x" * 501]
FLAGS = ["--json", "--json", "--all", "--ready", "--owner", "alice", "-d", "text", "--", "-h", "--dir"]
# what the fast path also takes: list's statuses, a limit, claim's owner (and their near misses)
MORE_FLAGS = ["--status", "pending", "in_progress", "done", "--limit", "2", "0", "--owner", "bob", "-x"]
VOLATILE = re.compile(r'"uid": "[0-9a-f]{12}"|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ')


@st.composite
def command_lines(draw, board: str) -> list[str]:
    """Mostly the shapes the fast path takes (`[--dir B] get ID --json`, ...), and their
    near misses: extra operands and flags, another order, a missing --json."""
    command = draw(st.sampled_from(COMMANDS))
    takes = command in ("get", "create") or (command == "claim" and draw(st.booleans()))
    tokens = [command] + ([draw(st.sampled_from(OPERANDS))] if takes else [])
    if draw(st.integers(0, 3)) == 0:  # a near miss: operands too many (or too few)
        tokens = draw(st.lists(st.sampled_from(OPERANDS), max_size=2)) + tokens[:1]
    if draw(st.integers(0, 5)):
        tokens.append("--json")
    if draw(st.integers(0, 3)) == 0:
        tokens += draw(st.lists(st.sampled_from(FLAGS), min_size=1, max_size=2))
    if draw(st.integers(0, 2)) == 0:
        tokens += draw(st.lists(st.sampled_from(MORE_FLAGS), min_size=1, max_size=4))
    if draw(st.integers(0, 2)) == 0:
        tokens = draw(st.permutations(tokens))
    if draw(st.booleans()):
        tokens = ["--dir", board, *tokens]
    return tokens


def answer(args: list[str], board, template) -> tuple[int, str, str]:
    """The command's exit code, stdout and stderr on a fresh copy of the template board
    (uids and times, which differ between two creations, masked), run in a fresh empty
    folder: a generated `--dir 1` makes a board `./1` that the next run must not find."""
    shutil.rmtree(board, ignore_errors=True)
    shutil.copytree(template, board)
    here = board.parent / "cwd"
    shutil.rmtree(here, ignore_errors=True)
    here.mkdir()
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(here)
        result = CliRunner().invoke(_Entry(), args, env={"TASKS_DIR": str(board)}, catch_exceptions=False)
    return result.exit_code, VOLATILE.sub("…", result.stdout), VOLATILE.sub("…", result.stderr)


def test_fast_path_and_click_agree_on_generated_command_lines(tmp_path):
    template, board = tmp_path / "template", tmp_path / "board"
    write_board(
        template,
        [
            record(1, blocks=[2]),
            record(2, "Fix [red] parsing", blocked_by=[1], owner="alice"),
            record(4, status="completed"),
            record(5, status="deleted"),
        ],
    )
    (template / "task_3.json").write_text("{ torn")
    taken = {"fast": 0, "click": 0}

    @settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(command_lines(str(board)))
    def agree(args: list[str]) -> None:
        fast = taskboard.__main__.fast_command(list(args), Invocation(claim_authority, fire_hooks)) is not None
        taken["fast" if fast else "click"] += 1
        first = answer(args, board, template)
        with mock.patch.object(taskboard.__main__, "fast_command", lambda *_: None):
            assert answer(args, board, template) == first, args

    agree()
    # the comparison means something only if both paths were taken
    assert taken["fast"] >= 30 and taken["click"] >= 30, taken


# A process that ends the way `tasks` does (taskboard.__main__.leave), with an exit handler
# that says it ran: the fast path ends at once, the rest as any Python program.
ENDING = """
import atexit, os, sys
from taskboard.__main__ import leave, main
atexit.register(lambda: os.write(2, b"torn down\\n"))
leave(main(sys.argv[1:]))
"""


def test_the_fast_path_ends_at_once_with_its_whole_answer_and_exit_code(tmp_path):
    board = tmp_path / ".tasks"
    write_board(board, [record(n, f"task {n} " + "x" * 400) for n in range(1, 301)])
    env = {**os.environ, "TASKS_DIR": str(board)}
    env.pop("TASKS_OWNER", None)

    def ending(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-c", ENDING, *args], env=env, capture_output=True, stdin=subprocess.DEVNULL, timeout=60
        )

    listed = ending("list", "--json")  # ~150 kB through a pipe: all of it arrives
    assert listed.returncode == 0 and b"torn down" not in listed.stderr, listed.stderr
    assert [r["id"] for r in json.loads(listed.stdout)] == list(range(1, 301))
    created = ending("create", "one more", "--json")
    assert created.returncode == 0 and json.loads(created.stdout)["id"] == 301 and b"torn down" not in created.stderr
    missing = ending("get", "999", "--json")
    assert missing.returncode == 3 and b'"not_found"' in missing.stderr and b"torn down" not in missing.stderr
    for slow in (["log"], ["create", "by click"], ["call"]):  # click, and `call` (any tool): the ordinary exit
        done = ending(*slow)
        assert b"torn down" in done.stderr, (slow, done.stderr)


def test_the_collector_is_off_for_the_fast_path_only_and_as_it_was_after(tmp_path, monkeypatch):
    """Start-up makes tens of thousands of objects and no garbage: a command of the fast
    path runs with the cyclic collector off. Every other command (servers, waiters,
    watchers run for hours) has it back before it runs, and `main` leaves the process
    (a test's, an embedding program's) with the collector as it found it."""
    import gc

    from taskboard.cli import commands

    board = tmp_path / ".tasks"
    write_board(board, [record(1, "one"), record(2, "two")])
    seen: list[tuple[str, bool]] = []
    real = commands.list_tasks

    def observed(inv, query, *args, **kwargs):
        seen.append((" ".join(inv.argv), gc.isenabled()))
        return real(inv, query, *args, **kwargs)

    monkeypatch.setattr(commands, "list_tasks", observed)
    main = taskboard.__main__.main
    for enabled in (True, False):
        (gc.enable if enabled else gc.disable)()
        try:
            assert main(["--dir", str(board), "list", "--json"]) == 0
            assert gc.isenabled() is enabled
            assert main(["--dir", str(board), "list", "--json", "--owner", "nobody"]) == 0  # click's
            assert gc.isenabled() is enabled
        finally:
            gc.enable()
    fast, slow = f"--dir {board} list --json", f"--dir {board} list --json --owner nobody"
    assert seen == [(fast, False), (slow, True), (fast, False), (slow, False)]
