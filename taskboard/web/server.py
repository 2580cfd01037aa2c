"""`tasks serve`: the ASGI app (Starlette) that serves the pages, the change feed
(Server-Sent Events), the actions (POSTed forms) and MCP over streamable HTTP at /mcp,
behind taskboard.web.guard; and `serve`, which runs it with uvicorn.

Pages are rendered on the server (Jinja2), so reading needs no script; the page's one
script (static/board.js) subscribes to /events and, on a change, fetches the page again
and swaps its live parts, and sends the forms without a reload.

The change feed (taskboard.web.feed) wakes every open page at once when anything under
the board changes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
from pathlib import Path
from urllib.parse import parse_qs, quote, unquote

from ..core.errors import TaskError, UsageError
from ..core.model import parse_id
from ..views.messages import error_document, error_text
from . import actions, pages, versions
from .feed import Feed
from .guard import Guard, is_loopback, secret_matches

TYPE_CHECKING = False  # typing costs ~5 ms of start-up; annotations are strings anyway
if TYPE_CHECKING:
    from typing import Any

    from ..agents.mcp import Tools
    from ..ops.board import Board
    from ..ops.coordination import Authority

HERE = Path(__file__).resolve().parent
INSTALL = "pipx install --force '.[mcp,web]' in a clone (make install does), or pip install starlette uvicorn jinja2 beside tasks"
NAME_COOKIE = "tasks_name"
FLASH_COOKIE = "tasks_flash"
MAX_FORM = 256 * 1024  # bytes of one form: the longest description and then some
HEARTBEAT = 15.0  # seconds between keep-alive comments on an idle change feed
SECURITY_HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        b"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    ),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
    (b"cache-control", b"no-store"),
]


class Site:
    """One `tasks serve`: the board, who the page user is when --as says so, the
    per-start secret, what the pages showed lately (versions.Shown), and the claim
    authority every board it opens asks (the door hands it: git's claim refs)."""

    def __init__(
        self,
        board_dir: str,
        caller: str = "",
        timeout: float = 10.0,
        host: str = "127.0.0.1",
        port: int = 8765,
        token: str | None = None,
        *,
        authority: Authority,
    ):
        self.authority = authority
        self.board_dir = board_dir
        self.caller = caller
        self.timeout = timeout
        self.host, self.port, self.token = host, port, token
        self.secret = secrets.token_urlsafe(32)
        self.shown = versions.Shown()
        self.state_folder: str | None = None
        self.feed = Feed(self.watched)
        from jinja2 import Environment, FileSystemLoader, select_autoescape

        self.templates = Environment(
            loader=FileSystemLoader(str(HERE / "templates")),
            autoescape=select_autoescape(default=True, default_for_string=True),
            trim_blocks=True,
            lstrip_blocks=True,
        )

    def warm(self) -> None:
        """Read the board once at start, as the first page will (the cache beside the board
        is brought up to date, the modules a page needs are loaded): the first page a
        browser asks for is then as quick as the next."""
        for name in ("board.html", "task.html", "graph.html", "journal.html", "error.html"):
            self.templates.get_template(name)  # compiled once, here
        with contextlib.suppress(TaskError, OSError):
            pages.board_page(self.board(), pages.Filters())

    def board(self, name: str = "") -> Board:
        from ..disk.store import Store
        from ..ops.board import Board

        # the authority the command line and the tools use: a clone with remote claims
        # moves its claim refs for a page's claim too
        return Board(Store(self.board_dir, self.timeout), name, self.authority)

    def watched(self) -> list[str]:
        """The folders whose changes a page shows: the board, its journal and archive, and
        the runtime state (leases, attempts), those that exist now."""
        if self.state_folder is None:
            from ..ops.claims import state_of

            with contextlib.suppress(TaskError, OSError):
                self.state_folder = state_of(self.board().store).folder
        root = self.board_dir
        folders = [root, os.path.join(root, "journal"), os.path.join(root, "archive"), self.state_folder or root]
        return sorted({folder for folder in folders if os.path.isdir(folder)})


# -- requests -------------------------------------------------------------------------


def _user(site: Site, request: Any) -> str:
    """The page user's name: --as when the server was started with it, else the name the
    browser remembers (asked once)."""
    if site.caller:
        return site.caller
    return unquote(request.cookies.get(NAME_COOKIE, ""))[:200]


def _page(site: Site, request: Any, template: str, context: dict, status: int = 200, flash: dict | None = None) -> Any:
    from starlette.responses import HTMLResponse

    if flash is None:
        flash = _flash_of(request)
    user = _user(site, request)
    html = site.templates.get_template(template).render(
        **context,
        user=user,
        user_fixed=bool(site.caller),
        secret=site.secret,
        generation=site.feed.generation,
        here=_here(request),
        flash=flash,
        board_path=str(site.board_dir),
    )
    response = HTMLResponse(html, status_code=status)
    if request.cookies.get(FLASH_COOKIE):
        response.delete_cookie(FLASH_COOKIE, path="/")
    return response


def _here(request: Any) -> str:
    query = request.url.query
    return request.url.path + ("?" + query if query else "")


def _flash_of(request: Any) -> dict | None:
    raw = request.cookies.get(FLASH_COOKIE)
    if not raw:
        return None
    try:
        found = json.loads(unquote(raw))
    except ValueError:
        return None
    return found if isinstance(found, dict) and isinstance(found.get("message"), str) else None


def _params(request: Any) -> dict[str, list[str]]:
    return parse_qs(request.url.query, keep_blank_values=True)


def _error_page(site: Site, request: Any, exc: TaskError, status: int, flash: dict | None = None) -> Any:
    return _page(
        site, request, "error.html", {"error": error_text(exc), "code": exc.code, "title": "Error"}, status, flash
    )


def _status_of(exc: TaskError) -> int:
    return {2: 400, 3: 404, 4: 409, 5: 503, 6: 500, 7: 422}.get(exc.exit_code, 500)


# -- the pages ------------------------------------------------------------------------


# Each view reads the board for one page: (template, context); raises TaskError.


def board_view(site: Site, path_params: dict, params: dict[str, list[str]]) -> tuple[str, dict]:
    filters = pages.Filters.from_query(params)
    every = params.get("done", [""])[-1] == "all"
    context = pages.board_page(site.board(), filters, every, remember=site.shown.remember)
    return "board.html", context | {
        "filters": filters,
        "statuses": pages.STATUS_CHOICES,
        "every": every,
        "title": "Board",
    }


def task_view(site: Site, path_params: dict, params: dict[str, list[str]]) -> tuple[str, dict]:
    task_id = parse_id(path_params["task_id"])
    context = pages.task_page(site.board(), task_id, remember=site.shown.remember)
    return "task.html", context | {"title": f"#{task_id} {context['task']['subject'][:60]}"}


def graph_view(site: Site, path_params: dict, params: dict[str, list[str]]) -> tuple[str, dict]:
    filters = pages.Filters.from_query(params)
    focus_text = params.get("task", [""])[-1]
    focus = parse_id(focus_text) if focus_text else None
    everything = params.get("all", [""])[-1] == "1"
    context = pages.graph_page(site.board(), filters, focus, everything)
    return "graph.html", context | {"filters": filters, "statuses": pages.STATUS_CHOICES, "title": "Graph"}


def journal_view(site: Site, path_params: dict, params: dict[str, list[str]]) -> tuple[str, dict]:
    task_text = params.get("task", [""])[-1]
    task_id = parse_id(task_text) if task_text else None
    limit = pages.parse_limit(params.get("limit", [""])[-1], pages.TIMELINE)
    return "journal.html", pages.journal_page(site.board(), task_id, limit) | {"title": "Journal"}


def _view_of(path: str) -> tuple[Any, dict]:
    """The view that serves a path of this site, and its path parameters."""
    if path.startswith("/task/") and "/" not in path.removeprefix("/task/"):
        return task_view, {"task_id": path.removeprefix("/task/")}
    return {"/graph": graph_view, "/journal": journal_view}.get(path, board_view), {}


def show(site: Site, request: Any, view: Any, flash: dict | None = None, status: int = 200) -> Any:
    """A page, or the error page naming what went wrong (the command line's message)."""
    try:
        template, context = view(site, request.path_params, _params(request))
    except TaskError as exc:
        return _error_page(site, request, exc, _status_of(exc), flash)
    return _page(site, request, template, context, status, flash)


async def events(site: Site, request: Any) -> Any:
    """The change feed: `hello` with the generation now, then `change` whenever it moves
    on; a comment every HEARTBEAT seconds keeps proxies and the browser's timer content."""
    from starlette.responses import StreamingResponse

    async def stream() -> Any:
        seen = site.feed.generation
        yield f"retry: 1000\nevent: hello\ndata: {seen}\n\n"
        while not site.feed.closing:
            now = await site.feed.after(seen, HEARTBEAT)
            if site.feed.closing:
                return
            if now == seen:
                yield ": idle\n\n"
                continue
            seen = now
            yield f"event: change\ndata: {now}\n\n"

    return StreamingResponse(
        stream(), media_type="text/event-stream", headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
    )


# -- the actions ----------------------------------------------------------------------


async def _form(request: Any) -> dict[str, str]:
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM:
            raise UsageError(f"the form is larger than {MAX_FORM} bytes")
    kind = request.headers.get("content-type", "").split(";")[0].strip()
    if kind != "application/x-www-form-urlencoded":
        raise UsageError("send the form as application/x-www-form-urlencoded")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError("the form is not UTF-8 text") from None
    return {key: values[-1] for key, values in parse_qs(text, keep_blank_values=True).items()}


def _next_of(form: dict[str, str], fallback: str) -> str:
    """Where to go back to: a path on this server, never another site (`//host`)."""
    target = form.get("next", "")
    if not target.startswith("/") or target.startswith("//") or "\\" in target:
        return fallback
    return target


NO_SECRET = (
    "refused: the form lacks this server's secret (it was sent from another site, or before the server "
    "restarted); reload the page and send it again"
)


async def act(site: Site, request: Any) -> Any:
    """POST /create, /task/ID/ACTION: one change, for the page user. A script gets JSON;
    a page without script gets the page back (303 on success, the page with the
    refusal otherwise)."""
    import anyio
    from starlette.responses import JSONResponse, RedirectResponse

    from ..core.errors import Corrupt, Refused
    from ..views.messages import permission_text

    wants_json = "application/json" in request.headers.get("accept", "")
    action = request.path_params.get("action", "create")
    task_text = request.path_params.get("task_id")
    target = f"/task/{task_text}" if task_text else "/"
    user = _user(site, request)
    try:
        form = await _form(request)
        if not secret_matches(form.get("_secret", ""), site.secret):
            raise Refused(NO_SECRET, "no-secret")
        target = _next_of(form, target)

        def run() -> actions.Done:
            task_id = parse_id(task_text) if task_text else None
            return actions.run(site.board(user), action, task_id, form, site.shown)

        done = await anyio.to_thread.run_sync(run)
    except TaskError as exc:
        return _refusal(site, request, exc, wants_json, target)
    except PermissionError as exc:
        failure = Corrupt(permission_text(exc), exc.filename or "", "permission")
        return _refusal(site, request, failure, wants_json, target)
    if wants_json:
        return JSONResponse({"ok": True, "message": done.message, "task": done.task})
    response = RedirectResponse(target, status_code=303)
    flash = quote(json.dumps({"message": done.message, "ok": True}))
    response.set_cookie(FLASH_COOKIE, flash, path="/", httponly=True, samesite="strict")
    return response


def _refusal(site: Site, request: Any, exc: TaskError, wants_json: bool, target: str) -> Any:
    """A refused action: the command line's message, nothing written. Without script,
    the page the form came from, with the message at its top."""
    from starlette.requests import Request
    from starlette.responses import JSONResponse

    if exc.reason == "no-secret":  # not an answer about the board: the request itself is refused
        from starlette.responses import PlainTextResponse

        if wants_json:
            return JSONResponse({"ok": False, "error": {**error_document(exc), "message": exc.message}}, 403)
        return PlainTextResponse(exc.message + "\n", 403)
    status = _status_of(exc)
    if wants_json:  # the script reads the answer from the body: a refusal is an answer, not a failed request
        return JSONResponse({"ok": False, "error": {**error_document(exc), "message": error_text(exc)}})
    path, _, query = target.partition("?")
    view, path_params = _view_of(path)
    scope = dict(request.scope) | {
        "path": path,
        "query_string": query.encode(),
        "method": "GET",
        "path_params": path_params,
    }
    return show(site, Request(scope), view, {"message": error_text(exc), "ok": False}, status)


async def set_name(site: Site, request: Any) -> Any:
    """POST /name: the name this browser's user goes by (a cookie: asked once)."""
    from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse

    try:
        form = await _form(request)
    except TaskError as exc:
        return PlainTextResponse(error_text(exc) + "\n", 400)
    if not secret_matches(form.get("_secret", ""), site.secret):
        return PlainTextResponse("refused: the form lacks this server's secret; reload the page\n", 403)
    name = form.get("name", "").strip()
    from ..core.model import check_owner

    try:
        check_owner(name)
    except TaskError as exc:
        return PlainTextResponse(error_text(exc) + "\n", 400)
    if "application/json" in request.headers.get("accept", ""):
        response: Any = JSONResponse({"ok": True, "name": name})
    else:
        response = RedirectResponse(_next_of(form, "/"), status_code=303)
    response.set_cookie(NAME_COOKIE, quote(name), max_age=400 * 24 * 3600, path="/", samesite="strict")
    return response


# -- the app ----------------------------------------------------------------------------


def build(site: Site, tools: Tools | None = None) -> Any:
    """The ASGI app: the guard around the pages, the feed, the actions, the static files
    and, given the tools to serve there (the door hands them) and with the MCP SDK
    installed, /mcp."""
    from starlette.applications import Starlette
    from starlette.responses import PlainTextResponse
    from starlette.routing import Mount, Route
    from starlette.staticfiles import StaticFiles

    def page(view: Any) -> Any:
        def endpoint(request: Any) -> Any:  # a plain function: Starlette runs it on a worker thread
            return show(site, request, view)

        return endpoint

    async def feed(request: Any) -> Any:
        return await events(site, request)

    async def action(request: Any) -> Any:
        return await act(site, request)

    async def name(request: Any) -> Any:
        return await set_name(site, request)

    routes: list[Any] = [
        Route("/", page(board_view)),
        Route("/task/{task_id}", page(task_view)),
        Route("/graph", page(graph_view)),
        Route("/journal", page(journal_view)),
        Route("/events", feed),
        Route("/create", action, methods=["POST"]),
        Route("/task/{task_id}/{action}", action, methods=["POST"]),
        Route("/name", name, methods=["POST"]),
        Mount("/static", StaticFiles(directory=str(HERE / "static")), name="static"),
    ]
    manager = None
    if tools is not None:
        manager, mcp_route = _mcp_route(site, tools)
        routes.append(mcp_route)

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> Any:
        site.feed.start(asyncio.get_running_loop())
        try:
            if manager is not None:
                async with manager.run():
                    yield
            else:
                yield
        finally:
            site.feed.stop()

    async def not_found(request: Any, exc: Any) -> Any:
        return PlainTextResponse(f"no page {request.url.path}\n", 404)

    app = Starlette(routes=routes, lifespan=lifespan, exception_handlers={404: not_found})
    return Guard(_Headers(app), site.host, site.port, site.token)


class _Headers:
    """Every answer says: no framing, no sniffing, no script or style from elsewhere."""

    def __init__(self, app: Any):
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"] == "/mcp":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: dict) -> None:
            if message["type"] == "http.response.start":
                names = {name for name, _ in message.get("headers", [])}
                message["headers"] = list(message.get("headers", [])) + [
                    (name, value) for name, value in SECURITY_HEADERS if name not in names
                ]
            await send(message)

        await self.app(scope, receive, send_with_headers)


def _mcp_route(site: Site, tools: Tools) -> tuple[Any, Any]:
    """/mcp: the tools of `tasks mcp` over streamable HTTP (taskboard.agents.mcp), behind
    the same guard as the pages; without the MCP SDK, an answer naming its install."""
    from starlette.routing import Route

    from ..agents import mcp as mcp_server

    try:
        manager, endpoint = mcp_server.streamable_http(tools, str(site.board_dir), site.caller, site.timeout)
    except UsageError as exc:
        from starlette.responses import PlainTextResponse

        message = f"MCP over HTTP: {exc.message}\n"

        async def missing(request: Any) -> Any:
            return PlainTextResponse(message, 501)

        return None, Route("/mcp", missing, methods=["GET", "POST", "DELETE"])
    return manager, Route("/mcp", endpoint)


# -- tasks serve --------------------------------------------------------------------------


def check_start(host: str, token: str | None) -> None:
    """Beyond loopback only with a token (usage error, exit 2)."""
    if not is_loopback(host) and not token:
        raise UsageError(
            f"--host {host} lets other machines reach the board: give it a token "
            "(--token TOKEN or TASKS_SERVE_TOKEN), which every request must then carry",
            "serve-token",
        )


def serve(
    tools: Tools,
    authority: Authority,
    board_dir: str,
    caller: str,
    timeout: float,
    host: str = "127.0.0.1",
    port: int = 8765,
    token: str | None = None,
    open_browser: bool = False,
    say: Any = print,
) -> int:
    """Run the server until Ctrl-C, with `tools` at /mcp, its boards asking `authority`
    before they claim. Raises UsageError when the extra is missing."""
    check_start(host, token)
    try:
        import jinja2  # noqa: F401
        import starlette  # noqa: F401
        import uvicorn
    except ImportError:
        raise UsageError(f"tasks serve needs the web extra, which is not installed: {INSTALL}") from None
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((host, port))
    except OSError as exc:
        listener.close()
        raise UsageError(
            f"cannot listen on {host}:{port}: {(exc.strerror or str(exc)).lower()}", "serve-port"
        ) from None
    listener.listen(128)
    port = listener.getsockname()[1]
    site = Site(board_dir, caller, timeout, host, port, token, authority=authority)
    site.warm()  # before the address is given: a page asked for at once is as quick as the next
    config = uvicorn.Config(
        build(site, tools),  # the MCP SDK is loaded here too: the address is given once all is ready
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=1,
        lifespan="on",
    )
    shown_host = f"[{host}]" if ":" in host else host
    address = f"http://{shown_host}:{port}/" + (f"?token={token}" if token else "")
    say(f"serving the board {board_dir} at {address}")
    say("Ctrl-C stops it")
    if open_browser:
        import webbrowser

        webbrowser.open(address)

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: Any) -> None:
            site.feed.close()  # open pages' feeds end at once: Ctrl-C stops the server without waiting
            super().handle_exit(sig, frame)

    Server(config).run(sockets=[listener])
    return 0
