"""The feedback lane: append-only "was this recall useful?" events (docs/concepts.md).

Events are never embedded, never indexed and never returned by recall, listings or the pinned
set. Their only effect on retrieval is the net-helpfulness feature of the bounded re-ranker.
"""

from __future__ import annotations

import uuid

from kioku.clock import Clock, system_clock
from kioku.errors import InvalidInputError, NotFoundError
from kioku.models import Feedback, FeedbackCreate, FeedbackPage
from kioku.service.contexts import ContextService
from kioku.service.cursors import pack_cursor, unpack_cursor
from kioku.service.graph import Associations
from kioku.service.guard import operation
from kioku.service.principal import Principal
from kioku.storage.ports import FeedbackPort
from kioku.storage.records import FeedbackRow, NewFeedback

MAX_PAGE = 200


def feedback_view(row: FeedbackRow) -> Feedback:
    """The wire form of a stored event."""
    return Feedback(
        feedback_id=row.id,
        context_id=row.context_id,
        memory_id=row.memory_id,
        helpful=row.helpful,
        query=row.query,
        note=row.note,
        actor=row.actor,
        channel=row.channel,
        created_at=row.created_at,
    )


class FeedbackService:
    """Append and read retrieval feedback. There is deliberately no update or delete."""

    def __init__(
        self,
        store: FeedbackPort,
        contexts: ContextService,
        clock: Clock = system_clock,
        graph: Associations | None = None,
    ):
        self.store = store
        self.contexts = contexts
        self.clock = clock
        self.graph = graph or Associations(store, contexts, clock=clock)

    @operation("feedback", audited=True)
    def feedback(self, principal: Principal, context_ref: str, data: FeedbackCreate) -> Feedback:
        """Record that a live memory of this context was (not) helpful, optionally for a query.

        Contradictory events are both kept. The actor and time are stamped by the server.
        """
        context = self.contexts.resolve(principal, context_ref)
        event = NewFeedback(
            id=str(uuid.uuid4()),
            context_id=context.id,
            memory_id=data.memory_id,
            helpful=data.helpful,
            query=data.query,
            note=data.note,
            actor=principal.actor,
            channel=principal.channel,
            created_at=self.clock(),
        )
        row = self.store.insert_feedback(principal.workspace_id, event)
        if row is None:
            raise NotFoundError(
                f"memory {data.memory_id!r} not found in this context", field="memory_id"
            )
        self.graph.learn_from_feedback(
            principal.workspace_id, context.id, data.memory_id, data.helpful, data.query
        )
        return feedback_view(row)

    @operation("read")
    def list_feedback(
        self,
        principal: Principal,
        context_ref: str,
        *,
        memory_id: str | None = None,
        cursor: str | None = None,
        limit: int = 50,
    ) -> FeedbackPage:
        """Events of a context (or of one memory in it), newest first, keyset-paginated."""
        if not 1 <= limit <= MAX_PAGE:
            raise InvalidInputError(f"limit must be between 1 and {MAX_PAGE}", field="limit")
        context = self.contexts.resolve(principal, context_ref)
        before = unpack_cursor(cursor, int)[0] if cursor else None
        rows = self.store.list_feedback(
            principal.workspace_id, context.id, memory_id, before, limit + 1
        )
        next_cursor = pack_cursor(rows[limit - 1].seq) if len(rows) > limit else None
        return FeedbackPage(items=[feedback_view(r) for r in rows[:limit]], next_cursor=next_cursor)
