"""Sign-in sessions of the web UI, held server-side in this process's memory.

A session stands for one API key (or, on a ``--dev`` server, for the local owner). The cookie
carries a random 256-bit id; only its SHA-256 hash is kept here, so a dump of the table cannot
be replayed as cookies. Each session has its own CSRF token and a fixed lifetime (12 h).

The session never caches the key's rights: every request turns the session back into a
``Principal`` through ``KeyService.key_principal``, so revoking or expiring the key ends the
session on its next request. Sessions are per process: a restart signs everyone out, and
replicas behind a load balancer need sticky sessions for the UI (REST and MCP need none).
"""

from __future__ import annotations

import hashlib
import secrets
import threading
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime, timedelta

SESSION_TTL = timedelta(hours=12)
MAX_SESSIONS = 10_000
"""Oldest sessions are dropped beyond this, so a flood of sign-ins costs bounded memory."""


def _digest(session_id: str) -> str:
    return hashlib.sha256(session_id.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Session:
    """Who signed in (a key of a workspace, or the dev-mode local owner) and until when."""

    workspace_id: str
    key_id: str | None
    """``None``: the local owner of a ``--dev`` server."""
    csrf_token: str
    created_at: datetime
    expires_at: datetime


class SessionStore:
    """Create, find and end sessions; thread-safe (sync handlers run on a thread pool)."""

    def __init__(self, ttl: timedelta = SESSION_TTL, max_sessions: int = MAX_SESSIONS) -> None:
        self.ttl = ttl
        self.max_sessions = max_sessions
        self._sessions: OrderedDict[str, Session] = OrderedDict()
        self._lock = threading.Lock()

    def create(self, workspace_id: str, key_id: str | None, now: datetime) -> tuple[str, Session]:
        """A new session; returns the secret id (for the cookie, shown nowhere else)."""
        session_id = secrets.token_urlsafe(32)
        session = Session(
            workspace_id=workspace_id,
            key_id=key_id,
            csrf_token=secrets.token_urlsafe(32),
            created_at=now,
            expires_at=now + self.ttl,
        )
        with self._lock:
            self._sessions[_digest(session_id)] = session
            while len(self._sessions) > self.max_sessions:
                self._sessions.popitem(last=False)
        return session_id, session

    def find(self, session_id: str, now: datetime) -> Session | None:
        """The live session of a cookie value; an expired one is dropped and not found."""
        digest = _digest(session_id)
        with self._lock:
            session = self._sessions.get(digest)
            if session is not None and session.expires_at <= now:
                del self._sessions[digest]
                return None
            return session

    def end(self, session_id: str) -> None:
        """Sign out: the cookie value stops working at once."""
        with self._lock:
            self._sessions.pop(_digest(session_id), None)

    def __len__(self) -> int:
        return len(self._sessions)
