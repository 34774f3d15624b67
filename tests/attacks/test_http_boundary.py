"""The HTTP boundary, replayed against a real ``kioku serve``: DNS rebinding and cross-site
requests on every route family, secrets in the access log, file modes of the data directory,
``GET /mcp``, a stopped server's deadline, and the growth of the refused-key audit trail.
"""

from __future__ import annotations

import contextlib
import signal
import sqlite3
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.attacks.conftest import Target, bearer, cli, create_key
from tests.e2e.conftest import free_port, kioku_env, running_server

REBIND = "rebind.attacker.example"
MCP_ACCEPT = {"Accept": "application/json, text/event-stream"}
TOOLS_LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}


def port_of(target: Target) -> str:
    return target.base.rsplit(":", 1)[1]


def every_route() -> list[tuple[str, str, dict[str, Any]]]:
    """One request per route family: (method, path, httpx keyword arguments)."""
    return [
        ("GET", "/health", {}),
        ("GET", "/api/v1/health", {}),
        ("GET", "/api/v1/contexts/default/memories", {}),
        ("POST", "/api/v1/contexts/default/memories", {"json": {"summary": "rebound write"}}),
        ("GET", "/ui/", {}),
        ("GET", "/ui/signin", {}),
        ("POST", "/ui/signin/dev", {"data": {"csrf": "x"}}),
        ("POST", "/mcp", {"json": TOOLS_LIST, "headers": MCP_ACCEPT}),
        ("GET", "/docs", {}),
        ("GET", "/openapi.json", {}),
        ("GET", "/.well-known/oauth-authorization-server", {}),
    ]


def send(target: Target, method: str, path: str, host: str, who: str | None = None,
         **kwargs: Any) -> httpx.Response:  # fmt: skip
    """A request to ``target`` naming ``host`` in its Host header (as a rebound page would)."""
    headers: dict[str, str] = {**kwargs.pop("headers", {}), "Host": host}
    if who is not None:
        headers.update(target.headers(who))
    return httpx.request(method, f"{target.base}{path}", headers=headers, timeout=60, **kwargs)


def assert_misdirected(response: httpx.Response) -> None:
    assert response.status_code == 421, (response.status_code, response.text[:300])
    error = response.json()["error"]
    assert error["code"] == "misdirected_request" and error["field"] == "Host"


# -- DNS rebinding (issue 18, item 2) -------------------------------------------------------


def test_dev_server_answers_no_foreign_host_on_any_route(dev: Target) -> None:
    for method, path, kwargs in every_route():
        assert_misdirected(send(dev, method, path, REBIND, **kwargs))
        assert_misdirected(send(dev, method, path, f"{REBIND}:{port_of(dev)}", **kwargs))
    # Nothing was written through the rebound name, and no UI session was issued.
    listed = httpx.get(f"{dev.base}/api/v1/contexts/default/memories", timeout=60).json()
    assert all(item["summary"] != "rebound write" for item in listed["items"])


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1", "[::1]", "LOCALHOST"])
def test_dev_server_answers_its_loopback_names_with_or_without_port(dev: Target, host: str) -> None:
    for shown in (host, f"{host}:{port_of(dev)}"):
        assert send(dev, "GET", "/health", shown).status_code == 200
        assert send(dev, "GET", "/api/v1/contexts", shown).status_code == 200
        mcp = send(dev, "POST", "/mcp", shown, json=TOOLS_LIST, headers=MCP_ACCEPT)
        assert mcp.status_code == 200, mcp.text


def test_dev_server_refuses_lookalike_and_malformed_hosts(dev: Target) -> None:
    for host in ("localhost.attacker.example", "127.0.0.1.nip.io", "attacker.example:80@localhost",
                 "localhost:abc", "::1", "0.0.0.0", "127.0.0.2", ""):  # fmt: skip
        assert_misdirected(send(dev, "GET", "/api/v1/contexts", host))


