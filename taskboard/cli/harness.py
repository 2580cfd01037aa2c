"""Command bodies that plug the board into agent harnesses, without click and without
the MCP SDK: `tasks schema` (the tools as definitions for a model API), `tasks call`
(one tool call as JSON on stdin, its `--json` document on stdout) and `tasks setup
claude|codex` (the project's harness configuration, written once, idempotently,
keeping everything already there). `tasks mcp` lives in taskboard.mcp_server.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

from ..agents import tools
from ..core.errors import Corrupt, Refused, TaskError, UsageError
from ..disk.store import DEFAULT_TIMEOUT
from .invocation import Invocation, env_timeout, fail, write

TYPE_CHECKING = False  # typing costs ~5 ms of start-up; annotations are strings anyway
if TYPE_CHECKING:
    from typing import Any

SERVER_NAME = "tasks"
SERVER = {"command": "tasks", "args": ["mcp"]}
PRIME = "tasks prime"


def schema(inv: Invocation, fmt: str = "anthropic") -> int:
    """The tools as one JSON array of definitions."""
    write(sys.stdout, json.dumps(tools.definitions(fmt), ensure_ascii=False) + "\n")
    return 0


def call(inv: Invocation) -> int:
    """One call read as JSON on stdin, `{"name": ..., "input": {...}}`: the document on
    stdout and exit 0; stderr is JSON Lines (warnings, `unblocked`), an error last
    with the command line's exit code."""
    inv.json = True  # a machine interface: stderr speaks JSON Lines, whatever the flags
    try:
        name, arguments = read_call(sys.stdin.buffer if sys.stdin else None)
        timeout = inv.timeout if inv.timeout is not None else env_timeout(DEFAULT_TIMEOUT)
        reply = tools.dispatch(name, arguments, inv.board_dir, tools.caller_from_env(inv.caller_flag), timeout)
    except TaskError as exc:
        return _fail(exc)
    inv.data(reply.document)
    for key, value in reply.events:
        inv.event(key, value, "")
    return _fail(reply.failure) if reply.failure else 0


def _fail(exc: TaskError) -> int:
    error = tools.tool_error(exc)["error"]
    return fail(True, error["code"], error["message"], error["exit"])


def read_call(stream: Any) -> tuple[Any, Any]:
    """The tool name and arguments of one call on stdin; malformed input is a usage error."""
    raw = stream.read(tools.MAX_INPUT * 2 + 1) if stream is not None else b""
    if len(raw) > tools.MAX_INPUT * 2:
        raise UsageError(f"the call on stdin is longer than {tools.MAX_INPUT * 2} bytes")
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
    if harness == "claude":
        planned = [_claude_mcp(root), _claude_hook(root)]
    elif harness == "codex":
        planned = [_codex(root)]
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


def _claude_mcp(root: Path) -> tuple[str, str] | None:
    """`.mcp.json` gains the server `tasks`; a server of that name already there is kept."""
    path = root / ".mcp.json"
    config = _read_json(path)
    servers = _table(config, "mcpServers", path)
    if SERVER_NAME in servers:
        return None
    servers[SERVER_NAME] = {"type": "stdio", **SERVER}
    return ".mcp.json", json.dumps(config, indent=2, ensure_ascii=False) + "\n"


def _claude_hook(root: Path) -> tuple[str, str] | None:
    """`.claude/settings.json` gains a SessionStart hook running `tasks prime`, unless one runs it already."""
    path = root / ".claude" / "settings.json"
    config = _read_json(path)
    hooks = _table(config, "hooks", path)
    starts = hooks.setdefault("SessionStart", [])
    if not isinstance(starts, list):
        raise Corrupt(f"{path}: 'hooks.SessionStart' should be a JSON array", str(path), "type")
    for group in starts:
        entries = group.get("hooks") if isinstance(group, dict) else None
        if isinstance(entries, list) and any(isinstance(e, dict) and e.get("command") == PRIME for e in entries):
            return None
    starts.append({"hooks": [{"type": "command", "command": PRIME}]})
    return ".claude/settings.json", json.dumps(config, indent=2, ensure_ascii=False) + "\n"


def _read_json(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise Corrupt(f"{path}: cannot be read ({exc}); fix it or move it away", str(path), "read") from None
    if not text.strip():
        return {}
    try:
        config = json.loads(text)
    except (ValueError, RecursionError) as exc:
        reason = str(exc).split("\n")[0][:120]
        raise Corrupt(f"{path}: not valid JSON ({reason}); fix it or move it away", str(path), "json") from None
    if not isinstance(config, dict):
        raise Corrupt(f"{path}: should hold a JSON object; fix it or move it away", str(path), "object")
    return config


def _table(config: dict[str, Any], key: str, path: Path) -> dict[str, Any]:
    table = config.setdefault(key, {})
    if not isinstance(table, dict):
        raise Corrupt(f"{path}: {key!r} should be a JSON object", str(path), "type")
    return table


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
CODEX_TABLE = f'[mcp_servers.{SERVER_NAME}]\ncommand = "tasks"\nargs = ["mcp"]\n'


def _codex(root: Path) -> tuple[str, str] | None:
    path = root / ".codex" / "config.toml"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    except (OSError, UnicodeDecodeError) as exc:
        raise Corrupt(f"{path}: cannot be read ({exc}); fix it or move it away", str(path), "read") from None
    if _codex_has_server(text):
        return None
    if _CODEX_INLINE.search(text):
        raise Refused(
            f'{path} defines mcp_servers inline; add tasks = {{ command = "tasks", args = ["mcp"] }} to it by hand'
        )
    new = text + ("\n" if text and not text.endswith("\n") else "") + ("\n" if text.strip() else "") + CODEX_TABLE
    _check_toml(path, text, new)
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


def _check_toml(path: Path, old: str, new: str) -> None:
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
    if parsed.get("mcp_servers", {}).get(SERVER_NAME) != SERVER:
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
