"""Settings, read in one place (issue 33): every variable still sets its setting, the TOML file
under the environment, ``kioku config`` with secrets masked, and no ``KIOKU_*`` variable read
outside ``kioku.settings`` (docs/operations.md, "Settings")."""

from __future__ import annotations

import ast
import functools
import json
import re
import socket
import subprocess
import sys
import typing
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr, ValidationError
from typer.testing import CliRunner

from kioku.cli import app
from kioku.settings import ConfigFileError, Settings
from kioku.settings.client import CLIENT_SETTINGS
from kioku.settings.docs import table
from kioku.settings.model import sections
from kioku.settings.sections import variable_of

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "kioku"
runner = CliRunner()

VARIABLES_BEFORE_SECTIONS = [
    "KIOKU_DATABASE_URL",
    "KIOKU_EMBEDDER",
    "KIOKU_MODEL_DIR",
    "KIOKU_OPENAI_BASE_URL",
    "KIOKU_OPENAI_API_KEY",
    "KIOKU_OPENAI_MODEL",
    "KIOKU_OPENAI_DIMENSIONS",
    "KIOKU_DB_POOL_SIZE",
    "KIOKU_LEXICAL_INDEX_MIN",
    "KIOKU_EMBED_ASYNC",
    "KIOKU_EMBED_QUEUE_SIZE",
    "KIOKU_EMBED_LEASE_SECONDS",
    "KIOKU_EMBED_ITEM_SECONDS",
    "KIOKU_MAX_CONTENT_BYTES",
    "KIOKU_MAX_REQUEST_BYTES",
    "KIOKU_MAX_STATE_BYTES",
    "KIOKU_FETCH_FACTOR",
    "KIOKU_HOST",
    "KIOKU_PORT",
    "KIOKU_DEV",
    "KIOKU_PUBLIC_URL",
    "KIOKU_ALLOWED_HOSTS",
    "KIOKU_SHUTDOWN_SECONDS",
    "KIOKU_RATE_LIMIT_PER_MINUTE",
    "KIOKU_RATE_LIMIT_BURST",
    "KIOKU_LOG_FORMAT",
    "KIOKU_METRICS_TOKEN",
    "KIOKU_METRICS_ALLOW",
    "KIOKU_STATE_SWEEP_SECONDS",
    "KIOKU_OAUTH_REGISTRATIONS_PER_HOUR",
    "KIOKU_OAUTH_SWEEP_SECONDS",
    "KIOKU_SLEEP_INTERVAL_SECONDS",
    "KIOKU_SLEEP_MAX_MEMORIES",
    "KIOKU_SLEEP_MERGE_THRESHOLD",
    "KIOKU_SLEEP_EDGE_HALF_LIFE_DAYS",
    "KIOKU_SLEEP_EDGE_FLOOR",
    "KIOKU_SLEEP_STALE_SECONDS",
    "KIOKU_SLEEP_LLM_BASE_URL",
    "KIOKU_SLEEP_LLM_MODEL",
    "KIOKU_SLEEP_LLM_API_KEY",
    "KIOKU_SLEEP_LLM_MAX_CALLS",
    "KIOKU_RERANKER_URL",
    "KIOKU_RERANKER_FORMAT",
    "KIOKU_RERANKER_MODEL",
    "KIOKU_RERANKER_API_KEY",
    "KIOKU_RERANKER_TIMEOUT_SECONDS",
    "KIOKU_RERANKER_TOP_N",
    "KIOKU_RERANKER_WEIGHT",
    "KIOKU_RERANKER_MAX_CHARS",
    "KIOKU_RERANKER_COOLDOWN_SECONDS",
]
"""The variables of the flat model this one replaced: deployments set them, so each must
still set its setting (the names are a promise, not a detail)."""


@pytest.fixture(autouse=True)
def no_file(monkeypatch: pytest.MonkeyPatch) -> None:
    """No settings file unless a test writes one, and none of the caller's KIOKU_* values."""
    for name in [*VARIABLES_BEFORE_SECTIONS, *(s.variable for s in CLIENT_SETTINGS)]:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("KIOKU_CONFIG", "")


def write_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str) -> Path:
    path = tmp_path / "kioku.toml"
    path.write_text(text, encoding="utf-8")
    monkeypatch.setenv("KIOKU_CONFIG", str(path))
    return path


# ------------------------------------------------------------ every variable, as before


