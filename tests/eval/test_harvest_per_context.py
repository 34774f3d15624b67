"""Harvest keeps one candidate per context (issue 32): the same question asked in three
contexts is three candidates, each labelled with its own context and holding its own answer,
on both backends."""

from __future__ import annotations

from pathlib import Path

import pytest

from kioku.eval.golden import load_golden
from kioku.eval.harvest import harvest
from kioku.models import ContextCreate, FeedbackCreate, MemoryCreate
from kioku.runtime import Runtime
from kioku.service.principal import Principal
from kioku.settings import Settings
from tests.conftest import backend_settings

QUERY = "Who approves refunds?"
ANSWERS = {
    "billing": "Refunds are approved by the finance lead.",
    "support": "Support agents approve refunds under 5,000 yen themselves.",
    "shop-jp": "返金はショップ店長が承認する。",
}


@pytest.fixture(params=["sqlite", "postgres"])
def settings(request: pytest.FixtureRequest, tmp_path: Path) -> Settings:
    return backend_settings(request, tmp_path)


def test_the_same_query_from_three_contexts_is_three_candidates(
    runtime: Runtime, principal: Principal
) -> None:
    ids: dict[str, str] = {}
    for context, summary in ANSWERS.items():
        runtime.contexts.create_context(principal, ContextCreate(name=context))
        ids[context] = runtime.memories.remember(
            principal, context, MemoryCreate(summary=summary)
        ).id
        spelling = QUERY if context != "support" else "who approves refunds"  # same, normalised
        event = FeedbackCreate(memory_id=ids[context], helpful=True, query=spelling)
        runtime.feedback.feedback(principal, context, event)
    found = harvest(runtime, principal, load_golden())
    by_context = {candidate.context: candidate for candidate in found}
    assert len(found) == 3 and set(by_context) == set(ANSWERS)
    for context, candidate in by_context.items():
        assert candidate.relevant == [ids[context]], context
        assert candidate.events == 1 and candidate.unhelpful == [] and candidate.tempting == []
        documents = candidate.as_dict()["documents"]
        assert [(d["memory_id"], d["context"]) for d in documents] == [(ids[context], context)]  # type: ignore[index,union-attr]
    assert by_context["support"].query == "who approves refunds"
    assert by_context["billing"].query == QUERY
    only = harvest(runtime, principal, load_golden(), context="shop-jp")
    assert [(c.context, c.relevant) for c in only] == [("shop-jp", [ids["shop-jp"]])]
