"""Recall latency at N memories: real LoCoMo turns plus synthetic fill, in one context or
spread over many workspaces (``workspaces``: N/W memories in one context of each of W
workspaces, the queries spread over them round-robin).

Embedding 100k texts with the bundled model would take hours on 2 cores, so the synthetic
memories get (a) text drawn from the LoCoMo vocabulary and turn-length distribution, seeded, and
(b) a *synthetic vector*: the real embedding of a random real turn plus Gaussian noise,
renormalised. Their rows go through ``remember_batch`` (the real write path, timed); their
vectors are stored as given (``runtime.bench.store_vectors``: one batched write a chunk).
"""

from __future__ import annotations

import math
import re
import time
from collections import Counter
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext

import numpy as np

from kioku.benchmark.breakdown import recall_breakdown
from kioku.benchmark.data import Doc, Question, split_text
from kioku.benchmark.ingest import drain_embeddings, ensure_context, remember_docs
from kioku.benchmark.latency import ARMS, WARMUP, available_arms, peak_rss_mb, timed_recall
from kioku.benchmark.metrics import latency_summary
from kioku.models import BatchCreate
from kioku.runtime import Runtime
from kioku.service.principal import Principal
from kioku.storage.records import embedding_text

CONTEXT = "scale"
SCALE_K = 10
SCALE_QUERIES = 200
PINNED = 40
"""Guardrail-like ``always`` memories among the fill, for timing ``load_pinned``."""
FILL_CHUNK = 1000
TARGET_COSINE = 0.8
"""Expected cosine between a synthetic vector and the real vector it was derived from."""
LEXICAL_INDEX_TIMEOUT = 1800.0
"""Seconds the bench waits for a large scope's lexical index (~20 s at a million memories)."""
_TURN = re.compile(r"^(?P<speaker>.+?) \((?P<when>[^)]*)\): (?P<body>.*)$", re.DOTALL)
_WORD = re.compile(r"[A-Za-z][A-Za-z']*")


class SyntheticText:
    """Deterministic LoCoMo-like turns: real speakers and dates, words drawn by real frequency."""

    def __init__(self, docs: Sequence[Doc], seed: int = 0) -> None:
        self.rng = np.random.default_rng(seed)
        speakers: set[str] = set()
        dates: set[str] = set()
        counts: Counter[str] = Counter()
        self.lengths: list[int] = []
        for doc in docs:
            match = _TURN.match(doc.text)
            body = match.group("body") if match else doc.text
            if match:
                speakers.add(match.group("speaker"))
                dates.add(match.group("when"))
            words = _WORD.findall(body)
            counts.update(words)
            self.lengths.append(max(1, len(words)))
        self.speakers = sorted(speakers) or ["Someone"]
        self.dates = sorted(dates) or ["1:00 pm on 1 January, 2023"]
        self.words = sorted(counts) or ["memory"]
        freq = np.array([counts[w] for w in self.words], dtype=np.float64)
        self.probs = freq / freq.sum() if freq.sum() else None

    def texts(self, count: int) -> list[str]:
        """``count`` new turns (the generator's state advances: calls never repeat)."""
        lengths = self.rng.choice(self.lengths, size=count)
        words = self.rng.choice(len(self.words), size=int(lengths.sum()), p=self.probs)
        speakers = self.rng.integers(len(self.speakers), size=count)
        dates = self.rng.integers(len(self.dates), size=count)
        out: list[str] = []
        at = 0
        for i, length in enumerate(lengths):
            body = " ".join(self.words[w] for w in words[at : at + length])
            at += int(length)
            out.append(f"{self.speakers[speakers[i]]} ({self.dates[dates[i]]}): {body}.")
        return out


def synthetic_vectors(
    rng: np.random.Generator, sources: np.ndarray, count: int, cosine: float = TARGET_COSINE
) -> np.ndarray:
    """``count`` unit vectors, each a random source row plus isotropic noise (cos ≈ ``cosine``)."""
    dim = sources.shape[1]
    sigma = math.sqrt((1.0 / cosine**2 - 1.0) / dim)
    picked = sources[rng.integers(len(sources), size=count)]
    noisy = picked + rng.standard_normal((count, dim)).astype(np.float32) * sigma
    return (noisy / np.linalg.norm(noisy, axis=1, keepdims=True)).astype(np.float32)


def tenants(runtime: Runtime, principal: Principal, workspaces: int) -> list[Principal]:
    """``principal`` and the owners of ``workspaces - 1`` more workspaces (``scale-<i>``)."""
    if workspaces < 1:
        raise ValueError("workspaces must be at least 1")
    more = [
        runtime.workspaces.owner(f"scale-{i}", principal.channel, create=True)
        for i in range(1, workspaces)
    ]
    return [principal, *(owner for owner in more if owner is not None)]


