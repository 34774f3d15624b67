"""``kioku serve --host 0.0.0.0`` without ``KIOKU_PUBLIC_URL`` starts (it used to stop with a
raw ``ValueError: Issuer URL must be HTTPS`` from the MCP SDK: ``http://0.0.0.0:8765`` is
no address a client can use, and OAuth refuses a plain-HTTP issuer that is not loopback)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kioku.api import create_app
from kioku.embeddings.fake import FakeEmbedder
from kioku.runtime import open_runtime
from tests.conftest import make_settings, portal_client


@pytest.mark.parametrize(
    ("host", "public_url", "named"),
    [
        ("0.0.0.0", "", "http://127.0.0.1:8765"),
        ("::", "", "http://127.0.0.1:8765"),
        ("127.0.0.1", "", "http://127.0.0.1:8765"),
        ("::1", "", "http://[::1]:8765"),
        ("0.0.0.0", "https://memory.example.com/", "https://memory.example.com"),
    ],
)
def test_the_url_kioku_names_itself_by(host: str, public_url: str, named: str) -> None:
    settings = make_settings(Path("/nonexistent"), host=host, port=8765, public_url=public_url)
    assert settings.server.base_url == named


def test_an_app_listening_everywhere_starts_and_names_the_loopback_issuer(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, host="0.0.0.0", port=8765, dev=False)
    runtime = open_runtime(settings, embedder=FakeEmbedder())
    try:
        with portal_client(create_app(runtime=runtime)) as client:
            metadata = client.get("/.well-known/oauth-authorization-server")
            assert metadata.status_code == 200, metadata.text
            assert metadata.json()["issuer"].rstrip("/") == "http://127.0.0.1:8765"
    finally:
        runtime.close()
