"""``kioku sleep`` / ``sleep report`` in words: a full run (merge, tags, edges moved and
decayed, importance, a state sweep) printed as people read it, on both backends."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest

from kioku.cli.sleep import print_report
from kioku.cli.sleep_view import phase_lines
from kioku.models import StateSet
from kioku.runtime import Runtime
from tests.conftest import ManualClock
from tests.service.test_sleep import make_notes

PYTHON = re.compile(r"\{'|'\}|\['|None\b|\d\.\d{6,}")


@pytest.fixture
def runtime(runtime_on_each_backend: Runtime) -> Runtime:
    return runtime_on_each_backend


def test_a_full_run_reads_as_sentences(
    runtime: Runtime, clock: ManualClock, capsys: pytest.CaptureFixture[str]
) -> None:
    principal = runtime.local_principal("rest")
    notes = make_notes(runtime, principal, clock)
    runtime.state.set_state(principal, "notes", "k", StateSet(value=1, ttl_seconds=1))
    clock.now += timedelta(seconds=2)
    report = runtime.sleep.sleep(principal, "notes")

    print_report(report, actions=False)
    ran = capsys.readouterr().out
    assert not PYTHON.search(ran), ran
    assert "sweep: deleted 1 expired state key\n" in ran
    assert "edges: decayed 1 edge, pruned 0" in ran
    assert re.search(r"merge: compared \d+ memories, merged 1 near-duplicate\n", ran), ran
    assert re.search(r"importance: considered \d+ memories, rescored 1\n", ran), ran
    assert f"{len(report.actions)} actions: kioku sleep report {report.run_id}" in ran

    print_report(report, actions=True)
    told = capsys.readouterr().out
    assert not PYTHON.search(told), told
    assert re.search(r"#\d+ merge: merged into its newer near-duplicate \(cosine \d\.\d{4}\)", told)
    assert f"{notes['old']} → {notes['new']}" in told  # whole ids: kioku get takes them
    assert "merge: tags b → b, a" in told
    assert "edges: edge weight 0.400 → 0.200" in told  # one half-life, to three places
    assert "merge: edge dropped with the merged memory (weight was 0.200)" in told
    assert "merge: edge moved to the kept memory, weight 0.200 (declared)" in told
    pair = sorted([notes["new"], notes["other"]])
    assert f"{pair[0]} ↔ {pair[1]}" in told
    assert "importance: importance 0.50 → 0.60" in told
    assert "sweep: deleted 1 expired state key\n" in told


def test_phase_counts_of_every_shape_read_as_words() -> None:
    summary = {
        "llm": {"judged_merged": 1, "edges_created": 2, "summaries": 1, "calls": 6},
        "rejected": {"llm_edges": 2, "merge": 1},
        "edges": {"decayed": 1, "pruned": 3},
        "future_phase": {"tidied": 0.18999956919658792, "items": ["a", "b"]},
        "odd": 4,
    }
    assert phase_lines(summary) == [
        "edges: decayed 1 edge, pruned 3",
        "llm: merged 1 on the model's judgement, created 2 edges, wrote 1 summary (6 model calls)",
        "rejected: refused 3 proposals (llm_edges 2 and merge 1)",
        "future_phase: tidied 0.19, items a, b",
        "odd: 4",
    ]
