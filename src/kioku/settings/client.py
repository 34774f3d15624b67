"""The client's settings: where the server is, the key to send, whether to show tracebacks.

Standard library only, and nothing of the server's settings: the SDK, the quick commands and
the ``kioku-hook`` hook read these on every call of an agent harness and must not pay for
pydantic. They come from the environment only (the settings file is the server's).
``kioku config`` lists them with the server's.
"""

from __future__ import annotations

import os
from typing import NamedTuple

URL = "KIOKU_URL"
API_KEY = "KIOKU_API_KEY"
DEBUG = "KIOKU_DEBUG"
DEFAULT_URL = "http://127.0.0.1:8765"


class ClientSetting(NamedTuple):
    """One client setting, as ``kioku config`` and docs/operations.md list it."""

    key: str
    variable: str
    default: str | None
    secret: bool
    description: str


CLIENT_SETTINGS = (
    ClientSetting(
        "url", URL, DEFAULT_URL, False,
        "The server the SDK, ``kioku-hook`` and ``kioku COMMAND --url`` talk to (the commands "
        "use the local database when it is not set).",
    ),
    ClientSetting(
        "api_key", API_KEY, None, True,
        "Sent as ``Authorization: Bearer`` by the SDK, the hooks and the commands.",
    ),
    ClientSetting(
        "debug", DEBUG, None, False,
        "``1``: an error of a command also prints its traceback (``kioku --debug COMMAND``).",
    ),
)  # fmt: skip


def server_url() -> str | None:
    """``$KIOKU_URL``, or None when it is unset or empty."""
    return os.environ.get(URL) or None


def api_key() -> str | None:
    """``$KIOKU_API_KEY``, or None when it is unset or empty."""
    return os.environ.get(API_KEY) or None


def client_values() -> dict[str, str]:
    """The client settings the environment sets, by key."""
    return {s.key: os.environ[s.variable] for s in CLIENT_SETTINGS if s.variable in os.environ}
