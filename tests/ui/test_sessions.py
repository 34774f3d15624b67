"""Sign-in, the session cookie, CSRF and Origin checks, and what ends a session."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from anyio.from_thread import start_blocking_portal
from starlette.routing import Mount

from kioku.api import create_app
from kioku.runtime import Runtime
from kioku.service.principal import Principal
from kioku.ui.routes.signin import safe_next
from kioku.ui.sessions import SessionStore, SignInForms
from tests.ui.conftest import SIGNIN_TOKEN, Browser

PAGES = [
    "/ui/",
    "/ui/keys",
    "/ui/contexts/default",
    "/ui/contexts/default/pinned",
    "/ui/contexts/default/state",
    "/ui/contexts/default/feedback",
    "/ui/contexts/default/sleep",
    "/ui/contexts/default/memories/00000000-0000-0000-0000-000000000000",
    "/ui/contexts/default/memories/00000000-0000-0000-0000-000000000000/graph",
    "/ui/sleep/00000000-0000-0000-0000-000000000000",
]
POSTS = [
    "/ui/contexts",
    "/ui/keys",
    "/ui/keys/x/revoke",
    "/ui/signout",
    "/ui/contexts/default/memories",
    "/ui/contexts/default/memories/m/edit",
    "/ui/contexts/default/memories/m/pin",
    "/ui/contexts/default/memories/m/forget",
    "/ui/contexts/default/memories/m/feedback",
    "/ui/contexts/default/state",
    "/ui/contexts/default/state/delete",
    "/ui/contexts/default/sleep",
    "/ui/sleep/x/rollback",
]


@pytest.mark.parametrize("path", PAGES)
def test_every_page_sends_a_stranger_to_sign_in(browser: Callable[..., Browser], path: str) -> None:
    response = browser().get(path)
    assert response.status_code == 303
    assert response.headers["location"].startswith("/ui/signin")


@pytest.mark.parametrize("path", POSTS)
def test_every_form_refuses_a_stranger(browser: Callable[..., Browser], path: str) -> None:
    response = browser().post(path, {"csrf": "anything"})
    assert response.status_code == 403
    assert "Sign-in required" in response.text


def test_the_bare_ui_address_leads_to_sign_in(browser: Callable[..., Browser]) -> None:
    stranger = browser()
    bare = stranger.get("/ui")
    assert bare.status_code == 308 and bare.headers["location"] == "/ui/"
    assert stranger.get("/ui/").headers["location"] == "/ui/signin"


def test_a_forged_cookie_is_no_session(browser: Callable[..., Browser]) -> None:
    stranger = browser()
    stranger.client.cookies.set("kioku_session", "made-up", domain="testserver", path="/ui")
    assert stranger.get("/ui/").status_code == 303


def test_sign_in_sets_a_strict_http_only_cookie_on_ui_only(
    browser: Callable[..., Browser], key_of: Callable[..., str]
) -> None:
    response = browser().sign_in(key_of("owner"))
    assert response.status_code == 303 and response.headers["location"] == "/ui/"
    cookie = next(
        c for c in response.headers.get_list("set-cookie") if c.startswith("kioku_session=")
    )
    flags = {part.strip().lower() for part in cookie.split(";")[1:]}
    assert {"httponly", "samesite=strict", "path=/ui", "max-age=43200"} <= flags
    assert "secure" not in flags  # plain http: a Secure cookie would never come back


def test_the_cookie_is_secure_over_https(
    browser: Callable[..., Browser], key_of: Callable[..., str]
) -> None:
    response = browser(https=True).sign_in(key_of("owner"))
    cookie = next(
        c for c in response.headers.get_list("set-cookie") if c.startswith("kioku_session=")
    )
    assert "secure" in cookie.lower()


def test_a_wrong_key_is_refused_on_the_page(browser: Callable[..., Browser]) -> None:
    response = browser().sign_in("kk_" + "x" * 43)
    assert response.status_code == 401
    assert "That API key is not valid" in response.text
    assert "kioku_session" not in response.headers.get("set-cookie", "")


def test_sign_in_needs_the_sign_in_form(
    browser: Callable[..., Browser], key_of: Callable[..., str]
) -> None:
    """A login form posted from elsewhere (login CSRF) lacks the form's token cookie."""
    response = browser().request(
        "POST", "/ui/signin", data={"key": key_of("owner"), "signin_token": "guess"}
    )
    assert response.status_code == 403


