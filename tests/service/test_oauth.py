"""The OAuth grant rules as a service, without the MCP SDK or HTTP (the protocol side is
tests/e2e/test_oauth.py): a consent becomes a one-time code, the code one pair of tokens,
refresh rotates, and a replayed secret ends everything its consent produced."""

from __future__ import annotations

import pytest

from kioku.errors import ForbiddenError, UnauthorizedError
from kioku.models import KeyCreate
from kioku.runtime import Runtime
from kioku.service.oauth import InvalidGrantError

REQUEST = {"code_challenge": "x" * 43, "redirect_uri": "http://127.0.0.1:9/cb", "state": "s"}


def test_consent_code_tokens_rotation_and_replay(runtime: Runtime) -> None:
    oauth = runtime.oauth
    owner = runtime.local_principal("cli")
    member = runtime.keys.create_key(owner, KeyCreate(name="m", role="member")).key
    viewer = runtime.keys.create_key(owner, KeyCreate(name="v", role="viewer")).key
    oauth.register_client("c1", {"client_id": "c1", "token_endpoint_auth_method": "none"})
    ticket = oauth.open_consent("c1", ["memory:write"], REQUEST)
    assert oauth.consent(ticket) is not None
    with pytest.raises(UnauthorizedError):
        oauth.allow(ticket, "kk_not-a-key")
    with pytest.raises(ForbiddenError):  # a viewer may not grant write...
        oauth.allow(ticket, viewer)
    code = oauth.allow(ticket, member)  # ...and the ticket stayed usable for another key
    assert code is not None and oauth.allow(ticket, member) is None  # one-time
    assert oauth.code(code, "other-client") is None
    tokens = oauth.exchange_code(code)
    bearer = oauth.bearer(tokens.access)
    assert bearer is not None and bearer.scopes == ["memory:write"]
    assert bearer.principal.role == "member" and bearer.client_id == "c1"
    rotated = oauth.exchange_refresh(tokens.refresh, [])
    assert oauth.bearer(tokens.access) is None  # rotation ended the old pair
    assert oauth.bearer(rotated.access) is not None
    with pytest.raises(InvalidGrantError):  # the code again: someone kept a copy...
        oauth.exchange_code(code)
    assert oauth.bearer(rotated.access) is None  # ...so all its consent produced is ended

    second = oauth.allow(oauth.open_consent("c1", [], REQUEST), member)
    assert second is not None
    tokens = oauth.exchange_code(second)
    rotated = oauth.exchange_refresh(tokens.refresh, ["memory:read", "memory:admin"])
    assert rotated.scopes == ["memory:read"]  # narrowed to what the grant holds
    assert oauth.refresh_token(tokens.refresh, "c1") is None  # a rotated-out one came back:
    assert oauth.bearer(rotated.access) is None  # theft assumed, the grant ends
