"""The core's results as data, as the coming front ends (journal, `tasks call`, MCP)
will read them: an Outcome's records written, tasks unblocked, events and notes;
errors with reasons; and no message of the core naming a command-line flag."""

from __future__ import annotations

import ast
import json
import re

import pytest
from test_layers import _path, modules, wing_of

from taskboard.core.errors import Refused, UsageError
from taskboard.core.model import FIELDS, KEY_ORDER, REMOVE, Patch
from taskboard.core.outcome import Event, Note
from taskboard.disk.store import Store
from taskboard.ops.board import Board
from taskboard.views.messages import error_document, error_text, note_text


@pytest.fixture
def board(tmp_path) -> Board:
    return Board(Store(tmp_path / ".tasks"), caller="alice")


def test_completing_a_hub_returns_what_it_wrote_freed_and_did(board):
    hub = board.create("hub").record["id"]
    for n in range(3):
        board.create(f"dependent {n}", blocked_by=[hub])
    outcome = board.update(hub, Patch(status="completed"))
    assert [record["id"] for record in outcome.written] == [1, 2, 3, 4]
    on_disk = {r["id"]: r for r in (json.loads(p.read_text()) for p in board.store.root.glob("task_*.json"))}
    assert outcome.written == [on_disk[i] for i in (1, 2, 3, 4)]
    assert outcome.unblocked == [2, 3, 4]
    assert outcome.events == [Event(1, "completed", old="pending")]
    assert outcome.notes == []


def test_an_edit_reports_the_fields_it_changed_and_the_edges(board):
    board.create("a")
    board.create("b")
    outcome = board.update(1, Patch(subject="A", owner="bob", metadata={"k": 1}, add_blocks=[2]))
    assert outcome.events == [
        Event(1, "edited", fields=["metadata", "owner", "subject"]),
        Event(2, "linked", blocker=1, dependent=2),
    ]
    unchanged = board.update(1, Patch(subject="A", metadata={"missing": REMOVE}))
    assert (unchanged.events, unchanged.written) == ([], [])


def test_removing_an_edge_that_is_not_there_is_a_coded_note(board):
    board.create("a")
    board.create("b")
    outcome = board.update(2, Patch(remove_blocked_by=[1]))
    assert outcome.notes == [Note("not-linked", "#1 did not block #2", blocker=1, dependent=2)]
    assert note_text(outcome.notes[0]) == "#1 did not block #2"


def test_recovery_comes_back_as_notes_not_a_side_channel(board):
    board.create("a")
    scratch = board.store.root / ".scratch"
    (scratch / ".task_1.json.4242.tmp").write_text("{")
    outcome = board.get(1)
    assert [note.code for note in outcome.notes] == ["leftovers-removed"]
    assert outcome.notes[0].data == {"count": 1}
    assert board.get(1).notes == []  # told once: the next read has nothing to say


def test_a_refusal_carries_its_reason_and_the_cli_adds_the_flag(board):
    board.create("a")
    Board(board.store, caller="bob").claim(1, "bob")
    with pytest.raises(Refused) as caught:
        board.update(1, Patch(status="completed"))
    error = caught.value
    assert (error.reason, error.data) == ("held", {"task": 1, "holder": "bob", "caller": "alice"})
    assert "--" not in error.message
    assert error_text(error) == error.message + " (pass --force to override)"
    assert error_document(error) == {"code": "refused", "message": error_text(error), "exit": 4}
    forced = board.update(1, Patch(status="completed"), force=True)
    assert Event(1, "forced", holder="bob", by="alice") in forced.events


def test_a_patch_checks_its_values_before_any_file_is_read(board):
    with pytest.raises(UsageError) as caught:
        board.update(99, Patch(add_blocks=[2], remove_blocks=[2]))
    assert (caught.value.reason, caught.value.data) == ("add-and-remove", {"key": "blocks", "ids": [2]})
    assert error_text(caught.value) == "--add-blocks and --remove-blocks both name #2; say one"
    with pytest.raises(TypeError):
        Patch(uid="0" * 12)  # not a field a caller may set
    with pytest.raises(UsageError):
        Patch(subject="").check()


def test_fields_are_declared_once_in_the_contracts_order():
    assert tuple(field.name for field in FIELDS) == KEY_ORDER
    assert KEY_ORDER == (
        "id",
        "subject",
        "description",
        "status",
        "blockedBy",
        "blocks",
        "owner",
        "uid",
        "metadata",
        "createdAt",
        "updatedAt",
    )


FLAG = re.compile(r"(?<![\w-])--[a-z]")


def _strings(tree: ast.AST) -> list[str]:
    """Every string literal, f-string parts included, except docstrings."""
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    git_args = {id(part) for part in _git_arguments(tree)}
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
        and id(node) not in git_args
    ]


def _git_arguments(tree: ast.AST) -> list[ast.AST]:
    """The arguments of `git.run(...)` / `git.out(...)` calls (taskboard.git.claimrefs runs git
    with its own options): words for git, not messages for a person."""
    found: list[ast.AST] = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("run", "out")
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "git"
        ):
            for arg in node.args:
                found += list(ast.walk(arg))
    return found


# the board below its front ends: what it says is worded by each of them
FLAG_FREE = sorted(
    {m for m in modules() if wing_of(m) in ("ops", "disk", "core")}
    | {"__init__", "views.viewmodel", "views.text", "git.claimrefs"}
)


@pytest.mark.parametrize("module", FLAG_FREE)
def test_no_message_of_the_core_names_a_flag(module):
    source = _path(module).read_text(encoding="utf-8")
    strings = _strings(ast.parse(source))
    assert [text for text in strings if FLAG.search(text)] == []


def test_the_flag_finder_finds_flags():
    assert _strings(ast.parse('def f():\n    """--doc"""\n    return f"x {1} (pass --force)"\n')) == [
        "x ",
        " (pass --force)",
    ]
    assert FLAG.search(" (pass --force)") and not FLAG.search("task-ids --")
