"""The board as tools for agents: a few tool definitions (name, description, JSON
schema of the input, whether a tool only reads) and one dispatch function that runs a
call in-process against the Board and returns the `--json` document the command line
would print, or raises the core's TaskError.

Every harness front end reads this table: `tasks mcp` (taskboard.mcp_server),
`tasks schema` and `tasks call` (taskboard.harness). Argument names are those of
Claude Code's own task tools (`taskId`, `subject`, `description`, `status`, `owner`,
`addBlockedBy`, `addBlocks`, `metadata`). Nothing here imports click, rich or mcp.
"""

from __future__ import annotations

import json
import math
import os

from ..core.errors import Corrupt, GateFailed, NotFound, TaskError, UsageError
from ..core.fields import PRIORITIES, STATUSES
from ..core.model import REMOVE, STATES_TO_FILTER, STATUS_WORDS, Patch, parse_fields, parse_id, pick
from ..views.messages import (
    damage_error,
    error_document,
    error_text,
    no_board_text,
    outcome_events,
    permission_text,
)

TYPE_CHECKING = False  # typing costs ~5 ms of start-up; annotations are strings anyway
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from ..core.outcome import Outcome
    from ..disk.watch import Stop
    from ..ops.board import Board

MAX_INPUT = 1 << 20  # bytes of one call's arguments as JSON: ample for the largest task, small for a context
DEFAULT_LIMIT = 50  # tasks in one task_list answer unless the caller asks for more
MAX_LIMIT = 1000
MAX_WAIT = 24 * 3600  # seconds a task_claim may wait
LIST_FILTERS = STATES_TO_FILTER  # task_list's status also takes ready and blocked
MAKE_A_BOARD = frozenset({"task_create", "task_import"})  # the tools that make the board where there is none
ANOTHER_BOARD = "with the call's board argument, or --dir PATH or TASKS_DIR"  # how a call names a board


class Arg:
    """One argument of a tool: its name, its kind (how a value is checked and
    converted), its JSON schema, and whether a call must give it."""

    __slots__ = ("description", "kind", "name", "required")

    def __init__(self, name: str, kind: str, description: str, required: bool = False):
        self.name, self.kind, self.description, self.required = name, kind, description, required

    def schema(self) -> dict[str, Any]:
        return {**_SCHEMAS[self.kind], "description": self.description}


_ID_SCHEMA: dict[str, Any] = {"type": ["integer", "string"]}
_SCHEMAS: dict[str, dict[str, Any]] = {
    "id": _ID_SCHEMA,
    "ids": {"type": "array", "items": _ID_SCHEMA},
    "text": {"type": "string"},
    "status": {"type": "string", "enum": list(STATUSES)},
    "statuses": {
        "anyOf": [
            {"type": "string", "enum": [*STATUSES, *LIST_FILTERS]},
            {"type": "array", "items": {"type": "string", "enum": [*STATUSES, *LIST_FILTERS]}},
        ]
    },
    "bool": {"type": "boolean"},
    "object": {"type": "object"},
    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT},
    "priority": {"type": "integer", "minimum": PRIORITIES[0], "maximum": PRIORITIES[-1]},
    "labels": {"type": "array", "items": {"type": "string"}},
    "lease": {"type": ["string", "number"]},
    "wait": {"type": ["number", "boolean"]},
    "plan": {"type": "array", "items": {"type": "object"}},
    "parent": _ID_SCHEMA,
    "when": {"type": "string"},
    "fields": {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "string"}]},
}


class Tool:
    """One tool: what an agent sees (name, description, arguments) and what runs. A tool
    that `waits` may wait (its argument `wait`); its run takes a Stop as well."""

    __slots__ = ("args", "description", "destructive", "name", "read_only", "run", "waits")

    def __init__(
        self,
        name: str,
        description: str,
        args: list[Arg],
        run: Callable[..., Reply],
        read_only: bool = False,
        destructive: bool = False,
        waits: bool = False,
    ):
        self.name, self.description, self.run = name, description, run
        self.args = [*args, BOARD_ARG]
        self.read_only, self.destructive, self.waits = read_only, destructive, waits

    def waiting(self, arguments: Any) -> float | bool:
        """How long a call with these (unchecked) arguments may wait: seconds, True
        (until the plan is done), or False (not at all, or arguments it refuses)."""
        if not self.waits or not isinstance(arguments, dict) or arguments.get("wait") is None:
            return False
        try:
            return _wait("wait", arguments["wait"]) or False
        except UsageError:
            return False

    def input_schema(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {arg.name: arg.schema() for arg in self.args},
            "required": [arg.name for arg in self.args if arg.required],
            "additionalProperties": False,
        }


