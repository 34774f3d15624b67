"""How SQLite's lexical leg ranks a workspace's FTS5 table, and its common-terms cutoff.

FTS5's ``bm25()`` ranks with its own fixed constants (k1 = 1.2, b = 0.75); kioku scores with
its own (``storage/bm25_constants.py``, chosen for short memories). So FTS5's order only picks
the candidates (``rank_rows``): a pool of twice the hits a search keeps (``RESCORE_POOL``,
FTS5's best in scope, ties with the last included) is re-scored with kioku's constants and
FTS5's statistics (``rescore``: idf = ln((N − df + 0.5) / (df + 0.5)), at least 1e-6; N and the
mean length from the table's averages record; each term's df counted, and from
``CUTOFF_MIN_ROWS`` rows cached for ``DF_TTL_S`` seconds), from each row's stored tokens, and
the best of the pool are kept. A memory FTS5 ranks below the pool is not re-scored: on LoCoMo
and JSQuAD, re-ordering FTS5's best 80 alone gave 5,228 of 5,325 questions exactly the top 20
that scoring the whole table with kioku's constants gives (docs/benchmarks.md, "BM25
constants for short memories").

FTS5 answers ``MATCH 't1 OR t2 ...' ORDER BY rank`` by computing ``bm25()`` for every row that
holds any term, then sorting them all. In a small table that is nothing; at 100k memories a
query naming a speaker (in 40 % of a conversation's turns) scores some 40,000 rows, and that
was most of the lexical leg's time (27 ms p50 / 54 ms p95 measured at 100k).

So, from ``CUTOFF_MIN_ROWS`` rows in the table, the rule PostgreSQL uses applies
(``lexical_cutoff.candidate_terms``): when the query's terms have more than
``CANDIDATE_BUDGET`` postings in all, the rarer terms select the candidates and FTS5 ranks
those by the rarer terms' ``bm25()``; the best ``RESCORE_WINDOW`` of them then get the common
terms' part added with FTS5's own formula, so the order equals the one FTS5 gives the whole
query, up to the df cache's lag. When the common terms' postings are few enough
(``POSTINGS_PER_ROW_READ``), FTS5 first names the candidates holding one (the AND of the two
term sets: an intersection of postings) and only their tokens are read (about one candidate
in four at 100k); otherwise every candidate's are. A common term in half the rows or more
has FTS5's floor idf and is not added (it could only reorder exact ties). What the cutoff
changes: a memory that shares only common terms with the query is not a candidate, and a
candidate outside the rarer terms' best ``RESCORE_WINDOW`` is not rescored. Below
``CUTOFF_MIN_ROWS`` rows, or within the budget, FTS5 ranks the whole table.

From ``KIOKU_LEXICAL_INDEX_MIN`` rows (50,000 by default) a search takes its candidates from
a tantivy index instead (``lexical_sidecar.py``) and ``rescore`` scores them: FTS5 then ranks
only while that index is built, or for a filter it cannot answer.
"""

from __future__ import annotations

import math
import sqlite3
import threading
import time
from collections.abc import Sequence

from kioku.storage.bm25_constants import K1, B
from kioku.storage.lexical_cutoff import candidate_terms
from kioku.storage.sqlite.filters import chunked, placeholders

FTS5_K1 = 1.2
FTS5_B = 0.75
"""FTS5's own ``bm25()`` constants (fts5_aux.c): its order picks the candidates."""
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
RESCORE_POOL = 2
"""How many times the hits a search keeps are re-scored with kioku's constants, best of FTS5's
order first (plus every row tied with the last): a hit FTS5 ranks a little lower can still
take a place."""
POSTINGS_PER_ROW_READ = 25
"""When the common terms have at most this many postings per candidate, FTS5 names the
candidates holding one (``_holding_common``) and only those rows' tokens are read; above it,
every candidate's. Measured at 100k memories: the intersection costs 0.02-0.06 µs a common
posting, reading a row's tokens 1.8 µs, and a fifth to two fifths of the candidates still
have to be read."""
DF_TTL_S = 60.0
"""How long a counted document frequency is used before it is counted again."""
DF_CACHE_TERMS = 100_000
"""At most this many cached document frequencies per store."""

Ranked = list[tuple[int, float]]
"""(rowid, rank): ``rank`` is minus the BM25 score, lower is better (FTS5's convention)."""


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


