"""Per-caller rate limiting: a token bucket per API key (or client IP), 429 with ``Retry-After``."""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections import OrderedDict
from collections.abc import Callable

from starlette.types import ASGIApp, Receive, Scope, Send

from kioku.api.errors import error_body

# Float slack: 3 s at 20/min must refill exactly one token, not 0.9999999999999999 of one.
_EPSILON = 1e-9


class TokenBucketLimiter:
    """Token buckets keyed by caller, held in memory, bounded in number.

    Each bucket holds at most ``burst`` tokens and refills at ``per_minute / 60`` tokens per
    second; a request spends one. ``per_minute <= 0`` turns limiting off. At most
    ``max_buckets`` buckets are kept, least recently used forgotten first, so a flood of
    distinct keys costs bounded memory (a forgotten caller simply starts again with a full
    bucket). Not locked: callers share one event loop and ``check`` never awaits, so a
    bucket's read and update cannot interleave with another request's.
    """

    def __init__(
        self,
        *,
        per_minute: float,
        burst: int,
        clock: Callable[[], float] = time.monotonic,
        max_buckets: int = 10_000,
    ) -> None:
        if per_minute > 0 and burst < 1:
            raise ValueError("burst must be at least 1 when rate limiting is on")
        if max_buckets < 1:
            raise ValueError("max_buckets must be at least 1")
        self.per_minute = per_minute
        self.burst = burst
        self.max_buckets = max_buckets
        self._clock = clock
        # key -> (tokens, time of last update); insertion order is recency order.
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()

    @property
    def is_enabled(self) -> bool:
        """Whether requests are limited at all."""
        return self.per_minute > 0

    def check(self, key: str) -> float | None:
        """Spend one token of ``key``'s bucket: ``None`` if allowed, else seconds to wait."""
        if not self.is_enabled:
            return None
        now = self._clock()
        tokens, last = self._buckets.pop(key, (float(self.burst), now))
        # Multiply before dividing: whole seconds at whole rates then refill exact amounts.
        elapsed = max(0.0, now - last)
        tokens = min(float(self.burst), tokens + elapsed * self.per_minute / 60)
        wait: float | None = None
        if tokens + _EPSILON >= 1:
            tokens = max(0.0, tokens - 1)
        else:
            wait = (1 - tokens) * 60 / self.per_minute
        self._buckets[key] = (tokens, now)
        while len(self._buckets) > self.max_buckets:
            self._buckets.popitem(last=False)
        return wait

    def keys(self) -> list[str]:
        """The bucket keys held, least recently used first (for tests and diagnostics)."""
        return list(self._buckets)


ADDRESS_FACTOR = 4
"""An address may spend this many keys' worth of requests (several agents behind one NAT)."""


def bucket_key(scope: Scope) -> str:
    """Who is calling: ``sha256(bearer token)`` hex if one is sent, else ``"ip:<client host>"``.

    The token is hashed at once so it is never held (or dumped) in clear. The key is not
    validated here: authentication happens later, in the app.
    """
    for name, value in scope.get("headers") or ():
        if name.lower() == b"authorization":
            scheme, _, token = value.decode("latin-1").strip().partition(" ")
            token = token.strip()
            if scheme.lower() == "bearer" and token:
                return hashlib.sha256(token.encode("latin-1")).hexdigest()
            break  # only the first Authorization header counts, as with Starlette's headers.get
    return address_key(scope)


def address_key(scope: Scope) -> str:
    """The bucket key of the client's address, whatever credentials it sends."""
    client = scope.get("client")
    return f"ip:{client[0] if client else 'unknown'}"


def retry_after_seconds(wait: float) -> int:
    """Whole seconds for ``Retry-After``: rounded up, so retrying then succeeds; at least 1."""
    return max(1, math.ceil(wait - _EPSILON))


class RateLimit:
    """ASGI middleware: one token per HTTP request per caller; an empty bucket answers 429.

    The refusal happens before the app runs and uses the app's error shape, with
    ``Retry-After`` in whole seconds. Health checks and metrics scrapes are exempt so probes
    never see a 429; non-HTTP scopes (lifespan, websocket) pass through untouched.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        per_minute: int,
        burst: int,
        clock: Callable[[], float] = time.monotonic,
        max_buckets: int = 10_000,
        # Probes and scrapers must not read a 429 as an outage (/metrics has its own gate).
        exempt_paths: tuple[str, ...] = ("/health", "/api/v1/health", "/metrics"),
    ) -> None:
        self.app = app
        self.limiter = TokenBucketLimiter(
            per_minute=per_minute, burst=burst, clock=clock, max_buckets=max_buckets
        )
        # Every bearer value gets its own bucket before anyone checks it is a real key, so
        # a caller inventing a new token per request would never run dry: its address has a
        # bucket too (a few keys' worth, for several agents behind one address).
        self.by_address = TokenBucketLimiter(
            per_minute=per_minute * ADDRESS_FACTOR,
            burst=burst * ADDRESS_FACTOR,
            clock=clock,
            max_buckets=max_buckets,
        )
        self.exempt_paths = frozenset(exempt_paths)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or not self.limiter.is_enabled
            or scope.get("path") in self.exempt_paths
        ):
            await self.app(scope, receive, send)
            return
        key = bucket_key(scope)
        wait = None if key.startswith("ip:") else self.by_address.check(address_key(scope))
        if wait is None:
            wait = self.limiter.check(key)
        if wait is None:
            await self.app(scope, receive, send)
            return
        await self._reject(send, retry_after_seconds(wait))

    async def _reject(self, send: Send, retry_after: int) -> None:
        message = f"too many requests: retry after {retry_after} s"
        body = error_body("rate_limited", message, None, [{"retry_after": retry_after}])
        raw = json.dumps(body).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 429,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(raw)).encode()),
                    (b"retry-after", str(retry_after).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": raw})
