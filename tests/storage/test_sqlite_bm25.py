"""SQLite's lexical leg: FTS5's order picks the candidates, kioku's BM25 constants score them
(``storage/bm25_constants.py``), and in big tables the common-terms cutoff keeps the exact
score for every candidate (small tables rank whole, as the contract suite says)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from kioku.storage import open_store
from kioku.storage.records import MemoryFilter, ScoredId
from kioku.storage.sqlite import SQLiteStore
from kioku.storage.sqlite import bm25 as sqlite_bm25
from kioku.storage.sqlite.dialect import ID_CHUNK
from kioku.storage.sqlite.lexical import lexical_table
from tests.storage.test_contract import new_context, new_memory

LIVE = MemoryFilter()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    opened = open_store(f"sqlite:///{tmp_path / 'bm25.db'}")
    assert isinstance(opened, SQLiteStore)
    try:
        yield opened
    finally:
        opened.close()


def _corpus(store: SQLiteStore) -> tuple[str, str, dict[str, str]]:
    """zebra in 8 memories, common in 35 (one of them long), of 139."""
    ws = store.ensure_workspace("alpha").id
    ctx = new_context(store, ws, "c")
    texts = {
        "both": "zebra common common",
        "rare-only": "zebra",
        **{f"zebra-{i}": f"zebra stripe{i}" + (" common" if i % 2 else "") for i in range(6)},
        "long": "common " + " ".join(f"pad{i}" for i in range(40)),
        **{f"common-{i}": f"common filler{i}" for i in range(30)},
        **{f"other-{i}": f"unrelated{i} words here" for i in range(100)},
    }
    rows = {key: new_memory(ctx.id, key, tokens=text) for key, text in texts.items()}
    store.insert_memories(ws, list(rows.values()))
    return ws, ctx.id, {row.id: key for key, row in rows.items()}


def _fts5_scores(store: SQLiteStore, ws: str, terms: list[str]) -> dict[int, float]:
    table = lexical_table(ws)
    match = " OR ".join(f'"{t}"' for t in terms)
    rows = (
        store.db.connection()
        .execute(f"SELECT rowid, rank FROM {table} WHERE {table} MATCH ?", (match,))
        .fetchall()
    )
    return dict(rows)


def test_averages_record_gives_rows_and_mean_length(store: SQLiteStore) -> None:
    ws, _, _ = _corpus(store)
    conn = store.db.connection()
    table = lexical_table(ws)
    rows, mean = sqlite_bm25.table_averages(conn, table)
    lengths = [len(t.split()) for (t,) in conn.execute(f"SELECT tokens FROM {table}")]
    assert rows == len(lengths) == 139
    assert mean == pytest.approx(sum(lengths) / len(lengths))
    assert sqlite_bm25.table_averages(conn, lexical_table("never-wrote")) == (0, 0.0)


def test_formula_reproduces_fts5_bm25(store: SQLiteStore) -> None:
    ws, _, _ = _corpus(store)
    conn = store.db.connection()
    table = lexical_table(ws)
    rows, mean = sqlite_bm25.table_averages(conn, table)
    fts5 = _fts5_scores(store, ws, ["common"])
    df = len(fts5)
    for rowid, rank in fts5.items():
        tokens = conn.execute(f"SELECT tokens FROM {table} WHERE rowid = ?", (rowid,)).fetchone()
        words = tokens[0].split()
        ours = sqlite_bm25.term_score(
            sqlite_bm25.idf(rows, df), words.count("common"), len(words), mean,
            sqlite_bm25.FTS5_K1, sqlite_bm25.FTS5_B,
        )  # fmt: skip
        assert -rank == pytest.approx(ours, rel=1e-12)


def kioku_bm25(store: SQLiteStore, ws: str, terms: list[str]) -> dict[str, float]:
    """kioku's BM25 (its k1 and b, FTS5's idf and statistics) of every memory holding a term,
    by memory id, computed here from the stored tokens."""
    conn = store.db.connection()
    table = lexical_table(ws)
    rows, mean = sqlite_bm25.table_averages(conn, table)
    docs = conn.execute(
        f"SELECT m.id, f.tokens FROM {table} f JOIN memories m ON m.seq = f.rowid"
    ).fetchall()
    dfs = {t: sum(1 for _, tokens in docs if t in tokens.split()) for t in terms}
    scores: dict[str, float] = {}
    for memory_id, tokens in docs:
        words = tokens.split()
        parts = [
            (1.0 - sqlite_bm25.B + sqlite_bm25.B * len(words) / mean, words.count(t), t)
            for t in terms
            if t in words
        ]
        if parts:
            k1 = sqlite_bm25.K1
            scores[memory_id] = sum(
                sqlite_bm25.idf(rows, dfs[t]) * tf * (k1 + 1) / (tf + k1 * norm)
                for norm, tf, t in parts
            )
    return scores


def test_the_leg_scores_with_kiokus_constants_not_fts5s(store: SQLiteStore) -> None:
    ws, ctx, _ = _corpus(store)
    expected = kioku_bm25(store, ws, ["zebra", "common"])
    hits = store.lexical_search(ws, [ctx], ["zebra", "common"], LIVE, 40)
    assert {h.memory_id for h in hits} == set(expected)
    for hit in hits:
        assert hit.score == pytest.approx(expected[hit.memory_id], rel=1e-12)
    assert [h.memory_id for h in hits] == sorted(expected, key=lambda m: (-expected[m], m))


def test_kiokus_constants_change_the_order_fts5_gives(store: SQLiteStore) -> None:
    """A rare word said three times against the rare word once plus a common one, in notes of
    one length: FTS5's pair (k1 1.2) lets the repetition win, kioku's (k1 0.5) saturates
    sooner and ranks the note that covers more of the question first."""
    ws = store.ensure_workspace("alpha").id
    ctx = new_context(store, ws, "c")
    repeated = new_memory(ctx.id, "r", tokens="deploy deploy deploy pad1 pad2")
    covering = new_memory(ctx.id, "c", tokens="deploy friday pad3 pad4 pad5")
    filler = [
        new_memory(ctx.id, f"f{i}", tokens=f"{'friday' if i < 5 else 'other'} w{i} a b c")
        for i in range(20)
    ]
    store.insert_memories(ws, [repeated, covering, *filler])
    fts5 = _fts5_scores(store, ws, ["deploy", "friday"])
    assert fts5[1] < fts5[2]  # FTS5's rank (lower is better): the repetition (rowid 1) first
    hits = store.lexical_search(ws, [ctx.id], ["deploy", "friday"], LIVE, 10)
    assert [h.memory_id for h in hits[:2]] == [covering.id, repeated.id]


def test_small_tables_rank_whole(store: SQLiteStore, monkeypatch: pytest.MonkeyPatch) -> None:
    ws, ctx, _ = _corpus(store)
    monkeypatch.setattr(sqlite_bm25, "CANDIDATE_BUDGET", 3)  # would cut, but 139 < 20,000 rows
    hits = store.lexical_search(ws, [ctx], ["zebra", "common"], LIVE, 40)
    assert len(hits) == 39  # every memory holding either term, common-only ones too


def test_cutoff_keeps_fts5_score_for_every_candidate(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws, ctx, keys = _corpus(store)
    exact = store.lexical_search(ws, [ctx], ["zebra", "common"], LIVE, 40)
    exact_scores = {h.memory_id: h.score for h in exact}
    monkeypatch.setattr(sqlite_bm25, "CUTOFF_MIN_ROWS", 10)
    monkeypatch.setattr(sqlite_bm25, "CANDIDATE_BUDGET", 10)
    # zebra (df 8) selects the window of 2 * 4; common (df 35) is over the budget, but still
    # scores: the order is the exact one among zebra's memories.
    cut = store.lexical_search(ws, [ctx], ["zebra", "common"], LIVE, 2)
    assert [h.memory_id for h in cut] == [
        h.memory_id for h in exact if keys[h.memory_id].startswith(("both", "rare", "zebra"))
    ][:2]
    for hit in cut:
        assert hit.score == pytest.approx(exact_scores[hit.memory_id], rel=1e-12)
    zebra_only = {h.memory_id: h.score for h in store.lexical_search(ws, [ctx], ["zebra"], LIVE, 8)}
    with_common = [h for h in cut if "common" in tokens_of(store, ws, h.memory_id).split()]
    assert with_common  # the best two hold common too: its share is in their score
    assert all(h.score > zebra_only[h.memory_id] for h in with_common)


def test_cutoff_rescores_only_the_rarer_terms_best(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws, _, _ = _corpus(store)
    monkeypatch.setattr(sqlite_bm25, "CUTOFF_MIN_ROWS", 10)
    monkeypatch.setattr(sqlite_bm25, "CANDIDATE_BUDGET", 10)
    monkeypatch.setattr(sqlite_bm25, "RESCORE_WINDOW", 1)
    conn = store.db.connection()
    ranked, exhausted = sqlite_bm25.rank_rows(
        conn, lexical_table(ws), ["common", "zebra"], 1, sqlite_bm25.DocumentFrequencies()
    )
    assert len(ranked) == 1 and not exhausted  # zebra has more memories left to find
    monkeypatch.setattr(sqlite_bm25, "RESCORE_WINDOW", 20)
    ranked, exhausted = sqlite_bm25.rank_rows(
        conn, lexical_table(ws), ["common", "zebra"], 8, sqlite_bm25.DocumentFrequencies()
    )
    found = sorted(keys_of(store, ws, rowid) for rowid, _ in ranked)
    assert found == sorted(["both", "rare-only", *(f"zebra-{i}" for i in range(6))])
    assert exhausted  # every zebra memory found: a wider window cannot add one


@pytest.fixture
def cut_corpus(store: SQLiteStore, monkeypatch: pytest.MonkeyPatch) -> str:
    """``_corpus``'s workspace, with the common-terms cutoff on from 10 rows and 10 postings."""
    ws, _, _ = _corpus(store)
    monkeypatch.setattr(sqlite_bm25, "CUTOFF_MIN_ROWS", 10)
    monkeypatch.setattr(sqlite_bm25, "CANDIDATE_BUDGET", 10)
    return ws


