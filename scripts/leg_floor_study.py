"""Hybrid below its own legs (issue 17, item 3): ranking variants on golden, LoCoMo, JSQuAD.

Each variant swaps one piece of ``kioku.service.recall`` (leg trust, the blind leg's
abstention, the rank term, the language view's lexical share, versions grouping); ``product``
is recall as shipped. Each question's legs are run once and cached, so variants differ only in
what happens after the legs. Quality figures are deterministic. From the repository root::

    python scripts/leg_floor_study.py golden product,chained TAG   # /tmp/gl/golden-TAG.json
    python scripts/leg_floor_study.py bench product,chained TAG    # /tmp/gl/bench-TAG.json
    python scripts/leg_floor_study.py trace                         # per query, stdout

``bench`` keeps its SQLite file and cached legs in /tmp/gl/db (delete it to start over); all
corpora share one workspace, so BM25's statistics are not ``kioku bench``'s (its figures are
close, not equal): compare variants within one run. Halves: LoCoMo conversations 26, 41, 43
(dev) against 30, 42, 44; JSQuAD questions alternate (even positions dev); golden queries
alternate within each bucket (even positions dev).

Variants: ``product``; ``chained`` versions grouped by chains (connected components), as before
2026-12-04; ``pad`` leg trust with the lexical leg's window padded with zeros (the memories it
did not match score 0); ``padcap<most>_<upto>`` the same, capped at ``most`` and only when the
lexical leg matched at most ``upto`` memories; ``fixed`` no leg trust; ``vt<full>_<most>_<floor>``
the vector leg's weight scaled by its own sharpness too, ``clip(z / full, floor, most)``;
``noabstain`` the lexical leg never abstains (votes 0 on what it cannot read); ``abhalf`` it
abstains with half its weight; ``abnorank`` the rank term is not scaled for a blind leg;
``noscale`` no lexical share scale from the language view; ``clique`` / ``abnorank+clique`` /
``all3`` combinations (``clique`` is the product since 2026-12-04).
"""

from __future__ import annotations

import json
import pickle
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import kioku.service.recall as recall_mod
from kioku.benchmark.data import Corpus, load_jsquad, load_locomo
from kioku.benchmark.ingest import drain_embeddings, ensure_context, remember_docs
from kioku.benchmark.meta import configured_embedder
from kioku.benchmark.metrics import evaluate
from kioku.eval.corpus import golden_runtime, load_embedder
from kioku.eval.golden import load_golden
from kioku.eval.metrics import DEPTH, mean_rows, ranking_scores
from kioku.eval.retrieval import ARMS as EVAL_ARMS
from kioku.eval.retrieval import ask, run_retrieval
from kioku.models import RecallFilters, RecallRequest
from kioku.runtime import open_runtime
from kioku.search import fusion as fusion_mod
from kioku.search import leg_trust
from kioku.search import versions as versions_mod
from kioku.settings import Settings

DEV = ("locomo-conv-26", "locomo-conv-41", "locomo-conv-43")
WORKDIR = Path("/tmp/gl/db")
OUT = Path("/tmp/gl")

_ORIG_RUN_LEGS = recall_mod.RecallService._run_legs
_ORIG_TRUST = recall_mod.trusted_weights
_ORIG_ABSTAIN = fusion_mod.abstaining_weight
_ORIG_RANK_TERM = recall_mod.add_rank_term
_ORIG_GROUPS = versions_mod._groups
_ORIG_VIEW = recall_mod.language_view
_MEMO: dict[Any, Any] = {}


def _memo_run_legs(self, scope, request, flt, depth, legs):
    key = (tuple(r.id for r in scope), request.query, repr(flt), depth, legs)
    if key not in _MEMO:
        _MEMO[key] = _ORIG_RUN_LEGS(self, scope, request, flt, depth, legs)
    ran, vec = _MEMO[key]
    return {k: list(v) for k, v in ran.items()}, vec


recall_mod.RecallService._run_legs = _memo_run_legs  # type: ignore[method-assign]  # cached legs


