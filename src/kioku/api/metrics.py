"""``/metrics``: Prometheus's text format, from the official client library.

What is measured: every HTTP request by operation (the route's operation id; ``ui`` and ``mcp``
for those surfaces), method and status, with its latency; each MCP message by method, and each
MCP tool call by tool and outcome with its latency (``kioku.api.mcp_calls``); each recall
leg's time; the embedding queue's depth and the age of its oldest item (read from the database
at scrape time, so every replica reports the shared queue); memories embedded; Sleep runs and
their actions; rate-limit refusals; on PostgreSQL, this process's connection pool (its size,
the borrowers waiting now, and in all how many had to wait and for how long). The counters
are this process's own (a replica each), without the client library's ``*_created`` twins.

Who may scrape: anyone under ``--dev`` (loopback only); otherwise a bearer of
``KIOKU_METRICS_TOKEN`` or an address in ``KIOKU_METRICS_ALLOW``. The check uses no API key
and writes no audit row, so scraping stays off the request path's auth and out of the log.
"""

from __future__ import annotations

import hmac
import ipaddress
import time
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.registry import Collector
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from kioku.api.errors import error_body
from kioku.runtime import Runtime
from kioku.service import telemetry
from kioku.settings import Settings

_METHODS = frozenset({"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"})
HTTP_BUCKETS = (0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0)
_LEG_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0)
_STAGE_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.5)
OPERATION = "kioku.operation"
"""A scope key an inner app sets to name its requests' ``operation`` (``/mcp``: ``mcp``)."""


class Metrics:
    """One app's registry, and the telemetry listener that feeds it."""

    def __init__(self, runtime: Callable[[], Runtime | None]) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter(
            "kioku_http_requests", "HTTP requests answered, by operation, method and status.",
            ["operation", "method", "status"], registry=r,
        )  # fmt: skip
        self.latency = Histogram(
            "kioku_http_request_duration_seconds", "Time to answer an HTTP request.",
            ["operation"], buckets=HTTP_BUCKETS, registry=r,
        )  # fmt: skip
        self.legs = Histogram(
            "kioku_recall_leg_duration_seconds",
            "Time of one recall leg (vector: query embedding included).",
            ["leg"], buckets=_LEG_BUCKETS, registry=r,
        )  # fmt: skip
        self.stages = Histogram(
            "kioku_recall_stage_duration_seconds",
            "Time of one stage of recall (service/ranking/pipeline.py; also scope, hits, "
            "model_rerank, related, learn).",
            ["stage"], buckets=_STAGE_BUCKETS, registry=r,
        )  # fmt: skip
        self.embeddings = Counter(
            "kioku_embeddings", "Memories made vector-searchable by this process.", registry=r
        )
        self.sleep_runs = Counter(
            "kioku_sleep_runs", "Sleep runs ended, by trigger and status.",
            ["trigger", "status"], registry=r,
        )  # fmt: skip
        self.sleep_actions = Counter(
            "kioku_sleep_actions", "What Sleep runs did, by phase and action (merged, pruned...).",
            ["phase", "action"], registry=r,
        )  # fmt: skip
        self.rate_limited = Counter(
            "kioku_rate_limited_requests", "Requests refused with 429 by the rate limiter.",
            registry=r,
        )  # fmt: skip
        r.register(_QueueCollector(runtime))
        r.register(_PoolCollector(runtime))
        r.register(_LexicalIndexCollector(runtime))
        telemetry.listen(self)

    # -- telemetry.Listener
    def recall_leg(self, leg: str, seconds: float) -> None:
        self.legs.labels(leg).observe(seconds)

    def recall_stage(self, stage: str, seconds: float) -> None:
        self.stages.labels(stage).observe(seconds)

    def embedded(self, count: int) -> None:
        self.embeddings.inc(count)

    def sleep_run(self, trigger: str, status: str, summary: Mapping[str, Any]) -> None:
        self.sleep_runs.labels(trigger, status).inc()
        for phase, counts in summary.items():
            if not isinstance(counts, Mapping):
                continue
            for action, value in counts.items():
                if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
                    self.sleep_actions.labels(phase, action).inc(value)

    def render(self) -> bytes:
        return generate_latest(_WithoutCreated(self.registry))


