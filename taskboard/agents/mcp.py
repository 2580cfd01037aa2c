"""`tasks mcp`: the board served over MCP (stdio) with the official SDK, `mcp>=2,<3`,
installed as the extra `mcp` (`pipx install '.[mcp]'`). This is the one module that imports `mcp`,
and only `tasks mcp` imports it.

The tools are the table the door hands the server (taskboard.__main__ hands it
taskboard.agents.tools; `Tools` below is what the server asks of it); each call runs
in-process (no process start per call) through the same core operations, locks and checks as the command line, on a
worker thread so that a call waiting for the board lock never stalls the server. The
board is found per call: the call's `board` argument, else the server's --dir or
TASKS_DIR, else discovery from its working folder. A result is the `--json` document
as text, followed by the messages the command line prints on stderr (`unblocked`,
warnings) as JSON lines; an error is a tool error whose text is the command line's
--json error line, `{"error": {"code", "message", "exit"}}`, followed by the messages the
call had to say besides (a waiting claim's warning of the code its syncs did not push,
which the command line prints before its error line). The server offers tools
and logging (no prompts, no resources): what became of a call the client cancelled after
it started is told as a log message, at the level `logging/setLevel` asks for. Stdout is
the protocol's wire: nothing else is ever printed there.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from contextlib import contextmanager

from .. import __version__
from ..core.errors import TaskError, UsageError
from ..views.messages import internal_text

TYPE_CHECKING = False  # typing costs ~5 ms of start-up; annotations are strings anyway
if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator, Sequence
    from typing import Any, Protocol

    from ..disk.watch import Stop

    class Tool(Protocol):
        """What the server lists of a tool, and asks of it before a call."""

        @property
        def name(self) -> str: ...
        @property
        def description(self) -> str: ...
        @property
        def read_only(self) -> bool: ...
        @property
        def destructive(self) -> bool: ...
        def input_schema(self) -> dict[str, Any]: ...
        def waiting(self, arguments: Any) -> float | bool: ...

    class Reply(Protocol):
        """What a call answers: its document, its messages, the error it ends with."""

        @property
        def document(self) -> Any: ...
        @property
        def events(self) -> list[tuple[str, Any]]: ...
        @property
        def failure(self) -> TaskError | None: ...

    class Tools(Protocol):
        """The table the server serves (taskboard.agents.tools, handed in by the door): the
        server knows MCP, the table knows the board."""

        @property
        def TOOLS(self) -> Sequence[Tool]: ...  # noqa: N802 - the table's own name; read, never set

        def dispatch(
            self,
            name: Any,
            arguments: Any,
            board_dir: str | None = None,
            caller: str = "",
            timeout: float | None = None,
            stop: Stop | None = None,
        ) -> Reply: ...
        def tool_error(self, exc: TaskError) -> dict[str, Any]: ...
        def error_events(self, exc: TaskError) -> list[tuple[str, Any]]: ...


INSTALL = "pipx install --force '.[mcp]' in a clone, or pip install 'mcp>=2,<3' beside tasks"
INSTRUCTIONS = (
    "The repository's task board: one JSON file per task in .tasks/, committed with the code, "
    "shared with other agents and people. Loop: task_claim with wait true takes the next ready task "
    "(not_found: the plan is finished; after a wait ran out, call it again); do it; task_update status "
    "completed (with a note), or failed true and a note if you could not; task_note leaves word for "
    "whoever comes next."
)


LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")  # MCP's, rising
NOT_OFFERED = ("prompts/list", "prompts/get", "resources/list", "resources/read", "resources/templates/list")
PROGRESS_EVERY = 5.0  # seconds between progress notifications of a waiting call (the contract: at most 10)
SILENT_WAIT = 50.0  # seconds a waiting call without a progress token waits at most (clients give up at 60)
MAX_WAITERS = 256  # waiting calls on their own worker threads at once; more queue, nothing else does


def build(tools: Tools, board_dir: str | None = None, caller: str = "", timeout: float | None = None) -> Any:
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
    by_name = {tool.name: tool for tool in tools.TOOLS}

    class TaskServer(MCPServer):
        """MCPServer serving the tool table as it is: its own schemas, its own checks,
        over a stdio transport that needs no thread per line and refuses what it cannot
        read. A call that changes the board runs on a worker thread (it may wait for the
        lock, or for a task); a waiting call on threads of its own, so that any number of
        them hold up no other call."""

        client_gone = False  # stdin closed: what is still running runs for nobody
        log_level = "warning"  # the least a message must weigh to be sent: the client's logging/setLevel

        async def set_log_level(self, context: Any, params: Any) -> Any:
            self.log_level = params.level
            return mcp_types.EmptyResult()

        async def tell(self, context: Any, level: str, data: dict[str, Any]) -> None:
            """A log message for the client (notifications/message), when it weighs at least
            the level the client asked for; best effort, at most a second."""
            import warnings

            from mcp.shared.exceptions import MCPDeprecationWarning

            if LOG_LEVELS.index(level) < LOG_LEVELS.index(self.log_level):
                return
            with anyio.move_on_after(1), warnings.catch_warnings():  # logging is deprecated by the 2026 protocol,
                warnings.simplefilter("ignore", MCPDeprecationWarning)  # which asks for it per call: the SDK sees to it
                await context.request_context.session.send_log_message(level, data, logger="tasks")

        async def list_tools(self) -> list[Any]:
            return listed

        async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
            if name in read_only:  # a read takes well under a millisecond: a thread hand-off would cost more
                texts, failed = answer(tools, name, arguments, board_dir, caller, timeout)
            else:
                texts, failed = await self._off_loop(name, arguments, context)
            return mcp_types.CallToolResult(
                content=[mcp_types.TextContent(type="text", text=text) for text in texts], is_error=failed
            )

        async def _off_loop(self, name: str, arguments: Any, context: Any) -> tuple[list[str], bool]:
            """The call on a worker thread, run to its end. When the call is cancelled
            meanwhile (the client's notifications/cancelled, or its input closing), the
            Stop given to it is set at once: a wait ends, and a claim won after that is
            given back. A waiting call reports progress when the client gave a token;
            without one it waits at most SILENT_WAIT seconds."""
            from mcp.shared.jsonrpc_dispatcher import progress_token_from_params

            from ..disk.watch import Stop

            tool = by_name.get(name)
            waiting = tool.waiting(arguments) if tool is not None else False
            params = context.request_context.params if context is not None else None
            token = progress_token_from_params(params) if waiting is not False else None
            if token is None and waiting is not False and (waiting is True or waiting > SILENT_WAIT):
                # nobody hears that it is alive: it answers before the client gives up
                arguments, waiting = {**arguments, "wait": SILENT_WAIT}, SILENT_WAIT
            stop = Stop()
            finished = False

            async def stop_when_cancelled() -> None:
                try:
                    await anyio.sleep_forever()
                finally:
                    if not finished:
                        stop.set("the client went away" if self.client_gone else "the client cancelled the call")

            try:
                async with anyio.create_task_group() as group:
                    group.start_soon(stop_when_cancelled)
                    if token is not None:
                        group.start_soon(_report_progress, context, waiting)
                    with anyio.CancelScope(shield=True):  # the thread runs to its end: what it took is known
                        texts, failed = await anyio.to_thread.run_sync(
                            answer, tools, name, arguments, board_dir, caller, timeout, stop,
                            limiter=waiters if waiting is not False else None,
                        )  # fmt: skip
                        if stop.is_set() and not self.client_gone and context is not None:
                            await self.tell(context, *_cancelled_call(name, context, texts, failed))
                    finished = True
                    group.cancel_scope.cancel()
            finally:
                stop.close()
            return texts, failed

        async def run_stdio_async(self) -> None:
            with _claimed_stdio() as (wire_in, wire_out):
                await _serve_stdio(self, wire_in, wire_out)

    waiters = anyio.CapacityLimiter(MAX_WAITERS)
    server = TaskServer(
        "tasks", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING", warn_on_duplicate_tools=False
    )
    lowlevel = server._lowlevel_server
    for method in NOT_OFFERED:  # no prompts, no resources: not advertised, and "Method not found" if asked
        lowlevel._request_handlers.pop(method, None)
    lowlevel.add_request_handler("logging/setLevel", mcp_types.SetLevelRequestParams, server.set_log_level)
    return server


def _cancelled_call(name: str, context: Any, texts: list[str], failed: bool) -> tuple[str, dict[str, Any]]:
    """What the client hears of a call it cancelled once it had started, as it ends: the
    cancelled request gets no answer, so a change made all the same, or a claim given back,
    would otherwise go unheard."""
    request = context.request_context.request_id
    document = json.loads(texts[0])
    if not failed:  # a change runs to its end once it started (it may have waited for the lock)
        return "warning", {"tool": name, "request": request, "cancelled": "too late: it was done", "result": document}
    message = document["error"]["message"]
    level = "warning" if "given back" in message else "info"
    return level, {"tool": name, "request": request, "cancelled": message}


async def _report_progress(context: Any, wait: float | bool) -> None:
    """A progress notification every PROGRESS_EVERY seconds: the seconds waited so far
    (of the wait asked for, when it has an end)."""
    import anyio

    total = None if wait is True else float(wait)
    waited = 0.0
    while True:
        await anyio.sleep(PROGRESS_EVERY)
        waited += PROGRESS_EVERY
        await context.report_progress(waited, total, "waiting for a task to become claimable")


def streamable_http(tools: Tools, board_dir: str | None, caller: str, timeout: float | None) -> tuple[Any, Any]:
    """The same server over streamable HTTP, for `tasks serve` (taskboard.web): the session
    manager, whose `run()` the web app's lifespan enters, and the ASGI app of /mcp. The
    web wing's guard checks Host, Origin and the token before a request reaches it (the
    SDK's own DNS-rebinding check knows only loopback names, so it is left off)."""
    server = build(tools, board_dir, caller, timeout)  # a usage error naming the install when the SDK is missing
    from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
    from mcp.server.transport_security import TransportSecuritySettings

    server.streamable_http_app(
        streamable_http_path="/mcp",
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    manager = server.session_manager
    return manager, StreamableHTTPASGIApp(manager)


def answer(
    tools: Tools,
    name: Any,
    arguments: Any,
    board_dir: str | None,
    caller: str,
    timeout: float | None,
    stop: Stop | None = None,
) -> tuple[list[str], bool]:
    """One call's result as texts (the document, then each message as a JSON line) and
    whether it is an error. Never raises: a bug is an `internal` error, not a dead server."""
    try:
        reply = tools.dispatch(name, arguments, board_dir, caller, timeout, stop)
    except TaskError as exc:  # the error first, then what the call had to say besides (a waiter's warning)
        return [_json(tools.tool_error(exc))] + [_json({key: value}) for key, value in tools.error_events(exc)], True
    except Exception as exc:  # a bug, or the file system failing under us: answer, keep serving
        error = {"code": "internal", "message": internal_text(exc), "exit": 1}
        return [_json({"error": error})], True
    texts = [_json(reply.document)] + [_json({key: value}) for key, value in reply.events]
    if reply.failure is not None:
        texts.append(_json(tools.tool_error(reply.failure)))
    return texts, False


MAX_LINE = 64 << 20  # bytes of one JSON-RPC message on stdin; a longer one is refused, unread
CHUNK = 1 << 16


async def _serve_stdio(server: Any, wire_in: int, wire_out: int) -> None:
    """The SDK's server loop over our own stdio lines: read by the event loop itself
    (the SDK's reads each line on a worker thread), and every line that is not a
    JSON-RPC message (malformed, or longer than MAX_LINE) answered with a JSON-RPC
    error, after which the server reads on (the SDK's drops it unanswered). When the
    input ends, the server notes that its client is gone before the loop cancels what
    is still running."""
    import anyio
    from mcp.shared.message import SessionMessage

    wire = _Wire(wire_out)
    inbound_send, inbound = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    outbound, outbound_receive = anyio.create_memory_object_stream[SessionMessage](0)

    async def read() -> None:
        async with inbound_send:
            async for line in _lines(wire_in):
                message = _message(line, wire)
                if message is not None:
                    await inbound_send.send(SessionMessage(message))
            server.client_gone = True

    async def write() -> None:
        async with outbound_receive:
            async for session_message in outbound_receive:
                wire.line(session_message.message.model_dump_json(by_alias=True, exclude_unset=True))

    lowlevel = server._lowlevel_server
    async with anyio.create_task_group() as group:
        group.start_soon(read)
        group.start_soon(write)
        await lowlevel.run(inbound, outbound, lowlevel.create_initialization_options())
        group.cancel_scope.cancel()


def _message(line: bytes | None, wire: _Wire) -> Any:
    """The JSON-RPC message a line holds; None when there is none: a blank line is
    skipped, anything else refused on the wire (PARSE_ERROR when it is not JSON, else
    INVALID_REQUEST, with the message's id when it has a usable one)."""
    import mcp_types

    if line is None:
        wire.error(None, mcp_types.INVALID_REQUEST, f"Invalid Request: the message is longer than {MAX_LINE} bytes")
        return None
    if not line.strip():
        return None
    try:
        return mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValueError:
        pass
    try:
        document = json.loads(line)
    except (ValueError, RecursionError):
        wire.error(None, mcp_types.PARSE_ERROR, "Parse error: the message is not JSON")
        return None
    found = document.get("id") if isinstance(document, dict) else None
    request_id = found if isinstance(found, (str, int)) and not isinstance(found, bool) else None
    wire.error(request_id, mcp_types.INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 message MCP knows")
    return None


async def _lines(fd: int) -> AsyncIterator[bytes | None]:
    """The lines of the input without their newline; None for a line longer than
    MAX_LINE, which is dropped as it arrives (memory stays bounded)."""
    pending, too_long = bytearray(), False
    async for chunk in _chunks(fd):
        start = 0
        while (end := chunk.find(b"\n", start)) != -1:
            if not too_long:
                pending += chunk[start:end]
            yield None if too_long or len(pending) > MAX_LINE else bytes(pending)
            pending.clear()
            too_long, start = False, end + 1
        if not too_long:
            pending += chunk[start:]
            if len(pending) > MAX_LINE:
                pending.clear()
                too_long = True
    if pending or too_long:
        yield None if too_long else bytes(pending)


async def _chunks(fd: int) -> AsyncIterator[bytes]:
    """What arrives on the input, as it arrives: a pipe or socket read by the event
    loop; anything else (a file, a terminal) on a worker thread."""
    import asyncio

    import anyio

    mode = os.fstat(fd).st_mode
    if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):
        while chunk := await anyio.to_thread.run_sync(os.read, fd, CHUNK, abandon_on_cancel=True):
            yield chunk
        return
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=CHUNK)
    source = os.fdopen(fd, "rb", buffering=0, closefd=False)
    transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), source)
    try:
        while chunk := await reader.read(CHUNK):
            yield chunk
    finally:
        transport.close()


class _Wire:
    """The wire out: one message a line, written at once (a message is small, and a
    client reads what it asked for). A client that went away is nobody to answer."""

    def __init__(self, fd: int):
        self.fd, self.broken = fd, False

    def line(self, text: str) -> None:
        data = memoryview(text.encode("utf-8") + b"\n")
        try:
            while data and not self.broken:
                data = data[os.write(self.fd, data) :]
        except OSError:  # EPIPE, mostly: the reading end closed
            self.broken = True

    def error(self, request_id: str | int | None, code: int, message: str) -> None:
        error = {"code": code, "message": message}
        self.line(_json({"jsonrpc": "2.0", "id": request_id, "error": error}))


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


def _json(document: Any) -> str:
    return json.dumps(document, ensure_ascii=False)


def serve(tools: Tools, board_dir: str | None, caller: str, timeout: float | None) -> int:
    """Run the stdio server until the client closes its end, then exit at once."""
    import gc

    build(tools, board_dir, caller, timeout).run("stdio")
    # The SDK's objects (pydantic schemas by the thousand) would cost the interpreter's
    # last collection up to a second on a busy machine: they live until the process ends.
    gc.freeze()
    return 0
