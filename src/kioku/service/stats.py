"""``stats``: what a context holds, lane by lane. Counts only: nothing is read in full."""

from __future__ import annotations

from kioku.clock import Clock, system_clock
from kioku.models import ContextStats
from kioku.service.contexts import ContextService
from kioku.service.guard import operation
from kioku.service.principal import Principal
from kioku.storage.ports import StatsPort


class StatsService:
    """Counts per lane for the agent, the CLI and the UI."""

    def __init__(self, store: StatsPort, contexts: ContextService, clock: Clock = system_clock):
        self.store = store
        self.contexts = contexts
        self.clock = clock

    @operation("read")
    def stats(self, principal: Principal, context_ref: str) -> ContextStats:
        """Memories (live, deleted, superseded, pinned, triggered, external, by embedding
        status), live state keys, feedback events, the embedding model, the last Sleep run."""
        context = self.contexts.resolve(principal, context_ref)
        counts = self.store.context_counts(principal.workspace_id, context.id, self.clock())
        runs = self.store.list_sleep_runs(principal.workspace_id, context.id)
        last = runs[0] if runs else None
        return ContextStats(
            context_id=context.id,
            name=context.name,
            trust_tier=context.trust_tier,
            memories=counts.live,
            deleted=counts.deleted,
            superseded=counts.superseded,
            pinned=counts.pinned,
            triggered=counts.triggered,
            external=counts.external,
            embeddings=counts.embedding,
            embedding_model=context.embedding_model,
            state_keys=counts.state_keys,
            feedback={"helpful": counts.helpful, "unhelpful": counts.unhelpful},
            last_sleep=last.started_at if last else None,
            last_sleep_run_id=last.id if last else None,
            last_sleep_status=last.status if last else None,
        )
