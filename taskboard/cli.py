"""The `tasks` command: parse, call the board, print. No business rules here.

Data goes to stdout, messages to stderr; with --json stdout is one JSON document
and stderr is JSON Lines whose last line is the error, if any.
"""

from __future__ import annotations

import json
import sys

import click

from . import __version__
from .app import App, check_timeout, damage, fail, show_list, show_record, show_task, write
from .errors import UsageError
from .model import MAX_DESCRIPTION, STATUSES, parse_id, parse_meta

# -- parameter types ----------------------------------------------------------------


class Parsed(click.ParamType):
    """A value parsed by one of the core's parsers; its UsageError becomes click's."""

    def __init__(self, name: str, parse):
        self.name, self.parse = name, parse

    def convert(self, value, param, ctx):
        if not isinstance(value, str):
            return value  # a default, or already converted
        try:
            return self.parse(value)
        except UsageError as exc:
            self.fail(exc.message, param, ctx)


def _seconds(text: str) -> float:
    try:
        return check_timeout(float(text))
    except (ValueError, UsageError):
        raise UsageError(f"{text!r} is not a finite number of seconds ≥ 0") from None


TASK_ID = Parsed("ID", parse_id)
META = Parsed("KEY=VALUE", parse_meta)
SECONDS = Parsed("SECONDS", _seconds)
STATUS = click.Choice(STATUSES)


def _set_json(ctx: click.Context, _param, value: bool) -> bool:
    if value:
        ctx.find_object(App).json = True
    return value


def _print_version(ctx: click.Context, _param, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    if "--json" in ctx.find_object(App).argv:
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
pass_app = click.make_pass_decorator(App)


def _description(value: str | None) -> str | None:
    """`-d -` reads the description from stdin (UTF-8)."""
    if value != "-":
        return value
    raw = sys.stdin.buffer.read(MAX_DESCRIPTION * 4 + 1) if sys.stdin else b""
    if len(raw) > MAX_DESCRIPTION * 4:  # more bytes than the longest allowed text can take; cut mid-character
        raise UsageError(f"the description on stdin is longer than {MAX_DESCRIPTION} characters, the most allowed")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"the description on stdin is not valid UTF-8 (byte {exc.start})") from None


def _meta(items) -> dict | None:
    return dict(items) if items else None


