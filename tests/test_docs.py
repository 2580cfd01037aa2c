"""The docs cannot go stale: the generated reference is what the code says, every example
marked runnable is run in a scratch repository and its shown output compared, every
`tasks` command line in the docs names options the command has, every relative link
leads somewhere, and the README stays a front page."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import click
import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
sys.path.insert(0, str(ROOT / "scripts"))
import reference  # noqa: E402

RUNNABLE = "<!-- runnable -->"


def doc_pages() -> list[Path]:
    """The pages people read: the README and every page of docs/ but the contract (kept as given)."""
    return [README, *sorted(p for p in DOCS.rglob("*.md") if p.name != "DESIGN.md")]


def name(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


# -- the generated reference ----------------------------------------------------------


def test_the_generated_reference_is_what_the_code_says():
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "reference.py"), "--check"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr


def _sections(text: str) -> dict[str, str]:
    parts = re.split(r"^## (.+)$", text, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def test_the_command_reference_names_every_command_and_option():
    """Independent of the generator's own check: walk the click tree and find each name."""
    cli = reference.the_cli()
    sections = _sections(reference.PAGES["commands"].read_text(encoding="utf-8"))
    for option in cli.params:
        if isinstance(option, click.Option) and option.name != "help":
            assert f"`{option.opts[0]}`" in sections["Global options"], option.opts
    for path, command, _ctx in reference.walk(cli, click.Context(cli, info_name="tasks")):
        command_name = " ".join(path)
        assert command_name in sections, f"`tasks {command_name}` is missing from the reference"
        for param in command.params:
            if isinstance(param, click.Option) and not param.hidden and param.name != "help":
                where = sections[command_name] + sections["Global options"]
                assert f"`{param.opts[0]}`" in where, f"tasks {command_name} {param.opts[0]}"
    assert any(len(path) > 1 for path, _, _ in reference.walk(cli, click.Context(cli, info_name="tasks")))


def test_the_tool_reference_names_every_tool_and_argument():
    tools = reference.the_tools()
    sections = _sections(reference.PAGES["tools"].read_text(encoding="utf-8"))
    for definition in tools.definitions("anthropic"):
        assert definition["name"] in sections
        for argument in definition["input_schema"]["properties"]:
            assert f"`{argument}`" in sections[definition["name"]], (definition["name"], argument)


# -- command lines in the docs use real commands and options ------------------------


def _code_blocks(text: str) -> list[tuple[str, str]]:
    return re.findall(r"^```(\w*)\n(.*?)^```", text, flags=re.M | re.S)


def _tasks_lines(page: Path) -> list[str]:
    """Every `tasks …` invocation in a page's shell blocks (after a `$ ` prompt, `&&`, `;`,
    `|`, `$(`, `do`, `then`), its comment cut off."""
    found = []
    for lang, body in _code_blocks(page.read_text(encoding="utf-8")):
        if lang not in ("sh", "console", "bash", ""):
            continue
        for line in body.splitlines():
            line = line.removeprefix("$ ")
            code = re.split(r"\s#\s|\s#$|^#", line)[0]
            for piece in re.split(r"&&|\|\||;|\||\$\(|\bdo\b|\bthen\b|\belse\b", code):
                piece = piece.strip().rstrip(")")
                piece = re.sub(r"^([A-Z_]+=\S+\s+)+", "", piece)  # TASKS_OWNER=agent-1 tasks …
                if re.match(r"tasks(\s|$)", piece):
                    found.append(piece)
    return found


def _options(command: click.Command) -> dict[str, click.Option]:
    return {name: p for p in command.params if isinstance(p, click.Option) for name in (*p.opts, *p.secondary_opts)}


def _check_command_line(cli: click.Group, line: str) -> str | None:
    try:
        words = shlex.split(line)[1:]
    except ValueError:
        return None  # an unfinished quote across lines: not a command line to check
    command, skip = None, False
    for word in words:
        if skip:
            skip = False
        elif word.startswith("-") and word != "-":
            option = word.split("=")[0]
            allowed = _options(cli) | (_options(command) if command else {})
            if option not in allowed:
                return f"{line!r}: `{option}` is no option of `tasks {command.name if command else ''}`"
            takes_value = not allowed[option].is_flag and not allowed[option]._flag_needs_value
            skip = takes_value and "=" not in word
        elif command is None and re.fullmatch(r"[a-z-]+", word):
            if word not in cli.commands:
                return f"{line!r}: `{word}` is no command of tasks"
            command = cli.commands[word]
        elif isinstance(command, click.Group) and word in command.commands:
            command = command.commands[word]  # tasks hook add …
    return None


@pytest.mark.parametrize("page", doc_pages(), ids=name)
def test_every_tasks_command_line_in_the_docs_is_one_tasks_accepts(page):
    cli = reference.the_cli()
    wrong = [problem for line in _tasks_lines(page) if (problem := _check_command_line(cli, line))]
    assert not wrong, "\n".join(wrong)


def test_the_command_line_check_sees_a_wrong_option():
    cli = reference.the_cli()
    assert _check_command_line(cli, "tasks claim --as alice --lease 15m") is None
    assert _check_command_line(cli, "tasks --as alice claim 7 --wait") is None
    assert "no option" in _check_command_line(cli, "tasks claim --owners alice")
    assert "no command" in _check_command_line(cli, "tasks clam")