def test_cross_site_origin_cannot_write_or_sign_in(dev: Target) -> None:
    local = f"127.0.0.1:{port_of(dev)}"
    other_port = int(port_of(dev)) + 1
    for origin in (f"http://{REBIND}", "null", "https://evil.example:8765",
                   "http://localhost:3000", f"http://127.0.0.1:{other_port}", "https://localhost",
                   f"http://localhost:{port_of(dev)}"):  # fmt: skip
        for method, path, kwargs in every_route():
            if method == "GET":
                continue
            headers = {**kwargs.get("headers", {}), "Origin": origin}
            refused = send(dev, method, path, local, **{**kwargs, "headers": headers})
            assert refused.status_code == 403, (path, origin, refused.text[:300])
            assert refused.json()["error"]["code"] == "forbidden_origin"
    # A page on another local port cannot erase a context with a body-less POST (issue 34).
    for path in ("/api/v1/contexts/default/purge", "/api/v1/contexts/default/sleep"):
        refused = send(dev, "POST", path, local, headers={"Origin": "http://localhost:3000"})
        assert refused.status_code == 403, (path, refused.text[:300])
    # The server's own origin (scheme, host and port: the UI's own forms) still writes.
    own = {"Origin": f"http://{local}"}
    ok = send(dev, "POST", "/api/v1/contexts/default/memories", local,
              json={"summary": "same-origin write"}, headers=own)  # fmt: skip
    assert ok.status_code == 201, ok.text


def test_secured_server_answers_no_foreign_host_even_with_a_key(secured: Target) -> None:
    for method, path, kwargs in every_route():
        assert_misdirected(send(secured, method, path, REBIND, "owner", **kwargs))
    assert send(secured, "GET", "/api/v1/contexts", "localhost", "owner").status_code == 200


