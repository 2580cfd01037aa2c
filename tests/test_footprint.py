"""What a command costs beyond its answer: the modules it loads and the task files it
touches. Behaviour only, no clock: a fresh interpreter runs the real entry point
under an audit hook and reports `sys.modules` and every task file it opened or
replaced (the "open" audit event covers `open()`, `io`, `os.open` and pathlib alike;
"os.rename" covers `os.replace`)."""

from __future__ import annotations

import errno
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import taskboard
from taskboard.core.model import encode

STAMP = "2026-11-29T18:03:11Z"
TASK_FILE = re.compile(r"task_([1-9][0-9]*)\.json")

# Runs `taskboard.__main__.main(argv)` and writes a report to the file named by argv[0].
WRAPPER = r"""
import os, sys

report_path, argv = sys.argv[1], sys.argv[2:]
opened, replaced, listed, recording = [], [], [], [True]

def hook(event, args):
    if not recording[0]:
        return
    if event == "open" and isinstance(args[0], (str, bytes, os.PathLike)):
        path = os.fsdecode(args[0])
        flags = args[2] if isinstance(args[2], int) else 0
        if path not in replaced:  # not a look at the board: syncing what this process just wrote
            opened.append([path, flags & os.O_ACCMODE != os.O_RDONLY])
    elif event in ("os.rename", "os.link"):  # a new task file is put in place by a hard link
        replaced.append(os.fsdecode(args[1]))
    elif event in ("os.listdir", "os.scandir") and args and isinstance(args[0], (str, bytes, os.PathLike)):
        listed.append(os.fsdecode(args[0]))

sys.addaudithook(hook)
from taskboard.__main__ import main
code = main(argv)
recording[0] = False
modules = sorted(sys.modules)  # before this probe imports json for its report
import json
with open(report_path, "w") as out:
    report = {"exit": code, "modules": modules, "opened": opened, "replaced": replaced, "listed": listed}
    json.dump(report, out)
"""


