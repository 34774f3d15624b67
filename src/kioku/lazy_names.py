"""Names a package exports but imports only when first asked for (standard library only).

``kioku``, ``kioku.client`` and ``kioku.settings`` each export names whose modules are heavy
(httpx, pydantic): the hook and the quick commands import these packages and must not pay
for what they do not use. Each package sets ``__getattr__ = lazy_names(__name__, {...})``.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(package: str, where: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: each name of ``where`` is imported from the
    module it maps to on first use (a name that is that module, ``package.<name>``, is the
    module itself) and kept in the package, so later uses cost nothing."""

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value: Any = importlib.import_module(module)
        if module != f"{package}.{name}":
            value = getattr(value, name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
