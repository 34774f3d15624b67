"""The architecture, tested: import direction and one name per operation."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "kioku"


def imports_in(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


def imports_of(package: str) -> set[str]:
    return {name for path in (SRC / package).rglob("*.py") for name in imports_in(path)}


@pytest.mark.parametrize(
    ("package", "forbidden"),
    [
        (
            "storage",
            ("fastapi", "starlette", "mcp", "typer", "kioku.service", "kioku.api", "kioku.cli"),
        ),
        # Search is pure functions over what storage found: the records it ranks with are
        # kioku.ranking_records, so it never imports storage at all, nor an embedder (what
        # needs one, such as measuring each language's mean vector, is
        # kioku.embeddings.language_means).
        (
            "search",
            ("fastapi", "typer", "kioku.storage", "kioku.embeddings", "kioku.service", "kioku.api"),
        ),
        (
            "service",
            ("fastapi", "starlette", "typer", "kioku.api", "kioku.cli", "kioku.storage.sqlite"),
        ),
        # Surfaces reach the data through the services only.
        ("api", ("typer", "kioku.cli", "kioku.storage")),
        ("mcp", ("fastapi", "typer", "kioku.api", "kioku.cli", "kioku.storage")),
        ("cli", ("kioku.storage",)),
        ("embeddings", ("fastapi", "typer", "kioku.service", "kioku.api")),
        # One direction between the gate and the bench: the gate (kioku.eval) writes its corpus
        # with the bench's ingestion and scores with its metrics; the bench never needs the gate.
        ("benchmark", ("kioku.eval",)),
        # The UI calls the services, like every surface: no SQL, no other surface's code.
        (
            "ui",
            ("typer", "sqlalchemy", "kioku.cli", "kioku.mcp", "kioku.api", "kioku.storage"),
        ),
        # The SDK speaks HTTP: the wire models and errors, nothing of the server.
        (
            "client",
            (
                "fastapi",
                "starlette",
                "typer",
                "mcp",
                "sqlalchemy",
                "kioku.api",
                "kioku.cli",
                "kioku.mcp",
                "kioku.ui",
                "kioku.runtime",
                "kioku.service",
                "kioku.storage",
                "kioku.search",
            ),
        ),
        # Connectors read sources and call the service; surfaces call them, never the reverse.
        (
            "connectors",
            (
                "fastapi",
                "starlette",
                "typer",
                "mcp",
                "kioku.api",
                "kioku.cli",
                "kioku.mcp",
                "kioku.storage.sqlite",
                "kioku.storage.postgres",
            ),
        ),
    ],
)
def test_import_direction(package: str, forbidden: tuple[str, ...]) -> None:
    bad = {
        name
        for name in imports_of(package)
        if any(name == f or name.startswith(f + ".") for f in forbidden)
    }
    assert not bad, f"{package} must not import {sorted(bad)}"


# The layers of docs/architecture.md's diagram, lowest first: a module imports its own layer or
# a lower one, never a higher one (a module's layer is that of its longest listed prefix).
# Within a layer, the per-package rules above say which way imports run.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "shared by all",
        (
            "models",
            "ranking_records",
            "vocabulary",
            "errors",
            "clock",
            "settings",
            "wording",
            "_version",
            "lazy_names",  # the packages' on-first-use names: standard library only
            # The pinned block's one renderer: pure, standard library only (hooks import it
            # without the SDK; the harness service renders with it), so shared, not the SDK's.
            "client.pinned_block",
        ),
    ),
    # The diagram's "below" row, search at its foot: pure ranking functions, which the models
    # and the store may use (the fake embedder tokenizes) but which use neither.
    ("below: search", ("search",)),
    ("below: storage, embeddings, rerankers", ("storage", "embeddings", "rerankers")),
    ("rules", ("service",)),
    ("composition", ("runtime",)),
    # Everything that drives the services: the surfaces, the package's face (kioku/__init__),
    # the connectors (the diagram draws them beside the models, but they hand outside sources
    # to the connector service as a surface hands it a request), the gate and the bench.
    (
        "surfaces",
        (
            "__init__",
            "api",
            "mcp",
            "cli",
            "ui",
            "client",
            "integrations",
            "hook_client",
            "asgi_body",
            "connectors",
            "eval",
            "benchmark",
        ),
    ),
)


def layer_of(module: str) -> int:
    """The index in ``LAYERS`` of ``module`` (dotted, without ``kioku.``)."""
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        prefix = ".".join(parts[:end])
        for index, (_, members) in enumerate(LAYERS):
            if prefix in members:
                return index
    raise AssertionError(f"kioku.{module} is in no layer of LAYERS: give it one")


def module_name(path: Path, root: Path) -> str:
    """``kioku/service/recall.py`` -> ``service.recall``; a package's ``__init__`` is the package
    (``kioku/__init__.py`` itself is ``__init__``)."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts.pop()
    return ".".join(parts)


