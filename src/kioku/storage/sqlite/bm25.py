"""How SQLite's lexical leg ranks a workspace's FTS5 table, and its common-terms cutoff.

FTS5 answers ``MATCH 't1 OR t2 ...' ORDER BY rank`` by computing ``bm25()`` for every row that
holds any term, then sorting them all. In a small table that is nothing; at 100k memories a
query naming a speaker (in 40 % of a conversation's turns) scores some 40,000 rows, and that
was most of the lexical leg's time (27 ms p50 / 54 ms p95 measured at 100k).

So, from ``CUTOFF_MIN_ROWS`` rows in the table, the rule PostgreSQL uses applies
(``lexical_cutoff.candidate_terms``): when the query's terms have more than
``CANDIDATE_BUDGET`` postings in all, the rarer terms select the candidates and FTS5 ranks
those by the rarer terms' ``bm25()``; the best ``RESCORE_WINDOW`` of them then get the common
terms' part added with FTS5's own formula (idf = ln((N − df + 0.5) / (df + 0.5)), at least
1e-6; k1 = 1.2, b = 0.75; N and the mean length from the table's averages record, df counted
and cached for ``DF_TTL_S`` seconds). A rescored memory's score therefore equals the
``bm25()`` FTS5 gives it for the whole query, up to the df cache's lag. What the cutoff
changes: a memory that shares only common terms with the query is not a candidate, and a
candidate outside the rarer terms' best ``RESCORE_WINDOW`` is not rescored.

Below ``CUTOFF_MIN_ROWS`` rows, or within the budget, the table is ranked whole, as always:
the contract tests, the LoCoMo and JSQuAD benchmarks (at most 4,373 postings a question) and
every small workspace rank exactly as FTS5 does.
"""

from __future__ import annotations

import math
import sqlite3
import threading
import time
from collections.abc import Sequence

from kioku.storage.lexical_cutoff import candidate_terms
from kioku.storage.sqlite.filters import chunked, placeholders

K1 = 1.2
B = 0.75
"""FTS5's ``bm25()`` constants (fts5_aux.c)."""
IDF_FLOOR = 1e-6
"""FTS5 clamps a term's idf to this when a term is in half the rows or more."""

CUTOFF_MIN_ROWS = 20_000
"""From this many rows in a workspace's table, the common-terms cutoff may apply."""
CANDIDATE_BUDGET = 5_000
"""Above this many postings over all query terms, only the rarer terms select candidates."""
RESCORE_WINDOW = 1_000
"""How many of the rarer terms' best candidates get the common terms' part of the score (a
measured trade-off at 100k memories: 1,000 keeps 90 % of the exact top 40 at a fifth of the
time; 5,000 keeps 98 % at twice the time of 1,000)."""
DF_TTL_S = 60.0
"""How long a counted document frequency is used before it is counted again."""
DF_CACHE_TERMS = 100_000
"""At most this many cached document frequencies per store."""

Ranked = list[tuple[int, float]]
"""(rowid, FTS5 rank): ``rank`` is minus the BM25 score, lower is better."""


def _varints(blob: bytes) -> list[int]:
    """SQLite's varint format (big-endian groups of 7 bits; a 9th byte holds 8)."""
    values: list[int] = []
    at = 0
    while at < len(blob):
        value = 0
        for i in range(9):
            byte = blob[at]
            at += 1
            if i == 8:
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if not byte & 0x80:
                break
        values.append(value)
    return values


def table_averages(conn: sqlite3.Connection, table: str) -> tuple[int, float]:
    """(rows, mean tokens a row) from the FTS5 averages record (``%_data`` id 1)."""
    try:
        row = conn.execute(f"SELECT block FROM {table}_data WHERE id = 1").fetchone()
    except sqlite3.OperationalError as exc:
        if str(exc) == f"no such table: {table}_data":
            return 0, 0.0  # the workspace never stored a memory: the MATCH will say so
        raise
    if row is None or not row[0]:
        return 0, 0.0
    values = _varints(bytes(row[0]))
    rows, tokens = values[0], values[1] if len(values) > 1 else 0
    return rows, (tokens / rows if rows else 0.0)


