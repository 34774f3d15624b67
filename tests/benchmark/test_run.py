"""The whole harness on a tiny LoCoMo-like + JSQuAD-like data set, with the fake embedder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kioku.benchmark.run import run_benchmark
from kioku.embeddings.fake import FakeEmbedder

TOPICS = ["cat", "guitar", "marathon", "painting", "garden", "camping", "novel", "pottery"]


def _locomo(number: int) -> dict[str, Any]:
    turns = [
        {"speaker": "Ann" if i % 2 else "Bob", "dia_id": f"D1:{i + 1}",
         "text": f"I spent the weekend on my {topic} hobby with friends."}
        for i, topic in enumerate(TOPICS)
    ]  # fmt: skip
    turns[0]["blip_caption"] = "a photo of a cat"
    qa = [
        {"question": f"What did they do with the {topic}?", "answer": "x",
         "evidence": [f"D1:{i + 1}"], "category": 1 + i % 4}
        for i, topic in enumerate(TOPICS)
    ]  # fmt: skip
    qa.append({"question": "Dropped?", "answer": "x", "evidence": ["D7:7"], "category": 2})
    qa.append({"question": "Ignored", "adversarial_answer": "x", "evidence": [], "category": 5})
    return {"speaker_a": "Ann", "speaker_b": "Bob", "session_1_date_time": "1 May, 2023",
            "session_1": turns, "qa": qa}  # fmt: skip


def _jsquad() -> dict[str, Any]:
    places = ["東京", "大阪", "京都", "札幌", "福岡", "名古屋"]
    paragraphs = [
        {"context": f"{place} [SEP] {place}は日本の都市である。" + "長い説明。" * (i * 30),
         "qas": [{"id": f"q{i}", "question": f"{place}はどこの都市か。"}]}
        for i, place in enumerate(places)
    ]  # fmt: skip
    return {"data": [{"title": "都市", "paragraphs": paragraphs}]}


@pytest.fixture
def data(tmp_path: Path) -> Path:
    root = tmp_path / "data"
    (root / "locomo").mkdir(parents=True)
    (root / "jsquad").mkdir()
    for number in (3, 12):
        (root / "locomo" / f"conv-{number}.json").write_text(json.dumps(_locomo(number)))
    (root / "jsquad" / "valid-v1.3.json").write_text(json.dumps(_jsquad(), ensure_ascii=False))
    return root


def test_full_run_writes_report_and_json(data: Path, tmp_path: Path) -> None:
    out, raw = tmp_path / "docs" / "benchmarks.md", tmp_path / "results" / "latest.json"
    results = run_benchmark(out=str(out), data=str(data), scales=[30], quick=False,
                            as_json=False, embedder=FakeEmbedder(), json_out=str(raw),
                            progress=False)  # fmt: skip
    locomo, jsquad = results["locomo"], results["jsquad"]
    assert locomo["conversations"] == ["locomo-conv-3", "locomo-conv-12"]
    assert (locomo["memories"], locomo["questions"]) == (16, 16)
    assert locomo["evidence"]["questions_dropped"] == ["conv-3:q8", "conv-12:q8"]
    assert set(locomo["arms"]) == {"hybrid", "bm25", "vector"}
    bm25 = locomo["arms"]["bm25"]["metrics"]
    assert bm25["all"]["recall@20"] == 1.0 and bm25["all"]["n"] == 16
    assert {"cat1", "cat2", "cat3", "cat4"} <= set(bm25)
    assert locomo["arms"]["hybrid"]["latency"]["n"] == 16
    assert locomo["ingest"]["items"] == 16 and locomo["ingest"]["drain_s"] is not None
    assert jsquad["paragraphs"] == 6 and jsquad["arms"]["bm25"]["metrics"]["all"]["n"] == 6
    assert jsquad["arms"]["bm25"]["metrics"]["all"]["recall@10"] == 1.0
    study = locomo["feedback"]
    assert study["held_out"]["before"]["n"] == 8 and study["feedback_half"]["after"]["n"] == 8
    assert sum(study["events"].values()) == 8 * study["depth"]
    (point,) = results["scale"]
    assert (point["memories"], point["real"], point["synthetic"]) == (30, 16, 14)
    assert point["hybrid"]["n"] == 16
    assert {"embed query (bare)", "scope", "lexical", "vector", "legs", "fusion", "hits"} <= set(
        point["steps"]
    )
    assert {"whole recall", "serialize"} <= set(point["steps"])
    text = out.read_text()
    for heading in ("LoCoMo retrieval", "per category", "JSQuAD retrieval", "Ingest and recall",
                    "at scale", "Evidence normalisation", "How to read",
                    "Feedback in the re-ranker"):  # fmt: skip
        assert heading in text
    assert "BASELINES.md (CEO's harness)" in text and "| kioku hybrid | this run | 16 |" in text
    assert json.loads(raw.read_text())["meta"]["embedder"] == "fake-hash-64"


def test_bm25_only_when_no_embedder(
    data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("KIOKU_EMBEDDER", "none")
    run_benchmark(out=str(tmp_path / "b.md"), data=str(data), scales=[], quick=True,
                  as_json=True, json_out=str(tmp_path / "b.json"))  # fmt: skip
    printed = json.loads(capsys.readouterr().out)
    assert list(printed["locomo"]["arms"]) == ["bm25"]
    assert printed["locomo"]["conversations"] == ["locomo-conv-3"]  # quick: one conversation
    assert printed["locomo"]["ingest"]["drain_s"] is None and "feedback" not in printed["locomo"]
    assert printed["meta"]["embedder"] == "none (BM25 only)" and "scale" not in printed


def test_missing_data_folder_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="must hold locomo/ and jsquad/"):
        run_benchmark(out=str(tmp_path / "x.md"), data=str(tmp_path), scales=[], quick=True,
                      as_json=False)  # fmt: skip
