"""The `tasks` command line: click parses it into calls of the handlers the door hands
it (taskboard.__main__: the board's commands are cli.commands; `Handlers` below is what
the tree asks of them). No business rules and no printing of results here; what is
parsed here is the command line's own syntax (KEY=VALUE, SECONDS, `-d -`).

Data goes to stdout, messages to stderr; with --json stdout is one JSON document
and stderr is JSON Lines whose last line is the error, if any.
"""

from __future__ import annotations

import json
import sys

import click

from .. import __version__
from ..core.errors import UsageError
from ..core.fields import MAX_META_DEPTH, NonFinite, json_depth, parse_json_value
from ..core.model import (
    MAX_DESCRIPTION,
    META_FIELDS,
    REMOVE,
    Patch,
    parse_fields,
    parse_id,
    parse_limit,
    parse_priority,
    parse_status,
)
from .invocation import Invocation, check_timeout, fail, reader_gone, write

TYPE_CHECKING = False  # typing costs ~5 ms of start-up; annotations are strings anyway
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any, Protocol

    from ..ops.query import Query

    class Commands(Protocol):
        """The bodies of the board's commands (cli.commands), as the tree calls them."""

        def init(self, inv: Invocation, remote: str | None = None) -> int: ...
        def create(self, inv: Invocation, subject: str, *given: Any, **fields: Any) -> int: ...
        def get(self, inv: Invocation, task_id: int, fields: tuple[str, ...] | None = None) -> int: ...
        def update(
            self,
            inv: Invocation,
            task_id: int,
            patch: Patch,
            force: bool = False,
            retry: bool = False,
            gate_timeout: float | None = None,
        ) -> int: ...
        def delete(self, inv: Invocation, task_id: int, force: bool = False) -> int: ...
        def done(
            self, inv: Invocation, task_id: int, note: str = "", force: bool = False, gate_timeout: float | None = None
        ) -> int: ...
        def reopen(self, inv: Invocation, task_id: int, cascade: bool = False, note: str = "") -> int: ...
        def archive(self, inv: Invocation, days: int = 30, dry_run: bool = False) -> int: ...
        def restore(self, inv: Invocation, task_id: int) -> int: ...
        def release(
            self, inv: Invocation, task_id: int, note: str = "", failed: bool = False, force: bool = False
        ) -> int: ...
        def claim(
            self,
            inv: Invocation,
            task_id: int | None,
            owner: str | None,
            lease: float | None = None,
            wait: bool = False,
            seconds: float | None = None,
            offline: bool = False,
            fields: tuple[str, ...] | None = None,
        ) -> int: ...
        def renew(self, inv: Invocation, task_id: int, lease: float | None = None) -> int: ...
        def import_plan(self, inv: Invocation, data: bytes) -> int: ...
        def import_claude(self, inv: Invocation, folder: str) -> int: ...
        def export_claude(self, inv: Invocation, folder: str) -> int: ...
        def prime(self, inv: Invocation, limit: int | None = None, full: bool = False) -> int: ...
        def hook(self, inv: Invocation, action: str, event: str | None = None, command: str | None = None) -> int: ...
        def stats(self, inv: Invocation, since: str | None = None) -> int: ...
        def explain(self, inv: Invocation, task_id: int) -> int: ...
        def list_tasks(self, inv: Invocation, query: Query, fields: tuple[str, ...] | None = None) -> int: ...
        def board(
            self,
            inv: Invocation,
            svg: str | None = None,
            watch: bool = False,
            owner: str | None = None,
            labels: Iterable[str] = (),
            every: bool = False,
            by_parent: bool = False,
        ) -> int: ...
        def graph(
            self,
            inv: Invocation,
            task_id: int | None = None,
            fmt: str = "text",
            include_deleted: bool = False,
            svg: str | None = None,
        ) -> int: ...
        def check(self, inv: Invocation, fix: bool = False) -> int: ...
        def note(self, inv: Invocation, task_id: int, text: str) -> int: ...
        def log(self, inv: Invocation, task_id: int | None = None, limit: int | None = None) -> int: ...
        def sync(self, inv: Invocation, remote: str | None) -> int: ...

    class Handlers(Protocol):
        """What the tree hands its work to: the board's commands, and the commands that
        start another front end (the agents' harnesses, the MCP server, the web server)."""

        @property
        def commands(self) -> Commands: ...
        def schema(self, inv: Invocation, fmt: str) -> int: ...
        def call(self, inv: Invocation) -> int: ...
        def setup(self, inv: Invocation, harness: str) -> int: ...
        def mcp(self, inv: Invocation) -> int: ...
        def serve(self, inv: Invocation, port: int, host: str, token: str | None, open_browser: bool) -> int: ...

# -- parameter types ----------------------------------------------------------------


class Parsed(click.ParamType):
    """A value parsed by one of the core's parsers; its UsageError becomes click's.
    `complete`, when given, offers values to shell completion."""

    def __init__(self, name: str, parse, complete=None):
        self.name, self.parse, self.complete = name, parse, complete

    def shell_complete(self, ctx, param, incomplete):
        return self.complete(ctx, incomplete) if self.complete else []

    def convert(self, value, param, ctx):
        if not isinstance(value, str):
            return value  # a default, or already converted
        try:
            return self.parse(value)
        except UsageError as exc:
            self.fail(exc.message, param, ctx)


