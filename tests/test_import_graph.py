"""The layers hold in the import graph: navigator -> core -> storage -> vocabulary.

The graph is read with ``ast``: every import counts, module-level or inside a
function (a lazy import that closes a cycle is still a cycle), except those
under ``if TYPE_CHECKING:`` (annotations only). Relative imports are resolved;
``from pkg import name`` counts ``pkg`` and, when it is a module, ``pkg.name``.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("core", "storage", "navigator")

VOCABULARY = ("core.model.enums", "core.model.errors", "core.model.machines",
              "core.model.evidence_enums", "core.model.control_line", "core.model.files",
              "core.model.text", "core.model.results", "core.model.ports",
              "core.model.placeholder", "core.model.digest", "core.model.spawn",
              "core.model.fast_exit", "core.model.session_enums", "core.model.tokens",
              "core.model.hints")
"""The leaf vocabulary: storage may import these from core, and nothing else."""


@cache
def modules() -> dict[str, Path]:
    """Every module of the three packages, by dotted name (a package is its __init__)."""
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            found[name.removesuffix(".__init__")] = path
    return found


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(inner) for inner in ast.walk(node))
    return skipped


def _imported_names(name: str, path: Path) -> Iterator[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    skipped = _type_checking_nodes(tree)
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = name.split(".") if path.name == "__init__.py" \
                    else name.split(".")[:-1]
                package = package[:len(package) - (node.level - 1)]
                base = ".".join(package + ([node.module] if node.module else []))
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)


@cache
def graph() -> dict[str, frozenset[str]]:
    """Module -> the project modules it imports (a name resolves to its nearest module)."""
    known = modules()
    edges: dict[str, frozenset[str]] = {}
    for name, path in known.items():
        targets = set()
        for imported in _imported_names(name, path):
            while imported and imported not in known:
                imported = imported.rpartition(".")[0]
            if imported and imported != name:
                targets.add(imported)
        edges[name] = frozenset(targets)
    return edges


def cycles(edges: dict[str, frozenset[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
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


def _cycle_path(component: list[str], edges: dict[str, frozenset[str]]) -> str:
    """One concrete loop through a component, for the failure message."""
    members = set(component)
    path = [component[0]]
    while True:
        step = min(target for target in edges[path[-1]] if target in members)
        if step in path:
            return " -> ".join(path[path.index(step):] + [step])
        path.append(step)


def _offending(source_prefix: str, allowed: Callable[[str], bool]) -> list[str]:
    """'module imports target' for each import of the prefix's modules not ``allowed``."""
    return [f"{module} imports {target}"
            for module, targets in sorted(graph().items())
            if module == source_prefix or module.startswith(source_prefix + ".")
            for target in sorted(targets) if not allowed(target)]


def test_the_graph_sees_the_packages() -> None:
    edges = graph()
    assert "core.engine.engine" in edges and "storage.schema" in edges
    assert "navigator.app" in edges
    assert "core.engine.sagas" in edges["core.engine.engine"]  # a lazy import counts


def test_no_import_cycle() -> None:
    edges = graph()
    loops = [_cycle_path(component, edges) for component in cycles(edges)]
    assert not loops, "import cycles (break each at its root):\n" + "\n".join(loops)


def test_storage_imports_only_the_vocabulary_from_core() -> None:
    bad = _offending("storage", lambda target: not target.startswith(("core", "navigator"))
                     or target in VOCABULARY)
    assert not bad, "storage may import only VOCABULARY from core:\n" + "\n".join(bad)


def test_the_vocabulary_imports_only_itself() -> None:
    bad = [line for module in VOCABULARY
           for line in _offending(module, lambda target: target in VOCABULARY)]
    assert not bad, "the vocabulary must not import the rest of the project:\n" + \
        "\n".join(bad)


def test_navigator_imports_no_storage() -> None:
    bad = _offending("navigator", lambda target: not target.startswith("storage"))
    assert not bad, "the navigator goes through core, never storage:\n" + "\n".join(bad)


def test_a_cycle_is_found_and_named() -> None:
    edges = {"a": frozenset({"b"}), "b": frozenset({"c"}), "c": frozenset({"a"}),
             "d": frozenset({"a"})}
    [component] = cycles(edges)
    assert component == ["a", "b", "c"]
    assert _cycle_path(component, edges) == "a -> b -> c -> a"


def test_the_vocabulary_is_the_model_package() -> None:
    """``core/model/`` is where a newcomer finds the vocabulary; nothing else is one."""
    model = {name for name in modules() if name.startswith("core.model.")}
    assert model == set(VOCABULARY)
