"""The PostgreSQL lexical leg at scale: the statistics tables (migration 0013) and the
common-terms cutoff with its certificate (the cutoff applies to no small scope, which scores
exactly as the contract suite says)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from kioku.storage.lexical_cutoff import completing_groups, expected_matches
from kioku.storage.postgres import PostgresStore
from kioku.storage.postgres import search as pg_search
from kioku.storage.postgres.codec import encode_tsquery
from kioku.storage.postgres.dialect import PostgresTransaction
from kioku.storage.postgres.lexical_stats import corpus_stats, lexical_corpus
from kioku.storage.postgres.search import candidate_terms
from kioku.storage.records import MemoryChanges, MemoryFilter
from kioku.storage.transfer import MemoryDump
from tests.storage.test_contract import T0, new_context, new_memory

LIVE = MemoryFilter()


def test_candidate_terms_all_while_within_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pg_search, "CANDIDATE_BUDGET", 100)
    dfs = {"rare": 3, "mid": 40, "common": 57}
    assert candidate_terms(["common", "mid", "rare"], dfs, 10) == ["common", "mid", "rare"]


def test_candidate_terms_rarest_first_above_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pg_search, "CANDIDATE_BUDGET", 100)
    dfs = {"rare": 3, "mid": 40, "common": 900, "commoner": 5000}
    terms = ["common", "commoner", "mid", "rare"]
    # rare alone covers fewer than limit=10 memories: mid joins; common would burst the budget.
    assert candidate_terms(terms, dfs, 10) == ["rare", "mid"]
    # A limit the rare terms cannot fill pulls in the next term whatever the budget.
    assert candidate_terms(terms, dfs, 50) == ["rare", "mid", "common"]
    # Only common terms: the rarest of them still selects.
    assert candidate_terms(["common", "commoner"], dfs, 10) == ["common"]


def _corpus(pg: PostgresStore) -> tuple[str, str, dict[str, str]]:
    ws = pg.ensure_workspace("alpha").id
    ctx = new_context(pg, ws, "c")
    texts = {
        "both": "zebra common common",
        "rare-only": "zebra",
        **{f"common-{i}": f"common filler{i}" for i in range(30)},
    }
    rows = {key: new_memory(ctx.id, key, tokens=text) for key, text in texts.items()}
    pg.insert_memories(ws, list(rows.values()))
    return ws, ctx.id, {row.id: key for key, row in rows.items()}


def test_cutoff_keeps_every_term_in_the_score(
    pg: PostgresStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws, ctx, keys = _corpus(pg)
    exact = pg.lexical_search(ws, [ctx], ["zebra", "common"], LIVE, 40)
    assert len(exact) == 32  # every memory holding either term
    monkeypatch.setattr(pg_search, "CANDIDATE_BUDGET", 10)
    # zebra (df 2) selects; common (df 31) is over the budget, but still scores.
    cut = pg.lexical_search(ws, [ctx], ["zebra", "common"], LIVE, 2)
    assert sorted(keys[h.memory_id] for h in cut) == ["both", "rare-only"]
    exact_scores = {h.memory_id: h.score for h in exact}
    assert [h.memory_id for h in cut] == [
        h.memory_id
        for h in exact
        if h.memory_id in keys and keys[h.memory_id] in ("both", "rare-only")
    ]
    for hit in cut:
        assert hit.score == pytest.approx(exact_scores[hit.memory_id])
    zebra_only = {h.memory_id: h.score for h in pg.lexical_search(ws, [ctx], ["zebra"], LIVE, 2)}
    both = next(h for h in cut if keys[h.memory_id] == "both")
    assert both.score > zebra_only[both.memory_id]  # common's share is in it


def test_the_certificate_finds_what_the_cutoff_left_out(
    pg: PostgresStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A memory holding two left-out terms (and no selecting one) can beat one holding only
    the rare term: the cutoff alone misses it, the certificate's second search finds it."""
    ws = pg.ensure_workspace("alpha").id
    ctx = new_context(pg, ws, "c").id
    # 1,000 memories of ten tokens; alpha in 60 of them, beta in 60 others.
    texts = {"rare": "zebra " + " ".join(f"r{j}" for j in range(9))}
    texts["pair"] = "alpha " * 5 + "beta " * 5
    for i in range(1000):
        mid = "alpha" if i < 60 else "beta" if i < 120 else f"x{i}"
        texts[f"noise-{i}"] = mid + " " + " ".join(f"n{i}w{j}" for j in range(9))
    rows = {key: new_memory(ctx, key, tokens=text) for key, text in texts.items()}
    pg.insert_memories(ws, list(rows.values()))
    keys = {row.id: key for key, row in rows.items()}
    query = ["zebra", "alpha", "beta"]
    exact = pg.lexical_search(ws, [ctx], query, LIVE, 3)
    assert [keys[h.memory_id] for h in exact[:2]] == ["pair", "rare"]  # two mid terms win
    monkeypatch.setattr(pg_search, "CANDIDATE_BUDGET", 20)
    # zebra (df 1) selects alone; alpha and beta (df 61 each) would burst the budget. Alone,
    # neither can reach zebra's score; together they can, and 4 memories are expected to
    # hold both (independence): the certificate's second search is within the budget.
    assert candidate_terms(sorted(query), {"zebra": 1, "alpha": 61, "beta": 61}, 1) == ["zebra"]
    cut = pg.lexical_search(ws, [ctx], query, LIVE, 1)
    assert [(h.memory_id, h.score) for h in cut] == [(exact[0].memory_id, exact[0].score)]


