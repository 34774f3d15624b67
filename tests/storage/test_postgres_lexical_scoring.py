"""The PostgreSQL lexical leg's scoring statement (``lexical_scoring.py``): candidates ranked
by a cheap bound, the best scored exactly, the answer proven or scored again in full. Every
case is checked against BM25 computed here from the texts."""

from __future__ import annotations

import math
import random
from collections import Counter
from typing import Any

import pytest

from kioku.storage.bm25_constants import K1, B
from kioku.storage.postgres import PostgresStore, lexical_scoring
from kioku.storage.postgres import search as pg_search
from kioku.storage.records import MemoryFilter
from tests.storage.test_contract import new_context, new_memory

LIVE = MemoryFilter()


def _bm25(texts: dict[str, str], query: list[str], ids: dict[str, str]) -> list[tuple[str, float]]:
    """BM25 (kioku's k1 and b, Lucene's idf) of every text holding a query term, best first,
    ties by memory id (``ids``: key -> id)."""
    docs = {key: text.split() for key, text in texts.items()}
    n = len(docs)
    avgdl = sum(len(words) for words in docs.values()) / n
    scores: dict[str, float] = {}
    for term in set(query):
        df = sum(1 for words in docs.values() if term in words)
        if df == 0:
            continue
        idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
        for key, words in docs.items():
            tf = Counter(words)[term]
            if tf:
                norm = tf + K1 * (1 - B + B * len(words) / avgdl)
                scores[key] = scores.get(key, 0.0) + idf * tf * (K1 + 1) / norm
    return sorted(scores.items(), key=lambda item: (-item[1], ids[item[0]].encode()))


def _load(pg: PostgresStore, texts: dict[str, str]) -> tuple[str, str, dict[str, str]]:
    ws = pg.ensure_workspace("alpha").id
    ctx = new_context(pg, ws, "c").id
    rows = {key: new_memory(ctx, key, tokens=text) for key, text in texts.items()}
    pg.insert_memories(ws, list(rows.values()))
    return ws, ctx, {row.id: key for key, row in rows.items()}


