"""Reading the append-only audit log (writing is done by ``guard.operation`` and key checks)."""

from __future__ import annotations

from kioku.errors import InvalidInputError
from kioku.models import AuditEntry, AuditPage
from kioku.service.cursors import pack_cursor, unpack_cursor
from kioku.service.guard import operation
from kioku.service.keys import managed_keys
from kioku.service.principal import Principal
from kioku.storage.ports import KeyPort
from kioku.storage.records import AuditScope

MAX_PAGE = 500


class AuditService:
    """Who did what, and who was refused: writes, deletes, key changes, denied attempts."""

    def __init__(self, store: KeyPort) -> None:
        self.store = store

    @operation("admin", in_context=False, allow_listed="narrows")
    def list_audit(
        self, principal: Principal, *, cursor: str | None = None, limit: int = 100
    ) -> AuditPage:
        """The workspace's audit lines, newest first (admins and owners only). A key with a
        context allow-list reads the lines about its contexts and about the keys it manages."""
        if not 1 <= limit <= MAX_PAGE:
            raise InvalidInputError(f"limit must be between 1 and {MAX_PAGE}", field="limit")
        before = unpack_cursor(cursor, int)[0] if cursor else None
        rows = self.store.list_audit(
            principal.workspace_id, before, limit + 1, self._scope(principal)
        )
        items = [
            AuditEntry(
                seq=r.seq, at=r.at, actor=r.actor, channel=r.channel, action=r.action,
                outcome=r.outcome, context_id=r.context_id, target=r.target,
                detail=r.detail,
            )
            for r in rows[:limit]
        ]  # fmt: skip
        return AuditPage(
            items=items, next_cursor=pack_cursor(rows[limit - 1].seq) if len(rows) > limit else None
        )

    def _scope(self, principal: Principal) -> AuditScope | None:
        allowed = principal.allowed_context_ids
        if allowed is None:
            return None
        keys = frozenset(row.id for row in managed_keys(self.store, principal))
        return AuditScope(context_ids=allowed, key_ids=keys)
