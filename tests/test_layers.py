"""Imports run one way: entry point → command line → command bodies → views → the
run's context → wording → the core, and the core never imports click, rich or any
module above it. Two proofs, both from the real code: each module imported alone in
a fresh interpreter (what it loads at once), and the graph of every import statement
in the package, the ones inside functions included (what it may load later).
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "taskboard"

# Top to bottom; a module may import its own layer and the layers below it.
# A new module gets a place here: that is where its design is decided.
LAYERS = [
    {"__main__"},
    {"app"},
    {"cli"},
    {"mcp_server"},  # `tasks mcp`: the one importer of the MCP SDK
    {
        "commands",
        "harness",
        "tools",
        "gitwire",
        "driver",
        "syncing",
    },  # command bodies; tools: the board as agent tools, for every harness
    {"render", "plain"},  # views for people: rich, and the plain text that needs none
    {"invocation"},
    {"messages"},
    {
        "__init__",
        "board",
        "check",
        "importing",
        "briefing",
        "store",
        "journal",
        "gates",
        "views",
        "graph",
        "outcome",
        "model",
        "errors",
        "claims",
        "state",
        "watch",
        "merging",
        "remote",
        "index",
        "text",  # user text made safe to show: every view and message calls it
    },  # the core
]
CORE = LAYERS[-1]
ONLY_USER_OF = {
    "click": "cli",
    "rich": "render",
    "mcp": "mcp_server",
}  # a library and the one module that may import it


def modules() -> list[str]:
    return sorted(path.stem for path in PACKAGE.glob("*.py"))


def layer_of(module: str) -> int:
    for rank, layer in enumerate(LAYERS):
        if module in layer:
            return rank
    raise AssertionError(f"taskboard/{module}.py has no layer in tests/test_layers.py: give it one")


def _is_type_checking(node: ast.If) -> bool:
    return isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"


def imports_of(module: str) -> set[str]:
    """Every module an import statement of taskboard/<module>.py names at run time
    (top level or inside a function; `if TYPE_CHECKING:` blocks are for the type
    checker only): package modules by their short name, others by their top name."""
    tree = ast.parse((PACKAGE / f"{module}.py").read_text(encoding="utf-8"))
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                found.add((node.module or "").split(".")[0])
            elif node.module:  # from .store import Store
                found.add("taskboard." + node.module.split(".")[0])
            else:  # from . import graph, render (or a name of the package itself: __version__)
                found.update(
                    "taskboard." + (alias.name if (PACKAGE / f"{alias.name}.py").exists() else "__init__")
                    for alias in node.names
                )
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def package_imports(module: str) -> set[str]:
    return {name.removeprefix("taskboard.") for name in imports_of(module) if name.startswith("taskboard.")}


def test_every_module_is_placed_in_a_layer():
    assert modules(), PACKAGE
    for module in modules():
        layer_of(module)


@pytest.mark.parametrize("module", modules())
def test_imports_only_its_own_layer_and_below(module):
    upward = sorted(other for other in package_imports(module) if layer_of(other) < layer_of(module))
    assert upward == [], f"{module} imports {upward}, which sit above it"


@pytest.mark.parametrize("library", sorted(ONLY_USER_OF))
def test_click_and_rich_each_have_one_importer(library):
    users = sorted(module for module in modules() if library in imports_of(module))
    assert users == [ONLY_USER_OF[library]]


def test_the_import_graph_has_no_cycle():
    graph = {module: package_imports(module) for module in modules()}
    assert graph["app"], "the walk found no imports at all"
    state: dict[str, int] = {}  # 1 on the current path, 2 done

    def walk(module: str, path: list[str]) -> None:
        state[module] = 1
        for other in sorted(graph[module]):
            if state.get(other) == 1:
                raise AssertionError("import cycle: " + " → ".join([*path[path.index(other) :], other]))
            if other not in state:
                walk(other, [*path, other])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            walk(module, [module])


LOADED = """
import importlib, json, sys
importlib.import_module(sys.argv[1])
print(json.dumps(sorted(sys.modules)))
"""


@pytest.mark.parametrize("module", [m for m in modules() if m != "__main__"])
def test_each_module_imports_alone_in_a_fresh_interpreter(module):
    """Importing any module first works (no cycle that only an import order hides), and a
    core module, imported alone, loads no click, no rich and nothing above the core."""
    name = "taskboard" if module == "__init__" else f"taskboard.{module}"
    done = subprocess.run([sys.executable, "-c", LOADED, name], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    loaded = set(json.loads(done.stdout))
    assert name in loaded
    if module in CORE:
        edge = {f"taskboard.{other}" for layer in LAYERS[:-1] for other in layer}
        assert sorted(loaded & (edge | {"click", "rich"})) == []
