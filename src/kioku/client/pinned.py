"""Fetch the pinned set of one or more contexts and render it as the pinned block.

``load_pinned_block(client, contexts)`` (and ``aload_pinned_block`` for an ``AsyncClient``) is
what a harness that is not Claude Code puts in its system prompt every turn: trusted memories
only unless asked, in a stable order, capped in characters with the cut said in the block
(``kioku.client.pinned_block.render_pinned_block`` documents the exact format).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypedDict, Unpack

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


class PinnedBlockOptions(TypedDict, total=False):
    """What ``load_pinned_block`` and ``aload_pinned_block`` may be told; what is not told
    takes ``_Plan``'s default (``trust_tier="trusted"``, ``max_chars=4000``,
    ``include_content=True``, ``cap=None``)."""

    trust_tier: TrustTier | None
    max_chars: int
    include_content: bool
    cap: int | None


@dataclass(frozen=True)
class _Plan:
    """One pinned block: ``load_pinned`` of each context (``filters``, ``cap``), then
    ``render`` of what came back."""

    contexts: list[str]
    trust_tier: TrustTier | None = "trusted"
    max_chars: int = DEFAULT_MAX_CHARS
    include_content: bool = True
    cap: int | None = None

    @property
    def filters(self) -> dict[str, str] | None:
        return None if self.trust_tier is None else {"trust_tier": self.trust_tier}

    def render(self, results: Sequence[PinnedResult]) -> str:
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
            max_chars=self.max_chars,
            total_available=total,
            include_content=self.include_content,
            context=",".join(self.contexts),
        )


def load_pinned_block(
    client: Client,
    context_ids: str | Sequence[str] = "default",
    **options: Unpack[PinnedBlockOptions],
) -> str:
    """The pinned block of ``context_ids`` (ids or names; their memories in that order, the
    block's ``context`` attribute saying them, comma-separated):
    ``load_pinned`` of each, ``trust_tier`` memories only (``None``: every tier, external
    ones marked as data), rendered by ``render_pinned_block`` in at most ``max_chars``
    characters. ``cap`` is ``load_pinned``'s, per context (server default 100); what it cuts
    is said in the block too. An empty pinned set gives ``""``."""
    plan = _Plan(_contexts(context_ids), **options)
    results = [client.load_pinned(c, cap=plan.cap, filters=plan.filters) for c in plan.contexts]
    return plan.render(results)


async def aload_pinned_block(
    client: AsyncClient,
    context_ids: str | Sequence[str] = "default",
    **options: Unpack[PinnedBlockOptions],
) -> str:
    """``load_pinned_block`` with a ``kioku.AsyncClient``."""
    plan = _Plan(_contexts(context_ids), **options)
    results = [
        await client.load_pinned(c, cap=plan.cap, filters=plan.filters) for c in plan.contexts
    ]
    return plan.render(results)
