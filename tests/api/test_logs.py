"""Secrets in query strings never reach the access log."""

from __future__ import annotations

import logging

from kioku.api.logs import RedactSecrets, redact, uvicorn_log_config


def test_secret_query_parameters_are_redacted() -> None:
    assert redact("/oauth/consent?ticket=kct_abc&x=1") == "/oauth/consent?ticket=[redacted]&x=1"
    assert redact("/cb?code=kac_1&state=s") == "/cb?code=[redacted]&state=s"
    assert redact("/api/v1/contexts/default/memories?limit=5") == (
        "/api/v1/contexts/default/memories?limit=5"
    )


def test_the_filter_rewrites_uvicorn_access_records() -> None:
    record = logging.LogRecord(
        "uvicorn.access", logging.INFO, __file__, 1, '%s - "%s %s HTTP/%s" %d',
        ("127.0.0.1:1", "GET", "/oauth/consent?ticket=kct_secret", "1.1", 200), None,
    )  # fmt: skip
    assert RedactSecrets().filter(record)
    assert "kct_secret" not in record.getMessage()
    assert uvicorn_log_config()["handlers"]["access"]["filters"] == ["redact"]
