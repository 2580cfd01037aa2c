"""`tasks import`: a whole plan as one all-or-nothing change.

A plan is `{"tasks": [{"key": "lexer", "subject": ..., "blockedBy": ["setup", 3], ...}]}`:
tasks named by symbolic keys, edges naming keys of the plan (strings) or ids already on
the board (integers). Everything is checked before anything is written: the shape and
every value first (usage, 2), then the board ids it names (missing: 3; deleted: 4),
then cycles, named by keys (4). Then the tasks are created, with their edges, in one
change of the store (one intent: all of it, or none, even under kill -9).
"""

from __future__ import annotations

import json

from ..core import graph
from ..core.errors import Refused, UsageError
from ..core.fields import MAX_ID, now, parse_json_value
from ..core.model import (
    FIELD,
    check_description,
    check_metadata,
    check_owner,
    check_subject,
    new_record,
    parse_when,
    refuse_past_ceiling,
)
from ..core.outcome import Event, Outcome
from ..disk.store import CLAUDE_MARK, claude_task_names

TYPE_CHECKING = False  # typing costs ~5 ms of start-up; annotations are strings anyway
if TYPE_CHECKING:
    from typing import Any

    from ..core.fields import Record
    from ..disk.store import Store
    from .change import Desk

MAX_PLAN_BYTES = 16 << 20
MAX_PLAN_TASKS = 10_000
MAX_KEY = 100
# What a task of a plan may say; `accept`/`gate` are texts kept in metadata (DESIGN §7).
TASK_KEYS = (
    "key",
    "subject",
    "description",
    "blockedBy",
    "blocks",
    "owner",
    "priority",
    "labels",
    "accept",
    "gate",
    "parent",
    "after",
    "due",
    "metadata",
)
META_TEXTS = ("accept", "gate")


class PlanTask:
    """One task of a plan, checked: its key, the fields of its record, and its edges
    (each a key of the plan, as str, or an id on the board, as int)."""

    __slots__ = ("blocked_by", "blocks", "description", "key", "metadata", "owner", "parent", "status", "subject")

    def __init__(self, key: str, subject: str, description: str, owner: str, metadata: dict):
        self.key, self.subject, self.description, self.owner, self.metadata = (
            key,
            subject,
            description,
            owner,
            metadata,
        )
        self.blocked_by: list[str | int] = []
        self.blocks: list[str | int] = []
        self.parent: str | int | None = None  # a key of the plan or an id on the board
        self.status = "pending"  # a plan's tasks are new work; a Claude Code list's keep theirs


def parse_plan(data: bytes) -> list[PlanTask]:
    """A plan's bytes as checked tasks; any flaw is a UsageError naming where it is."""
    if len(data) > MAX_PLAN_BYTES:
        raise UsageError(f"the plan is {len(data)} bytes; at most {MAX_PLAN_BYTES} are allowed", "plan-too-big")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"the plan is not UTF-8 text (byte {exc.start})", "plan") from None
    if text.startswith("\ufeff"):
        text = text[1:]
    try:
        document = _DECODER.decode(text)
    except RecursionError:
        raise UsageError("the plan is nested too deeply", "plan") from None
    except _DuplicateKey as exc:
        raise UsageError(f"the plan is not usable JSON: the key {exc.args[0]!r} appears twice in one object") from None
    except ValueError as exc:
        raise UsageError(
            f"the plan is not JSON with finite numbers ({str(exc).splitlines()[0][:120]})", "plan"
        ) from None
    if not isinstance(document, dict) or not isinstance(document.get("tasks"), list):
        raise UsageError('the plan must be a JSON object {"tasks": [...]}', "plan")
    extra = sorted(set(document) - {"tasks"})
    if extra:
        raise UsageError(f'the plan has the unknown key {extra[0]!r}; it holds only "tasks"', "plan")
    items = document["tasks"]
    if len(items) > MAX_PLAN_TASKS:
        raise UsageError(f"the plan has {len(items)} tasks; at most {MAX_PLAN_TASKS} in one import", "plan-too-big")
    tasks: list[PlanTask] = []
    seen: set[str] = set()
    for position, item in enumerate(items):
        task = _parse_task(position, item)
        if task.key in seen:
            raise UsageError(f"tasks[{position}]: the key {task.key!r} is used twice in the plan", "plan")
        seen.add(task.key)
        tasks.append(task)
    for position, (task, item) in enumerate(zip(tasks, items, strict=True)):
        task.blocked_by = _edges(position, task.key, item, "blockedBy", seen)
        task.blocks = _edges(position, task.key, item, "blocks", seen)
        task.parent = _parent(position, task.key, item, seen)
    return tasks


