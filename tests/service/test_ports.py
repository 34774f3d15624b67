"""Services receive ports, not the store (docs/architecture.md, "Each room's job"): every
constructor, public function and public method of ``kioku.service`` names the narrow protocols
it uses (``storage/ports.py``), never the whole ``Store``, and no such protocol grows past
``MAX_PORT_METHODS``."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import types
import typing
from collections.abc import Callable, Iterator
from typing import Any, TypeGuard

import kioku.service
from kioku.service.guard import permission_of
from kioku.storage.base import Store
from kioku.storage.ports import AuditTrail

MAX_PORT_METHODS = 20


def _service_classes_and_functions() -> Iterator[tuple[str, Any]]:
    for info in pkgutil.walk_packages(kioku.service.__path__, "kioku.service."):
        module = importlib.import_module(info.name)
        for name, obj in sorted(vars(module).items()):
            if name.startswith("_") or getattr(obj, "__module__", None) != module.__name__:
                continue
            if inspect.isclass(obj) or inspect.isfunction(obj):
                yield f"{module.__name__}.{name}", obj


def _is_protocol(annotation: object) -> TypeGuard[type]:
    return inspect.isclass(annotation) and bool(getattr(annotation, "_is_protocol", False))


def service_callables() -> Iterator[tuple[str, Callable[..., Any]]]:
    """Every service class's constructor and public methods, and every public function."""
    for name, obj in _service_classes_and_functions():
        if inspect.isfunction(obj):
            yield name, obj
        elif not _is_protocol(obj):  # a protocol declares a port; it takes none
            for attr, value in vars(obj).items():
                if inspect.isfunction(value) and (attr == "__init__" or not attr.startswith("_")):
                    yield f"{name}.{attr}", value


def parameter_types(fn: Callable[..., Any]) -> dict[str, list[object]]:
    """Each parameter's annotation, unions and optionals opened into their members."""
    hints = typing.get_type_hints(fn)
    hints.pop("return", None)
    return {name: _members(hint) for name, hint in hints.items()}


def _members(hint: object) -> list[object]:
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return [m for arg in typing.get_args(hint) for m in _members(arg)]
    return [hint]


def port_methods(port: type) -> set[str]:
    """A protocol's public methods, its inherited protocols' included."""
    return {
        name
        for klass in port.__mro__
        if _is_protocol(klass) and klass is not typing.Protocol
        for name, value in vars(klass).items()
        if not name.startswith("_") and callable(value)
    }


CALLABLES = dict(service_callables())


def test_the_walk_finds_the_services() -> None:
    assert "kioku.service.memories.MemoryService.__init__" in CALLABLES
    assert "kioku.service.jobs.sweep_verdicts" in CALLABLES
    assert len(port_methods(Store)) > MAX_PORT_METHODS  # what the rule below keeps out


def test_no_service_takes_the_whole_store() -> None:
    takers = [
        f"{name}({parameter})"
        for name, fn in CALLABLES.items()
        for parameter, annotations in parameter_types(fn).items()
        if Store in annotations
    ]
    assert takers == [], "take a port of kioku/storage/ports.py, not the Store"


def test_every_port_a_service_takes_is_small() -> None:
    ports = {
        annotation
        for fn in CALLABLES.values()
        for annotations in parameter_types(fn).values()
        for annotation in annotations
        if _is_protocol(annotation)
    }
    assert ports, "the walk found no port"
    large = {
        f"{port.__module__}.{port.__qualname__}": len(port_methods(port))
        for port in ports
        if len(port_methods(port)) > MAX_PORT_METHODS
    }
    assert large == {}, f"split these ports (at most {MAX_PORT_METHODS} methods each)"


def test_every_guarded_service_can_write_its_audit_lines() -> None:
    """``guard.operation`` writes through ``service.store`` (an ``Any`` to pyright), so a
    port without the audit trail would fail only when a refusal is audited."""
    needed = port_methods(AuditTrail)
    missing = {}
    for name, obj in _service_classes_and_functions():
        if not inspect.isclass(obj) or _is_protocol(obj):
            continue
        if not any(permission_of(value) for value in vars(obj).values() if callable(value)):
            continue
        stores = parameter_types(obj.__init__).get("store", [])
        lacks = needed - set().union(*(port_methods(s) for s in stores if _is_protocol(s)))
        if lacks:
            missing[name] = sorted(lacks)
    assert missing == {}, "add AuditTrail (kioku/storage/ports.py) to these services' ports"
