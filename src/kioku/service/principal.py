"""Who is calling, from which channel: the tenant is a parameter, never a global."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Literal

from kioku.vocabulary import KeyRole as Role
from kioku.vocabulary import SourceType

Channel = Literal["rest", "sdk", "mcp", "cli", "ui", "import", "connector", "sleep"]
Permission = Literal["read", "feedback", "write", "admin", "ingest"]

ROLE_RANK: dict[str, int] = {"connector": 0, "viewer": 0, "member": 1, "admin": 2, "owner": 3}
# A viewer reads, recalls, loads the pinned set and state, and gives feedback; a member also
# writes memories and state; an admin manages contexts and keys; the owner may do everything.
# A connector key only ingests (a worker feeding a Slack, a wiki...): it reads nothing back,
# and everything it writes is stamped source_type=connector (see ``Principal.channel``).
# Admins and owners may ingest too (to run a worker by hand); ingest stamps connector anyway.
ROLE_PERMISSIONS: dict[str, frozenset[str]] = {
    "viewer": frozenset({"read", "feedback"}),
    "member": frozenset({"read", "feedback", "write"}),
    "admin": frozenset({"read", "feedback", "write", "admin", "ingest"}),
    "owner": frozenset({"read", "feedback", "write", "admin", "ingest"}),
    "connector": frozenset({"ingest"}),
}
# OAuth scopes narrow what a token may do, whatever the role of the key that granted it.
SCOPE_PERMISSIONS: dict[str, frozenset[str]] = {
    "memory:read": frozenset({"read", "feedback"}),
    "memory:write": frozenset({"write"}),
    "memory:admin": frozenset({"admin", "ingest"}),
}

# The server stamps provenance from the channel a write came through (docs/concepts.md,
# "Provenance is stamped by the server").
_SOURCE_TYPE_BY_CHANNEL: dict[str, SourceType] = {
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
    """The API key used; ``None`` for local (loopback dev, CLI, stdio) callers."""
    scopes: frozenset[str] | None = None
    """OAuth scopes of the token used, if any: they narrow the role's permissions."""

    def can(self, permission: str) -> bool:
        """Whether the role (and, for an OAuth token, its scopes) allows ``permission``."""
        if permission not in ROLE_PERMISSIONS[self.role]:
            return False
        if self.scopes is None:
            return True
        return any(permission in SCOPE_PERMISSIONS.get(scope, ()) for scope in self.scopes)

    @property
    def confined(self) -> bool:
        """A key with a context allow-list: it acts inside those contexts and nowhere else,
        for administration too (docs/security.md, "What an allow-listed key may do")."""
        return self.allowed_context_ids is not None

    def reaches(self, context_ids: Iterable[str] | None) -> bool:
        """Whether every context of ``context_ids`` is within this caller's allow-list.

        ``None`` stands for the whole workspace (an unrestricted key's reach): only an
        unconfined caller reaches it. The one rule every allow-list check goes through."""
        if self.allowed_context_ids is None:
            return True
        return context_ids is not None and set(context_ids) <= self.allowed_context_ids

    def via(self, channel: Channel) -> Principal:
        """The same caller writing through ``channel`` (an operation that is a channel of its
        own, like connector ingestion, stamps its own provenance)."""
        return replace(self, channel=channel)

    @property
    def source_type(self) -> SourceType:
        """The ``source_type`` stamped on memories this caller writes."""
        return _SOURCE_TYPE_BY_CHANNEL[self.channel]

    @property
    def actor(self) -> str:
        """Who to record on append-only events (feedback, audit): the key, or the local channel."""
        return f"key:{self.key_id}" if self.key_id else f"local:{self.channel}"