@pytest.fixture(scope="module")
def proxied(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    """``kioku serve`` behind a proxy that forwards ``Host: memory.example.test``."""
    data = tmp_path_factory.mktemp("attacks-proxied")
    key = create_key(data, "owner", "--role", "owner")
    env = {"KIOKU_ALLOWED_HOSTS": "memory.example.test, other.example.test:443"}
    with running_server(data, env=env) as base:
        yield Target(base, data, {"owner": key})


def test_allowed_hosts_admit_the_proxy_names_and_no_other(proxied: Target) -> None:
    for host in ("memory.example.test", "other.example.test:443", "localhost"):
        answer = send(proxied, "GET", "/api/v1/contexts", host, "owner")
        assert answer.status_code == 200, (host, answer.text)
    for method, path, kwargs in every_route():
        assert_misdirected(send(proxied, method, path, REBIND, "owner", **kwargs))
    write = ("POST", "/api/v1/contexts/default/memories", "memory.example.test", "owner")
    cross = send(proxied, *write, json={"summary": "x"}, headers={"Origin": "https://evil.example"})
    assert cross.status_code == 403
    own = {"Origin": "https://memory.example.test"}
    same = send(proxied, *write, json={"summary": "x"}, headers=own)
    assert same.status_code == 201, same.text


# -- secrets in the access log (issue 18, item 8) ------------------------------------------


def secret_shapes(key: str) -> list[str]:
    """Request targets carrying ``key`` as clients (mis)send it: named parameters, a path,
    an unnamed parameter, percent-encoded."""
    encoded = key.replace("_", "%5F").replace("-", "%2D")
    return [
        f"/api/v1/contexts?apikey={key}",
        f"/api/v1/contexts?api_key={key}",
        f"/api/v1/contexts?key={key}",
        f"/api/v1/contexts?auth={key}",
        f"/api/v1/contexts?bearer={key}",
        f"/api/v1/contexts?session={key}",
        f"/api/v1/contexts?token={key}",
        f"/api/v1/contexts?access_token={key}",
        f"/api/v1/contexts?Authorization=Bearer%20{key}",
        f"/api/v1/contexts?limit=5&X-Api-Key={key}",
        f"/api/v1/contexts/{key}",
        f"/ui/{key}/memories",
        f"/mcp/{key}",
        f"/api/v1/contexts?q={key}",
        f"/api/v1/contexts?q={encoded}",
        f"/api/v1/contexts?q=x%20{key}%20y",
    ]


def test_no_secret_reaches_the_access_log(secured: Target) -> None:
    real = secured.keys["viewer"]
    invented = ["kk_" + "A1b2-C3d4_" * 4 + "xyz", "kat_" + "Q" * 43, "krt_" + "r-" * 21 + "r",
                "kac_" + "c" * 43, "kct_" + "t_" * 21 + "t"]  # fmt: skip
    session = "sNqAq8Xc0zLrJ3u5Vd9xWmT4eYb2hK7gP1oF6iRjQwE"  # the shape of a UI session id
    sent = 0
    for key in [real, *invented]:
        for target in secret_shapes(key):
            httpx.get(f"{secured.base}{target}", headers={"Host": "127.0.0.1"}, timeout=60)
            sent += 1
    httpx.get(f"{secured.base}/ui/?session={session}&csrf={session[::-1]}", timeout=60)
    log = secured.log()
    for key in [real, *invented, session, session[::-1]]:
        assert key not in log
        assert key[4:20] not in log  # not even the part after the prefix
        assert key[4:20].replace("-", "%2D").replace("_", "%5F") not in log
    assert log.count("[redacted]") >= sent, log[-3000:]
    assert "GET /api/v1/contexts?limit=5&X-Api-Key=[redacted]" in log


# -- file modes (issue 18, item 10) ----------------------------------------------------------


def modes(folder: Path) -> dict[str, int]:
    """Every file and folder under ``folder`` (itself included): its permission bits."""
    found = {".": stat.S_IMODE(folder.stat().st_mode)}
    for path in folder.rglob("*"):
        found[str(path.relative_to(folder))] = stat.S_IMODE(path.stat().st_mode)
    return found


def assert_private(folder: Path) -> None:
    for name, mode in modes(folder).items():
        wanted = 0o700 if (folder / name).is_dir() else 0o600
        assert mode == wanted, (name, oct(mode))


def test_the_database_its_journal_and_the_vector_cache_are_private(tmp_path: Path) -> None:
    store = tmp_path / "fresh" / "store"  # neither folder exists yet: kioku makes both
    env = {"KIOKU_DATABASE_URL": f"sqlite:///{store / 'kioku.db'}", "KIOKU_EMBED_ASYNC": "false"}
    with running_server(tmp_path, "--dev", env=env) as base:
        for n in range(3):
            note = {"summary": f"private note {n}", "content": "the door code is 4711"}
            created = httpx.post(f"{base}/api/v1/contexts/default/memories", json=note, timeout=60)
            assert created.status_code == 201, created.text
        assert httpx.post(f"{base}/api/v1/contexts/default/recall", json={"query": "door code"},
                          timeout=60).status_code == 200  # fmt: skip
        assert {"kioku.db", "kioku.db-wal", "kioku.db-shm"} <= set(modes(store))
        assert_private(tmp_path / "fresh")
    names = set(modes(store))
    assert any(name.endswith(".npz") for name in names), names  # the cache, written on stop
    assert_private(tmp_path / "fresh")


def test_files_left_open_by_an_older_kioku_are_tightened(tmp_path: Path) -> None:
    cli(tmp_path, "remember", "a note to cache")
    cache = tmp_path / "kioku.db.vectors"
    cache.mkdir(exist_ok=True)
    (cache / "stale.npz").write_bytes(b"not a cache")
    for path in (tmp_path / "kioku.db", cache / "stale.npz"):
        path.chmod(0o644)
    cache.chmod(0o755)
    cli(tmp_path, "contexts", "list")
    assert stat.S_IMODE((tmp_path / "kioku.db").stat().st_mode) == 0o600
    assert stat.S_IMODE((cache / "stale.npz").stat().st_mode) == 0o600
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700


# -- holding resources (issue 18, item 11) ---------------------------------------------------


def test_get_mcp_is_405_not_an_open_stream(dev: Target, secured: Target) -> None:
    for target in (dev, secured):
        answer = httpx.get(f"{target.base}/mcp", headers={"Accept": "text/event-stream"},
                           timeout=httpx.Timeout(10.0))  # fmt: skip
        assert answer.status_code == 405, answer.text
        assert answer.headers["allow"] == "POST"
    listed = httpx.post(f"{dev.base}/mcp", json=TOOLS_LIST, headers=MCP_ACCEPT, timeout=60)
    assert listed.status_code == 200  # POST, the endpoint's one method, still answers


def slow_batches(base: str, count: int) -> list[threading.Thread]:
    """``count`` requests in flight, each embedding 100 long memories inline."""
    text = " ".join(f"word{n} of a long memory about the quarterly plan" for n in range(120))
    items = [{"summary": f"slow {n}", "content": text} for n in range(100)]

    def post() -> None:
        with contextlib.suppress(httpx.HTTPError):
            httpx.post(f"{base}/api/v1/contexts/default/memories/batch",
                       json={"items": items, "atomic": True}, timeout=300)  # fmt: skip

    threads = [threading.Thread(target=post, daemon=True) for _ in range(count)]
    for thread in threads:
        thread.start()
    return threads


def test_sigterm_ends_a_busy_server_within_its_deadline(tmp_path: Path) -> None:
    port = free_port()
    env = {**kioku_env(tmp_path), "KIOKU_EMBED_ASYNC": "false", "KIOKU_SHUTDOWN_SECONDS": "3"}
    with (tmp_path / "serve.log").open("w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "kioku.cli", "serve", "--dev", "--port", str(port)],
            env=env, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        base = f"http://127.0.0.1:{port}"
        try:
            wait_healthy(base, process)
            slow_batches(base, 6)
            time.sleep(3)  # the batches are being embedded
            process.send_signal(signal.SIGTERM)
            stopped = time.monotonic()
            process.wait(timeout=60)
            took = time.monotonic() - stopped
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    log_text = (tmp_path / "serve.log").read_text()
    assert took < 3 + 5 + 2, (took, log_text[-2000:])  # shutdown_seconds + grace, and slack
    # Nothing half written: each atomic batch landed whole or not at all, and the database
    # opens and answers again.
    with running_server(tmp_path, "--dev", log_name="again.log") as again:
        stats = httpx.get(f"{again}/api/v1/contexts/default/stats", timeout=60).json()
    assert stats["memories"] % 100 == 0, stats  # pending embeddings are taken up again
    check = sqlite3.connect(tmp_path / "kioku.db").execute("PRAGMA integrity_check").fetchone()
    assert check == ("ok",)


def wait_healthy(base: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert process.poll() is None, "the server exited"
        with contextlib.suppress(httpx.TransportError):
            if httpx.get(f"{base}/health", timeout=1).status_code == 200:
                return
        time.sleep(0.2)
    raise TimeoutError(base)


def anonymous_refusals(data: Path) -> list[tuple[str, str]]:
    """The refused-key audit rows nobody could be identified for, as the operator reads them
    (they belong to no workspace, so no API lists them): (channel, detail)."""
    with contextlib.closing(sqlite3.connect(data / "kioku.db")) as db:
        return db.execute(
            "SELECT channel, detail FROM audit_events WHERE actor = 'anonymous' ORDER BY seq"
        ).fetchall()


def test_invented_keys_cannot_grow_the_audit_log_per_request(secured: Target) -> None:
    before = len(anonymous_refusals(secured.data))
    refused = 0
    for n in range(60):
        invented = bearer(f"kk_invented{n:04d}" + "x" * 32)
        rest = httpx.get(f"{secured.base}/api/v1/contexts", headers=invented, timeout=60)
        mcp = httpx.post(f"{secured.base}/mcp", json=TOOLS_LIST,
                         headers={**invented, **MCP_ACCEPT}, timeout=60)  # fmt: skip
        refused += (rest.status_code == 401) + (mcp.status_code == 401)
    assert refused == 120
    rows = anonymous_refusals(secured.data)[before:]
    # One row per channel per minute, however many keys were invented (a minute boundary
    # crossed during the test may add one more per channel).
    assert 1 <= len(rows) <= 4, rows
    assert {channel for channel, _ in rows} <= {"rest", "mcp"}
    assert all('"refusals"' in detail for _, detail in rows)
