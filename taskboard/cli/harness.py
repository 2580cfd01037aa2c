"""Command bodies that plug the board into agent harnesses, without click and without
the MCP SDK: `tasks schema` (the tools as definitions for a model API), `tasks call`
(one tool call as JSON on stdin, its `--json` document on stdout) and `tasks setup
claude|codex` (the project's harness configuration, written once, idempotently,
keeping everything already there). `tasks mcp` lives in taskboard.agents.mcp. The
tool table is handed in by the door (taskboard.__main__ hands taskboard.agents.tools;
`Tools` below is what these bodies ask of it).
"""

from __future__ import annotations

import itertools
import json
import os
import re
import sys
from pathlib import Path

from ..core.errors import Corrupt, Refused, TaskError, UsageError
from ..disk.store import DEFAULT_TIMEOUT
from .invocation import Invocation, env_timeout, fail, write

TYPE_CHECKING = False  # typing costs ~5 ms of start-up; annotations are strings anyway
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any, Protocol

    from ..agents.mcp import Tools as Served

    class Tools(Served, Protocol):
        """The tool table `tasks schema` and `tasks call` speak for: what the MCP server
        asks of it (dispatch, tool_error), and the definitions, the input limit and the caller."""

        MAX_INPUT: int  # bytes of one call's arguments as JSON

        def definitions(self, fmt: str = "anthropic") -> list[dict[str, Any]]: ...
        def caller_from_env(self, flag: str | None) -> str: ...


SERVER_NAME = "tasks"
PRIME = "tasks prime"


def server_for(inv: Invocation, root: Path) -> dict[str, Any]:
    """The server command setup writes: `tasks mcp` with the --dir and --as that setup
    itself was given (a board path relative to the project root where it lies inside it:
    the harness starts the server there)."""
    flags = []
    if inv.board_dir:
        board = Path(inv.board_dir).absolute()
        flags += ["--dir", str(board.relative_to(root)) if board.is_relative_to(root) else str(board)]
    if inv.caller_flag is not None:
        flags += ["--as", inv.caller_flag]
    return {"command": "tasks", "args": [*flags, "mcp"]}


def prime_for(server: dict[str, Any]) -> str:
    """The SessionStart hook's command: `tasks prime` on the server's board, as its caller."""
    import shlex

    return shlex.join([server["command"], *server["args"][:-1], "prime"])


def schema(inv: Invocation, tools: Tools, fmt: str = "anthropic") -> int:
    """The tools as one JSON array of definitions."""
    write(sys.stdout, json.dumps(tools.definitions(fmt), ensure_ascii=False) + "\n")
    return 0


def call(inv: Invocation, tools: Tools) -> int:
    """One call read as JSON on stdin, `{"name": ..., "input": {...}}`: the document on
    stdout and exit 0; stderr is JSON Lines (warnings, `unblocked`), an error last
    with the command line's exit code."""
    inv.json = True  # a machine interface: stderr speaks JSON Lines, whatever the flags
    try:
        name, arguments = read_call(sys.stdin.buffer if sys.stdin else None, tools.MAX_INPUT)
        timeout = inv.timeout if inv.timeout is not None else env_timeout(DEFAULT_TIMEOUT)
        reply = tools.dispatch(name, arguments, inv.board_dir, tools.caller_from_env(inv.caller_flag), timeout)
    except TaskError as exc:
        for key, value in tools.error_events(exc):  # a waiter's warning, before the error as the command line's
            inv.event(key, value, "")
        return _fail(tools, exc)
    inv.data(reply.document)
    for key, value in reply.events:
        inv.event(key, value, "")
    return _fail(tools, reply.failure) if reply.failure else 0


def _fail(tools: Tools, exc: TaskError) -> int:
    error = tools.tool_error(exc)["error"]
    return fail(True, error["code"], error["message"], error["exit"])


