"""The two search legs on PostgreSQL: BM25 over ``tsvector`` tokens, and pgvector cosine.

Lexical leg (BM25 with kioku's k1 and b, ``storage/bm25_constants.py``). Each memory stores
kioku's own tokens verbatim in ``lexical_tokens`` (a tsvector whose positions only count
occurrences: see ``codec.encode_tokens``) and its length in tokens in ``lexical_length``. For a
query:

* the corpus is the live memories (``deleted_at IS NULL``) of the workspace and the given
  contexts: N = their number, avgdl = their mean ``lexical_length``, and for each distinct
  query term df = how many of them contain it;
* idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5)), the Lucene form, never negative;
* the candidates are the memories passing the filter whose tokens match the OR of the terms
  (the GIN index again); each scores
  sum over matched terms of idf(t) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl)),
  with tf = occurrences of t in the memory and dl = its ``lexical_length``. The statement
  (``lexical_scoring.py``) ranks the candidates by a cheap upper bound of that sum (one
  ``@@`` per query term, tf told apart by phrase matches) and reads the exact tf (unnesting
  the query's lexemes) only for the best of them, proving that nothing below them can
  reach the top k.

Higher is better, ties broken by id, as on SQLite. N, avgdl and the dfs are the tenant's and
the searched contexts' own (SQLite's FTS5 counts over the workspace's own table, all its
contexts), so another tenant's data never moves a score. They are read from the statistics
tables the database keeps in every writing transaction (``lexical_stats``, migration 0013):
one index lookup per term, however many memories hold it, and never stale.

Each candidate still costs a visit of its row (a few microseconds at 1M). When the query's
terms have more than ``CANDIDATE_BUDGET`` postings in all, the rarest terms select the
candidates and the common ones only add to their scores (``candidate_terms``; Lucene's
common-terms cutoff). Then the cutoff checks its own answer (max-score's certificate,
``certificate_plan``): a memory holding none of the selecting terms can score at most the
sum, over the left-out terms it holds, of each term's largest share
(``lexical_cutoff.term_bound``: the share at the term's largest tf and least length per tf
in the scope, kept with its df by migration 0015; a search that includes deleted memories,
which the statistics do not count, uses the saturation limit idf x (k1 + 1)). The sets of
left-out terms whose bounds could reach the k-th score found (at most ``MAX_GROUPS``) are
searched too, as one conjunctive query (the OR of each set's AND, without the selecting
terms), when the left-out terms they name have at most ``CERTIFICATE_POSTINGS`` postings in
all (what the GIN index may read for it), in two steps: the cheapest sets first, then only
the sets that can still reach the k-th score they leave (``certify``). Then the top k is
exact BM25's (ties aside); otherwise a memory sharing nothing but common words with the
query may be missing, as with the plain cutoff. Small scopes (and the LoCoMo and JSQuAD
benchmarks) stay under the budget and score every candidate.

When even the rarest term holds more than the budget (a number or a common verb at a million
memories), a conjunctive pass comes first (``conjunctive_pass``): the memories holding two
query terms or more are scored (when independence expects at most ``PAIRS_SHARE`` of the
cutoff's candidates); if no single term's bound reaches the k-th score among them, that is
exact BM25's top k, and the rarest term's memories are never all scored.

In a large scope (``KIOKU_LEXICAL_INDEX_MIN`` live memories or more) with a filter that narrows
nothing but the trust tier, the candidates come from this replica's tantivy index instead of
the GIN index, and the same exact BM25 statement scores them: ``lexical_sidecar.py``.

Vector leg: see ``vector_leg.py``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from kioku.storage.lexical_cutoff import candidate_terms as shared_candidate_terms
from kioku.storage.lexical_cutoff import completing_groups, expected_matches, term_bound
from kioku.storage.postgres.codec import (
    encode_tsquery,
    encode_tsquery_groups,
    lexeme,
)
from kioku.storage.postgres.connection import PostgresDatabase
from kioku.storage.postgres.filters import filter_sql
from kioku.storage.postgres.lexical_scoring import K1, B, LexicalScoring, top_scored
from kioku.storage.postgres.lexical_sidecar import LexicalSidecar, ScopedQuery
from kioku.storage.postgres.lexical_stats import LexicalCorpus, lexical_corpus
from kioku.storage.postgres.vector_leg import vector_search
from kioku.storage.records import ScoredId
from kioku.storage.shared.legs import LegScope, SearchLegs

CANDIDATE_BUDGET = 5_000
"""Above this many postings over all query terms, only the rarer terms select the memories to
score (see ``candidate_terms``)."""
CERTIFICATE_POSTINGS = 600_000
"""The most postings (summed df of the left-out terms it names) the certificate's second
search may read (else it is not run, and the cutoff's answer stands)."""
MAX_GROUPS = 32
"""At most this many sets of left-out terms in the certificate's second search."""
PAIRS_SHARE = 0.5
"""The conjunctive pass runs when the memories holding two query terms are expected to be at
most this share of the cutoff's candidates."""
CHEAP_FIRST = 0.5
"""When above 0, the certificate first searches its cheapest term sets (up to this share of
the memories all of them are expected to hold), then only what can still reach the top k."""
LEXICAL_SETTINGS = {"max_parallel_workers_per_gather": "0", "jit": "off"}
"""The leg's transaction-local settings: no parallel workers (the legs already run side by
side on few cores), and no JIT compilation (a large candidate set's cost estimate passes
``jit_above_cost``: compiling would cost more than the statement saves)."""


@dataclass(frozen=True)
class CertificatePlan:
    """What the certificate does after the cutoff: ``outcome`` is ``exact`` (nothing left
    out can reach the top k), ``search`` (``groups`` are searched), ``too many sets`` or
    ``over budget`` (the cutoff's answer stands unproven)."""

    outcome: str
    groups: list[tuple[str, ...]]


def certificate_plan(
    bounds: Mapping[str, float], threshold: float, dfs: Mapping[str, int]
) -> CertificatePlan:
    """The certificate's second search for the left-out terms' share ``bounds`` and the
    k-th score found (``threshold``)."""
    # The bound is compared with a little slack: a tie may still enter by its id.
    groups = completing_groups(bounds, threshold * (1 - 1e-9), MAX_GROUPS)
    if groups is None:
        return CertificatePlan("too many sets", [])
    if not groups:
        return CertificatePlan("exact", [])
    postings = sum(dfs[term] for term in {term for group in groups for term in group})
    if postings > CERTIFICATE_POSTINGS:
        return CertificatePlan("over budget", groups)
    return CertificatePlan("search", groups)


def idf(n: int, df: int) -> float:
    """BM25 inverse document frequency (Lucene's form: positive for any df <= n)."""
    return math.log(1.0 + (n - df + 0.5) / (df + 0.5))


class PostgresSearchArea(SearchLegs):
    """Mixed into ``PostgresStore``: ``lexical_search`` and ``vector_search``."""

    db: PostgresDatabase
    lexical_sidecar: LexicalSidecar

    def _lexical_leg(self, scope: LegScope, tokens: Sequence[str]) -> list[ScoredId]:
        workspace_id, context_ids, flt, limit = scope
        terms = sorted({lexeme(token) for token in tokens if token})
        if not terms:
            return []
        where, params = filter_sql(workspace_id, context_ids, flt)
        with self.db.transaction(workspace_id, settings=LEXICAL_SETTINGS) as conn:
            corpus = lexical_corpus(conn, workspace_id, context_ids, terms)
            n, dfs = corpus.n, corpus.dfs
            # A deleted memory searched with include_deleted may hold a term no live one has:
            # df counts at least the memory itself, so its idf stays finite and positive.
            weights = [idf(max(n, 1), min(max(dfs[term], 1), max(n, 1))) for term in terms]
            if self.lexical_sidecar.applies(n, flt):
                query = ScopedQuery(context_ids, terms, weights, corpus.avgdl, where, params,
                                    limit, flt.trust_tier)  # fmt: skip
                found = self.lexical_sidecar.answer(conn, workspace_id, query)
                if found is not None:
                    return [ScoredId(memory_id, score) for memory_id, score in found]
            scoring = LexicalScoring(conn, where, params, terms, weights, corpus.avgdl, limit,
                                     None if flt.include_deleted else corpus.max_tf)  # fmt: skip
            selecting = candidate_terms(terms, dfs, limit)
            cost = sum(dfs[t] for t in selecting)
            if cost > CANDIDATE_BUDGET and not flt.include_deleted:
                bounds = {t: share_bound(corpus, t, w, False)
                          for t, w in zip(terms, weights, strict=True)}  # fmt: skip
                found = conjunctive_pass(scoring, bounds, dfs, n, limit, cost)
                if found is not None:
                    return [ScoredId(memory_id, score) for memory_id, score in found]
            rows = scoring.run(encode_tsquery(selecting))
            left = {t: share_bound(corpus, t, w, flt.include_deleted)
                    for t, w in zip(terms, weights, strict=True) if t not in selecting}  # fmt: skip
            if left:
                threshold = rows[-1][1] if len(rows) >= limit else 0.0
                plan = certificate_plan(left, threshold, dfs)
                if plan.outcome == "search":
                    rows = certify(scoring, rows, plan.groups, left, selecting, dfs, n)
        return [ScoredId(memory_id, score) for memory_id, score in rows]

    def _vector_leg(self, scope: LegScope, query: np.ndarray) -> list[ScoredId]:
        return vector_search(self.db, scope, query)


def certify(
    scoring: LexicalScoring,
    rows: list[tuple[str, float]],
    groups: list[tuple[str, ...]],
    bounds: Mapping[str, float],
    selecting: Sequence[str],
    dfs: Mapping[str, int],
    n: int,
) -> list[tuple[str, float]]:
    """The certificate's second search for ``groups`` (sets of left-out terms, ``bounds``
    their shares), merged into the cutoff's ``rows``. With ``CHEAP_FIRST`` set, the groups
    expected to hold the fewest memories are searched first; the k-th score they leave
    (never lower) is then a stricter threshold: the term sets that can still reach it are
    recomputed, and only those not holding an already searched set are searched."""
    limit = scoring.limit
    if CHEAP_FIRST <= 0 or len(groups) < 2:
        return _merged(rows, scoring.run(encode_tsquery_groups(groups, selecting)), limit)
    by_size = sorted(groups, key=lambda group: expected_matches([group], dfs, n))
    total = expected_matches(groups, dfs, n)
    first: list[tuple[str, ...]] = []
    for group in by_size:
        if first and expected_matches([*first, group], dfs, n) > total * CHEAP_FIRST:
            break
        first.append(group)
    rows = _merged(rows, scoring.run(encode_tsquery_groups(first, selecting)), limit)
    rest = [group for group in groups if group not in first]
    if rest and len(rows) >= limit:
        again = completing_groups(bounds, rows[-1][1] * (1 - 1e-9), MAX_GROUPS)
        if again is not None:  # else the first plan's rest still covers every memory
            searched = [set(group) for group in first]
            rest = [g for g in again if not any(done <= set(g) for done in searched)]
    if not rest:
        return rows
    return _merged(rows, scoring.run(encode_tsquery_groups(rest, selecting)), limit)


def _merged(
    rows: list[tuple[str, float]], extra: list[tuple[str, float]], limit: int
) -> list[tuple[str, float]]:
    """The best ``limit`` of both (by score, ties by id), each memory once."""
    return top_scored(dict(rows) | dict(extra), limit)


def conjunctive_pass(
    scoring: LexicalScoring,
    bounds: Mapping[str, float],
    dfs: Mapping[str, int],
    n: int,
    limit: int,
    cost: int,
) -> list[tuple[str, float]] | None:
    """The exact top ``limit`` when even the rarest term has too many memories to score them
    all (``cost``: the cutoff's candidates): every memory holding two query terms or more
    (the OR of the pairs' ANDs), when independence expects at most ``PAIRS_SHARE`` x ``cost``
    of them. A memory holding one term only scores at most that term's bound
    (``share_bound``): when no term's bound reaches the k-th score found, that is BM25's top
    k. ``None``: the pass does not apply or cannot prove its answer (the cutoff then runs as
    usual)."""
    held = sorted(t for t in bounds if dfs[t] > 0)
    pairs = [(a, b) for i, a in enumerate(held) for b in held[i + 1 :]]
    if not pairs or expected_matches(pairs, dfs, n) > cost * PAIRS_SHARE:
        return None
    rows = scoring.run(encode_tsquery_groups(pairs, []))
    if len(rows) < limit:
        return None
    threshold = rows[-1][1] * (1 - 1e-9)  # slack: a tie may still enter by its id
    if any(bounds[t] >= threshold for t in held):
        return None
    return rows


def share_bound(corpus: LexicalCorpus, term: str, weight: float, include_deleted: bool) -> float:
    """The most ``term`` (idf ``weight``) adds to a score in this search: ``term_bound`` from
    the live memories' statistics, or the saturation limit when deleted memories (which the
    statistics do not count) are searched too."""
    if include_deleted:
        return weight * (K1 + 1)
    bound = term_bound(weight, corpus.max_tf[term], corpus.min_length_per_tf[term],
                       corpus.avgdl if corpus.avgdl > 0 else 1.0, K1, B)  # fmt: skip
    return min(bound * (1 + 1e-9), weight * (K1 + 1))  # rounding never makes it too low


def candidate_terms(terms: Sequence[str], dfs: dict[str, int], limit: int) -> list[str]:
    """``lexical_cutoff.candidate_terms`` with this backend's ``CANDIDATE_BUDGET``."""
    return shared_candidate_terms(terms, dfs, limit, CANDIDATE_BUDGET)