def kioku_imports(path: Path, root: Path) -> set[str]:
    """The kioku modules ``path`` imports (without ``kioku.``), at the top or inside a function;
    ``from kioku.x import y`` counts as ``x.y`` when ``y`` is a module."""
    package = module_name(path, root).split(".")
    if path.name != "__init__.py":
        package = package[:-1]

    def is_module(dotted: str) -> bool:
        where = root.joinpath(*dotted.split(".")[1:])
        return where.is_dir() or where.with_suffix(".py").exists()

    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolved against the importing package
                kept = package[: len(package) - node.level + 1]
                base = ".".join(["kioku", *kept, *([base] if base else [])])
            names = [
                f"{base}.{alias.name}" if is_module(f"{base}.{alias.name}") else base
                for alias in node.names
            ]
        else:
            continue
        found.update(name.removeprefix("kioku.") for name in names if name.startswith("kioku."))
    return found


def upward_imports(root: Path = SRC) -> list[str]:
    """Every import that runs up the layers, as ``importer -> imported (layer -> layer)``."""
    upward = []
    for path in sorted(root.rglob("*.py")):
        importer = module_name(path, root)
        for imported in sorted(kioku_imports(path, root)):
            if layer_of(imported) > layer_of(importer):
                upward.append(
                    f"{importer} -> {imported} "
                    f"({LAYERS[layer_of(importer)][0]} -> {LAYERS[layer_of(imported)][0]})"
                )
    return upward


def test_no_import_runs_up_the_layers() -> None:
    assert upward_imports() == []


def test_every_package_has_a_layer() -> None:
    top = {module_name(path, SRC).split(".")[0] for path in SRC.rglob("*.py")}
    for name in top:
        layer_of(name)


def test_pinned_block_imports_nothing_of_kioku() -> None:
    """It sits in the shared layer (``LAYERS``) because it is pure: it must stay so."""
    assert kioku_imports(SRC / "client" / "pinned_block.py", SRC) == set()


LAB = SRC.parents[1] / "lab"
SCRIPTS = SRC.parents[1] / "scripts"


def test_src_holds_no_study() -> None:
    """Studies live in lab/ (lab/README.md), tools in scripts/: the product neither holds one
    (no ``*_study.py``, no module named as a lab file) nor imports one, and every module of the
    bench and the gate is run by the product (a one-off measurement that nothing imports, such
    as a LoCoMo study with its own ``python -m`` line, is a study)."""
    outside = {"lab", "scripts"} | {
        path.stem for folder in (LAB, SCRIPTS) for path in folder.glob("*.py")
    }
    studies = [
        str(path.relative_to(SRC))
        for path in SRC.rglob("*.py")
        if path.stem.endswith("_study") or path.stem in {p.stem for p in LAB.glob("*.py")}
    ]
    assert studies == [], studies
    reached = {
        f"{path.relative_to(SRC)}: {name}"
        for path in SRC.rglob("*.py")
        for name in imports_in(path)
        if name.split(".")[0] in outside
    }
    assert not reached, sorted(reached)
    unused = sorted(set(modules_of(("benchmark", "eval"))) - reached_by_the_product())
    assert unused == [], (
        f"nothing the product runs imports {unused}: a study goes to lab/ (lab/README.md)"
    )


# What a user runs of the bench and the gate besides the commands (`kioku bench`, `kioku eval`,
# which the CLI imports): the load test of `make soak` (`python -m kioku.benchmark.load`), and
# its workload, which locust reads by path.
BENCH_ENTRY_POINTS = ("benchmark.load", "benchmark.locustfile")