def shares(count: int, parts: int) -> list[int]:
    """``count`` split over ``parts`` as evenly as whole numbers allow (the first get more)."""
    return [count // parts + (1 if i < count % parts else 0) for i in range(parts)]


def _fill(
    runtime: Runtime,
    principals: Sequence[Principal],
    generator: SyntheticText,
    sources: np.ndarray | None,
    count: int,
    offset: int,
    advance: Callable[[int], None] | None,
) -> dict[str, float]:
    """Add ``count`` synthetic memories, spread evenly over the workspaces of ``principals``;
    returns accept and vector-store seconds."""
    rng = np.random.default_rng(offset + 1)
    times = {"accept_s": 0.0, "vectors_s": 0.0}
    for principal, share in zip(principals, shares(count, len(principals)), strict=True):
        if share:
            _fill_one(runtime, principal, generator, sources, share, offset, rng, times, advance)
            offset += share
    return times


def _fill_one(
    runtime: Runtime,
    principal: Principal,
    generator: SyntheticText,
    sources: np.ndarray | None,
    count: int,
    offset: int,
    rng: np.random.Generator,
    times: dict[str, float],
    advance: Callable[[int], None] | None,
) -> None:
    """Add ``count`` synthetic memories to ``principal``'s context; adds to ``times``."""
    context_id = runtime.contexts.resolve(principal, CONTEXT).id
    accept_s = vectors_s = 0.0
    done = 0
    while done < count:
        size = min(FILL_CHUNK, count - done)
        texts = generator.texts(size)
        keys = [f"syn-{offset + done + i}" for i in range(size)]
        docs = [Doc(key, text, f"synthetic:{key}") for key, text in zip(keys, texts, strict=True)]
        ids, elapsed = remember_docs(runtime, principal, CONTEXT, docs)
        accept_s += elapsed
        if sources is not None and runtime.embedder is not None:
            vectors = synthetic_vectors(rng, sources, size)
            items = list(zip(ids, vectors, strict=True))
            began = time.perf_counter()
            runtime.bench.store_vectors(principal, context_id, runtime.embedder.name, items)
            vectors_s += time.perf_counter() - began
        done += size
        if advance is not None:
            advance(size)
    times["accept_s"] += accept_s
    times["vectors_s"] += vectors_s


def run_scale(
    runtime: Runtime,
    principal: Principal,
    scales: Sequence[int],
    real_docs: Sequence[Doc],
    questions: Sequence[Question],
    advance: Callable[[int], None] | None = None,
    seed: int = 0,
    *,
    bulk_load: Callable[[], AbstractContextManager[dict[str, float]]] | None = None,
    on_point: Callable[[dict[str, object]], None] | None = None,
    workspaces: int = 1,
) -> list[dict[str, object]]:
    """Grow one context to each N in ``scales`` (ascending) and time recall at every step;
    with ``workspaces`` > 1, the N memories are spread over that many workspaces (one context
    each; ``principal``'s holds the real turns and the pinned rules) and the queries go to
    each workspace in turn.

    Each fill runs inside ``bulk_load()`` (the backend's bulk-import upkeep, whose timings
    land in the point); ``on_point`` sees every point as soon as it is measured.
    """
    targets = sorted(set(scales))
    if not targets:
        return []
    principals = tenants(runtime, principal, workspaces)
    for tenant in principals:
        ensure_context(runtime, tenant, CONTEXT)
    real = list(real_docs[: targets[0]])
    remember_docs(runtime, principal, CONTEXT, real, advance)
    drain_embeddings(runtime)
    sources: np.ndarray | None = None
    if runtime.embedder is not None and real:
        texts = [embedding_text(*split_text(doc.text)) for doc in real]
        sources = runtime.embedder.embed_documents(texts)  # recorded: served, not re-embedded
    generator = SyntheticText(real, seed)
    # A few always-delivered rules count as part of the synthetic fill.
    pinned = min(PINNED, max(0, targets[0] - len(real)))
    rules = [{"summary": f"Rule {i}: {text}", "delivery_mode": "always", "importance": 0.5}
             for i, text in enumerate(generator.texts(pinned))]  # fmt: skip
    if rules:
        runtime.memories.remember_batch(principal, CONTEXT, BatchCreate(items=rules))
    picked = np.random.default_rng(seed).permutation(len(questions))[:SCALE_QUERIES]
    queries = [questions[int(i)].text for i in picked]
    size = len(real) + len(rules)
    points: list[dict[str, object]] = []
    for target in targets:
        added = max(0, target - size)
        upkeep_block = bulk_load() if bulk_load is not None and added else nullcontext({})
        with upkeep_block as upkeep:
            fill = _fill(runtime, principals, generator, sources, added, size, advance)
        if added:
            upkeep = {**upkeep, **_build_vector_graph(runtime, principals)}
            upkeep = {**upkeep, **_build_lexical_index(runtime, principals)}
        size = max(size, target)
        counts = [_count(runtime, tenant) for tenant in principals]
        point: dict[str, object] = {
            "memories": sum(counts),
            "workspaces": len(principals),
            "per_workspace": {"min": min(counts), "max": max(counts)},
            "real": len(real),
            "synthetic": size - len(real),
            "fill_added": added,
            "fill_accept_per_s": round(added / fill["accept_s"], 1) if fill["accept_s"] else None,
            "fill_vectors_per_s": (
                round(added / fill["vectors_s"], 1) if fill["vectors_s"] else None
            ),
            "k": SCALE_K,
            **upkeep,
        }
        for arm in available_arms(runtime)[:1]:  # hybrid, or bm25 without an embedder
            point[arm] = _time_queries(runtime, principals, queries, ARMS[arm])
        point["steps"] = recall_breakdown(runtime, principals, CONTEXT, queries, SCALE_K)
        point["load_pinned"] = _time_pinned(runtime, principal, len(rules))
        point["peak_rss_mb"] = peak_rss_mb()
        points.append(point)
        if on_point is not None:
            on_point(point)
    return points


def _count(runtime: Runtime, principal: Principal) -> int:
    return runtime.bench.count_memories(principal, runtime.contexts.resolve(principal, CONTEXT).id)


def _build_vector_graph(runtime: Runtime, principals: Sequence[Principal]) -> dict[str, float]:
    """SQLite builds a large context's HNSW graph in the background on its first search, and
    answers exactly until then: build them here, timed, so the latencies are the steady
    state's (as PostgreSQL's index build is timed after its bulk load)."""
    began = time.perf_counter()
    built = [
        runtime.bench.build_vector_graph(principal, runtime.contexts.resolve(principal, CONTEXT).id)
        for principal in principals
    ]
    if not any(built):
        return {}
    return {"graph_build_s": round(time.perf_counter() - began, 1)}


def _build_lexical_index(runtime: Runtime, principals: Sequence[Principal]) -> dict[str, float]:
    """A large scope's lexical index (``lexical_sidecar``) is built in the background on its
    first search, and the database's own leg answers until then: build them here, timed, so
    the latencies are the steady state's."""
    large = [
        p
        for p in principals
        if runtime.bench.needs_lexical_index(p, runtime.contexts.resolve(p, CONTEXT).id)
    ]
    if not large:
        return {}
    began = time.perf_counter()
    for principal in large:
        if not runtime.bench.wait_for_lexical_index(principal, LEXICAL_INDEX_TIMEOUT):
            raise RuntimeError(f"the lexical index of {principal.workspace_id} was not built")
    return {"lexical_index_build_s": round(time.perf_counter() - began, 1)}


def _time_pinned(
    runtime: Runtime, principal: Principal, pinned: int, rounds: int = SCALE_QUERIES
) -> dict[str, float]:
    """``load_pinned`` latency (the whole service call) after ``WARMUP`` untimed calls."""
    samples: list[float] = []
    for i in range(WARMUP + rounds):
        began = time.perf_counter()
        runtime.delivery.load_pinned(principal, CONTEXT)
        if i >= WARMUP:
            samples.append((time.perf_counter() - began) * 1000)
    return {**latency_summary(samples), "pinned": pinned}


def _time_queries(
    runtime: Runtime,
    principals: Sequence[Principal],
    queries: Sequence[str],
    legs: Sequence[str],
) -> dict[str, float]:
    """Latency summary over ``queries`` after ``WARMUP`` untimed ones (first one reported);
    query i goes to workspace i mod W (warm-ups to the last workspaces, which the timed
    queries reach last)."""
    if not queries:
        return {"n": 0}
    first_ms = 0.0
    for i in range(WARMUP):
        tenant = principals[-1 - i % len(principals)]
        query = queries[i % len(queries)]
        _, ms = timed_recall(runtime, tenant, CONTEXT, query, SCALE_K, legs)
        first_ms = ms if i == 0 else first_ms
    samples = [
        timed_recall(runtime, principals[i % len(principals)], CONTEXT, q, SCALE_K, legs)[1]
        for i, q in enumerate(queries)
    ]
    return {**latency_summary(samples), "first_ms": round(first_ms, 2)}