def _padded_sharpness(hits, window=leg_trust.WINDOW):
    scores = np.zeros(window)
    got = [hit.score for hit in hits[:window]]
    if len(got) < 1:
        return None
    scores[: len(got)] = got
    spread = float(scores.std())
    if spread <= 0.0:
        return None
    return float((scores[0] - scores.mean()) / spread)


def _trust_with(
    sharp: Callable[..., float | None], most: float = leg_trust.MAX_TRUST, upto: int = 10**6
) -> Callable[..., dict[str, float]]:
    """Leg trust with ``sharp`` as the lexical sharpness when the lexical leg found at most
    ``upto`` memories (the product's otherwise), capped at ``most``."""

    def trusted(legs, weights):
        scaled = dict(weights)
        lexical = legs.get("lexical")
        if not lexical or "vector" not in legs:
            return scaled
        if len(lexical) > upto:
            return _ORIG_TRUST(legs, weights)
        s = sharp(lexical)
        if s is not None:
            trust = min(most, max(0.0, s) / leg_trust.FULL_TRUST)
            scaled["lexical"] = scaled.get("lexical", 1.0) * trust
        return scaled

    return trusted


VARIANTS: dict[str, Callable[[], None]] = {}


def _variant(name: str) -> Callable[[Callable[[], None]], Callable[[], None]]:
    def register(fn: Callable[[], None]) -> Callable[[], None]:
        VARIANTS[name] = fn
        return fn

    return register


@_variant("product")
def _product() -> None:
    recall_mod.RecallService._run_legs = _memo_run_legs  # type: ignore[method-assign]
    recall_mod.RecallService._rank = _ORIG_RANK  # type: ignore[method-assign]
    recall_mod.trusted_weights = _ORIG_TRUST
    fusion_mod.abstaining_weight = _ORIG_ABSTAIN
    recall_mod.add_rank_term = _ORIG_RANK_TERM
    versions_mod._groups = _ORIG_GROUPS
    recall_mod.language_view = _ORIG_VIEW


@_variant("noscale")
def _noscale() -> None:
    def view(*args, **kwargs):
        v = _ORIG_VIEW(*args, **kwargs)
        v.scale = {}
        return v

    recall_mod.language_view = view  # type: ignore[assignment]


def _clique_groups(candidates):
    """Versions groups in which every two members are versions of each other, built best
    place first (no chaining through a member that links two unrelated facts)."""
    pairs: set[tuple[int, int]] = set()
    for same_dim in versions_mod._by_dimension(candidates):
        units = np.stack([candidates[i].unit for i in same_dim])
        for x, y in versions_mod._close_pairs(units @ units.T):
            a, b = same_dim[x], same_dim[y]
            if versions_mod._versions(candidates[a], candidates[b]):
                pairs.add((min(a, b), max(a, b)))
    order = sorted(range(len(candidates)), key=lambda i: candidates[i].place)
    taken: set[int] = set()
    groups = []
    for i in order:
        if i in taken:
            continue
        group = [i]
        for j in order:
            if j in taken or j in group:
                continue
            if all((min(j, m), max(j, m)) in pairs for m in group):
                group.append(j)
        if len(group) > 1:
            taken.update(group)
            groups.append([candidates[m] for m in group])
    return groups


@_variant("clique")
def _clique() -> None:
    versions_mod._groups = _clique_groups  # type: ignore[assignment]


