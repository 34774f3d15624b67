"""Fetch the pinned set of one or more contexts and render it as the pinned block.

``load_pinned_block(client, contexts)`` (and ``aload_pinned_block`` for an ``AsyncClient``) is
what a harness that is not Claude Code puts in its system prompt every turn: trusted memories
only unless asked, in a stable order, capped in characters with the cut said in the block
(``kioku.client.pinned_block.render_pinned_block`` documents the exact format).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from kioku.client.pinned_block import DEFAULT_MAX_CHARS, render_pinned_block

if TYPE_CHECKING:
    from kioku.client.asynchronous import AsyncClient
    from kioku.client.sync import Client
    from kioku.models import PinnedItem, PinnedResult, TrustTier


def _contexts(context_ids: str | Sequence[str]) -> list[str]:
    names = [context_ids] if isinstance(context_ids, str) else list(context_ids)
    if not names:
        raise ValueError("name at least one context")
    return list(dict.fromkeys(names))  # each once, in the order given


def _filters(trust_tier: TrustTier | None) -> dict[str, str] | None:
    return None if trust_tier is None else {"trust_tier": trust_tier}


def _render(
    contexts: list[str],
    results: Sequence[PinnedResult],
    *,
    max_chars: int,
    include_content: bool,
) -> str:
    items: list[PinnedItem] = []
    seen: set[str] = set()
    for result in results:
        for item in result.items:
            if item.id not in seen:
                seen.add(item.id)
                items.append(item)
    total = sum(result.total_available for result in results)
    return render_pinned_block(
        items,
        max_chars=max_chars,
        total_available=total,
        include_content=include_content,
        context=",".join(contexts),
    )


def load_pinned_block(
    client: Client,
    context_ids: str | Sequence[str] = "default",
    *,
    trust_tier: TrustTier | None = "trusted",
    max_chars: int = DEFAULT_MAX_CHARS,
    include_content: bool = True,
    cap: int | None = None,
) -> str:
    """The pinned block of ``context_ids`` (ids or names; their memories in that order, the
    block's ``context`` attribute saying them, comma-separated):
    ``load_pinned`` of each, ``trust_tier`` memories only (``None``: every tier, external
    ones marked as data), rendered by ``render_pinned_block`` in at most ``max_chars``
    characters. ``cap`` is ``load_pinned``'s, per context (server default 100); what it cuts
    is said in the block too. An empty pinned set gives ``""``."""
    filters, contexts = _filters(trust_tier), _contexts(context_ids)
    results = [client.load_pinned(c, cap=cap, filters=filters) for c in contexts]
    return _render(contexts, results, max_chars=max_chars, include_content=include_content)


async def aload_pinned_block(
    client: AsyncClient,
    context_ids: str | Sequence[str] = "default",
    *,
    trust_tier: TrustTier | None = "trusted",
    max_chars: int = DEFAULT_MAX_CHARS,
    include_content: bool = True,
    cap: int | None = None,
) -> str:
    """``load_pinned_block`` with a ``kioku.AsyncClient``."""
    filters, contexts = _filters(trust_tier), _contexts(context_ids)
    results = [await client.load_pinned(c, cap=cap, filters=filters) for c in contexts]
    return _render(contexts, results, max_chars=max_chars, include_content=include_content)
