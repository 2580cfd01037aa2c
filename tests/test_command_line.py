"""The command line as people and agents type it: global options after the command,
usage lines that show what is optional, `-d -` at a terminal, and shell completion of
task ids from the board. Real processes where a terminal or the environment matters."""

from __future__ import annotations

import json
import os
import re
import select
import subprocess

import pytest
from conftest import TASKS, tasks_process


def test_global_options_work_after_the_command(run, board_dir, tmp_path):
    created = run.json("create", "Write parser", "--as", "alice", "--timeout", "3")
    assert created["id"] == 1
    assert [entry["actor"] for entry in run.json("log", "1")] == ["alice"]  # --as reached the journal
    claimed = run.json("claim", "1", "--as", "bob")
    assert claimed["owner"] == "bob"
    refused = run("update", "1", "--status", "pending", "--as", "carol", expect=4)  # bob holds it
    assert "bob" in refused.stderr
    # --dir after the command (given twice, the later one wins), and --json after it too
    elsewhere = tmp_path / "elsewhere"
    shown = tasks_process("--dir", str(board_dir), "create", "Docs", "--dir", str(elsewhere), "--json")
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["id"] == 1 and (elsewhere / "task_1.json").exists()
    listed = tasks_process("list", "--dir", str(elsewhere), "--json")  # the click-free path takes it too
    assert [task["subject"] for task in json.loads(listed.stdout)] == ["Docs"]
    bad = run("list", "--timeout", "soon", expect=2)
    assert "soon" in bad.stderr and "Usage: tasks list" in bad.stderr


@pytest.mark.parametrize("command", ["claim", "graph", "log"])
def test_usage_lines_show_an_optional_id_as_optional(run, command):
    assert run(command, "--help").stdout.splitlines()[0] == f"Usage: tasks {command} [OPTIONS] [ID]"
    assert run("get", "--help").stdout.splitlines()[0] == "Usage: tasks get [OPTIONS] ID"


def test_every_command_takes_the_global_options(run):
    for command in ("init", "create", "get", "update", "delete", "claim", "list", "ready", "board", "graph", "check"):
        text = run(command, "--help").stdout
        for option in ("--dir PATH", "--timeout SECONDS", "--as NAME", "--json"):
            assert option in text, (command, option)


def _at_a_terminal(args: list[str], typed: bytes, env: dict) -> tuple[int, bytes, bytes]:
    """Run `tasks ARGS` with a pseudo-terminal as stdin, type `typed`, then Ctrl-D."""
    leader, follower = os.openpty()
    process = subprocess.Popen(
        [*TASKS, *args], stdin=follower, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, **env}
    )
    os.close(follower)
    # the command says it waits before it reads: the words arrive on stderr first
    ready, _, _ = select.select([process.stderr], [], [], 60)
    assert ready, "nothing on stderr: the command waits silently"
    os.write(leader, typed + b"\n\x04")
    out, err = process.communicate(timeout=60)
    os.close(leader)
    return process.returncode, out, err


def test_reading_the_description_from_a_terminal_says_so(board_dir):
    env = {"TASKS_DIR": str(board_dir)}
    code, _, err = _at_a_terminal(["create", "Write parser", "-d", "-"], b"line one", env)
    assert code == 0, err
    assert b"reading the description from stdin (end with Ctrl-D)" in err
    record = json.loads((board_dir / "task_1.json").read_text())
    assert record["description"].strip() == "line one"
    piped = tasks_process("create", "Second", "-d", "-", input=b"from a pipe", env=env)
    assert piped.returncode == 0 and b"reading" not in piped.stderr  # a script is not told
    code, _, err = _at_a_terminal(["create", "Third", "-d", "-", "--json"], b"x", env)
    assert code == 0 and json.loads(err.splitlines()[0]) == {"reading": "stdin"}  # JSON Lines stay JSON


