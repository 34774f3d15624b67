"""Access-log hygiene: secrets that travel in query strings (OAuth consent tickets and codes)
are redacted before uvicorn writes the request line."""

from __future__ import annotations

import copy
import logging
import re
from typing import Any

_SECRET_PARAMS = re.compile(
    r"\b(ticket|code|token|access_token|refresh_token|key|api_key)=[^&\s\"]+", re.IGNORECASE
)


def redact(text: str) -> str:
    """``/oauth/consent?ticket=kct_x`` → ``/oauth/consent?ticket=[redacted]``."""
    return _SECRET_PARAMS.sub(r"\1=[redacted]", text)


class RedactSecrets(logging.Filter):
    """A logging filter for ``uvicorn.access`` records (their path is one of ``record.args``)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(redact(a) if isinstance(a, str) else a for a in record.args)
        return True


def uvicorn_log_config() -> dict[str, Any]:
    """uvicorn's default logging configuration with the access log redacted."""
    from uvicorn.config import LOGGING_CONFIG

    config = copy.deepcopy(LOGGING_CONFIG)
    config.setdefault("filters", {})["redact"] = {"()": RedactSecrets}
    config["handlers"]["access"]["filters"] = ["redact"]
    # kioku's own lines (background jobs, worker errors) in the same format as uvicorn's.
    config["loggers"]["kioku"] = {"handlers": ["default"], "level": "INFO", "propagate": False}
    return config
