"""The house's layers and core's floors (docs/architecture.md): core imports nothing above
it, each layer imports only those below it, each of core's rooms imports only rooms on the
floors below it, and no import circle closes, not even through an import inside a function
(two did, each hiding a module that was both a library and a job). Core keeps at most ten
modules of its own beside its rooms, and no module of the product is over 600 lines.

Imports are read from the source, not run, so an import written inside a function or
under `if TYPE_CHECKING` counts as much as one at the top of a module.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "supervisor"

# Lowest first. A module may import its own package and any package of a lower layer.
LAYERS: list[tuple[str, set[str]]] = [
    ("core", {"core"}),
    (
        "plug-ins and edge helpers",
        {"connectors", "notify", "edge helpers"},
    ),
    ("jobs", {"jobs"}),
    ("interfaces", {"api", "web"}),
    ("live pages", {"live"}),
    ("the demo", {"demo"}),
    ("commands", {"ops"}),
    # Entry points: what Django, Celery, Daphne and beat load by name. One group.
    (
        "entry points",
        {
            "__init__",
            "asgi",
            "beat",
            "broker",
            "celery",
            "log_redaction",
            "settings",
            "urls",
            "web_server",
        },
    ),
]
ENTRY_POINTS = LAYERS[-1][1]
# Root modules that web and the API share; one group, so they may use each other.
EDGE_HELPERS = {
    "api_errors",
    "client_address",
    "rate_limit",
    "unavailable",
    "request_log",
    "checks",
}


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def modules(root: Path = ROOT) -> dict[str, Path]:
    return {module_name(p, root): p for p in sorted(root.rglob("*.py"))}


def group(module: str, found: dict[str, Path]) -> str:
    """The package a module belongs to: supervisor.X.… -> X; a root module is its own."""
    parts = module.split(".")
    if len(parts) == 1:
        return "entry points"  # supervisor/__init__.py
    if len(parts) == 2 and found[module].name != "__init__.py":
        # A root module (supervisor/x.py); the entry points form one group.
        if parts[1] in EDGE_HELPERS:
            return "edge helpers"
        return "entry points" if parts[1] in ENTRY_POINTS else parts[1]
    return parts[1]


def layer_of(group_name: str) -> int:
    for index, (name, members) in enumerate(LAYERS):
        if group_name in members or group_name == name:
            return index
    raise AssertionError(
        f"supervisor.{group_name} is in no layer: add it to LAYERS here and to docs/architecture.md"
    )


def imports(found: dict[str, Path]) -> list[tuple[str, str, int]]:
    """(importer, imported module, line) for every import of this project's modules."""
    edges: set[tuple[str, str, int]] = set()
    for name, path in found.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = name.split(".")
                    if path.name != "__init__.py":
                        base = base[:-1]
                    base = base[: len(base) - (node.level - 1)]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                if target.split(".")[0] != "supervisor":
                    continue
                for alias in node.names:
                    full = f"{target}.{alias.name}"
                    targets.append(full if full in found else target)
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names if a.name.split(".")[0] == "supervisor"]
            for target in targets:
                while target not in found and "." in target:
                    target = target.rsplit(".", 1)[0]
                if target in found and target != name:
                    edges.add((name, target, node.lineno))
    return sorted(edges)


@pytest.fixture(scope="module")
def found():
    return modules()


@pytest.fixture(scope="module")
def edges(found):
    return imports(found)


def test_core_imports_nothing_above_it(found, edges):
    above = [
        f"{found[a].relative_to(ROOT.parent)}:{line} imports {b}"
        for a, b, line in edges
        if group(a, found) == "core" and group(b, found) != "core"
    ]
    assert not above, "core must import only core:\n" + "\n".join(above)


def test_each_layer_imports_only_those_below_it(found, edges):
    wrong = []
    for a, b, line in edges:
        ga, gb = group(a, found), group(b, found)
        if ga == gb:
            continue
        la, lb = layer_of(ga), layer_of(gb)
        if lb >= la:
            wrong.append(
                f"{found[a].relative_to(ROOT.parent)}:{line} imports {b} "
                f"({LAYERS[la][0]} may not import {LAYERS[lb][0]}: {gb})"
            )
    assert not wrong, "imports against the layers:\n" + "\n".join(wrong)