class Reply:
    """What a call answers: the `--json` document, the messages the command line would
    print on stderr as (key, value) pairs (warnings, `unblocked`), and, for a listing
    that met damaged files, the error it ends with after the data (exit 6)."""

    __slots__ = ("document", "events", "failure", "outcome")

    def __init__(
        self,
        document: Any,
        events: list[tuple[str, Any]] | None = None,
        failure: TaskError | None = None,
        outcome: Outcome | None = None,
    ):
        self.document, self.events, self.failure = document, events or [], failure
        self.outcome = outcome  # what a change did: its hooks run after it (taskboard.hooks)


# -- the tools ----------------------------------------------------------------------


def _outcome_reply(outcome: Outcome) -> Reply:
    return Reply(outcome.record, [(key, value) for key, value, _human in outcome_events(outcome)], outcome=outcome)


def _create(board: Board, args: dict[str, Any]) -> Reply:
    return _outcome_reply(
        board.create(
            args["subject"],
            args.get("description", ""),
            args.get("addBlockedBy", ()),
            args.get("addBlocks", ()),
            args.get("owner", ""),
            _metadata(args),
            priority=args.get("priority"),
            labels=args.get("labels"),
            accept=args.get("accept"),
            gate=args.get("gate"),
            **{name: args.get(name) for name in ("parent", "after", "due") if args.get(name) is not REMOVE},
        )
    )


def _metadata(args: dict[str, Any]) -> dict | None:
    """The metadata argument: a key set to null is removed (as in Claude Code's tools)."""
    metadata = args.get("metadata")
    return {key: REMOVE if value is None else value for key, value in metadata.items()} if metadata else None


def _get(board: Board, args: dict[str, Any]) -> Reply:
    if args.get("explain"):
        from ..git.claimrefs import holder_elsewhere
        from ..ops.explain import explain

        return Reply(explain(board, args["taskId"], holder_elsewhere(board)))
    reply = _outcome_reply(board.get(args["taskId"]))
    progress = board.progress_of(reply.document)
    if progress is not None:
        reply.document = {**reply.document, "progress": {"done": progress[0], "total": progress[1]}}
    return _only(reply, args)


def _only(reply: Reply, args: dict[str, Any]) -> Reply:
    """The reply's record with only the keys `fields` names (when it names some)."""
    if "fields" in args:
        reply.document = pick(reply.document, args["fields"])
    return reply


def _list(board: Board, args: dict[str, Any]) -> Reply:
    from ..ops.query import Query, page

    query = Query(  # a usage error comes before any wait for the board
        args.get("status", []),
        args.get("owner"),
        labels=args.get("labels", ()),
        priority=args.get("priority"),
        grep=args.get("grep"),
        parent=args.get("parent"),
        overdue=args.get("overdue", False),
    )
    listing = board.listing(history=not query.open_only)  # open work costs what it costs
    chosen, total = page(board.select_ids(listing, query), args.get("limit", DEFAULT_LIMIT))
    events: list[tuple[str, Any]] = [(key, value) for key, value, _human in outcome_events(_notes(listing.notes))]
    failure = None
    if listing.damaged:
        events += [("warning", error_text(exc)) for exc in listing.damaged[:-1]]
        failure = damage_error(listing.damaged)
    records, cut = _within_budget([pick(listing.record(task_id), args.get("fields")) for task_id in chosen])
    document: dict[str, Any] = {"tasks": records, "total": total}
    if cut:
        document["note"] = (
            f"the page stops at {len(records)} of {len(chosen)} tasks: their JSON reached {LIST_BUDGET} characters "
            "(long descriptions or metadata); ask for fewer (limit) or narrower (status, labels, grep), "
            "or read one task with task_get"
        )
    return Reply(document, events, failure)


