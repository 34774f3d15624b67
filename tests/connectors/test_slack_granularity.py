"""The measurement behind one memory per thread (docs/connectors.md): questions over the
generated export, answered from the first results of recall, per thread and per message.

Lexical-only here (fast, deterministic); the docs also give the figures with the bundled
model. A reply often answers a question its root asks ("Which database for billing?" /
"Let's go with PostgreSQL"): alone, the reply lacks the question's words.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kioku.connectors.slack import Granularity, import_slack
from kioku.models import RecallRequest
from kioku.runtime import open_runtime
from tests.conftest import make_settings
from tests.connectors.slack_fixture import QUESTIONS, write_slack_export


def hits(tmp_path: Path, granularity: Granularity) -> tuple[int, int, int]:
    """(answered by the first result, by one of the first three, memories made)."""
    folder = tmp_path / granularity
    folder.mkdir()
    runtime = open_runtime(make_settings(folder, embedder="none"))
    try:
        archive = write_slack_export(folder)
        import_slack(runtime.connectors, runtime.local_principal("connector"), archive,
                     granularity=granularity)  # fmt: skip
        owner = runtime.local_principal("rest")
        contexts = [c.id for c in runtime.contexts.list_contexts(owner).items
                    if c.name.startswith("slack-")]  # fmt: skip
        first = top3 = 0
        for question, answer in QUESTIONS:
            request = RecallRequest.model_validate(
                {"query": question, "k": 3, "filters": {"context_ids": contexts}}
            )
            found = runtime.recall.recall(owner, contexts[0], request).results
            texts = [f"{hit.summary}\n{hit.content}" for hit in found]
            first += bool(texts) and answer in texts[0]
            top3 += any(answer in text for text in texts)
        made = sum(runtime.contexts.get_context(owner, c).memory_count for c in contexts)
        return first, top3, made
    finally:
        runtime.close()


@pytest.mark.parametrize("granularity", ["thread", "message"])
def test_every_question_has_an_answer_somewhere(tmp_path: Path, granularity: Granularity) -> None:
    assert hits(tmp_path, granularity)[1] >= len(QUESTIONS) - 2


def test_one_memory_per_thread_answers_more_questions_first(tmp_path: Path) -> None:
    thread = hits(tmp_path, "thread")
    message = hits(tmp_path, "message")
    assert thread[2] < message[2]  # fewer, larger memories
    assert thread[0] == len(QUESTIONS)  # measured: 12/12 (per message 7/12)
    assert thread[0] > message[0] and thread[1] >= message[1]