def test_only_the_candidates_holding_a_common_term_are_read_when_its_postings_are_few(
    store: SQLiteStore, cut_corpus: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws, conn = cut_corpus, store.db.connection()
    answers = {}
    for per_row in (0, 1_000):  # 0: every candidate's tokens read; 1,000: FTS5 names them
        monkeypatch.setattr(sqlite_bm25, "POSTINGS_PER_ROW_READ", per_row)
        read: dict[int, str] = {}
        ranked, _ = sqlite_bm25.rank_rows(
            conn, lexical_table(ws), ["common", "zebra"], 8, sqlite_bm25.DocumentFrequencies(), read
        )
        answers[per_row] = (ranked, sorted(keys_of(store, ws, rowid) for rowid in read))
    assert answers[0][0] == answers[1_000][0]  # the same candidates, ranks and order
    assert answers[0][1] == sorted(["both", "rare-only", *(f"zebra-{i}" for i in range(6))])
    assert answers[1_000][1] == ["both", "zebra-1", "zebra-3", "zebra-5"]  # those with common


def test_a_term_in_half_the_rows_adds_nothing_and_is_not_read(
    store: SQLiteStore, cut_corpus: str
) -> None:
    ws, conn = cut_corpus, store.db.connection()
    counts = sqlite_bm25.DocumentFrequencies()
    assert counts.get(conn, lexical_table(ws), ["words"]) == {"words": 100}  # of 139: idf floor
    read: dict[int, str] = {}
    ranked, _ = sqlite_bm25.rank_rows(conn, lexical_table(ws), ["words", "zebra"], 8, counts, read)
    alone, _ = sqlite_bm25.rank_rows(conn, lexical_table(ws), ["zebra"], 8, counts)
    assert read == {}  # no candidate's tokens needed
    assert ranked == sorted((tuple(row) for row in alone), key=lambda row: (row[1], row[0]))


def test_only_the_front_of_the_window_is_looked_up_when_its_rows_are_in_scope(
    store: SQLiteStore,
) -> None:
    """Each candidate's scope check reads its row of ``memories``: with every row in scope,
    the pool (twice the hits kept) and its ties are looked up, not the whole window."""
    ws = store.ensure_workspace("alpha").id
    ctx = new_context(store, ws, "c")
    rows = [  # one length each: no two ranks tie
        new_memory(ctx.id, f"kiwi-{i}", tokens=" ".join(["kiwi", *(f"pad{j}" for j in range(i))]))
        for i in range(60)
    ]
    store.insert_memories(ws, rows)
    hits, looked_up = _scope_lookups(store, ws, ctx.id, "kiwi", 5)
    assert [h.memory_id for h in hits] == [row.id for row in rows[:5]]  # the shortest first
    assert sum(looked_up) == 10  # the pool of 2 x 5; the window holds 4 x 5
    ties = [
        new_memory(ctx.id, f"tie-{i}", tokens="kiwi " + " ".join(["pad"] * 9)) for i in range(4)
    ]
    store.insert_memories(ws, ties)  # tied with kiwi-9, the pool's last: looked up too
    assert sum(_scope_lookups(store, ws, ctx.id, "kiwi", 5)[1]) == 14
    many = [new_memory(ctx.id, f"many-{i}", tokens=f"kiwi filler{i}") for i in range(700)]
    store.insert_memories(ws, many)
    hits, looked_up = _scope_lookups(store, ws, ctx.id, "kiwi", 300)  # a pool of 600
    assert len(hits) == 300 and max(looked_up) <= ID_CHUNK  # statement-sized lookups


def _scope_lookups(
    store: SQLiteStore, ws: str, ctx: str, term: str, k: int
) -> tuple[list[ScoredId], list[int]]:
    """A lexical search's hits, and how many rows each statement of its scope check looked
    up."""
    looked_up: list[int] = []

    def trace(statement: str) -> None:
        if statement.startswith("SELECT m.seq, m.id FROM memories m WHERE m.seq IN"):
            listed = statement.split(" IN (", 1)[1].split(")", 1)[0]  # values bound in
            looked_up.append(listed.count(",") + 1)

    conn = store.db.connection()
    conn.set_trace_callback(trace)
    try:
        hits = store.lexical_search(ws, [ctx], [term], LIVE, k)
    finally:
        conn.set_trace_callback(None)
    return hits, looked_up


def keys_of(store: SQLiteStore, ws: str, rowid: int) -> str:
    """The ``_corpus`` key (summary) of the memory at ``rowid``."""
    conn = store.db.connection()
    sql = "SELECT summary FROM memories WHERE workspace_id = ? AND seq = ?"
    return conn.execute(sql, (ws, rowid)).fetchone()[0]


def tokens_of(store: SQLiteStore, ws: str, memory_id: str) -> str:
    table = lexical_table(ws)
    sql = f"SELECT f.tokens FROM {table} f JOIN memories m ON m.seq = f.rowid WHERE m.id = ?"
    return store.db.connection().execute(sql, (memory_id,)).fetchone()[0]


def test_document_frequencies_are_cached_for_their_ttl(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws, ctx, _ = _corpus(store)
    conn = store.db.connection()
    table = lexical_table(ws)
    counts = sqlite_bm25.DocumentFrequencies()
    assert counts.get(conn, table, ["common", "zebra", "absent"]) == {
        "common": 35, "zebra": 8, "absent": 0,
    }  # fmt: skip
    store.insert_memories(ws, [new_memory(ctx, "more", tokens="zebra")])
    assert counts.get(conn, table, ["zebra"]) == {"zebra": 8}  # cached
    monkeypatch.setattr(sqlite_bm25, "DF_TTL_S", 0.0)
    assert counts.get(conn, table, ["zebra"]) == {"zebra": 9}


def test_a_workspace_that_never_wrote_finds_nothing(store: SQLiteStore) -> None:
    ws = store.ensure_workspace("empty").id
    ctx = new_context(store, ws, "c")
    assert store.lexical_search(ws, [ctx.id], ["anything"], LIVE, 5) == []
    with pytest.raises(sqlite3.OperationalError):
        sqlite_bm25.rank_rows(
            store.db.connection(), lexical_table(ws), ["x"], 5, sqlite_bm25.DocumentFrequencies()
        )
