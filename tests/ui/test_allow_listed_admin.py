"""The web UI of an admin allowed only context ``ops``: its API keys page shows and revokes
only the keys confined to ``ops``, and the overview offers no context to create (the
service refuses it: docs/security.md, "What an allow-listed key may do")."""

from __future__ import annotations

from collections.abc import Callable

from kioku.models import ContextCreate, KeyCreate
from kioku.runtime import Runtime
from kioku.service.principal import Principal
from tests.ui.conftest import Browser


def test_a_confined_admin_sees_and_manages_only_its_contexts_keys(
    secured: Runtime,
    owner_principal: Principal,
    browser: Callable[..., Browser],
    key_of: Callable[..., str],
) -> None:
    secured.contexts.create_context(owner_principal, ContextCreate(name="ops"))
    confined = secured.keys.create_key(
        owner_principal, KeyCreate(name="ops-admin", role="admin", context_ids=["ops"])
    )
    wide = key_of("member", name="wide-member")
    wide_id = next(
        k.id for k in secured.keys.list_keys(owner_principal).items if k.name == "wide-member"
    )
    admin = browser()
    assert admin.sign_in(confined.key).status_code == 303
    owner = browser()
    assert owner.sign_in(key_of("owner", name="the-owner")).status_code == 303

    listing = admin.get("/ui/keys")
    assert listing.status_code == 200
    assert "ops-admin" in listing.text
    assert "wide-member" not in listing.text and wide_id not in listing.text
    assert "wide-member" in owner.get("/ui/keys").text
    refused = admin.post(f"/ui/keys/{wide_id}/revoke")
    assert refused.status_code == 404
    other = browser()
    assert other.sign_in(wide).status_code == 303  # still a working key

    made = admin.post("/ui/keys", {"name": "wider", "role": "member", "context_ids": "default"})
    assert made.status_code == 404
    assert "wider" not in {k.name for k in secured.keys.list_keys(owner_principal).items}

    assert 'id="new-context"' not in admin.get("/ui/").text
    assert 'id="new-context"' in owner.get("/ui/").text
    assert admin.post("/ui/contexts", {"name": "rogue"}).status_code == 403
    assert "rogue" not in {c.name for c in secured.contexts.list_contexts(owner_principal).items}
