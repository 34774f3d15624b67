"""Does feedback help, and can it hurt? A held-out study of the re-ranker's feedback feature.

Each conversation's questions are split alternately into a *feedback* half and a *held-out*
half. An oracle agent asks every feedback-half question (hybrid, top ``FEEDBACK_DEPTH``) and
marks each result helpful if it is gold evidence, unhelpful otherwise — the best feedback an
agent could give. The held-out half is then asked again: any change there is the feature
generalising across questions (or hurting them), not the answers being memorised. The
feedback half is reported too (the ceiling: the same questions asked again).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kioku.benchmark.data import Corpus, Question
from kioku.benchmark.latency import ARMS, ArmRun, run_arm
from kioku.benchmark.metrics import evaluate
from kioku.models import FeedbackCreate, RecallRequest
from kioku.runtime import Runtime

FEEDBACK_DEPTH = 5
TOP_K = 20

Track = Callable[[str, int], Callable[[int], None]]


def split_halves(questions: Sequence[Question]) -> tuple[list[Question], list[Question]]:
    """(feedback half, held-out half): alternate questions, so both span the conversation."""
    return list(questions[0::2]), list(questions[1::2])


def _rankings(
    runtime: Runtime, corpora: Sequence[Corpus], keys: Mapping[str, Mapping[str, str]]
) -> dict[str, list[str]]:
    principal = runtime.local_principal("import")
    run = ArmRun()
    for corpus in corpora:
        run_arm(
            runtime, principal, corpus.context, corpus.questions, keys[corpus.context],
            ARMS["hybrid"], k=TOP_K, into=run,
        )  # fmt: skip
    return run.rankings


def _give_feedback(
    runtime: Runtime,
    corpus: Corpus,
    questions: Sequence[Question],
    keys: Mapping[str, str],
    advance: Callable[[int], None],
) -> tuple[int, int]:
    """The oracle's events for one conversation; returns (helpful, unhelpful) counts."""
    principal = runtime.local_principal("import")
    helpful = unhelpful = 0
    for question in questions:
        request = RecallRequest(query=question.text, k=FEEDBACK_DEPTH)
        for hit in runtime.recall.recall(principal, corpus.context, request).results:
            good = keys.get(hit.id) in question.gold
            data = FeedbackCreate(memory_id=hit.id, helpful=good, query=question.text[:4000])
            runtime.feedback.feedback(principal, corpus.context, data)
            helpful += good
            unhelpful += not good
        advance(1)
    return helpful, unhelpful


def run_feedback_study(
    runtime: Runtime,
    corpora: Sequence[Corpus],
    keys: Mapping[str, Mapping[str, str]],
    ks: Sequence[int],
    track: Track,
) -> dict[str, Any]:
    """Hybrid metrics before and after oracle feedback, on both halves. Mutates the store."""
    halves = {corpus.context: split_halves(corpus.questions) for corpus in corpora}
    given = [q for corpus in corpora for q in halves[corpus.context][0]]
    held_out = [q for corpus in corpora for q in halves[corpus.context][1]]
    before = _rankings(runtime, corpora, keys)
    advance = track("feedback study", len(given))
    helpful = unhelpful = 0
    for corpus in corpora:
        good, bad = _give_feedback(
            runtime, corpus, halves[corpus.context][0], keys[corpus.context], advance
        )
        helpful, unhelpful = helpful + good, unhelpful + bad
    after = _rankings(runtime, corpora, keys)
    return {
        "depth": FEEDBACK_DEPTH,
        "events": {"helpful": helpful, "unhelpful": unhelpful},
        "held_out": {
            "before": evaluate(held_out, before, ks)["all"],
            "after": evaluate(held_out, after, ks)["all"],
        },
        "feedback_half": {
            "before": evaluate(given, before, ks)["all"],
            "after": evaluate(given, after, ks)["all"],
        },
    }