def test_completing_groups_cover_every_term_set_that_could_reach_the_threshold() -> None:
    bounds = {"a": 5.0, "b": 3.0, "c": 2.0, "d": 0.5}
    assert completing_groups(bounds, 11.0, 10) == []  # all of them add up to 10.5
    assert completing_groups(bounds, 4.0, 10) == [("a",), ("b", "c")]  # b + d = 3.5
    assert completing_groups(bounds, 4.0, 1) is None
    # Every subset reaching the threshold holds one of the groups.
    groups = completing_groups(bounds, 6.0, 10)
    assert groups is not None
    for mask in range(16):
        subset = {t for i, t in enumerate(bounds) if mask >> i & 1}
        if sum(bounds[t] for t in subset) >= 6.0:
            assert any(set(g) <= subset for g in groups), subset


def test_expected_matches_assumes_independent_terms() -> None:
    dfs = {"a": 100, "b": 50}
    assert expected_matches([("a",), ("a", "b")], dfs, 1000) == pytest.approx(100 + 5)


def _stats(pg: PostgresStore, ws: str, ctx: str, terms: list[str]) -> tuple[int, float, dict]:
    with pg.db.transaction(ws) as conn:
        return corpus_stats(conn, ws, [ctx], terms)


def _counted(pg: PostgresStore, ws: str, ctx: str, terms: list[str]) -> tuple[int, float, dict]:
    """The statistics counted from the rows, as the leg did before migration 0013."""
    with pg.db.transaction(ws) as conn:
        row = conn.execute(
            "SELECT count(*) AS n, coalesce(avg(lexical_length), 0)::float8 AS avgdl "
            "FROM memories WHERE workspace_id = %s AND context_id = %s AND deleted_at IS NULL",
            (ws, ctx),
        ).fetchone()
        assert row is not None
        dfs = {
            term: conn.execute(
                "SELECT count(*) AS n FROM memories WHERE workspace_id = %s AND context_id = %s "
                "AND deleted_at IS NULL AND lexical_tokens @@ %s::tsquery",
                (ws, ctx, encode_tsquery([term])),
            ).fetchone()["n"]  # type: ignore[index]  # count(*) always returns a row
            for term in terms
        }
    return row["n"], row["avgdl"], dfs


def test_statistics_table_follows_every_kind_of_write(pg: PostgresStore) -> None:
    ws = pg.ensure_workspace("alpha").id
    ctx = new_context(pg, ws, "c").id
    other = new_context(pg, ws, "d").id
    rows = [new_memory(ctx, f"m{i}", tokens=f"zebra common w{i % 3}") for i in range(12)]
    pg.insert_memories(ws, rows)
    terms = ["common", "w0", "w1", "zebra", "new", "absent"]

    def agree() -> None:
        for scope in (ctx, other):
            n, avgdl, dfs = _stats(pg, ws, scope, terms)
            want = _counted(pg, ws, scope, terms)
            assert (n, dfs) == (want[0], want[2]) and avgdl == pytest.approx(want[1])

    agree()
    pg.update_memory(ws, rows[0].id, MemoryChanges(lexical_tokens="new new words"), T0)
    pg.soft_delete_memory(ws, rows[1].id, T0)
    with pg.db.transaction(ws) as conn:  # a bulk update that leaves the tokens alone
        conn.execute(
            "UPDATE memories SET access_count = access_count + 1 WHERE workspace_id = %s", (ws,)
        )
        conn.execute("UPDATE memories SET context_id = %s WHERE workspace_id = %s AND id = %s",
                     (other, ws, rows[2].id))  # fmt: skip
    agree()
    pg.purge_memory(ws, rows[3].id)
    pg.delete_context(ws, ctx)
    agree()
    with pg.db.transaction(ws) as conn:
        left = conn.execute("SELECT count(*) AS n FROM lexical_term_stats WHERE workspace_id = %s "
                            "AND context_id = %s", (ws, ctx)).fetchone()  # fmt: skip
    assert left == {"n": 0}  # a deleted context leaves no terms behind


