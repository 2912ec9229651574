"""The layers hold in the import graph: navigator -> core -> storage -> vocabulary.

The graph is read with ``ast``: every import counts, module-level or inside a
function (a lazy import that closes a cycle is still a cycle) or under ``if
TYPE_CHECKING:`` (an annotation that needs a module above is a layer drawn
wrong). Relative imports are resolved; ``from pkg import name`` counts ``pkg``
and, when it is a module, ``pkg.name``. Core's folders are layers too: the
folder graph (an edge wherever a module of one imports a module of another) has
no cycle, and ``LAYERS`` is its order, as README draws it.
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
              "core.model.hints", "core.model.tool_schemas", "core.model.limit_text",
              "core.model.defaults", "core.model.usage", "core.model.notice_line",
              "core.model.git", "core.model.turn_end",
              "core.model.flocks")
"""The leaf vocabulary: storage may import these from core, and nothing else."""

LAYERS = ("platform", "model", "config", "providers", "tmux", "evidence", "install", "context",
          "broker", "runtime", "reconcile", "state", "engine", "agent", "hooks", "usage", "review",
          "fleet", "memory", "remote", "server", "apps")
"""Core's folders from the bottom up: a module may import its own folder and the folders
before it, never one after (README's "Layers" section draws the same order)."""


@cache
def modules() -> dict[str, Path]:
    """Every module of the three packages, by dotted name (a package is its __init__)."""
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            found[name.removesuffix(".__init__")] = path
    return found


def _imported_names(name: str, path: Path) -> Iterator[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
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
    assert "core.runtime.sagas" in edges["core.engine.commands.frames"]  # a lazy import counts


def test_no_import_cycle() -> None:
    edges = graph()
    loops = [_cycle_path(component, edges) for component in cycles(edges)]
    assert not loops, "import cycles (break each at its root):\n" + "\n".join(loops)


def test_storage_imports_only_the_vocabulary_from_core() -> None:
    bad = _offending("storage", lambda target: not target.startswith(("core", "navigator"))
                     or target in VOCABULARY)
    assert not bad, "storage may import only VOCABULARY from core:\n" + "\n".join(bad)


PLATFORM = "core.platform"
"""Below the vocabulary: the OS-specific calls (``core/platform/``), which import no
other project module."""


def test_the_vocabulary_imports_only_itself() -> None:
    """...and the platform package beneath it."""
    bad = [line for module in VOCABULARY
           for line in _offending(module, lambda target: target in VOCABULARY
                                  or target == PLATFORM or target.startswith(PLATFORM + "."))]
    assert not bad, "the vocabulary must not import the rest of the project:\n" + \
        "\n".join(bad)


def test_the_platform_package_imports_nothing_of_the_project() -> None:
    platform = [name for name in modules() if name == PLATFORM
                or name.startswith(PLATFORM + ".")]
    assert platform
    bad = [line for module in platform
           for line in _offending(module, lambda target: target == PLATFORM
                                  or target.startswith(PLATFORM + "."))]
    assert not bad, "core/platform must import no other project module:\n" + "\n".join(bad)


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


def _folder(module: str) -> str | None:
    """The core folder a module lives in (``core.engine.engine`` -> ``engine``)."""
    parts = module.split(".")
    return parts[1] if parts[0] == "core" and len(parts) > 2 else None


def folder_graph() -> dict[str, frozenset[str]]:
    """Core folder -> the other core folders its modules import."""
    edges: dict[str, set[str]] = {}
    for module, targets in graph().items():
        source = _folder(module)
        if source is None:
            continue
        edges.setdefault(source, set())
        for target in targets:
            folder = _folder(target)
            if folder is not None and folder != source:
                edges[source].add(folder)
                edges.setdefault(folder, set())
    return {folder: frozenset(targets) for folder, targets in edges.items()}


def test_no_cycle_between_core_folders() -> None:
    edges = folder_graph()
    loops = [_cycle_path(component, edges) for component in cycles(edges)]
    assert not loops, "folder-level import cycles:\n" + "\n".join(loops)


def test_core_folders_import_only_the_layers_below() -> None:
    edges = folder_graph()
    unknown = sorted(set(edges) - set(LAYERS))
    assert not unknown, f"add each new core folder to LAYERS at its place: {unknown}"
    rank = {folder: index for index, folder in enumerate(LAYERS)}
    upward = [f"{module} imports {target}"
              for module, targets in sorted(graph().items())
              if (source := _folder(module)) is not None
              for target in sorted(targets)
              if (folder := _folder(target)) is not None and rank[folder] > rank[source]]
    assert not upward, "a core folder imports one above it:\n" + "\n".join(upward)


def test_the_folder_check_sees_an_upward_edge() -> None:
    """The rank check is not vacuous: the engine really sits above the runtime it drives."""
    edges = folder_graph()
    assert "runtime" in edges["engine"] and "engine" not in edges["runtime"]
