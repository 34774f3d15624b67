"""Sign-in sessions of the web UI, held server-side in this process's memory.

A session stands for one API key (or, on a ``--dev`` server, for the local owner). The cookie
carries a random 256-bit id; only its SHA-256 hash is kept here, so a dump of the table cannot
be replayed as cookies. Each session has its own CSRF token and a fixed lifetime (12 h).

The session never caches the key's rights: every request turns the session back into a
``Principal`` through ``KeyService.key_principal``, so revoking or expiring the key ends the
session on its next request. Sessions are per process: a restart signs everyone out, and
replicas behind a load balancer need sticky sessions for the UI (REST and MCP need none).

The table is bounded per key, per workspace and in all (``MAX_SESSIONS_PER_KEY``…), so a flood
of sign-ins costs bounded memory, and a key or workspace that fills its quota ends only its
own oldest sessions, never another workspace's (``Quotas``). The sign-in form's token
(``SignInForms``) is issued here too, bounded per address, and is good for one post.
"""

from __future__ import annotations

import hashlib
import itertools
import secrets
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Generic, TypeVar

SESSION_TTL = timedelta(hours=12)
MAX_SESSIONS = 10_000
"""Sessions of this process in all; beyond it, one of whoever holds most goes (``Quotas``)."""
MAX_SESSIONS_PER_WORKSPACE = 1_000
"""Sessions of one workspace; beyond it, one of its own keys' goes (the key holding most)."""
MAX_SESSIONS_PER_KEY = 50
"""Sessions of one API key (a person's browsers and devices); beyond it, its oldest goes."""
SIGNIN_FORM_TTL = timedelta(minutes=10)
MAX_SIGNIN_FORMS = 10_000
"""Sign-in forms waiting to be posted, in all; beyond it, one of the busiest address's goes."""
MAX_SIGNIN_FORMS_PER_ADDRESS = 50
"""Sign-in forms one address may hold open; beyond it, its oldest goes."""

V = TypeVar("V")
Path = tuple[str | None, ...]


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


class Quotas(Generic[V]):
    """Values by id, each under a path of groups (e.g. workspace, key), bounded in all
    (``limits[0]``) and per group at each level (``limits[i]``: per group of the first ``i``
    names). Past a bound, the value that goes is the oldest of that group's biggest subgroup,
    level by level down (ties: the subgroup holding the older value): a group that fills its
    quota loses only its own, and the bound in all takes from whoever holds most. Not
    thread-safe (its owners lock)."""

    def __init__(self, limits: Sequence[int]) -> None:
        if min(limits) < 1:
            raise ValueError("every quota must allow at least one")
        self.limits = tuple(limits)
        self._values: dict[str, V] = {}
        self._paths: dict[str, Path] = {}
        self._groups: dict[Path, OrderedDict[str, int]] = {}
        """Every group (path prefix) → its ids, oldest first, with their order of arrival."""
        self._children: dict[Path, set[Path]] = {}
        self._arrivals = itertools.count()

    def add(self, id_: str, path: Path, value: V) -> list[V]:
        """Keep ``value`` under ``path``; returns the values dropped to stay within bounds."""
        if len(path) != len(self.limits) - 1:
            raise ValueError(f"a path has {len(self.limits) - 1} names")
        self.pop(id_)
        arrival = next(self._arrivals)
        self._values[id_], self._paths[id_] = value, path
        for depth in range(len(path) + 1):
            group = path[:depth]
            self._groups.setdefault(group, OrderedDict())[id_] = arrival
            if depth:
                self._children.setdefault(path[: depth - 1], set()).add(group)
        dropped: list[V] = []
        for depth in range(len(path), -1, -1):  # the key's own bound first, the total last
            group = path[:depth]
            while len(self._groups.get(group, ())) > self.limits[depth]:
                dropped.append(self._drop(self._victim(group)))
        return dropped

    def get(self, id_: str) -> V | None:
        return self._values.get(id_)

    def pop(self, id_: str) -> V | None:
        """Remove one value (``None`` if there was none)."""
        if id_ not in self._values:
            return None
        return self._drop(id_)

    def oldest(self) -> tuple[str, V] | None:
        """The value that arrived first, with its id."""
        everyone = self._groups.get(())
        if not everyone:
            return None
        id_ = next(iter(everyone))
        return id_, self._values[id_]

    def count(self, *path: str | None) -> int:
        """How many values a group holds (no names: all of them)."""
        return len(self._groups.get(tuple(path), ()))

    def __len__(self) -> int:
        return len(self._values)

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __contains__(self, id_: object) -> bool:
        return id_ in self._values

    def _victim(self, group: Path) -> str:
        while group in self._children:
            group = max(self._children[group], key=self._weight)
        return next(iter(self._groups[group]))

    def _weight(self, group: Path) -> tuple[int, int]:
        members = self._groups[group]
        return len(members), -next(iter(members.values()))

    def _drop(self, id_: str) -> V:
        path = self._paths.pop(id_)
        value = self._values.pop(id_)
        for depth in range(len(path), -1, -1):
            group = path[:depth]
            members = self._groups[group]
            del members[id_]
            if not members:
                del self._groups[group]
                if depth:
                    parent = path[: depth - 1]
                    self._children[parent].discard(group)
                    if not self._children[parent]:
                        del self._children[parent]
        return value


