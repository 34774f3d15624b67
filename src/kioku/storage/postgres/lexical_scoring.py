"""One lexical search's BM25 scoring statement on PostgreSQL: the top ``limit`` memories among
the candidates a tsquery selects, every query term counting in every score.

BM25's exact share of a term needs its tf in the memory, read by unnesting the memory's
``tsvector`` (only the query's lexemes: ``setweight`` marks them, ``ts_filter`` keeps them).
That costs about as much as visiting the row itself, for every candidate. So the statement
ranks the candidates by a cheap bound first and scores exactly only the best of them
(``BOUND_DEPTH`` x ``limit`` + 1):

* the bound of a memory of length dl is the sum, over the query terms it holds (one ``@@``
  per term, a binary search in the tsvector), of the term's share at its tf when the tf is
  below ``TF_LEVELS`` (told by phrase matches: ``'t' <-> 't'`` matches when tf >= 2, because
  every writer stores a lexeme's positions as 1..tf, ``codec.encode_tokens``), else at the
  largest tf any memory of the scope holds it with (``max_tf``, migration 0015; the share
  grows with tf, so that is an upper bound on every memory's share); with
  ``include_deleted``, whose memories the statistics do not count, the saturation limit
  idf x (k1 + 1);
* if the k-th exact score among the memories scored is above the least bound among them (the
  largest bound of every memory not scored), no memory left out can reach the top k: the
  answer is exact BM25's. Otherwise (ties at the k-th score, or bounds too loose) a second
  statement scores every candidate whose bound reaches the k-th score: exact BM25 again,
  ties by id included.

Every bound is widened by a hair (1e-9) so that rounding never puts it below the score.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, LiteralString

from psycopg import Connection
from psycopg.rows import DictRow

from kioku.storage.bm25_constants import K1, B
from kioku.storage.postgres.codec import encode_tsquery, encode_tsquery_repeated

BOUND_DEPTH = 8
"""How many memories per row asked for are scored exactly, best bounds first."""

EXACT_SCORE: LiteralString = (
    "(SELECT sum(w.idf[array_position(w.terms, u.lexeme)] "
    "* greatest(cardinality(u.positions), 1) * %s / "
    "(greatest(cardinality(u.positions), 1) + %s * "
    "(1 - %s + %s * m.lexical_length / %s))) "
    "FROM unnest(ts_filter(setweight(m.lexical_tokens, 'A', w.terms), '{a}')) u)"
)
TF_LEVELS = 3
"""The bound tells tf 1, 2, ... up to this apart (a phrase match per level); above, it takes the
term's largest tf."""
_SHARE: LiteralString = "%s / (%s + %s * m.lexical_length)"