def term_score(
    term_idf: float, tf: int, length: int, mean_length: float, k1: float = K1, b: float = B
) -> float:
    """One term's part of BM25 for a row of ``length`` tokens holding it ``tf`` times (kioku's
    constants unless given; FTS5's ``FTS5_K1``/``FTS5_B`` reproduce its ``bm25()``)."""
    norm = 1 - b + b * (length / mean_length if mean_length else 0.0)
    return term_idf * tf * (k1 + 1) / (tf + k1 * norm)


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
        fresh = self.count(conn, table, [term for term in terms if term not in dfs])
        with self._lock:
            if len(self._counts) + len(fresh) > DF_CACHE_TERMS:
                self._counts.clear()  # crude, rare: a bound on memory, not an LRU
            for term, df in fresh.items():
                self._counts[(table, term)] = (now, df)
        return {**dfs, **fresh}

    @staticmethod
    def count(conn: sqlite3.Connection, table: str, terms: Sequence[str]) -> dict[str, int]:
        """Each term's document frequency counted now (nothing cached)."""
        return {
            term: conn.execute(
                f"SELECT count(*) FROM {table} WHERE {table} MATCH ?", (_phrase(term),)
            ).fetchone()[0]
            for term in terms
        }


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
    read: dict[int, str] | None = None,
) -> tuple[Ranked, bool]:
    """The best ``window`` rows of ``table`` for the OR of ``terms`` in FTS5's order (its
    ``bm25()``, the cutoff's common terms added with FTS5's constants), best first, and
    whether nothing more could be found by asking for a bigger window. These are candidates
    only: ``rescore`` scores the pool a search takes from them with kioku's constants. The
    rows' tokens read for the common terms are added to ``read`` (``rescore`` reuses them)."""
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
    # A term in half the rows or more has FTS5's floor idf: its part of a score (at most
    # IDF_FLOOR x 2.2) could only reorder exact ties, so it is not added here (``rescore``,
    # which gives the scores, counts every term).
    common = [
        term for term in present if term not in selecting and idf(rows, dfs[term]) > IDF_FLOOR
    ]
    depth = max(window, RESCORE_WINDOW)
    found = _rank_whole(conn, table, selecting, depth)
    reading = [rowid for rowid, _ in found] if common else []
    if reading and sum(dfs[term] for term in common) <= POSTINGS_PER_ROW_READ * len(reading):
        holding = _holding_common(conn, table, selecting, common)
        reading = [rowid for rowid in reading if rowid in holding]
    tokens = _tokens(conn, table, reading)
    if read is not None:
        read.update(tokens)
    idfs = {term: idf(rows, dfs[term]) for term in common}
    rescored: Ranked = []
    for rowid, rank in found:
        text = tokens.get(rowid, "")
        held = [term for term in common if term in text]  # as a substring first: cheap
        if not held:
            rescored.append((rowid, rank))
            continue
        words = text.split()
        extra = 0.0
        for term in held:
            tf = words.count(term)
            if tf:
                extra += term_score(idfs[term], tf, len(words), mean_length, FTS5_K1, FTS5_B)
        rescored.append((rowid, rank - extra))
    rescored.sort(key=lambda row: (row[1], row[0]))
    return rescored[:window], len(found) < depth


def _holding_common(
    conn: sqlite3.Connection, table: str, selecting: Sequence[str], common: Sequence[str]
) -> set[int]:
    """The rows holding a selecting term and a common one (FTS5 intersects the postings): the
    common terms add nothing to any other candidate's score."""
    query = f"({_match(selecting)}) AND ({_match(common)})"
    sql = f"SELECT rowid FROM {table} WHERE {table} MATCH ?"
    return {rowid for (rowid,) in conn.execute(sql, (query,))}


def rescore(
    conn: sqlite3.Connection,
    table: str,
    rowids: Sequence[int],
    terms: Sequence[str],
    dfs_cache: DocumentFrequencies,
    read: dict[int, str] | None = None,
) -> dict[int, float]:
    """kioku's BM25 (``bm25_constants``; FTS5's idf, N and mean length) of each of ``rowids``
    for ``terms``, from the stored tokens (those in ``read``, already read in this
    transaction, are not read again). Below ``CUTOFF_MIN_ROWS`` rows the document
    frequencies are counted now (a write is scored at once); from there the cache's."""
    rows, mean_length = table_averages(conn, table)
    if rows < CUTOFF_MIN_ROWS:
        dfs = dfs_cache.count(conn, table, terms)
    else:
        dfs = dfs_cache.get(conn, table, terms)
    # term_score's arithmetic, unrolled: this loop runs for every kept hit of every search.
    weights = {term: idf(rows, dfs[term]) * (K1 + 1) for term in terms if dfs[term]}
    per_length = K1 * B / mean_length if mean_length else 0.0
    known = read or {}
    tokens = {rowid: known[rowid] for rowid in rowids if rowid in known}
    tokens.update(_tokens(conn, table, [rowid for rowid in rowids if rowid not in tokens]))
    scores: dict[int, float] = {}
    for rowid in rowids:
        words = tokens.get(rowid, "").split()
        base = K1 * (1 - B) + per_length * len(words)
        score = 0.0
        for term in weights.keys() & set(words):
            tf = words.count(term)
            score += weights[term] * tf / (tf + base)
        scores[rowid] = score
    return scores


def _tokens(conn: sqlite3.Connection, table: str, rowids: Sequence[int]) -> dict[int, str]:
    """Each row's tokens, from the content shadow table (id, c0 = tokens): a plain rowid table,
    read directly at a fraction of the cost of the virtual table's lookups."""
    tokens: dict[int, str] = {}
    for chunk in chunked([str(rowid) for rowid in rowids]):
        tokens.update(
            conn.execute(
                f"SELECT id, c0 FROM {table}_content WHERE id IN ({placeholders(chunk)})", chunk
            ).fetchall()
        )
    return tokens
