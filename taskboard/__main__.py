"""The door: `python -m taskboard` (what a wired clone's git runs: the merge driver and
the hooks) and `tasks` (pyproject's script, `taskboard.__main__:main`). It runs one
command line, turns every failure into the contract's exit code and error line, and
answers the calls agents make in loops without importing click.

Start-up is the product's latency: `get`, `list` and `ready` (with --json, or plain text
when piped) and `create SUBJECT --json` never import click or rich, and the reads never
import filelock; so everything here is imported when it is needed, and
`python -m taskboard merge-driver` loads nothing but the driver. Never move or rename
this door: clones wired by `tasks init` call it by this name.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing costs ~5 ms of start-up; annotations are strings anyway
if TYPE_CHECKING:
    from collections.abc import Callable

    from .cli.invocation import Invocation
    from .cli.parser import Commands
    from .core.outcome import Outcome
    from .disk.store import Store
    from .ops.board import Board


def main(argv: list[str] | None = None) -> int:
    """Run one command line; the exit code. The cyclic garbage collector is off while the
    command starts: its imports make tens of thousands of objects and no garbage, and the
    collector walked them again and again (~1.5 ms of a 25 ms `create`). A command of the
    fast path keeps it off (it ends in a moment, its data hold no cycles); every other one
    (the click commands: servers, waiters, watchers) gets it back before it runs."""
    import gc  # built in

    collecting = gc.isenabled()
    gc.disable()
    try:
        return _run(argv, collecting)
    finally:
        if collecting:  # as it was: a test's process goes on
            gc.enable()


def _run(argv: list[str] | None, collecting: bool) -> int:
    from .cli.invocation import Invocation, fail, guard_closed_streams, reader_gone
    from .core.errors import TaskError
    from .git import claim_authority

    guard_closed_streams()  # `tasks list >&-`: named as a stream that takes nothing, not a bug
    args = list(sys.argv[1:] if argv is None else argv)
    json_mode = "--json" in args
    inv = Invocation(claim_authority, fire_hooks)  # the claim refs of `tasks init --remote`, if any; the clone's hooks
    inv.argv = args
    if "check" not in args:  # check reports an unfinished merge, and finishes it with --fix
        inv.on_board = _finish_merge
    try:
        fast = _git_entry(args) or fast_command(args, inv)
        _ENDED[0] = fast is not None and inv.command in _QUICK_TO_LEAVE  # nothing to tear down, whatever it answers
        if collecting and not _ENDED[0]:
            import gc

            gc.enable()
        return fast() if fast is not None else _run_click(args, inv)
    except TaskError as exc:
        from .views.messages import error_text  # the words of a failure: loaded when one happens

        if getattr(exc, "recorded", None) is not None:  # a failed gate journaled a failed attempt: its hooks
            from .git.hooks import fire

            fire(inv.board.store, exc.recorded)  # type: ignore[attr-defined]
        return fail(json_mode, exc.code, error_text(exc), exc.exit_code)
    except BrokenPipeError:
        return reader_gone()
    except OSError as exc:  # a board this user may not write, a full disk, a vanished mount: named, no bug
        from .views.messages import os_error_text

        return fail(json_mode, "corrupt", os_error_text(exc), 6)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # a bug: say so plainly, trace only on request
        if os.environ.get("TASKS_DEBUG"):
            raise
        from .views.messages import internal_text

        return fail(json_mode, "internal", internal_text(exc), 1)


_QUICK_TO_LEAVE = ("get", "list", "ready", "create", "claim")  # the fast path, `call` (any tool) aside
_ENDED = [False]  # a command of _QUICK_TO_LEAVE ran: `leave` may end the process at once


def leave(code: int) -> None:
    """End the process with `code` (the script's and `python -m taskboard`'s last step).
    After a command of the fast path (no thread left, nothing registered to run at exit,
    every answer written and flushed) it ends at once: tearing the interpreter down frees
    every module and object one by one, ~6 ms of CPU, a sixth of a whole `create`. Else,
    and for anything `main` of a test ran, the ordinary exit."""
    if not _ENDED[0]:
        sys.exit(code)
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:  # None: started with the descriptor closed
                stream.flush()
        except (OSError, ValueError):  # as the interpreter's own exit: a lost answer is no success
            code = code or 120
    os._exit(code)


def fire_hooks(store: Store, outcome: Outcome) -> None:
    """The clone's hooks on a change (taskboard.git.hooks), loaded when a change is made."""
    from .git.hooks import fire

    fire(store, outcome)


def _git_entry(args: list[str]) -> Callable[[], int] | None:
    """`merge-driver` and `git-hook`: run by git for the wiring `tasks init` sets up
    (taskboard.driver, taskboard.gitwire), without click and without looking for a board."""
    if args[:1] not in (["merge-driver"], ["git-hook"]):
        return None
    if args[0] == "merge-driver":
        from .git import driver

        return lambda: driver.main(args[1:])
    from .git import wiring as gitwire

    return lambda: gitwire.run_hook(args[1:])


def _finish_merge(inv: Invocation, board: Board) -> None:
    """The next command after a merge the hooks did not finish (no hooks, a series of
    cherry-picks) finishes it first: a stat or two when there is none."""
    from .disk.gitdirs import merge_pending

    if not merge_pending(board.store.path):
        return
    from .git.wiring import describe, settle

    for line in describe(settle(board.store), board.store.root.name):
        inv.warn(line)


def _run_click(args: list[str], inv: Invocation) -> int:
    from .cli.parser import run

    return run(args, inv, Door())