def sample(annotation: Any, default: Any) -> tuple[str, Any]:
    """A value other than ``default`` for a field of this type: (as the variable, as read)."""
    if typing.get_origin(annotation) is typing.Literal:
        other = next(choice for choice in typing.get_args(annotation) if choice != default)
        return other, other
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    kind = (
        args[0] if typing.get_origin(annotation) in (typing.Union, type(int | None)) else annotation
    )
    if typing.get_origin(kind) is typing.Annotated or typing.get_origin(kind) is list:
        return "a.example, b.example", ["a.example", "b.example"]
    if kind is bool:
        return ("0", False) if default else ("1", True)
    if kind is int:
        return str((default or 0) + 1), (default or 0) + 1
    if kind is float:
        return str(default / 2 or 0.5), default / 2 or 0.5
    if kind is Path:
        return "/srv/kioku-sample", Path("/srv/kioku-sample")
    return "http://sample.example/x", "http://sample.example/x"


def test_the_variables_are_those_deployments_already_set() -> None:
    variables = [variable_of(f) for fields in sections().values() for f in fields.values()]
    assert sorted(variables) == sorted(VARIABLES_BEFORE_SECTIONS)


@pytest.mark.parametrize(
    ("section", "key"), [(s, k) for s, fields in sections().items() for k in fields]
)
def test_each_variable_sets_its_setting(
    monkeypatch: pytest.MonkeyPatch, section: str, key: str
) -> None:
    field = sections()[section][key]
    default = getattr(getattr(Settings(), section), key)
    default = default.get_secret_value() if isinstance(default, SecretStr) else default
    raw, expected = sample(field.annotation, default)
    monkeypatch.setenv(variable_of(field), raw)
    value = getattr(getattr(Settings(), section), key)
    value = value.get_secret_value() if isinstance(value, SecretStr) else value
    assert value == expected != default


