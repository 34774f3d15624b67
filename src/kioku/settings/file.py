"""The optional TOML settings file: where it is, and its tables checked against the sections.

The file is ``$KIOKU_CONFIG`` when that is set (empty: no file), else ``config.toml`` in the
user's config directory (``~/.config/kioku/config.toml`` on Linux) when it exists. Its tables
are the sections of ``kioku.settings.Settings`` (``[server] port = 8765``); the environment
overrides it. A key it does not know is refused, naming the key, never ignored: a misspelt
setting would otherwise leave the default in force without a word.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

CONFIG = "KIOKU_CONFIG"
"""The variable naming the settings file."""


class ConfigFileError(ValueError):
    """The settings file cannot be used: missing, not TOML, or a key no setting has."""


def default_config_file() -> Path:
    """Where the settings file is looked for when ``KIOKU_CONFIG`` is not set."""
    from platformdirs import user_config_dir

    return Path(user_config_dir("kioku")) / "config.toml"


def config_file(environ: Mapping[str, str] | None = None) -> Path | None:
    """The settings file in force: ``$KIOKU_CONFIG`` (empty: none), else the default one when
    it exists. A ``KIOKU_CONFIG`` naming no file is an error, not a silent default."""
    named = (os.environ if environ is None else environ).get(CONFIG)
    if named is not None:
        if not named:
            return None
        path = Path(named).expanduser()
        if not path.is_file():
            raise ConfigFileError(f"{CONFIG} names {path}, which is not a file")
        return path
    default = default_config_file()
    return default if default.is_file() else None


def read_config_file(path: Path, sections: Mapping[str, Iterable[str]]) -> dict[str, Any]:
    """The tables of the file at ``path``, each key checked against ``sections`` (section ->
    its setting names). ``ConfigFileError`` names the first key that is not a setting."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigFileError(f"cannot read the settings file {path}: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigFileError(f"the settings file {path} is not valid TOML: {exc}") from None
    for name, table in data.items():
        if name not in sections:
            raise ConfigFileError(f"{path}: {_unknown_section(name, table, sections)}")
        if not isinstance(table, dict):
            raise ConfigFileError(f"{path}: [{name}] must be a table of settings, not a value")
        known = list(sections[name])
        for key in table:
            if key not in known:
                raise ConfigFileError(
                    f"{path}: unknown setting {name}.{key} (the [{name}] settings are: "
                    f"{', '.join(known)})"
                )
    return data


def _unknown_section(name: str, value: object, sections: Mapping[str, Iterable[str]]) -> str:
    """What to say of a top-level ``name`` that is no section."""
    if name == "client":
        return (
            "unknown section [client]: the client's settings (KIOKU_URL, KIOKU_API_KEY) are "
            "read from the environment only"
        )
    if not isinstance(value, dict):
        owners = [section for section, keys in sections.items() if name in keys]
        where = f"; put it under [{owners[0]}]" if owners else ""
        return f"unknown setting {name} at the top level (settings go in their section{where})"
    return f"unknown section [{name}] (the sections are: {', '.join(sections)})"