def test_a_post_without_the_sessions_token_is_refused(
    browser: Callable[..., Browser], key_of: Callable[..., str], secured: Runtime,
    owner_principal: Principal,
) -> None:  # fmt: skip
    owner = browser()
    owner.sign_in(key_of("owner"))
    for token in ("", "wrong"):
        response = owner.post("/ui/contexts", {"csrf": token, "name": "sneaky"})
        assert response.status_code == 403 and "Form refused" in response.text
    names = [c.name for c in secured.contexts.list_contexts(owner_principal).items]
    assert "sneaky" not in names
    assert owner.post("/ui/contexts", {"name": "honest"}).status_code == 303


@pytest.mark.parametrize(
    "headers",
    [{"origin": "http://evil.example"}, {"origin": "null"}, {"sec-fetch-site": "cross-site"}],
)
def test_a_post_from_another_origin_is_refused_even_with_the_token(
    browser: Callable[..., Browser], key_of: Callable[..., str], headers: dict[str, str]
) -> None:
    owner = browser()
    owner.sign_in(key_of("owner"))
    response = owner.post("/ui/contexts", {"name": "cross"}, headers=headers)
    assert response.status_code == 403
    same = owner.post("/ui/contexts", {"name": "same"}, headers={"origin": "http://testserver"})
    assert same.status_code == 303


def test_each_session_has_its_own_csrf_token(
    browser: Callable[..., Browser], key_of: Callable[..., str]
) -> None:
    key = key_of("owner")
    first, second = browser(), browser()
    first.sign_in(key)
    second.sign_in(key)
    assert first.csrf != second.csrf
    response = second.post("/ui/contexts", {"csrf": first.csrf, "name": "borrowed"})
    assert response.status_code == 403


def test_revoking_the_key_ends_the_session(
    browser: Callable[..., Browser], key_of: Callable[..., str], secured: Runtime,
    owner_principal: Principal,
) -> None:  # fmt: skip
    viewer_key = key_of("viewer", name="to-revoke")
    viewer = browser()
    viewer.sign_in(viewer_key)
    assert viewer.get("/ui/").status_code == 200
    key_id = next(
        k.id for k in secured.keys.list_keys(owner_principal).items if k.name == "to-revoke"
    )
    secured.keys.revoke_key(owner_principal, key_id)
    response = viewer.get("/ui/")
    assert response.status_code == 303 and "ended=1" in response.headers["location"]
    assert "session has ended" in viewer.get(response.headers["location"]).text
    assert viewer.post("/ui/contexts/default/state", {"key": "k", "value": "1"}).status_code == 403


def test_an_expiring_key_ends_the_session(
    browser: Callable[..., Browser], secured: Runtime, owner_principal: Principal, clock
) -> None:
    from kioku.models import KeyCreate

    created = secured.keys.create_key(
        owner_principal,
        KeyCreate(name="brief", role="member", expires_at=clock.now + timedelta(minutes=5)),
    )
    member = browser()
    member.sign_in(created.key)
    assert member.get("/ui/").status_code == 200
    clock.advance(minutes=6)
    assert member.get("/ui/").status_code == 303


def test_a_session_ends_after_twelve_hours(
    browser: Callable[..., Browser], key_of: Callable[..., str], clock
) -> None:
    owner = browser()
    owner.sign_in(key_of("owner"))
    clock.advance(hours=11, minutes=59)
    assert owner.get("/ui/").status_code == 200
    clock.advance(minutes=1)
    assert owner.get("/ui/").status_code == 303


def test_signing_out_ends_the_session_for_good(
    browser: Callable[..., Browser], key_of: Callable[..., str]
) -> None:
    owner = browser()
    owner.sign_in(key_of("owner"))
    stolen = owner.client.cookies.get("kioku_session")
    assert owner.post("/ui/signout").status_code == 303
    thief = browser()
    thief.client.cookies.set("kioku_session", stolen or "", domain="testserver", path="/ui")
    assert thief.get("/ui/").status_code == 303


def test_sessions_expire_after_their_lifetime() -> None:
    store = SessionStore(ttl=timedelta(hours=12))
    start = datetime(2026, 1, 1, tzinfo=UTC)
    session_id, session = store.create("ws", "key", start)
    assert store.find(session_id, start + timedelta(hours=11)) == session
    assert store.find(session_id, start + timedelta(hours=12)) is None
    assert len(store) == 0
    assert store.find("not-a-session", start) is None