def footprint(tmp_path: Path, board: Path, *args: str, bare: bool = False) -> dict:
    """Run `tasks --dir BOARD ARGS` in a fresh interpreter; what it loaded and touched.
    `bare`: without `site` (which loads `re` and more for the editable install and the
    environment's .pth files), the package found from its checkout, as a plain install
    starts it."""
    report = tmp_path / "footprint.json"
    env = {key: value for key, value in os.environ.items() if not key.startswith("TASKS_")}
    if bare:
        env["PYTHONPATH"] = str(Path(taskboard.__file__).parent.parent)
    done = subprocess.run(
        [sys.executable, *(["-S"] if bare else []), "-c", WRAPPER, str(report), "--dir", str(board), *args],
        env=env,
        capture_output=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert report.exists(), done.stderr.decode()
    result = json.loads(report.read_text())
    result["stdout"], result["stderr"] = done.stdout, done.stderr
    return result


def task_ids(paths, board: Path) -> set[int]:
    """The ids of the task files on `board` among `paths` (temporary files excluded)."""
    ids = set()
    for path in paths:
        path = Path(path)
        match = TASK_FILE.fullmatch(path.name)
        if match and path.parent.resolve() == board.resolve():
            ids.add(int(match.group(1)))
    return ids


def read_ids(result: dict, board: Path) -> set[int]:
    return task_ids([path for path, writing in result["opened"] if not writing], board)


def written_ids(result: dict, board: Path) -> set[int]:
    return task_ids(result["replaced"] + [path for path, writing in result["opened"] if writing], board)


# -- modules ------------------------------------------------------------------------------


@pytest.fixture
def small_board(run, board_dir) -> Path:
    run("create", "Write parser")
    run("create", "Write tests", "--blocked-by", "1")
    run("create", "Ship", "--blocked-by", "2", "--owner", "alice")
    return board_dir


LOCK_FREE = [
    ("get", "1", "--json"),
    ("list", "--json"),
    ("ready", "--json"),
    ("list", "--ready", "--blocked", "--json"),  # a usage error takes no lock either
    ("board", "--json"),
    ("graph", "--json"),
    ("check", "--json"),
    ("--version",),
]
LOCKING_JSON = [
    ("create", "Another", "--blocked-by", "1", "--json"),
    ("update", "1", "--status", "in_progress", "--json"),
    ("claim", "--owner", "bob", "--json"),
    ("delete", "3", "--json"),
    ("check", "--fix", "--json"),
]


@pytest.mark.parametrize("args", LOCK_FREE + LOCKING_JSON, ids=" ".join)
def test_json_paths_never_import_rich(tmp_path, small_board, args):
    result = footprint(tmp_path, small_board, *args)
    assert not [name for name in result["modules"] if name == "rich" or name.startswith("rich.")], args


@pytest.mark.parametrize("args", LOCK_FREE, ids=" ".join)
def test_commands_without_a_lock_never_import_filelock(tmp_path, small_board, args):
    result = footprint(tmp_path, small_board, *args)
    assert "filelock" not in result["modules"], args


@pytest.mark.parametrize(
    "args", [("ready", "--json"), ("list", "--json", "--status", "pending"), ("ready",), ("get", "1")], ids=" ".join
)
def test_reads_of_open_work_start_no_process_machinery(tmp_path, small_board, args):
    """Asking whether claims go through a git remote (taskboard.git.claimrefs) costs `ready` no
    import of subprocess, threading or secrets: those are for the claims that do."""
    result = footprint(tmp_path, small_board, *args)
    assert result["exit"] == 0, result["stderr"]
    assert {"subprocess", "threading", "secrets"}.isdisjoint(result["modules"]), args


@pytest.mark.parametrize(
    "args",
    [
        ("ready", "--json"),
        ("ready", "--json", "--limit", "1"),
        ("list", "--json", "--status", "pending"),
        ("get", "2", "--json"),
        ("create", "Next step", "--json"),
        ("claim", "--owner", "bob", "--json"),
    ],
    ids=" ".join,
)
def test_the_agent_loops_commands_load_neither_the_json_package_nor_re(tmp_path, small_board, args):
    """`import json` brings `re` and `enum` along, ~7 ms of a ~40 ms command: the board's
    JSON is read and written by core.fields on `_json` alone. The board's files were just
    written, so they are read again (the index's racy window): the parsing path runs too."""
    result = footprint(tmp_path, small_board, *args, bare=True)
    assert result["exit"] == 0 and json.loads(result["stdout"]), result["stderr"]
    assert read_ids(result, small_board) or args[0] == "create"  # the files were read, not taken from the cache
    assert {"json", "re", "enum"}.isdisjoint(result["modules"]), args


@pytest.mark.parametrize("args", [("create", "Next step", "--json"), ("get", "2", "--json")], ids=" ".join)
def test_a_create_or_a_get_loads_no_index_no_listing_and_no_merge_driver(tmp_path, small_board, args):
    """A create names no other task and a get reads one file: neither opens the index
    (taskboard.disk.index, with ops.query over it), the merge driver (the door only asks
    whether a merge left the board to finish, a stat or two: disk.gitdirs), the runtime
    state or the words of failures (views.messages): every module costs an agent's
    create (8 at once on 2 cores are bound by CPU) its reading and unmarshalling."""
    result = footprint(tmp_path, small_board, *args, bare=True)
    assert result["exit"] == 0 and json.loads(result["stdout"]), result["stderr"]
    unwanted = {"taskboard.disk.index", "taskboard.ops.query", "taskboard.git.driver", "taskboard.disk.state"}
    assert unwanted.union({"taskboard.views.messages", "bisect", "math"}).isdisjoint(result["modules"]), args
    assert args[0] != "create" or "taskboard.cli.commands" not in result["modules"]  # nor the other commands' bodies


@pytest.mark.parametrize(
    "args",
    [("ready", "--json"), ("claim", "--owner", "bob", "--json"), ("ready",), ("list",), ("get", "1"), ("board",)],
    ids=" ".join,
)
def test_a_board_whose_claims_go_through_no_remote_never_loads_the_claim_refs(tmp_path, small_board, args):
    """Whether `tasks init --remote` named a remote is one stat in the runtime state
    folder; the claim refs (~3 ms of imports) are for the boards that have one. The
    views for people ask the board's authority too for claims on other machines."""
    result = footprint(tmp_path, small_board, *args)
    assert result["exit"] == 0, result["stderr"]
    assert "taskboard.git.claimrefs" not in result["modules"], args


@pytest.mark.parametrize("args", [("get", "1"), ("list",), ("ready",)], ids=" ".join)
def test_human_reads_never_import_filelock(tmp_path, small_board, args):
    result = footprint(tmp_path, small_board, *args)
    assert result["exit"] == 0
    assert "filelock" not in result["modules"]


@pytest.mark.parametrize(
    "args",
    [("get", "2", "--json"), ("list", "--json"), ("--json", "ready"), ("create", "Next step", "--json")],
    ids=" ".join,
)
def test_the_hottest_reads_never_import_click(tmp_path, small_board, args):
    result = footprint(tmp_path, small_board, *args)
    assert result["exit"] == 0 and json.loads(result["stdout"])
    assert "click" not in result["modules"], args


def test_the_agent_loops_claim_never_imports_click(tmp_path, small_board):
    result = footprint(tmp_path, small_board, "claim", "--owner", "bob", "--json")
    assert result["exit"] == 0 and json.loads(result["stdout"])["owner"] == "bob", result["stderr"]
    assert not [name for name in result["modules"] if name.split(".")[0] in ("click", "rich")]


@pytest.mark.parametrize(
    "args",
    [
        ("get", "2"),
        ("list",),
        ("ready",),
        ("list", "--status", "pending", "--limit", "1"),
        ("ready", "--limit", "1"),
        ("list", "--json", "--status", "pending", "--status", "in_progress", "--limit", "1"),
        ("ready", "--json", "--limit", "1"),
    ],
    ids=" ".join,
)
def test_piped_reads_import_neither_click_nor_rich(tmp_path, small_board, args):
    """Plain output is as light as --json: piped, `get`, `list` and `ready` print their
    lines without click or rich (the probe's stdout is a pipe)."""
    result = footprint(tmp_path, small_board, *args)
    assert result["exit"] == 0, result["stderr"]
    assert result["stdout"].strip()
    loaded = [name for name in result["modules"] if name.split(".")[0] in ("click", "rich")]
    assert not loaded, (args, loaded)


@pytest.mark.parametrize(
    "args",
    [
        ("list", "--ready", "--json"),
        ("get", "x", "--json"),
        ("create", "x", "-d", "y", "--json"),
        ("list", "--owner", "bob"),
        ("ready", "--limit", "0"),
        ("list", "--status", "done"),
        ("create", "x"),
    ],
    ids=" ".join,
)
def test_anything_else_goes_through_click(tmp_path, small_board, args):
    assert "click" in footprint(tmp_path, small_board, *args)["modules"]


def test_the_probe_sees_a_lazy_import(tmp_path, small_board):
    # the absences above mean something only if the probe sees what a command imports late
    assert "taskboard.disk.journal" in footprint(tmp_path, small_board, "create", "x", "--json")["modules"]


def test_version_does_not_read_package_metadata(tmp_path, small_board):
    result = footprint(tmp_path, small_board, "--version")
    assert result["exit"] == 0
    assert "importlib.metadata" not in result["modules"]


# -- work proportional to the change ------------------------------------------------------------


def write_board(
    board: Path, size: int, hub: int, dependents: list[int], other_blockers: dict[int, list[int]], completed: set[int]
) -> None:
    """A board of `size` tasks in the DESIGN.md format: `hub` blocks `dependents`, each of
    which also waits on its `other_blockers` (completed ones only as history on their side);
    every other task waits on its predecessor, so the board has edges everywhere."""
    records = {
        task_id: {
            "id": task_id,
            "subject": f"Task {task_id}",
            "description": "",
            "status": "completed" if task_id in completed else "pending",
            "blockedBy": [],
            "blocks": [],
            "owner": "",
            "uid": f"{task_id:012x}",
            "metadata": {},
            "createdAt": STAMP,
            "updatedAt": STAMP,
        }
        for task_id in range(1, size + 1)
    }

    def link(blocker: int, dependent: int) -> None:
        records[blocker]["blocks"].append(dependent)
        if records[blocker]["status"] != "completed":
            records[dependent]["blockedBy"].append(blocker)

    involved = {hub, *dependents, *(b for blockers in other_blockers.values() for b in blockers)}
    for task_id in range(2, size + 1):
        if task_id not in involved and task_id - 1 not in involved:
            link(task_id - 1, task_id)
    for dependent in dependents:
        link(hub, dependent)
        for blocker in other_blockers.get(dependent, []):
            link(blocker, dependent)
    board.mkdir(parents=True, exist_ok=True)
    for record in records.values():
        (board / f"task_{record['id']}.json").write_bytes(encode(record))


@pytest.fixture
def large_board(board_dir) -> dict:
    hub, dependents = 1000, list(range(1500, 1520))
    # every dependent waits on one more task: open for even ones, completed for odd ones
    other_blockers = {dep: [1700 + i] for i, dep in enumerate(dependents)}
    completed = {1700 + i for i in range(len(dependents)) if i % 2}
    write_board(board_dir, 2000, hub, dependents, other_blockers, completed)
    return {
        "hub": hub,
        "dependents": dependents,
        "other_blockers": other_blockers,
        "open_blockers": {1700 + i for i in range(len(dependents)) if not i % 2},
    }


def test_completing_touches_only_the_task_and_its_neighbours(tmp_path, board_dir, large_board):
    hub, dependents = large_board["hub"], set(large_board["dependents"])
    neighbours = {hub} | dependents | {b for bs in large_board["other_blockers"].values() for b in bs}

    result = footprint(tmp_path, board_dir, "update", str(hub), "--status", "completed", "--json")
    assert result["exit"] == 0, result["stderr"]
    # beyond its neighbours a completion reads open records only, through the cache: a blockedBy
    # written on one side names it too (DESIGN §13); no finished task is read
    finished = {1700 + i for i in range(len(dependents)) if i % 2}
    assert {hub} | dependents <= read_ids(result, board_dir)
    assert read_ids(result, board_dir) - neighbours <= set(range(1, 2001)) - finished
    assert written_ids(result, board_dir) == {hub} | dependents
    unblocked = json.loads(result["stderr"].decode().splitlines()[0])["unblocked"]
    # dependents whose other blocker is completed are free now; the others still wait
    assert set(unblocked) == {
        dep for dep in dependents if not set(large_board["other_blockers"][dep]) & large_board["open_blockers"]
    }

    reopened = footprint(tmp_path, board_dir, "update", str(hub), "--status", "pending", "--json")
    assert reopened["exit"] == 0, reopened["stderr"]
    assert read_ids(reopened, board_dir) <= neighbours
    assert written_ids(reopened, board_dir) == {hub} | dependents


def test_creating_reads_no_task_file(tmp_path, board_dir, large_board):
    result = footprint(tmp_path, board_dir, "create", "One more", "--json")
    assert result["exit"] == 0, result["stderr"]
    assert json.loads(result["stdout"])["id"] == 2001
    assert read_ids(result, board_dir) == set()
    assert written_ids(result, board_dir) == {2001}


def test_creating_with_edges_reads_only_the_tasks_named(tmp_path, board_dir, large_board):
    result = footprint(tmp_path, board_dir, "create", "One more", "--blocked-by", "1500", "--blocks", "1990", "--json")
    assert result["exit"] == 0, result["stderr"]
    # the cycle check may walk what 1990 leads to (1991 → … → 2000), nothing else
    assert {1500, 1990} <= read_ids(result, board_dir) <= {1500, *range(1990, 2001)}
    assert written_ids(result, board_dir) == {1500, 1990, 2001}


def test_get_reads_one_file(tmp_path, board_dir, large_board):
    result = footprint(tmp_path, board_dir, "get", "1500", "--json")
    assert result["exit"] == 0
    assert read_ids(result, board_dir) == {1500}
    assert written_ids(result, board_dir) == set()


def test_ids_from_many_names_agree_with_one_name_at_a_time():
    from taskboard.core.model import id_from_file_name, ids_from_file_names, max_id_of

    odd = [
        "task_0.json",
        "task_01.json",
        "task_١.json",
        "task_7.json\r",
        ".task_3.json",
        "task_3.json.tmp",
        "task_.json",
        "TASK_4.json",
        "task_12.json",
        "task_99999999999999999999.json",
        ".lock",
        ".scratch",
    ]
    longer = ["task_100.json", "task_99.json", "task_0100.json", ".task_1000.json", "task_1000.json.swp", "x" * 40]
    for names in (
        [],
        ["task_1.json"],
        odd,
        [*odd, "x\ntask_5.json"],
        [*odd, "task_9.json\n"],
        ["\n"],
        longer,
        [*odd, *longer],
    ):
        one_by_one = [task_id for task_id in map(id_from_file_name, names) if task_id is not None]
        assert sorted(ids_from_file_names(names)) == sorted(one_by_one), names
        assert max_id_of(names) == max(one_by_one, default=0), names


@pytest.mark.parametrize(
    "args",
    [("list",), ("list", "--json"), ("ready", "--json"), ("board", "--json"), ("claim", "--owner", "bob", "--json")],
    ids=" ".join,
)
def test_hot_commands_never_read_the_journal(tmp_path, small_board, args):
    """The journal grows for ever: list, ready, board and claim neither list its folder
    nor open a shard for reading (claim appends through a write-only look at the end)."""
    (small_board / "journal" / "someone.jsonl").write_text(
        '{"at": "2026-01-01T00:00:00.000Z", "actor": "someone", "task": 1, "event": "note", "text": "x"}\n' * 50
    )
    result = footprint(tmp_path, small_board, *args)
    assert result["exit"] == 0, result["stderr"]
    journal = small_board / "journal"
    assert not [path for path in result["listed"] if Path(path).resolve() == journal.resolve()]
    read_shards = [path for path, writing in result["opened"] if path.endswith(".jsonl") and not writing]
    assert read_shards == []
    if args[0] == "claim":  # the claim was journaled: its shard was opened, for writing only
        shard_opens = [writing for path, writing in result["opened"] if path.endswith(".jsonl")]
        assert shard_opens and all(shard_opens)  # appended, then synced: never opened to read


@pytest.mark.parametrize("args", [*LOCK_FREE, *LOCKING_JSON, ("schema",), ("get", "1")], ids=" ".join)
def test_only_tasks_mcp_imports_the_mcp_sdk(tmp_path, small_board, args):
    result = footprint(tmp_path, small_board, *args)
    assert not [name for name in result["modules"] if name.split(".")[0] in ("mcp", "mcp_types", "pydantic")], args


def test_the_probe_sees_the_mcp_sdk_where_it_is_used(tmp_path, small_board):
    result = footprint(tmp_path, small_board, "mcp")  # stdin is empty: the server starts and ends at once
    assert result["exit"] == 0, result["stderr"]
    assert "mcp.server" in result["modules"]


@pytest.mark.parametrize(
    "args", [("create", "Next step", "--json"), ("claim", "--owner", "bob", "--json")], ids=" ".join
)
def test_a_change_syncs_its_files_together_without_the_threading_module(tmp_path, small_board, args):
    """A claim syncs its staged file, its intent and the scratch folder at once, from a few
    lanes (disk.store._sync_together): they run on `_thread`, built in and already loaded,
    since `threading` costs ~3 ms of the command's start-up."""
    result = footprint(tmp_path, small_board, *args, bare=True)
    assert result["exit"] == 0 and json.loads(result["stdout"]), result["stderr"]
    assert "threading" not in result["modules"], args


def test_the_sync_lanes_end_together_and_a_failing_sync_is_raised(tmp_path):
    """The lanes of _sync_together on real files: every one is waited for, and a sync that
    fails in any lane (a FIFO without a reader cannot be opened to be synced) is raised."""
    from taskboard.disk.store import _sync_together

    files = []
    for n in range(20):
        (tmp_path / f"f{n}").write_bytes(b"x" * n)
        files.append(str(tmp_path / f"f{n}"))
    _sync_together(files, [str(tmp_path)])
    os.mkfifo(tmp_path / "fifo")
    for at in (0, 5, 20):  # the calling thread's own lane, another lane, the last one
        with pytest.raises(OSError) as raised:
            _sync_together([*files[:at], str(tmp_path / "fifo"), *files[at:]], [str(tmp_path)])
        assert raised.value.errno == errno.ENXIO
