"""`tasks setup claude|codex` in real git repositories: the harness configuration
written once, every entry already there kept, and a second run changing nothing."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

try:
    import tomllib
except ImportError:  # Python 3.10: the text is checked by hand below
    tomllib = None  # type: ignore[assignment]

TASKS = [sys.executable, "-m", "taskboard"]


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "src").mkdir()
    return root


def setup(cwd, harness, *flags):
    return subprocess.run([*TASKS, "setup", harness, *flags], cwd=cwd, capture_output=True, timeout=60)


def files(root) -> dict[str, bytes]:
    """Every file of the work tree but git's own, with its bytes."""
    found = {}
    for path in root.rglob("*"):
        name = str(path.relative_to(root))
        if path.is_file() and not name.startswith(".git/"):
            found[name] = path.read_bytes()
    return found


def test_claude_in_a_fresh_repository(repo):
    done = setup(repo / "src", "claude")  # from a subfolder: written at the top of the work tree
    assert done.returncode == 0, done.stderr
    assert json.loads((repo / ".mcp.json").read_text()) == {
        "mcpServers": {"tasks": {"type": "stdio", "command": "tasks", "args": ["mcp"]}}
    }
    settings = json.loads((repo / ".claude" / "settings.json").read_text())
    assert settings == {"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "tasks prime"}]}]}}
    assert not (repo / "src" / ".mcp.json").exists()
    assert sorted(files(repo)) == [".claude/settings.json", ".mcp.json"]


def test_claude_again_changes_nothing(repo):
    setup(repo, "claude")
    before = files(repo)
    again = setup(repo, "claude", "--json")
    assert again.returncode == 0
    assert json.loads(again.stdout) == {"root": str(repo), "changed": []}
    assert files(repo) == before


def test_claude_keeps_every_entry_already_there(repo):
    mcp = {"mcpServers": {"github": {"command": "gh-mcp", "args": []}}, "other": [1, 2]}
    (repo / ".mcp.json").write_text(json.dumps(mcp))
    (repo / ".claude").mkdir()
    settings = {
        "permissions": {"allow": ["Bash(ls)"]},
        "hooks": {
            "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "echo hi"}]}],
            "Stop": [{"hooks": [{"type": "command", "command": "make lint"}]}],
        },
    }
    (repo / ".claude" / "settings.json").write_text(json.dumps(settings))
    done = setup(repo, "claude", "--json")
    assert json.loads(done.stdout)["changed"] == [".mcp.json", ".claude/settings.json"]
    written = json.loads((repo / ".mcp.json").read_text())
    assert written["mcpServers"]["github"] == mcp["mcpServers"]["github"] and written["other"] == [1, 2]
    assert written["mcpServers"]["tasks"]["args"] == ["mcp"]
    hooks = json.loads((repo / ".claude" / "settings.json").read_text())
    assert hooks["permissions"] == settings["permissions"]
    assert hooks["hooks"]["Stop"] == settings["hooks"]["Stop"]
    assert hooks["hooks"]["SessionStart"] == [
        *settings["hooks"]["SessionStart"],
        {"hooks": [{"type": "command", "command": "tasks prime"}]},
    ]


def test_claude_keeps_a_tasks_server_the_user_configured(repo):
    mine = {"mcpServers": {"tasks": {"command": "/opt/bin/tasks", "args": ["--as", "me", "mcp"]}}}
    (repo / ".mcp.json").write_text(json.dumps(mine))
    setup(repo, "claude")
    assert json.loads((repo / ".mcp.json").read_text()) == mine


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        (".mcp.json", "{not json", "not valid JSON"),
        (".mcp.json", "[1]", "should hold a JSON object"),
        (".mcp.json", '{"mcpServers": []}', "'mcpServers' should be a JSON object"),
        (".claude/settings.json", '{"hooks": {"SessionStart": {}}}', "'hooks.SessionStart' should be a JSON array"),
    ],
)
def test_claude_refuses_a_file_it_cannot_read_and_writes_nothing(repo, name, content, message):
    (repo / ".claude").mkdir()
    (repo / name).write_text(content)
    before = files(repo)
    done = setup(repo, "claude", "--json")
    assert done.returncode == 6
    error = json.loads(done.stderr.decode().splitlines()[-1])["error"]
    assert error["code"] == "corrupt" and message in error["message"] and name.split("/")[-1] in error["message"]
    assert files(repo) == before