def test_an_imported_workspace_has_its_statistics(pg: PostgresStore) -> None:
    """``kioku import`` writes memories in batches of one statement each (restore_workspace):
    the trigger counts them as remember_batch's."""
    ws = pg.ensure_workspace("alpha").id
    ctx = new_context(pg, ws, "c").id
    rows = [new_memory(ctx, f"m{i}", tokens=f"zebra common w{i % 7}") for i in range(1200)]
    pg.insert_memories(ws, rows)
    pg.soft_delete_memory(ws, rows[0].id, T0)
    tokens = {row.id: row.lexical_tokens for row in rows}
    dump = [
        dataclasses.replace(row, lexical_tokens=tokens[row.row.id])
        if isinstance(row, MemoryDump)
        else row
        for row in pg.dump_workspace(ws, T0)
    ]
    copy = pg.ensure_workspace("alpha-copy").id
    pg.restore_workspace(copy, dump)
    terms = ["common", "w0", "w6", "zebra", "absent"]
    n, avgdl, dfs = _stats(pg, copy, ctx, terms)
    want = _counted(pg, copy, ctx, terms)
    assert n == 1199 and (n, dfs) == (want[0], want[2]) and avgdl == pytest.approx(want[1])


def test_another_workspace_never_moves_a_score(pg: PostgresStore) -> None:
    alpha = pg.ensure_workspace("alpha").id
    beta = pg.ensure_workspace("beta").id
    a_ctx = new_context(pg, alpha, "c").id
    b_ctx = new_context(pg, beta, "c").id
    pg.insert_memories(alpha, [new_memory(a_ctx, f"a{i}", tokens=f"zebra x{i}") for i in range(3)])
    pg.insert_memories(alpha, [new_memory(a_ctx, "filler", tokens="filler words")])
    before = pg.lexical_search(alpha, [a_ctx], ["zebra"], LIVE, 5)
    pg.insert_memories(beta, [new_memory(b_ctx, f"b{i}", tokens="zebra zebra") for i in range(50)])
    after = pg.lexical_search(alpha, [a_ctx], ["zebra"], LIVE, 5)
    assert [(h.memory_id, h.score) for h in after] == [(h.memory_id, h.score) for h in before]
    # The other tenant's context id under one's own workspace reads nothing.
    assert _stats(pg, alpha, b_ctx, ["zebra"]) == (0, 0.0, {"zebra": 0})