def read_call(stream: Any, max_input: int) -> tuple[Any, Any]:
    """The tool name and arguments of one call on stdin (at most twice `max_input` bytes,
    the arguments' limit, with room for their wrapping); malformed input is a usage error."""
    raw = stream.read(max_input * 2 + 1) if stream is not None else b""
    if len(raw) > max_input * 2:
        raise UsageError(f"the call on stdin is longer than {max_input * 2} bytes")
    try:
        call = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise UsageError(f"the call on stdin is not valid UTF-8 (byte {exc.start})") from None
    except (ValueError, RecursionError) as exc:
        reason = str(exc).split("\n")[0][:120]
        raise UsageError(
            f'the call on stdin is not JSON ({reason}); write {{"name": "task_get", "input": {{"taskId": 7}}}}'
        ) from None
    if isinstance(call, dict) and call.get("type") == "function" and isinstance(call.get("function"), dict):
        call = {**call["function"], **({"id": call["id"]} if "id" in call else {})}  # an OpenAI tool call, whole
    if not isinstance(call, dict) or "name" not in call:
        raise UsageError('the call on stdin must be a JSON object {"name": TOOL, "input": {ARGUMENTS}}')
    # what a model's API hands back, verbatim: Anthropic's tool_use block ({"type", "id", "name",
    # "input"}) or OpenAI's function call ({"name", "arguments": JSON text}); the id is the harness's
    extra = sorted(set(call) - {"name", "input", "arguments", "id", "type"})
    if extra:
        raise UsageError(
            f"the call on stdin has unknown keys {', '.join(map(repr, extra))[:200]}; only name and input "
            "(or arguments)"
        )
    if "input" in call and "arguments" in call:
        raise UsageError("the call on stdin has both input and arguments; give one")
    arguments = call.get("input", call.get("arguments", {}))
    if "arguments" in call and isinstance(arguments, str):  # OpenAI sends the arguments as JSON text
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except (ValueError, RecursionError) as exc:
            raise UsageError(f"the call's arguments are not JSON ({str(exc).splitlines()[0][:120]})") from None
    return call["name"], arguments


# -- setup ----------------------------------------------------------------------------


def setup(inv: Invocation, harness: str) -> int:
    """Write the project's configuration for a harness; report what changed."""
    root = project_root()
    server = server_for(inv, root)
    if harness == "claude":
        planned = [_claude_mcp(root, server), _claude_hook(root, prime_for(server))]
    elif harness == "codex":
        planned = [_codex(root, server)]
    else:  # click's choice keeps this out; a library caller may not
        raise UsageError(f"unknown harness {harness!r}; use claude or codex")
    changes = [change for change in planned if change]  # every file checked before any is written
    for name, text in changes:
        _write(root / name, text)
    changed = [name for name, _text in changes]
    if inv.json:
        inv.data({"root": str(root), "changed": changed})
    elif changed:
        write(sys.stderr, f"wrote {', '.join(changed)} in {root}\n")
    else:
        write(sys.stderr, f"{harness} is already set up in {root}; nothing changed\n")
    return 0


def project_root(cwd: Path | None = None) -> Path:
    """The top of the git work tree around the working folder, else the folder itself."""
    here = (cwd or Path.cwd()).absolute()
    for folder in (here, *here.parents):
        if (folder / ".git").exists():
            return folder
    return here


def _claude_mcp(root: Path, server: dict[str, Any]) -> tuple[str, str] | None:
    """`.mcp.json` gains the server `tasks`; a server of that name already there is kept."""
    path = root / ".mcp.json"
    text, config = _read_json(path)
    servers = _table(config, "mcpServers", path)
    if SERVER_NAME in servers:
        return None
    return ".mcp.json", _json_added(path, text, ["mcpServers", SERVER_NAME], {"type": "stdio", **server})


def _claude_hook(root: Path, prime: str) -> tuple[str, str] | None:
    """`.claude/settings.json` gains a SessionStart hook running `tasks prime`, unless one runs it already."""
    path = root / ".claude" / "settings.json"
    text, config = _read_json(path)
    hooks = _table(config, "hooks", path)
    starts = hooks.get("SessionStart", [])
    if not isinstance(starts, list):
        raise Corrupt(f"{path}: 'hooks.SessionStart' should be a JSON array", str(path), "type")
    for group in starts:
        entries = group.get("hooks") if isinstance(group, dict) else None
        if isinstance(entries, list) and any(isinstance(e, dict) and e.get("command") == prime for e in entries):
            return None
    hook = {"hooks": [{"type": "command", "command": prime}]}
    return ".claude/settings.json", _json_added(path, text, ["hooks", "SessionStart", None], hook)


def _read_text(path: Path) -> str:
    """A configuration file's text exactly as it is (line endings included), or "" when there is none."""
    try:
        return path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        return ""
    except (OSError, UnicodeDecodeError) as exc:
        raise Corrupt(f"{path}: cannot be read ({exc}); fix it or move it away", str(path), "read") from None


def _read_json(path: Path) -> tuple[str, dict[str, Any]]:
    text = _read_text(path)
    if not text.strip():
        return text, {}
    try:
        config = json.loads(text)
    except (ValueError, RecursionError) as exc:
        reason = str(exc).split("\n")[0][:120]
        raise Corrupt(f"{path}: not valid JSON ({reason}); fix it or move it away", str(path), "json") from None
    if not isinstance(config, dict):
        raise Corrupt(f"{path}: should hold a JSON object; fix it or move it away", str(path), "object")
    return text, config