def _spy_second_statement(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Records the floor of each second statement (every candidate whose bound reaches the
    k-th score)."""
    floors: list[float] = []
    bounded = lexical_scoring.LexicalScoring._bounded

    def spy(self: lexical_scoring.LexicalScoring, tsquery: str, **kw: Any) -> Any:
        if "floor" in kw:
            floors.append(kw["floor"])
        return bounded(self, tsquery, **kw)

    monkeypatch.setattr(lexical_scoring.LexicalScoring, "_bounded", spy)
    return floors


def test_a_loose_bound_is_never_trusted(pg: PostgresStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """The bound here only knows a term's largest tf (one level): it puts the short memories
    first, but the long one repeating alpha twenty times scores best. Only the best bounds
    are scored (two rows for one asked), so the proof fails and every candidate is scored:
    the answer is BM25's, not the best of the short ones."""
    texts = {f"short-{i}": f"alpha x{i}" for i in range(3)}
    texts["many"] = " ".join(["alpha"] * 20)
    ws, ctx, keys = _load(pg, texts)
    expected = _bm25(texts, ["alpha"], {key: id_ for id_, key in keys.items()})
    assert expected[0][0] == "many"
    monkeypatch.setattr(lexical_scoring, "TF_LEVELS", 1)
    monkeypatch.setattr(lexical_scoring, "BOUND_DEPTH", 1)
    full = _spy_second_statement(monkeypatch)
    hits = pg.lexical_search(ws, [ctx], ["alpha"], LIVE, 1)
    assert [(keys[h.memory_id], h.score) for h in hits] == [
        (expected[0][0], pytest.approx(expected[0][1]))
    ]
    assert len(full) == 1  # the bounded statement could not prove it


def test_bounds_that_tell_tf_apart_prove_the_top_k(
    pg: PostgresStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """tf 1, 2 and 5 in memories of distinct lengths: with the default levels (tf 1, 2 and
    more told apart by phrase matches) every bound is the score, so scoring one row more
    than asked proves the answer, which is BM25's."""
    texts = {f"m{i:02d}": " ".join(["alpha"] * (1 + i % 2) + [f"p{i}w{j}" for j in range(i)])
             for i in range(40)}  # fmt: skip
    texts["five"] = "alpha " * 5 + " ".join(f"q{j}" for j in range(45))
    ws, ctx, keys = _load(pg, texts)
    ids = {key: id_ for id_, key in keys.items()}
    monkeypatch.setattr(lexical_scoring, "BOUND_DEPTH", 1)
    second = _spy_second_statement(monkeypatch)
    expected = _bm25(texts, ["alpha"], ids)
    assert len({round(score, 9) for _, score in expected}) == len(expected)  # no ties
    for limit in (1, 5, 12):
        hits = pg.lexical_search(ws, [ctx], ["alpha"], LIVE, limit)
        assert [(keys[h.memory_id], h.score) for h in hits] == [
            (key, pytest.approx(score)) for key, score in expected[:limit]
        ]
    assert second == []


def test_ties_at_the_kth_score_keep_bm25s_order_by_id(
    pg: PostgresStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Many memories share a score (same tf, same length): the k-th score cannot beat an
    equal bound, so the second statement scores every memory whose bound reaches it, and
    the tied ones come in id order, as exact BM25 has them."""
    texts: dict[str, str] = {}
    for i in range(60):
        tf_a, tf_b = i % 2 + 1, (i // 2) % 3
        filler = " ".join(f"f{i}w{j}" for j in range(i // 6))
        texts[f"m{i:02d}"] = " ".join(["alpha"] * tf_a + ["beta"] * tf_b) + " " + filler
    texts.update({f"other-{i}": f"gamma other{i}" for i in range(20)})
    ws, ctx, keys = _load(pg, texts)
    ids = {key: id_ for id_, key in keys.items()}
    monkeypatch.setattr(lexical_scoring, "BOUND_DEPTH", 1)
    second = _spy_second_statement(monkeypatch)
    for query in (["alpha"], ["alpha", "beta"], ["beta", "gamma"]):
        expected = _bm25(texts, query, ids)
        for limit in (1, 5, 12):
            hits = pg.lexical_search(ws, [ctx], query, LIVE, limit)
            assert [keys[h.memory_id] for h in hits] == [key for key, _ in expected[:limit]]
            for hit, (_, score) in zip(hits, expected, strict=False):
                assert hit.score == pytest.approx(score)
    assert second  # the ties needed it


def test_deleted_memories_searched_too_are_bounded_by_saturation(
    pg: PostgresStore,
) -> None:
    """With include_deleted the statistics do not cover every searched memory: the bound is
    idf x (k1 + 1) and the answer still BM25's (here no memory is deleted, so the scores are
    the texts' own)."""
    texts = {f"m{i}": " ".join(["alpha"] * (i % 3 + 1) + [f"pad{j}" for j in range(i % 5)])
             for i in range(30)}  # fmt: skip
    ws, ctx, keys = _load(pg, texts)
    expected = _bm25(texts, ["alpha"], {key: id_ for id_, key in keys.items()})
    hits = pg.lexical_search(ws, [ctx], ["alpha"], MemoryFilter(include_deleted=True), 7)
    assert [keys[h.memory_id] for h in hits] == [key for key, _ in expected[:7]]


@pytest.mark.parametrize("cheap_first", [0.0, 0.5])
def test_cutoff_and_certificate_answer_as_bm25_on_random_corpora(
    pg: PostgresStore, monkeypatch: pytest.MonkeyPatch, cheap_first: float
) -> None:
    """400 memories over a skewed vocabulary, a budget of 20 postings so that the cutoff, the
    certificate (its cheapest sets first or not) and the conjunctive pass all run: whenever
    the certificate could search, the top 10 is BM25's, ids, order and scores."""
    rng = random.Random(5)
    vocabulary = [f"w{i}" for i in range(30)]
    weights = [1 / (i + 1) for i in range(30)]
    texts = {
        f"m{i:03d}": " ".join(rng.choices(vocabulary, weights, k=rng.randint(3, 12)))
        for i in range(400)
    }
    ws, ctx, keys = _load(pg, texts)
    ids = {key: id_ for id_, key in keys.items()}
    monkeypatch.setattr(pg_search, "CANDIDATE_BUDGET", 20)
    monkeypatch.setattr(pg_search, "CERTIFICATE_POSTINGS", 10**9)
    monkeypatch.setattr(pg_search, "MAX_GROUPS", 10**6)
    monkeypatch.setattr(pg_search, "CHEAP_FIRST", cheap_first)
    searched = 0
    plan_of = pg_search.certificate_plan

    def spy(*args: Any) -> pg_search.CertificatePlan:
        nonlocal searched
        plan = plan_of(*args)
        searched += plan.outcome == "search"
        return plan

    monkeypatch.setattr(pg_search, "certificate_plan", spy)
    for _ in range(40):
        query = rng.sample(vocabulary, rng.randint(2, 5))
        expected = _bm25(texts, query, ids)[:10]
        hits = pg.lexical_search(ws, [ctx], query, LIVE, 10)
        assert [(keys[h.memory_id], h.score) for h in hits] == [
            (key, pytest.approx(score)) for key, score in expected
        ], query
    assert searched >= 10  # the certificate's second search really ran