def test_a_variable_matches_whatever_its_case_as_before(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("kioku_db_pool_size", "3")
    assert Settings().database.pool_size == 3


def test_a_bad_value_names_its_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KIOKU_PORT", "eighty")
    with pytest.raises(ValidationError) as caught:
        Settings()
    assert caught.value.errors()[0]["loc"] == ("KIOKU_PORT",)


def test_the_dev_rate_limit_is_off_unless_set(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert Settings({"server": {"dev": True}}).effective_rate_limit_per_minute == 0
    assert Settings().effective_rate_limit_per_minute == 600
    write_config(tmp_path, monkeypatch, "[limits]\nrate_limit_per_minute = 60\n")
    assert Settings({"server": {"dev": True}}).effective_rate_limit_per_minute == 60
    monkeypatch.setenv("KIOKU_RATE_LIMIT_PER_MINUTE", "30")
    assert Settings({"server": {"dev": True}}).effective_rate_limit_per_minute == 30


# ------------------------------------------------------------ the file, under the environment


def test_the_file_sets_what_the_environment_does_not(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    write_config(
        tmp_path, monkeypatch,
        '[server]\nport = 9000\nallowed_hosts = ["kioku.internal"]\n'
        '[sleep]\nllm_model = "qwen"\n[embedder]\nkind = "none"\n',
    )  # fmt: skip
    monkeypatch.setenv("KIOKU_PORT", "9001")
    settings = Settings()
    assert settings.server.port == 9001  # the environment wins
    assert settings.server.allowed_hosts == ["kioku.internal"]
    assert (settings.sleep.llm_model, settings.embedder.kind) == ("qwen", "none")
    assert Settings({"server": {"port": 9002}}).server.port == 9002  # and a caller's value wins


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("[server]\nprot = 1\n", "unknown setting server.prot"),
        ("[srever]\nport = 1\n", "unknown section [srever]"),
        ("port = 1\n", "put it under [server]"),
        ("[client]\nurl = 'http://x'\n", "environment only"),
        ("[server\nport = 1\n", "not valid TOML"),
    ],
)
def test_a_key_the_file_should_not_hold_is_refused_by_name(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, text: str, named: str
) -> None:
    path = write_config(tmp_path, monkeypatch, text)
    with pytest.raises(ConfigFileError, match=re.escape(named)) as caught:
        Settings()
    assert str(path) in str(caught.value)


def test_a_bad_value_in_the_file_names_the_key_and_the_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = write_config(tmp_path, monkeypatch, "[reranker]\ntop_n = 1\n")
    with pytest.raises(ValidationError) as caught:
        Settings()
    assert caught.value.errors()[0]["loc"] == (f"reranker.top_n in {path}",)


def test_the_default_file_is_read_when_kioku_config_is_unset(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("KIOKU_CONFIG")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert Settings().server.port == 8765  # no file there yet
    (tmp_path / "kioku").mkdir()
    (tmp_path / "kioku" / "config.toml").write_text("[server]\nport = 8800\n")
    assert Settings().server.port == 8800
    monkeypatch.setenv("KIOKU_CONFIG", "")  # empty: no file at all
    assert Settings().server.port == 8765
    monkeypatch.setenv("KIOKU_CONFIG", str(tmp_path / "missing.toml"))
    with pytest.raises(ConfigFileError, match=re.escape("missing.toml, which is not a file")):
        Settings()


def test_serve_binds_the_port_the_settings_name(monkeypatch: pytest.MonkeyPatch) -> None:
    """``kioku serve`` without ``--port`` takes KIOKU_PORT (here a port already taken, so it
    stops before anything starts and says which port it tried)."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = runner.invoke(app, ["serve", "--dev"], env={"KIOKU_PORT": str(port)})
    assert result.exit_code == 1 and f"cannot serve on 127.0.0.1:{port}" in result.output


# ------------------------------------------------------------ kioku config

SECRETS = {
    "KIOKU_DATABASE_URL": "postgresql://kioku:db-pass-1@db/kioku?sslmode=require",
    "KIOKU_OPENAI_API_KEY": "sk-openai-2",
    "KIOKU_RERANKER_API_KEY": "rerank-key-3",
    "KIOKU_METRICS_TOKEN": "metrics-token-4",
    "KIOKU_SLEEP_LLM_API_KEY": "llm-key-5",
    "KIOKU_SLEEP_LLM_BASE_URL": "https://user:llm-pass-6@llm.example/v1",
    "KIOKU_API_KEY": "kk_client-7",
}


def test_kioku_config_json_says_each_value_and_its_source(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = write_config(tmp_path, monkeypatch, "[server]\nport = 9000\nhost = '0.0.0.0'\n")
    result = runner.invoke(app, ["config", "--json"], env={**SECRETS, "KIOKU_PORT": "9100"})
    assert result.exit_code == 0, result.output
    shown = json.loads(result.output)
    assert shown["file"] == str(path)
    found = shown["settings"]
    assert found["server.port"] == {
        "variable": "KIOKU_PORT",
        "value": 9100,
        "source": "environment",
    }
    assert found["server.host"] == {"variable": "KIOKU_HOST", "value": "0.0.0.0", "source": "file"}
    assert found["server.dev"] == {"variable": "KIOKU_DEV", "value": False, "source": "default"}
    assert found["database.url"]["value"] == "postgresql://kioku:***@db/kioku?sslmode=require"
    assert found["reranker.api_key"]["value"] == "***"
    assert found["client.api_key"] == {
        "variable": "KIOKU_API_KEY", "value": "***", "source": "environment"
    }  # fmt: skip
    assert found["client.url"]["value"] == "http://127.0.0.1:8765"
    every = {variable_of(f) for fields in sections().values() for f in fields.values()}
    assert every | {s.variable for s in CLIENT_SETTINGS} == {v["variable"] for v in found.values()}


@pytest.mark.parametrize("as_json", [True, False])
def test_kioku_config_never_shows_a_secret(as_json: bool) -> None:
    result = runner.invoke(app, ["config", *(["--json"] if as_json else [])], env=SECRETS)
    assert result.exit_code == 0, result.output
    for secret in ("db-pass-1", "sk-openai-2", "rerank-key-3", "metrics-token-4", "llm-key-5",
                   "llm-pass-6", "kk_client-7"):  # fmt: skip
        assert secret not in result.output
    assert "KIOKU_METRICS_TOKEN" in result.output


def test_kioku_config_names_a_bad_file_key_in_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    write_config(tmp_path, monkeypatch, "[server]\nprot = 1\n")
    result = runner.invoke(app, ["config"])
    assert result.exit_code == 1 and "unknown setting server.prot" in result.output
    assert "Traceback" not in result.output


# ------------------------------------------------------------ read in one place


def _kioku_constants(tree: ast.AST) -> dict[str, set[str]]:
    """Names bound to KIOKU_* strings: module constants, and loop variables over literals."""
    names: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            for target in node.targets:
                if isinstance(target, ast.Name) and isinstance(node.value.value, str):
                    names.setdefault(target.id, set()).add(node.value.value)
        if (
            isinstance(node, ast.For | ast.comprehension)
            and isinstance(node.target, ast.Name)
            and isinstance(node.iter, ast.Tuple | ast.List)
        ):
            for item in node.iter.elts:
                if isinstance(item, ast.Constant) and isinstance(item.value, str):
                    names.setdefault(node.target.id, set()).add(item.value)
    return {n: {v for v in vs if v.startswith("KIOKU_")} for n, vs in names.items()}


def _is_environ(node: ast.AST) -> bool:
    """``os.environ`` or a bare ``environ``."""
    return (isinstance(node, ast.Attribute) and node.attr == "environ") or (
        isinstance(node, ast.Name) and node.id == "environ"
    )


def _named(node: ast.AST | None, constants: dict[str, set[str]]) -> set[str]:
    """The KIOKU_* variables ``node`` names: a literal, or a name bound to some."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value} if node.value.startswith("KIOKU_") else set()
    return constants.get(node.id, set()) if isinstance(node, ast.Name) else set()


def kioku_reads(root: Path) -> list[str]:
    """Every read of a KIOKU_* variable under ``root`` outside ``settings/``, as
    ``path:line VARIABLE``: ``os.environ[...]``, ``.get``, ``os.getenv``, ``in os.environ``,
    and a typer option's ``envvar=``, naming it by a literal or a name bound to one."""
    found = []
    for path in sorted(root.rglob("*.py")):
        if path.relative_to(root).parts[0] == "settings":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        named = functools.partial(_named, constants=_kioku_constants(tree))

        for node in ast.walk(tree):
            keys: set[str] = set()
            if isinstance(node, ast.Subscript) and _is_environ(node.value):
                if isinstance(node.ctx, ast.Load):
                    keys = named(node.slice)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                reader = node.func
                if (_is_environ(reader.value) and reader.attr in ("get", "pop", "setdefault")) or (
                    reader.attr == "getenv"
                ):
                    keys = named(node.args[0]) if node.args else set()
            elif isinstance(node, ast.Compare) and any(_is_environ(c) for c in node.comparators):
                keys = named(node.left)
            if isinstance(node, ast.Call):
                keys |= {v for kw in node.keywords if kw.arg == "envvar" for v in named(kw.value)}
            line = getattr(node, "lineno", 0)
            found += [f"{path.relative_to(root)}:{line} {key}" for key in sorted(keys)]
    return found


def test_no_kioku_variable_is_read_outside_the_settings_package() -> None:
    """A new variable is a field of ``kioku.settings`` (docs/architecture.md, "A new
    setting"): read anywhere else, ``kioku config`` and docs/operations.md would not know it."""
    assert kioku_reads(SRC) == []


def test_the_checker_sees_each_way_of_reading_one(tmp_path: Path) -> None:
    (tmp_path / "reads.py").write_text(
        "import os\nNAME = 'KIOKU_B'\n"
        "a = os.environ.get('KIOKU_A')\nb = os.getenv(NAME)\nc = os.environ['KIOKU_C']\n"
        "d = [os.environ[k] for k in ('KIOKU_D',) if k in os.environ]\n"
        "e = typer.Option(None, envvar='KIOKU_E')\nos.environ['KIOKU_F'] = 'written, not read'\n"
    )
    assert {line.split()[1] for line in kioku_reads(tmp_path)} == {
        "KIOKU_A", "KIOKU_B", "KIOKU_C", "KIOKU_D", "KIOKU_E"
    }  # fmt: skip


def test_the_client_side_reads_its_settings_without_pydantic() -> None:
    """The hook and the SDK read KIOKU_URL / KIOKU_API_KEY through ``kioku.settings.client``,
    never loading the server's settings (pydantic-settings)."""
    code = (
        "import sys, kioku.hook_client, kioku.cli.rest; a = sorted(m for m in sys.modules if m in "
        "('pydantic', 'pydantic_settings', 'kioku.settings.model')); "
        "import kioku.client; b = 'pydantic_settings' in sys.modules; print(a, b)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[] False"


# ------------------------------------------------------------ docs/operations.md


def test_the_settings_table_of_the_operations_page_is_the_models() -> None:
    """Regenerate it with ``python -m kioku.settings.docs``."""
    page = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
    assert table() in page
