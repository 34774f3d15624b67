"""A NUL character (U+0000: ``"\\u0000"`` in JSON, ``%00`` in a URL or a form) is refused on
every channel before anything is written, the same on both backends: REST answers 422 naming
the field, the web UI its 422 page naming it, OAuth an error naming it (400, as RFC 6749 and
RFC 7591 say). MCP tools: tests/mcp/test_nul_arguments.py.

PostgreSQL stores NUL in neither ``text`` nor ``jsonb`` and refuses it in any query, read or
write: almost every case here was a 500 on PostgreSQL (a NUL-only summary also on SQLite, whose
``length()`` stops at the NUL); the few that were not (recall's query, never stored; a header
stored hashed) are refused all the same, by the one rule. Every other character is still
stored, on both backends."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from kioku.api import create_app
from kioku.embeddings.fake import FakeEmbedder
from kioku.models import KeyCreate
from kioku.runtime import Runtime, open_runtime
from kioku.storage.shared.database import ALL_WORKSPACES
from kioku.vocabulary import KeyRole
from tests.conftest import (
    ManualClock,
    SyncASGIClient,
    backend_settings,
    make_settings,
    portal_client,
)

API = "/api/v1/contexts/default"
NUL = "\\u0000"  # as JSON text escapes it
SAID = "holds a NUL character (\\u0000), which cannot be stored; remove it"
ROLES: tuple[KeyRole, ...] = ("owner", "viewer", "connector")
CSRF = re.compile(r'name="csrf" value="([^"]+)"')
SIGNIN_TOKEN = re.compile(r'name="signin_token" value="([^"]+)"')


@dataclass
class Served:
    """A server that needs keys (so OAuth and the UI's sign-in are on), one key per role."""

    runtime: Runtime
    client: SyncASGIClient
    keys: dict[str, str]

    def auth(self, role: str = "owner") -> dict[str, str]:
        return {"Authorization": f"Bearer {self.keys[role]}"}


@pytest.fixture(params=["sqlite", "postgres"])
def served(request: pytest.FixtureRequest, tmp_path: Path, clock: ManualClock) -> Iterator[Served]:
    url = backend_settings(request, tmp_path).database.url
    settings = make_settings(tmp_path, dev=False, rate_limit_per_minute=0, database_url=url)
    runtime = open_runtime(settings, embedder=FakeEmbedder(), clock=clock)
    try:
        owner = runtime.local_principal("cli")
        keys = {r: runtime.keys.create_key(owner, KeyCreate(name=r, role=r)).key for r in ROLES}
        with portal_client(create_app(runtime=runtime)) as client:
            yield Served(runtime, client, keys)
    finally:
        runtime.close()


def written(s: Served) -> dict[str, int]:
    """How many of each thing a refused request might have written."""
    owner = s.auth()

    def count(path: str) -> int:
        answer = s.client.get(path, headers=owner)
        assert answer.status_code == 200, answer.text
        return len(answer.json()["items"])

    with s.runtime.store.sql.read(ALL_WORKSPACES) as tx:
        clients = tx.execute("SELECT count(*) AS n FROM oauth_clients").fetchone()
    return {
        "memories": count(f"{API}/memories?limit=200&include_deleted=true"),
        "state": count(f"{API}/state"),
        "feedback": count(f"{API}/feedback"),
        "contexts": count("/api/v1/contexts"),
        "keys": count("/api/v1/keys"),
        "oauth_clients": clients["n"],
    }


def refused(s: Served, method: str, url: str, field: str, **kwargs: Any) -> None:
    answer = s.client.request(method, url, **kwargs)
    assert answer.status_code == 422, answer.text
    error = answer.json()["error"]
    assert (error["code"], error["field"]) == ("invalid_input", field), error
    # "body: has an object key that holds a NUL character...": the key is named by its object.
    assert error["message"].startswith(f"{field}: ") and error["message"].endswith(SAID)


BODIES = [
    ("POST", f"{API}/memories", f'{{"summary": "x{NUL}"}}', "summary"),
    # NUL alone: SQLite's length() counts 0 characters, failing the summary's CHECK (a 500).
    ("POST", f"{API}/memories", f'{{"summary": "{NUL}"}}', "summary"),
    ("POST", f"{API}/memories", f'{{"summary": "x", "content": "a{NUL}b"}}', "content"),
    ("POST", f"{API}/memories", f'{{"summary": "x", "tags": ["t", "{NUL}"]}}', "tags[1]"),
    ("POST", f"{API}/memories", f'{{"summary": "x", "source_uri": "s:{NUL}"}}', "source_uri"),
    ("POST", f"{API}/memories", f'{{"summary": "x", "type": "n{NUL}"}}', "type"),
    ("POST", f"{API}/memories", f'{{"summary": "x", "a{NUL}": 1}}', "body"),
    (
        "POST",
        f"{API}/memories/batch",
        f'{{"items": [{{"summary": "a"}}, {{"summary": "b", "content": "{NUL}"}}]}}',
        "items[1].content",
    ),
    ("POST", f"{API}/memories/batch", f'{{"items": [{{"summary": "{NUL}"}}]}}', "items[0].summary"),
    (
        "POST",
        f"{API}/ingest",
        f'{{"ops": [{{"op": "upsert", "external_id": "e{NUL}", "summary": "s"}}]}}',
        "ops[0].external_id",
    ),
    (
        "POST",
        f"{API}/ingest",
        f'{{"ops": [{{"op": "upsert", "external_id": "e", "summary": "s", "content": "{NUL}"}}]}}',
        "ops[0].content",
    ),
    (
        "POST",
        f"{API}/ingest",
        f'{{"ops": [{{"op": "delete", "external_id": "{NUL}"}}]}}',
        "ops[0].external_id",
    ),
    ("PUT", f"{API}/state/k", f'{{"value": "{NUL}"}}', "value"),
    ("PUT", f"{API}/state/k", f'{{"value": {{"a": {{"b": ["{NUL}"]}}}}}}', "value.a.b[0]"),
    ("PUT", f"{API}/state/k", f'{{"value": {{"a": {{"{NUL}": 1}}}}}}', "value.a"),
    ("POST", f"{API}/recall", f'{{"query": "q{NUL}"}}', "query"),
    (
        "POST",
        f"{API}/recall",
        f'{{"query": "q", "filters": {{"tags": ["{NUL}"]}}}}',
        "filters.tags[0]",
    ),
    ("POST", f"{API}/feedback", f'{{"memory_id": "m", "helpful": true, "note": "{NUL}"}}', "note"),
    ("POST", f"{API}/memories/forget", f'{{"query": "{NUL}"}}', "query"),
    ("POST", "/api/v1/contexts", f'{{"name": "c", "description": "{NUL}"}}', "description"),
    ("PATCH", API, f'{{"description": "d{NUL}"}}', "description"),
    ("POST", "/api/v1/keys", f'{{"name": "k{NUL}", "role": "viewer"}}', "name"),
    ("POST", "/api/v1/purge", f'{{"source_uri_prefix": "s:{NUL}"}}', "source_uri_prefix"),
]


@pytest.mark.parametrize(("method", "url", "text", "field"), BODIES)
def test_a_nul_in_a_json_body_is_422_naming_the_field_and_writes_nothing(
    served: Served, method: str, url: str, text: str, field: str
) -> None:
    before = written(served)
    role = "connector" if url.endswith("/ingest") else "owner"
    headers = {**served.auth(role), "content-type": "application/json"}
    refused(served, method, url, field, content=text.encode(), headers=headers)
    assert written(served) == before


def test_update_memory_with_a_nul_is_422_and_leaves_the_memory(served: Served) -> None:
    owner = served.auth()
    made = served.client.post(f"{API}/memories", json={"summary": "as it was"}, headers=owner)
    url = f"{API}/memories/{made.json()['id']}"
    headers = {**owner, "content-type": "application/json"}
    refused(served, "PATCH", url, "content", content=f'{{"content": "{NUL}"}}', headers=headers)
    kept = served.client.get(url, headers=owner).json()
    assert (kept["summary"], kept["content"]) == ("as it was", "")


def cursor(*parts: str) -> str:
    """A cursor as the server packs one, holding ``parts`` (a client can forge any)."""
    return base64.urlsafe_b64encode(json.dumps(list(parts)).encode()).decode().rstrip("=")


URLS = [
    # A context name in the path, read by a viewer: the lookup itself failed on PostgreSQL.
    ("GET", "/api/v1/contexts/de%00fault", "viewer", "path"),
    ("GET", f"{API}/memories/m%00", "viewer", "path"),
    ("GET", f"{API}/state/k%00", "viewer", "path"),
    ("PUT", f"{API}/state/k%00", "owner", "path"),  # a state key is in the path
    ("DELETE", f"{API}/memories/m%00", "owner", "path"),
    ("GET", "/api/v1/sleep/r%00", "owner", "path"),
    ("GET", f"{API}/memories?tag=a%00", "viewer", "tag"),
    ("GET", f"{API}/memories?type=%00", "viewer", "type"),
    ("GET", f"{API}/feedback?memory_id=m%00", "viewer", "memory_id"),
    ("GET", f"{API}/pinned?tag=%00", "viewer", "tag"),
    ("GET", f"{API}/memories?a%00=1", "viewer", "query"),
]


@pytest.mark.parametrize(("method", "url", "role", "field"), URLS)
def test_a_nul_in_the_path_or_the_query_is_422_naming_it(
    served: Served, method: str, url: str, role: str, field: str
) -> None:
    before = written(served)
    body = b'{"value": 1}' if method == "PUT" else b""
    headers = {**served.auth(role), "content-type": "application/json"}
    answer = served.client.request(method, url, content=body, headers=headers)
    assert answer.status_code == 422, answer.text
    error = answer.json()["error"]
    assert (error["code"], error["field"]) == ("invalid_input", field), error
    said = f"has a name that {SAID}" if field == "query" else SAID
    assert error["message"] == f"{field}: {said}"
    assert written(served) == before


@pytest.mark.parametrize(
    "forged",
    [
        cursor("2026-06-01T09:00:00+00:00", "m\x00"),
        cursor("2026-06-01T09:00:00+00:00", "m\udfff"),  # a lone surrogate: a 500 on both
    ],
)
def test_a_forged_cursor_holding_unstorable_text_is_not_a_cursor(
    served: Served, forged: str
) -> None:
    answer = served.client.get(f"{API}/memories?cursor={forged}", headers=served.auth("viewer"))
    assert answer.status_code == 422, answer.text
    assert answer.json()["error"]["field"] == "cursor"
    state = served.client.get(
        f"{API}/state?cursor={cursor('k' + chr(0))}", headers=served.auth("viewer")
    )
    assert (state.status_code, state.json()["error"]["field"]) == (422, "cursor")


def test_a_nul_in_a_header_is_422_naming_it(served: Served) -> None:
    # HTTP servers refuse it in a header before the app; an ASGI client can still send one.
    # (The idempotency key is stored hashed, so this was no 500: the rule holds everywhere.)
    before = written(served)
    body = {"ops": [{"op": "upsert", "external_id": "e", "summary": "s"}]}
    headers = {**served.auth("connector"), "Idempotency-Key": "k\x00"}
    refused(served, "POST", f"{API}/ingest", "Idempotency-Key", json=body, headers=headers)
    assert written(served) == before


REGISTRATION = {"redirect_uris": ["http://127.0.0.1:9/cb"], "token_endpoint_auth_method": "none"}


@pytest.mark.parametrize(
    ("extra", "field"),
    [({"client_name": "app\x00"}, "client_name"), ({"software_id": "\x00"}, "software_id")],
)
def test_oauth_registration_refuses_a_nul_naming_the_field(
    served: Served, extra: dict[str, str], field: str
) -> None:
    """Open to anyone (no key): a NUL in the metadata was a 500 on PostgreSQL."""
    before = written(served)
    # Sent as JSON escapes it: "\u0000".
    answer = served.client.post("/register", json={**REGISTRATION, "client_name": "app", **extra})
    assert answer.status_code == 400, answer.text
    assert answer.json() == {
        "error": "invalid_client_metadata",
        "error_description": f"{field} {SAID}",
    }
    assert written(served) == before
    # The same client without the NUL registers.
    fine = served.client.post("/register", json={**REGISTRATION, "client_name": "app"})
    assert fine.status_code == 201, fine.text


def test_oauth_authorize_token_and_revoke_refuse_a_nul_naming_the_parameter(
    served: Served,
) -> None:
    authorize = served.client.get(
        "/authorize",
        params={
            "client_id": "c\x00", "response_type": "code", "code_challenge": "x" * 43,
            "code_challenge_method": "S256", "redirect_uri": "http://127.0.0.1:9/cb",
        },
    )  # fmt: skip
    token = served.client.post(
        "/token",
        data={
            "grant_type": "authorization_code", "client_id": "c\x00", "code": "x",
            "code_verifier": "y" * 43, "redirect_uri": "http://127.0.0.1:9/cb",
        },
    )  # fmt: skip
    revoke = served.client.post("/revoke", data={"client_id": "c", "token": "t\x00"})
    for answer, field in ((authorize, "client_id"), (token, "client_id"), (revoke, "token")):
        assert answer.status_code == 400, answer.text
        assert answer.json() == {"error": "invalid_request", "error_description": f"{field} {SAID}"}


def signed_in(s: Served, role: str) -> str:
    """Sign the client in to the UI with ``role``'s key; returns the session's CSRF token."""
    form = s.client.get("/ui/signin")
    token = SIGNIN_TOKEN.search(form.text)
    assert token, form.text
    done = s.client.post("/ui/signin", data={"key": s.keys[role], "signin_token": token[1]})
    assert done.status_code == 303, done.text
    csrf = CSRF.search(s.client.get("/ui/").text)
    assert csrf
    return csrf[1]


def ui_refused(answer: httpx.Response, field: str) -> None:
    assert answer.status_code == 422, answer.text
    assert answer.headers["content-type"].startswith("text/html")
    assert f"{field}: holds a NUL character" in answer.text


def test_the_ui_refuses_a_nul_in_the_path_with_its_page(served: Served) -> None:
    signed_in(served, "viewer")
    ui_refused(served.client.get("/ui/contexts/de%00fault"), "path")
    ui_refused(served.client.get("/ui/static/%00"), "path")  # no query behind it: 404 before


UI_FORMS = [
    ("/ui/keys", {"name": "k\x00", "role": "viewer"}, "name"),
    ("/ui/contexts", {"name": "c", "description": "d\x00"}, "description"),
    ("/ui/contexts/default/memories", {"summary": "s", "content": "\x00"}, "content"),
    ("/ui/contexts/default/state", {"key": "k", "value": "v\x00"}, "value"),
]


@pytest.mark.parametrize(("url", "fields", "field"), UI_FORMS)
@pytest.mark.parametrize("multipart", [False, True])
def test_the_ui_refuses_a_nul_in_a_form_field_with_its_page(
    served: Served, url: str, fields: dict[str, str], field: str, multipart: bool
) -> None:
    csrf = signed_in(served, "owner")
    before = written(served)
    data = {"csrf": csrf, **fields}
    if multipart:  # the same form as multipart/form-data: Starlette parses both
        files = {name: (None, value) for name, value in data.items()}
        answer = served.client.post(url, files=files)
    else:
        answer = served.client.post(url, data=data)
    ui_refused(answer, field)
    assert written(served) == before


def test_every_other_character_is_stored_and_read_back(served: Served) -> None:
    """The rule refuses NUL only: every other control character, noncharacters and the
    last code point are stored, in text (content, a description) and in JSON (a state value,
    an object key), on both backends."""
    text = "".join(map(chr, range(1, 32))) + "\x7f\x80\x9f\ufeff\ufffe\uffff\U0010ffff"
    owner = {**served.auth(), "content-type": "application/json"}
    made = served.client.post(
        f"{API}/memories", json={"summary": "odd" + text, "content": text, "tags": [text]},
        headers=owner,
    )  # fmt: skip
    assert made.status_code == 201, made.text
    got = served.client.get(f"{API}/memories/{made.json()['id']}", headers=owner).json()
    assert (got["summary"], got["content"], got["tags"]) == ("odd" + text, text, [text])
    value = {text: [text]}
    assert served.client.put(f"{API}/state/k", json={"value": value}, headers=owner).is_success
    assert served.client.get(f"{API}/state/k", headers=owner).json()["value"] == value
    described = served.client.patch(API, json={"description": text}, headers=owner)
    assert described.json()["description"] == text
