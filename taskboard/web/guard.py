"""Who may talk to `tasks serve` (DESIGN §12, safe by default). Every request, the
MCP endpoint's included, passes here first:

- Host must name the address the server listens on (or, on loopback, `localhost`):
  a page of another site whose name was made to resolve to 127.0.0.1 (DNS rebinding)
  sends its own name and is refused, so it can neither read the board nor act on it.
- Origin, when the browser sends one, must be this server's own page; a cross-site
  request (`Sec-Fetch-Site: cross-site`) is refused too.
- With a token (`--token`, TASKS_SERVE_TOKEN; required beyond loopback), every
  request carries it: `Authorization: Bearer TOKEN`, or the cookie a first visit with
  `?token=TOKEN` sets (then the address bar loses it).
- Every POST from a page carries the per-start secret (checked by the action routes,
  which read the form); GET never changes the board.

A pure ASGI middleware: no web library is needed to read it.
"""

from __future__ import annotations

import hmac
import ipaddress
from urllib.parse import parse_qsl, urlencode

TYPE_CHECKING = False  # typing costs ~5 ms of start-up; annotations are strings anyway
if TYPE_CHECKING:
    from typing import Any

TOKEN_COOKIE = "tasks_token"
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def is_wildcard(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.strip("[]")).is_unspecified
    except ValueError:
        return False


def allowed_hosts(host: str, port: int) -> set[str] | None:
    """The Host header values this server answers to; None: any (a wildcard address,
    which a token protects)."""
    if is_wildcard(host):
        return None
    names = {host}
    if is_loopback(host):
        names |= {"localhost", "127.0.0.1"} if ":" not in host else {"localhost"}
    found = set()
    for name in names:
        shown = f"[{name}]" if ":" in name and not name.startswith("[") else name
        found.add(f"{shown}:{port}")
        if port == 80:
            found.add(shown)
    return found


class Guard:
    """The ASGI middleware that refuses what the rules above refuse, with a 403 that says
    which rule and what to do."""

    def __init__(self, app: Any, host: str, port: int, token: str | None):
        self.app = app
        self.hosts = allowed_hosts(host, port)
        self.token = token or None
        self.where = f"{'[' + host + ']' if ':' in host else host}:{port}"

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = _headers(scope)
        problem = self.refusal(scope, headers)
        if problem:
            await _answer(send, 403, problem)
            return
        if self.token and scope["type"] == "http":
            query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
            if "token" in query and scope["method"] == "GET":  # the first visit: keep it in a cookie, out of the URL
                rest = [
                    (key, value) for key, value in parse_qsl(scope["query_string"].decode("latin-1")) if key != "token"
                ]
                target = scope["path"] + ("?" + urlencode(rest) if rest else "")
                cookie = f"{TOKEN_COOKIE}={self.token}; Path=/; HttpOnly; SameSite=Strict"
                await _answer(
                    send, 303, "", [(b"location", target.encode("latin-1")), (b"set-cookie", cookie.encode())]
                )
                return
        await self.app(scope, receive, send)

    def refusal(self, scope: dict, headers: dict[str, str]) -> str | None:
        host = headers.get("host", "")
        if self.hosts is not None and host.lower() not in self.hosts:
            return (
                f"refused: the Host {host[:100]!r} is not this server's address ({self.where}); "
                "open the board at the address tasks serve printed"
            )
        origin = headers.get("origin")
        if origin is not None and origin.lower() != f"http://{host.lower()}":
            return f"refused: a request from another site ({origin[:100]}) may neither read the board nor act on it"
        if headers.get("sec-fetch-site") == "cross-site":
            return "refused: a request from another site may neither read the board nor act on it"
        if self.token and not self._has_token(scope, headers):
            return (
                "refused: this board needs its token; open the address tasks serve printed "
                "(…/?token=TOKEN), or send Authorization: Bearer TOKEN"
            )
        return None

    def _has_token(self, scope: dict, headers: dict[str, str]) -> bool:
        assert self.token is not None
        offered = []
        authorization = headers.get("authorization", "")
        if authorization.lower().startswith("bearer "):
            offered.append(authorization[7:].strip())
        for part in headers.get("cookie", "").split(";"):
            name, _, value = part.strip().partition("=")
            if name == TOKEN_COOKIE:
                offered.append(value)
        if scope.get("method") == "GET":
            offered += [
                value for key, value in parse_qsl(scope.get("query_string", b"").decode("latin-1")) if key == "token"
            ]
        return any(hmac.compare_digest(value.encode(), self.token.encode()) for value in offered)


def _headers(scope: dict) -> dict[str, str]:
    found: dict[str, str] = {}
    for name, value in scope.get("headers", []):
        key = name.decode("latin-1").lower()
        if key in found and key == "host":
            found[key] = "\0"  # two Host headers: answer neither
            continue
        found[key] = value.decode("latin-1")
    return found


async def _answer(send: Any, status: int, text: str, extra: list | None = None) -> None:
    body = (text + "\n").encode("utf-8") if text else b""
    headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers + (extra or [])})
    await send({"type": "http.response.body", "body": body})


def secret_matches(given: str, secret: str) -> bool:
    return hmac.compare_digest(given.encode("utf-8", "replace"), secret.encode())