class _WithoutCreated(Collector):
    """The registry without the ``*_created`` sample the client library adds to every counter
    and histogram (a start timestamp Prometheus's text format does not use, one more series
    each). Dropped here, at render time, rather than by the library's process-wide switch
    (``disable_created_metrics``/``PROMETHEUS_DISABLE_CREATED_SERIES``), whose effect would
    depend on when it runs relative to the library's import."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry

    def collect(self) -> Iterator[Metric]:
        for family in self.registry.collect():
            created = f"{family.name}_created"
            family.samples = [s for s in family.samples if s.name != created]
            yield family


class _RuntimeCollector(Collector):
    """A collector that reads the runtime (``None`` until the app has one) when scraped."""

    def __init__(self, runtime: Callable[[], Runtime | None]) -> None:
        self._runtime = runtime


class _QueueCollector(_RuntimeCollector):
    """The embedding queue, read from the database when scraped."""

    def collect(self) -> Iterator[Metric]:
        runtime = self._runtime()
        if runtime is None:
            return
        queue = runtime.health.embedding_queue()
        since = queue.oldest
        age = max(0.0, (datetime.now(UTC) - since).total_seconds()) if since else 0.0
        yield GaugeMetricFamily(
            "kioku_embedding_queue_depth",
            "Memories waiting for a vector (all workspaces).",
            queue.depth,
        )
        yield GaugeMetricFamily(
            "kioku_embedding_queue_oldest_age_seconds",
            "How long the longest-waiting memory has waited for its vector (0: none waits).",
            age,
        )


class _PoolCollector(_RuntimeCollector):
    """The PostgreSQL connection pool of this process (psycopg_pool's own counters)."""

    def collect(self) -> Iterator[Metric]:
        runtime = self._runtime()
        stats = runtime.health.pool_statistics() if runtime else None
        if stats is None:  # SQLite: no pool
            return
        for name, value, text in (
            ("size", stats.size, "Connections open (idle or lent)."),
            ("max", stats.max, "Connections the pool may open (KIOKU_DB_POOL_SIZE)."),
            ("waiting", stats.waiting, "Borrowers waiting for a connection now."),
        ):
            yield GaugeMetricFamily(f"kioku_db_pool_{name}", text, value)
        for name, total, text in (
            ("requests_queued", stats.queued, "Borrows that had to wait."),
            ("wait_seconds", stats.wait_seconds, "Time borrowers spent waiting."),
        ):
            yield CounterMetricFamily(f"kioku_db_pool_{name}", text, value=total)


class _LexicalIndexCollector(_RuntimeCollector):
    """The lexical indexes of large scopes in this process (``lexical_sidecar``, both backends)."""

    def collect(self) -> Iterator[Metric]:
        runtime = self._runtime()
        stats = runtime.health.lexical_index_statistics() if runtime else None
        if stats is None:  # a backend without one
            return
        for name, value, text in (
            ("workspaces", stats.workspaces, "Workspaces whose lexical index this process holds."),
            ("memories", stats.memories, "Memories those indexes hold."),
            ("sync_age_seconds", stats.sync_age_seconds,
             "Seconds since the least recently synced index caught up with the database."),
        ):  # fmt: skip
            yield GaugeMetricFamily(f"kioku_lexical_index_{name}", text, value)
        searches = CounterMetricFamily(
            "kioku_lexical_index_searches",
            "Lexical searches of a large scope, by what answered: the index, or the database's "
            "own leg (index being built, or too many changes not yet synced).",
            labels=["answered_by"],
        )
        for by, count in stats.answered.items():
            searches.add_metric([by], count)
        yield searches


def operation_of(scope: Scope) -> str:
    """The label of the route that answered: what an inner app named it (``OPERATION``), else
    its operation id, else its name or mount."""
    if named := scope.get(OPERATION):
        return str(named)
    route = scope.get("route")
    if route is None:
        return "unmatched"
    if isinstance(route, Mount):
        return route.name or route.path.strip("/") or "mcp"
    return str(getattr(route, "operation_id", None) or getattr(route, "name", None) or "other")


class RequestMetrics:
    """ASGI middleware (outermost): counts and times every HTTP request."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        began = time.perf_counter()
        status = 500

        async def recording(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, recording)
        finally:
            operation = operation_of(scope)
            method = scope["method"] if scope["method"] in _METHODS else "other"
            self.metrics.requests.labels(operation, method, str(status)).inc()
            self.metrics.latency.labels(operation).observe(time.perf_counter() - began)
            if status == 429:
                self.metrics.rate_limited.inc()


def may_scrape(request: Request, settings: Settings) -> bool:
    """``--dev``, the metrics token, or an allowed address."""
    if settings.server.dev:
        return True
    token = settings.metrics.token
    scheme, _, sent = request.headers.get("authorization", "").partition(" ")
    if token and scheme.lower() == "bearer" and hmac.compare_digest(sent.strip(), token):
        return True
    client = request.client.host if request.client else None
    return client is not None and _in_networks(client, settings.metrics.allow)


def _in_networks(address: str, networks: str) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    for network in filter(None, (n.strip() for n in networks.split(","))):
        if ip in ipaddress.ip_network(network, strict=False):
            return True
    return False


def metrics_endpoint(metrics: Metrics, settings: Settings) -> Callable[[Request], Any]:
    async def endpoint(request: Request) -> Response:
        if not may_scrape(request, settings):
            message = (
                "metrics are not public: send KIOKU_METRICS_TOKEN as a bearer token, or allow "
                "the scraper's network in KIOKU_METRICS_ALLOW"
            )
            return JSONResponse(error_body("forbidden", message, None, []), status_code=403)
        return Response(metrics.render(), media_type=CONTENT_TYPE_LATEST)

    return endpoint