def modules_of(packages: tuple[str, ...], root: Path = SRC) -> dict[str, Path]:
    """Every module under ``packages`` (dotted, without ``kioku.``) and its file."""
    return {
        module_name(path, root): path
        for package in packages
        for path in (root / package).rglob("*.py")
    }


def reached_by_the_product(root: Path = SRC) -> set[str]:
    """The modules that the product's code outside ``benchmark/`` and ``eval/``, or a bench entry
    point, imports, directly or through others (a package is reached with any of its modules)."""
    everything = {module_name(path, root): path for path in root.rglob("*.py")}
    inner = modules_of(("benchmark", "eval"), root)
    todo = [name for name in everything if name not in inner] + list(BENCH_ENTRY_POINTS)
    reached: set[str] = set()
    while todo:
        name = todo.pop()
        if name in reached or name not in everything:
            continue
        reached.add(name)
        parts = name.split(".")
        todo.extend(".".join(parts[:end]) for end in range(1, len(parts)))
        todo.extend(kioku_imports(everything[name], root))
    return reached


def test_only_the_bench_starts_a_throwaway_postgres() -> None:
    """``storage/postgres/throwaway.py`` ships for ``kioku bench --backend postgres`` (and the
    load test); the server, its services and its surfaces never start a database."""
    importers = {
        module_name(path, SRC)
        for path in SRC.rglob("*.py")
        if "kioku.storage.postgres.throwaway" in imports_in(path)
    }
    assert importers <= {"benchmark.backend", "benchmark.load"}, importers


SURFACES = ("api", "mcp", "cli", "ui", "client", "integrations")


def module_path(module: str, root: Path = SRC) -> Path | None:
    """The file of ``module`` (dotted, without ``kioku.``), if it exists."""
    where = root.joinpath(*module.split("."))
    for path in (where.with_suffix(".py"), where / "__init__.py"):
        if path.is_file():
            return path
    return None


@pytest.mark.parametrize("surface", SURFACES)
def test_surfaces_never_import_storage(surface: str) -> None:
    """Every surface reaches the data through the services, opened by ``kioku.runtime`` (or,
    for the commands that need no runtime, ``kioku.service.database_admin``): no surface names
    a store, a storage record or a SQL helper, lazily inside a function or at the top; nor
    does a module it imports outside the services and the runtime, so no module beside them
    is a door to storage (as ``kioku/database.py`` once was, re-exporting the store)."""
    reached = {name for name in imports_of(surface) if name.split(".")[:2] == ["kioku", "storage"]}
    assert not reached, f"{surface} must reach storage through the services: {sorted(reached)}"
    surfaces = [name for name, _ in LAYERS].index("surfaces")
    doors = {
        f"{module_name(path, SRC)} -> {imported}"
        for path in (SRC / surface).rglob("*.py")
        for imported in kioku_imports(path, SRC)
        if layer_of(imported) < surfaces
        and imported.split(".")[0] not in {"service", "runtime"}
        and (found := module_path(imported)) is not None
        and any(name.split(".")[:2] == ["kioku", "storage"] for name in imports_in(found))
    }
    assert not doors, f"{surface} reaches storage through a module beside the services: {doors}"


