"""Who is calling, from which channel: the tenant is a parameter, never a global."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Channel = Literal["rest", "sdk", "mcp", "cli", "ui", "import", "connector", "sleep"]
Role = Literal["owner", "admin", "member", "viewer"]

# SPEC §4: the server stamps provenance from the channel a write came through.
_SOURCE_TYPE_BY_CHANNEL: dict[str, str] = {
    "mcp": "manual",
    "cli": "manual",
    "ui": "manual",
    "rest": "api",
    "sdk": "api",
    "import": "import",
    "connector": "connector",
    "sleep": "sleep",
}


@dataclass(frozen=True)
class Principal:
    """The caller: a workspace, a role, the channel used, and an optional context allow-list."""

    workspace_id: str
    role: Role = "owner"
    channel: Channel = "rest"
    allowed_context_ids: frozenset[str] | None = None
    key_id: str | None = None
    """The API key used, once keys exist; ``None`` for local (loopback dev, CLI, stdio) callers."""

    @property
    def source_type(self) -> str:
        """The ``source_type`` stamped on memories this caller writes."""
        return _SOURCE_TYPE_BY_CHANNEL[self.channel]

    @property
    def actor(self) -> str:
        """Who to record on append-only events (feedback, audit): the key, or the local channel."""
        return f"key:{self.key_id}" if self.key_id else f"local:{self.channel}"
