"""``KiokuStore``: LangGraph's long-term memory store (``BaseStore``) on a kioku server."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable, Sequence
from typing import Any, Literal

from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    validate_op_namespace,
)

from kioku.client import AsyncClient, Client
from kioku.errors import ConflictError, NotFoundError
from kioku.integrations.langgraph._namespaces import (
    Namespace,
    check_prefix,
    context_description,
    context_name,
    namespace_of,
)
from kioku.integrations.langgraph._plans import Plan, arun, call, each, run
from kioku.integrations.langgraph._values import (
    INDEXED_TYPE,
    ITEM_TYPES,
    from_memory,
    key_tag,
    matches,
    to_memory,
)
from kioku.models import (
    Confidence,
    Context,
    ContextPage,
    Memory,
    MemoryPage,
    RecallResult,
    TrustTier,
)

MAX_RECALL_K = 100
"""recall's largest ``k``: a search with a query sees at most this many hits."""
MAX_EXTRA_CONTEXTS = 50
"""recall's ``filters.context_ids`` takes this many contexts besides the one in the path."""
PAGE = 200
"""list_memories' largest page."""
LOOKUP = 20
"""How many memories one key's lookup reads (more than one only after a race)."""


class KiokuStore(BaseStore):
    """A LangGraph ``BaseStore`` whose items are memories of a kioku server.

    Give a ``kioku.Client`` for ``batch`` (LangGraph's sync API: ``get``, ``put``, ``search``,
    ``graph.invoke``) and/or a ``kioku.AsyncClient`` for ``abatch`` (``aget``, ...,
    ``graph.ainvoke``); with neither, both are made from ``base_url`` / ``api_key`` (default
    ``$KIOKU_URL`` / ``$KIOKU_API_KEY``) and closed by ``close()`` / ``aclose()``. With only a
    ``Client``, ``abatch`` runs ``batch`` in a worker thread.

    Mapping (docs/integrations.md, "LangGraph"):

    - a namespace is a kioku context, named by a reversible encoding
      (``("users", "alice")`` → ``lg-users-alice``; ``context_prefix`` instead of ``lg``; see
      ``kioku.integrations.langgraph.context_name``), created on the first ``put`` as a
      ``trusted`` context with ``sleep_mode="edges_only"`` (Sleep never merges its memories);
    - an item is one memory: the value as JSON in its content, the text of its index fields
      as its summary (what recall ranks and embeds; ``index_fields`` is the store's default,
      like ``IndexConfig["fields"]``, ``["$"]``: the whole value), its key as a tag;
    - ``put`` writes it (``remember``, or ``update_memory`` of the key's memory: same id,
      ``created_at`` kept), ``put(..., None)`` / ``delete`` forgets it (a soft delete; kioku's
      ``purge`` erases);
    - ``search`` with a query is ``recall`` over the prefix's contexts, without a query a
      listing of them, newest created first; ``filter`` is applied to the values as
      LangGraph's ``InMemoryStore`` does; both read only ``trust_tier`` memories (default
      ``"trusted"``; ``None``: every tier), and so does ``get``; with ``min_confidence``, a
      query search finds nothing when recall is less sure than that (nothing rather than
      noise for the agent);
    - ``list_namespaces`` lists the store's contexts that hold memories.

    What differs from LangGraph's own stores:

    - ``score`` is kioku's recall score (hybrid BM25 + vectors, fused and re-ranked), not a
      cosine similarity; items stored with ``index=False`` are never a query's hits (an
      ``InMemoryStore`` adds them, unscored, after its hits when it has fewer than ``limit``);
    - a query search sees recall's best 100 hits at most: ``filter``, ``offset`` and
      ``limit`` apply within them. Over more than 51 contexts recall runs once per 51 and the
      hits are merged by score, which is comparable only within one run;
    - ``created_at`` / ``updated_at`` are the memory's, stamped by the server;
    - no TTL (``supports_ttl`` is False: ``put(..., ttl=...)`` raises NotImplementedError,
      ``refresh_ttl`` is ignored);
    - kioku does not make a key unique: two first ``put``s of one key that race may write
      two memories. Reads take the one created last, and the next ``put`` or ``delete`` of
      the key forgets the others;
    - in one ``batch``, reads see the store as it was before the batch, then its puts apply,
      the last one per namespace and key winning (as LangGraph's InMemoryStore and
      PostgresStore do); ops are not one transaction.
    """

    supports_ttl = False

    def __init__(
        self,
        client: Client | None = None,
        *,
        async_client: AsyncClient | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        context_prefix: str = "lg",
        trust_tier: TrustTier | None = "trusted",
        index_fields: Sequence[str] | None = None,
        max_concurrency: int = 8,
        min_confidence: Confidence | None = None,
    ) -> None:
        self.context_prefix = check_prefix(context_prefix)
        self.trust_tier: TrustTier | None = trust_tier
        self.min_confidence: Confidence | None = min_confidence
        """A query search finds nothing unless recall is at least this sure (each recall run
        judged on its own: docs/concepts.md, *Confidence*); ``None``: every hit."""
        self.index_fields: list[str] = list(index_fields) if index_fields is not None else ["$"]
        if max_concurrency < 1:
            raise ValueError("max_concurrency must be at least 1")
        self.max_concurrency = max_concurrency
        self._owned = client is None and async_client is None
        if self._owned:
            client = Client(base_url, api_key=api_key)
            async_client = AsyncClient(base_url, api_key=api_key)
        self.client = client
        self.async_client = async_client

    # ------------------------------------------------------------ entry points

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Execute ``ops`` with the blocking client; one result per op, in order."""
        if self.client is None:
            raise RuntimeError("KiokuStore.batch needs a kioku.Client (client=...)")
        return run(self.client, self._batch(list(ops)))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Execute ``ops`` with the async client (the calls of one step concurrently)."""
        ops = list(ops)
        if self.async_client is None:
            return await asyncio.to_thread(self.batch, ops)
        return await arun(self.async_client, self._batch(ops), self.max_concurrency)

    def close(self) -> None:
        """Close the blocking client, if this store made it."""
        if self._owned and self.client is not None:
            self.client.close()

    async def aclose(self) -> None:
        """Close both clients, if this store made them."""
        self.close()
        if self._owned and self.async_client is not None:
            await self.async_client.aclose()

    # ------------------------------------------------------------ one batch

    def _batch(self, ops: list[Op]) -> Plan[list[Result]]:
        for op in ops:
            _check(op)
        results: list[Result] = [None] * len(ops)
        contexts: list[tuple[Namespace, Context]] = []
        if any(isinstance(op, SearchOp | ListNamespacesOp) for op in ops):
            contexts = yield from self._contexts()
        reads: list[tuple[int, Plan[Any]]] = []
        puts: dict[tuple[Namespace, str], PutOp] = {}
        for i, op in enumerate(ops):
            if isinstance(op, GetOp):
                reads.append((i, self._get(tuple(op.namespace), op.key)))
            elif isinstance(op, SearchOp):
                reads.append((i, self._search(op, contexts)))
            elif isinstance(op, ListNamespacesOp):
                results[i] = _list_namespaces(op, contexts)
            elif isinstance(op, PutOp):
                puts[(tuple(op.namespace), op.key)] = op
        found = yield from each([plan for _, plan in reads])
        for (i, _), result in zip(reads, found, strict=True):
            results[i] = result
        yield from each([self._put(op) for op in puts.values()])
        return results

    def _contexts(self) -> Plan[list[tuple[Namespace, Context]]]:
        """The store's contexts (the reader's tier only), with their namespaces."""
        page: ContextPage = yield from call("list_contexts")
        found: list[tuple[Namespace, Context]] = []
        for context in page.items:
            namespace = namespace_of(context.name, context.description, self.context_prefix)
            if namespace is None:
                continue
            if self.trust_tier is not None and context.trust_tier != self.trust_tier:
                continue
            found.append((namespace, context))
        return found

    # ------------------------------------------------------------ get

    def _lookup(self, namespace: Namespace, key: str, *, read: bool) -> Plan[list[Memory]]:
        """The live memories holding ``key`` in ``namespace``, the one created last first
        (``read``: of the reader's tier only). None there yet: empty."""
        filters: dict[str, Any] = {"type": ITEM_TYPES, "tags": [key_tag(key)]}
        if read and self.trust_tier is not None:
            filters["trust_tier"] = self.trust_tier
        name = context_name(namespace, self.context_prefix)
        try:
            page: MemoryPage = yield from call("list_memories", name, filters=filters, limit=LOOKUP)
        except NotFoundError:
            return []
        # list_memories answers newest created first: the first is the one reads take.
        return [m for m in page.items if (found := from_memory(m)) is not None and found[0] == key]

    def _get(self, namespace: Namespace, key: str) -> Plan[Item | None]:
        if not namespace:  # nothing can be put there
            return None
        held = yield from self._lookup(namespace, key, read=True)
        if not held:
            return None
        return _item(namespace, held[0])

    # ------------------------------------------------------------ search

    def _search(
        self, op: SearchOp, contexts: list[tuple[Namespace, Context]]
    ) -> Plan[list[SearchItem]]:
        if op.limit < 0 or op.offset < 0:
            raise ValueError("search: limit and offset must not be negative")
        prefix = tuple(op.namespace_prefix)
        scope = [(ns, ctx) for ns, ctx in contexts if ns[: len(prefix)] == prefix]
        if not scope or op.limit == 0:
            return []
        if op.query and op.query.strip():
            hits = yield from self._recall(op, scope)
        else:
            hits = yield from self._listing(op, scope)
        return hits[op.offset : op.offset + op.limit]

    def _recall(
        self, op: SearchOp, scope: list[tuple[Namespace, Context]]
    ) -> Plan[list[SearchItem]]:
        k = MAX_RECALL_K if op.filter else min(MAX_RECALL_K, op.offset + op.limit)
        namespaces = {ctx.id: ns for ns, ctx in scope}
        size = MAX_EXTRA_CONTEXTS + 1
        chunks = [scope[i : i + size] for i in range(0, len(scope), size)]
        plans = []
        for chunk in chunks:
            filters: dict[str, Any] = {"type": INDEXED_TYPE}
            if self.trust_tier is not None:
                filters["trust_tier"] = self.trust_tier
            if len(chunk) > 1:
                filters["context_ids"] = [ctx.id for _, ctx in chunk[1:]]
            recall = call(
                "recall",
                chunk[0][1].id,
                op.query,
                k=k,
                filters=filters,
                min_confidence=self.min_confidence,
            )
            plans.append(recall)
        answers: list[RecallResult] = yield from each(plans)
        hits = [hit for answer in answers for hit in answer.results]
        if len(answers) > 1:
            hits.sort(key=lambda hit: -hit.score)  # stable: each run's order within a score
        found: list[SearchItem] = []
        seen: set[tuple[Namespace, str]] = set()
        for hit in hits:
            namespace = namespaces.get(hit.context_id)
            item = None if namespace is None else _search_item(namespace, hit, hit.score)
            if item is None or (item.namespace, item.key) in seen:
                continue
            seen.add((item.namespace, item.key))
            if matches(item.value, op.filter):
                found.append(item)
        return found

    def _listing(
        self, op: SearchOp, scope: list[tuple[Namespace, Context]]
    ) -> Plan[list[SearchItem]]:
        wanted = op.offset + op.limit
        pages = yield from each([self._matching(ns, ctx, op.filter, wanted) for ns, ctx in scope])
        memories = [pair for page in pages for pair in page]
        memories.sort(key=lambda pair: (pair[1].created_at, pair[1].id), reverse=True)
        found: list[SearchItem] = []
        seen: set[tuple[Namespace, str]] = set()
        for item, _ in memories:
            if (item.namespace, item.key) not in seen:
                seen.add((item.namespace, item.key))
                found.append(item)
        return found

    def _matching(
        self,
        namespace: Namespace,
        context: Context,
        conditions: dict[str, Any] | None,
        wanted: int,
    ) -> Plan[list[tuple[SearchItem, Memory]]]:
        """The first ``wanted`` items of one context that pass ``conditions``, newest first."""
        filters: dict[str, Any] = {"type": ITEM_TYPES}
        if self.trust_tier is not None:
            filters["trust_tier"] = self.trust_tier
        found: list[tuple[SearchItem, Memory]] = []
        cursor: str | None = None
        while len(found) < wanted:
            try:
                page: MemoryPage = yield from call(
                    "list_memories", context.id, filters=filters, cursor=cursor, limit=PAGE
                )
            except NotFoundError:  # deleted since it was listed
                break
            for memory in page.items:
                item = _search_item(namespace, memory)
                if item is not None and matches(item.value, conditions):
                    found.append((item, memory))
            cursor = page.next_cursor
            if cursor is None:
                break
        return found

    # ------------------------------------------------------------ put and delete

    def _put(self, op: PutOp) -> Plan[None]:
        namespace = tuple(op.namespace)
        if not namespace:  # deleting from the empty namespace: nothing can be there
            return None
        held = yield from self._lookup(namespace, op.key, read=False)
        name = context_name(namespace, self.context_prefix)
        if op.value is None:
            yield from each([_forget(name, memory.id) for memory in held])
            return None
        fields: Sequence[str] | Literal[False]
        fields = self.index_fields if op.index is None else op.index
        written = to_memory(namespace, op.key, op.value, fields)
        body: dict[str, Any] = {
            "content": written.content,
            "type": written.type,
            "tags": written.tags,
        }
        if held:
            try:
                yield from call("update_memory", name, held[0].id, summary=written.summary, **body)
            except NotFoundError:  # forgotten meanwhile: write it anew
                held = []
            else:
                yield from each([_forget(name, memory.id) for memory in held[1:]])
                return None
        try:
            yield from call("remember", name, written.summary, **body)
        except NotFoundError:  # the namespace's first item: make its context
            yield from self._create_context(namespace, name)
            yield from call("remember", name, written.summary, **body)
        return None

    def _create_context(self, namespace: Namespace, name: str) -> Plan[None]:
        description = context_description(namespace, self.context_prefix)
        with contextlib.suppress(ConflictError):  # made by another writer meanwhile
            yield from call(
                "create_context", name, description=description, sleep_mode="edges_only"
            )
        return None


