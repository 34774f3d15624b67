"""Does co-recall learning link the right memories? Edge precision and recall by topic, per rule.

Co-recall strengthens the edges among a recall's top results (``service/graph.py``); which of
them take part is the rule under test: every result (before), those scoring at least half the
top score, those both legs rank in their top 3, either, or both. Three sessions, each run once
per rule on a fresh store with the real recall service (learning on while the session runs,
off while measuring):

1. ``scripted`` (development): ``hebbian_topics.yaml``, one context with six unrelated topics
   in English and Japanese; its 18 questions are asked in a mixed order (topic 1, 2, … 6, then
   again), ``ROUNDS`` times, top ``SESSION_K``.
2. ``jsquad-dev`` (development) and ``jsquad-held-out``: the JSQuAD articles split in two
   (even and odd position in the file), each half's paragraphs in one context labelled by
   article; ``SESSION_QUESTIONS`` of its questions drawn at random (seeded) are asked once.
   A rule is chosen on the development sessions and reported on the held-out one.

Measured after the session, against the topic (article) labels:

- ``edges``: Hebbian edges learned, and ``edge_precision``, the share joining one topic;
- ``edge_recall``: of the same-topic pairs that appeared together in some session recall's
  top ``co_recall_top`` (the associations any rule could learn: the rankings do not depend on
  the rule, the graph boost being off), the share the rule linked;
- ``explore_precision``: over every memory with a neighbour, the share of its ``explore``
  neighbours (depth 2) of its own topic (micro);
- ``related_precision``: the share of ``recall(include_related=true)`` neighbours of the
  question's topic, over the scripted questions / ``RELATED_QUESTIONS`` other JSQuAD questions
  of that half (micro), and ``related`` how many there were.

Run it from the checkout with::

    .venv/bin/python lab/hebbian_study.py [--jsquad ../shared/data/jsquad/valid-v1.3.json]

Result: docs/graph.md, "Does co-recall link the right memories?". Reads kioku internals:
``service.graph.GraphSettings`` (each rule is one, set on the runtime's
``graph.associations``), ``benchmark.{data,ingest,meta}`` (``RecordingEmbedder``: the vectors
written, for ``explore``), the runtime's services (``recall``, ``contexts``, ``graph.explore``)
and ``Store.list_edges``.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import combinations
from pathlib import Path
from typing import Any

import yaml

from kioku.benchmark.data import Doc, Question
from kioku.benchmark.ingest import RecordingEmbedder, drain_embeddings, remember_docs
from kioku.benchmark.meta import configured_embedder
from kioku.embeddings.base import Embedder
from kioku.models import ContextCreate, RecallRequest
from kioku.runtime import Runtime, open_runtime
from kioku.service.graph import GraphSettings
from kioku.settings import Settings

TOPICS = Path(__file__).with_name("hebbian_topics.yaml")
ROUNDS = 3
SESSION_K = 5
RELATED_K = 3
SESSION_QUESTIONS = 600
RELATED_QUESTIONS = 300
RULES: dict[str, GraphSettings] = {
    "top 3, every result (before)": GraphSettings(co_recall_floor=0.0, co_recall_confident=False),
    "half the top score": GraphSettings(co_recall_floor=0.5, co_recall_legs_top=None),
    "both legs' top 3": GraphSettings(co_recall_floor=None, co_recall_legs_top=3),
    "both legs' top 3 or half the top (default)": GraphSettings(
        co_recall_floor=0.5, co_recall_legs_top=3
    ),
    "both legs' top 3 and half the top": GraphSettings(
        co_recall_floor=0.5, co_recall_legs_top=3, co_recall_every=True
    ),
}


@dataclass(frozen=True)
class Session:
    """Labelled memories, the questions asked while learning, the questions asked after."""

    name: str
    role: str
    """``development`` (rules are chosen on it) or ``held-out`` (only reported)."""
    docs: list[Doc]
    topic: dict[str, str]
    """Document key → topic label."""
    asked: list[Question]
    probes: list[Question]
    """Asked after the session with ``include_related``; ``gold`` holds the topic label."""


def scripted_session(path: Path = TOPICS) -> Session:
    """``hebbian_topics.yaml`` as a session: questions interleaved across topics."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    docs: list[Doc] = []
    topic: dict[str, str] = {}
    per_topic: list[list[Question]] = []
    for label, item in data["topics"].items():
        for i, text in enumerate(item["memories"]):
            key = f"{label}:{i}"
            docs.append(Doc(key, text, f"scripted:{key}"))
            topic[key] = label
        per_topic.append(
            [Question(f"{label}?{i}", text, (label,)) for i, text in enumerate(item["questions"])]
        )
    mixed = [q for row in zip(*per_topic, strict=False) for q in row]
    return Session("scripted", "development", docs, topic, mixed * ROUNDS, mixed)


def jsquad_sessions(path: Path, seed: int = 0) -> list[Session]:
    """JSQuAD split by article (even / odd position in the file): a development and a
    held-out session, each its half's paragraphs labelled by article, with disjoint random
    question sets (seeded)."""
    squad = json.loads(path.read_text(encoding="utf-8"))
    halves = [("jsquad-dev", "development"), ("jsquad-held-out", "held-out")]
    return [
        _jsquad_half(name, role, squad["data"][parity::2], seed)
        for parity, (name, role) in enumerate(halves)
    ]