def test_no_import_circle(found, edges):
    graph: dict[str, set[str]] = {name: set() for name in found}
    for a, b, _ in edges:
        graph[a].add(b)
    circles = strongly_connected(graph)
    assert not circles, "import circles, each among:\n" + "\n".join(", ".join(c) for c in circles)


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative; the components of more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_the_checker_sees_a_circle_through_an_import_inside_a_function(tmp_path):
    """The checks above can fail: in a made-up project whose core imports web inside a
    function and web imports core back, both the import from above and the circle are
    found."""
    package = tmp_path / "supervisor"
    for folder in (package, package / "core", package / "web"):
        folder.mkdir()
        (folder / "__init__.py").write_text("")
    (package / "core" / "flags.py").write_text(
        "def open_flag():\n    from supervisor.web import views\n"
    )
    (package / "web" / "views.py").write_text("from ..core.flags import open_flag\n")
    found = modules(package)
    edges = imports(found)
    assert ("supervisor.core.flags", "supervisor.web.views", 2) in edges
    assert ("supervisor.web.views", "supervisor.core.flags", 1) in edges
    graph = {name: {b for a, b, _ in edges if a == name} for name in found}
    assert strongly_connected(graph) == [["supervisor.core.flags", "supervisor.web.views"]]
    assert strongly_connected({"a": {"b"}, "b": set()}) == []


# Core's rooms, lowest floor first. A module may import its own room and any room of a
# lower floor. A module directly in core is a room of its own; core's own modules on one
# floor may import each other.
CORE = ROOT / "core"
FLOORS: list[tuple[str, set[str]]] = [
    ("foundations", {"__init__", "apps", "clock", "var_dir", "outbound", "dispatch"}),
    ("the contract", {"contract"}),
    ("the models", {"models"}),
    ("the store", {"store"}),
    ("the change log and retention", {"changes", "retention"}),
    ("access and facts", {"access", "facts"}),
    ("rules", {"rules"}),
    ("flags", {"flags"}),
    ("ingest and triage", {"ingest", "triage"}),
    ("actions", {"actions"}),
    ("detection and queries", {"detection", "queries"}),
]
MAX_CORE_MODULES = 10
MAX_LINES = 600


def room(module: str) -> str:
    """supervisor.core.facts.snapshot -> facts; supervisor.core.clock -> clock."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 else "__init__"


def is_root_module(room_name: str) -> bool:
    """Core's own modules on one floor form one group; rooms on one floor stay apart."""
    return not (CORE / room_name / "__init__.py").exists()


def floor_of(room_name: str) -> int:
    for index, (_, rooms) in enumerate(FLOORS):
        if room_name in rooms:
            return index
    raise AssertionError(
        f"supervisor.core.{room_name} is on no floor: add it to FLOORS here and to "
        "docs/architecture.md"
    )


def test_each_core_room_imports_only_rooms_below_it(found, edges):
    wrong = []
    for a, b, line in edges:
        if group(a, found) != "core" or group(b, found) != "core":
            continue
        ra, rb = room(a), room(b)
        if ra == rb or ra == "migrations":
            continue
        fa, fb = floor_of(ra), floor_of(rb)
        if fb > fa or (fb == fa and not (is_root_module(ra) and is_root_module(rb))):
            wrong.append(
                f"{found[a].relative_to(ROOT.parent)}:{line} imports {b} "
                f"({FLOORS[fa][0]} may not import {FLOORS[fb][0]}: core.{rb})"
            )
    assert not wrong, "imports against core's floors:\n" + "\n".join(wrong)


def test_every_core_room_says_what_it_holds_and_may_import():
    for package in sorted(p for p in CORE.iterdir() if (p / "__init__.py").exists()):
        if package.name == "migrations":
            continue
        floor_of(package.name)
        doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text()))
        assert doc and "Imports" in doc, (
            f"core/{package.name}/__init__.py: say what it holds and imports"
        )


def test_core_keeps_few_modules_of_its_own():
    own = sorted(p.name for p in CORE.glob("*.py"))
    assert len(own) <= MAX_CORE_MODULES, f"{len(own)} modules directly in core: {own}"


def test_no_module_is_over_600_lines():
    long = [
        f"{path.relative_to(ROOT.parent)}: {lines} lines"
        for path in sorted(ROOT.rglob("*.py"))
        if "migrations" not in path.parts
        and (lines := len(path.read_text().splitlines())) > MAX_LINES
    ]
    assert not long, f"modules over {MAX_LINES} lines:\n" + "\n".join(long)


def test_the_floors_can_fail():
    """A made-up import from facts up to detection is on the wrong floor."""
    assert floor_of("facts") < floor_of("detection")
    assert room("supervisor.core.facts.snapshot") == "facts"
    assert room("supervisor.core.clock") == "clock"