class Door:
    """What the door hands the click tree (cli.parser's Handlers), the one place that
    knows every front end: the board's commands are cli.commands; `schema`, `call`,
    `setup`, `mcp` and `serve` start a front end with what it needs of the others (the
    tool table of agents.tools). Each imports what it runs when it is called: a command
    loads its own front end and no other."""

    @property
    def commands(self) -> Commands:
        from .cli import commands

        return commands

    def schema(self, inv: Invocation, fmt: str) -> int:
        from .agents import tools
        from .cli import harness

        return harness.schema(inv, tools, fmt)

    def call(self, inv: Invocation) -> int:
        from .agents import tools
        from .cli import harness

        return harness.call(inv, tools)

    def setup(self, inv: Invocation, harness: str) -> int:
        from .cli.harness import setup

        return setup(inv, harness)

    def mcp(self, inv: Invocation) -> int:
        """`tasks mcp`: the MCP server over stdio, serving the tool table."""
        from .agents import mcp, tools

        return mcp.serve(tools, inv.board_dir, tools.caller_from_env(inv.caller_flag), _lock_timeout(inv))

    def serve(self, inv: Invocation, port: int, host: str, token: str | None, open_browser: bool) -> int:
        """`tasks serve`: the web server, with the tool table at /mcp."""
        from .agents import tools
        from .cli.invocation import write
        from .disk.store import board_path
        from .web import server

        token = token if token is not None else os.environ.get("TASKS_SERVE_TOKEN") or None
        board = os.path.abspath(board_path(inv.board_dir))
        caller = tools.caller_from_env(inv.caller_flag)
        say = lambda line: write(sys.stderr, line + "\n")  # noqa: E731
        authority = inv.authority()  # the one the command line's boards ask: made once, for every page
        return server.serve(tools, authority, board, caller, _lock_timeout(inv), host, port, token, open_browser, say)


def _lock_timeout(inv: Invocation) -> float:
    """--timeout, else TASKS_LOCK_TIMEOUT, else the store's default."""
    from .cli.invocation import env_timeout
    from .disk.store import DEFAULT_TIMEOUT

    return inv.timeout if inv.timeout is not None else env_timeout(DEFAULT_TIMEOUT)


def fast_command(args: list[str], inv: Invocation) -> Callable[[], int] | None:
    """The calls agents and scripts make in loops, run without importing click:
    `get ID`, `list [--status S]... [--limit N]`, `ready [--limit N]` (each with --json,
    or plain for a pipe), `create SUBJECT --json`, `claim [ID] [--owner NAME] --json` and
    `call`, with `--dir P` anywhere. Anything else, even a spelling of these that click
    would accept, returns None and goes through click, which stays the one definition of
    the command line."""
    from .core.errors import UsageError
    from .core.model import parse_id

    parsed = _fast_parse(args, inv)
    if parsed is None or (parsed["command"] in ("create", "claim") and not inv.json):
        return None
    command, operands = parsed["command"], parsed["operands"]
    inv.command = command
    task_id = None
    if command in ("get", "claim") and operands:
        try:
            task_id = parse_id(operands[0])
        except UsageError:
            return None  # let click word the usage error
    if command == "create":  # the one write agents repeat: neither click (a third of it) nor the commands' bodies
        return lambda: inv.show_record(inv.board.create(operands[0]))
    if command == "call":  # the subprocess tool loop's one command (cli.harness)
        return lambda: Door().call(inv)
    from .cli import commands

    if command in ("list", "ready"):
        from .ops.query import Query  # with the index it reads: a create or a get needs neither

        limit = parsed["limit"]
        query = Query(ready=True, limit=limit) if command == "ready" else Query(parsed["statuses"], limit=limit)
    runs = {
        "list": lambda: commands.list_tasks(inv, query),
        "ready": lambda: commands.list_tasks(inv, query),
        "get": lambda: commands.get(inv, task_id),  # type: ignore[arg-type]  # get always has its ID
        "claim": lambda: commands.claim(inv, task_id, parsed["owner"]),  # the agent loop's call
    }
    return runs[command]


_OPERANDS = {"get": (1,), "create": (1,), "claim": (0, 1)}  # how many each command takes


def _fast_parse(args: list[str], inv: Invocation) -> dict | None:
    """The parts of a command line the fast path takes (command, operands, statuses,
    limit, owner), else None."""
    from .core.errors import UsageError
    from .core.fields import STATUSES
    from .core.model import parse_limit

    rest, command, operands = list(args), None, []
    found: dict = {"statuses": [], "limit": None, "owner": None}
    while rest:
        token = rest.pop(0)
        if token == "--json":
            inv.json = True
        elif token == "--dir" and rest:  # before or after the command, as click takes it
            inv.board_dir = rest.pop(0)
        elif command is None and token in ("get", "list", "ready", "create", "claim", "call"):
            command = token
        elif command in _OPERANDS and not token.startswith("-"):
            operands.append(token)
        elif token == "--status" and command == "list" and rest and rest[0] in STATUSES:
            found["statuses"].append(rest.pop(0))
        elif token == "--limit" and command in ("list", "ready") and rest and found["limit"] is None:
            try:
                found["limit"] = parse_limit(rest.pop(0))
            except UsageError:
                return None  # let click word the usage error
        elif (
            token == "--owner"
            and command == "claim"
            and rest
            and not rest[0].startswith("-")
            and found["owner"] is None
        ):
            found["owner"] = rest.pop(0)
        else:
            return None
    if command is None or len(operands) not in _OPERANDS.get(command, (0,)):
        return None
    return {"command": command, "operands": operands, **found}


if __name__ == "__main__":  # python -m taskboard; imported (the `tasks` script), it only defines main
    if sys.argv[1:2] == ["merge-driver"]:  # git starts it once per file both sides changed: the lean way in
        from .git.driver import main as driver

        sys.exit(driver(sys.argv[2:]))
    leave(main())