class SessionStore:
    """Create, find and end sessions; thread-safe (sync handlers run on a thread pool).

    Bounded per key, per workspace and in all (defaults: the module's ``MAX_SESSIONS…``
    constants, read when the store is made): the sessions that go are the oldest of the key,
    or workspace, that went past its quota (``Quotas``)."""

    def __init__(
        self,
        ttl: timedelta = SESSION_TTL,
        max_sessions: int | None = None,
        *,
        per_workspace: int | None = None,
        per_key: int | None = None,
    ) -> None:
        self.ttl = ttl
        self.max_sessions = MAX_SESSIONS if max_sessions is None else max_sessions
        self.per_workspace = MAX_SESSIONS_PER_WORKSPACE if per_workspace is None else per_workspace
        self.per_key = MAX_SESSIONS_PER_KEY if per_key is None else per_key
        self._sessions: Quotas[Session] = Quotas(
            (self.max_sessions, self.per_workspace, self.per_key)
        )
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
            self._drop_expired(now)
            self._sessions.add(_digest(session_id), (workspace_id, key_id), session)
        return session_id, session

    def find(self, session_id: str, now: datetime) -> Session | None:
        """The live session of a cookie value; an expired one is dropped and not found."""
        digest = _digest(session_id)
        with self._lock:
            session = self._sessions.get(digest)
            if session is not None and session.expires_at <= now:
                self._sessions.pop(digest)
                return None
            return session

    def end(self, session_id: str) -> None:
        """Sign out: the cookie value stops working at once."""
        with self._lock:
            self._sessions.pop(_digest(session_id))

    def count(self, workspace_id: str | None = None, key_id: str | None = None) -> int:
        """Sessions held (in all, of a workspace, or of one of its keys), expired ones too."""
        with self._lock:
            if workspace_id is None:
                return len(self._sessions)
            if key_id is None:
                return self._sessions.count(workspace_id)
            return self._sessions.count(workspace_id, key_id)

    def __len__(self) -> int:
        return len(self._sessions)

    def _drop_expired(self, now: datetime) -> None:
        # One lifetime for all: the oldest session is the first to expire.
        while (first := self._sessions.oldest()) is not None and first[1].expires_at <= now:
            self._sessions.pop(first[0])


class SignInForms:
    """The tokens of sign-in forms handed out, each good for one post within its lifetime
    (a login form replayed, or posted twice, is refused). Bounded per address and in all
    (``Quotas``: an address that opens too many forms loses its own oldest). Thread-safe."""

    def __init__(
        self,
        ttl: timedelta = SIGNIN_FORM_TTL,
        max_forms: int | None = None,
        *,
        per_address: int | None = None,
    ) -> None:
        self.ttl = ttl
        limits = (
            MAX_SIGNIN_FORMS if max_forms is None else max_forms,
            MAX_SIGNIN_FORMS_PER_ADDRESS if per_address is None else per_address,
        )
        self._forms: Quotas[datetime] = Quotas(limits)
        self._lock = threading.Lock()

    def issue(self, address: str, now: datetime) -> str:
        """A fresh token for a form shown to ``address`` (kept as its hash only)."""
        token = secrets.token_urlsafe(24)
        with self._lock:
            while (first := self._forms.oldest()) is not None and first[1] <= now:
                self._forms.pop(first[0])
            self._forms.add(_digest(token), (address,), now + self.ttl)
        return token

    def take(self, token: str, now: datetime) -> bool:
        """Use up a token: whether it was handed out, not used yet and not expired."""
        if not token:
            return False
        with self._lock:
            expires_at = self._forms.pop(_digest(token))
        return expires_at is not None and expires_at > now

    def __len__(self) -> int:
        return len(self._forms)
