"""Purge: GDPR-style erasure of a context's contents or of everything from one source.

Unlike ``forget`` (a soft delete) and ``delete_context`` (which drops the context too), a
purge removes every trace of the memories it covers, rows not flags: text, tokens (FTS5 /
tsvector), vectors and the vector cache, graph edges, feedback events, and the Sleep log
lines that quote them; for a whole context also its state keys, Sleep runs and idempotency
records. It keeps the context itself (name, settings, connector binding), so a connector can
feed it again. The audit log keeps the fact of the purge (ids and counts, never text).
"""

from __future__ import annotations

from dataclasses import asdict

from kioku.models import PurgeResult, PurgeSource
from kioku.service.contexts import ContextService
from kioku.service.guard import operation
from kioku.service.principal import Principal
from kioku.storage.ports import PurgePort
from kioku.storage.records import PurgeScope


class PurgeService:
    """Erase for good, and say what was removed."""

    def __init__(self, store: PurgePort, contexts: ContextService) -> None:
        self.store = store
        self.contexts = contexts

    @operation("admin", audited=True)
    def purge_context(self, principal: Principal, context_ref: str) -> PurgeResult:
        """Erase every memory of a context and every trace of them; keep the context."""
        context = self.contexts.resolve(principal, context_ref)
        counts = self.store.purge(principal.workspace_id, PurgeScope(context_id=context.id))
        return PurgeResult(**asdict(counts))

    @operation("admin", audited=True, in_context=False, allow_listed="narrows")
    def purge_source(self, principal: Principal, request: PurgeSource) -> PurgeResult:
        """Erase every memory whose ``source_uri`` starts with the prefix (in one context, or
        in every context the caller may see) and every trace of them."""
        allowed = principal.allowed_context_ids
        if request.context_id is not None:
            scopes = [self.contexts.resolve(principal, request.context_id).id]
        elif allowed is not None:
            scopes = sorted(allowed)  # a key with an allow-list reaches only those contexts
        else:
            scopes = [None]
        total: dict[str, int] = {}
        for context_id in scopes:
            counts = self.store.purge(
                principal.workspace_id,
                PurgeScope(context_id=context_id, source_prefix=request.source_uri_prefix),
            )
            for name, value in asdict(counts).items():
                total[name] = total.get(name, 0) + value
        return PurgeResult(**total)
