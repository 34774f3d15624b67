"""The rank term in fusion (issue 17): which form and weight, on LoCoMo, JSQuAD and the golden set.

Every variant wraps the product's ``fuse_weighted`` (the leg weights it receives are already
``leg_trust``'s and the language view's) and adds a term from each candidate's leg ranks; the
product's own rank term is switched off, so ``rr0`` is recall as on main before it. Each
question's legs are run once and cached, so variants differ only in fusion and what follows
it (re-ranker, threads, newer-first). Quality figures are deterministic. From the repository
root::

    python scripts/rank_term_study.py bench rr0,rr0.25 TAG [--no-jsquad]   # /tmp/rt-bench-TAG.json
    python scripts/rank_term_study.py golden rr0,rr0.25 TAG                # /tmp/rt-golden-TAG.json

``bench`` keeps its SQLite file and cached legs in /tmp/rt-db (delete it to start over) and
writes each question's ranked keys per variant (and the single-leg arms) for tracing.
Halves: LoCoMo conversations 26, 41, 43 (dev) against 30, 42, 44; JSQuAD and golden queries
alternate (even positions dev).

Variant names: ``rr<w>`` the product's ``add_rank_term`` with both legs' rank weights ``w``
(``w × Σ leg weight / rank``);
``rru<w>`` the same with every leg weighing 1 (leg trust ignored by the term); ``rrk<c>_<w>``
``w × Σ leg weight × (1 + c) / (c + rank)`` (flatter); ``top1_<w>`` only a leg's first place
counts; ``lex<w>`` / ``vec<w>`` the term from one leg only; ``ab<a>_<b>`` both, ``a`` for the
lexical leg's term and ``b`` for the vector leg's; ``product`` recall as shipped (the
context's own ``lexical_rank_weight`` / ``vector_rank_weight``); ``jaoff<a>_<b>``,
``javec<a>_<b>``, ``jahalf<a>_<b>``: ``ab<a>_<b>`` for a question not in Japanese
(``language_of``) and, for one in Japanese, no term / the vector leg's alone / both halved.
"""

from __future__ import annotations

import json
import pickle
import sys
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

import kioku.service.recall as recall_mod
from kioku.benchmark.data import Corpus, load_jsquad, load_locomo
from kioku.benchmark.ingest import drain_embeddings, ensure_context, remember_docs
from kioku.benchmark.meta import configured_embedder
from kioku.benchmark.metrics import evaluate
from kioku.eval.corpus import golden_runtime, load_embedder
from kioku.eval.golden import load_golden
from kioku.eval.retrieval import ARMS as EVAL_ARMS
from kioku.eval.retrieval import run_retrieval
from kioku.models import RecallRequest
from kioku.runtime import open_runtime
from kioku.search.fusion import add_rank_term, fuse_weighted, leg_ranks
from kioku.search.language import language_of
from kioku.settings import Settings
from kioku.signals import ScoredId

DEV = ("locomo-conv-26", "locomo-conv-41", "locomo-conv-43")
WORKDIR = Path("/tmp/rt-db")
Legs = Mapping[str, Sequence[ScoredId]]
Term = Callable[[dict[str, float], Legs, Mapping[str, float], Any], dict[str, float]]

_ORIG_RUN_LEGS = recall_mod.RecallService._run_legs
_MEMO: dict[Any, Any] = {}


_QUERY = [""]


def _memo_run_legs(self, scope, request, flt, depth, legs):
    _QUERY[0] = request.query
    key = (tuple(r.id for r in scope), request.query, repr(flt), depth, legs)
    if key not in _MEMO:
        _MEMO[key] = _ORIG_RUN_LEGS(self, scope, request, flt, depth, legs)
    ran, vec = _MEMO[key]
    return {k: list(v) for k, v in ran.items()}, vec


recall_mod.RecallService._run_legs = _memo_run_legs  # type: ignore[method-assign]  # cached legs


def _general(
    weight: float,
    curve: Callable[[int], float],
    leg_weights: bool = True,
    only: str | None = None,
) -> Term:
    def term(fused, ran, weights, blind):
        total = sum(weights.get(leg, 1.0) for leg in ran)
        unseen: dict[str, float] = {}
        for leg, ids in (blind or {}).items():
            if leg in ran:
                for m in ids:
                    unseen[m] = unseen.get(m, 0.0) + weights.get(leg, 1.0)
        out = dict(fused)
        for leg, hits in ran.items():
            if only is not None and leg != only:
                continue
            w = weights.get(leg, 1.0) if leg_weights else 1.0
            for m, rank in leg_ranks(hits).items():
                u = unseen.get(m, 0.0)
                scale = total / (total - u) if 0 < u < total else 1.0
                out[m] = out.get(m, 0.0) + weight * w * curve(rank) * scale
        return out

    return term


