"""Every setting's value in force and where it came from, secrets masked (``kioku config``)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import parse_qsl, urlencode, urlsplit

from pydantic import SecretStr

from kioku.settings.client import CLIENT_SETTINGS, client_values
from kioku.settings.file import config_file
from kioku.settings.model import Settings, environment_values, file_values, sections
from kioku.settings.sections import is_secret, variable_of

Source = Literal["default", "file", "environment"]
MASK = "***"
_SECRET_PARAMETERS = frozenset({"password", "passwd", "api_key", "apikey", "token", "secret"})


@dataclass(frozen=True)
class Row:
    """One setting as ``kioku config`` shows it."""

    name: str
    """``section.key``, as in the settings file (``client.*``: environment only)."""
    variable: str
    value: Any
    """The value in force, JSON-ready; a secret's is ``***`` when set."""
    source: Source


def masked(value: object, *, secret: bool) -> Any:
    """``value`` fit for a terminal or a log: a secret that is set becomes ``***``, a URL's
    password (and a ``password=``/``token=`` query parameter) too; paths become strings."""
    if isinstance(value, SecretStr):
        value = value.get_secret_value()
    if secret:
        return MASK if value else value
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, str):
        return masked_url(value)
    return value


def masked_url(text: str) -> str:
    """``text`` with the password of a URL in it (and secret query parameters) masked;
    anything that is not such a URL is returned as it is."""
    if "://" not in text:
        return text
    try:
        parts = urlsplit(text)
        password = parts.password
    except ValueError:
        return MASK  # not parsable: say nothing of it rather than leak it
    if password is not None:
        user, _, host = parts.netloc.rpartition("@")
        text = text.replace(parts.netloc, f"{user.partition(':')[0]}:{MASK}@{host}", 1)
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    if any(name.lower() in _SECRET_PARAMETERS for name, _ in pairs):
        hidden = [(n, MASK if n.lower() in _SECRET_PARAMETERS else v) for n, v in pairs]
        text = text.replace(f"?{parts.query}", "?" + urlencode(hidden, safe="*"), 1)
    return text


def describe() -> tuple[Path | None, list[Row]]:
    """The settings file in force and every setting, the server's then the client's."""
    settings = Settings()
    environment, in_file = environment_values(), file_values()
    rows = []
    for section, fields in sections().items():
        values = getattr(settings, section)
        for key, field in fields.items():
            source: Source = (
                "environment"
                if key in environment.get(section, {})
                else "file"
                if key in in_file.get(section, {})
                else "default"
            )
            value = masked(getattr(values, key), secret=is_secret(field))
            rows.append(Row(f"{section}.{key}", variable_of(field), value, source))
    client = client_values()
    for setting in CLIENT_SETTINGS:
        value = client.get(setting.key, setting.default)
        source = "environment" if setting.key in client else "default"
        value = masked(value, secret=setting.secret)
        rows.append(Row(f"client.{setting.key}", setting.variable, value, source))
    return config_file(), rows


def as_json(path: Path | None, rows: list[Row]) -> dict[str, Any]:
    """What ``kioku config --json`` prints: the file, then each setting by name."""
    return {
        "file": str(path) if path else None,
        "settings": {
            row.name: {k: v for k, v in asdict(row).items() if k != "name"} for row in rows
        },
    }
