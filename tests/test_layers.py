"""The package is a house in wings, and imports run one way: down.

    cli | web → agents → git → ops → disk → core        views → disk, core

A module may import its own wing and the wings below it; `cli` and `web` stand side by
side (two front ends: neither imports the other, the door hands each what it needs);
`views` stands beside the middle: the front ends (cli, web, agents) import it, and it imports only disk and core
(never ops or git). Type-checking imports count: an arrow the type checker follows is
an arrow a reader follows. Two proofs, both from the real code: the graph of every
import statement in the package (inside functions and `if TYPE_CHECKING:` included),
and each module imported alone in a fresh interpreter (what it loads at once).
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "taskboard"

# Top to bottom, a floor at a time; the wings of one floor stand side by side and never
# import each other. A new module goes into the wing its job names: that is where its
# design is decided (docs/design/architecture.md).
FLOORS = [("cli", "web"), ("agents",), ("git",), ("ops",), ("disk",), ("core",)]
WINGS = [wing for floor in FLOORS for wing in floor]
BESIDE = {"views": {"disk", "core"}}  # a side wing and the wings it may import
FRONT_ENDS = {"cli", "web", "agents"}  # the wings that may import a side wing
DOORS = {"__main__"}  # `python -m taskboard`: what git's merge driver and hooks run; may import any wing
ONLY_USER_OF = {
    "click": "cli.parser",
    "rich": "views.render",
    "mcp": "agents.mcp",
}  # a library and the one module (or package: views.render, one module a view) that may import it


def is_user(module: str, library: str) -> bool:
    """Whether a module is the one (or in the package) ONLY_USER_OF names for the library."""
    user = ONLY_USER_OF[library]
    return module == user or module.startswith(f"{user}.")


def modules() -> list[str]:
    """Every module by its dotted name under the package: `ops.board`, `__main__`."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        found.append(".".join(parts))
    return found


def wing_of(module: str) -> str:
    """The wing a module lives in; the package's own `__init__` and `__main__` are `""`."""
    return module.split(".", maxsplit=1)[0] if "." in module else ""


def may_import(importer: str, imported: str) -> bool:
    """The wing rule, for two modules of the package."""
    mine, theirs = wing_of(importer), wing_of(imported)
    if imported == "__init__" or mine == theirs or importer in DOORS:  # __version__: every wing may ask
        return True
    if mine in BESIDE:
        return theirs in BESIDE[mine]
    if theirs in BESIDE:
        return mine in FRONT_ENDS
    return mine in WINGS and theirs in WINGS and floor_of(mine) < floor_of(theirs)


def floor_of(wing: str) -> int:
    """How far down its wing stands: 0 for the front ends at the top."""
    return next(number for number, floor in enumerate(FLOORS) if wing in floor)


def _path(module: str) -> Path:
    return PACKAGE.joinpath(*module.split(".")).with_suffix(".py")


def _module(dotted: str) -> str:
    """The module a dotted name under the package names: a module (`core.model`), a
    wing's `__init__` (`git` → `git.__init__`), or the module a name lives in
    (`core.model.Patch` → `core.model`, `__version__` → `__init__`)."""
    parts = [part for part in dotted.split(".") if part and part != "__init__"]
    while parts:
        folder = PACKAGE.joinpath(*parts)
        if folder.with_suffix(".py").exists():
            return ".".join(parts)
        if (folder / "__init__.py").exists():
            return ".".join([*parts, "__init__"])
        parts.pop()
    return "__init__"


def _resolve(module: str, node: ast.ImportFrom) -> list[str]:
    """The package modules a relative `from ... import ...` names."""
    parts = module.split(".")  # a wing's __init__ counts as a module inside its wing
    if node.level > len(parts):
        raise AssertionError(f"{module}: an import climbs out of the package")
    here = parts[: -node.level]
    base = ".".join([*here, *(node.module or "").split(".")])
    return [_module(f"{base}.{alias.name}") for alias in node.names]