def _parent(position: int, key: str, item: dict, keys: set[str]) -> str | int | None:
    """A plan task's parent: a key of the plan or an id on the board (the child blocks it)."""
    if "parent" not in item:
        return None
    parent = _edges(position, key, {"parent": [item["parent"]]}, "parent", keys)[0]
    if parent == key:
        raise UsageError(f"tasks[{position}] ({key!r}) cannot be its own parent", "plan")
    return parent


def _parse_task(position: int, item: Any) -> PlanTask:
    where = f"tasks[{position}]"
    if not isinstance(item, dict):
        raise UsageError(f"{where} is a JSON {_json_name(item)}, not an object", "plan")
    key = item.get("key")
    if not isinstance(key, str):
        raise UsageError(f'{where} needs a "key" (text that names it in the plan), not {key!r}', "plan")
    if not key.strip() or len(key) > MAX_KEY or any(ord(char) < 32 or ord(char) == 127 for char in key):
        raise UsageError(f"{where}: the key {key[:MAX_KEY]!r} is empty, unprintable or longer than {MAX_KEY}", "plan")
    try:
        key.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(f"{where}: the key is not valid UTF-8 text (half a character)", "plan") from None
    where = f"{where} ({key!r})"
    unknown = sorted(set(item) - set(TASK_KEYS))
    if unknown:
        raise UsageError(f"{where} has the unknown field {unknown[0]!r}; a task may have {', '.join(TASK_KEYS)}")
    try:
        subject = check_subject(_text(item, "subject", None))
        description = check_description(_text(item, "description", ""))
        owner = check_owner(_text(item, "owner", ""))
        metadata = item.get("metadata", {})
        if not isinstance(metadata, dict):
            raise UsageError(f'"metadata" must be an object, not a JSON {_json_name(metadata)}')
        metadata = check_metadata(metadata)
        for name in ("priority", "labels"):
            if name in item:
                metadata[name] = FIELD[name].check(item[name])  # type: ignore[misc]
        for name in META_TEXTS:
            if name in item:
                field = FIELD.get(name)
                value = _text(item, name, "")
                metadata[name] = field.check(value) if field and field.check else check_description(value)
        metadata.update({name: parse_when(_text(item, name, "")) for name in ("after", "due") if name in item})
        if metadata.get("labels") == []:
            del metadata["labels"]
        metadata.pop("parent", None)  # the plan's own "parent" says it, by key or id
    except UsageError as exc:
        raise UsageError(f"{where}: {exc.message}", "plan") from None
    return PlanTask(key, subject, description, owner, metadata)


def _text(item: dict, name: str, default: str | None) -> str:
    value = item.get(name, default)
    if not isinstance(value, str):
        raise UsageError(f"{name!r} must be text, not {'nothing' if value is None else repr(value)[:60]}")
    return value


def _edges(position: int, key: str, item: dict, name: str, keys: set[str]) -> list[str | int]:
    where = f"tasks[{position}] ({key!r}) {name}"
    value = item.get(name, [])
    if not isinstance(value, list):
        raise UsageError(f"{where} must be a list of keys of the plan or task ids, not {value!r}"[:200], "plan")
    found: list[str | int] = []
    for other in value:
        if isinstance(other, str):
            if other not in keys:
                raise UsageError(f"{where} names {other!r}, which is no key of the plan", "plan")
        elif type(other) is not int or not 0 < other <= MAX_ID:
            raise UsageError(f"{where}: {other!r} is neither a key of the plan nor a task id", "plan")
        if other not in found:
            found.append(other)
    return found


