"""An independent judge of a board on disk: reads the JSON files itself and checks
DESIGN.md section 2, sharing no code with taskboard (so a bug there cannot hide
itself here). Also the small helpers tests use to lay out boards and compare bytes.
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path

STATUSES = {"pending", "in_progress", "completed", "deleted"}
OPEN = {"pending", "in_progress"}
REQUIRED = {
    "id": int,
    "subject": str,
    "description": str,
    "status": str,
    "blockedBy": list,
    "blocks": list,
    "owner": str,
}
TASK_FILE = re.compile(r"task_([1-9][0-9]*)\.json")


def load_board(folder: Path) -> dict[int, dict]:
    """Every task record by id, live and archived (`archive/task_N.json`, DESIGN §11),
    asserting each file is a regular, sound record, no id is both live and archived, and
    every archived task is closed."""
    records = _load_folder(folder)
    archive = folder / "archive"
    if archive.is_dir():
        archived = _load_folder(archive)
        both = sorted(set(records) & set(archived))
        assert not both, f"#{both[0]} is both live and archived"
        opened = sorted(task_id for task_id, record in archived.items() if record["status"] in OPEN)
        assert not opened, f"archived #{opened[0]} is open"
        records.update(archived)
    return records


def archived_ids(folder: Path) -> set[int]:
    """The ids of the archived task files."""
    archive = folder / "archive"
    if not archive.is_dir():
        return set()
    return {int(match.group(1)) for name in os.listdir(archive) if (match := TASK_FILE.fullmatch(name))}


def _load_folder(folder: Path) -> dict[int, dict]:
    records: dict[int, dict] = {}
    for name in sorted(os.listdir(folder)):
        match = TASK_FILE.fullmatch(name)
        if not match:
            continue
        path = folder / name
        assert stat.S_ISREG(os.lstat(path).st_mode), f"{name} is not a regular file"
        data = path.read_bytes()
        record = json.loads(data.decode("utf-8"))
        assert isinstance(record, dict), f"{name} is not an object"
        for key, kind in REQUIRED.items():
            assert isinstance(record.get(key), kind) and not isinstance(record.get(key), bool), f"{name}: bad {key!r}"
        assert record["id"] == int(match.group(1)), f"{name} holds id {record['id']}"
        assert record["status"] in STATUSES, f"{name}: status {record['status']!r}"
        for key in ("blockedBy", "blocks"):
            ids = record[key]
            assert all(isinstance(i, int) and not isinstance(i, bool) and i > 0 for i in ids), f"{name}: {key} {ids}"
            assert ids == sorted(set(ids)), f"{name}: {key} not sorted and unique: {ids}"
        assert data == (json.dumps(record, indent=2, ensure_ascii=False) + "\n").encode(), f"{name} is not canonical"
        records[record["id"]] = record
    return records


def problems(folder: Path) -> list[str]:
    """Every broken invariant of DESIGN.md section 2 (empty when the board is sound),
    plus scratch files left behind."""
    try:
        records = load_board(folder)
    except (AssertionError, ValueError) as exc:
        return [f"unreadable board: {exc}"]
    return graph_problems(records) + [f"scratch file left: {name}" for name in scratch_left(folder)]


def graph_problems(records: dict[int, dict]) -> list[str]:
    """The invariants of DESIGN.md section 2 over records by id (as read from files or a listing)."""
    found: list[str] = []
    for a_id, a in records.items():
        if a["status"] == "deleted":
            if a["blocks"] or a["blockedBy"]:
                found.append(f"deleted #{a_id} still lists edges")
            continue
        if a_id in a["blocks"] or a_id in a["blockedBy"]:
            found.append(f"#{a_id} blocks itself")
        for b_id in a["blocks"]:
            b = records.get(b_id)
            if b is None:
                found.append(f"#{a_id} blocks missing #{b_id}")
            elif b["status"] == "deleted":
                found.append(f"#{a_id} blocks deleted #{b_id}")
            elif a["status"] in OPEN and a_id not in b["blockedBy"]:
                found.append(f"open #{a_id} blocks #{b_id} but #{b_id}.blockedBy lacks it")
        for blocker_id in a["blockedBy"]:
            blocker = records.get(blocker_id)
            if blocker is None:
                found.append(f"#{a_id} blocked by missing #{blocker_id}")
            elif blocker["status"] == "deleted":
                found.append(f"#{a_id} blocked by deleted #{blocker_id}")
            elif blocker["status"] == "completed":
                found.append(f"#{a_id} still blocked by completed #{blocker_id}")
            elif a_id not in blocker["blocks"]:
                found.append(f"#{a_id}.blockedBy has #{blocker_id} but #{blocker_id}.blocks lacks it")
    cycle = _find_cycle({i: r["blocks"] for i, r in records.items() if r["status"] != "deleted"})
    if cycle:
        found.append("cycle " + " -> ".join(f"#{i}" for i in cycle))
    return found


def load_journal(folder: Path) -> list[dict]:
    """Every journal entry of the board (all shards, each in file order), asserting every
    line is one sound entry ending in a newline and no eid appears twice."""
    journal = folder / "journal"
    entries: list[dict] = []
    if not journal.is_dir():
        return entries
    for name in sorted(os.listdir(journal)):
        path = journal / name
        assert name.endswith(".jsonl") and not name.startswith("."), f"journal/{name}: not a shard name"
        assert stat.S_ISREG(os.lstat(path).st_mode), f"journal/{name} is not a regular file"
        data = path.read_bytes()
        assert data.endswith(b"\n"), f"journal/{name}: the last line is unfinished"
        for number, line in enumerate(data.decode("utf-8").split("\n")[:-1], 1):
            entry = json.loads(line)
            assert isinstance(entry, dict), f"journal/{name}:{number} is not an object"
            assert list(entry)[:4] == ["at", "actor", "task", "event"], f"journal/{name}:{number}: keys {list(entry)}"
            assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", entry["at"]), f"journal/{name}:{number}: at"
            assert isinstance(entry["task"], int) and entry["task"] > 0, f"journal/{name}:{number}: task"
            assert isinstance(entry.get("eid"), str) and entry["eid"], f"journal/{name}:{number}: no eid"
            entries.append(entry)
    eids = [entry["eid"] for entry in entries]
    assert len(eids) == len(set(eids)), "an eid appears twice in the journal"
    return entries


def scratch_left(folder: Path) -> list[str]:
    scratch = folder / ".scratch"
    left = sorted(os.listdir(scratch)) if scratch.is_dir() else []
    left += [name for name in os.listdir(folder) if name.endswith(".tmp")] if folder.is_dir() else []
    return left


def assert_sound(folder: Path) -> dict[int, dict]:
    found = problems(folder)
    assert not found, "\n".join(found)
    return load_board(folder)


def _find_cycle(successors: dict[int, list[int]]) -> list[int] | None:
    """Some cycle as a closed walk, or None (iterative three-colour DFS)."""
    colour: dict[int, int] = {}
    for root in successors:
        if colour.get(root):
            continue
        stack = [(root, iter(successors.get(root, ())))]
        path = [root]
        colour[root] = 1
        while stack:
            node, children = stack[-1]
            for child in children:
                if colour.get(child) == 1:
                    return [*path[path.index(child) :], child]
                if not colour.get(child) and child in successors:
                    colour[child] = 1
                    stack.append((child, iter(successors.get(child, ()))))
                    path.append(child)
                    break
            else:
                colour[node] = 2
                stack.pop()
                path.pop()
    return None


# -- laying out boards and comparing bytes ------------------------------------------


def record(
    task_id: int,
    subject: str | None = None,
    status: str = "pending",
    blocked_by=(),
    blocks=(),
    owner: str = "",
    **extra,
) -> dict:
    stamp = "2026-01-01T00:00:00Z"
    base = {
        "id": task_id,
        "subject": subject or f"task {task_id}",
        "description": "",
        "status": status,
        "blockedBy": sorted(set(blocked_by)),
        "blocks": sorted(set(blocks)),
        "owner": owner,
        "uid": f"{task_id:012x}",
        "metadata": {},
        "createdAt": stamp,
        "updatedAt": stamp,
    }
    base.update(extra)
    return base


def write_board(folder: Path, records: list[dict]) -> None:
    """Lay out task files directly (canonical bytes), much faster than one command each."""
    folder.mkdir(parents=True, exist_ok=True)
    for rec in records:
        (folder / f"task_{rec['id']}.json").write_text(json.dumps(rec, indent=2, ensure_ascii=False) + "\n")


def hub_board(folder: Path, dependents: int = 40) -> None:
    """#1 blocks #2..#(dependents+1); each dependent also blocked by nothing else."""
    ids = range(2, dependents + 2)
    write_board(folder, [record(1, "hub", blocks=ids)] + [record(i, blocked_by=[1]) for i in ids])


def snapshot(folder: Path) -> dict[str, bytes | str]:
    """Every path under the board folder (the lock file and the cache aside) with its bytes or link target."""
    if not os.path.lexists(folder):
        return {}
    if not folder.is_dir():
        return {".": folder.read_bytes()}
    found: dict[str, bytes | str] = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            rel = str(path.relative_to(folder))
            if rel in {".lock", ".cache"} or rel.startswith(".cache/"):
                continue  # the lock file and the cache are derived, never the board's content
            if path.is_symlink():
                found[rel] = "-> " + os.readlink(path)
            elif path.is_dir():
                found[rel] = "dir"
            else:
                found[rel] = path.read_bytes()
    return found
