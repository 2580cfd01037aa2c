"""The journal: every change through `tasks` appends an event, `note` and `log`, damaged
lines, and merges of journals with real git. The journal is judged by
tests/invariants.load_journal, which reads the files itself."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest
from conftest import tasks_process
from invariants import load_journal

from taskboard.disk.journal import shard_name


def events(board, task=None) -> list[tuple]:
    """(actor, task, event) of every entry, oldest first per shard, all shards."""
    entries = sorted(load_journal(board), key=lambda entry: entry["at"])
    return [(e["actor"], e["task"], e["event"]) for e in entries if task is None or e["task"] == task]


def test_every_change_appends_its_events(run, board_dir):
    run("create", "parser")
    run("create", "tests", "--blocked-by", "1")
    run("--as", "alice", "claim")
    run("update", "2", "--subject", "more tests", "-d", "all of them", "--meta", "size=3")
    run("update", "1", "--status", "completed")
    run("update", "1", "--status", "pending")
    run("update", "2", "--remove-blocked-by", "1")
    run("delete", "2")
    entries = load_journal(board_dir)
    seen = [(e["task"], e["event"]) for e in entries if e["actor"] != "alice"]
    assert seen == [
        (1, "created"),
        (2, "created"),
        (2, "linked"),
        (2, "edited"),
        (1, "forced"),  # alice held it: a caller that names nobody is trusted, never silently
        (1, "completed"),
        (1, "reopened"),
        (2, "unlinked"),
        (2, "deleted"),
    ]
    by_event = {(e["task"], e["event"]): e for e in entries}
    assert by_event[(2, "edited")]["fields"] == ["description", "metadata", "subject"]
    assert by_event[(2, "linked")]["blocker"] == 1 and by_event[(2, "linked")]["dependent"] == 2
    assert [(e["actor"], e["event"], e["owner"]) for e in entries if e["actor"] == "alice"] == [
        ("alice", "claimed", "alice")
    ]
    assert sorted(os.listdir(board_dir / "journal")) == ["alice.jsonl", shard_name(_login()).split("/")[1]]


def _login() -> str:
    import pwd

    for key in ("LOGNAME", "USER", "LNAME", "USERNAME"):
        if os.environ.get(key):
            return os.environ[key]
    return pwd.getpwuid(os.getuid()).pw_name


def test_the_actor_is_the_caller_else_the_login_name(run, board_dir):
    run("create", "one", env={"LOGNAME": "carol"})
    run("create", "two", env={"TASKS_OWNER": "agent-7", "LOGNAME": "carol"})
    run("--as", "Dana Smith/ü", "create", "three", env={"LOGNAME": "carol"})
    assert sorted(events(board_dir), key=lambda event: event[1]) == [
        ("carol", 1, "created"),
        ("agent-7", 2, "created"),
        ("Dana Smith/ü", 3, "created"),
    ]
    names = sorted(os.listdir(board_dir / "journal"))
    assert "carol.jsonl" in names and "agent-7.jsonl" in names
    dana = [name for name in names if name.startswith("dana-smith")]
    assert len(dana) == 1 and dana[0] != "dana-smith.jsonl"  # a changed name gets a hash: no clash
    assert all(not name.startswith(".") for name in names)


def test_a_change_that_changes_nothing_journals_nothing(run, board_dir):
    run("create", "one")
    before = (board_dir / "journal").stat().st_mtime_ns, load_journal(board_dir)
    run("update", "1", "--subject", "one")
    run("--as", "alice", "claim", "1")
    run("--as", "alice", "claim", "1")  # claiming again what you hold: no event
    assert [e["event"] for e in run.json("log")] == ["created", "claimed"]
    assert before[1][0]["event"] == "created"


def test_a_forced_override_names_both(run, board_dir):
    run("create", "one")
    run("--as", "alice", "claim", "1")
    run("--as", "bob", "update", "1", "--status", "completed", expect=4)
    run("--as", "bob", "update", "1", "--status", "completed", "--force")
    forced = [e for e in load_journal(board_dir) if e["event"] == "forced"]
    assert [(e["actor"], e["holder"], e["by"]) for e in forced] == [("bob", "alice", "bob")]


def test_a_refused_change_journals_nothing(run, board_dir):
    run("create", "one")
    run("create", "two", "--blocked-by", "1")
    before = (board_dir / "journal" / os.listdir(board_dir / "journal")[0]).read_bytes()
    run("update", "1", "--add-blocked-by", "2", expect=4)
    run("update", "2", "--status", "completed", expect=4)
    run("update", "9", "--subject", "x", expect=3)
    assert (board_dir / "journal" / os.listdir(board_dir / "journal")[0]).read_bytes() == before


# -- note ------------------------------------------------------------------------------


def test_note_journals_and_changes_no_task_file(run, board_dir):
    run("create", "one")
    task = (board_dir / "task_1.json").read_bytes()
    entry = run.json("--as", "alice", "note", "1", "tried the fast path: slower")
    assert {k: entry[k] for k in ("actor", "task", "event", "text")} == {
        "actor": "alice",
        "task": 1,
        "event": "note",
        "text": "tried the fast path: slower",
    }
    run("note", "1", "-", input="line one\nline two\n")
    assert (board_dir / "task_1.json").read_bytes() == task
    notes = [e["text"] for e in load_journal(board_dir) if e["event"] == "note"]
    assert notes == ["tried the fast path: slower", "line one\nline two\n"]


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["note", "1", ""], 2),
        (["note", "1", "   "], 2),
        (["note", "1", "bell\x07"], 2),
        (["note", "0", "x"], 2),
        (["note", "1"], 2),
        (["note", "9", "x"], 3),
        (["log", "--limit", "-1"], 2),
        (["log", "--limit", "x"], 2),
        (["log", "9"], 3),
    ],
)
def test_bad_note_and_log_change_nothing(run, board_dir, args, code):
    run("create", "one")
    before = {p: p.read_bytes() for p in board_dir.rglob("*") if p.is_file() and ".lock" not in p.name}
    result = run(*args, "--json", expect=code)
    assert json.loads(result.stderr.splitlines()[-1])["error"]["exit"] == code
    assert {p: p.read_bytes() for p in board_dir.rglob("*") if p.is_file() and ".lock" not in p.name} == before


# -- log -------------------------------------------------------------------------------


def test_log_oldest_first_limit_and_task(run, board_dir):
    run("create", "one")
    run("create", "two", "--blocked-by", "1")
    run("note", "2", "waiting on the parser")
    run("update", "1", "--status", "completed")
    everything = run.json("log")
    assert [(e["task"], e["event"]) for e in everything] == [
        (1, "created"),
        (2, "created"),
        (2, "linked"),
        (2, "note"),
        (1, "completed"),
    ]
    assert all(list(e)[:4] == ["at", "actor", "task", "event"] for e in everything)
    assert run.json("log", "--limit", "2") == everything[-2:]
    assert run.json("log", "--limit", "99") == everything
    # with an ID: every event concerning it, an edge's other end included
    assert [(e["task"], e["event"]) for e in run.json("log", "1")] == [(1, "created"), (2, "linked"), (1, "completed")]
    assert [e["event"] for e in run.json("log", "2", "--limit", "2")] == ["linked", "note"]
    plain = run("log").stdout.splitlines()
    assert len(plain) == 5
    assert plain[3].endswith("#2 note: waiting on the parser")
    assert "#1 → #2" in plain[2]


def test_log_on_a_board_without_journal(run, board_dir):
    assert run.json("log") == []
    run("create", "one")
    shutil.rmtree(board_dir / "journal")
    assert run.json("log", "1") == []


def test_an_empty_log_says_so_to_a_person_and_prints_nothing(run, board_dir):
    """`tasks log` with nothing to show used to print nothing at all: a person could not
    tell an empty journal from a hung or broken command."""
    board_dir.mkdir()  # a board without a journal (a missing board is said as such)
    empty = run("log")
    assert (empty.stdout, empty.stderr) == ("", "the journal is empty\n")
    run("create", "one")
    shutil.rmtree(board_dir / "journal")
    quiet = run("log", "1")
    assert (quiet.stdout, quiet.stderr) == ("", "no events for #1 in the journal\n")
    assert run("log", "--json").stderr == ""  # an agent gets [] and no words


def test_log_merges_shards_by_time_and_reads_backwards(run, board_dir):
    """Two actors' shards, written by hand with known times: merged oldest first; the last
    N come from the ends of the shards, also past a chunk boundary."""
    journal = board_dir / "journal"
    journal.mkdir(parents=True)
    run("create", "one")
    (journal / shard_name(_login()).split("/")[1]).unlink()
    lines = {"a.jsonl": [], "b.jsonl": []}
    for i in range(4000):
        name = "a.jsonl" if i % 3 else "b.jsonl"
        at = f"2026-01-01T{i // 3600:02d}:{i // 60 % 60:02d}:{i % 60:02d}Z"
        entry = {"at": at, "actor": name[0], "task": 1, "event": "note", "text": str(i), "eid": f"{i:016x}"}
        lines[name].append(json.dumps(entry))
    for name, found in lines.items():
        (journal / name).write_text("\n".join(found) + "\n")
    texts = [e["text"] for e in run.json("log")]
    assert texts == [str(i) for i in range(4000)]
    assert [e["text"] for e in run.json("log", "--limit", "5")] == [str(i) for i in range(3995, 4000)]
    assert [e["text"] for e in run.json("log", "1", "--limit", "1500")] == [str(i) for i in range(2500, 4000)]


def test_damaged_lines_are_skipped_by_log_and_reported_by_check(run, board_dir):
    run("create", "one")
    run("note", "1", "first")
    shard = board_dir / "journal" / "x.jsonl"
    shard.write_text(
        '{"at": "2026-01-01T00:00:00Z", "actor": "x", "task": 1, "event": "note", "text": "kept"}\n'
        "<<<<<<< HEAD\n"
        "not json at all\n"
        '{"at": 5, "actor": "x", "task": 1, "event": "note"}\n'
        "[1, 2]\n"
        '{"at": "2026-01-01T00:00:01Z", "actor": "x", "task": 1, "event": "note", "text": "also kept"}\n'
    )
    result = run("log", "--json")
    texts = [e["text"] for e in json.loads(result.stdout) if e["event"] == "note"]
    assert texts == ["kept", "also kept", "first"]
    assert "skipped 4 damaged journal line(s) in journal/x.jsonl" in result.stderr
    assert len(json.loads(run("log", "--limit", "1", "--json").stdout)) == 1
    report = json.loads(run("check", "--json", expect=6).stdout)
    journal_problems = [(p["file"], p["rule"], p["fixed"]) for p in report["problems"]]
    assert journal_problems == [("journal/x.jsonl", "journal", False)] * 4
    messages = [p["message"] for p in report["problems"]]
    assert messages[0].startswith("journal/x.jsonl line 2: ") and "conflict marker" in messages[0]
    assert messages[1].startswith("journal/x.jsonl line 3: not valid JSON")
    assert "line 4" in messages[2] and "line 5" in messages[3]


def test_a_journal_link_is_never_followed(run, board_dir, tmp_path):
    run("create", "one")
    shutil.rmtree(board_dir / "journal")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.symlink(elsewhere, board_dir / "journal")
    result = run("create", "two", expect=6)
    assert "journal: should be a folder (a symbolic link)" in result.stderr
    assert os.listdir(elsewhere) == []
    assert not (board_dir / "task_2.json").exists()


def test_a_lost_last_newline_does_not_glue_lines(run, board_dir):
    run("create", "one")
    shard = board_dir / "journal" / os.listdir(board_dir / "journal")[0]
    shard.write_bytes(shard.read_bytes().rstrip(b"\n"))  # an editor that drops the last newline
    run("note", "1", "after the edit")
    assert [e["event"] for e in load_journal(board_dir)] == ["created", "note"]


# -- git -------------------------------------------------------------------------------


def git(repo, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    done = subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True)
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    return done.stdout


@pytest.fixture
def repo(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    assert tasks_process("init", cwd=repo).returncode == 0
    assert tasks_process("--as", "lead", "create", "plan", cwd=repo).returncode == 0
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "board")
    return repo


def _branch_work(repo, branch: str, actor: str, texts: list[str]) -> None:
    git(repo, "checkout", "-qb", branch, "main")
    for text in texts:
        assert tasks_process("--as", actor, "note", "1", text, cwd=repo).returncode == 0
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", f"{actor} works")


@pytest.mark.parametrize("attributes", [True, False], ids=["with-union", "without-any-driver"])
def test_branches_by_different_actors_merge_without_conflict(repo, attributes):
    if not attributes:  # a server merge, or a clone where nothing is wired: still no conflict
        (repo / ".tasks" / ".gitattributes").write_text("task_*.json text eol=lf\n")
        git(repo, "commit", "-qam", "no union")
    _branch_work(repo, "a", "alice", ["a1", "a2"])
    _branch_work(repo, "b", "bob", ["b1"])
    git(repo, "checkout", "-q", "a")
    git(repo, "merge", "-q", "--no-edit", "b")
    texts = sorted(e.get("text", "") for e in load_journal(repo / ".tasks") if e["event"] == "note")
    assert texts == ["a1", "a2", "b1"]


def test_two_branches_of_one_actor_merge_with_nothing_lost(repo):
    assert "journal/*.jsonl merge=union" in (repo / ".tasks" / ".gitattributes").read_text()
    _branch_work(repo, "a", "alice", ["a1", "a2"])
    _branch_work(repo, "b", "alice", ["b1", "b2", "b3"])
    git(repo, "checkout", "-q", "a")
    git(repo, "merge", "-q", "--no-edit", "b")
    entries = load_journal(repo / ".tasks")  # no conflict marker, no torn or doubled line
    assert sorted(e["text"] for e in entries if e["event"] == "note") == ["a1", "a2", "b1", "b2", "b3"]
    done = tasks_process("check", "--json", cwd=repo)
    assert json.loads(done.stdout)["ok"] is True, done.stdout
    logged = json.loads(tasks_process("log", "1", "--json", cwd=repo).stdout)
    assert [e["event"] for e in logged].count("note") == 5


def test_check_fix_journals_its_repairs(run, board_dir):
    run("create", "one")
    run("create", "two", "--blocked-by", "1")
    dependent = json.loads((board_dir / "task_2.json").read_text())
    dependent["blockedBy"] = []  # a hand edit: #1 blocks #2 on one side only
    (board_dir / "task_2.json").write_text(json.dumps(dependent, indent=2) + "\n")
    run("check", expect=6)
    assert [e["event"] for e in load_journal(board_dir)].count("repaired") == 0  # a plain check changes nothing
    run("--as", "fixer", "check", "--fix")
    repaired = [e for e in load_journal(board_dir) if e["event"] == "repaired"]
    assert [(e["actor"], e["task"], e["rules"]) for e in repaired] == [("fixer", 2, ["one-sided-edge"])]


def test_log_for_people_never_passes_terminal_controls(run, board_dir):
    run("create", "one")
    shard = board_dir / "journal" / "mallory.jsonl"
    entry = {
        "at": "2026-01-01T00:00:00.000Z",
        "actor": "m\x1b[2J",
        "task": 1,
        "event": "note",
        "text": "a\x1b]0;x\x07b\x9b",
    }
    shard.write_text(json.dumps({**entry, "eid": "00"}) + "\n")
    out = run("log").stdout
    assert "\x1b" not in out and "\x07" not in out and "\x9b" not in out
    assert json.loads(run("log", "--json").stdout)[0]["text"] == "a\x1b]0;x\x07b\x9b"  # the data itself is kept