def _chained_groups(candidates):
    """The versions stage's groups as before 2026-12-04: connected components (chains)."""
    parent = list(range(len(candidates)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for same_dim in versions_mod._by_dimension(candidates):
        units = np.stack([candidates[i].unit for i in same_dim])
        for x, y in versions_mod._close_pairs(units @ units.T):
            a, b = candidates[same_dim[x]], candidates[same_dim[y]]
            if versions_mod._versions(a, b):
                parent[root(same_dim[y])] = root(same_dim[x])
    members: dict[int, list] = {}
    for i, candidate in enumerate(candidates):
        members.setdefault(root(i), []).append(candidate)
    return [group for group in members.values() if len(group) > 1]


@_variant("chained")
def _chained() -> None:
    """Recall before 2026-12-04 on a single-language corpus (LoCoMo, JSQuAD), where the rank
    term's blind scaling never applied: only the versions groups differ."""
    versions_mod._groups = _chained_groups  # type: ignore[assignment]


@_variant("all3")
def _all3() -> None:
    _abnorank()
    _clique()
    _noscale()


@_variant("abnorank+clique")
def _abnorank_clique() -> None:
    _abnorank()
    _clique()


@_variant("noabstain")
def _noabstain() -> None:
    fusion_mod.abstaining_weight = lambda legs, weights, blind: {}  # type: ignore[assignment]


@_variant("abhalf")
def _abhalf() -> None:
    def half(legs, weights, blind):
        return {m: w / 2 for m, w in _ORIG_ABSTAIN(legs, weights, blind).items()}

    fusion_mod.abstaining_weight = half  # type: ignore[assignment]


@_variant("abnorank")
def _abnorank() -> None:
    def term(fused, legs, weights, rank_weights, blind=None):
        return _ORIG_RANK_TERM(fused, legs, weights, rank_weights, None)

    recall_mod.add_rank_term = term  # type: ignore[assignment]


@_variant("pad")
def _pad() -> None:
    recall_mod.trusted_weights = _trust_with(_padded_sharpness)  # type: ignore[assignment]


@_variant("fixed")
def _fixed() -> None:
    recall_mod.trusted_weights = lambda legs, weights: dict(weights)  # type: ignore[assignment]


def _both_trust(full: float, most: float, floor: float) -> Callable[..., dict[str, float]]:
    """The product's lexical trust, and the vector leg's weight scaled the same way by its
    own sharpness: ``clip(sharpness / full, floor, most)``."""

    def trusted(legs, weights):
        scaled = _ORIG_TRUST(legs, weights)
        vector = legs.get("vector")
        if not vector or "lexical" not in legs or not legs["lexical"]:
            return scaled
        s = leg_trust.sharpness(vector)
        if s is not None:
            trust = min(most, max(floor, s / full))
            scaled["vector"] = scaled.get("vector", 1.0) * trust
        return scaled

    return trusted


def _parsed(name: str) -> Callable[[], None]:
    """``vt<full>_<most>_<floor>``: ``_both_trust``."""
    if name.startswith("vt"):
        full, most, floor = (float(x) for x in name[2:].split("_"))

        def apply() -> None:
            recall_mod.trusted_weights = _both_trust(full, most, floor)  # type: ignore[assignment]

        return apply
    if name.startswith("padcap"):  # padcap<most>_<upto>
        most, upto = name[6:].split("_")

        def apply_pad() -> None:
            recall_mod.trusted_weights = _trust_with(_padded_sharpness, float(most), int(upto))  # type: ignore[assignment]

        return apply_pad
    if name.startswith("bm25k"):  # bm25k<k1>_<b>
        k1, b = name[5:].split("_")
        return _bm25_params(float(k1), float(b))
    if name.startswith("tmmr"):  # tmmr<lambda>_<window>: only among thread members
        lam, window = name[4:].split("_")
        return _mmr(float(lam), int(window), threads_only=True)
    if name.startswith("mmr"):  # mmr<lambda>_<window>
        lam, window = name[3:].split("_")
        return _mmr(float(lam), int(window))
    raise KeyError(name)


_ORIG_RANK = recall_mod.RecallService._rank


def _mmr(lam: float, window: int, threads_only: bool = False) -> Callable[[], None]:
    """Maximal marginal relevance over the top ``window``: greedily take the candidate with the
    best ``lam × score / top score − (1 − lam) × its highest cosine to one already taken``."""

    def rank(self, principal, context_ref, request, legs, rerank):
        ranking = _ORIG_RANK(self, principal, context_ref, request, legs, rerank)
        ranked = ranking.ranked
        if not rerank or len(ranked) < 3:
            return ranking
        head = ranked[:window]
        signals = self.store.version_signals(ranking.ws, [m for _, m in head])
        top = head[0][0] or 1.0
        units = {}
        for _, m in head:
            v = signals.get(m)
            if v is not None and v.vector is not None:
                units[m] = v.vector / (np.linalg.norm(v.vector) or 1.0)
        if threads_only:
            info = self.store.ranking_signals(ranking.ws, [m for _, m in head])
            units = {m: u for m, u in units.items() if m in info and info[m].thread}
        left = list(head)
        taken: list[tuple[float, str]] = []
        while left:
            best, best_value = 0, -1e9
            for i, (score, m) in enumerate(left):
                sim = max(
                    (float(units[m] @ units[t]) for _, t in taken if m in units and t in units),
                    default=0.0,
                )
                value = lam * score / top - (1 - lam) * sim
                if value > best_value:
                    best, best_value = i, value
            taken.append(left.pop(best))
        ranking.ranked = taken + ranked[window:]
        return ranking

    def apply() -> None:
        recall_mod.RecallService._rank = rank  # type: ignore[method-assign]

    return apply


_BM25_STATS: dict[str, Any] = {}


def _bm25_params(k1: float, b: float) -> Callable[[], None]:
    """The lexical leg's hits re-scored by BM25 with ``k1`` and ``b`` (the workspace's
    statistics, the product's tokens; idf as FTS5's), re-sorted; the legs' depth unchanged."""
    import math
    from collections import Counter

    from kioku.search.fusion import ScoredId
    from kioku.search.tokenize import tokenize

    def stats(ws):
        if not _BM25_STATS:
            import sqlite3

            from kioku.storage.sqlite.lexical import lexical_table

            conn = sqlite3.connect(WORKDIR / "b.db")
            rows = conn.execute(
                f"SELECT m.id, f.tokens FROM memories m JOIN {lexical_table(ws)} f "
                "ON f.rowid = m.seq WHERE m.workspace_id = ?",
                (ws,),
            ).fetchall()
            conn.close()
            toks = {r[0]: Counter(r[1].split()) for r in rows}
            df: Counter = Counter()
            for c in toks.values():
                df.update(c.keys())
            lens = {m: sum(c.values()) for m, c in toks.items()}
            _BM25_STATS.update(
                toks=toks, df=df, lens=lens, n=len(toks), avg=sum(lens.values()) / len(toks)
            )
        return _BM25_STATS

    def run_legs(self, scope, request, flt, depth, legs):
        ran, vec = _memo_run_legs(self, scope, request, flt, depth, legs)
        hits = ran.get("lexical")
        if hits:
            st = stats(scope[0].workspace_id)
            terms = set(tokenize(request.query))
            n, avg = st["n"], st["avg"]
            out = []
            for h in hits:
                tf, dl, score = st["toks"][h.memory_id], st["lens"][h.memory_id], 0.0
                for t in terms:
                    if tf.get(t):
                        df = st["df"][t]
                        idf = max(1e-6, math.log((n - df + 0.5) / (df + 0.5)))
                        score += idf * tf[t] * (k1 + 1) / (tf[t] + k1 * (1 - b + b * dl / avg))
                out.append(ScoredId(h.memory_id, score))
            out.sort(key=lambda x: (-x.score, x.memory_id))
            ran["lexical"] = out
        return ran, vec

    def apply() -> None:
        recall_mod.RecallService._run_legs = run_legs  # type: ignore[method-assign]

    return apply


def use(name: str) -> None:
    """Make ``name`` the ranking every following recall runs."""
    _product()
    (VARIANTS[name] if name in VARIANTS else _parsed(name))()


def _score(corpora: list[Corpus], rankings: dict[str, list[str]]) -> dict[str, Any]:
    res: dict[str, Any] = {}
    halves = {
        "dev": [q for c in corpora if c.context in DEV for q in c.questions],
        "held": [q for c in corpora if c.context not in DEV for q in c.questions],
        "all": [q for c in corpora for q in c.questions],
    }
    for name, qs in halves.items():
        e = evaluate(qs, rankings, (5, 10, 20))
        res[name] = {k: e["all"][k] for k in ("recall@5", "recall@10", "mrr@10")}
        res[name]["mh@10"] = e["cat1"]["recall@10"]
    return res


def _jscore(jsq: Corpus, rankings: dict[str, list[str]]) -> dict[str, Any]:
    qs = jsq.questions
    res = {}
    for name, sub in (("dev", qs[0::2]), ("held", qs[1::2]), ("all", qs)):
        e = evaluate(sub, rankings, (1, 5, 10))
        res[name] = {k: e["all"][k] for k in ("recall@1", "recall@5", "mrr@10")}
    return res


def bench(data: Path, variants: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {"rankings": {}}
    fresh = not (WORKDIR / "b.db").exists()
    WORKDIR.mkdir(parents=True, exist_ok=True)
    rt = open_runtime(
        Settings(database_url=f"sqlite:///{WORKDIR}/b.db", embed_async=True),
        embedder=configured_embedder(),
    )
    p = rt.local_principal("import")
    locomo = load_locomo(data / "locomo")
    jsq = load_jsquad(data / "jsquad" / "valid-v1.3.json")
    if fresh:
        keys = {}
        t = time.perf_counter()
        for c in [*locomo, jsq]:
            ensure_context(rt, p, c.context)
            keys[c.context], _ = remember_docs(rt, p, c.context, c.docs)
        drain_embeddings(rt)
        (WORKDIR / "keys.pkl").write_bytes(pickle.dumps(keys))
        print(f"ingested in {time.perf_counter() - t:.0f}s", file=sys.stderr, flush=True)
    else:
        keys = pickle.loads((WORKDIR / "keys.pkl").read_bytes())
        if (WORKDIR / "memo.pkl").exists():
            _MEMO.update(pickle.loads((WORKDIR / "memo.pkl").read_bytes()))

    def run(corpus: Corpus, legs: tuple[str, ...]) -> dict[str, list[str]]:
        r = {}
        for q in corpus.questions:
            res = rt.recall.recall(p, corpus.context, RecallRequest(query=q.text, k=20), legs=legs)
            r[q.qid] = [keys[corpus.context].get(h.id, "?") for h in res.results]
        return r

    arms = [("bm25", ("lexical",), "product"), ("vector", ("vector",), "product")]
    arms += [(v, ("lexical", "vector"), v) for v in variants]
    for name, legs, variant in arms:
        use(variant)
        t = time.perf_counter()
        rl: dict[str, list[str]] = {}
        for c in locomo:
            rl.update(run(c, legs))
        out[f"locomo/{name}"] = _score(locomo, rl)
        out["rankings"][f"locomo/{name}"] = rl
        rj = run(jsq, legs)
        out[f"jsquad/{name}"] = _jscore(jsq, rj)
        out["rankings"][f"jsquad/{name}"] = rj
        print(
            f"{name:10s} locomo {json.dumps(out[f'locomo/{name}'])}\n"
            f"{'':10s} jsquad {json.dumps(out[f'jsquad/{name}'])} {time.perf_counter() - t:.0f}s",
            file=sys.stderr,
            flush=True,
        )
        (WORKDIR / "memo.pkl").write_bytes(pickle.dumps(_MEMO))
    out["gold"] = {q.qid: [list(q.gold), q.category] for c in [*locomo, jsq] for q in c.questions}
    use("product")
    rt.close()
    return out


def golden(variants: list[str]) -> dict[str, Any]:
    g = load_golden()
    positions: dict[str, int] = {}
    half: dict[str, str] = {}
    for q in g.queries:
        n = positions.get(q.bucket, 0)
        half[q.id] = "dev" if n % 2 == 0 else "held"
        positions[q.bucket] = n + 1
    out: dict[str, Any] = {"queries": [(q.id, q.bucket, list(q.relevant)) for q in g.queries]}
    with golden_runtime(g, load_embedder("bundled")) as loaded:
        use("product")
        runs = {"legs": run_retrieval(loaded, g, {a: EVAL_ARMS[a] for a in ("lexical", "vector")})}
        for v in variants:
            use(v)
            arms = {a: EVAL_ARMS[a] for a in ("hybrid", "hybrid+rerank")}
            runs[v] = run_retrieval(loaded, g, arms)
    use("product")
    by_id = {q.id: q for q in g.queries}
    for v, report in runs.items():
        table: dict[str, Any] = {}
        for arm, outcomes in report.outcomes.items():
            rows: dict[tuple[str, str], list[dict[str, float]]] = {}
            for o in outcomes:
                q = by_id[o.query_id]
                if q.bucket == "negative":
                    continue
                s = ranking_scores(o.ranked, q.relevant)
                for h in (half[q.id], "all"):
                    rows.setdefault((q.bucket, h), []).append(s)
                    rows.setdefault(("overall", h), []).append(s)
            table[arm] = {f"{b}/{h}": mean_rows(r) for (b, h), r in rows.items()}
        out[v] = {
            "table": table,
            "ranked": {a: [o.ranked for o in os_] for a, os_ in report.outcomes.items()},
        }
    _print_golden(out, ["legs", *variants])
    return out


def _print_golden(out: dict[str, Any], names: list[str]) -> None:
    legs = out["legs"]["table"]
    keys = sorted(legs["lexical"])
    for key in keys:
        for m in ("p@1", "ndcg@10"):
            lx, vc = legs["lexical"][key][m], legs["vector"][key][m]
            cells = []
            for v in names[1:]:
                for arm in ("hybrid", "hybrid+rerank"):
                    x = out[v]["table"][arm][key][m]
                    mark = "<" if x < max(lx, vc) - 1e-9 else " "
                    cells.append(f"{v}/{arm[:8]:8s} {x:.3f}{mark}")
            print(
                f"{key:22s} {m:7s} lex {lx:.3f} vec {vc:.3f} | " + " ".join(cells), file=sys.stderr
            )


def trace() -> None:
    """Every golden query where hybrid or hybrid+rerank ranks the answer below a leg (P@1 or
    nDCG@10): the legs' top 5 and the product's score breakdown down the ranking (stdout)."""
    g = load_golden()
    with golden_runtime(g, load_embedder("bundled")) as loaded:
        for q in g.queries:
            if q.bucket == "negative":
                continue
            outcomes = {name: ask(loaded, g, q, arm) for name, arm in EVAL_ARMS.items()}
            scores = {name: ranking_scores(o.ranked, q.relevant) for name, o in outcomes.items()}
            for name in ("hybrid", "hybrid+rerank"):
                worse = [
                    (leg, m)
                    for leg in ("lexical", "vector")
                    for m in ("p@1", "ndcg@10")
                    if scores[name][m] < scores[leg][m] - 1e-9
                ]
                if not worse:
                    continue
                everywhere = [c.name for c in g.contexts]
                tier = "trusted" if q.bucket == "trusted-only" else None
                filters = RecallFilters(context_ids=everywhere, trust_tier=tier)
                result = loaded.runtime.recall.recall(
                    loaded.principal,
                    g.primary,
                    RecallRequest(query=q.query, k=DEPTH, filters=filters),
                    rerank=name == "hybrid+rerank",
                )
                print(f"\n== {q.id} [{q.bucket}] {name} below {worse}: {q.query!r}")
                print(f"   relevant {q.relevant} tempting {q.tempting}")
                for leg in ("lexical", "vector"):
                    print(f"   {leg:8s} {outcomes[leg].ranked[:5]}")
                for place, hit in enumerate(result.results[:8], start=1):
                    b = hit.score_breakdown
                    doc = loaded.doc_ids.get(hit.id, "?")
                    mark = "*" if doc in q.relevant else ("t" if doc in q.tempting else " ")
                    print(
                        f"   {place}{mark} {doc:30s} score={hit.score:.4f} fused={b.fused:.4f} "
                        f"rerank={b.rerank:.3f} lexical={b.lexical_rank} vector={b.vector_rank} "
                        f"thread={b.thread} newer_first={b.newer_first}"
                    )


if __name__ == "__main__":
    if sys.argv[1] == "trace":
        trace()
        sys.exit(0)
    what, names, tag = sys.argv[1], sys.argv[2].split(","), sys.argv[3]
    OUT.mkdir(parents=True, exist_ok=True)
    result = golden(names) if what == "golden" else bench(Path("/work/shared/data"), names)
    (OUT / f"{what}-{tag}.json").write_text(json.dumps(result))