def test_a_batch_of_memories_is_one_insert_statement(
    pg: PostgresStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """remember_batch and ``kioku import`` insert a batch as one ``unnest`` statement, so the
    statistics trigger folds the batch into one upsert per distinct term (not one per row)."""
    inserts: list[str] = []
    execute, executemany = PostgresTransaction.execute, PostgresTransaction.executemany

    def spy(self: PostgresTransaction, query: str, params: Any = ()) -> Any:
        if query.startswith("INSERT INTO memories"):
            inserts.append(query)
        return execute(self, query, params)

    def spy_many(self: PostgresTransaction, query: str, params: Any) -> None:
        if query.startswith("INSERT INTO memories"):
            inserts.extend(query for _ in params)
        executemany(self, query, params)

    monkeypatch.setattr(PostgresTransaction, "execute", spy)
    monkeypatch.setattr(PostgresTransaction, "executemany", spy_many)
    ws = pg.ensure_workspace("alpha").id
    ctx = new_context(pg, ws, "c").id
    pg.insert_memories(ws, [new_memory(ctx, f"m{i}", tokens=f"zebra w{i}") for i in range(40)])
    assert len(inserts) == 1 and "unnest(" in inserts[0]
    dump = list(pg.dump_workspace(ws, T0))
    copy = pg.ensure_workspace("alpha-copy").id
    pg.restore_workspace(copy, dump)
    assert len(inserts) == 2 and "unnest(" in inserts[1]
    assert len(pg.list_memories(copy, [ctx], LIVE, None, 100)) == 40


def _true_bounds(pg: PostgresStore, ws: str, ctx: str) -> dict[str, tuple[int, float]]:
    """Per term, (largest tf, least length per tf) over the live memories, from the rows."""
    with pg.db.transaction(ws) as conn:
        rows = conn.execute(
            "SELECT u.lexeme AS term, max(greatest(cardinality(u.positions), 1)) AS max_tf, "
            "min(m.lexical_length::float8 / greatest(cardinality(u.positions), 1)) AS ratio "
            "FROM memories m, unnest(m.lexical_tokens) u WHERE m.workspace_id = %s "
            "AND m.context_id = %s AND m.deleted_at IS NULL GROUP BY 1",
            (ws, ctx),
        ).fetchall()
    return {row["term"]: (row["max_tf"], row["ratio"]) for row in rows}


def _kept_bounds(pg: PostgresStore, ws: str, ctx: str, terms: list[str]) -> dict:
    with pg.db.transaction(ws) as conn:
        corpus = lexical_corpus(conn, ws, [ctx], terms)
    return {t: (corpus.max_tf[t], corpus.min_length_per_tf[t]) for t in terms}


def test_term_bounds_follow_inserts_and_never_fall_below_the_rows(pg: PostgresStore) -> None:
    """max_tf and min_length_per_tf (migration 0015) are exact after inserts; after an edit,
    a soft delete, a restore, a move and a purge they are never tighter than the rows' (they
    may stay loose: a memory leaving the scope does not lower them)."""
    ws = pg.ensure_workspace("alpha").id
    ctx = new_context(pg, ws, "c").id
    other = new_context(pg, ws, "d").id
    texts = ["zebra zebra zebra lantern", "zebra lantern lantern orchard quiet",
             "orchard", "lantern orchard orchard orchard orchard zebra"]  # fmt: skip
    rows = [new_memory(ctx, f"m{i}", tokens=text) for i, text in enumerate(texts)]
    pg.insert_memories(ws, rows)
    terms = ["lantern", "orchard", "quiet", "zebra", "absent"]
    kept = _kept_bounds(pg, ws, ctx, terms)
    assert {t: kept[t] for t in terms if t != "absent"} == _true_bounds(pg, ws, ctx)
    assert kept["zebra"] == (3, 4 / 3) and kept["absent"] == (0, float("inf"))

    def sound() -> None:
        for scope in (ctx, other):
            truth = _true_bounds(pg, ws, scope)
            kept = _kept_bounds(pg, ws, scope, terms)
            for term, (max_tf, ratio) in truth.items():
                assert kept[term][0] >= max_tf and kept[term][1] <= ratio, (scope, term)

    # An edit that keeps df as it was but raises quiet's tf: the bound must follow it.
    pg.update_memory(ws, rows[1].id, MemoryChanges(lexical_tokens="quiet quiet quiet quiet"), T0)
    sound()
    assert _kept_bounds(pg, ws, ctx, ["quiet"])["quiet"] == (4, 1.0)
    pg.soft_delete_memory(ws, rows[0].id, T0)  # zebra's tf-3 memory leaves: the bound stays
    sound()
    assert _kept_bounds(pg, ws, ctx, ["zebra"])["zebra"] == (3, 4 / 3)
    with pg.db.transaction(ws) as conn:  # a restore and a move between contexts
        conn.execute("UPDATE memories SET deleted_at = NULL WHERE workspace_id = %s AND id = %s",
                     (ws, rows[0].id))  # fmt: skip
        conn.execute("UPDATE memories SET context_id = %s WHERE workspace_id = %s AND id = %s",
                     (other, ws, rows[3].id))  # fmt: skip
    sound()
    assert _kept_bounds(pg, ws, other, ["orchard"])["orchard"] == (4, 6 / 4)
    pg.purge_memory(ws, rows[2].id)
    pg.purge_memory(ws, rows[3].id)
    sound()
    # The term's last memory gone: its row goes, and a new memory starts it afresh (exact).
    pg.insert_memories(ws, [new_memory(other, "again", tokens="orchard and more words")])
    assert _kept_bounds(pg, ws, other, ["orchard"])["orchard"] == (1, 4.0)


def test_tight_bounds_let_the_certificate_rule_out_common_terms(
    pg: PostgresStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Left-out terms that occur once in memories of ordinary length cannot together reach a
    rare term's score: with the saturation bound the certificate had to search them, with
    the real bound it proves the cutoff's answer at once."""
    ws = pg.ensure_workspace("alpha").id
    ctx = new_context(pg, ws, "c").id
    # zebra once in a memory of 30 tokens; alpha and beta each once in a quarter of 400
    # memories of 5 tokens. Saturation bounds: 2 x 2.08 > zebra's 3.74; real ones: 2 x 1.39.
    texts = {"rare": "zebra " + " ".join(f"r{j}" for j in range(29))}
    for i in range(400):
        word = ("alpha", "beta", "gamma", "delta")[i % 4]
        texts[f"n{i}"] = " ".join([word, "gamma", f"x{i}", f"y{i}", "z"])
    rows = {key: new_memory(ctx, key, tokens=text) for key, text in texts.items()}
    pg.insert_memories(ws, list(rows.values()))
    query = ["zebra", "alpha", "beta", "gamma"]
    exact = pg.lexical_search(ws, [ctx], query, LIVE, 1)
    plans: list[pg_search.CertificatePlan] = []
    plan_of = pg_search.certificate_plan

    def spy(*args: Any) -> pg_search.CertificatePlan:
        plans.append(plan_of(*args))
        return plans[-1]

    monkeypatch.setattr(pg_search, "certificate_plan", spy)
    monkeypatch.setattr(pg_search, "CANDIDATE_BUDGET", 20)
    cut = pg.lexical_search(ws, [ctx], query, LIVE, 1)
    assert [(h.memory_id, h.score) for h in cut] == [(exact[0].memory_id, exact[0].score)]
    assert [plan.outcome for plan in plans] == ["exact"]
    # The saturation bound (what deleted memories, absent from the statistics, need).
    plans.clear()
    deleted = pg.lexical_search(ws, [ctx], query, MemoryFilter(include_deleted=True), 1)
    assert [h.memory_id for h in deleted] == [exact[0].memory_id]
    assert [plan.outcome for plan in plans] == ["search"]


def test_the_conjunctive_pass_answers_exactly_when_every_term_is_common(
    pg: PostgresStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both terms over the budget: the memories holding both are scored first; a memory
    holding one of them only cannot reach the 5th score (its term's bound is below it), so
    that answer is exact. When the pass cannot prove its answer, the cutoff runs as before."""
    ws = pg.ensure_workspace("alpha").id
    ctx = new_context(pg, ws, "c").id
    texts: dict[str, str] = {}
    for i in range(1000):
        words = [f"w{i}", f"v{i}", "z"]
        if i < 20:
            words += ["alpha", "beta"]
        elif i < 200:
            words += ["alpha"] + [f"f{i}-{j}" for j in range(8)]
        elif i < 380:
            words += ["beta"] + [f"f{i}-{j}" for j in range(8)]
        texts[f"m{i}"] = " ".join(words)
    rows = {key: new_memory(ctx, key, tokens=text) for key, text in texts.items()}
    pg.insert_memories(ws, list(rows.values()))
    query = ["alpha", "beta"]
    passes: list[object] = []
    pass_of = pg_search.conjunctive_pass

    def spy(*args: Any) -> Any:
        passes.append(pass_of(*args))
        return passes[-1]

    monkeypatch.setattr(pg_search, "conjunctive_pass", spy)
    exact = pg.lexical_search(ws, [ctx], query, LIVE, 5)
    assert passes == []  # within the budget: every candidate scored
    monkeypatch.setattr(pg_search, "CANDIDATE_BUDGET", 20)
    cut = pg.lexical_search(ws, [ctx], query, LIVE, 5)
    assert [(h.memory_id, h.score) for h in cut] == [(h.memory_id, h.score) for h in exact]
    assert len(passes) == 1 and passes[0] is not None
    # Fewer memories hold both than the limit asks for: back to the cutoff, same answer.
    monkeypatch.setattr(pg_search, "CANDIDATE_BUDGET", 10**9)
    exact = pg.lexical_search(ws, [ctx], query, LIVE, 25)
    monkeypatch.setattr(pg_search, "CANDIDATE_BUDGET", 20)
    passes.clear()
    cut = pg.lexical_search(ws, [ctx], query, LIVE, 25)
    assert [(h.memory_id, h.score) for h in cut] == [(h.memory_id, h.score) for h in exact]
    assert passes == [None]
