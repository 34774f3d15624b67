"""``ThreadSession(client, thread)``: the SDK's form of "sessions are threads"
(docs/integrations.md).

A thread is an ordered run of memories (a chat session, a document); recall brings a strong
hit's thread neighbours along. A ``ThreadSession`` is the client itself, except that every
``remember`` and ``remember_batch`` item naming no ``thread`` (nor ``position``) is written to
the session's thread, in order. It wraps ``Client`` and ``AsyncClient`` alike (it only adds
an argument, so an async client's methods still return coroutines).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any, Generic, TypeVar, cast

C = TypeVar("C")


class ThreadSession(Generic[C]):
    """``client`` with its ``remember`` and ``remember_batch`` bound to ``thread``."""

    def __init__(self, client: C, thread: str | None = None) -> None:
        self.client = client
        self.thread = thread or f"sdk:{uuid.uuid4().hex}"

    def remember(self, context_id: str, summary: str, **fields: Any) -> Any:
        if fields.get("thread") is None and fields.get("position") is None:
            fields["thread"] = self.thread
        return self.client.remember(context_id, summary, **fields)  # type: ignore[attr-defined]

    def remember_batch(self, context_id: str, items: Sequence[Any], **options: Any) -> Any:
        bound = [self._bound(item) for item in items]
        return self.client.remember_batch(context_id, bound, **options)  # type: ignore[attr-defined]

    def _bound(self, item: Any) -> Any:
        if isinstance(item, Mapping):
            fields = cast("Mapping[str, Any]", item)
            free = fields.get("thread") is None and fields.get("position") is None
            return {**fields, "thread": self.thread} if free else fields
        if getattr(item, "thread", None) is None and getattr(item, "position", None) is None:
            return item.model_copy(update={"thread": self.thread})
        return item

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)