def idf(rows: int, df: int) -> float:
    """FTS5's idf of a term in ``df`` of ``rows`` rows."""
    return max(math.log((rows - df + 0.5) / (df + 0.5)), IDF_FLOOR)


def term_score(term_idf: float, tf: int, length: int, mean_length: float) -> float:
    """One term's part of FTS5's BM25 for a row of ``length`` tokens holding it ``tf`` times."""
    norm = 1 - B + B * (length / mean_length if mean_length else 0.0)
    return term_idf * tf * (K1 + 1) / (tf + K1 * norm)


class DocumentFrequencies:
    """Per table and term, in how many rows the term is, counted at most every ``DF_TTL_S``.

    Counting walks the term's postings: for a common term in a big table, as long as a whole
    small search. Scores that use a cached count may lag writes by ``DF_TTL_S`` seconds (which
    memories match never does), as PostgreSQL's ``CorpusStatsCache``.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[tuple[str, str], tuple[float, int]] = {}

    def get(self, conn: sqlite3.Connection, table: str, terms: Sequence[str]) -> dict[str, int]:
        now = time.monotonic()
        dfs: dict[str, int] = {}
        with self._lock:
            for term in terms:
                hit = self._counts.get((table, term))
                if hit is not None and now - hit[0] < DF_TTL_S:
                    dfs[term] = hit[1]
        fresh = {
            term: conn.execute(
                f"SELECT count(*) FROM {table} WHERE {table} MATCH ?", (_phrase(term),)
            ).fetchone()[0]
            for term in terms
            if term not in dfs
        }
        with self._lock:
            if len(self._counts) + len(fresh) > DF_CACHE_TERMS:
                self._counts.clear()  # crude, rare: a bound on memory, not an LRU
            for term, df in fresh.items():
                self._counts[(table, term)] = (now, df)
        return {**dfs, **fresh}


def _phrase(term: str) -> str:
    return f'"{term}"'


def _match(terms: Sequence[str]) -> str:
    return " OR ".join(_phrase(term) for term in terms)


def _rank_whole(conn: sqlite3.Connection, table: str, terms: Sequence[str], window: int) -> Ranked:
    return conn.execute(
        f"SELECT rowid, rank FROM {table} WHERE {table} MATCH ? ORDER BY rank LIMIT ?",
        (_match(terms), window),
    ).fetchall()


def rank_rows(
    conn: sqlite3.Connection,
    table: str,
    terms: Sequence[str],
    window: int,
    dfs_cache: DocumentFrequencies,
) -> tuple[Ranked, bool]:
    """The best ``window`` rows of ``table`` for the OR of ``terms``, best first, and whether
    nothing more could be found by asking for a bigger window."""
    rows, mean_length = table_averages(conn, table)
    if rows < CUTOFF_MIN_ROWS:
        ranked = _rank_whole(conn, table, terms, window)
        return ranked, len(ranked) < window
    dfs = dfs_cache.get(conn, table, terms)
    present = [term for term in terms if dfs[term] > 0]
    if not present:
        return [], True
    selecting = candidate_terms(present, dfs, window, CANDIDATE_BUDGET)
    if len(selecting) == len(present):
        ranked = _rank_whole(conn, table, present, window)
        return ranked, len(ranked) < window
    common = [term for term in present if term not in selecting]
    depth = max(window, RESCORE_WINDOW)
    found = _rank_whole(conn, table, selecting, depth)
    tokens: dict[int, str] = {}
    for chunk in chunked([str(rowid) for rowid, _ in found]):
        tokens.update(
            conn.execute(
                # The content shadow table (id, c0 = tokens): a plain rowid table, read
                # directly at a fraction of the cost of the virtual table's lookups.
                f"SELECT id, c0 FROM {table}_content WHERE id IN ({placeholders(chunk)})",
                chunk,
            ).fetchall()
        )
    idfs = {term: idf(rows, dfs[term]) for term in common}
    rescored: Ranked = []
    for rowid, rank in found:
        words = tokens.get(rowid, "").split()
        extra = 0.0
        for term in common:
            tf = words.count(term)
            if tf:
                extra += term_score(idfs[term], tf, len(words), mean_length)
        rescored.append((rowid, rank - extra))
    rescored.sort(key=lambda row: (row[1], row[0]))
    return rescored[:window], len(found) < depth