def _jsquad_half(name: str, role: str, articles: list[Any], seed: int) -> Session:
    keys: dict[str, str] = {}
    topic: dict[str, str] = {}
    questions: list[Question] = []
    for article in articles:
        for paragraph in article["paragraphs"]:
            key = keys.setdefault(paragraph["context"], f"p{len(keys):05d}")
            topic.setdefault(key, article["title"])
            for qa in paragraph["qas"]:
                if str(qa["question"]).strip():
                    questions.append(Question(str(qa["id"]), str(qa["question"]), (topic[key],)))
    docs = [Doc(key, text, f"jsquad:{key}") for text, key in keys.items()]
    drawn = random.Random(seed).sample(questions, SESSION_QUESTIONS + RELATED_QUESTIONS)
    return Session(name, role, docs, topic, drawn[:SESSION_QUESTIONS], drawn[SESSION_QUESTIONS:])


def measure(runtime: Runtime, session: Session, rule: GraphSettings) -> dict[str, Any]:
    """Run ``session`` with co-recall under ``rule``; its edges, explore and related figures."""
    principal = runtime.local_principal("import")
    context = session.name
    runtime.contexts.create_context(principal, ContextCreate(name=context))
    ids, _ = remember_docs(runtime, principal, context, session.docs)
    drain_embeddings(runtime)
    label = {memory_id: session.topic[key] for memory_id, key in ids.items()}
    associations = runtime.graph.associations
    associations.settings = replace(rule, learn=True)
    learnable: set[frozenset[str]] = set()
    for question in session.asked:
        request = RecallRequest(query=question.text, k=SESSION_K)
        top = [hit.id for hit in runtime.recall.recall(principal, context, request).results]
        top = top[: rule.co_recall_top]
        learnable |= {frozenset((a, b)) for a, b in combinations(top, 2) if label[a] == label[b]}
    associations.settings = replace(rule, learn=False)
    row = runtime.contexts.resolve(principal, context)
    edges = [e for e in runtime.store.list_edges(principal.workspace_id, row.id)]
    right = sum(1 for e in edges if label[e.source_id] == label[e.target_id])
    learned = sum(1 for e in edges if frozenset((e.source_id, e.target_id)) in learnable)
    explored = [0, 0]
    for memory_id in sorted({end for e in edges for end in (e.source_id, e.target_id)}):
        found = runtime.graph.explore(principal, context, memory_id, depth=2).neighbours
        explored[0] += sum(1 for n in found if label[n.id] == label[memory_id])
        explored[1] += len(found)
    related = [0, 0]
    for question in session.probes:
        request = RecallRequest(query=question.text, k=RELATED_K, include_related=True)
        found = runtime.recall.recall(principal, context, request).related
        related[0] += sum(1 for n in found if label[n.id] == question.gold[0])
        related[1] += len(found)
    return {
        "edges": len(edges),
        "edges_within_topic": right,
        "edge_precision": _share(right, len(edges)),
        "learnable_pairs": len(learnable),
        "edge_recall": _share(learned, len(learnable)),
        "explore_neighbours": explored[1],
        "explore_precision": _share(*explored),
        "related": related[1],
        "related_precision": _share(*related),
    }


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def run_study(
    sessions: Sequence[Session], embedder: Embedder | None, rules: Mapping[str, GraphSettings]
) -> dict[str, Any]:
    """Every session under every rule, each on a scratch SQLite store."""
    results: dict[str, Any] = {}
    recorder = RecordingEmbedder(embedder) if embedder is not None else None
    if recorder is not None:
        recorder.serve = True  # a text is embedded once, whatever rule reads it
    for session in sessions:
        results[session.name] = {}
        for name, rule in rules.items():
            with tempfile.TemporaryDirectory(prefix="kioku-hebbian-") as workdir:
                url = f"sqlite:///{workdir}/hebbian.db"
                runtime = open_runtime(Settings({"database": {"url": url}}), embedder=recorder)
                try:
                    results[session.name][name] = measure(runtime, session, rule)
                finally:
                    runtime.close()
            print(session.name, name, results[session.name][name], file=sys.stderr)
    return results


def markdown(results: Mapping[str, Any], roles: Mapping[str, str] | None = None) -> str:
    """One row per session and rule."""
    roles = roles or {}
    lines = [
        "| session | co-recall learns from | edges | within one topic | edge precision "
        "| edge recall | explore precision | related | related precision |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for session, rules in results.items():
        shown = f"{session} ({roles[session]})" if session in roles else session
        for name, row in rules.items():
            cells = [
                str(row["edges"]),
                str(row["edges_within_topic"]),
                _cell(row["edge_precision"]),
                _cell(row["edge_recall"]),
                _cell(row["explore_precision"]),
                str(row["related"]),
                _cell(row["related_precision"]),
            ]
            lines.append(f"| {shown} | {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _cell(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--jsquad", default=None, help="JSQuAD valid-v1.3.json (optional).")
    parser.add_argument("--json", default=None, help="Also write the raw results here.")
    args = parser.parse_args(argv)
    sessions = [scripted_session()]
    if args.jsquad:
        sessions.extend(jsquad_sessions(Path(args.jsquad)))
    results = run_study(sessions, configured_embedder(), RULES)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(markdown(results, {session.name: session.role for session in sessions}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