LIST_BUDGET = 100_000  # characters of JSON a task_list page holds at most (~25 000 tokens), whatever its limit


def _within_budget(records: list) -> tuple[list, bool]:
    """The first records whose JSON stays within LIST_BUDGET characters (the first one
    always), and whether any were left out: `limit` counts tasks, and 50 tasks with long
    descriptions (up to 64 KiB each) would flood a model's context."""
    import json

    used = 0
    for index, record in enumerate(records):
        used += len(json.dumps(record, ensure_ascii=False)) + 2
        if used > LIST_BUDGET and index:
            return records[:index], True
    return records, False


def _newest_within_budget(entries: list[dict]) -> tuple[list[dict], bool]:
    """The last entries whose JSON stays within LIST_BUDGET characters, oldest first."""
    kept, cut = _within_budget(entries[::-1])
    return kept[::-1], cut


def _notes(notes: list) -> Outcome:
    from ..core.outcome import Outcome

    outcome = Outcome()
    outcome.notes = notes
    return outcome


def _update(board: Board, args: dict[str, Any]) -> Reply:
    status, failed = args.get("status"), args.get("failed", False)
    if failed and status not in (None, "pending"):  # a failed attempt gives the task back
        raise UsageError("failed gives a task back: it goes with status pending (or no status)", "failed-status")
    metadata = _metadata(args) or {}
    timing = {name: args.get(name) for name in ("parent", "after", "due")}
    metadata.update({name: value for name, value in timing.items() if value is REMOVE})  # "" removes it
    patch = Patch(
        subject=args.get("subject"),
        description=args.get("description"),
        status="pending" if failed else status,
        owner=args.get("owner"),
        metadata=metadata or None,
        **{name: value for name, value in timing.items() if value is not REMOVE},
        add_blocked_by=args.get("addBlockedBy", ()),
        add_blocks=args.get("addBlocks", ()),
        remove_blocked_by=args.get("removeBlockedBy", ()),
        remove_blocks=args.get("removeBlocks", ()),
        priority=args.get("priority"),
        add_labels=args.get("addLabels", ()),
        remove_labels=args.get("removeLabels", ()),
        accept=args.get("accept"),
        gate=args.get("gate"),
    )
    return _outcome_reply(
        board.update(
            args["taskId"],
            patch,
            force=args.get("force", False),
            note=args.get("note", ""),
            failed=failed,
            release=failed,
            retry=args.get("retry", False),
        )
    )


def _note(board: Board, args: dict[str, Any]) -> Reply:
    outcome = board.note(args["taskId"], args["text"])
    return Reply(outcome.journaled[0], [(key, value) for key, value, _human in outcome_events(outcome)])


def _log(board: Board, args: dict[str, Any]) -> Reply:
    outcome = board.log(args.get("taskId"))
    entries, limit = outcome.journaled, args.get("limit", DEFAULT_LIMIT)
    events = [(key, value) for key, value, _human in outcome_events(outcome)]
    shown, cut = _newest_within_budget(entries[-limit:])
    document: dict[str, Any] = {"events": shown, "total": len(entries)}
    if cut:
        document["note"] = (
            f"the page holds the last {len(shown)} events: their JSON reached {LIST_BUDGET} characters "
            "(long notes); ask for fewer (limit) or one task's (taskId)"
        )
    return Reply(document, events)


def _claim(board: Board, args: dict[str, Any], stop: Stop | None = None) -> Reply:
    from ..disk.state import lease_or_env

    owner = args.get("owner") or board.caller
    if args.get("offline", False):  # with init --remote: claim on this clone only
        board = board.local()
    lease = lease_or_env(args.get("lease"))
    wait = args.get("wait", False)
    said: list[str] = []  # what the wait's syncs did not push (the branch's code), said once
    try:
        if wait is False:
            outcome = board.claim(args.get("taskId"), owner, lease)
        else:
            from ..git.sync import waiter

            seconds = None if wait is True else wait
            outcome = board.claim_wait(args.get("taskId"), owner, lease, seconds, stop, waiter(said.append))
        if stop is not None and stop.is_set():  # won after the caller gave up: nobody would know it holds it
            task = give_back(board, outcome, owner, stop.reason or "the call was given up")
            kept = f"#{task}, claimed meanwhile, was given back" if task is not None else "nothing was taken"
            raise NotFound(f"stopped waiting: {stop.reason}; {kept}", "stopped")
    except TaskError as exc:  # a wait that ended without a claim still says what its syncs left here
        if said:
            exc.data[EVENTS] = [*(("warning", message) for message in said), *error_events(exc)]
        raise
    reply = _only(_outcome_reply(outcome), args)
    reply.events[:0] = [("warning", message) for message in said]
    return reply