def variant(name: str) -> Term:
    if name == "product":
        return lambda fused, ran, weights, blind: dict(fused)
    if name.startswith("rru"):
        return _general(float(name[3:]), lambda r: 1.0 / r, leg_weights=False)
    if name.startswith("rrk"):
        c, w = name[3:].split("_")
        cc = float(c)
        return _general(float(w), lambda r: (1.0 + cc) / (cc + r))
    if name.startswith("top1_"):
        return _general(float(name[5:]), lambda r: 1.0 if r == 1 else 0.0)
    if name.startswith("ja"):  # ja<how><lexical>_<vector>: ab<lexical>_<vector>, but for a
        # query in Japanese (language_of) ``off``: no term, ``vec``: the vector leg's alone,
        # ``half``: both at half
        how = next(h for h in ("off", "vec", "half") if name[2:].startswith(h))
        a, b = (float(x) for x in name[2 + len(how) :].split("_"))
        other = variant(f"ab{a}_{b}")
        ja = {
            "off": variant("rr0"),
            "vec": variant(f"vec{b}"),
            "half": variant(f"ab{a / 2}_{b / 2}"),
        }[how]
        return lambda fused, ran, weights, blind: (ja if language_of(_QUERY[0]) == "ja" else other)(
            fused, ran, weights, blind
        )
    if name.startswith("ab"):  # ab<lexical>_<vector>: a weight of its own for each leg's term
        a, b = (float(x) for x in name[2:].split("_"))
        lex, vec = (
            _general(a, lambda r: 1.0 / r, only="lexical"),
            _general(b, lambda r: 1.0 / r, only="vector"),
        )
        return lambda fused, ran, weights, blind: vec(
            lex(fused, ran, weights, blind), ran, weights, blind
        )
    if name.startswith("lex"):
        return _general(float(name[3:]), lambda r: 1.0 / r, only="lexical")
    if name.startswith("vec"):
        return _general(float(name[3:]), lambda r: 1.0 / r, only="vector")
    if name.startswith("rr"):
        w = float(name[2:])
        both = {"lexical": w, "vector": w}
        return lambda fused, ran, weights, blind: add_rank_term(fused, ran, weights, both, blind)
    raise ValueError(name)


_CURRENT: list[Term] = [variant("rr0")]


def use(name: str) -> None:
    """Make ``name`` the fusion every following recall runs."""
    _CURRENT[0] = variant(name)
    _PRODUCT[0] = name == "product"


def _dispatch(
    ran: Legs, weights: Mapping[str, float], blind: Mapping[str, Collection[str]] | None = None
) -> dict[str, float]:
    return _CURRENT[0](fuse_weighted(ran, weights, blind), ran, weights, blind)


recall_mod.fuse_weighted = _dispatch  # type: ignore[assignment]  # the variant under study
# The product's own rank term (the context's defaults) off, so the variant is the only one;
# on only for the arm ``product`` (recall exactly as shipped, to check the study against it).
_PRODUCT = [False]


def _product_rank_term(fused, ran, weights, rank_weights, blind=None):
    if _PRODUCT[0]:
        return add_rank_term(fused, ran, weights, rank_weights, blind)
    return dict(fused)


recall_mod.add_rank_term = _product_rank_term  # type: ignore[assignment]  # see above


def _score(corpora: list[Corpus], rankings: dict[str, list[str]]) -> dict[str, Any]:
    res: dict[str, Any] = {}
    halves = {
        "dev": [q for c in corpora if c.context in DEV for q in c.questions],
        "held": [q for c in corpora if c.context not in DEV for q in c.questions],
        "all": [q for c in corpora for q in c.questions],
    }
    for name, qs in halves.items():
        e = evaluate(qs, rankings, (5, 10, 20))
        res[name] = {k: e["all"][k] for k in ("recall@5", "recall@10", "recall@20", "mrr@10")}
        res[name]["mh@10"] = e["cat1"]["recall@10"]
    return res


def _jscore(jsq: Corpus, rankings: dict[str, list[str]]) -> dict[str, Any]:
    qs = jsq.questions
    res = {}
    for name, sub in (("dev", qs[0::2]), ("held", qs[1::2]), ("all", qs)):
        e = evaluate(sub, rankings, (1, 5, 10))
        res[name] = {k: e["all"][k] for k in ("recall@1", "recall@5", "mrr@10")}
    return res