def parse_meta(item: str) -> tuple[str, Any]:
    """`KEY=VALUE`: VALUE as JSON when it is valid JSON, else the text; `KEY=` yields REMOVE."""
    key, sep, value = item.partition("=")
    if not sep:
        raise UsageError(f"--meta {item!r} has no '='; write KEY=VALUE (or KEY= to remove the key)")
    _utf8(item, "--meta")
    if not key.strip() or any(ord(char) < 32 or ord(char) == 127 for char in key):
        raise UsageError(f"--meta {item!r} has an empty or unprintable key")
    if value == "":
        return key, REMOVE
    try:
        parsed = parse_json_value(value)
    except NonFinite:
        raise UsageError(f"--meta {key}: {value[:80]!r} is not a finite number; JSON has no NaN or Infinity") from None
    except RecursionError:
        raise _too_deep(key) from None
    except ValueError:
        return key, value
    if json_depth(parsed) > MAX_META_DEPTH:
        raise _too_deep(key)
    if isinstance(parsed, (int, float)) and not isinstance(parsed, bool) and json.dumps(parsed) != value:
        return key, value  # a number only as JSON writes it: `1.10` and `1e3` keep their text (DESIGN §4)
    _utf8(json.dumps(parsed, ensure_ascii=False), f"--meta {key}")  # a "\ud800" escape decodes to no character
    return key, parsed