# ------------------------------------------------------------ helpers


def _check(op: Op) -> None:
    """Refuse what no kioku call should see: bad labels, TTLs, unknown ops."""
    if not isinstance(op, GetOp | SearchOp | ListNamespacesOp | PutOp):
        raise ValueError(f"unknown store operation: {type(op).__name__}")
    validate_op_namespace(op)
    if isinstance(op, PutOp):
        if op.value is not None and not op.namespace:
            raise InvalidNamespaceError("Namespace cannot be empty.")
        if op.value is not None and op.namespace[0] == "langgraph":
            raise InvalidNamespaceError(
                f'Root label for namespace cannot be "langgraph". Got: {op.namespace}'
            )
        if op.ttl is not None:
            raise NotImplementedError("KiokuStore does not support TTL: use ttl=None")


def _forget(name: str, memory_id: str) -> Plan[None]:
    with contextlib.suppress(NotFoundError):  # already gone
        yield from call("forget", name, memory_id)
    return None


def _item(namespace: Namespace, memory: Memory) -> Item | None:
    """The item a memory holds, or None (a memory that is not the store's)."""
    found = from_memory(memory)
    if found is None:
        return None
    key, value = found
    return Item(namespace=namespace, key=key, value=value, created_at=memory.created_at,
                updated_at=memory.updated_at)  # fmt: skip


def _search_item(
    namespace: Namespace, memory: Memory, score: float | None = None
) -> SearchItem | None:
    """The item a memory holds as a search result (``score``: recall's), or None."""
    item = _item(namespace, memory)
    if item is None:
        return None
    return SearchItem(
        namespace=item.namespace, key=item.key, value=item.value,
        created_at=item.created_at, updated_at=item.updated_at, score=score,
    )  # fmt: skip


def _matches_condition(condition: MatchCondition, namespace: Namespace) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    part = namespace[: len(path)] if condition.match_type == "prefix" else namespace[-len(path) :]
    if not path:
        return True
    return all(want == "*" or want == have for want, have in zip(path, part, strict=True))


def _list_namespaces(
    op: ListNamespacesOp, contexts: list[tuple[Namespace, Context]]
) -> list[tuple[str, ...]]:
    namespaces = {ns for ns, ctx in contexts if ctx.memory_count > 0}
    for condition in op.match_conditions or ():
        namespaces = {ns for ns in namespaces if _matches_condition(condition, ns)}
    if op.max_depth is not None:
        namespaces = {ns[: op.max_depth] for ns in namespaces}
    return sorted(namespaces)[op.offset : op.offset + op.limit]
