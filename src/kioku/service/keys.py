"""API keys: created with a role (and optionally a context allow-list and an expiry), shown
once, stored as a SHA-256 hash, revocable; and ``authenticate``, which turns a bearer key
into the ``Principal`` every service call takes.

Keys are 32 random bytes (``kk_`` + 43 URL-safe characters): far too many to guess, so a fast
hash is the right one (a slow password hash only helps low-entropy secrets). The lookup is by
hash, so how long it takes cannot depend on how much of a guessed key was right.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import uuid
from datetime import timedelta

from kioku.clock import Clock, system_clock
from kioku.errors import ForbiddenError, InvalidInputError, NotFoundError, UnauthorizedError
from kioku.models import ApiKey, ApiKeyCreated, ApiKeyPage, KeyCreate
from kioku.service.contexts import ContextService
from kioku.service.guard import operation
from kioku.service.principal import ROLE_RANK, Channel, Principal
from kioku.service.refusals import RefusalTally
from kioku.storage.ports import KeyPort
from kioku.storage.records import ApiKeyRow, AuditEvent
from kioku.storage.shared.keys import KeyStore

KEY_PREFIX = "kk_"
_TOUCH_EVERY = timedelta(minutes=1)


def hash_key(key: str) -> str:
    """The SHA-256 hex digest a key is stored and looked up under."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def key_view(row: ApiKeyRow) -> ApiKey:
    return ApiKey(
        id=row.id, name=row.name, prefix=row.prefix, role=row.role,
        context_ids=row.context_ids, created_by=row.created_by, created_at=row.created_at,
        expires_at=row.expires_at, revoked_at=row.revoked_at, last_used_at=row.last_used_at,
    )  # fmt: skip


def managed_keys(store: KeyStore, principal: Principal) -> list[ApiKeyRow]:
    """The keys ``principal`` may see and manage (revoked ones too): every key of the
    workspace, or for a key with a context allow-list only the keys confined to (some of)
    its own contexts -- never an unrestricted key."""
    rows = store.list_api_keys(principal.workspace_id)
    return [row for row in rows if principal.reaches(row.context_ids)]


class KeyService:
    """Create, list, revoke and check API keys."""

    def __init__(self, store: KeyPort, contexts: ContextService, clock: Clock = system_clock):
        self.store = store
        self.contexts = contexts
        self.clock = clock
        self.refusals = RefusalTally()

    @operation("admin", audited=True, in_context=False, allow_listed="narrows")
    def create_key(self, principal: Principal, data: KeyCreate) -> ApiKeyCreated:
        """A new key of the caller's workspace, at most the caller's role and within the
        caller's own context allow-list. The secret is in the answer and nowhere else."""
        if ROLE_RANK[data.role] > ROLE_RANK[principal.role]:
            raise ForbiddenError(f"a {principal.role} cannot create a {data.role} key")
        now = self.clock()
        if data.expires_at is not None and data.expires_at <= now:
            raise InvalidInputError("expires_at must be in the future", field="expires_at")
        context_ids = self._allow_list(principal, data.context_ids)
        secret = KEY_PREFIX + secrets.token_urlsafe(32)
        row = ApiKeyRow(
            id=str(uuid.uuid4()), workspace_id=principal.workspace_id, name=data.name,
            prefix=secret[:10], key_hash=hash_key(secret), role=data.role,
            context_ids=context_ids, created_by=principal.actor, created_at=now,
            expires_at=data.expires_at, revoked_at=None, last_used_at=None,
        )  # fmt: skip
        self.store.insert_api_key(row)
        return ApiKeyCreated(**key_view(row).model_dump(), key=secret)

    def _allow_list(self, principal: Principal, refs: list[str] | None) -> list[str] | None:
        """Resolve the requested contexts (404 if not visible); inherit the caller's list."""
        if refs is None:
            allowed = principal.allowed_context_ids
            return None if allowed is None else sorted(allowed)
        return sorted({self.contexts.resolve(principal, ref).id for ref in refs})

    @operation("admin", in_context=False, allow_listed="narrows")
    def list_keys(self, principal: Principal) -> ApiKeyPage:
        """Every key of the workspace the caller may manage (secrets are never shown again)."""
        return ApiKeyPage(items=[key_view(r) for r in managed_keys(self.store, principal)])

    @operation("admin", audited=True, in_context=False, allow_listed="resolves")
    def revoke_key(self, principal: Principal, key_id: str) -> None:
        """Revoke a key for good; it stops working at once. Only an owner revokes an owner key;
        a key outside the caller's allow-list is not found, like a missing one."""
        row = self.store.get_api_key(principal.workspace_id, key_id)
        if row is None or row.revoked_at is not None or not principal.reaches(row.context_ids):
            raise NotFoundError(f"key {key_id!r} not found", field="key_id")
        if ROLE_RANK[row.role] > ROLE_RANK[principal.role]:
            raise ForbiddenError(f"a {principal.role} cannot revoke a {row.role} key")
        self.store.revoke_api_key(principal.workspace_id, key_id, self.clock())

    def authenticate(self, key: str, channel: Channel) -> Principal:
        """The principal a bearer key stands for; ``UnauthorizedError`` (audited) otherwise."""
        now = self.clock()
        digest = hash_key(key)
        row = self.store.find_api_key(digest) if key.startswith(KEY_PREFIX) else None
        if row is None or not hmac.compare_digest(row.key_hash, digest):
            self._refuse(None, channel, "unknown key")
        assert row is not None
        if row.revoked_at is not None:
            self._refuse(row, channel, "revoked key")
        if row.expires_at is not None and row.expires_at <= now:
            self._refuse(row, channel, "expired key")
        if row.last_used_at is None or now - row.last_used_at > _TOUCH_EVERY:
            self.store.touch_api_key(row.id, now)
        return self._principal(row, channel)

    def key_principal(self, workspace_id: str, key_id: str, channel: Channel) -> Principal | None:
        """The principal of a key known by id (an OAuth grant's), if it still works."""
        row = self.store.get_api_key(workspace_id, key_id)
        if row is None or row.revoked_at is not None:
            return None
        if row.expires_at is not None and row.expires_at <= self.clock():
            return None
        return self._principal(row, channel)

    def _principal(self, row: ApiKeyRow, channel: Channel) -> Principal:
        return Principal(
            workspace_id=row.workspace_id,
            role=row.role,
            # A connector key is a connector whatever surface it comes through: its writes
            # are stamped source_type=connector, so they are always external (docs/concepts.md).
            channel="connector" if row.role == "connector" else channel,
            allowed_context_ids=None if row.context_ids is None else frozenset(row.context_ids),
            key_id=row.id,
        )

    def _refuse(self, row: ApiKeyRow | None, channel: Channel, reason: str) -> None:
        # The key itself is never recorded, not even in part: only which key id it was.
        now = self.clock()
        workspace_id = None if row is None else row.workspace_id
        actor = "anonymous" if row is None else f"key:{row.id}"
        refusals = self.refusals.count((workspace_id, actor, channel, reason), now)
        if refusals is not None:  # else counted, and told by the next row of its kind
            self.store.append_audit(
                AuditEvent(
                    workspace_id=workspace_id, at=now, actor=actor, channel=channel,
                    action="authenticate", outcome="denied",
                    detail={"reason": reason, "refusals": refusals},
                )
            )  # fmt: skip
        raise UnauthorizedError(f"{reason}: send a valid API key as 'Authorization: Bearer kk_...'")
