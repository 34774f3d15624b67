"""kioku's settings, read in one place: ``Settings`` (the server's, by section) and the
client's (``kioku.settings.client``, standard library only).

``Settings`` loads with pydantic on first use of its name, not with the package: the SDK, the
hook and the quick commands import ``kioku.settings.client`` and must not pay for pydantic
(``from kioku.settings import Settings`` works as before). A new setting: see "A new setting"
in docs/architecture.md.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kioku.settings.file import ConfigFileError
    from kioku.settings.model import Settings

_LAZY = {"Settings": "kioku.settings.model", "ConfigFileError": "kioku.settings.file"}

__all__ = ["ConfigFileError", "Settings"]


def __getattr__(name: str) -> Any:
    """``Settings`` and ``ConfigFileError``: imported when first asked for."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'kioku.settings' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