EVENTS = "events"  # the key of a TaskError's data under which a failed call keeps its messages


def error_events(exc: TaskError) -> list[tuple[str, Any]]:
    """The messages a failed call carries besides its error, as (key, value) pairs: what
    the command line would have printed on stderr before the error line (a waiter's
    warning of the commits its sync did not push, when the wait ended without a claim)."""
    events = exc.data.get(EVENTS)
    return list(events) if isinstance(events, list) else []


def give_back(board: Board, outcome: Outcome, owner: str, reason: str) -> int | None:
    """Release what a claim took (a renewal took nothing), journaled with the reason; the
    task given back, if any."""
    from ..ops.board import Board

    if outcome.record is None or not any(event.what == "claimed" for event in outcome.events):
        return None
    holder = Board(board.store, owner, board.authority)
    holder.release(outcome.record["id"], note=f"given back: {reason}")
    return outcome.record["id"]


def _import(board: Board, args: dict[str, Any]) -> Reply:
    from ..ops.importing import created_keys, import_plan, parse_plan

    tasks = parse_plan(json.dumps({"tasks": args["tasks"]}, ensure_ascii=False).encode("utf-8"))
    outcome = import_plan(board, tasks)
    events = [(key, value) for key, value, _human in outcome_events(outcome)]
    return Reply({"created": created_keys(outcome)}, events, outcome=outcome)


TASK_ID = Arg("taskId", "id", 'The task\'s id: 7, "7" or "#7".', required=True)
BOARD_ARG = Arg("board", "text", "The board folder (.tasks); default: the server's board.")
_EDGES = [
    Arg("addBlockedBy", "ids", "Tasks that must be completed before this one can start."),
    Arg("addBlocks", "ids", "Tasks that cannot start until this one is completed."),
]
_METADATA = Arg("metadata", "object", "Keys to merge into the task's metadata; a key set to null is removed.")
_PRIORITY = Arg("priority", "priority", "0 (most urgent) to 4; unset counts as 2.")
_ACCEPT = Arg("accept", "text", "What done means, for whoever checks the work.")
_GATE = Arg("gate", "text", "A shell command that must pass before the task can be completed.")
_FIELDS = Arg("fields", "fields", 'Only these keys of each task record, e.g. ["id", "subject", "status"].')
_PARENT = Arg("parent", "parent", 'The task this one is part of: it blocks its parent ("" in an update: no parent).')
_AFTER = Arg("after", "when", 'Not ready before then: "2h", "3d" from now, or an ISO date or time in UTC.')
_DUE = Arg("due", "when", 'Due then: "2h", "3d", or an ISO date or time; earlier due first among equal priorities.')
_FIELD_ARGS = [_ACCEPT, _GATE, _PARENT, _AFTER, _DUE, _METADATA]  # what create and update both set