def store_uses(path: Path, *, names_only: bool = False) -> list[str]:
    """Where ``path`` touches the store itself: an attribute ``.store`` (``runtime.store``,
    ``getattr(runtime, "store")``) or the name ``Store`` (the storage façade's type); with
    ``names_only``, only where it names ``Store``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Attribute) and node.attr == "store":
            if names_only or ast.unparse(node.value).startswith("langgraph"):
                continue  # a service's own port, or the package langgraph.store
            found.append(f"{ast.unparse(node)} (line {node.lineno})")
        elif isinstance(node, ast.Call) and ast.unparse(node.func) in {"getattr", "hasattr"}:
            if names_only:
                continue
            if any(isinstance(a, ast.Constant) and a.value == "store" for a in node.args[1:2]):
                found.append(f"{ast.unparse(node)} (line {node.lineno})")
        elif isinstance(node, ast.Name) and node.id == "Store":
            found.append(f"Store (line {node.lineno})")
        elif isinstance(node, ast.alias) and node.name.split(".")[-1] == "Store":
            found.append(f"import {node.name} (line {node.lineno})")
        elif isinstance(node, ast.Constant) and node.value == "Store":  # a quoted annotation
            found.append(f"'Store' (line {node.lineno})")
    return found


# Who may hold the whole store: storage (which defines it) and the runtime (which opens it and
# hands it to each service as that service's port). Services hold their ports (``.store``).
HOLDERS = {"storage", "runtime.py"}
PORT_TAKERS = {"service"}
OTHERS = sorted(
    path.name
    for path in SRC.iterdir()
    if path.name not in HOLDERS | PORT_TAKERS
    and (path.suffix == ".py" or (path / "__init__.py").is_file())
)


def python_files(name: str) -> list[Path]:
    """The modules of the package ``name`` under ``src/kioku``, or the module file itself."""
    path = SRC / name
    return sorted(path.rglob("*.py")) if path.is_dir() else [path]


def test_the_walk_covers_surfaces_and_drivers() -> None:
    assert set(SURFACES) | {"benchmark", "eval", "connectors", "__init__.py"} <= set(OTHERS)


@pytest.mark.parametrize("name", OTHERS)
def test_only_the_services_touch_the_store(name: str) -> None:
    """Beside storage, the runtime and the services, no module calls ``runtime.store`` (nor
    reads a backend's pool or caches through it) or names ``Store``: the surfaces, the bench
    and the gate call the runtime's services (``runtime.health``, ``runtime.workspaces``,
    ``runtime.bench``, ...), and what a command or a route needs of the database is a service
    method."""
    touched = {
        f"{path.relative_to(SRC)}: {use}" for path in python_files(name) for use in store_uses(path)
    }
    assert not touched, f"{name} must call services, not the store: {sorted(touched)}"


def test_services_never_name_the_store() -> None:
    """A service takes the narrow port it uses (``storage/ports.py``), never ``Store``: the
    names of its module are checked here, its signatures by ``tests/service/test_ports.py``."""
    named = {
        f"{path.relative_to(SRC)}: {use}"
        for path in python_files("service")
        for use in store_uses(path, names_only=True)
    }
    assert not named, f"take a port of kioku/storage/ports.py, not the Store: {sorted(named)}"


def test_the_runtime_is_the_only_composition_module() -> None:
    """Beside ``kioku/runtime.py`` no top-level module opens or re-exports the store: the
    commands that need no runtime ask ``service/database_admin.py``."""
    assert dict(LAYERS)["composition"] == ("runtime",)
    assert not (SRC / "database.py").exists(), "kioku/database.py re-exported the store"


def test_every_rest_operation_is_a_service_method() -> None:
    from kioku.api import create_app
    from kioku.service.audit import AuditService
    from kioku.service.connectors import ConnectorService
    from kioku.service.contexts import ContextService
    from kioku.service.delivery import DeliveryService
    from kioku.service.feedback import FeedbackService
    from kioku.service.forgetting import ForgetService
    from kioku.service.graph import GraphService
    from kioku.service.harness import HarnessService
    from kioku.service.keys import KeyService
    from kioku.service.memories import MemoryService
    from kioku.service.purge import PurgeService
    from kioku.service.recall import RecallService
    from kioku.service.sleep import SleepService
    from kioku.service.state import StateService
    from kioku.service.stats import StatsService

    spec = create_app().openapi()
    services = (
        ContextService,
        MemoryService,
        RecallService,
        DeliveryService,
        FeedbackService,
        StateService,
        StatsService,
        KeyService,
        AuditService,
        SleepService,
        GraphService,
        ConnectorService,
        PurgeService,
        ForgetService,
        HarnessService,
    )
    for path in spec["paths"].values():
        for operation in path.values():
            name = operation["operationId"]
            if name == "health":
                continue
            assert any(hasattr(service, name) for service in services), name


def test_modules_stay_small() -> None:
    sizes = {
        str(path.relative_to(SRC)): len(path.read_text(encoding="utf-8").splitlines())
        for path in SRC.rglob("*.py")
    }
    too_big = {name: size for name, size in sizes.items() if size > 500}
    assert not too_big, too_big


def test_vocabulary_imports_nothing_of_kioku() -> None:
    """``kioku.vocabulary`` (the shared Literals) is imported by every layer, storage and
    search included, so it may import nothing of kioku itself."""
    tree = ast.parse((SRC / "vocabulary.py").read_text(encoding="utf-8"))
    names = {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    names |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert not {name for name in names if name.split(".")[0] == "kioku"}
