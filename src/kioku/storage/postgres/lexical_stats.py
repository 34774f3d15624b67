"""BM25's corpus statistics on PostgreSQL, read from the tables the database keeps.

``lexical_scope_stats`` (N and the summed length per workspace and context) and
``lexical_term_stats`` (df per workspace, context and term) are kept up to date by a trigger
on ``memories`` in the writing transaction itself (migration 0013): they always agree with
the rows a search scores, and reading them costs one index lookup per term however many
memories hold it (counting a common word's postings at a million memories was the lexical
leg's tail). Both count the live memories (``deleted_at IS NULL``) of the workspace's
searched contexts only, so another tenant's (or another context's) writes never move a score.
"""

from __future__ import annotations

from collections.abc import Sequence

from psycopg import Connection
from psycopg.rows import DictRow


def corpus_stats(
    conn: Connection[DictRow],
    workspace_id: str,
    context_ids: Sequence[str],
    terms: Sequence[str],
) -> tuple[int, float, dict[str, int]]:
    """(N, avgdl, {term: df}) over the live memories of the workspace's ``context_ids``, in
    one round trip. A term no live memory holds has df 0."""
    rows = conn.execute(
        "SELECT NULL AS term, sum(n)::bigint AS n, "
        "(sum(total_length)::float8 / greatest(sum(n), 1)) AS avgdl "
        "FROM lexical_scope_stats WHERE workspace_id = %s AND context_id = ANY(%s) "
        "UNION ALL "
        "SELECT term, sum(df)::bigint, NULL FROM lexical_term_stats "
        "WHERE workspace_id = %s AND context_id = ANY(%s) AND term = ANY(%s) GROUP BY term",
        (workspace_id, list(context_ids), workspace_id, list(context_ids), list(terms)),
    ).fetchall()
    dfs = dict.fromkeys(terms, 0)
    n, avgdl = 0, 0.0
    for row in rows:
        if row["term"] is None:
            n, avgdl = int(row["n"] or 0), float(row["avgdl"] or 0.0)
        else:
            dfs[row["term"]] = int(row["n"])
    return n, avgdl, dfs