def _table(config: dict[str, Any], key: str, path: Path) -> dict[str, Any]:
    table = config.get(key, {})
    if not isinstance(table, dict):
        raise Corrupt(f"{path}: {key!r} should be a JSON object", str(path), "type")
    return table


# JSON configuration is edited as text: the new entry goes in after the last one of its
# object or array, in the file's own indentation and line endings; every other byte stays.


def _json_added(path: Path, text: str, where: list[str | None], value: Any) -> str:
    """`text` with `value` added at `where` (object keys, then None for the end of an
    array); the objects and arrays on the way that are missing come with it. Proven by
    parsing: the result must read as the old document plus exactly that value."""
    if not text.strip():
        return json.dumps(_nested(where, value), indent=2, ensure_ascii=False) + "\n"
    newline = "\r\n" if "\r\n" in text else "\n"
    start = len(text) - len(text.lstrip())
    found, depth = _container(text, start, where[:-1])
    rest = where[depth:]
    key, member = (rest[0], _nested(rest[1:], value)) if rest else (where[-1], value)
    new = _json_inserted(text, found, key, member, newline)
    expected = json.loads(text)
    cursor = expected
    for step, following in itertools.pairwise(where):
        cursor = cursor.setdefault(step, [] if following is None else {})
    if where[-1] is None:
        cursor.append(value)
    else:
        cursor[where[-1]] = value
    if json.loads(new) != expected:  # never written: a file we cannot extend as meant is left alone
        raise Refused(f"{path}: adding {'.'.join(str(k) for k in where if k)} would not read as meant; add it by hand")
    return new


def _nested(where: list[str | None], value: Any) -> Any:
    for key in reversed(where):
        value = [value] if key is None else {key: value}
    return value


def _container(text: str, at: int, where: list[str | None]) -> tuple[int, int]:
    """Where the deepest object on the path `where` that exists starts, and how many
    steps of the path lead to it."""
    decoder = json.JSONDecoder()
    depth = 0
    for key in where:
        for name, value_at in _members(text, at, decoder):
            if name == key:
                at = value_at
                depth += 1
                break
        else:
            break
    return at, depth


def _members(text: str, at: int, decoder: json.JSONDecoder) -> Iterator[tuple[str, int]]:
    """(key, where its value starts) for each member of the object starting at `at`."""
    index = _skip(text, at + 1)
    while text[index] != "}":
        name, index = json.decoder.scanstring(text, index + 1)  # type: ignore[attr-defined]
        index = _skip(text, _skip(text, index) + 1)  # past the colon
        yield name, index
        index = _skip(text, decoder.raw_decode(text, index)[1])
        if text[index] == ",":
            index = _skip(text, index + 1)


def _skip(text: str, index: int) -> int:
    while text[index] in " \t\r\n":
        index += 1
    return index


def _json_inserted(text: str, at: int, key: str | None, value: Any, newline: str) -> str:
    """The object or array starting at `at` with one more entry at its end, laid out as
    its entries are (on lines of their own, or on one line)."""
    decoder = json.JSONDecoder()
    end = decoder.raw_decode(text, at)[1] - 1  # the closing bracket
    inner = text[at + 1 : end]
    line_start = text.rfind("\n", 0, at) + 1
    indent = re.match(r"[ \t]*", text[line_start:]).group()  # type: ignore[union-attr]
    unit = _indent_unit(text)
    if inner.strip():
        first = _skip(text, at + 1)
        lead = text[at + 1 : first]
        last = len(text[:end].rstrip())  # just after the last entry
        if "\n" in lead:  # entries on lines of their own
            child = lead[lead.rfind("\n") + 1 :]
            entry = _entry(key, value, child, unit, newline)
            return text[:last] + "," + newline + child + entry + text[last:]
        return text[:last] + ", " + _entry(key, value, "", None, newline) + text[last:]
    child = indent + unit
    entry = _entry(key, value, child, unit, newline)
    return text[: at + 1] + newline + child + entry + newline + indent + text[end:]


def _entry(key: str | None, value: Any, child: str, unit: str | None, newline: str) -> str:
    body = json.dumps(value, indent=unit, ensure_ascii=False)
    if unit is not None:
        body = body.replace("\n", newline + child)
    return (json.dumps(key, ensure_ascii=False) + ": " if key is not None else "") + body


def _indent_unit(text: str) -> str:
    """The file's indentation step: the first indented line's (two spaces when none is)."""
    found = re.search(r"\n([ \t]+)\S", text)
    return found.group(1) if found else "  "


