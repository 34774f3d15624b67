"""``Settings``: the server's settings in sections, from the environment, the file, defaults.

Precedence, highest first: the values a caller passes (``Settings({"server": {"port": 1}})``,
as ``kioku serve --port`` does), the environment (``KIOKU_PORT``), the settings file
(``[server] port``, ``kioku.settings.file``), the default. A bad value is refused naming where
it came from: the variable, the file's key, or the section and field.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from pydantic import Field, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import InitErrorDetails
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from kioku.settings.file import config_file, read_config_file
from kioku.settings.sections import (
    DatabaseSettings,
    EmbedderSettings,
    JobsSettings,
    LimitsSettings,
    MetricsSettings,
    RecallSettings,
    RerankerSettings,
    Section,
    ServerSettings,
    SleepSettings,
    variable_of,
)

Overrides = Mapping[str, Mapping[str, Any]]
"""Values by section and field, the shape of the settings file: ``{"server": {"port": 1}}``."""


class Settings(BaseSettings):
    """Every knob the server reads, by section. Only ``runtime.py`` and the CLI entry build one."""

    model_config = SettingsConfigDict(extra="forbid")

    server: ServerSettings = Field(default_factory=ServerSettings)
    database: DatabaseSettings = Field(default_factory=DatabaseSettings)
    embedder: EmbedderSettings = Field(default_factory=EmbedderSettings)
    recall: RecallSettings = Field(default_factory=RecallSettings)
    reranker: RerankerSettings = Field(default_factory=RerankerSettings)
    limits: LimitsSettings = Field(default_factory=LimitsSettings)
    metrics: MetricsSettings = Field(default_factory=MetricsSettings)
    jobs: JobsSettings = Field(default_factory=JobsSettings)
    sleep: SleepSettings = Field(default_factory=SleepSettings)

    def __init__(self, overrides: Overrides | None = None) -> None:
        """Read the environment and the settings file; ``overrides`` win over both."""
        try:
            values: dict[str, Any] = {name: dict(v) for name, v in (overrides or {}).items()}
            super().__init__(**values)
        except ValidationError as exc:
            raise _named(exc, overrides or {}) from None

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """The caller's values, then each field's own variable, then the settings file."""
        variables = _Source(settings_cls, environment_values)
        return (init_settings, variables, _Source(settings_cls, file_values))

    @property
    def effective_rate_limit_per_minute(self) -> int:
        """The limit the server applies: ``--dev`` serves its one local user unthrottled (an
        agent loop, an eval or a benchmark would meet 429s) unless KIOKU_RATE_LIMIT_PER_MINUTE
        is set explicitly (or in the file); every other mode applies ``rate_limit_per_minute``."""
        if self.server.dev and "rate_limit_per_minute" not in self.limits.model_fields_set:
            return 0
        return self.limits.rate_limit_per_minute


def sections() -> dict[str, dict[str, FieldInfo]]:
    """Every section's fields, in the model's order: ``{"server": {"host": FieldInfo, ...}}``."""
    found: dict[str, dict[str, FieldInfo]] = {}
    for name, field in Settings.model_fields.items():
        model = field.annotation
        assert isinstance(model, type) and issubclass(model, Section)
        found[name] = dict(model.model_fields)
    return found


def environment_values(environ: Mapping[str, str] | None = None) -> dict[str, dict[str, str]]:
    """The settings the environment sets, by section and field, as the strings it holds.
    Names match whatever their case, as they always have (pydantic-settings' default)."""
    environ = os.environ if environ is None else environ
    folded = {name.upper(): value for name, value in environ.items()}
    found: dict[str, dict[str, str]] = {}
    for section, fields in sections().items():
        for name, field in fields.items():
            variable = variable_of(field)
            value = environ.get(variable, folded.get(variable))
            if value is not None:
                found.setdefault(section, {})[name] = value
    return found


def file_values(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The settings the settings file sets (``{}`` without a file), its keys checked."""
    path = config_file(environ)
    if path is None:
        return {}
    return read_config_file(path, {name: list(fields) for name, fields in sections().items()})


class _Source(PydanticBaseSettingsSource):
    """A pydantic-settings source of nested values, from one of the functions above."""

    def __init__(self, settings_cls: type[BaseSettings], read: Any) -> None:
        super().__init__(settings_cls)
        self._read = read

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False  # unused: __call__ reads every field at once

    def __call__(self) -> dict[str, Any]:
        return self._read()


def _named(exc: ValidationError, overrides: Overrides) -> ValidationError:
    """``exc`` with each error located where its value came from: ``KIOKU_PORT`` when the
    environment set it, ``server.port in <file>`` for the file, else ``server.port``."""
    fields = sections()
    environment = environment_values()
    errors: list[InitErrorDetails] = []
    for error in exc.errors():
        loc = tuple(error["loc"])
        if len(loc) >= 2 and str(loc[0]) in fields and str(loc[1]) in fields[str(loc[0])]:
            section, key = str(loc[0]), str(loc[1])
            if key in overrides.get(section, {}):
                pass
            elif key in environment.get(section, {}):
                loc = (variable_of(fields[section][key]), *loc[2:])
            else:
                path = config_file()
                loc = (f"{section}.{key}" + (f" in {path}" if path else ""), *loc[2:])
        details = InitErrorDetails(type=error["type"], loc=loc, input=error["input"])
        if "ctx" in error:
            details["ctx"] = error["ctx"]
        errors.append(details)
    return ValidationError.from_exception_data(exc.title, errors)