def codex_servers(repo) -> dict:
    text = (repo / ".codex" / "config.toml").read_text()
    if tomllib is None:
        return {"tasks": {}} if '[mcp_servers.tasks]\ncommand = "tasks"\nargs = ["mcp"]\n' in text else {}
    return tomllib.loads(text).get("mcp_servers", {})


def test_codex_in_a_fresh_repository_and_again(repo):
    done = setup(repo / "src", "codex")
    assert done.returncode == 0, done.stderr
    assert (repo / ".codex" / "config.toml").read_text() == '[mcp_servers.tasks]\ncommand = "tasks"\nargs = ["mcp"]\n'
    before = files(repo)
    again = setup(repo, "codex")
    assert again.returncode == 0 and b"nothing changed" in again.stderr
    assert files(repo) == before


def test_codex_keeps_the_users_configuration_byte_for_byte(repo):
    (repo / ".codex").mkdir()
    mine = (
        '# my settings\nmodel = "o4"\n\n[mcp_servers.docs]\ncommand = "docs-mcp"\nargs = ["--port", "0"]\n'
        '[mcp_servers.docs.env]\nTOKEN = "x"  # trailing comment'
    )
    (repo / ".codex" / "config.toml").write_text(mine)
    assert setup(repo, "codex").returncode == 0
    text = (repo / ".codex" / "config.toml").read_text()
    assert text.startswith(mine + "\n")
    if tomllib is not None:
        parsed = tomllib.loads(text)
        assert parsed["model"] == "o4"
        assert parsed["mcp_servers"]["docs"] == {"command": "docs-mcp", "args": ["--port", "0"], "env": {"TOKEN": "x"}}
        assert parsed["mcp_servers"]["tasks"] == {"command": "tasks", "args": ["mcp"]}
    before = files(repo)
    setup(repo, "codex")
    assert files(repo) == before