# -- the commands -------------------------------------------------------------------


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
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
      tasks claim --owner alice              # take the next ready task
      tasks update 1 --status completed      # unblocked #2
      tasks board
    """
    app = ctx.ensure_object(App)
    app.board_dir, app.timeout, app.caller_flag = board_dir, timeout, caller
    app.json = app.json or json_


@cli.command()
@json_option
@pass_app
def init(app: App):
    """Create the board with its .gitignore and .gitattributes."""
    created = app.board.init()
    root = str(app.board.store.root)
    if app.json:
        app.data({"board": root, "created": created})
    else:
        write(sys.stderr, f"board ready at {root}" + (f" (created {', '.join(created)})" if created else "") + "\n")


@cli.command()
@click.argument("subject")
@click.option("-d", "--description", default="", help="Longer text; '-' reads it from stdin.")
@click.option("--blocked-by", "blocked_by", type=TASK_ID, multiple=True, help="A task that must finish first.")
@click.option("--blocks", type=TASK_ID, multiple=True, help="A task this one must finish before.")
@click.option("--owner", default="", help="Who holds the task.")
@click.option("--meta", type=META, multiple=True, help="KEY=VALUE (VALUE as JSON when it parses).")
@json_option
@pass_app
def create(app: App, subject, description, blocked_by, blocks, owner, meta):
    """Add a pending task.

    \b
      tasks create "Write parser" --blocked-by 3 --meta priority=1
    """
    outcome = app.board.create(subject, _description(description), blocked_by, blocks, owner, _meta(meta))
    show_record(app, outcome)


@cli.command()
@click.argument("task_id", type=TASK_ID, metavar="ID")
@json_option
@pass_app
def get(app: App, task_id):
    """Show one task."""
    show_task(app, task_id)


@cli.command()
@click.argument("task_id", type=TASK_ID, metavar="ID")
@click.option("--subject")
@click.option("-d", "--description", help="New text; '-' reads it from stdin.")
@click.option("--status", type=STATUS)
@click.option("--owner", help='Set the owner ("" clears it).')
@click.option("--add-blocked-by", type=TASK_ID, multiple=True)
@click.option("--add-blocks", type=TASK_ID, multiple=True)
@click.option("--remove-blocked-by", type=TASK_ID, multiple=True)
@click.option("--remove-blocks", type=TASK_ID, multiple=True)
@click.option("--meta", type=META, multiple=True, help="KEY=VALUE; KEY= removes the key.")
@click.option("--force", is_flag=True, help="Override another owner's hold on an in-progress task.")
@json_option
@pass_app
def update(
    app: App,
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
    force,
):
    """Change a task; all flags apply as one change, or none does.

    \b
      tasks update 4 --status completed
      tasks update 4 --add-blocked-by 2 --meta priority=high
    """
    outcome = app.board.update(
        task_id,
        subject=subject,
        description=_description(description),
        status=status,
        owner=owner,
        add_blocked_by=add_blocked_by,
        add_blocks=add_blocks,
        remove_blocked_by=remove_blocked_by,
        remove_blocks=remove_blocks,
        metadata=_meta(meta),
        force=force,
    )
    show_record(app, outcome)


@cli.command()
@click.argument("task_id", type=TASK_ID, metavar="ID")
@click.option("--force", is_flag=True, help="Override another owner's hold on an in-progress task.")
@json_option
@pass_app
def delete(app: App, task_id, force):
    """Delete a task (logically: the file stays, its edges go)."""
    show_record(app, app.board.delete(task_id, force=force))


@cli.command()
@click.argument("task_id", type=TASK_ID, metavar="ID", required=False)
@click.option("--owner", help="Who takes it (else --as, else TASKS_OWNER).")
@json_option
@pass_app
def claim(app: App, task_id, owner):
    """Take a task atomically: ID, or the lowest-id ready one.

    Exactly one of several racing claimers wins. Exit 3 when nothing is ready,
    4 when the task is blocked, finished or held by someone else.
    """
    board = app.board
    show_record(app, board.claim(task_id, owner if owner is not None else board.caller))


def _list_options(command):
    for option in reversed(
        [
            click.option("--status", "statuses", type=STATUS, multiple=True, help="Only these statuses."),
            click.option("--owner", help="Only tasks this owner holds."),
            click.option("--ready", is_flag=True, help="Only pending tasks with no open blocker."),
            click.option("--blocked", is_flag=True, help="Only open tasks with an open blocker."),
            click.option("--all", "include_deleted", is_flag=True, help="Include deleted tasks."),
        ]
    ):
        command = option(command)
    return command


@cli.command(name="list")
@_list_options
@json_option
@pass_app
def list_(app: App, statuses, owner, ready, blocked, include_deleted):
    """Tasks in ascending id order."""
    show_list(app, statuses, owner, ready, blocked, include_deleted)


@cli.command()
@click.option("--owner", help="Only tasks this owner holds.")
@json_option
@pass_app
def ready(app: App, owner):
    """Tasks that can start now (same as list --ready)."""
    show_list(app, (), owner, True, False, False)


@cli.command()
@click.option("--svg", "svg", type=click.Path(dir_okay=False, writable=True), help="Also write the picture as SVG.")
@click.option("--watch", is_flag=True, help="Redraw whenever the board changes, until Ctrl-C.")
@json_option
@pass_app
def board(app: App, svg, watch):
    """The kanban view: Blocked · Ready · In progress · Done."""
    if watch and app.json:
        raise UsageError("--watch redraws the board for people; --json prints it once (poll it to follow changes)")
    if watch and svg:
        raise UsageError("--watch redraws in the terminal and --svg writes one picture; ask for one at a time")
    if app.json:
        listing = app.board.listing()
        columns = {status: [r for r in listing.records if r["status"] == status] for status in STATUSES[:3]}
        app.data(columns)
        damage(app, listing)
        return
    from . import render

    if watch:
        render.watch_board(app.board, plain=app.plain())
        return
    listing = app.board.listing()
    render.show_board(listing, plain=app.plain(), svg=svg)
    damage(app, listing)


@cli.command()
@click.argument("task_id", type=TASK_ID, metavar="ID", required=False)
@click.option("--format", "fmt", type=click.Choice(["text", "dot", "mermaid"]), default="text", show_default=True)
@click.option("--all", "include_deleted", is_flag=True, help="Include deleted tasks.")
@click.option("--svg", "svg", type=click.Path(dir_okay=False, writable=True), help="Also write the picture as SVG.")
@json_option
@pass_app
def graph(app: App, task_id, fmt, include_deleted, svg):
    """The dependency graph; A -> B means A blocks B.

    \b
      tasks graph --format mermaid >> PLAN.md
      tasks graph 7            # what #7 waits on and what waits on it
    """
    from . import graph as graphs

    listing = app.board.listing()
    records = [r for r in listing.records if include_deleted or r["status"] != "deleted"]
    if task_id is not None:
        if not any(r["id"] == task_id for r in listing.records):
            app.board.get(task_id)  # raises the right error: missing or damaged
        records = _neighbourhood(records, task_id, graphs)
    edges = graphs.edges(records)
    if app.json:
        app.data({"nodes": records, "edges": [list(edge) for edge in edges]})
    elif fmt in ("dot", "mermaid") and not svg:  # text for other tools: no rich needed
        from . import diagram

        to_text = diagram.to_dot if fmt == "dot" else diagram.to_mermaid
        text = to_text(records, edges, listing.lookup)
        write(sys.stdout, text)
    else:
        from . import render

        text = render.show_graph(records, edges, listing, fmt=fmt, focus=task_id, plain=app.plain(), svg=svg)
    if fmt == "mermaid" and not app.json:
        from . import diagram

        too_big = diagram.mermaid_warning(text, len(edges), focused=task_id is not None)
        if too_big:
            app.warn(too_big)
    damage(app, listing)


def _neighbourhood(records, task_id, graphs):
    """The task, everything upstream of it and everything downstream."""
    by_id = {r["id"]: r for r in records}
    down: dict[int, list[int]] = {}
    up: dict[int, list[int]] = {}
    for blocker, dependent in graphs.edges(records):
        down.setdefault(blocker, []).append(dependent)
        up.setdefault(dependent, []).append(blocker)
    keep = (
        {task_id}
        | graphs.downstream(task_id, lambda n: down.get(n, ()))
        | graphs.downstream(task_id, lambda n: up.get(n, ()))
    )
    return [by_id[i] for i in sorted(keep) if i in by_id]


@cli.command()
@click.option("--fix", is_flag=True, help="Repair what has one right answer.")
@json_option
@pass_app
def check(app: App, fix):
    """Validate every file and invariant; exit 0 when sound, 6 otherwise."""
    problems = app.board.check(fix=fix)
    app.board.store.recovered.clear()
    ok = all(problem["fixed"] for problem in problems)
    if app.json:
        app.data({"ok": ok, "problems": problems})
    else:
        from . import render

        render.show_check(problems, ok, plain=app.plain())
    if not ok:
        raise click.exceptions.Exit(6)


# -- running click --------------------------------------------------------------------


def run(args: list[str], app: App) -> int:
    """Parse with click and run the command; click's own failures become exit codes,
    the board's (TaskError) propagate to the caller, which reports them."""
    json_mode = "--json" in args
    try:
        result = cli.main(args=args, prog_name="tasks", standalone_mode=False, obj=app)
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
