"""The layering, checked on the source: every import (module level, inside functions, under
TYPE_CHECKING, and the adapters a provider names: ``OnDatabase("module:Class")``) of ``memory_engine``
and ``memory_engine_infra``, read with ``ast``.

- no import cycle in either package;
- imports point inward (HOUSE_STYLE rule 1): ``domain`` imports no other layer, ``ports`` only the
  domain, ``services`` neither adapters nor drivers, and ``adapters`` only implement ports: they
  import neither the composition root, the HTTP layer, the services, the settings nor a driver;
- the Lambda handlers under ``functions/`` get wired objects from the composition root and never
  import an adapter themselves.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

from memory_engine.bootstrap_ingestion import OnDatabase

REPO = Path(__file__).resolve().parents[2]
PACKAGES = {"memory_engine": REPO / "layers" / "core" / "memory_engine",
            "memory_engine_infra": REPO / "infra" / "memory_engine_infra"}
#: Entry points and drivers: they wire the layers together and may import any of them.
DRIVERS = ("bootstrap", "bootstrap_ingestion", "http", "local", "cli", "evaluation", "mcp_server")
#: layer -> the first-level parts of memory_engine it must not import.
FORBIDDEN = {
    "domain": ("ports", "services", "adapters", *DRIVERS),
    "ports": ("services", "adapters", *DRIVERS),
    "services": ("adapters", *DRIVERS),
    # adapters take their configuration as arguments (the composition root reads the settings)
    "adapters": ("services", "settings", *DRIVERS),
    # two faces over one set of services: the MCP tools call the services and serialize their models
    # as the HTTP routes do, never through the routes' modules
    "mcp_server": ("http",),
}

Graph = Mapping[str, set[str]]


def modules() -> dict[str, Path]:
    found = {}
    for package, root in PACKAGES.items():
        for path in root.rglob("*.py"):
            parts = list(path.relative_to(root.parent).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    assert {"memory_engine.bootstrap", "memory_engine_infra.stack"} <= set(found)
    return found


def _resolve(name: str, known: Iterable[str]) -> str | None:
    """The module ``name`` refers to: itself, else its closest enclosing package we own."""
    known = set(known)
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def import_graph() -> dict[str, set[str]]:
    """module -> the modules of our packages it imports (``from pkg import mod`` counts as ``pkg.mod``)."""
    known = modules()
    graph: dict[str, set[str]] = {}
    for module, path in known.items():
        targets: set[str | None] = set()
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text("utf-8"), filename=str(path))):
            if isinstance(node, ast.Import):
                targets.update(_resolve(alias.name, known) for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    source = ".".join([*base, *([node.module] if node.module else [])])
                else:
                    source = node.module or ""
                for alias in node.names:
                    full = f"{source}.{alias.name}"
                    targets.add(full if full in known else _resolve(source, known))
            elif _names_an_adapter(node):  # a provider that imports its adapter when first asked for
                adapter = node.args[0].value.partition(":")[0]  # type: ignore[attr-defined]
                targets.add(_resolve(f"{OnDatabase.PACKAGE}.{adapter}", known))
        graph[module] = {t for t in targets if t is not None and t != module}
    return graph


def _names_an_adapter(node: ast.AST) -> bool:
    """``OnDatabase("module:Class")`` (bootstrap_ingestion.py): an import the call makes by name."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == OnDatabase.__name__
            and bool(node.args) and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str))


def cycles(graph: Graph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
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

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def layer_violations(graph: Graph) -> list[str]:
    def layer(module: str) -> str | None:
        parts = module.split(".")
        if parts[:3] == ["memory_engine", "local", "adapters"]:
            return "adapters"  # the local runtime's stand-ins are adapters of the ports: the adapters' rules
        return parts[1] if parts[0] == "memory_engine" and len(parts) > 1 else None

    return sorted(
        f"{module} -> {target}"
        for module, targets in graph.items()
        for target in targets
        if layer(module) in FORBIDDEN and layer(target) in FORBIDDEN[str(layer(module))]
    )


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return import_graph()


def test_no_import_cycle_in_the_package_or_the_infra_app(graph: Graph) -> None:
    assert cycles(graph) == []


def test_imports_point_inward_and_adapters_only_implement_ports(graph: Graph) -> None:
    assert layer_violations(graph) == []


def test_the_walk_sees_lazy_and_type_checking_imports(graph: Graph) -> None:
    # the composition root imports its adapters lazily (some by name: OnDatabase), the ports only
    # under TYPE_CHECKING
    assert "memory_engine.adapters.postgres.entries" in graph["memory_engine.bootstrap"]
    assert "memory_engine.adapters.postgres.documents" in graph["memory_engine.bootstrap_ingestion"]
    assert "memory_engine.adapters.eventbridge.publisher" in graph["memory_engine.bootstrap"]
    assert "memory_engine.ports.entries" in graph["memory_engine.bootstrap"]
    assert "memory_engine.local.container" in graph["memory_engine.local.engine"]


def test_the_checks_fail_on_a_cycle_and_on_an_outward_import() -> None:
    # Given a graph with a three-module cycle and an adapter importing the composition root
    bad = {
        "memory_engine.http.health": {"memory_engine.http.openapi"},
        "memory_engine.http.openapi": {"memory_engine.http.routers"},
        "memory_engine.http.routers": {"memory_engine.http.health"},
        "memory_engine.adapters.sqs.queue": {"memory_engine.bootstrap", "memory_engine.ports.events"},
        "memory_engine.bootstrap": {"memory_engine.adapters.sqs.queue"},
    }
    # Then both are reported
    assert cycles(bad) == [["memory_engine.adapters.sqs.queue", "memory_engine.bootstrap"],
                           ["memory_engine.http.health", "memory_engine.http.openapi", "memory_engine.http.routers"]]
    assert layer_violations(bad) == ["memory_engine.adapters.sqs.queue -> memory_engine.bootstrap"]


def handler_imports() -> dict[str, set[str]]:
    """functions/<area>/*.py -> the modules of ours it imports (absolute imports only: handlers are
    loaded by file path, so they have no package to be relative to)."""
    found: dict[str, set[str]] = {}
    for path in sorted((REPO / "functions").rglob("*.py")):
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text("utf-8"), filename=str(path))):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module:
                names.update(f"{node.module}.{alias.name}" for alias in node.names)
        found[str(path.relative_to(REPO))] = {n for n in names if n.startswith("memory_engine")}
    return found


def test_handlers_import_no_adapter() -> None:
    imports = handler_imports()
    assert "functions/api/handler.py" in imports
    assert [f"{h} -> {m}" for h, ms in imports.items() for m in sorted(ms)
            if m.startswith("memory_engine.adapters")] == []
