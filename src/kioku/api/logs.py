"""Log hygiene: a kioku secret never reaches a log line in clear, wherever it travels in a
request line (path, query, percent-encoded or not), and neither does the value of a query
parameter whose name says it is a credential."""

from __future__ import annotations

import copy
import logging
import re
from typing import Any

REDACTED = "[redacted]"
# Every secret kioku issues is a prefix and 256 random bits, url-safe base64 (43 characters):
# API keys kk_, OAuth consent tickets kct_, codes kac_, access tokens kat_, refresh tokens krt_.
_PREFIXES = ("kk_", "kct_", "kac_", "kat_", "krt_")
_BODY_CHARS = "A-Za-z0-9_-"


def _encodable(char: str) -> str:
    """A regex for ``char`` written plain or percent-encoded (``_`` or ``%5F``)."""
    return f"(?:{re.escape(char)}|%{ord(char):02X})"


_SECRET_SHAPE = re.compile(
    "(?:"
    + "|".join("".join(_encodable(c) for c in prefix) for prefix in _PREFIXES)
    + f")(?:[{_BODY_CHARS}]|%[0-9A-Fa-f]{{2}}){{16,}}",
    re.IGNORECASE,
)
# A query (or form-like) parameter whose name says credential: its value goes, whatever it is.
_SECRET_PARAMS = re.compile(
    r"(?<![^?&;/\s\"])([^=&;?/\s\"]*(?:key|token|secret|auth|bearer|session|passw|ticket|code"
    r"|csrf|credential|signature)[^=&;?\s\"]*)=[^&;\s\"]*",
    re.IGNORECASE,
)


def redact(text: str) -> str:
    """``/oauth/consent?ticket=kct_x`` → ``/oauth/consent?ticket=[redacted]``;
    ``/api/v1/kk_abc…`` → ``/api/v1/[redacted]``."""
    text = _SECRET_PARAMS.sub(rf"\1={REDACTED}", text)
    return _SECRET_SHAPE.sub(REDACTED, text)


class RedactSecrets(logging.Filter):
    """A logging filter for every handler: ``uvicorn.access`` records carry the request line in
    ``record.args``; other records (uvicorn's errors, kioku's own lines) may quote one in
    their message or arguments."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = redact(record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(redact(a) if isinstance(a, str) else a for a in record.args)
        return True


def uvicorn_log_config(log_format: str = "text") -> dict[str, Any]:
    """uvicorn's default logging configuration with every handler redacted; ``json``: one
    JSON object a line (``kioku/api/log_json.py``) on every handler."""
    from uvicorn.config import LOGGING_CONFIG

    config = copy.deepcopy(LOGGING_CONFIG)
    if log_format == "json":
        config["formatters"] = {"json": {"()": "kioku.api.log_json.JsonFormatter"}}
        for handler in config["handlers"].values():
            handler["formatter"] = "json"
    config.setdefault("filters", {})["redact"] = {"()": RedactSecrets}
    for handler in config["handlers"].values():
        handler["filters"] = ["redact"]
    # kioku's own lines (background jobs, worker errors) in the same format as uvicorn's.
    config["loggers"]["kioku"] = {"handlers": ["default"], "level": "INFO", "propagate": False}
    return config