TOOLS = [
    Tool(
        "task_create",
        "Create a pending task on the repository's task board; returns the new task record.",
        [
            Arg("subject", "text", 'A short imperative title, one line (e.g. "Write parser").', required=True),
            Arg("description", "text", "What to do and what done means."),
            Arg("owner", "text", "Reserve the task for this agent."),
            *_EDGES,
            _PRIORITY,
            Arg("labels", "labels", "Labels to tag the task with."),
            *_FIELD_ARGS,
        ],
        _create,
    ),
    Tool(
        "task_get",
        "Read one task: subject, description, status, owner, blockedBy, blocks, metadata.",
        [
            TASK_ID,
            _FIELDS,
            Arg(
                "explain",
                "bool",
                'Instead of the record: why the task is or is not ready, {"ready", "reasons": [{"reason", '
                '"message"}]} (blocked, after, stuck, lease, elsewhere, status).',
            ),
        ],
        _get,
        read_only=True,
    ),
    Tool(
        "task_list",
        "List tasks in id order (status ready: in ready order, priority first), at most limit (default "
        f'{DEFAULT_LIMIT}); deleted ones only if asked. Returns {{"tasks": [...], "total": N}}.',
        [
            Arg("status", "statuses", "Only tasks with this status (or any of these); ready = can start now."),
            Arg("owner", "text", "Only tasks this owner holds."),
            Arg("labels", "labels", "Only tasks with every one of these labels."),
            Arg("priority", "priority", "Only tasks of this priority (unset counts as 2)."),
            Arg("grep", "text", "Only tasks whose subject or description contains this text (any case)."),
            Arg("parent", "id", "Only the children of this task."),
            Arg("overdue", "bool", "Only open tasks past their due time."),
            Arg("limit", "limit", f"At most this many tasks (default {DEFAULT_LIMIT})."),
            _FIELDS,
        ],
        _list,
        read_only=True,
    ),
    Tool(
        "task_update",
        "Change a task; every given field applies as one change, or none does. status completed runs the "
        "task's gate, then unblocks its dependents; pending gives it back (or reopens it); deleted removes "
        "it and its edges. Returns the task record.",
        [
            TASK_ID,
            Arg("subject", "text", "New title."),
            Arg("description", "text", "New description."),
            Arg("status", "status", "New status (a task with open blockers cannot start or complete)."),
            Arg("owner", "text", 'New owner ("" clears it).'),
            *_EDGES,
            Arg("removeBlockedBy", "ids", "Tasks that no longer block this one."),
            Arg("removeBlocks", "ids", "Tasks this one no longer blocks."),
            _PRIORITY,
            Arg("addLabels", "labels", "Labels to add."),
            Arg("removeLabels", "labels", "Labels to remove."),
            *_FIELD_ARGS,
            Arg("note", "text", "Why: kept with the change in the board's journal."),
            Arg("failed", "bool", "Give the task back as a failed attempt (3 make it stuck); say why in note."),
            Arg("retry", "bool", "Forget the task's failed attempts, so a stuck task may be claimed again."),
            Arg("force", "bool", "Override another owner's hold on an in-progress task."),
        ],
        _update,
        destructive=True,
    ),
    Tool(
        "task_claim",
        "Atomically take a task and set it in_progress for you: taskId, or without it the next ready task "
        "(priority, then id) nobody else holds; of agents racing for one task exactly one wins. Claiming "
        "what you hold renews its lease. Returns the task record; not_found when nothing is ready.",
        [
            Arg("taskId", "id", 'The task\'s id: 7, "7" or "#7"; omit it for the next ready task.'),
            Arg("owner", "text", "Who takes it (default: the caller the server runs as)."),
            Arg("lease", "lease", 'The claim ends unless renewed within this time: "90s", "15m", "2h" or seconds.'),
            Arg("wait", "wait", "Nothing claimable yet: wait up to this many seconds (true: until the plan is done)."),
            Arg("offline", "bool", "Claims go through a git remote (init --remote): claim on this clone only."),
            _FIELDS,
        ],
        _claim,
        waits=True,
    ),
    Tool(
        "task_note",
        "Add a note to a task in the board's journal (what was tried, found, decided); the task is unchanged. "
        "Returns the journal entry.",
        [TASK_ID, Arg("text", "text", "The note.", required=True)],
        _note,
    ),
    Tool(
        "task_import",
        'Create a whole plan as one change: tasks that name each other by key. Returns {"created": {key: id}}.',
        [
            Arg(
                "tasks",
                "plan",
                'The plan: [{"key": "lexer", "subject": "...", "description", "blockedBy": ["setup", 3], '
                '"blocks", "parent", "priority", "labels", "accept", "gate", "after", "due", "metadata"}]; keys or '
                "board ids in edges and parent.",
                required=True,
            )
        ],
        _import,
    ),
    Tool(
        "task_log",
        f"What happened on the board (or to one task), oldest first: the last limit (default {DEFAULT_LIMIT}) "
        'journal entries. Returns {"events": [{"at", "actor", "task", "event", ...}], "total": N}.',
        [
            Arg("taskId", "id", "Only what concerns this task."),
            Arg("limit", "limit", f"At most this many of the latest entries (default {DEFAULT_LIMIT})."),
        ],
        _log,
        read_only=True,
    ),
]
BY_NAME = {tool.name: tool for tool in TOOLS}