def bench(data: Path, variants: list[str], jsquad: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"rankings": {}}
    fresh = not (WORKDIR / "b.db").exists()
    WORKDIR.mkdir(exist_ok=True)
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

    arms: list[tuple[str, tuple[str, ...], str]] = [
        ("bm25", ("lexical",), "rr0"),
        ("vector", ("vector",), "rr0"),
    ]
    arms += [(v, ("lexical", "vector"), v) for v in variants]
    for name, legs, fusion in arms:
        use(fusion)
        t = time.perf_counter()
        rl: dict[str, list[str]] = {}
        for c in locomo:
            rl.update(run(c, legs))
        out[f"locomo/{name}"] = _score(locomo, rl)
        out["rankings"][f"locomo/{name}"] = rl
        if jsquad:
            rj = run(jsq, legs)
            out[f"jsquad/{name}"] = _jscore(jsq, rj)
        print(
            name,
            json.dumps(out[f"locomo/{name}"]),
            json.dumps(out.get(f"jsquad/{name}", {}).get("all")),
            f"{time.perf_counter() - t:.0f}s",
            file=sys.stderr,
            flush=True,
        )
    (WORKDIR / "memo.pkl").write_bytes(pickle.dumps(_MEMO))
    out["gold"] = {
        q.qid: [list(q.gold), q.category, c.context] for c in locomo for q in c.questions
    }
    use("rr0")
    rt.close()
    return out


def trace(data: Path, variants: list[str], bench_json: Path) -> dict[str, Any]:
    """Why hybrid loses a question the BM25 arm answers first: for each such question of
    ``bench_json`` (a ``bench`` result holding ``bm25`` and the variant), the score breakdown
    of every result down to the first evidence turn, and a verdict: ``fusion`` when the fused
    score already put a non-evidence result above it, else the stage that did."""
    saved = json.loads(bench_json.read_text())
    keys = pickle.loads((WORKDIR / "keys.pkl").read_bytes())
    _MEMO.update(pickle.loads((WORKDIR / "memo.pkl").read_bytes()))
    rt = open_runtime(
        Settings(database_url=f"sqlite:///{WORKDIR}/b.db", embed_async=True),
        embedder=configured_embedder(),
    )
    p = rt.local_principal("import")
    texts = {q.qid: q.text for c in load_locomo(data / "locomo") for q in c.questions}
    out: dict[str, Any] = {}
    for v in variants:
        use(v)
        bm25, hyb = saved["rankings"]["locomo/bm25"], saved["rankings"][f"locomo/{v}"]
        rows = []
        for qid, (gold, cat, ctx) in saved["gold"].items():
            if not bm25[qid] or bm25[qid][0] not in gold or (hyb[qid] and hyb[qid][0] in gold):
                continue
            res = rt.recall.recall(p, ctx, RecallRequest(query=texts[qid], k=20))
            found = []
            for h in res.results:
                b = h.score_breakdown
                key = keys[ctx].get(h.id, "?")
                found.append(
                    (
                        key,
                        key in gold,
                        h.score,
                        b.fused,
                        b.rerank,
                        b.thread or 0.0,
                        b.lexical_rank,
                        b.vector_rank,
                        b.newer_first,
                    )
                )
                if key in gold:
                    break
            g = found[-1]
            above = found[:-1]
            if not g[1]:
                verdict = "gold below 20"
            elif any(a[3] * a[4] > g[3] * g[4] for a in above):
                verdict = "fusion" if any(a[3] > g[3] for a in above) else "rerank factor"
            elif any(a[5] > 0 for a in above):
                verdict = "thread"
            else:
                verdict = "other"
            rows.append({"qid": qid, "cat": cat, "ctx": ctx, "verdict": verdict, "rows": found})
        out[v] = rows
        from collections import Counter

        print(v, len(rows), Counter(r["verdict"] for r in rows), file=sys.stderr, flush=True)
    rt.close()
    return out


def golden(variants: list[str]) -> dict[str, Any]:
    g = load_golden()
    out: dict[str, Any] = {}
    with golden_runtime(g, load_embedder("bundled")) as loaded:
        legs = run_retrieval(loaded, g, {a: EVAL_ARMS[a] for a in ("lexical", "vector")})
        out["legs"] = {
            "metrics": legs.metrics,
            "outcomes": {a: [o.ranked for o in os_] for a, os_ in legs.outcomes.items()},
        }
        for v in variants:
            use(v)
            r = run_retrieval(loaded, g, {a: EVAL_ARMS[a] for a in ("hybrid", "hybrid+rerank")})
            out[v] = {
                "metrics": r.metrics,
                "outcomes": {a: [o.ranked for o in os_] for a, os_ in r.outcomes.items()},
            }
        out["queries"] = [(q.id, q.bucket, list(q.relevant)) for q in g.queries]
    use("rr0")
    return out


if __name__ == "__main__":
    what, names, tag = sys.argv[1], sys.argv[2].split(","), sys.argv[3]
    if what == "golden":
        result = golden(names)
    elif what == "trace":
        result = trace(Path("/work/shared/data"), names, Path(sys.argv[4]))
    else:
        result = bench(Path("/work/shared/data"), names, "--no-jsquad" not in sys.argv)
    Path(f"/tmp/rt-{what}-{tag}.json").write_text(json.dumps(result))
