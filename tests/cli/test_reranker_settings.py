"""The model reranker's settings: a bad value stops the process at start, naming the setting,
before anything listens or any recall could send text to a wrong address."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from kioku.cli import app
from kioku.settings import Settings

runner = CliRunner()


@pytest.fixture(autouse=True)
def isolated_database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KIOKU_DATABASE_URL", f"sqlite:///{tmp_path / 'cli.db'}")
    monkeypatch.setenv("KIOKU_EMBEDDER", "none")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.parametrize(
    "url", ["localhost:8080/rerank", "ftp://rerank.internal/rerank", "http://", "rerank"]
)
def test_serve_refuses_a_reranker_url_that_is_not_one(url: str) -> None:
    result = runner.invoke(
        app, ["serve", "--dev", "--port", str(free_port())], env={"KIOKU_RERANKER_URL": url}
    )
    assert result.exit_code == 1
    assert "error (KIOKU_RERANKER_URL)" in result.output and "http(s) URL" in result.output
    assert "Traceback" not in result.output


def test_a_command_refuses_it_too() -> None:
    result = runner.invoke(app, ["recall", "anything"], env={"KIOKU_RERANKER_URL": "rerank"})
    assert result.exit_code == 1 and "error (KIOKU_RERANKER_URL)" in result.output


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("reranker_top_n", "1"),
        ("reranker_top_n", "201"),
        ("reranker_weight", "1.5"),
        ("reranker_weight", "-0.1"),
        ("reranker_timeout_seconds", "0"),
        ("reranker_format", "openai"),
        ("reranker_max_chars", "0"),
        ("reranker_cooldown_seconds", "-1"),
    ],
)
def test_out_of_range_reranker_settings_are_refused(
    monkeypatch: pytest.MonkeyPatch, field: str, value: str
) -> None:
    monkeypatch.setenv(f"KIOKU_{field.upper()}", value)
    with pytest.raises(ValidationError) as caught:
        Settings()
    assert [error["loc"] for error in caught.value.errors()] == [(f"KIOKU_{field.upper()}",)]


def test_the_reranker_is_off_by_default_and_its_key_is_never_printed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert Settings().reranker.url == ""
    monkeypatch.setenv("KIOKU_RERANKER_URL", " https://rerank.example/v2/rerank ")
    monkeypatch.setenv("KIOKU_RERANKER_API_KEY", "sk-never-shown")
    settings = Settings()
    assert settings.reranker.url == "https://rerank.example/v2/rerank"
    assert "sk-never-shown" not in repr(settings) and "sk-never-shown" not in str(settings)
    assert settings.reranker.api_key.get_secret_value() == "sk-never-shown"