# -- links --------------------------------------------------------------------------


def _slug(heading: str) -> str:
    """A heading's anchor as GitHub and MkDocs make it (for the headings these pages use)."""
    text = re.sub(r"[`*_]|\[|\]\([^)]*\)", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.M | re.S)
    return {_slug(h) for h in re.findall(r"^#+ (.+)$", text, flags=re.M)}


@pytest.mark.parametrize("page", [*doc_pages(), DOCS / "DESIGN.md"], ids=name)
def test_every_relative_link_leads_somewhere(page):
    text = re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.M | re.S)
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue  # a URL: not checked offline
        path, _, anchor = target.partition("#")
        goal = (page.parent / path).resolve() if path else page
        if not goal.exists():
            broken.append(f"{target}: no such file")
        elif anchor and goal.suffix == ".md" and anchor not in _anchors(goal):
            broken.append(f"{target}: no heading #{anchor} in {name(goal)}")
    assert not broken, f"{name(page)}: " + "; ".join(broken)


# -- the front page -----------------------------------------------------------------


def test_the_readme_is_a_front_page():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    first_block = _code_blocks(text)[0][1]
    assert first_block.startswith("make demo") and "\nmake test" in first_block
    for jargon in (r"\bs12\b", r"\bissues? \d", r"§"):
        assert not re.search(jargon, text), f"the README speaks of {jargon}"


# -- runnable examples --------------------------------------------------------------


def runnable_blocks(page: Path) -> list[str]:
    text = page.read_text(encoding="utf-8")
    return re.findall(re.escape(RUNNABLE) + r"\n```console\n(.*?)^```", text, flags=re.M | re.S)


def _steps(block: str) -> list[tuple[str, list[str]]]:
    steps: list[tuple[str, list[str]]] = []
    for line in block.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        elif line.startswith("> ") and steps and not steps[-1][1]:  # a command's next line, as the shell prompts it
            steps[-1] = (steps[-1][0] + "\n" + line[2:], [])
        else:
            assert steps, f"output before any command: {line!r}"
            steps[-1][1].append(line)
    return steps


def _matches(shown: list[str], got: list[str]) -> bool:
    """`...` alone on a line stands for any lines (none included); within a line, for any text."""
    if not shown:
        return not got
    if shown[0] == "...":
        return any(_matches(shown[1:], got[i:]) for i in range(len(got) + 1))
    if not got:
        return False
    pattern = ".*".join(re.escape(part) for part in shown[0].split("..."))
    return re.fullmatch(pattern, got[0]) is not None and _matches(shown[1:], got[1:])


def _scratch_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TASKS_", "GIT_"))}
    bin_dir = str(Path(sys.executable).parent)
    env |= {"PATH": os.pathsep.join([bin_dir, env.get("PATH", "")]), "HOME": str(home), "NO_COLOR": "1"}
    env |= {"COLUMNS": "80", "LINES": "24", "PYTHONUNBUFFERED": "1", "GIT_CONFIG_NOSYSTEM": "1"}
    env |= {"GIT_AUTHOR_NAME": "you", "GIT_COMMITTER_NAME": "you", "EDITOR": "true"}
    env |= {"GIT_AUTHOR_EMAIL": "you@example.org", "GIT_COMMITTER_EMAIL": "you@example.org"}
    return env


RUNNABLE_PAGES = [page for page in doc_pages() if runnable_blocks(page)]


def test_there_are_runnable_examples():
    assert README in RUNNABLE_PAGES and len(RUNNABLE_PAGES) >= 3


@pytest.mark.parametrize("page", RUNNABLE_PAGES, ids=name)
def test_the_runnable_examples_show_what_they_print(page, tmp_path):
    """Each page's runnable blocks, in order, in one fresh git repository (a page tells one
    story): every command's stdout and stderr together, as a person sees them piped."""
    (tmp_path / "home").mkdir()
    repo = tmp_path / "project"
    env = _scratch_env(tmp_path / "home")
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True, env=env)
    for block in runnable_blocks(page):
        for command, shown in _steps(block):
            done = subprocess.run(
                ["bash", "-c", command],
                cwd=repo,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                timeout=120,
            )
            got = done.stdout.splitlines()
            assert _matches(shown, got), (
                f"{name(page)}: `$ {command}` printed (exit {done.returncode}):\n"
                + "\n".join(got)
                + "\n-- where the page shows:\n"
                + "\n".join(shown)
            )


def test_a_command_may_go_on_over_lines():
    assert _steps("$ cat > a <<'EOF'\n> x\n> EOF\n$ cat a\nx") == [("cat > a <<'EOF'\nx\nEOF", []), ("cat a", ["x"])]


def test_the_output_matcher():
    assert _matches(["a", "...", "d"], ["a", "b", "c", "d"])
    assert _matches(["board ready at .../.tasks"], ["board ready at /tmp/x/.tasks"])
    assert _matches(["...", "x"], ["x"])
    assert not _matches(["a", "d"], ["a", "b", "d"])
    assert not _matches(["a"], ["a", "b"])
