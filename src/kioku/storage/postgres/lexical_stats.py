"""BM25's corpus statistics on PostgreSQL, read from the tables the database keeps.

``lexical_scope_stats`` (N and the summed length per workspace and context) and
``lexical_term_stats`` (df per workspace, context and term) are kept up to date by a trigger
on ``memories`` in the writing transaction itself (migration 0013): they always agree with
the rows a search scores, and reading them costs one index lookup per term however many
memories hold it (counting a common word's postings at a million memories was the lexical
leg's tail). Both count the live memories (``deleted_at IS NULL``) of the workspace's
searched contexts only, so another tenant's (or another context's) writes never move a score.

``lexical_term_stats`` also bounds each term's BM25 share (migration 0015): ``max_tf`` and
``min_length_per_tf`` over the memories holding it, kept by the same trigger. They are upper
bounds that may stay loose after deletes and edits (the trigger only widens them), never too
tight: see the migration for what each write does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from psycopg import Connection
from psycopg.rows import DictRow


@dataclass(frozen=True)
class LexicalCorpus:
    """BM25's statistics for one search's scope and query terms."""

    n: int
    avgdl: float
    dfs: dict[str, int]
    max_tf: dict[str, int]
    """Per term: the most occurrences in one memory (0: no live memory holds it)."""
    min_length_per_tf: dict[str, float]
    """Per term: the least ``lexical_length / tf`` over its memories (inf: none holds it)."""


def lexical_corpus(
    conn: Connection[DictRow],
    workspace_id: str,
    context_ids: Sequence[str],
    terms: Sequence[str],
) -> LexicalCorpus:
    """N, avgdl and the terms' dfs and share bounds over the live memories of the workspace's
    ``context_ids``, in one round trip (the bounds of several contexts: the widest)."""
    rows = conn.execute(
        "SELECT NULL AS term, sum(n)::bigint AS n, "
        "(sum(total_length)::float8 / greatest(sum(n), 1)) AS avgdl, "
        "NULL::bigint AS max_tf, NULL::float8 AS min_length_per_tf "
        "FROM lexical_scope_stats WHERE workspace_id = %s AND context_id = ANY(%s) "
        "UNION ALL "
        "SELECT term, sum(df)::bigint, NULL, max(max_tf), min(min_length_per_tf) "
        "FROM lexical_term_stats "
        "WHERE workspace_id = %s AND context_id = ANY(%s) AND term = ANY(%s) GROUP BY term",
        (workspace_id, list(context_ids), workspace_id, list(context_ids), list(terms)),
    ).fetchall()
    corpus = LexicalCorpus(0, 0.0, dict.fromkeys(terms, 0), dict.fromkeys(terms, 0),
                           dict.fromkeys(terms, float("inf")))  # fmt: skip
    n, avgdl = 0, 0.0
    for row in rows:
        if row["term"] is None:
            n, avgdl = int(row["n"] or 0), float(row["avgdl"] or 0.0)
        else:
            corpus.dfs[row["term"]] = int(row["n"])
            corpus.max_tf[row["term"]] = int(row["max_tf"])
            corpus.min_length_per_tf[row["term"]] = float(row["min_length_per_tf"])
    return LexicalCorpus(n, avgdl, corpus.dfs, corpus.max_tf, corpus.min_length_per_tf)


def corpus_stats(
    conn: Connection[DictRow],
    workspace_id: str,
    context_ids: Sequence[str],
    terms: Sequence[str],
) -> tuple[int, float, dict[str, int]]:
    """(N, avgdl, {term: df}) over the live memories of the workspace's ``context_ids``, in
    one round trip. A term no live memory holds has df 0."""
    corpus = lexical_corpus(conn, workspace_id, context_ids, terms)
    return corpus.n, corpus.avgdl, corpus.dfs
