"""One JSON object a line for ``KIOKU_LOG_FORMAT=json``: what log collectors (Loki, Cloud
Logging, Elastic) parse without a pattern. The secret redaction runs first (it is a filter on
every handler), so what is formatted here is already redacted."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any


class JsonFormatter(logging.Formatter):
    """``{"time", "level", "logger", "message", ...}``; an access line adds ``client``,
    ``method``, ``path``, ``http_version`` and ``status``; a line logged with
    ``extra={"fields": {...}}`` adds those (an MCP tool call: ``tool``, ``outcome``,
    ``duration_ms``...; a background job: ``job``, ``holder``, ``result``); an exception
    adds ``exception``."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        args = record.args
        if record.name == "uvicorn.access" and isinstance(args, tuple) and len(args) == 5:
            client, method, path, version, status = args  # uvicorn's access record, by position
            line.update(client=client, method=method, path=path, http_version=version,
                        status=status)  # fmt: skip
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            line.update({k: v for k, v in fields.items() if k not in line})
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False, default=str)