def _json_name(value: Any) -> str:
    names = {dict: "object", list: "array", str: "string", bool: "boolean", int: "number", float: "number"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


class _DuplicateKey(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict:
    found: dict = {}
    for key, value in pairs:
        if key in found:
            raise _DuplicateKey(key)
        found[key] = value
    return found


# Strict like the task files: no NaN or Infinity, and an object may not say a key twice
# (the second "key" of a task would silently win).
def _refuse(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON has")


def _finite(text: str) -> float:
    value = parse_json_value(text)
    if not isinstance(value, float):
        raise ValueError(f"{text} is not a number JSON has")
    return value


_DECODER = json.JSONDecoder(object_pairs_hook=_no_duplicates, parse_constant=_refuse, parse_float=_finite)


# -- the change ----------------------------------------------------------------------------


def import_plan(board: Desk[Store], tasks: list[PlanTask]) -> Outcome:
    """Create the plan's tasks and edges as one change. The outcome's `created` events
    carry each task's `key`, in the plan's order."""
    from .change import link

    named = sorted(
        {other for task in tasks for other in [*task.blocked_by, *task.blocks, task.parent] if isinstance(other, int)}
    )
    board.require_board(named)
    if not tasks:
        return Outcome()
    store = board.store
    with store.writing() as notes:
        change = board.change()
        for task_id in named:
            change.get(task_id)  # missing: 3, before any refusal
        for task_id in named:
            if change.get(task_id)["status"] == "deleted":
                raise Refused(f"the plan names #{task_id}, which is deleted", "plan-deleted", task=task_id)
        for task in tasks:
            if isinstance(task.parent, int) and change.get(task.parent)["status"] == "completed":
                raise Refused(
                    f"the plan gives #{task.parent} a new child ({task.key!r}), but it is completed; "
                    f"reopen it first (tasks reopen {task.parent})",
                    "parent-completed",
                    parent=task.parent,
                )
        first = store.last_id() + 1
        refuse_past_ceiling(first + len(tasks) - 1)
        ids = {task.key: first + position for position, task in enumerate(tasks)}
        names = {task_id: repr(key) for key, task_id in ids.items()}

        def edge_ids(task: PlanTask) -> list[tuple[int, int]]:
            own = ids[task.key]
            resolve = lambda other: ids[other] if isinstance(other, str) else other  # noqa: E731
            parent = [] if task.parent is None else [(own, resolve(task.parent))]  # the child blocks its parent
            return [(resolve(b), own) for b in task.blocked_by] + [(own, resolve(d)) for d in task.blocks] + parent

        edges = sorted({edge for task in tasks for edge in edge_ids(task)})
        _refuse_cycles(edges, change, names)
        stamp = now()
        outcome = Outcome()
        for task in tasks:
            metadata = task.metadata
            if task.parent is not None:
                metadata = {**metadata, "parent": ids[task.parent] if isinstance(task.parent, str) else task.parent}
            record = new_record(ids[task.key], task.subject, task.description, task.owner, metadata, stamp)
            record["status"] = task.status  # before the edges: a completed blocker keeps its edge in blocks only
            change.add(record)
            outcome.events.append(Event(record["id"], "created", key=task.key))
        for blocker, dependent in edges:
            link(change, blocker, dependent, outcome)
        outcome.written = change.commit(outcome.events)
        outcome.journaled = change.journaled
    outcome.notes[:0] = notes
    return outcome


def _refuse_cycles(edges: list[tuple[int, int]], change: Any, names: dict[int, str]) -> None:
    """A cycle the plan's edges would close, on their own or through the board's own
    edges, refused (4) and named by the plan's keys (board tasks by id)."""
    added: dict[int, list[int]] = {}
    for blocker, dependent in edges:
        added.setdefault(blocker, []).append(dependent)

    def successors(task_id: int) -> list[int]:
        if task_id in names:
            return added.get(task_id, [])
        record = change.find(task_id)
        return (record["blocks"] if record else []) + added.get(task_id, [])

    reach: dict[int, list[int]] = {}
    pending = list(added)
    while pending:  # the part of the graph the new edges can reach: cycles can only close there
        node = pending.pop()
        if node not in reach:
            reach[node] = list(successors(node))
            pending.extend(reach[node])
    cycles = graph.find_cycles(reach)
    if cycles:
        walk = " → ".join(names.get(node, f"#{node}") for node in cycles[0])
        raise Refused(f"the plan would close the cycle {walk}", "plan-cycle", cycle=cycles[0])


def created_keys(outcome: Outcome) -> dict[str, int]:
    """`{"lexer": 13, ...}`: each created task's key and id, in the plan's order."""
    return {
        event.data["key"]: event.task for event in outcome.events if event.what == "created" and "key" in event.data
    }


# -- Claude Code's task lists (DESIGN §13) ------------------------------------------------------

CLAUDE_STATUSES = ("pending", "in_progress", "completed")
CLAUDE_KEYS = ("id", "subject", "description", "activeForm", "status", "blocks", "blockedBy", "owner", "metadata")


def read_claude_list(folder: str) -> list[PlanTask]:
    """A Claude Code task list (a folder of `N.json`: string ids, `subject`, `description`,
    `activeForm`, `status`, `blocks`, `blockedBy`, `owner`, `metadata`) as a plan: each task
    keyed by its id there, its edges kept (either side names one; an id with no file, a
    task removed there, is left out), what has no place in our record kept in
    `metadata.claude`. Any flaw is a UsageError naming the file."""
    import os

    try:
        names = claude_task_names(os.listdir(folder))
    except OSError as exc:
        raise UsageError(f"cannot read the task list {folder}: {(exc.strerror or 'unreadable').lower()}") from None
    if not names:
        raise UsageError(f"{folder} holds no Claude Code task (no N.json file)", "plan")
    documents = {name[:-5]: _claude_document(folder, name) for name in names}
    if len(documents) > MAX_PLAN_TASKS:
        raise UsageError(f"the list has {len(documents)} tasks; at most {MAX_PLAN_TASKS} in one import", "plan-too-big")
    tasks = {key: _claude_task(key, document) for key, document in documents.items()}
    edges = set()
    for key, document in documents.items():
        for name, mine in (("blockedBy", False), ("blocks", True)):
            for other in map(str, document.get(name) or []):
                if other in tasks and other != key:
                    edges.add((key, other) if mine else (other, key))
    for blocker, dependent in sorted(edges):
        tasks[dependent].blocked_by.append(blocker)
    return list(tasks.values())


def _claude_document(folder: str, name: str) -> dict:
    from ..disk.store import read_bytes

    try:
        data = read_bytes(f"{folder}/{name}", MAX_PLAN_BYTES)
        document = parse_json_value(data.decode("utf-8"))
    except OSError as exc:
        raise UsageError(f"{name}: cannot be read ({(exc.strerror or 'unreadable').lower()})", "plan") from None
    except (ValueError, RecursionError):
        raise UsageError(f"{name}: not a Claude Code task (not JSON)", "plan") from None
    if not isinstance(document, dict) or str(document.get("id")) != name[:-5]:
        raise UsageError(f"{name}: not a Claude Code task (an object whose id is {name[:-5]!r})", "plan")
    for key in ("blocks", "blockedBy"):
        if not isinstance(document.get(key, []), list):
            raise UsageError(f"{name}: {key!r} should list task ids", "plan")
    return document


def _claude_task(key: str, document: dict) -> PlanTask:
    where = f"{key}.json"
    try:
        subject = check_subject(_text(document, "subject", None))
        description = check_description(_text(document, "description", "") if document.get("description") else "")
        owner = check_owner(_text(document, "owner", "") if document.get("owner") else "")
        status = document.get("status", "pending")
        if status not in CLAUDE_STATUSES:
            raise UsageError(f"the status {status!r} is none of {', '.join(CLAUDE_STATUSES)}")
        metadata = document.get("metadata") or {}
        if not isinstance(metadata, dict):
            raise UsageError(f'"metadata" must be an object, not a JSON {_json_name(metadata)}')
        kept = {name: value for name, value in document.items() if name not in CLAUDE_KEYS or name == "activeForm"}
        metadata = check_metadata({**metadata, "claude": {"id": key, **kept}})
    except UsageError as exc:
        raise UsageError(f"{where}: {exc.message}", "plan") from None
    task = PlanTask(key, subject, description, owner, metadata)
    task.status = status
    return task


def export_claude(board: Desk[Store], folder: str) -> list[Record]:
    """The board's open work written as a Claude Code task list in `folder` (made, or
    empty): `N.json` per pending or in-progress task with its id as text, its edges among
    them, `activeForm` and other keys it came in with (metadata.claude) given back, and
    `.highwatermark`. The records written out, in id order."""
    import os

    from .query import read

    listing = read(board.store, history=False)
    opened = listing.open_records
    try:
        os.makedirs(folder, exist_ok=True)
        if os.listdir(folder):
            raise UsageError(
                f"{folder} is not empty; export a task list into a new or empty folder", "export-not-empty"
            )
        exported = {record["id"] for record in opened}
        for record in opened:
            data = (json.dumps(_claude_of(record, exported), indent=2, ensure_ascii=False) + "\n").encode("utf-8")
            _write_new(folder, f"{record['id']}.json", data)
        _write_new(folder, CLAUDE_MARK, str(max(exported, default=0)).encode("ascii"))
    except OSError as exc:
        raise UsageError(f"cannot write the task list {folder}: {(exc.strerror or 'unwritable').lower()}") from None
    return opened


def _claude_of(record: Record, exported: set[int]) -> dict:
    """One record as Claude Code keeps a task: ids as text, edges among the exported tasks."""
    metadata = dict(record.get("metadata") or {})
    came = metadata.pop("claude", None)
    came = came if isinstance(came, dict) else {}
    task: dict[str, Any] = {"id": str(record["id"]), "subject": record["subject"], "description": record["description"]}
    if isinstance(came.get("activeForm"), str):
        task["activeForm"] = came["activeForm"]
    task["status"] = record["status"]
    task["blocks"] = [str(other) for other in record["blocks"] if other in exported]
    task["blockedBy"] = [str(other) for other in record["blockedBy"] if other in exported]
    if record["owner"]:
        task["owner"] = record["owner"]
    if metadata:
        task["metadata"] = metadata
    for name, value in came.items():
        if name not in CLAUDE_KEYS:
            task.setdefault(name, value)
    return task


def _write_new(folder: str, name: str, data: bytes) -> None:
    """A file of the list written whole under a temporary name, then renamed into place."""
    import os

    temp = f"{folder}/.{name}.{os.getpid()}.tmp"
    with open(temp, "wb") as out:
        out.write(data)
    os.replace(temp, f"{folder}/{name}")
