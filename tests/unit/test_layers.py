"""The layers of ``app/`` point one way (docs/architecture.md): read every module's imports with ``ast``
(function-level and ``TYPE_CHECKING`` imports included) and check who may import whom."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cache
from pathlib import Path

APP = Path(__file__).resolve().parents[2] / "app"
FRAMEWORKS = ("fastapi", "starlette", "uvicorn", "kazoo", "sqlalchemy", "alembic", "pyspark")


def _module_name(path: Path) -> str:
    parts = path.relative_to(APP.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(module: str, is_package: bool, node: ast.Import | ast.ImportFrom) -> Iterator[str]:
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
        return
    if node.level:  # relative: resolve against this module's package
        package = module.split(".") if is_package else module.split(".")[:-1]
        base = ".".join(package[: len(package) - node.level + 1])
        target = f"{base}.{node.module}" if node.module else base
    else:
        target = node.module or ""
    yield target
    yield from (f"{target}.{alias.name}" for alias in node.names)  # ``from app import runtime``


@cache
def imports() -> dict[str, frozenset[str]]:
    """Every module of app/ and the modules it imports (a ``from x import y`` counts as x and x.y)."""
    graph: dict[str, frozenset[str]] = {}
    for path in sorted(APP.rglob("*.py")):
        module = _module_name(path)
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        names = {
            name
            for node in ast.walk(tree)
            if isinstance(node, ast.Import | ast.ImportFrom)
            for name in _imported(module, path.name == "__init__.py", node)
        }
        graph[module] = frozenset(names)
    return graph


def _within(name: str, *prefixes: str) -> bool:
    return any(name == prefix or name.startswith(prefix + ".") for prefix in prefixes)


def _violations(importers: tuple[str, ...], forbidden: tuple[str, ...]) -> list[str]:
    return sorted(
        f"{module} imports {name}"
        for module, names in imports().items()
        if _within(module, *importers)
        for name in names
        if _within(name, *forbidden)
    )


def _unit(module: str) -> str:
    """The package (or top-level module) of app/ a module belongs to: app.storage, app.settings, ..."""
    return ".".join(module.split(".")[:2])


def test_the_reader_sees_the_whole_tree() -> None:
    """Positive control: the graph holds modules of every layer and edges the rules below rely on."""
    graph = imports()
    for layer in ("app.domain", "app.service", "app.storage", "app.auth", "app.api", "app.cli"):
        assert any(_within(module, layer) for module in graph), layer
    assert "app.domain.principal" in graph["app.service.tokens"]
    assert any(_within(name, "app.runtime") for name in graph["app.api.app"])


def test_domain_imports_nothing_of_the_project_outside_it_and_no_framework() -> None:
    outside = tuple(f"app.{unit}" for unit in _units_except("domain"))
    assert _violations(("app.domain",), (*outside, *FRAMEWORKS)) == []


def test_kazoo_is_imported_only_under_app_storage() -> None:
    everything_but_storage = tuple(f"app.{unit}" for unit in _units_except("storage"))
    assert _violations(everything_but_storage, ("kazoo",)) == []


def test_the_kafka_protocol_libraries_are_imported_only_by_the_kafka_backend_and_the_token_login_client() -> None:
    """kafka-python and kio live in app/storage/kafka (the Kafka-protocol backend, which fences their private
    parts in wire.py), in the client commands' token login (app/cli/client/kafka_login.py) and in the local KRaft
    stack of ``kts dev --kraft`` (its admin client gives the broker it started its users and kts's grants, with
    kafka-python's public API only), nowhere else."""
    allowed = ("app.storage.kafka", "app.cli.client.kafka_login", "app.cli.server.kafka_broker.dev_kraft")
    found = sorted(
        f"{module} imports {name}"
        for module, names in imports().items()
        if not _within(module, *allowed)
        for name in names
        if _within(name, "kafka", "kio")
    )
    assert found == []
    assert any(_within(name, "kio") for name in imports()["app.storage.kafka.wire"])  # positive control


def test_the_client_commands_take_only_the_sasl_login_from_the_kafka_backend() -> None:
    """The client commands and the sidecar run beside workloads, not beside the service: of the service's layers
    (storage, services, auth, API, the composition root) they import only the Kafka SASL login
    (app/storage/kafka/sasl.py), which kafka_login.py drives over its own socket and the backend over kts's
    connections, so the exchange is written once. The storage package itself is named only on the way to it."""
    shared = ("app.storage.kafka.sasl",)
    passed_through = {"app.storage", "app.storage.kafka"}  # ``from app.storage.kafka import sasl`` names these
    service_side = ("app.storage", "app.service", "app.auth", "app.api", "app.runtime", "app.leader")
    found = sorted(
        f"{module} imports {name}"
        for module, names in imports().items()
        if _within(module, "app.cli.client", "app.cli.sidecar")
        for name in names
        if _within(name, *service_side) and not _within(name, *shared) and name not in passed_through
    )
    assert found == []
    assert any(_within(name, *shared) for name in imports()["app.cli.client.kafka_login"])  # positive control
    assert any(_within(name, *shared) for name in imports()["app.storage.kafka.wire"])


def test_nothing_above_storage_names_a_backend_adapter_but_the_composition_root() -> None:
    above = ("app.service", "app.api", "app.auth", "app.domain", "app.observability")
    assert _violations(above, ("app.storage.zk", "app.storage.kafka", "app.storage.memory")) == []


def test_domain_service_and_storage_never_import_the_api_or_the_cli() -> None:
    assert _violations(("app.domain", "app.service", "app.storage"), ("app.api", "app.cli")) == []


def test_services_import_no_auth_api_cli_or_settings() -> None:
    assert _violations(("app.service",), ("app.auth", "app.api", "app.cli", "app.settings", "app.runtime")) == []


def test_only_the_app_factory_and_the_cli_import_the_composition_root() -> None:
    users = {
        module
        for module, names in imports().items()
        if any(_within(name, "app.runtime") for name in names) and module != "app.runtime"
    }
    assert {module for module in users if not _within(module, "app.cli")} == {"app.api.app"}


def test_no_import_cycle_between_the_packages_of_app() -> None:
    edges: dict[str, set[str]] = {}
    for module, names in imports().items():
        for name in names:
            if _within(name, "app") and name != "app" and _unit(name) != _unit(module):
                edges.setdefault(_unit(module), set()).add(_unit(name))
    cycles = [cycle for cycle in _cycles(edges)]
    assert cycles == [], " ; ".join(" -> ".join(cycle) for cycle in cycles)


def _units_except(unit: str) -> list[str]:
    units = {module.split(".")[1] for module in imports() if module.count(".") >= 1}
    return sorted(units - {unit})


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component of more than one unit (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(edges.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found