def test_the_session_table_keeps_only_hashes_and_stays_bounded() -> None:
    store = SessionStore(max_sessions=3)
    now = datetime(2026, 1, 1, tzinfo=UTC)
    ids = [store.create("ws", f"k{i}", now)[0] for i in range(5)]
    assert len(store) == 3
    assert store.find(ids[0], now) is None and store.find(ids[4], now) is not None
    assert not set(ids) & set(store._sessions)


def test_after_sign_in_only_ui_paths_are_followed() -> None:
    assert safe_next("/ui/contexts/x") == "/ui/contexts/x"
    for hostile in ("https://evil.example/", "//evil.example/ui/", "/api/v1/contexts", "/ui\\x"):
        assert safe_next(hostile) == "/ui/"


def test_sign_in_returns_to_the_page_asked_for(
    browser: Callable[..., Browser], key_of: Callable[..., str], secured: Runtime
) -> None:
    person = browser()
    first = person.get("/ui/contexts/default/state")
    assert first.headers["location"] == "/ui/signin?next=%2Fui%2Fcontexts%2Fdefault%2Fstate"
    form = person.get(first.headers["location"])
    assert 'name="next" value="/ui/contexts/default/state"' in form.text


def test_a_dev_server_offers_the_local_owner_and_a_keyed_one_does_not(
    tmp_path, browser: Callable[..., Browser], secured: Runtime
) -> None:
    from kioku.api import create_app
    from kioku.embeddings.fake import FakeEmbedder
    from kioku.runtime import open_runtime
    from tests.conftest import make_settings
    from tests.ui.conftest import SIGNIN_TOKEN

    keyed = browser()
    page = keyed.get("/ui/signin")
    assert "Continue as the local owner" not in page.text
    token = SIGNIN_TOKEN.search(page.text)
    assert token
    refused = keyed.request("POST", "/ui/signin/dev", data={"signin_token": token.group(1)})
    assert refused.status_code == 403

    (tmp_path / "dev").mkdir()
    dev_runtime = open_runtime(make_settings(tmp_path / "dev"), embedder=FakeEmbedder())
    try:
        from anyio.from_thread import start_blocking_portal

        with start_blocking_portal() as portal:
            local = Browser(
                portal, create_app(runtime=dev_runtime, with_mcp=False), "http://testserver"
            )
            page = local.get("/ui/signin")
            assert "Continue as the local owner" in page.text
            token = SIGNIN_TOKEN.search(page.text)
            assert token
            signed = local.request("POST", "/ui/signin/dev", data={"signin_token": token.group(1)})
            assert signed.status_code == 303
            overview = local.get("/ui/")
            assert overview.status_code == 200 and "(local)" in overview.text
            created = local.post("/ui/contexts", {"name": "devctx"})
            assert created.status_code == 303
            local.close()
    finally:
        dev_runtime.close()


# ---------------------------------------------------------------- quotas and one-time forms

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _ui_of(app: Any) -> Any:
    """The UI sub-app mounted at /ui of ``create_app``'s app (its state holds the tables)."""
    return next(r.app for r in app.routes if isinstance(r, Mount) and r.path == "/ui")


def test_a_key_past_its_quota_ends_only_its_own_oldest_sessions() -> None:
    store = SessionStore(per_key=2)
    owner_a, _ = store.create("ws-a", "owner", NOW)
    b_ids = [store.create("ws-b", "viewer", NOW)[0] for _ in range(5)]
    assert store.find(owner_a, NOW) is not None
    assert [store.find(i, NOW) is not None for i in b_ids] == [False, False, False, True, True]
    assert store.count("ws-b", "viewer") == 2 and store.count("ws-a") == 1


def test_a_workspace_past_its_quota_ends_only_its_own_sessions() -> None:
    """Past the workspace's quota, the key holding most sessions there loses its oldest; no
    other workspace loses anything."""
    store = SessionStore(per_workspace=3, per_key=10)
    owner_a, _ = store.create("ws-a", "owner", NOW)
    b1 = [store.create("ws-b", "b1", NOW)[0] for _ in range(3)]
    b2, _ = store.create("ws-b", "b2", NOW)
    assert store.find(owner_a, NOW) is not None and store.find(b2, NOW) is not None
    assert [store.find(i, NOW) is not None for i in b1] == [False, True, True]
    assert store.count("ws-b") == 3