# -- schemas for harnesses ----------------------------------------------------------


def definitions(fmt: str = "anthropic") -> list[dict[str, Any]]:
    """The tools as a JSON array of definitions in a model API's format."""
    if fmt == "anthropic":
        return [
            {"name": tool.name, "description": tool.description, "input_schema": tool.input_schema()} for tool in TOOLS
        ]
    if fmt == "openai":
        return [
            {
                "type": "function",
                "function": {"name": tool.name, "description": tool.description, "parameters": tool.input_schema()},
            }
            for tool in TOOLS
        ]
    raise UsageError(f"unknown schema format {fmt!r}; use anthropic or openai")


# -- one call -----------------------------------------------------------------------


def dispatch(
    name: Any,
    arguments: Any,
    board_dir: str | None = None,
    caller: str = "",
    timeout: float | None = None,
    stop: Stop | None = None,
) -> Reply:
    """Run one tool call against the board: the board given in the call, else
    `board_dir`, else TASKS_DIR, else the one found from the working folder. Raises
    TaskError (a usage error for an unknown tool or bad arguments). `stop`, set from
    another thread, ends a wait and gives back what the call took after it was set."""
    tool = find_tool(name)
    args = check_arguments(tool, arguments)
    board = open_board(args.pop("board", None) or board_dir, caller, timeout)
    missing = tool.name not in MAKE_A_BOARD and not os.path.isdir(board.store.path)
    if missing and (not tool.read_only or "taskId" in args):  # not "no task #7", not "the plan is finished"
        raise NotFound(no_board_text(board.store.path, False, ANOTHER_BOARD), "no-board")
    try:
        reply = tool.run(board, args, stop) if tool.waits else tool.run(board, args)
    except GateFailed as exc:  # the failed attempt it journaled runs its hooks (git.hooks)
        if exc.recorded is not None:
            from ..git.hooks import fire

            fire(board.store, exc.recorded)
        raise
    except PermissionError as exc:  # a board this user may not read or write: name it, it is no bug
        raise Corrupt(permission_text(exc), exc.filename or "", "permission") from None
    if reply.outcome is not None and (reply.outcome.journaled or reply.outcome.unblocked):
        from ..git.hooks import fire

        fire(board.store, reply.outcome)
    if missing:  # a listing of no board reads as an empty one, as the command line's does, and says so
        reply.events.insert(0, ("warning", no_board_text(board.store.path, True, ANOTHER_BOARD)))
    return reply


def find_tool(name: Any) -> Tool:
    if not isinstance(name, str) or name not in BY_NAME:
        shown = repr(name) if isinstance(name, str) else _a_json_type(name)
        raise UsageError(f"unknown tool {shown[:80]}; the tools are {', '.join(BY_NAME)}")
    return BY_NAME[name]


def open_board(board_dir: str | None, caller: str, timeout: float | None) -> Board:
    from ..disk.store import DEFAULT_TIMEOUT, Store, find_board
    from ..git import claim_authority
    from ..ops.board import Board

    try:
        root = find_board(board_dir)
    except FileNotFoundError:  # the working folder itself was removed
        raise UsageError("the working folder no longer exists; name the board folder (board, or --dir)") from None
    return Board(Store(root, DEFAULT_TIMEOUT if timeout is None else timeout), caller, claim_authority())