def imports_of(module: str) -> set[str]:
    """Every module an import statement of the module names (top level, inside a
    function, under `if TYPE_CHECKING:`): package modules as `taskboard.` and their name
    in modules() (`taskboard.core.model`), others by their top name (`click`)."""
    tree = ast.parse(_path(module).read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names = [node.module or ""]
        elif isinstance(node, ast.ImportFrom):
            found.update(f"taskboard.{name}" for name in _resolve(module, node))
        for name in names:
            top, _, rest = name.partition(".")
            found.add(f"taskboard.{_module(rest)}" if top == "taskboard" else top)
    return found


def package_imports(module: str) -> set[str]:
    return {name.removeprefix("taskboard.") for name in imports_of(module) if name.startswith("taskboard.")} - {module}


def graph() -> dict[str, set[str]]:
    return {module: package_imports(module) for module in modules()}


def test_every_module_lives_in_a_wing():
    assert modules(), PACKAGE
    wings = {*WINGS, *BESIDE}
    for module in modules():
        assert wing_of(module) in wings or module in {"__init__", "__main__"}, (
            f"taskboard/{module.replace('.', '/')}.py is in no wing of tests/test_layers.py: give it one"
        )


@pytest.mark.parametrize("module", modules())
def test_imports_only_its_own_wing_and_below(module):
    upward = sorted(other for other in package_imports(module) if not may_import(module, other))
    assert upward == [], f"{module} imports {upward}, which it may not (the wing rule)"


@pytest.mark.parametrize("library", sorted(ONLY_USER_OF))
def test_click_rich_and_mcp_each_have_one_importer(library):
    users = sorted(module for module in modules() if library in imports_of(module))
    assert users and [module for module in users if not is_user(module, library)] == []


def test_the_import_graph_has_no_circle():
    edges = graph()
    assert edges["__main__"], "the walk found no imports at all"
    assert cycle(edges) is None, "import circle: " + " → ".join(cycle(edges) or [])


def cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One circle of the graph, as the modules along it, or None."""
    state: dict[str, int] = {}  # 1 on the current path, 2 done

    def walk(module: str, path: list[str]) -> list[str] | None:
        state[module] = 1
        for other in sorted(edges[module]):
            if state.get(other) == 1:
                return [*path[path.index(other) :], other]
            if other not in state:
                found = walk(other, [*path, other])
                if found:
                    return found
        state[module] = 2
        return None

    for module in sorted(edges):
        if module not in state:
            found = walk(module, [module])
            if found:
                return found
    return None


def test_the_cycle_finder_finds_a_circle():
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b"}, "b": set()}) is None


def test_the_rule_reads_as_drawn():
    assert may_import("cli.parser", "core.model") and not may_import("core.model", "cli.parser")
    assert may_import("agents.tools", "views.messages") and not may_import("ops.board", "views.viewmodel")
    assert may_import("views.plain", "disk.state") and not may_import("views.plain", "ops.board")
    assert not may_import("views.plain", "git.wiring") and not may_import("disk.store", "ops.board")
    assert may_import("web.server", "agents.mcp") and may_import("cli.harness", "agents.mcp")
    assert not may_import("cli.commands", "web.pages") and not may_import("web.actions", "cli.invocation")


def _reachable(module: str) -> set[str]:
    """The modules `module` may load, along arrows the wing rule allows."""
    edges, seen, todo = graph(), {module}, [module]
    while todo:
        here = todo.pop()
        for other in edges[here] - seen:
            if may_import(here, other):
                seen.add(other)
                todo.append(other)
    return seen


LOADED = """
import importlib, json, sys
importlib.import_module(sys.argv[1])
print(json.dumps(sorted(sys.modules)))
"""


@pytest.mark.parametrize("module", modules())
def test_each_module_imports_alone_in_a_fresh_interpreter(module):
    """Importing any module first works (no circle that only an import order hides), it
    loads no module of a wing it may not import, and no click, rich or MCP SDK unless it
    is their one importer. The door too: imported (the `tasks` script), it runs nothing."""
    name = "taskboard" + f".{module}".removesuffix("__init__").rstrip(".")
    done = subprocess.run([sys.executable, "-c", LOADED, name], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    loaded = set(json.loads(done.stdout))
    assert name in loaded
    ours = {other.removeprefix("taskboard.") for other in loaded if other.startswith("taskboard.")}
    assert sorted(other for other in ours if other in modules() and other not in _reachable(module)) == []
    libraries = sorted(lib for lib, user in ONLY_USER_OF.items() if lib in {n.split(".")[0] for n in loaded})
    assert [lib for lib in libraries if not is_user(module, lib)] == []


def _private_names(module: str) -> set[str]:
    """The private names a module defines: functions, classes, methods, assignments."""
    tree = ast.parse(_path(module).read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            found.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            found.add(node.attr)
    return {name for name in found if name.startswith("_") and not name.startswith("__")}


def test_no_private_name_crosses_a_module_border():
    """`_name` is a module's own: another module neither imports it nor reaches it
    through an attribute (`board._require_board`, `claims._offered`). The attribute
    check is by name: a private name this module does not define but another does."""
    defined = {module: _private_names(module) for module in modules()}
    crossing = []
    for module in modules():
        tree = ast.parse(_path(module).read_text(encoding="utf-8"))
        others = set().union(*(names for other, names in defined.items() if other != module))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("taskboard")):
                crossing += [f"{module}: imports {a.name}" for a in node.names if a.name in others]
            elif isinstance(node, ast.Attribute) and node.attr in others and node.attr not in defined[module]:
                crossing += [] if _is_own(node.value) else [f"{module}:{node.lineno}: .{node.attr}"]
    assert crossing == []


def _is_own(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id in ("self", "cls")


# -- the measures of the house (docs/design/architecture.md) -----------------------------
LONGEST_CHAIN = 8  # modules on the longest import chain (the architecture page: levels); only ever down


def longest_chain(edges: dict[str, set[str]]) -> list[str]:
    """The longest chain of imports, module to module, of a graph without a circle."""
    longest: dict[str, list[str]] = {}

    def chain(module: str) -> list[str]:
        if module not in longest:
            longest[module] = [module, *max((chain(other) for other in sorted(edges[module])), key=len, default=[])]
        return longest[module]

    return max((chain(module) for module in sorted(edges)), key=len)


def test_the_house_has_no_circle_no_arrow_up_and_a_short_chain():
    """Counted over every import (type-checking ones included): no circle, no arrow
    back up, and no chain of imports longer than LONGEST_CHAIN modules."""
    edges = graph()
    assert cycle(edges) is None
    assert (
        sorted((module, other) for module, others in edges.items() for other in others if not may_import(module, other))
        == []
    )
    chain = longest_chain(edges)
    assert len(chain) <= LONGEST_CHAIN, " → ".join(chain)


def test_the_longest_chain_is_found():
    assert longest_chain({"a": {"b", "c"}, "b": {"c"}, "c": set()}) == ["a", "b", "c"]


def test_the_measures_see_a_circle_and_an_arrow_up():
    assert cycle({"a": {"b"}, "b": {"a"}}) == ["a", "b", "a"]
    assert not may_import("core.model", "ops.board")
