"""kioku's settings, read in one place: ``Settings`` (the server's, by section) and the
client's (``kioku.settings.client``, standard library only).

``Settings`` loads with pydantic on first use of its name, not with the package: the SDK, the
hook and the quick commands import ``kioku.settings.client`` and must not pay for pydantic
(``from kioku.settings import Settings`` works as before). A new setting: see "A new setting"
in docs/architecture.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kioku.lazy_names import lazy_names

if TYPE_CHECKING:
    from kioku.settings.file import ConfigFileError
    from kioku.settings.model import Settings

_LAZY = {"Settings": "kioku.settings.model", "ConfigFileError": "kioku.settings.file"}

__all__ = ["ConfigFileError", "Settings"]

__getattr__ = lazy_names(__name__, _LAZY)  # ``Settings``, ``ConfigFileError``: on first use
