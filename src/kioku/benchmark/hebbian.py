"""Does co-recall learning link the right memories? Edge precision by topic, before and after.

Co-recall strengthens the edges among a recall's top results (``service/graph.py``). Learning
from every top 3, even results that scored nothing, links unrelated memories; learning only
from the results the ranking stood behind should not. Two sessions, each run once per rule on
a fresh store with the real recall service (learning on while the session runs, off while
measuring):

1. ``scripted``: ``hebbian_topics.yaml``, one context with six unrelated topics in English
   and Japanese; its 18 questions are asked in a mixed order (topic 1, 2, … 6, then again),
   ``ROUNDS`` times, top ``SESSION_K``.
2. ``jsquad``: every JSQuAD paragraph in one context, labelled by its Wikipedia article;
   ``SESSION_QUESTIONS`` questions drawn at random (seeded) are asked once each.

Measured after the session, against the topic (article) labels:

- ``edges``: Hebbian edges learned, and ``edge_precision``, the share joining one topic;
- ``explore_precision``: over every memory with a neighbour, the share of its ``explore``
  neighbours (depth 2) of its own topic (micro);
- ``related_precision``: the share of ``recall(include_related=true)`` neighbours of the
  question's topic, over the scripted questions / ``RELATED_QUESTIONS`` other JSQuAD questions
  (micro), and ``related`` how many there were.

Run it with::

    python -m kioku.benchmark.hebbian [--jsquad ../shared/data/jsquad/valid-v1.3.json]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
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
    "floor 0.3": GraphSettings(co_recall_floor=0.3),
    "floor 0.5 (default)": GraphSettings(),
    "floor 0.7": GraphSettings(co_recall_floor=0.7),
    "floor 0.5, also when confidence is low": GraphSettings(co_recall_confident=False),
}


@dataclass(frozen=True)
class Session:
    """Labelled memories, the questions asked while learning, the questions asked after."""

    name: str
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
    return Session("scripted", docs, topic, mixed * ROUNDS, mixed)


def jsquad_session(path: Path, seed: int = 0) -> Session:
    """JSQuAD paragraphs labelled by article; disjoint random question sets (seeded)."""
    squad = json.loads(path.read_text(encoding="utf-8"))
    keys: dict[str, str] = {}
    topic: dict[str, str] = {}
    questions: list[Question] = []
    for article in squad["data"]:
        for paragraph in article["paragraphs"]:
            key = keys.setdefault(paragraph["context"], f"p{len(keys):05d}")
            topic.setdefault(key, article["title"])
            for qa in paragraph["qas"]:
                if str(qa["question"]).strip():
                    questions.append(Question(str(qa["id"]), str(qa["question"]), (topic[key],)))
    docs = [Doc(key, text, f"jsquad:{key}") for text, key in keys.items()]
    drawn = random.Random(seed).sample(questions, SESSION_QUESTIONS + RELATED_QUESTIONS)
    return Session("jsquad", docs, topic, drawn[:SESSION_QUESTIONS], drawn[SESSION_QUESTIONS:])


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
    for question in session.asked:
        runtime.recall.recall(principal, context, RecallRequest(query=question.text, k=SESSION_K))
    associations.settings = replace(rule, learn=False)
    row = runtime.contexts.resolve(principal, context)
    edges = [e for e in runtime.store.list_edges(principal.workspace_id, row.id)]
    right = sum(1 for e in edges if label[e.source_id] == label[e.target_id])
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
                runtime = open_runtime(Settings(database_url=url), embedder=recorder)
                try:
                    results[session.name][name] = measure(runtime, session, rule)
                finally:
                    runtime.close()
            print(session.name, name, results[session.name][name], file=sys.stderr)
    return results


def markdown(results: Mapping[str, Any]) -> str:
    """One row per session and rule."""
    lines = [
        "| session | co-recall learns from | edges | within one topic | edge precision "
        "| explore precision | related | related precision |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for session, rules in results.items():
        for name, row in rules.items():
            cells = [
                str(row["edges"]),
                str(row["edges_within_topic"]),
                _cell(row["edge_precision"]),
                _cell(row["explore_precision"]),
                str(row["related"]),
                _cell(row["related_precision"]),
            ]
            lines.append(f"| {session} | {name} | " + " | ".join(cells) + " |")
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
        sessions.append(jsquad_session(Path(args.jsquad)))
    results = run_study(sessions, configured_embedder(), RULES)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(markdown(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