def _utf8(text: str, what: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(f"{what} is not valid UTF-8 text (it holds an undecodable byte or half a character)") from None


def _too_deep(key: str) -> UsageError:
    return UsageError(f"--meta {key}: the value is nested too deeply; at most {MAX_META_DEPTH} levels are allowed")


def _seconds(text: str) -> float:
    try:
        return check_timeout(float(text))
    except (ValueError, UsageError):
        raise UsageError(f"{text!r} is not a finite number of seconds ≥ 0") from None


def _lease(text: str) -> float:
    from ..disk.state import parse_duration

    try:
        return parse_duration(text)
    except ValueError:
        raise UsageError(
            f"{text!r} is not a lease: give a length of time above zero, such as 90s, 15m or 2h (at most 30 days)"
        ) from None


def _complete_ids(ctx: click.Context, incomplete: str) -> list:
    """The ids of the board's tasks (not deleted), each with its subject, for shell completion.
    The board is the one the command line names so far (--dir before or after the command)."""
    from ..core.errors import TaskError

    inv = ctx.ensure_object(Invocation)
    board_dir = inv.board_dir if inv.board_dir is not None else ctx.find_root().params.get("board_dir")
    try:
        listing = Invocation(inv.authority, inv.hooks, board_dir=board_dir).board.listing()
    except (TaskError, OSError):
        return []  # completion never fails loudly
    wanted = incomplete.lstrip("#")
    return [
        click.shell_completion.CompletionItem(str(record["id"]), help=record["subject"])
        for record in listing.records
        if record["status"] != "deleted" and str(record["id"]).startswith(wanted)
    ]


TASK_ID = Parsed("ID", parse_id, _complete_ids)


def _gate_seconds(text: str) -> float:
    from ..ops.gates import check_timeout

    try:
        value = float(text)
    except ValueError:
        raise UsageError(f"{text!r} is not a number of seconds above 0") from None
    return check_timeout(value)


def _when(text: str) -> Any:
    """A moment (`--after`, `--due`): 2h, 3d from now, an ISO date or time; "" removes it."""
    from ..core.model import parse_when

    return REMOVE if text == "" else parse_when(text)


WHEN = Parsed("WHEN", _when)
GATE_SECONDS = Parsed("SECONDS", _gate_seconds)
LEASE = Parsed("DURATION", _lease)
META = Parsed("KEY=VALUE", parse_meta)
SECONDS = Parsed("SECONDS", _seconds)
STATUS = Parsed("STATUS", parse_status)
STATUS_FILTER = Parsed("STATUS", lambda text: parse_status(text, states=True))
PRIORITY = Parsed("0-4", parse_priority)
LIMIT = Parsed("N", parse_limit)


def _days(text: str) -> int:
    """A whole number of days, 0 or more (`archive --older-than`)."""
    from ..ops.archiving import MAX_DAYS

    if not text.isascii() or not text.isdigit() or int(text) > MAX_DAYS:
        raise UsageError(f"--older-than takes a whole number of days from 0 to {MAX_DAYS}, not {text!r}", "days")
    return int(text)


DAYS = Parsed("DAYS", _days)
FIELDS = Parsed("a,b,c", parse_fields)
fields_option = click.option(
    "--fields", type=FIELDS, help="With --json: keep only these keys of each record (id,subject,status...)."
)


def _set_json(ctx: click.Context, _param, value: bool) -> bool:
    if value:
        ctx.ensure_object(Invocation).json = True
    return value


def _print_version(ctx: click.Context, _param, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    if "--json" in ctx.ensure_object(Invocation).argv:
        write(sys.stdout, json.dumps({"version": __version__}) + "\n")
    else:
        write(sys.stdout, f"tasks {__version__}\n")
    ctx.exit(0)


json_option = click.option(
    "--json",
    "json_",
    is_flag=True,
    expose_value=False,
    callback=_set_json,
    is_eager=True,
    help="Machine output: one JSON document on stdout, JSON Lines on stderr.",
)
pass_inv = click.make_pass_decorator(Invocation)


def handlers() -> Handlers:
    """What this run's commands hand their work to: `run` puts it in click's context object."""
    return click.get_current_context().ensure_object(Invocation).handlers


def commands() -> Commands:
    """The bodies of the board's commands."""
    return handlers().commands


def _set_global(attribute: str):
    """A callback that keeps a global option given after the command (agents put them there)."""

    def keep(ctx: click.Context, _param, value):
        if value is not None:
            setattr(ctx.ensure_object(Invocation), attribute, value)
        return value

    return keep


# The global options, accepted after the command too: `tasks create X --as alice`.
GLOBAL_OPTIONS = (
    click.option(
        "--dir",
        "board_dir",
        metavar="PATH",
        expose_value=False,
        callback=_set_global("board_dir"),
        help="The board folder (else TASKS_DIR, else the nearest .tasks/).",
    ),
    click.option(
        "--timeout",
        type=SECONDS,
        expose_value=False,
        callback=_set_global("timeout"),
        help="Seconds to wait for the board lock (else TASKS_LOCK_TIMEOUT, else 10).",
    ),
    click.option(
        "--as",
        "caller",
        metavar="NAME",
        expose_value=False,
        callback=_set_global("caller_flag"),
        help="Who is calling (else TASKS_OWNER); protects tasks others hold.",
    ),
)


def common_options(command):
    """--json and the global options, on every command."""
    for option in (json_option, *reversed(GLOBAL_OPTIONS)):
        command = option(command)
    return command


def declared_options(command):
    """A text flag for each metadata field that declares its words (core.model.Field.help):
    a new field needs no option written here."""
    for field in reversed([field for field in META_FIELDS if field.help]):
        command = click.option(f"--{field.name}", "declared_" + field.name, metavar="TEXT", help=field.help)(command)
    return command


def declared_values(given: dict[str, Any]) -> dict[str, Any]:
    """The declared fields' flags (declared_options) as a Patch or create takes them:
    by name, "" as REMOVE, an absent flag left out."""
    found = {key.removeprefix("declared_"): value for key, value in given.items() if value is not None}
    return {name: REMOVE if value == "" else value for name, value in found.items()}


def _description(value: str) -> str:
    """`-d -` reads the description from stdin (UTF-8)."""
    return _text(value, "the description")


def _text(value: str, what: str) -> str:
    """A text argument; '-' reads it from stdin (UTF-8). A person at a terminal is told
    that the command waits for them (a command never prompts, but it may read)."""
    if value != "-":
        return value
    if sys.stdin and sys.stdin.isatty():
        inv = click.get_current_context().ensure_object(Invocation)
        inv.event("reading", "stdin", f"reading {what} from stdin (end with Ctrl-D)")
    raw = sys.stdin.buffer.read(MAX_DESCRIPTION * 4 + 1) if sys.stdin else b""
    if len(raw) > MAX_DESCRIPTION * 4:  # more bytes than the longest allowed text can take; cut mid-character
        raise UsageError(f"{what} on stdin is longer than {MAX_DESCRIPTION} characters, the most allowed")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{what} on stdin is not valid UTF-8 (byte {exc.start})") from None


def _meta(items) -> dict | None:
    return dict(items) if items else None


# -- the commands -------------------------------------------------------------------


class Tree(click.Group):
    """The command tree. A reader that goes away (a closed pipe) ends a command as it
    ends one of the fast path (cli.invocation.reader_gone), not with click's own exit 1,
    which the contract keeps for a bug."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            return reader_gone()


@click.group(cls=Tree, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--dir", "board_dir", metavar="PATH", help="The board folder (else TASKS_DIR, else the nearest .tasks/).")
@click.option("--timeout", type=SECONDS, help="Seconds to wait for the board lock (else TASKS_LOCK_TIMEOUT, else 10).")
@click.option("--as", "caller", metavar="NAME", help="Who is calling (else TASKS_OWNER); protects tasks others hold.")
@click.option("--json", "json_", is_flag=True, help="Machine output for every command.")
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_version,
    help="Show the version and exit.",
)
@click.pass_context
def cli(ctx: click.Context, board_dir, timeout, caller, json_):
    """A task board that lives in the repository: one JSON file per task in .tasks/,
    a dependency graph kept in both directions, safe for many agents at once.

    \b
      tasks create "Write parser"            # → #1
      tasks create "Write tests" --blocked-by 1
      tasks --as alice claim                 # take the next ready task
      tasks --as alice done 1                # unblocked #2
      tasks board                            # kanban: Blocked · Ready · In progress · Done

    More: tasks COMMAND --help, and the README.
    """
    inv = ctx.ensure_object(Invocation)
    inv.board_dir, inv.timeout, inv.caller_flag = board_dir, timeout, caller
    inv.command = ctx.invoked_subcommand or ""
    inv.json = inv.json or json_


@cli.command()
@click.option("--remote", metavar="NAME", help="Claims go through this git remote: one winner across machines.")
@common_options
@pass_inv
def init(inv: Invocation, remote):
    """Create the board with its .gitignore and .gitattributes, and wire git.

    \b
      tasks init --remote origin   # claims win refs/tasks/claims/<uid> on origin first
    """
    return commands().init(inv, remote)


@cli.command()
@click.argument("subject")
@click.option("-d", "--description", default="", help="Longer text; '-' reads it from stdin.")
@click.option("--blocked-by", "blocked_by", type=TASK_ID, multiple=True, help="A task that must finish first.")
@click.option("--blocks", type=TASK_ID, multiple=True, help="A task this one must finish before.")
@click.option("--owner", default="", help="Who holds the task.")
@click.option("--meta", type=META, multiple=True, help="KEY=VALUE (VALUE as JSON when it parses).")
@click.option("--priority", type=PRIORITY, help="0 (most urgent) to 4; unset counts as 2.")
@click.option("--label", "labels", multiple=True, help="A label (repeatable).")
@click.option("--accept", help="What done means, for people.")
@click.option("--gate", help="A shell command that must pass before the task is completed.")
@click.option("--parent", type=TASK_ID, help="The task this one is part of (it blocks its parent).")
@click.option("--after", type=WHEN, help="Not ready before then: 2h, 3d, 2026-12-24, 2026-12-24T09:00 (UTC).")
@click.option("--due", type=WHEN, help="Due then (earlier due first among equal priorities).")
@declared_options
@common_options
@pass_inv
def create(
    inv: Invocation, subject, description, blocked_by, blocks, owner, meta, priority, labels, accept, gate, **when
):
    """Add a pending task.

    \b
      tasks create "Write parser" --blocked-by 3 --priority 1 --label parser
      tasks create "Parser passes" --accept "the corpus parses" --gate "make test-parser"
      tasks create "Lexer" --parent 12 --after 2h --due 2026-12-24
    """
    fields = {"priority": priority, "labels": list(labels) if labels else None, "accept": accept or None}
    fields["gate"] = gate or None
    declared = declared_values({key: when.pop(key) for key in list(when) if key.startswith("declared_")})
    fields.update({name: None if value is REMOVE else value for name, value in (when | declared).items()})
    return commands().create(inv, subject, _description(description), blocked_by, blocks, owner, _meta(meta), **fields)


@cli.command()
@click.argument("task_id", type=TASK_ID, metavar="ID")
@fields_option
@common_options
@pass_inv
def get(inv: Invocation, task_id, fields):
    """Show one task.

    \b
      tasks get 7 --json --fields id,status,blockedBy
    """
    return commands().get(inv, task_id, fields)


@cli.command()
@click.argument("task_id", type=TASK_ID, metavar="ID")
@click.option("--subject", help="New subject.")
@click.option("-d", "--description", help="New text; '-' reads it from stdin.")
@click.option("--status", type=STATUS, help="New status.")
@click.option("--owner", help='Set the owner ("" clears it).')
@click.option("--add-blocked-by", type=TASK_ID, multiple=True, help="A task that must finish first.")
@click.option("--add-blocks", type=TASK_ID, multiple=True, help="A task this one must finish before.")
@click.option("--remove-blocked-by", type=TASK_ID, multiple=True, help="A task that no longer blocks this one.")
@click.option("--remove-blocks", type=TASK_ID, multiple=True, help="A task this one no longer blocks.")
@click.option("--meta", type=META, multiple=True, help="KEY=VALUE; KEY= removes the key.")
@click.option("--priority", type=PRIORITY, help="0 (most urgent) to 4.")
@click.option("--label", "labels", multiple=True, help="Add a label (repeatable).")
@click.option("--unlabel", "unlabels", multiple=True, help="Remove a label (repeatable).")
@click.option("--accept", help='What done means, for people ("" removes it).')
@click.option("--gate", help='A shell command that must pass before completing ("" removes it).')
@click.option("--gate-timeout", type=GATE_SECONDS, help="Seconds the gate may run when completing (default 600).")
@click.option("--force", is_flag=True, help="Override another owner's hold on the task; complete without the gate.")
@click.option("--retry", is_flag=True, help="Forget the failed attempts: a stuck task may be claimed again.")
@click.option("--parent", type=TASK_ID, help="Make it part of this task (it blocks its parent).")
@click.option("--no-parent", is_flag=True, help="It is part of no task any more (the edge to its parent goes).")
@click.option("--after", type=WHEN, help='Not ready before then: 2h, 3d, an ISO date or time ("" removes it).')
@click.option("--due", type=WHEN, help='Due then: 2h, 3d, an ISO date or time ("" removes it).')
@declared_options
@common_options
@pass_inv
def update(
    inv: Invocation,
    task_id,
    subject,
    description,
    status,
    owner,
    add_blocked_by,
    add_blocks,
    remove_blocked_by,
    remove_blocks,
    meta,
    priority,
    labels,
    unlabels,
    accept,
    gate,
    gate_timeout,
    force,
    retry,
    parent,
    no_parent,
    after,
    due,
    **declared,
):
    """Change a task; all flags apply as one change, or none does.

    \b
      tasks update 4 --status done
      tasks update 4 --add-blocked-by 2 --priority 1 --label api --meta size=large
      tasks update 4 --gate "make test"      # completing #4 runs it first
    """
    metadata = _meta(meta)
    removed = {name: REMOVE for name, value in (("accept", accept), ("gate", gate)) if value == ""}
    removed.update({name: REMOVE for name, value in (("after", after), ("due", due)) if value is REMOVE})
    declared = declared_values(declared)
    removed.update({name: value for name, value in declared.items() if value is REMOVE})
    if parent is not None and no_parent:
        raise UsageError("--parent and --no-parent exclude each other; say one", "parent")
    if no_parent:
        removed["parent"] = REMOVE
    if removed:
        metadata = {**(metadata or {}), **removed}
    patch = Patch(
        subject=subject,
        description=None if description is None else _description(description),
        status=status,
        owner=owner,
        metadata=metadata,
        accept=accept or None,
        gate=gate or None,
        add_blocked_by=add_blocked_by,
        add_blocks=add_blocks,
        remove_blocked_by=remove_blocked_by,
        remove_blocks=remove_blocks,
        priority=priority,
        add_labels=labels,
        remove_labels=unlabels,
        parent=parent,
        after=None if after is REMOVE else after,
        due=None if due is REMOVE else due,
        **{name: value for name, value in declared.items() if value is not REMOVE},
    )
    return commands().update(inv, task_id, patch, force=force, retry=retry, gate_timeout=gate_timeout)


@cli.command()
@click.argument("task_id", type=TASK_ID, metavar="ID")
@click.option("--force", is_flag=True, help="Override another owner's hold on an in-progress task.")
@common_options
@pass_inv
def delete(inv: Invocation, task_id, force):
    """Delete a task (logically: the file stays, its edges go)."""
    return commands().delete(inv, task_id, force=force)


@cli.command()
@click.argument("task_id", type=TASK_ID, metavar="[ID]", required=False)
@click.option("--owner", help="Who takes it (else --as, else TASKS_OWNER).")
@click.option(
    "--lease", type=LEASE, metavar="DURATION", help="End the claim unless renewed within 90s, 15m, 2h... (TASKS_LEASE)."
)
@click.option(
    "--wait",
    is_flag=False,
    flag_value="",
    default=None,
    metavar="[SECONDS]",
    help="When nothing is claimable yet but may become so, wait for it (at most SECONDS).",
)
@click.option("--offline", is_flag=True, help="Claim on this clone only, without the remote (init --remote).")
@fields_option
@common_options
@pass_inv
def claim(inv: Invocation, task_id, owner, lease, wait, offline, fields):
    """Take a task atomically: ID, or the first ready one.

    Exactly one of several racing claimers wins. Exit 3 when nothing is ready
    (with --wait: when nothing open is left that could come to you, or the
    SECONDS ran out), 4 when the task is blocked, finished, stuck or held by
    someone else.

    \b
      tasks claim --wait --lease 15m --json   # the agent loop's call
      tasks claim 7 --wait 60                  # wait at most a minute for #7
    """
    seconds = None if not wait else _seconds(wait)
    return commands().claim(inv, task_id, owner, lease, wait is not None, seconds, offline, fields)


@cli.command()
@click.argument("task_id", type=TASK_ID, metavar="ID")
@click.option("--lease", type=LEASE, metavar="DURATION", help="A new length for the lease (else the one it has).")
@common_options
@pass_inv
def renew(inv: Invocation, task_id, lease):
    """Renew your lease on a task you hold: it ends DURATION from now.

    Changes no committed file. Refused (exit 4) when someone took the task
    over after your lease ran out.
    """
    return commands().renew(inv, task_id, lease)


def _filter_options(command):
    """The filters `list` and `ready` share."""
    for option in reversed(
        [
            click.option("--owner", help="Only tasks this owner holds."),
            click.option("--label", "labels", multiple=True, help="Only tasks with this label (all given)."),
            click.option("--priority", type=PRIORITY, help="Only this priority (unset counts as 2)."),
            click.option("--grep", metavar="TEXT", help="Only tasks whose subject or description has TEXT (any case)."),
            click.option("--limit", type=LIMIT, help="At most N tasks: the first N in the listing's order."),
            click.option("--parent", type=TASK_ID, help="Only the children of this task."),
            click.option("--overdue", is_flag=True, help="Only open tasks past their due time."),
            fields_option,
        ]
    ):
        command = option(command)
    return command


def _list_options(command):
    for option in reversed(
        [
            click.option(
                "--status",
                "statuses",
                type=STATUS_FILTER,
                multiple=True,
                help="Only these statuses (also done, in-progress, todo, ready, blocked); archived tasks only with --all.",
            ),
            click.option("--ready", is_flag=True, help="Only pending tasks with no open blocker."),
            click.option("--blocked", is_flag=True, help="Only open tasks with an open blocker."),
            click.option(
                "--all",
                "include_deleted",
                is_flag=True,
                help="Include deleted and archived tasks (the archive is read).",
            ),
        ]
    ):
        command = option(command)
    return _filter_options(command)


@cli.command(name="list")
@_list_options
@common_options
@pass_inv
def list_(
    inv: Invocation,
    statuses,
    ready,
    blocked,
    include_deleted,
    owner,
    labels,
    priority,
    grep,
    limit,
    parent,
    overdue,
    fields,
):
    """Tasks in ascending id order; only ready tasks (--ready, --status ready) come in ready order.

    Archived tasks (`tasks archive`) are left out unless --all is given: `list`
    never opens the archive folder, `list --all` does.

    \b
      tasks list --parent 12                  # the children of #12
      tasks list --overdue                    # open tasks past their due time
      tasks list --all --status completed     # every completed task, archived ones too
    """
    from ..ops.query import Query

    filters = {"labels": labels, "priority": priority, "grep": grep, "limit": limit, "parent": parent}
    query = Query(statuses, owner, ready, blocked, include_deleted, overdue=overdue, **filters)
    return commands().list_tasks(inv, query, fields)


@cli.command()
@_filter_options
@click.option("--explain", "explain_id", type=TASK_ID, metavar="ID", help="Say why ID is or is not ready.")
@common_options
@pass_inv
def ready(inv: Invocation, owner, labels, priority, grep, limit, parent, overdue, fields, explain_id):
    """Tasks that can start now, in ready order: priority (0 first; unset counts as 2), then
    the earlier due time, then id. A task with an `after` time in the future is not ready.

    \b
      tasks ready --explain 7   # blocked by #3 Write parser (in progress, alice); after ...
    """
    if explain_id is not None:
        return commands().explain(inv, explain_id)
    from ..ops.query import Query

    filters = {"labels": labels, "priority": priority, "grep": grep, "limit": limit, "parent": parent}
    return commands().list_tasks(inv, Query(owner=owner, ready=True, overdue=overdue, **filters), fields)


@cli.command()
@click.argument("task_id", type=TASK_ID, metavar="ID")
@click.option("--note", default="", help="What to say about it in the journal.")
@click.option("--gate-timeout", type=GATE_SECONDS, help="Seconds the task's gate may run (default 600).")
@click.option("--force", is_flag=True, help="Complete it even though another owner holds it, or its gate.")
@common_options
@pass_inv
def done(inv: Invocation, task_id, note, gate_timeout, force):
    """Complete a task (short for update ID --status completed); its gate runs first.

    \b
      tasks done 4 --note "merged in #123"
    """
    return commands().done(inv, task_id, note, force=force, gate_timeout=gate_timeout)


@cli.command()
@click.argument("task_id", type=TASK_ID, metavar="ID")
@click.option("--cascade", is_flag=True, help="Also reopen every completed task downstream of it.")
@click.option("--note", default="", help="What to say about it in the journal (why it is reopened).")
@common_options
@pass_inv
def reopen(inv: Invocation, task_id, cascade, note):
    """Reopen a completed task (completed → pending), with --cascade its downstream too.

    \b
      tasks reopen 4 --cascade --note "the parser was wrong after all"
    """
    return commands().reopen(inv, task_id, cascade, note)


@cli.command()
@click.option(
    "--older-than", "days", type=DAYS, default=30, show_default=True, help="Only tasks unchanged this many days."
)
@click.option("--dry-run", is_flag=True, help="Say what would move; move nothing.")
@common_options
@pass_inv
def archive(inv: Invocation, days, dry_run):
    """Move finished history aside: completed and deleted tasks that no open task names
    (and that name none), unchanged for DAYS days, go to .tasks/archive/ as one change.

    `get`, `log`, `list --all` and `graph --all` still show them, marked archived;
    `list`, `ready`, `claim` and `board` never read them. Changing an archived task
    brings it back first; the task with the highest id stays (it holds the id count).

    \b
      tasks archive --dry-run
      tasks archive --older-than 90
    """
    return commands().archive(inv, days, dry_run)


@cli.command()
@click.argument("task_id", type=TASK_ID, metavar="ID")
@common_options
@pass_inv
def restore(inv: Invocation, task_id):
    """Bring back an archived task as it was, or a deleted one as pending and
    unowned (its old edges are not restored).

    \b
      tasks restore 12
    """
    return commands().restore(inv, task_id)


@cli.command()
@click.argument("task_id", type=TASK_ID, metavar="ID")
@click.option("--note", default="", help="What to say about it in the journal (why it failed).")
@click.option("--failed", is_flag=True, help="Record a failed attempt.")
@click.option("--force", is_flag=True, help="Release it even though another owner holds it.")
@common_options
@pass_inv
def release(inv: Invocation, task_id, note, failed, force):
    """Give a task back: in progress → pending, the owner cleared.

    \b
      tasks release 4 --failed --note "tests hang on CI"
    """
    return commands().release(inv, task_id, note, failed=failed, force=force)


@cli.command()
@click.option("--limit", type=LIMIT, help="How many ready tasks to name (default 5).")
@click.option("--full", is_flag=True, help="All of it: every task held, reserved or stuck, whole lines.")
@common_options
@pass_inv
def prime(inv: Invocation, limit, full):
    """A short briefing for an agent starting a session: what you hold, what is ready
    for you, what is stuck, and the rules of the loop; under 2 KB (what a harness shows
    of a hook's output) unless --full.

    \b
      tasks --as agent-7 prime
    """
    return commands().prime(inv, limit, full)


def _plan_bytes(source: str) -> bytes:
    """The plan to import: a file's bytes, or stdin's for `-`; at most one byte more than
    the largest plan allowed (the core says it is too big)."""
    from ..ops.importing import MAX_PLAN_BYTES

    if source == "-":
        return sys.stdin.buffer.read(MAX_PLAN_BYTES + 1) if sys.stdin else b""
    try:
        with open(source, "rb") as plan:
            return plan.read(MAX_PLAN_BYTES + 1)
    except OSError as exc:
        raise UsageError(f"cannot read the plan {source}: {(exc.strerror or 'unreadable').lower()}") from None


@cli.command(name="import")
@click.argument("source", metavar="FILE")
@click.option(
    "--from",
    "kind",
    type=click.Choice(["plan", "claude"]),
    default="plan",
    show_default=True,
    help="A plan file, or a Claude Code task list (a folder of N.json files).",
)
@common_options
@pass_inv
def import_(inv: Invocation, source, kind):
    """Create a whole plan as one change, from a JSON file ('-' reads stdin).

    With --from claude, FILE is a Claude Code task list (a folder of N.json files):
    its tasks come in renumbered onto the board, with their status and edges, and
    what has no place here (activeForm...) kept in metadata.claude.

    Tasks are named by keys; blockedBy/blocks name keys of the plan or ids on the
    board. Nothing is written unless every task and edge is sound.

    \b
      {"tasks": [{"key": "setup", "subject": "Set up CI", "priority": 1},
                 {"key": "lexer", "subject": "Lexer", "blockedBy": ["setup", 3],
                  "labels": ["parser"], "gate": "make test", "metadata": {"size": 2}}]}
      tasks import plan.json --json    # {"created": {"setup": 12, "lexer": 13}}
      tasks import --from claude ~/.claude/tasks/my-list
    """
    if kind == "claude":
        return commands().import_claude(inv, source)
    return commands().import_plan(inv, _plan_bytes(source))


@cli.command()
@click.argument("folder", metavar="DIR")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["claude"]),
    required=True,
    help="claude: a Claude Code task list (a folder of N.json files).",
)
@common_options
@pass_inv
def export(inv: Invocation, folder, fmt):
    """Write the board's open work out as a Claude Code task list, in a new or empty DIR.

    \b
      tasks export --format claude ~/.claude/tasks/my-list
    """
    return commands().export_claude(inv, folder)


@cli.command()
@click.option("--owner", metavar="NAME", help="Only the tasks this owner holds.")
@click.option("--label", "labels", metavar="NAME", multiple=True, help="Only tasks with this label (all given).")
@click.option("--all", "every", is_flag=True, help="Every card: no fitting to the screen, all of Done.")
@click.option("--svg", "svg", type=click.Path(dir_okay=False, writable=True), help="Also write the picture as SVG.")
@click.option("--watch", is_flag=True, help="Redraw whenever the board changes, until Ctrl-C.")
@click.option("--by-parent", is_flag=True, help="Group the cards under their parent, with its progress.")
@common_options
@pass_inv
def board(inv: Invocation, owner, labels, every, svg, watch, by_parent):
    """The kanban view: Blocked · Ready · In progress · Done.

    It fits the terminal: long columns end in `+N more`, Done shows the most
    recently finished few; --all shows every card. --by-parent lists each parent
    with its children (`3/5 done`), then the tasks no plan holds.
    """
    return commands().board(inv, svg, watch, owner, labels, every, by_parent)


@cli.command()
@click.argument("task_id", type=TASK_ID, metavar="[ID]", required=False)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "dot", "mermaid"]),
    default="text",
    show_default=True,
    help="A tree for people, Graphviz DOT, or a Mermaid flowchart.",
)
@click.option("--all", "include_deleted", is_flag=True, help="Include deleted tasks.")
@click.option("--svg", "svg", type=click.Path(dir_okay=False, writable=True), help="Also write the picture as SVG.")
@common_options
@pass_inv
def graph(inv: Invocation, task_id, fmt, include_deleted, svg):
    """The dependency graph; A -> B means A blocks B.

    \b
      tasks graph --format mermaid >> PLAN.md
      tasks graph 7            # what #7 waits on and what waits on it
    """
    return commands().graph(inv, task_id, fmt, include_deleted, svg)


@cli.command()
@click.option("--fix", is_flag=True, help="Repair what has one right answer.")
@common_options
@pass_inv
def check(inv: Invocation, fix):
    """Validate every file and invariant; exit 0 when sound, 6 otherwise."""
    return commands().check(inv, fix)


@cli.command()
@click.option(
    "--remote", metavar="NAME", help="The remote to sync with (else the claims' remote, else the upstream's)."
)
@common_options
@pass_inv
def sync(inv: Invocation, remote):
    """Commit the board, fetch, merge it, push; say what came in.

    Only files under the board are committed (your other changes, staged or not, are
    left alone). Retries when the remote moved meanwhile; exit 5 when it cannot be
    reached (then the board is as it was).

    \b
      tasks sync --json   # {"new": [...], "completed": [...], "unblocked": [...], ...}
    """
    return commands().sync(inv, remote)


@cli.command()
@click.argument("task_id", type=TASK_ID, metavar="ID")
@click.argument("text")
@common_options
@pass_inv
def note(inv: Invocation, task_id, text):
    """Journal a note about a task ('-' reads it from stdin); no task file changes.

    \b
      tasks note 4 "parser passes the fuzz corpus"
    """
    return commands().note(inv, task_id, _text(text, "the note"))


@cli.command()
@click.argument("task_id", type=TASK_ID, metavar="[ID]", required=False)
@click.option("--limit", type=LIMIT, help="Only the last N events.")
@common_options
@pass_inv
def log(inv: Invocation, task_id, limit):
    """What happened, oldest first: the journal, or every event concerning ID.

    \b
      tasks log --limit 20
      tasks log 4 --json
    """
    return commands().log(inv, task_id, limit)


@cli.command()
@click.option("--since", metavar="WHEN", help="Count from then: 7d, 12h, 2w ago, or an ISO date or time.")
@common_options
@pass_inv
def stats(inv: Invocation, since):
    """How work flows, from the journal: tasks finished per day, lead time (created →
    completed) and cycle time (first claim → completed) as median and 90th
    percentile, work in progress by age, failed attempts per task.

    \b
      tasks stats --since 14d
      tasks stats --json | jq .cycle_time
    """
    if since is not None:
        from ..core.stats import parse_since

        parse_since(since)  # a usage error before the board is read
    return commands().stats(inv, since)


@cli.group(name="hook")
def hook_group():
    """Run a command when tasks change: kept in this clone's git config, never committed.

    After a change through tasks is committed, each hook of its events runs in the
    background (sh -c CMD, at the top of the work tree, TASKS_HOOK_TIMEOUT seconds at
    most, default 60) with the event as JSON on stdin; a failing hook is journaled
    (hook-failed) and changes nothing. Changes merged from elsewhere run no hook.
    Events: created, ready, claimed, released, failed, completed, reopened, deleted.

    \b
      tasks hook add completed 'jq -r .record.subject | notify-send "done"'
      tasks hook list
      tasks hook remove completed
    """


@hook_group.command(name="add")
@click.argument("event", metavar="EVENT")
@click.argument("command", metavar="CMD")
@common_options
@pass_inv
def hook_add(inv: Invocation, event, command):
    """Run CMD (a shell command) after each EVENT."""
    return commands().hook(inv, "add", event, command)


@hook_group.command(name="list")
@common_options
@pass_inv
def hook_list(inv: Invocation):
    """The clone's hooks, one per line: EVENT, a tab, CMD."""
    return commands().hook(inv, "list")


@hook_group.command(name="remove")
@click.argument("event", metavar="EVENT")
@click.argument("command", metavar="[CMD]", required=False)
@common_options
@pass_inv
def hook_remove(inv: Invocation, event, command):
    """Remove the hooks of EVENT (only the one running CMD, when given)."""
    return commands().hook(inv, "remove", event, command)


# -- running click --------------------------------------------------------------------


# -- agent harnesses (issue 13) -------------------------------------------------------


@cli.command()
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["anthropic", "openai"]),
    default="anthropic",
    show_default=True,
    help="The model API the definitions are for.",
)
@common_options
@pass_inv
def schema(inv: Invocation, fmt):
    """Print the board's tools as a JSON array of tool definitions.

    \b
      tasks schema                  # [{"name", "description", "input_schema"}, ...]
      tasks schema --format openai  # [{"type": "function", "function": {...}}, ...]
    """
    return handlers().schema(inv, fmt)


@cli.command()
@common_options
@pass_inv
def call(inv: Invocation):
    """Run one tool call read as JSON on stdin; print its result.

    The result is the --json document of the matching command, on stdout; stderr is
    JSON Lines, an error last, and the exit code is the command line's.

    \b
      echo '{"name": "task_create", "input": {"subject": "Write parser"}}' | tasks call
    """
    return handlers().call(inv)


@cli.command()
@click.argument("harness_name", metavar="HARNESS", type=click.Choice(["claude", "codex"]))
@common_options
@pass_inv
def setup(inv: Invocation, harness_name):
    """Configure a coding agent to use the board in this repository.

    claude writes .mcp.json (server "tasks": tasks mcp) and a SessionStart hook
    running tasks prime in .claude/settings.json; codex writes [mcp_servers.tasks]
    in .codex/config.toml. Entries already there are kept; running it again
    changes nothing.
    """
    return handlers().setup(inv, harness_name)


@cli.command()
@pass_inv
def mcp(inv: Invocation):
    """Serve the board to an agent over MCP (stdio); needs the mcp extra (see README).

    The caller is --as NAME, else TASKS_OWNER. The board is each call's board
    argument, else --dir, else TASKS_DIR, else the nearest .tasks/.
    """
    return handlers().mcp(inv)


@cli.command()
@click.option(
    "--port", type=click.IntRange(0, 65535), default=8765, show_default=True, help="The port (0: any free one)."
)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="The address to listen on; beyond loopback only with a token.",
)
@click.option("--token", help="A secret every request must carry (else TASKS_SERVE_TOKEN); needed beyond loopback.")
@click.option("--open", "open_browser", is_flag=True, help="Open the board in the browser.")
@pass_inv
def serve(inv: Invocation, port, host, token, open_browser):
    """Serve the board to a browser, live; needs the web extra (make install has it).

    The kanban, the graph, each task and the journal, updated within a second of any
    change; actions from the page are the command line's own changes, journaled with
    the page user's name (--as, else asked once). MCP over HTTP at /mcp.

    \b
      tasks serve --open
      tasks --as alice serve --port 9000
    """
    return handlers().serve(inv, port, host, token, open_browser)


def run(args: list[str], inv: Invocation, work: Handlers) -> int:
    """Parse with click and run the command, handing its work to `work`; click's own
    failures become exit codes, the board's (TaskError) propagate to the caller, which
    reports them."""
    json_mode = "--json" in args
    inv.handlers = work  # click's context object carries them to every command
    try:
        result = cli.main(args=args, prog_name="tasks", standalone_mode=False, obj=inv)
        return result if isinstance(result, int) else 0
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.exceptions.NoArgsIsHelpError as exc:  # bare `tasks`: the help, no error line
        write(sys.stderr, exc.format_message() + "\n")
        return 2
    except click.UsageError as exc:
        hint = (
            f"\n{exc.ctx.get_usage()}\nTry '{exc.ctx.command_path} --help' for help."
            if exc.ctx and not json_mode
            else ""
        )
        return fail(json_mode, "usage", exc.format_message(), 2, hint)
    except click.ClickException as exc:
        return fail(json_mode, "usage", exc.format_message(), 2)
    except click.Abort:
        return fail(json_mode, "internal", "interrupted", 130)