def test_the_bound_in_all_takes_from_the_workspace_holding_most() -> None:
    store = SessionStore(max_sessions=4)
    owner_a, _ = store.create("ws-a", "owner", NOW)
    owner_c, _ = store.create("ws-c", "owner", NOW)
    flood = [store.create("ws-b", f"k{i % 3}", NOW)[0] for i in range(20)]
    assert len(store) == 4
    assert store.find(owner_a, NOW) is not None and store.find(owner_c, NOW) is not None
    assert [store.find(i, NOW) is not None for i in flood[-3:]] == [False, True, True]
    assert store.count("ws-b") == 2


def test_expired_sessions_make_room_first() -> None:
    store = SessionStore(ttl=timedelta(hours=1), per_key=2)
    old, _ = store.create("ws", "k", NOW)
    store.create("ws", "k", NOW)
    later = NOW + timedelta(hours=2)
    fresh, _ = store.create("ws", "other", later)
    assert len(store) == 1 and store.find(fresh, later) is not None
    assert store.find(old, NOW) is None


def test_a_sign_in_form_token_is_good_once_and_bounded_per_address() -> None:
    forms = SignInForms(ttl=timedelta(minutes=10), per_address=2)
    token = forms.issue("192.0.2.1", NOW)
    assert forms.take(token, NOW) and not forms.take(token, NOW)  # once
    assert not forms.take("made-up", NOW) and not forms.take("", NOW)
    late = forms.issue("192.0.2.1", NOW)
    assert not forms.take(late, NOW + timedelta(minutes=10))  # expired
    mine = forms.issue("192.0.2.1", NOW)
    flood = [forms.issue("198.51.100.7", NOW) for _ in range(50)]
    assert len(forms) == 3 and forms.take(mine, NOW)  # another address's flood left it
    assert [forms.take(t, NOW) for t in flood[-3:]] == [False, True, True]


def test_sign_ins_with_another_workspaces_key_never_sign_the_owner_out(
    secured: Runtime, key_of: Callable[..., str]
) -> None:
    """The reported attack, through the sign-in route: a viewer key of workspace B signs in
    past the table's bound (here 4, not 10,000); workspace A's owner stays signed in."""
    app = create_app(runtime=secured, with_mcp=False)
    _ui_of(app).state.sessions = sessions = SessionStore(max_sessions=4)
    owner_key, b_viewer = key_of("owner"), key_of("viewer", workspace="tenant-b")
    with start_blocking_portal() as portal:
        owner = Browser(portal, app, "http://testserver")
        attacker = Browser(portal, app, "http://testserver")
        try:
            assert owner.sign_in(owner_key).status_code == 303
            for _ in range(10):
                attacker.client.cookies.clear()  # a new session each time, as a script would
                assert attacker.sign_in(b_viewer).status_code == 303
            assert len(sessions) == 4
            page = owner.get("/ui/")
            assert (
                page.status_code == 200
                and owner.post("/ui/contexts", {"name": "still"}).status_code == 303
            )
        finally:
            owner.close()
            attacker.close()


def test_the_sign_in_form_works_once(
    browser: Callable[..., Browser], key_of: Callable[..., str]
) -> None:
    """A script that keeps one form's token and cookie cannot sign in with it again (nor
    after a wrong key: the page shown again has a new token)."""
    key = key_of("viewer")
    person = browser()
    form = person.get("/ui/signin")
    token = SIGNIN_TOKEN.search(form.text)
    assert token
    data = {"key": key, "signin_token": token.group(1)}
    assert person.request("POST", "/ui/signin", data=data).status_code == 303

    def replay(who: Browser, fields: dict[str, str]) -> int:
        cookie = {"cookie": f"kioku_signin={fields['signin_token']}"}  # the form's own cookie
        return who.request("POST", "/ui/signin", data=fields, headers=cookie).status_code

    assert replay(browser(), data) == 403
    unused = SIGNIN_TOKEN.search(browser().get("/ui/signin").text)
    assert unused  # the same post with a token not used yet, from anywhere, signs in
    assert replay(browser(), {"key": key, "signin_token": unused.group(1)}) == 303
    wrong = browser()
    first = SIGNIN_TOKEN.search(wrong.get("/ui/signin").text)
    assert first
    fields = {"key": "kk_" + "x" * 43, "signin_token": first.group(1)}
    assert wrong.request("POST", "/ui/signin", data=fields).status_code == 401
    assert replay(wrong, {**fields, "key": key}) == 403
