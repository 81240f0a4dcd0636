"""Whether a result reached the parent, and which is the latest result, are decided in
`core/facts/reading.py` alone: everything else reads its named predicates.

The source of supervisor/ is read (not run) for the code that decides it elsewhere:

- `_wakes_to_parent`, the list every such decision started from;
- a function that reads a wake's delivery (`delivered`, `delivered_at`, `delivered_event`)
  and compares the task a wake names (`source_task`): whether a task wake of T was
  delivered to the parent;
- a comparison of `normalized(x.summary)` or `normalized(x.text)`: whether a handed
  text is a run's result;
- a module's function named as one of the old deciders (`reaching_wake`,
  `has_reached_parent`, `latest_result_run`, ...) that does more than return what the
  reading says.

Each offence is named by file and line."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3] / "supervisor"
READING = {ROOT / "core" / "facts" / "reading.py"}

DELIVERY = {"delivered", "delivered_at", "delivered_event"}
TEXTS = {"summary", "text"}
# The names the decisions had before the reading; elsewhere only thin readers may bear them.
DECIDERS = {
    "reaching_wake",
    "has_reached_parent",
    "handed",
    "delivered_by_hand",
    "latest_result_run",
    "latest_result",
    "result_run",
    "run_reached",
    "parent_holds_result",
    "reached",
    "_latest",
}
THIN = "a thin reader returns what `reading` says: no loop, comparison or condition"


def _attributes(node: ast.AST) -> set[str]:
    return {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}


def _compares(node: ast.AST) -> list[ast.Compare]:
    return [n for n in ast.walk(node) if isinstance(n, ast.Compare)]


def _normalizes_a_text(node: ast.AST) -> bool:
    return any(
        isinstance(n, ast.Call)
        and getattr(n.func, "id", getattr(n.func, "attr", None)) == "normalized"
        and any(isinstance(a, ast.Attribute) and a.attr in TEXTS for a in n.args)
        for n in ast.walk(node)
    )


def _reads_the_reading(body: list[ast.stmt]) -> bool:
    return any(
        isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "reading"
        for stmt in body
        for n in ast.walk(stmt)
    )


def _thin(function: ast.FunctionDef) -> bool:
    body = function.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    deciding = (ast.For, ast.While, ast.comprehension, ast.Compare, ast.If, ast.BoolOp)
    return _reads_the_reading(body) and not any(
        isinstance(n, deciding) for stmt in body for n in ast.walk(stmt)
    )


def offences(path: Path, root: Path) -> list[str]:
    """Where the module at `path` decides what the reading decides, as "file:line why"."""
    tree = ast.parse(path.read_text(), filename=str(path))
    where = path.relative_to(root.parent)
    top_level = {id(node) for node in tree.body}
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name | ast.Attribute | ast.FunctionDef):
            name = getattr(node, "id", None) or getattr(node, "attr", None) or node.name
            if name == "_wakes_to_parent":
                found.append((node.lineno, "lists the wakes to the parent itself"))
        if isinstance(node, ast.FunctionDef):
            read = _attributes(node)
            names_task = any("source_task" in _attributes(c) for c in _compares(node))
            if read & DELIVERY and names_task:
                why = f"{node.name}() judges whether a task wake of a task was delivered"
                found.append((node.lineno, why))
            if id(node) in top_level and node.name in DECIDERS and not _thin(node):
                found.append((node.lineno, f"{node.name}() decides it: {THIN}"))
        if isinstance(node, ast.Compare) and _normalizes_a_text(node):
            found.append((node.lineno, "compares a handed text with a run's result"))
    return [f"{where}:{line} {why}" for line, why in sorted(found)]


def all_offences(root: Path = ROOT, reading: set[Path] = READING) -> list[str]:
    return [
        offence
        for path in sorted(root.rglob("*.py"))
        if path not in reading and "migrations" not in path.parts
        for offence in offences(path, root)
    ]


def test_nothing_but_the_reading_decides_what_reached_the_parent():
    assert all_offences() == [], "decided outside core/facts/reading.py:\n" + "\n".join(
        all_offences()
    )


def test_the_check_names_a_made_up_offender(tmp_path):
    """The check can fail: a made-up module that decides it on its own is named, line by
    line, and a thin reader beside it is not."""
    package = tmp_path / "supervisor"
    package.mkdir()
    (package / "rule.py").write_text(
        "from supervisor.core.facts import reading\n"
        "from supervisor.core.facts.ownership import normalized\n"
        "\n"
        "\n"
        "def reached(snap, task):\n"
        '    for wake in snap.wakes_by_target.get(task.parent_thread or "", []):\n'
        "        if wake.source_task == task.id and wake.delivered:\n"
        "            return True\n"
        "    return False\n"
        "\n"
        "\n"
        "def same(wake, run):\n"
        "    return normalized(wake.summary) == normalized(run.summary)\n"
        "\n"
        "\n"
        "def _wakes_to_parent(snap, task):\n"
        "    return []\n"
        "\n"
        "\n"
        "def has_reached_parent(snap, task, text):\n"
        '    """A thin reader."""\n'
        "    return reading.reached_by_contract(snap, task, text)\n"
    )
    assert all_offences(package, set()) == [
        f"supervisor/rule.py:5 reached() decides it: {THIN}",
        "supervisor/rule.py:5 reached() judges whether a task wake of a task was delivered",
        "supervisor/rule.py:13 compares a handed text with a run's result",
        "supervisor/rule.py:16 lists the wakes to the parent itself",
    ]