@pytest.mark.parametrize(
    "mine",
    [
        '[mcp_servers.tasks]\ncommand = "/opt/tasks"\nargs = ["mcp"]\n',
        '[mcp_servers."tasks"]\ncommand = "/opt/tasks"\n',
        '[mcp_servers]\ntasks = { command = "/opt/tasks", args = ["mcp"] }\n',
        '[mcp_servers]\nother = { command = "x" }\ntasks.command = "/opt/tasks"\n',
        'mcp_servers.tasks.command = "/opt/tasks"\n',
        '[mcp_servers.tasks.env]\nTASKS_OWNER = "codex"\n',
    ],
)
def test_codex_keeps_a_tasks_server_in_any_spelling(repo, mine):
    (repo / ".codex").mkdir()
    (repo / ".codex" / "config.toml").write_text(mine)
    done = setup(repo, "codex", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["changed"] == []
    assert (repo / ".codex" / "config.toml").read_text() == mine


def test_codex_refuses_what_it_cannot_extend_safely(repo):
    (repo / ".codex").mkdir()
    inline = 'mcp_servers = { docs = { command = "docs" } }\n'
    (repo / ".codex" / "config.toml").write_text(inline)
    done = setup(repo, "codex", "--json")
    assert done.returncode == 4
    assert "inline" in json.loads(done.stderr.decode().splitlines()[-1])["error"]["message"]
    assert (repo / ".codex" / "config.toml").read_text() == inline


def test_codex_refuses_a_file_that_is_not_toml(repo):
    (repo / ".codex").mkdir()
    (repo / ".codex" / "config.toml").write_text("model = \n")
    done = setup(repo, "codex")
    if tomllib is None:  # Python 3.10 has no TOML parser: the file is extended, never rewritten
        assert (repo / ".codex" / "config.toml").read_text().startswith("model = \n")
        return
    assert done.returncode == 6
    assert b"not valid TOML" in done.stderr
    assert (repo / ".codex" / "config.toml").read_text() == "model = \n"


def test_setup_names_an_unknown_harness(repo):
    done = setup(repo, "vim")
    assert done.returncode == 2
    assert b"claude" in done.stderr and b"codex" in done.stderr


# -- what real use found (issue 19) --------------------------------------------------


def kept_around(old: bytes, new: bytes) -> bytes:
    """What setup inserted, given that every byte of `old` is still there around it."""
    prefix = 0
    while prefix < len(old) and old[prefix] == new[prefix]:
        prefix += 1
    suffix = len(old) - prefix
    assert new[len(new) - suffix :] == old[prefix:], "setup changed bytes it did not mean to"
    return new[prefix : len(new) - suffix]


def test_codex_keeps_crlf_and_every_byte(repo):
    (repo / ".codex").mkdir()
    mine = b'# mine\r\nmodel = "o4"\r\n\r\n[mcp_servers.docs]\r\ncommand = "docs-mcp"\r\n'
    (repo / ".codex" / "config.toml").write_bytes(mine)
    assert setup(repo, "codex").returncode == 0
    written = (repo / ".codex" / "config.toml").read_bytes()
    assert written.startswith(mine)
    assert kept_around(mine, written) == b'\r\n[mcp_servers.tasks]\r\ncommand = "tasks"\r\nargs = ["mcp"]\r\n'
    if tomllib is not None:
        assert tomllib.loads(written.decode())["mcp_servers"]["tasks"] == {"command": "tasks", "args": ["mcp"]}


def test_claude_keeps_the_files_layout_and_line_endings(repo):
    mcp = b'{\r\n    "mcpServers": {\r\n        "github": { "command": "gh-mcp" }\r\n    },\r\n    "x": 1\r\n}\r\n'
    (repo / ".mcp.json").write_bytes(mcp)
    (repo / ".claude").mkdir()
    settings = b'{"permissions": {"allow": ["Bash(ls)"]}}'
    (repo / ".claude" / "settings.json").write_bytes(settings)
    assert setup(repo, "claude").returncode == 0
    written = (repo / ".mcp.json").read_bytes()
    assert kept_around(mcp, written) == (
        b',\r\n        "tasks": {\r\n            "type": "stdio",\r\n            "command": "tasks",\r\n'
        b'            "args": [\r\n                "mcp"\r\n            ]\r\n        }'
    )
    assert json.loads(written)["mcpServers"]["tasks"] == {"type": "stdio", "command": "tasks", "args": ["mcp"]}
    hooks = (repo / ".claude" / "settings.json").read_bytes()
    assert kept_around(settings, hooks).startswith(b', "hooks": ')
    assert json.loads(hooks)["hooks"] == {"SessionStart": [{"hooks": [{"type": "command", "command": "tasks prime"}]}]}
    before = files(repo)
    assert setup(repo, "claude").returncode == 0
    assert files(repo) == before


def test_setup_writes_dir_and_as_into_the_server_it_configures(repo):
    """`tasks --dir B --as agent-7 setup claude`: the server the harness starts (from the
    project root) serves board B as agent-7; the SessionStart hook primes the same board."""
    board = repo / "src" / "B"
    for harness in ("claude", "codex"):
        done = subprocess.run(
            [*TASKS, "--dir", "B", "--as", "agent-7", "setup", harness], cwd=repo / "src", capture_output=True
        )
        assert done.returncode == 0, done.stderr
    server = json.loads((repo / ".mcp.json").read_text())["mcpServers"]["tasks"]
    assert server["args"] == ["--dir", "src/B", "--as", "agent-7", "mcp"]
    hook = json.loads((repo / ".claude" / "settings.json").read_text())["hooks"]["SessionStart"][0]["hooks"][0]
    assert hook["command"] == "tasks --dir src/B --as agent-7 prime"
    if tomllib is not None:
        assert codex_servers(repo)["tasks"] == {"command": "tasks", "args": server["args"]}

    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    async def as_the_harness_starts_it():
        params = StdioServerParameters(command=sys.executable, args=["-m", "taskboard", *server["args"]], cwd=repo)
        async with Client(params) as client:
            await client.call_tool("task_create", {"subject": "from the harness"})
            return await client.call_tool("task_claim", {})

    import anyio

    claimed = json.loads(anyio.run(as_the_harness_starts_it).content[0].text)
    assert claimed["owner"] == "agent-7"
    assert json.loads((board / "task_1.json").read_text())["owner"] == "agent-7"
