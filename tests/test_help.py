"""Every command and every option says what it is for: a walk of the real click tree,
so a command or option added without help text fails here; and `--help` of each
command answers through the real entry point."""

from __future__ import annotations

import click
import pytest

from taskboard.cli.parser import cli


def commands(group: click.Group = cli, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], click.Command]]:
    found: list[tuple[tuple[str, ...], click.Command]] = [(path, group)]
    for name, command in sorted(group.commands.items()):
        if isinstance(command, click.Group):
            found += commands(command, (*path, name))
        elif not command.hidden:
            found.append(((*path, name), command))
    return found


def test_the_walk_finds_the_commands():
    names = {" ".join(path) for path, _ in commands()}
    assert {"", "create", "get", "update", "list", "ready", "claim", "delete", "board", "graph", "check"} <= names


@pytest.mark.parametrize(("path", "command"), commands(), ids=lambda x: " ".join(x) if isinstance(x, tuple) else "")
def test_every_command_and_option_has_help(path, command):
    assert (command.help or "").strip(), f"`tasks {' '.join(path)}` has no help text"
    for param in command.params:
        if isinstance(param, click.Option) and not param.hidden:
            assert (param.help or "").strip(), f"`tasks {' '.join(path)}` option {param.opts[0]} has no help text"


@pytest.mark.parametrize("path", [path for path, _ in commands()], ids=" ".join)
def test_help_answers_for_every_command(run, path):
    result = run(*path, "--help")
    assert result.stdout.startswith("Usage: tasks")
    command: click.Command = cli
    for name in path:  # a subcommand (`hook list`) is found through its group
        assert isinstance(command, click.Group)
        command = command.commands[name]
    summary = " ".join((command.help or "").split("\n\n")[0].split())
    assert summary in " ".join(result.stdout.split())  # click rewraps the text