class LexicalScoring:
    """The scoring statement of one search (its filter, terms, idfs and statistics)."""

    def __init__(
        self,
        conn: Connection[DictRow],
        where: LiteralString,
        params: Sequence[Any],
        terms: list[str],
        weights: list[float],
        avgdl: float,
        limit: int,
        max_tf: Mapping[str, int] | None,
    ) -> None:
        """``max_tf``: each term's largest tf in the scope, or ``None`` when the statistics do
        not cover the searched memories (``include_deleted``)."""
        self.conn, self.params = conn, params
        self.where: LiteralString = where
        self.terms, self.weights, self.limit = terms, weights, limit
        self.avgdl = avgdl if avgdl > 0 else 1.0
        self.max_tf = max_tf

    def run(self, tsquery: str) -> list[tuple[str, float]]:
        """The top ``limit`` (id, score) among the candidates matching ``tsquery``: exact
        BM25 scores, ties by id."""
        depth = BOUND_DEPTH * self.limit + 1
        rows = self._bounded(tsquery, depth=depth)
        ranked = _best(rows, self.limit)
        if len(rows) < depth:
            return ranked  # every candidate was scored
        # The least bound among the rows bounds every memory not scored.
        kth = ranked[-1][1] if len(ranked) == self.limit else 0.0
        if kth > min(float(row["bound"]) for row in rows):
            return ranked
        # Ties or loose bounds: score every memory whose bound reaches the k-th score.
        more = self._bounded(tsquery, floor=kth * (1 - 1e-9))
        return _best([*rows, *more], self.limit)

    def _bounds(self) -> tuple[LiteralString, list[Any]]:
        """The bound expression over ``m`` and its parameters (see the module doc)."""
        parts: list[LiteralString] = []
        params: list[Any] = []
        for term, weight in zip(self.terms, self.weights, strict=True):
            if self.max_tf is None:  # the saturation limit, whatever the tf and length
                parts.append("CASE WHEN m.lexical_tokens @@ %s::tsquery THEN %s ELSE 0 END")
                params += [encode_tsquery([term]), weight * (K1 + 1)]
            elif self.max_tf.get(term, 0) > 0:  # else no live memory holds it
                part, part_params = self._term_bound(term, weight, 1, self.max_tf[term])
                parts.append(part)
                params += part_params
        if not parts:
            return "0::float8", []
        return " + ".join(parts), params  # type: ignore[return-value]  # built from literals

    def _term_bound(
        self, term: str, weight: float, level: int, max_tf: int
    ) -> tuple[LiteralString, list[Any]]:
        """The term's share in a memory where its tf is known to be at least ``level - 1``:
        0 when it is not, the share at tf ``level - 1`` when the next level does not match,
        and at the largest tf once ``TF_LEVELS`` or ``max_tf`` is reached (never below the
        true share: it grows with tf)."""
        if level > 1 and (level > max_tf or level > TF_LEVELS):
            return _SHARE, self._share(weight, max_tf)
        inner, inner_params = self._term_bound(term, weight, level + 1, max_tf)
        otherwise: LiteralString = "0" if level == 1 else _SHARE
        otherwise_params = [] if level == 1 else self._share(weight, level - 1)
        return (
            "CASE WHEN m.lexical_tokens @@ %s::tsquery THEN " + inner
            + " ELSE " + otherwise + " END",
            [encode_tsquery_repeated(term, level), *inner_params, *otherwise_params],
        )  # fmt: skip

    def _share(self, weight: float, tf: int) -> list[Any]:
        """``_SHARE``'s parameters for tf (the share grows with tf, falls with length);
        widened by a hair so that rounding never makes a bound too low."""
        return [weight * (K1 + 1) * tf * (1 + 1e-9), tf + K1 * (1 - B), K1 * B / self.avgdl]

    def _bounded(
        self, tsquery: str, *, depth: int | None = None, floor: float | None = None
    ) -> list[DictRow]:
        """The candidates' bounds, best first (at most ``depth``, or every one at least
        ``floor``), each with its exact score."""
        bound, bound_params = self._bounds()
        # OFFSET 0 keeps the subquery whole: a floor on its bound is then a filter on the
        # computed column, not a second evaluation of the expression in the scan.
        floor_clause: LiteralString = "" if floor is None else "WHERE b.bound >= %s "
        floor_params = [] if floor is None else [floor]
        return self.conn.execute(
            "WITH w AS (SELECT %s::text[] AS terms, %s::float8[] AS idf), "
            "c AS MATERIALIZED (SELECT * FROM (SELECT m.id, m.lexical_tokens, "
            f"m.lexical_length, ({bound})::float8 AS bound FROM memories m "
            f"WHERE {self.where} AND m.lexical_tokens @@ %s::tsquery OFFSET 0) b "
            + floor_clause
            + 'ORDER BY b.bound DESC, b.id COLLATE "C" LIMIT %s) '
            f"SELECT m.id, m.bound, {EXACT_SCORE} AS score FROM c m, w",
            (
                self.terms, self.weights, *bound_params, *self.params, tsquery,
                *floor_params, depth, K1 + 1, K1, B, B, self.avgdl,
            ),
        ).fetchall()  # fmt: skip


def _best(rows: Sequence[DictRow], limit: int) -> list[tuple[str, float]]:
    """The top ``limit`` (id, exact score) of ``rows`` (by score, ties by id), each once."""
    return top_scored({row["id"]: float(row["score"]) for row in rows}, limit)


def top_scored(scored: Mapping[str, float], limit: int) -> list[tuple[str, float]]:
    """The best ``limit`` of ``scored`` (id -> score): by score, ties by id (bytewise, as
    ``COLLATE "C"`` orders them)."""
    return sorted(scored.items(), key=lambda r: (-r[1], r[0].encode()))[:limit]