def check_arguments(tool: Tool, arguments: Any) -> dict[str, Any]:
    """The call's arguments checked against the tool and converted (ids to integers,
    status words to statuses); anything else is a usage error naming the argument."""
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise UsageError(f"{tool.name} takes its arguments as a JSON object, not {_a_json_type(arguments)}")
    try:
        size = len(json.dumps(arguments, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    except (TypeError, ValueError, RecursionError):
        raise UsageError(f"{tool.name}: the arguments are not JSON data") from None
    if size > MAX_INPUT:
        raise UsageError(f"{tool.name}: the arguments are {size} bytes of JSON; at most {MAX_INPUT} are allowed")
    known = {arg.name: arg for arg in tool.args}
    unknown = sorted(set(arguments) - set(known))
    if unknown:
        raise UsageError(
            f"{tool.name} has no argument {', '.join(map(repr, unknown))[:200]}; it takes {', '.join(known)}"
        )
    checked = {}
    for arg in tool.args:
        value = arguments.get(arg.name)
        if value is None:
            if arg.required:
                raise UsageError(f"{tool.name} needs {arg.name}: {arg.description}")
            continue
        checked[arg.name] = _CONVERT[arg.kind](arg.name, value)
    return checked


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    names: dict[type, str] = {str: "string", list: "array", dict: "object"}
    return names.get(type(value), type(value).__name__)


def _a_json_type(value: Any) -> str:
    """`an array`, `a string`, `null`: the JSON type of a value as a message names it."""
    kind = _json_type(value)
    return kind if kind == "null" else ("an " if kind[0] in "aeiou" else "a ") + kind


def _wrong(name: str, wanted: str, value: Any) -> UsageError:
    shown = json.dumps(value, ensure_ascii=False) if isinstance(value, (str, int, float)) else _a_json_type(value)
    return UsageError(f"{name} must be {wanted}, not {shown[:80]}")


def _task_id(name: str, value: Any) -> int:
    if isinstance(value, (int, str)) and not isinstance(value, bool):
        try:
            return parse_id(str(value))
        except UsageError:
            pass
    raise _wrong(name, 'a task id (7, "7" or "#7")', value)


def _task_ids(name: str, value: Any) -> list[int]:
    if not isinstance(value, list):
        return [_task_id(name, value)]  # one id where a list was asked for: what was meant is plain
    return [_task_id(f"{name}[{index}]", item) for index, item in enumerate(value)]


def _text(name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise _wrong(name, "a string", value)
    return value


def _status(name: str, value: Any) -> str:
    if isinstance(value, str) and (value in STATUSES or value in STATUS_WORDS):
        return STATUS_WORDS.get(value, value)
    raise _wrong(name, f"one of {', '.join(STATUSES)}", value)


def _statuses(name: str, value: Any) -> list[str]:
    words = value if isinstance(value, list) else [value]
    wanted = []
    for word in words:
        if isinstance(word, str) and word in LIST_FILTERS:
            wanted.append(word)
        elif isinstance(word, str) and (word in STATUSES or word in STATUS_WORDS):
            wanted.append(STATUS_WORDS.get(word, word))
        else:
            raise _wrong(name, f"one or a list of {', '.join([*STATUSES, *LIST_FILTERS])}", word)
    return wanted


def _bool(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise _wrong(name, "true or false", value)
    return value


def _object(name: str, value: Any) -> dict:
    if isinstance(value, str):  # some clients send an object as its JSON text
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            raise _wrong(name, "a JSON object", value) from None
    if not isinstance(value, dict):
        raise _wrong(name, "a JSON object", value)
    return value


def _limit(name: str, value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= MAX_LIMIT:
        return value
    raise _wrong(name, f"a whole number from 1 to {MAX_LIMIT}", value)


def _priority(name: str, value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and value in PRIORITIES:
        return value
    raise _wrong(name, "a whole number from 0 (most urgent) to 4", value)


def _labels(name: str, value: Any) -> list[str]:
    labels = value if isinstance(value, list) else [value]  # one label where a list was asked for
    for index, label in enumerate(labels):
        if not isinstance(label, str):
            raise _wrong(f"{name}[{index}]", "a string", label)
    return labels


def _lease(name: str, value: Any) -> float:
    from ..disk.state import parse_duration

    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)
    if isinstance(value, str):
        try:
            return parse_duration(value)
        except ValueError:
            pass
    raise _wrong(name, 'a length of time above zero: "90s", "15m", "2h" or seconds (at most 30 days)', value)


def _wait(name: str, value: Any) -> float | bool:
    if isinstance(value, str):  # some clients send what is not a lone string type as text: "true", "60"
        value = {"true": True, "false": False}.get(value.strip().lower(), _number(value))
    if value is True or value is False:
        return value
    if isinstance(value, (int, float)) and 0 <= value <= MAX_WAIT:
        return float(value)
    raise _wrong(name, f"true, false or seconds from 0 to {MAX_WAIT}", value)


def _fields(name: str, value: Any) -> tuple[str, ...]:
    if isinstance(value, str) and value.lstrip().startswith("["):  # some clients send an array as its JSON text
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            raise _wrong(name, 'a list of record keys, or "id,subject"', value) from None
    try:
        return parse_fields(value)
    except UsageError as exc:
        raise UsageError(f"{name}: {exc.message}") from None


def _parent(name: str, value: Any) -> Any:
    return REMOVE if value == "" else _task_id(name, value)


def _when(name: str, value: Any) -> Any:
    from ..core.model import parse_when

    if value == "":
        return REMOVE
    if isinstance(value, str):
        try:
            return parse_when(value)
        except UsageError:
            pass
    raise _wrong(name, 'a time: "2h", "3d" from now, or an ISO date or time such as "2026-12-24T09:00"', value)


def _number(text: str) -> Any:
    """The number a text spells (decimal only), else the text itself."""
    try:
        number = float(text)
    except ValueError:
        return text
    return number if math.isfinite(number) else text


def _plan(name: str, value: Any) -> list:
    if not isinstance(value, list):
        raise _wrong(name, "an array of tasks", value)
    return value


_CONVERT: dict[str, Callable[[str, Any], Any]] = {
    "id": _task_id,
    "ids": _task_ids,
    "text": _text,
    "status": _status,
    "statuses": _statuses,
    "bool": _bool,
    "object": _object,
    "limit": _limit,
    "priority": _priority,
    "labels": _labels,
    "lease": _lease,
    "wait": _wait,
    "plan": _plan,
    "parent": _parent,
    "when": _when,
    "fields": _fields,
}


# -- how tools word errors ----------------------------------------------------------

# The core's errors whose command-line wording names a flag: said in the tools' words.
_TOOL_WORDING: dict[str, Callable[[TaskError], str]] = {
    "held": lambda e: f"{e.message} (pass force: true to override)",
    "taken-over": lambda e: (
        f"{e.message} (pass force: true to override)" if "after your lease" in e.message else e.message
    ),
    "stuck": lambda e: (
        f"{e.data['summary']}; put it back with task_update taskId {e.data['task']}, status pending, retry true"
    ),
    "owner-needed": lambda e: (
        "claiming needs an owner: pass owner, or name the caller (TASKS_OWNER, or tasks --as NAME)"
    ),
    "add-and-remove": lambda e: (
        f"add{e.data['key'][0].upper()}{e.data['key'][1:]} and remove{e.data['key'][0].upper()}{e.data['key'][1:]} "
        f"both name {', '.join(f'#{i}' for i in e.data['ids'])}; say one"
    ),
    "delete-with-edges": lambda e: "status deleted removes every edge of the task; leave out the edge arguments",
    "ready-and-blocked": lambda e: "ready and blocked exclude each other; ask for one",
    "busy": lambda e: f"{e.message}; try again",
    "wait-timeout": lambda e: f"{e.message}; call task_claim again to wait on",
    "remote-unreachable": lambda e: (
        f"{e.message}; pass offline: true to claim on this clone only" if e.data.get("claiming") else e.message
    ),
}


def error_message(exc: TaskError) -> str:
    wording = _TOOL_WORDING.get(exc.reason)
    return wording(exc) if wording else error_text(exc)


def tool_error(exc: TaskError) -> dict[str, Any]:
    """`{"error": {"code", "message", "exit"}}`: the command line's --json error line,
    worded for a tool's caller."""
    return {"error": {**error_document(exc), "message": error_message(exc)}}


def caller_from_env(flag: str | None) -> str:
    """Who is calling: `--as`, else TASKS_OWNER, else nobody (a person, trusted)."""
    return flag if flag is not None else os.environ.get("TASKS_OWNER", "")
