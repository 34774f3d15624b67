"""Compare fusion variants on LoCoMo, JSQuAD and the golden set in one process (issue 17).

Each variant replaces ``kioku.service.recall.fuse_weighted`` (and ``trusted_weights`` is
switched off, so ``base`` is the fixed-weight fusion of main); the legs of every question are
run once and cached, so variants differ only in fusion and what follows it (the re-ranker,
threads, newer-first). Quality figures are deterministic. Run from the repository root::

    python scripts/fusion_weights_study.py golden base,z5c1,z3c1.5 0 TAG  # /tmp/rf2-golden-TAG.json
    python scripts/fusion_weights_study.py bench base,z3c1.5 0 TAG         # LoCoMo + JSQuAD

``bench`` keeps its database and the cached legs in /tmp/rf2-db (delete it to start over);
the third argument limits JSQuAD to its first N questions (0: all). Results: stderr and
/tmp/rf2-{golden,bench}-TAG.json. Halves: LoCoMo conversations 26, 41, 43 (dev) against 30,
42, 44; JSQuAD and golden questions alternate (even positions dev).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import kioku.service.recall as recall_mod
from kioku.benchmark.data import load_jsquad, load_locomo
from kioku.benchmark.ingest import drain_embeddings, ensure_context, remember_docs
from kioku.benchmark.meta import configured_embedder
from kioku.benchmark.metrics import evaluate
from kioku.eval.corpus import golden_runtime
from kioku.eval.golden import load_golden
from kioku.eval.retrieval import ARMS as EVAL_ARMS
from kioku.eval.retrieval import run_retrieval
from kioku.models import RecallRequest
from kioku.runtime import open_runtime
from kioku.search.fusion import fuse_rrf, fuse_weighted
from kioku.settings import Settings

DEV = ("locomo-conv-26", "locomo-conv-41", "locomo-conv-43")
Fuse = Callable[..., dict[str, float]]

_ORIG_RUN_LEGS = recall_mod.RecallService._run_legs
_MEMO: dict[Any, Any] = {}


def _memo_run_legs(self, scope, request, flt, depth, legs):
    key = (tuple(r.id for r in scope), request.query, repr(flt), depth, legs)
    if key not in _MEMO:
        _MEMO[key] = _ORIG_RUN_LEGS(self, scope, request, flt, depth, legs)
    ran, vec = _MEMO[key]
    return {k: list(v) for k, v in ran.items()}, vec


recall_mod.RecallService._run_legs = _memo_run_legs  # type: ignore[method-assign]  # the study swaps recall's pieces

_CURRENT: list[Fuse] = [fuse_weighted]


def _dispatch(ran, weights, blind=None):
    return _CURRENT[0](ran, weights, blind)


recall_mod.fuse_weighted = _dispatch  # type: ignore[assignment]  # the variant under study
recall_mod.trusted_weights = lambda ran, w: dict(w)  # type: ignore[assignment]  # off: base = main


def _minmax(hits):
    hi = max(h.score for h in hits)
    lo = min(h.score for h in hits)
    span = hi - lo
    return {h.memory_id: ((h.score - lo) / span if span > 0 else 1.0) for h in hits}


def _blind_scale(fused, legs, weights, blind):
    total = sum(weights.get(leg, 1.0) for leg in legs)
    unseen: dict[str, float] = {}
    for leg, ids in (blind or {}).items():
        if leg in legs:
            for m in ids:
                unseen[m] = unseen.get(m, 0.0) + weights.get(leg, 1.0)
    for m, w in unseen.items():
        if m in fused and w < total:
            fused[m] *= total / (total - w)
    return fused


def make_weighted(norms: dict[str, Callable], leg_scale: Callable | None = None) -> Fuse:
    def fuse(ran, weights, blind=None):
        w = dict(weights)
        if leg_scale is not None:
            w = leg_scale(ran, w)
        fused: dict[str, float] = {}
        for leg, hits in ran.items():
            if not hits:
                continue
            for m, v in norms.get(leg, _minmax)(hits).items():
                fused[m] = fused.get(m, 0.0) + w.get(leg, 1.0) * v
        return _blind_scale(fused, ran, w, blind)

    return fuse


def _by_top(hits):
    top = hits[0].score
    return {h.memory_id: (h.score / top if top > 0 else 1.0) for h in hits}


def _z(hits):
    s = np.array([h.score for h in hits])
    sd = s.std()
    if len(s) < 2 or sd == 0:
        return {h.memory_id: 1.0 for h in hits}
    z = (s - s.mean()) / sd
    z = z - z.min()
    return {h.memory_id: float(v) / 3.0 for h, v in zip(hits, z, strict=True)}


def gap_scale(alpha: float, which: str = "lexical", kind: str = "gap"):
    """Scale a leg's weight by its top's sharpness relative to its list."""

    def scale(ran, w):
        hits = ran.get(which) or []
        if len(hits) < 2:
            return w
        s = [h.score for h in hits]
        if kind == "gap":
            sharp = (s[0] - s[1]) / s[0] if s[0] > 0 else 0.0
        elif kind == "ztop":
            arr = np.array(s)
            sharp = float((arr[0] - arr.mean()) / (arr.std() + 1e-9)) / 5.0
        elif kind == "gap5":
            k = min(5, len(s)) - 1
            sharp = (s[0] - s[k]) / s[0] if s[0] > 0 else 0.0
        else:
            raise ValueError(kind)
        factor = min(1.0, alpha * sharp) if alpha > 0 else 1.0
        return {**w, which: w.get(which, 1.0) * factor}

    return scale


def agree_scale(floor: float):
    """Lexical weight: full when the vector leg ranks the lexical top in its top 10, else floor."""

    def scale(ran, w):
        lex, vec = ran.get("lexical") or [], ran.get("vector") or []
        if not lex or not vec:
            return w
        top = {h.memory_id for h in vec[:10]}
        factor = 1.0 if lex[0].memory_id in top else floor
        return {**w, "lexical": w.get("lexical", 1.0) * factor}

    return scale


def fixed(lex: float, vec: float):
    def scale(ran, w):
        return {**w, "lexical": w.get("lexical", 1.0) * lex, "vector": w.get("vector", 1.0) * vec}

    return scale


def _ztop(hits, window=40):
    s = np.array([h.score for h in hits[:window]])
    if s.size < 2 or s.std() == 0:
        return None
    return float((s[0] - s.mean()) / s.std())


def rel_scale(mode: str, c: float = 5.0, cap: float = 1.0):
    def scale(ran, w):
        lex, vec = ran.get("lexical") or [], ran.get("vector") or []
        if not lex or not vec:
            return w
        zl, zv = _ztop(lex), _ztop(vec)
        if zl is None or zv is None:
            return w
        zl, zv = max(zl, 0.0), max(zv, 0.0)
        if mode == "rel":
            tot = zl + zv
            if tot <= 0:
                return w
            return {
                **w,
                "lexical": w["lexical"] * 2 * zl / tot,
                "vector": w["vector"] * 2 * zv / tot,
            }
        if mode == "vec":
            return {**w, "vector": w["vector"] * min(cap, zv / c)}
        if mode == "both":
            return {
                **w,
                "lexical": w["lexical"] * min(cap, zl / c),
                "vector": w["vector"] * min(cap, zv / c),
            }
        raise ValueError(mode)

    return scale


def zscale(c: float, cap: float):
    def scale(ran, w):
        lex, vec = ran.get("lexical") or [], ran.get("vector") or []
        if not lex or not vec:
            return w
        z = _ztop(lex)
        if z is None:
            return w
        return {**w, "lexical": w["lexical"] * min(cap, max(0.0, z) / c)}

    return scale


VARIANTS: dict[str, Fuse] = {
    "z5c1": make_weighted({}, zscale(5, 1)),
    "z3c1.5": make_weighted({}, zscale(3, 1.5)),
    "z2.5c2": make_weighted({}, zscale(2.5, 2)),
    "z2c2": make_weighted({}, zscale(2, 2)),
    "z3c2": make_weighted({}, zscale(3, 2)),
    "rel": make_weighted({}, rel_scale("rel")),
    "vec5": make_weighted({}, rel_scale("vec", 5.0)),
    "vec4": make_weighted({}, rel_scale("vec", 4.0)),
    "vec3": make_weighted({}, rel_scale("vec", 3.0)),
    "both5": make_weighted({}, rel_scale("both", 5.0)),
    "both4c2": make_weighted({}, rel_scale("both", 4.0, 2.0)),
    "base": fuse_weighted,
    "rrf60": lambda ran, w, blind=None: fuse_rrf(ran, w, 60),
    "lex_by_top": make_weighted({"lexical": _by_top}),
    "z_both": make_weighted({"lexical": _z, "vector": _z}),
    "z_lex": make_weighted({"lexical": _z}),
    "w_lex0.7": make_weighted({}, fixed(0.7, 1.0)),
    "w_lex1.4": make_weighted({}, fixed(1.4, 1.0)),
    "gap_lex2": make_weighted({}, gap_scale(2.0)),
    "gap_lex4": make_weighted({}, gap_scale(4.0)),
    "gap5_lex2": make_weighted({}, gap_scale(2.0, kind="gap5")),
    "ztop_lex": make_weighted({}, gap_scale(1.0, kind="ztop")),
    "gap_vec4": make_weighted({}, gap_scale(4.0, which="vector")),
    "agree0.5": make_weighted({}, agree_scale(0.5)),
}


def locomo_and_jsquad(data: Path, variants: list[str], jsq_max: int | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    emb = configured_embedder()
    import pickle

    wd = Path("/tmp/rf2-db")
    fresh = not (wd / "b.db").exists()
    wd.mkdir(exist_ok=True)
    if True:
        rt = open_runtime(
            Settings(database_url=f"sqlite:///{wd}/b.db", embed_async=True), embedder=emb
        )
        p = rt.local_principal("import")
        locomo = load_locomo(data / "locomo")
        opts = {"max_questions": jsq_max, "extra_paragraphs": 10_000} if jsq_max else {}
        jsq = load_jsquad(data / "jsquad" / "valid-v1.3.json", **opts)
        keys = {}
        if fresh:
            for c in [*locomo, jsq]:
                ensure_context(rt, p, c.context)
                keys[c.context], _ = remember_docs(rt, p, c.context, c.docs)
            drain_embeddings(rt)
            (wd / "keys.pkl").write_bytes(pickle.dumps(keys))
        else:
            keys = pickle.loads((wd / "keys.pkl").read_bytes())
            if (wd / "memo.pkl").exists():
                _MEMO.update(pickle.loads((wd / "memo.pkl").read_bytes()))
        print("ingested", file=sys.stderr)

        def run(corpus, legs, rerank):
            r = {}
            for q in corpus.questions:
                res = rt.recall.recall(
                    p, corpus.context, RecallRequest(query=q.text, k=20), legs=legs, rerank=rerank
                )
                r[q.qid] = [keys[corpus.context].get(h.id, "?") for h in res.results]
            return r

        def score(rankings, corpora, ks):
            qs_dev = [q for c in corpora if c.context in DEV for q in c.questions]
            qs_ho = [q for c in corpora if c.context not in DEV for q in c.questions]
            qs_all = [q for c in corpora for q in c.questions]
            res = {}
            for name, qs in (("dev", qs_dev), ("held", qs_ho), ("all", qs_all)):
                if qs:
                    e = evaluate(qs, rankings, ks)
                    res[name] = {k: e["all"][k] for k in ("recall@5", "recall@10", "mrr@10")}
                    if "cat1" in e:
                        res[name]["mh@10"] = e["cat1"]["recall@10"]
            return res

        def jscore(rankings):
            qs = jsq.questions
            res = {}
            for name, sub in (("dev", qs[0::2]), ("held", qs[1::2]), ("all", qs)):
                e = evaluate(sub, rankings, (1, 5, 10))
                res[name] = {k: e["all"][k] for k in ("recall@1", "recall@5", "mrr@10")}
            return res

        for legs_name, legs in (
            () if not fresh else (("bm25", ("lexical",)), ("vector", ("vector",)))
        ):
            rl = {}
            for c in locomo:
                rl.update(run(c, legs, True))
            out[f"locomo/{legs_name}"] = score(rl, locomo, (5, 10, 20))
            out[f"jsquad/{legs_name}"] = jscore(run(jsq, legs, True))
            print(
                legs_name,
                out[f"locomo/{legs_name}"]["all"],
                out[f"jsquad/{legs_name}"]["all"],
                file=sys.stderr,
            )
        for v in variants:
            _CURRENT[0] = VARIANTS[v]
            for rerank in (True, False) if v == "base" else (True,):
                t = time.perf_counter()
                rl = {}
                for c in locomo:
                    rl.update(run(c, ("lexical", "vector"), rerank))
                tag = v if rerank else v + "-norerank"
                out[f"locomo/{tag}"] = score(rl, locomo, (5, 10, 20))
                out[f"jsquad/{tag}"] = jscore(run(jsq, ("lexical", "vector"), rerank))
                print(
                    tag,
                    out[f"locomo/{tag}"],
                    out[f"jsquad/{tag}"]["all"],
                    f"{time.perf_counter() - t:.0f}s",
                    file=sys.stderr,
                    flush=True,
                )
                if not (wd / "memo.pkl").exists():
                    (wd / "memo.pkl").write_bytes(pickle.dumps(_MEMO))
        _CURRENT[0] = fuse_weighted
        rt.close()
    return out


def golden(variants: list[str]) -> dict[str, Any]:
    from kioku.eval.corpus import load_embedder

    g = load_golden()
    out: dict[str, Any] = {}
    with golden_runtime(g, load_embedder("bundled")) as loaded:
        rep = run_retrieval(loaded, g, {a: EVAL_ARMS[a] for a in ("lexical", "vector")})
        legs_outcomes = rep.outcomes
        for v in variants:
            _CURRENT[0] = VARIANTS[v]
            r = run_retrieval(loaded, g, {a: EVAL_ARMS[a] for a in ("hybrid", "hybrid+rerank")})
            out[v] = {
                "metrics": r.metrics,
                "outcomes": {a: [o.ranked for o in os_] for a, os_ in r.outcomes.items()},
            }
        out["legs"] = {
            "metrics": rep.metrics,
            "outcomes": {a: [o.ranked for o in os_] for a, os_ in legs_outcomes.items()},
        }
        out["queries"] = [(q.id, q.bucket, list(q.relevant)) for q in g.queries]
    _CURRENT[0] = fuse_weighted
    return out


if __name__ == "__main__":
    what = sys.argv[1]
    variants = sys.argv[2].split(",")
    if what == "golden":
        res = golden(variants)
    else:
        res = locomo_and_jsquad(
            Path("/work/shared/data"), variants, int(sys.argv[3]) if len(sys.argv) > 3 else None
        )
    Path(f"/tmp/rf2-{what}-{sys.argv[4] if len(sys.argv) > 4 else 0}.json").write_text(
        json.dumps(res, indent=1)
    )
