"""`tasks mcp`: the board served over MCP (stdio) with the official SDK, `mcp>=2,<3`,
installed as the extra `mcp` (`pipx install '.[mcp]'`). This is the one module that imports `mcp`,
and only `tasks mcp` imports it.

The tools are taskboard.tools' table; each call runs in-process (no process start per
call) through the same core operations, locks and checks as the command line, on a
worker thread so that a call waiting for the board lock never stalls the server. The
board is found per call: the call's `board` argument, else the server's --dir or
TASKS_DIR, else discovery from its working folder. A result is the `--json` document
as text, followed by the messages the command line prints on stderr (`unblocked`,
warnings) as JSON lines; an error is a tool error whose text is the command line's
--json error line, `{"error": {"code", "message", "exit"}}`. Stdout is the protocol's
wire: nothing else is ever printed there.
"""

from __future__ import annotations

import io
import json
import os
import stat
import sys
from contextlib import contextmanager

from .. import __version__
from ..core.errors import TaskError, UsageError
from ..views.messages import internal_text
from . import tools

TYPE_CHECKING = False  # typing costs ~5 ms of start-up; annotations are strings anyway
if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator
    from typing import Any

INSTALL = "pipx install --force '.[mcp]' in a clone, or pip install 'mcp>=2,<3' beside tasks"
INSTRUCTIONS = (
    "The repository's task board: one JSON file per task in .tasks/, committed with the code, "
    "shared with other agents and people. Loop: task_claim with wait true takes the next ready task "
    "(not_found: the plan is finished); do it; task_update status completed (with a note), or failed "
    "true and a note if you could not; task_note leaves word for whoever comes next."
)


def build(board_dir: str | None = None, caller: str = "", timeout: float | None = None) -> Any:
    """The server (an `mcp.server.MCPServer`) with the board's tools; the SDK is imported here."""
    try:
        import anyio
        import mcp_types
        from mcp.server import MCPServer
    except ImportError:
        raise UsageError(f"tasks mcp needs the MCP SDK, which is not installed: {INSTALL}") from None

    annotations = {
        tool.name: mcp_types.ToolAnnotations(
            read_only_hint=tool.read_only,
            destructive_hint=tool.destructive if not tool.read_only else None,
            idempotent_hint=True if tool.read_only else None,
            open_world_hint=False,
        )
        for tool in tools.TOOLS
    }
    listed = [
        mcp_types.Tool(
            name=tool.name,
            description=tool.description,
            input_schema=tool.input_schema(),
            annotations=annotations[tool.name],
        )
        for tool in tools.TOOLS
    ]

    read_only = {tool.name for tool in tools.TOOLS if tool.read_only}

    class TaskServer(MCPServer):
        """MCPServer serving the tool table as it is: its own schemas, its own checks,
        over a stdio transport that needs no thread per line."""

        async def list_tools(self) -> list[Any]:
            return listed

        async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
            if name in read_only:  # a read takes well under a millisecond: a thread hand-off would cost more
                texts, failed = answer(name, arguments, board_dir, caller, timeout)
            else:  # a change may wait for the lock and fsyncs: the server stays responsive meanwhile
                texts, failed = await anyio.to_thread.run_sync(answer, name, arguments, board_dir, caller, timeout)
            return mcp_types.CallToolResult(
                content=[mcp_types.TextContent(type="text", text=text) for text in texts], is_error=failed
            )

        async def run_stdio_async(self) -> None:
            from mcp.server.stdio import stdio_server

            with _claimed_stdio() as (wire_in, wire_out):
                lines_in, lines_out = _LineReader(wire_in), _LineWriter(wire_out)  # what the loop uses of AsyncFile
                async with stdio_server(lines_in, lines_out) as (read, write):  # type: ignore[arg-type]
                    lowlevel = self._lowlevel_server
                    await lowlevel.run(read, write, lowlevel.create_initialization_options())

    return TaskServer(
        "tasks", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING", warn_on_duplicate_tools=False
    )


def answer(
    name: Any, arguments: Any, board_dir: str | None, caller: str, timeout: float | None
) -> tuple[list[str], bool]:
    """One call's result as texts (the document, then each message as a JSON line) and
    whether it is an error. Never raises: a bug is an `internal` error, not a dead server."""
    try:
        reply = tools.dispatch(name, arguments, board_dir, caller, timeout)
    except TaskError as exc:
        return [_json(tools.tool_error(exc))], True
    except Exception as exc:  # a bug, or the file system failing under us: answer, keep serving
        error = {"code": "internal", "message": internal_text(exc), "exit": 1}
        return [_json({"error": error})], True
    texts = [_json(reply.document)] + [_json({key: value}) for key, value in reply.events]
    if reply.failure is not None:
        texts.append(_json(tools.tool_error(reply.failure)))
    return texts, False


MAX_LINE = 64 << 20  # bytes of one JSON-RPC message on stdin


@contextmanager
def _claimed_stdio() -> Iterator[tuple[int, int]]:
    """The protocol's private copies of fd 0 and 1, while fd 0 reads nothing and fd 1
    goes to stderr: nothing printed by mistake can reach the wire (as the SDK's own
    stdio transport does)."""
    sys.stdout.flush()
    wire_in, wire_out = os.dup(0), os.dup(1)
    saved_in, saved_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
        os.dup2(2, 1)
        yield wire_in, wire_out
    finally:
        os.dup2(saved_in, 0)
        os.dup2(saved_out, 1)
        for fd in (null, saved_in, saved_out, wire_in, wire_out):
            os.close(fd)


class _LineReader:
    """Lines of stdin for the SDK's stdio loop, read by the event loop itself: the
    SDK's default reads each line on a worker thread, a hand-off per message."""

    def __init__(self, fd: int):
        self.fd = fd

    async def __aiter__(self) -> AsyncIterator[str]:
        import asyncio

        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=MAX_LINE)
        source = os.fdopen(self.fd, "rb", buffering=0, closefd=False)
        mode = os.fstat(self.fd).st_mode
        if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):  # a file, a terminal, /dev/null: read on a thread
            import anyio

            async for text in anyio.wrap_file(io.TextIOWrapper(source, encoding="utf-8", errors="replace")):
                yield text
            return
        transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), source)
        try:
            while line := await reader.readline():
                yield line.decode("utf-8", "replace")
        finally:
            transport.close()


class _LineWriter:
    """The wire out: one message a line, written at once (a message is small, and a
    client reads what it asked for)."""

    def __init__(self, fd: int):
        self.fd = fd

    async def write(self, text: str) -> None:
        data = memoryview(text.encode("utf-8"))
        while data:
            data = data[os.write(self.fd, data) :]

    async def flush(self) -> None:
        pass


def _json(document: Any) -> str:
    return json.dumps(document, ensure_ascii=False)


def serve(board_dir: str | None, caller: str, timeout: float | None) -> int:
    """Run the stdio server until the client closes its end."""
    # The SDK serves the wire from a private copy of fd 1 and points fd 1 at stderr,
    # so nothing printed by mistake can corrupt the protocol.
    build(board_dir, caller, timeout).run("stdio")
    return 0