# Codex's project configuration: `.codex/config.toml`, `[mcp_servers.tasks]`. Written as
# text (no TOML library is a dependency): a table appended at the end of the file leaves
# everything before it as it was.
_CODEX_SERVER = re.compile(
    r"""^[ \t]*(?:\[[ \t]*mcp_servers[ \t]*\.[ \t]*(?:tasks|"tasks"|'tasks')[ \t]*[\].]"""
    r"""|mcp_servers[ \t]*\.[ \t]*(?:tasks|"tasks"|'tasks')[ \t]*[.=])""",
    re.MULTILINE,
)
_CODEX_TABLE = re.compile(r"^[ \t]*\[[ \t]*mcp_servers[ \t]*\][ \t]*(?:#.*)?$", re.MULTILINE)
_CODEX_INLINE = re.compile(r"^[ \t]*mcp_servers[ \t]*=", re.MULTILINE)
_TABLE_HEADER = re.compile(r"^[ \t]*\[", re.MULTILINE)
_TASKS_KEY = re.compile(r"""^[ \t]*(?:tasks|"tasks"|'tasks')[ \t]*[.=]""", re.MULTILINE)


def codex_table(server: dict[str, Any], newline: str = "\n") -> str:
    """`[mcp_servers.tasks]` with the server's command and arguments (TOML's basic strings
    read JSON's string escapes)."""
    args = ", ".join(json.dumps(arg, ensure_ascii=False) for arg in server["args"])
    lines = [f"[mcp_servers.{SERVER_NAME}]", f"command = {json.dumps(server['command'])}", f"args = [{args}]"]
    return newline.join(lines) + newline


def _codex(root: Path, server: dict[str, Any]) -> tuple[str, str] | None:
    path = root / ".codex" / "config.toml"
    text = _read_text(path)  # as it is: its line endings are kept
    if _codex_has_server(text):
        return None
    inline = codex_table(server).splitlines()[1:]
    if _CODEX_INLINE.search(text):
        raise Refused(f"{path} defines mcp_servers inline; add tasks = {{ {', '.join(inline)} }} to it by hand")
    newline = "\r\n" if "\r\n" in text else "\n"
    ended = text if not text or text.endswith("\n") else text + newline
    new = ended + (newline if text.strip() else "") + codex_table(server, newline)
    _check_toml(path, text, new, server)
    return ".codex/config.toml", new


def _codex_has_server(text: str) -> bool:
    """Whether the file already declares the server `tasks`, in any of TOML's spellings
    (read by the standard library's parser where there is one, Python ≥ 3.11)."""
    try:
        import tomllib

        servers = tomllib.loads(text).get("mcp_servers", {})
        return isinstance(servers, dict) and SERVER_NAME in servers
    except ImportError:
        pass
    except ValueError:  # not valid TOML: _check_toml names it
        return False
    if _CODEX_SERVER.search(text):
        return True
    for table in _CODEX_TABLE.finditer(text):  # [mcp_servers] then `tasks = {...}` or `tasks.command = ...`
        body = text[table.end() :]
        following = _TABLE_HEADER.search(body)
        if _TASKS_KEY.search(body[: following.start()] if following else body):
            return True
    return False


def _check_toml(path: Path, old: str, new: str, server: dict[str, Any]) -> None:
    """Where the standard library can parse TOML (Python ≥ 3.11), prove the new file
    parses and says what was meant before writing it."""
    try:
        import tomllib
    except ImportError:
        return
    try:
        tomllib.loads(old)
    except tomllib.TOMLDecodeError as exc:
        raise Corrupt(f"{path}: not valid TOML ({exc}); fix it, then run setup again", str(path), "toml") from None
    try:
        parsed = tomllib.loads(new)
    except tomllib.TOMLDecodeError as exc:  # appending cannot be done safely: leave the file alone
        raise Refused(f"{path}: adding [mcp_servers.tasks] would not parse ({exc}); add it by hand") from None
    if parsed.get("mcp_servers", {}).get(SERVER_NAME) != server:
        raise Refused(f"{path}: [mcp_servers.tasks] would not read as meant; add it by hand")


def _write(path: Path, text: str) -> None:
    """Replace a configuration file atomically (a temporary file beside it), keeping its mode."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tasks-tmp")
    try:
        mode = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = None
    with open(temporary, "w", encoding="utf-8", newline="\n") as out:
        out.write(text)
        out.flush()
        os.fsync(out.fileno())
    if mode is not None:
        os.chmod(temporary, mode)
    os.replace(temporary, path)
