"""Sleep's deterministic phases on real data: a LoCoMo conversation with the bundled model.

The first sessions of conversation 26 are remembered turn by turn, then the same facts are
remembered again in other words (paraphrased duplicates, as an agent re-stating what it
learned). Sleep must merge exactly those pairs (the newer wording wins), lose nothing else,
and ``rollback_sleep`` must give back a byte-identical ``kioku export``.
"""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from kioku.benchmark.data import locomo_turns
from kioku.models import BatchCreate, ContextCreate, RecallRequest
from kioku.runtime import Runtime
from kioku.service.transfer import export_workspace
from kioku.storage.records import MemoryFilter

pytestmark = pytest.mark.integration

LOCOMO = Path(__file__).resolve().parents[3] / "shared" / "data" / "locomo" / "conv-26.json"
TURNS = 60
PARAPHRASES = {
    "D1:3": "Caroline (1:56 pm on 8 May, 2023): Yesterday I went to an LGBTQ support group and "
    "it was so powerful.",
    "D1:11": "Caroline (1:56 pm on 8 May, 2023): I'm keen on counseling or mental health work - "
    "I'd love to support people with similar issues.",
    "D1:14": "Melanie (1:56 pm on 8 May, 2023): Yes, I painted that lake sunrise last year! "
    "It's special to me.",
    "D2:8": "Caroline (1:14 pm on 25 May, 2023): I'm researching adoption agencies — it's been "
    "a dream to have a family and give a loving home to kids who need it.",
    "D2:12": "Caroline (1:14 pm on 25 May, 2023): I chose them because they help LGBTQ+ folks "
    "with adoption. Their inclusivity and support really spoke to me.",
}


def export(runtime: Runtime) -> bytes:
    out = io.StringIO()
    export_workspace(runtime.store, "default", datetime.now(UTC), out.write)
    return out.getvalue().encode()


@pytest.mark.skipif(not LOCOMO.exists(), reason="LoCoMo data not present")
def test_sleep_merges_paraphrased_duplicates_of_a_locomo_conversation_and_rolls_back(
    real_runtime: Runtime,
) -> None:
    runtime = real_runtime
    principal = runtime.local_principal("rest")
    conversation = json.loads(LOCOMO.read_text(encoding="utf-8"))
    turns = [
        (key, text) for key, text, _ in locomo_turns(conversation.get("conversation", conversation))
    ][:TURNS]
    runtime.contexts.create_context(principal, ContextCreate(name="locomo", sleep_mode="full"))

    def write(texts: list[tuple[str, str]]) -> dict[str, str]:
        items = [
            {"summary": text[:500], "content": text[500:], "tags": [key]} for key, text in texts
        ]
        result = runtime.memories.remember_batch(
            principal, "locomo", BatchCreate(items=items, atomic=True, wait=True)
        )
        ids = {key: item.memory_id for (key, _), item in zip(texts, result.results, strict=True)}
        assert all(ids.values())
        return {key: str(memory_id) for key, memory_id in ids.items()}

    originals = write(turns)
    duplicates = write([(key, text) for key, text in PARAPHRASES.items()])
    # A few recalls: Hebbian edges between co-recalled turns (they must move with a merge).
    for query in ("LGBTQ support group", "adoption agencies", "painting a sunrise"):
        runtime.recall.recall(principal, "locomo", RecallRequest(query=query))
    ctx = runtime.contexts.resolve(principal, "locomo").id
    before, edges_before = export(runtime), runtime.store.list_edges(principal.workspace_id, ctx)

    assert edges_before, "co-recalled turns are associated"
    report = runtime.sleep.sleep(principal, "locomo")
    assert report.status == "done", report.error
    assert "edge" in {action.kind for action in report.actions}
    wide = MemoryFilter(include_deleted=True, include_superseded=True)
    rows = {
        row.id: row
        for row in runtime.store.list_memories(principal.workspace_id, [ctx], wide, None, 500)
    }
    superseded = {
        memory_id: row.superseded_by for memory_id, row in rows.items() if row.superseded_by
    }
    # Exactly the duplicated turns were merged, into their newer paraphrase...
    assert superseded == {originals[key]: duplicates[key] for key in PARAPHRASES}
    # ...whose tags now carry the turn's id; nothing else is superseded or deleted.
    for key in PARAPHRASES:
        assert rows[duplicates[key]].tags == [key]
    assert all(row.deleted_at is None for row in rows.values())
    assert len(rows) == TURNS + len(PARAPHRASES)
    assert report.summary["merge"]["merged"] == len(PARAPHRASES)
    # Both search legs now answer with the surviving wording, never the superseded one
    # (read at the store: a service recall would teach the graph and move edges).
    assert runtime.embedder is not None
    query = runtime.embedder.embed_query("LGBTQ support group")
    vector = runtime.store.vector_search(principal.workspace_id, [ctx], query, MemoryFilter(), 10)
    lexical = runtime.store.lexical_search(
        principal.workspace_id, [ctx], ["lgbtq", "support", "group"], MemoryFilter(), 10
    )
    for leg in (vector, lexical):
        found = {hit.memory_id for hit in leg}
        assert duplicates["D1:3"] in found and originals["D1:3"] not in found

    rolled = runtime.sleep.rollback_sleep(principal, report.run_id)
    assert rolled.skipped == []
    assert export(runtime) == before
    assert runtime.store.list_edges(principal.workspace_id, ctx) == edges_before