def _complete(words: str, env: dict) -> list[str]:
    done = subprocess.run(
        TASKS,
        env={
            **os.environ,
            **env,
            "_TASKS_COMPLETE": "bash_complete",
            "COMP_WORDS": words,
            "COMP_CWORD": str(len(words.split()) - (0 if words.endswith(" ") else 1)),
        },
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return [line for line in done.stdout.decode().splitlines() if line]


def test_shell_completion_offers_the_boards_task_ids(run, board_dir):
    for subject in ("Write parser", "Write tests", "Docs", "Gone"):
        run("create", subject)
    for number in range(5, 13):
        run("create", f"Task {number}")
    run("delete", "4")
    env = {"TASKS_DIR": str(board_dir)}
    assert _complete("tasks get ", env) == [f"plain,{i}" for i in (1, 2, 3, *range(5, 13))]
    assert _complete("tasks claim 1", env) == ["plain,1", "plain,10", "plain,11", "plain,12"]
    assert _complete(f"tasks --dir {board_dir} update #1", {}) == ["plain,1", "plain,10", "plain,11", "plain,12"]
    assert _complete("tasks get ", {"TASKS_DIR": str(board_dir / "missing")}) == []  # no board: nothing, quietly
    script = subprocess.run(TASKS, env={**os.environ, "_TASKS_COMPLETE": "bash_source"}, capture_output=True)
    assert b"_tasks_completion" in script.stdout


def test_the_summary_on_a_terminals_stderr_breaks_between_phrases(run, board_dir):
    """Piped stdout, stderr at a 40-column terminal (NO_COLOR): the summary is broken
    where a phrase ends, never where the terminal would break it."""
    import fcntl
    import struct
    import termios

    for number in range(12):
        run("create", f"Task {number}", *(["--blocked-by", "1"] if number else []))
    leader, follower = os.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 40, 0, 0))
    process = subprocess.Popen(
        [*TASKS, "--dir", str(board_dir), "list"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=follower,
        env={**{k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}, "NO_COLOR": "1"},
    )
    os.close(follower)
    out, _ = process.communicate(timeout=60)
    err = b""
    while select.select([leader], [], [], 0)[0]:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the follower closed: everything was read
            break
        if not chunk:
            break
        err += chunk
    os.close(leader)
    assert process.returncode == 0 and len(out.splitlines()) == 12
    lines = err.decode().replace("\r\n", "\n").strip().splitlines()
    assert lines == ["12 tasks · 1 ready · 0 in progress", "11 blocked · 0 done"]


def _on_a_terminal(args: list[str], columns: int, lines: int, env: dict) -> str:
    """What `tasks ARGS` prints on a terminal of this size (stdout and stderr both on it)."""
    import fcntl
    import struct
    import termios

    leader, follower = os.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", lines, columns, 0, 0))
    # the terminal's own size, not COLUMNS/LINES left in the environment (pytest-xdist sets them)
    inherited = {key: value for key, value in os.environ.items() if key not in ("COLUMNS", "LINES")}
    process = subprocess.Popen(
        [*TASKS, *args], stdin=subprocess.DEVNULL, stdout=follower, stderr=follower, env={**inherited, **env}
    )
    os.close(follower)
    shown = b""
    while True:
        if not select.select([leader], [], [], 60)[0]:
            break
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the command ended and closed the terminal
            break
        if not chunk:
            break
        shown += chunk
    process.wait(timeout=60)
    os.close(leader)
    assert process.returncode == 0
    return shown.decode().replace("\r\n", "\n")


@pytest.mark.parametrize(("columns", "lines"), [(40, 24), (80, 24), (80, 50), (160, 50)])
def test_board_fits_a_real_terminal_with_its_summary(run, board_dir, columns, lines):
    for number in range(1, 26):
        run("create", f"Task number {number} of a plan", *(["--blocked-by", str(number - 1)] if number > 1 else []))
    for done in range(1, 4):
        run("done", str(done))
    for env in ({"NO_COLOR": "1"}, {"TERM": "xterm-256color"}):
        text = _on_a_terminal(["--dir", str(board_dir), "board"], columns, lines, env)
        plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)
        rows = sum(max(1, -(-len(line) // columns)) for line in plain.rstrip("\n").split("\n"))
        assert rows <= lines - 1, (env, rows)  # and a line is left for the prompt
        first = plain.split("\n")[0]
        assert first.startswith(("+--", "╭─", "Blocked (")), first  # the top is never scrolled away


@pytest.mark.parametrize("env", [{"NO_COLOR": "1"}, {"TERM": "xterm-256color"}], ids=["plain", "colour"])
def test_a_narrow_short_terminal_shows_a_card_per_line_not_one_or_two(run, board_dir, env):
    """At 40x24 a board of 25 tasks with long subjects, owners, a lease and labels used to
    show one or two whole cards and `+N more` for the rest, Ready's included. Short of
    room, the stacked board gives each card one line (id, `!`, subject cut, owner): the
    first ready tasks, what is in progress and the last done ones are all in sight."""
    for number in range(1, 26):
        blocker = ["--blocked-by", str(number - 6)] if number > 6 else []
        run("create", f"Task number {number} of a plan with a long subject", *blocker, "--label", "backend")
    for done in (1, 2):
        run("claim", str(done), "--as", "agent-alpha")
        run("done", str(done), "--as", "agent-alpha")
    run("claim", "3", "--as", "agent-beta", "--lease", "15m")
    text = _on_a_terminal(["--dir", str(board_dir), "board"], 40, 24, env)
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text).rstrip("\n").split("\n")
    assert len(plain) <= 23 and all(len(line.rstrip()) <= 40 for line in plain)
    cards = [re.sub(r"^\[.\] ", "", line.strip()) for line in plain if re.match(r"  (?:\[.\] )?#\d+ ", line)]
    assert len(cards) >= 10, plain
    assert any(card.startswith("#4 Task number 4") for card in cards)  # Ready's first, in ready order
    assert any(re.match(r"#3 Task number 3 .*@agent-beta$", card) for card in cards)  # in progress, with its owner
    assert any(card.startswith("#2 Task number 2") for card in cards)  # Done's most recent
    for heading in ("Blocked (17)", "Ready (5)", "In progress (1)", "Done (2)"):
        assert heading in plain
