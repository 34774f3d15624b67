"""Rate limiting per caller, through a real ASGI stack, with a clock moved by hand."""

from __future__ import annotations

import hashlib
from pathlib import Path

import anyio
import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.types import Message, Receive, Scope, Send

from kioku.api import create_app
from kioku.api.ratelimit import ADDRESS_FACTOR, RateLimit, TokenBucketLimiter
from kioku.runtime import open_runtime
from tests.conftest import make_settings, portal_client

TOKEN = "kk_live_secret-token-one"
OTHER_TOKEN = "kk_live_secret-token-two"


class FakeClock:
    """Seconds as a float the test advances; the limiter never sees real time."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class CountingApp:
    """A tiny Starlette app that records how many requests reached it."""

    def __init__(self) -> None:
        self.calls = 0

        async def ok(_: Request) -> PlainTextResponse:
            self.calls += 1
            return PlainTextResponse("ok")

        paths = ("/api/v1/memories", "/api/v1/recall", "/health", "/api/v1/health")
        self.app = Starlette(routes=[Route(path, ok) for path in paths])

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)


def limited(
    inner: CountingApp,
    clock: FakeClock,
    *,
    per_minute: int = 60,
    burst: int = 3,
    max_buckets: int = 10_000,
) -> RateLimit:
    return RateLimit(
        inner, per_minute=per_minute, burst=burst, clock=clock, max_buckets=max_buckets
    )


def get(
    app: RateLimit,
    path: str = "/api/v1/memories",
    *,
    token: str | None = None,
    client: tuple[str, int] = ("127.0.0.1", 123),
) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}

    async def call() -> httpx.Response:
        transport = httpx.ASGITransport(app=app, client=client)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:
            return await http.get(path, headers=headers)

    return anyio.run(call)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def inner() -> CountingApp:
    return CountingApp()


def test_a_burst_is_allowed_then_the_next_request_is_429_without_reaching_the_app(
    inner: CountingApp, clock: FakeClock
) -> None:
    app = limited(inner, clock, per_minute=30, burst=3)
    assert [get(app, token=TOKEN).status_code for _ in range(3)] == [200, 200, 200]
    refused = get(app, token=TOKEN)
    assert refused.status_code == 429
    assert refused.headers["retry-after"] == "2"  # 30/min: one token every 2 s
    assert refused.headers["content-type"] == "application/json"
    assert refused.json() == {
        "error": {
            "code": "rate_limited",
            "message": "too many requests: retry after 2 s",
            "field": None,
            "details": [{"retry_after": 2}],
        }
    }
    assert inner.calls == 3


def test_tokens_refill_with_time(inner: CountingApp, clock: FakeClock) -> None:
    app = limited(inner, clock, per_minute=60, burst=2)
    assert [get(app, token=TOKEN).status_code for _ in range(3)] == [200, 200, 429]
    clock.advance(1)
    assert get(app, token=TOKEN).status_code == 200
    assert get(app, token=TOKEN).status_code == 429
    clock.advance(3600)  # a long pause refills only up to the burst
    assert [get(app, token=TOKEN).status_code for _ in range(3)] == [200, 200, 429]


def test_retrying_after_the_advertised_seconds_succeeds_despite_float_rounding(
    inner: CountingApp, clock: FakeClock
) -> None:
    app = limited(inner, clock, per_minute=20, burst=1)  # naively 1/(20/60) = 3.0000000000000004
    assert get(app, token=TOKEN).status_code == 200
    refused = get(app, token=TOKEN)
    assert refused.headers["retry-after"] == "3"
    clock.advance(int(refused.headers["retry-after"]))
    assert get(app, token=TOKEN).status_code == 200


def test_retry_after_is_at_least_one_second(inner: CountingApp, clock: FakeClock) -> None:
    app = limited(inner, clock, per_minute=600, burst=1)  # one token every 0.1 s
    get(app, token=TOKEN)
    refused = get(app, token=TOKEN)
    assert refused.headers["retry-after"] == "1"
    assert refused.json()["error"]["details"] == [{"retry_after": 1}]


def test_two_different_bearer_tokens_have_independent_buckets(
    inner: CountingApp, clock: FakeClock
) -> None:
    app = limited(inner, clock, burst=1)
    assert get(app, token=TOKEN).status_code == 200
    assert get(app, token=TOKEN).status_code == 429
    assert get(app, token=OTHER_TOKEN).status_code == 200


def test_the_same_token_shares_one_bucket_across_paths_and_client_addresses(
    inner: CountingApp, clock: FakeClock
) -> None:
    app = limited(inner, clock, burst=2)
    assert get(app, "/api/v1/memories", token=TOKEN, client=("1.1.1.1", 1)).status_code == 200
    assert get(app, "/api/v1/recall", token=TOKEN, client=("2.2.2.2", 2)).status_code == 200
    assert get(app, "/api/v1/recall", token=TOKEN).status_code == 429


def test_requests_without_a_bearer_token_are_keyed_by_client_ip(
    inner: CountingApp, clock: FakeClock
) -> None:
    app = limited(inner, clock, burst=1)
    assert get(app, client=("1.2.3.4", 123)).status_code == 200
    assert get(app, client=("1.2.3.4", 456)).status_code == 429  # another port, same host
    assert get(app, client=("5.6.7.8", 123)).status_code == 200
    assert app.limiter.keys() == ["ip:1.2.3.4", "ip:5.6.7.8"]


def test_a_non_bearer_authorization_header_is_keyed_by_client_ip(
    inner: CountingApp, clock: FakeClock
) -> None:
    app = limited(inner, clock, burst=1)

    async def call() -> httpx.Response:
        transport = httpx.ASGITransport(app=app, client=("1.2.3.4", 1))
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:
            return await http.get("/api/v1/memories", headers={"Authorization": "Basic abc"})

    assert anyio.run(call).status_code == 200
    assert app.limiter.keys() == ["ip:1.2.3.4"]


def test_exempt_health_paths_are_never_limited(inner: CountingApp, clock: FakeClock) -> None:
    app = limited(inner, clock, burst=1)
    get(app, token=TOKEN)
    assert get(app, token=TOKEN).status_code == 429
    for path in ("/health", "/api/v1/health"):
        assert [get(app, path, token=TOKEN).status_code for _ in range(5)] == [200] * 5


def test_per_minute_zero_disables_limiting(inner: CountingApp, clock: FakeClock) -> None:
    app = limited(inner, clock, per_minute=0, burst=0)
    assert all(get(app, token=TOKEN).status_code == 200 for _ in range(20))
    assert inner.calls == 20
    assert app.limiter.keys() == []


def test_the_bucket_count_is_bounded_and_the_least_recently_used_is_forgotten(
    inner: CountingApp, clock: FakeClock
) -> None:
    app = limited(inner, clock, burst=1, max_buckets=3)
    for host in ("1.0.0.1", "1.0.0.2", "1.0.0.3", "1.0.0.4"):
        assert get(app, client=(host, 1)).status_code == 200
    assert app.limiter.keys() == ["ip:1.0.0.2", "ip:1.0.0.3", "ip:1.0.0.4"]
    # Forgotten, so the first caller starts again with a full bucket.
    assert get(app, client=("1.0.0.1", 1)).status_code == 200


def test_a_recently_used_bucket_survives_eviction() -> None:
    limiter = TokenBucketLimiter(per_minute=60, burst=5, clock=FakeClock(), max_buckets=2)
    limiter.check("a")
    limiter.check("b")
    limiter.check("a")
    limiter.check("c")
    assert limiter.keys() == ["a", "c"]


def test_stored_bucket_keys_never_contain_the_raw_token(
    inner: CountingApp, clock: FakeClock
) -> None:
    app = limited(inner, clock)
    get(app, token=TOKEN)
    keys = app.limiter.keys()
    assert keys == [hashlib.sha256(TOKEN.encode()).hexdigest()]
    assert not any(TOKEN in key or "secret" in key for key in keys)


@pytest.mark.parametrize("scope_type", ["lifespan", "websocket"])
def test_a_non_http_scope_passes_through_untouched(clock: FakeClock, scope_type: str) -> None:
    seen: list[Scope] = []

    async def recorder(scope: Scope, receive: Receive, send: Send) -> None:
        seen.append(scope)

    app = RateLimit(recorder, per_minute=60, burst=1, clock=clock)
    scope: Scope = {"type": scope_type, "path": "/api/v1/memories", "client": ("1.2.3.4", 1)}

    async def receive() -> Message:
        return {"type": f"{scope_type}.disconnect"}

    async def send(_: Message) -> None:
        raise AssertionError("the middleware must not answer a non-HTTP scope")

    for _ in range(3):
        anyio.run(app, scope, receive, send)
    assert seen == [scope] * 3
    assert all(s is scope for s in seen)
    assert app.limiter.keys() == []


def test_the_limiter_returns_none_when_allowed_and_seconds_to_wait_when_not() -> None:
    clock = FakeClock()
    limiter = TokenBucketLimiter(per_minute=6, burst=1, clock=clock)  # one token per 10 s
    assert limiter.check("k") is None
    assert limiter.check("k") == pytest.approx(10.0)
    clock.advance(4)
    assert limiter.check("k") == pytest.approx(6.0)
    clock.advance(6)
    assert limiter.check("k") is None


def test_a_limiter_with_a_zero_burst_is_refused_at_construction() -> None:
    with pytest.raises(ValueError, match="burst"):
        TokenBucketLimiter(per_minute=60, burst=0)


def test_inventing_a_new_token_per_request_still_runs_the_address_dry(
    inner: CountingApp, clock: FakeClock
) -> None:
    app = limited(inner, clock, per_minute=60, burst=2)
    budget = 2 * ADDRESS_FACTOR
    statuses = [get(app, token=f"kk_guess{n}").status_code for n in range(budget + 1)]
    assert statuses[:budget] == [200] * budget and statuses[budget] == 429
    assert inner.calls == budget


@pytest.mark.parametrize(
    ("overrides", "limited_after_burst"),
    [
        ({}, False),  # --dev: its one local user is not throttled
        ({"rate_limit_per_minute": 60}, True),  # ...unless a limit is set explicitly
        ({"dev": False}, True),  # served with keys: the default limit applies
    ],
)
def test_dev_mode_does_not_throttle_its_local_user_unless_asked(
    tmp_path: Path, overrides: dict[str, object], limited_after_burst: bool
) -> None:
    settings = make_settings(tmp_path, rate_limit_burst=5, **overrides)
    runtime = open_runtime(settings)
    try:
        with portal_client(create_app(runtime=runtime)) as client:
            statuses = {client.get("/api/v1/contexts").status_code for _ in range(12)}
    finally:
        runtime.close()
    assert (429 in statuses) is limited_after_burst, statuses
