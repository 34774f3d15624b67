"""The one composition root: settings → store, embedder, services."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

from threadpoolctl import threadpool_limits

from kioku.clock import Clock, system_clock
from kioku.embeddings import Embedder, make_embedder
from kioku.service.audit import AuditService
from kioku.service.bench import BenchService
from kioku.service.connectors import ConnectorService
from kioku.service.contexts import ContextService
from kioku.service.delivery import DeliveryService
from kioku.service.embedding import EmbeddingScheduler
from kioku.service.feedback import FeedbackService
from kioku.service.forgetting import ForgetService
from kioku.service.graph import Associations, GraphService
from kioku.service.harness import HarnessService
from kioku.service.health import HealthService
from kioku.service.jobs import Job, JobRunner, sweep_expired_state, sweep_oauth, sweep_verdicts
from kioku.service.keys import KeyService
from kioku.service.memories import MemoryService
from kioku.service.model_rerank import ModelRerankConfig, ModelReranking
from kioku.service.oauth import OAuthService
from kioku.service.principal import Channel, Principal
from kioku.service.purge import PurgeService
from kioku.service.recall import RecallService
from kioku.service.sleep import LLMConfig, SleepConfig, SleepService, sleep_job
from kioku.service.state import StateService
from kioku.service.stats import StatsService
from kioku.service.workspaces import WorkspaceService
from kioku.settings import Settings
from kioku.storage import open_store
from kioku.storage.base import Store

DEFAULT_WORKSPACE = "default"
DEFAULT_CONTEXT = "default"


@dataclass
class Runtime:
    """Everything a surface needs, built once per process."""

    settings: Settings
    store: Store
    embedder: Embedder | None
    embedding: EmbeddingScheduler | None
    contexts: ContextService
    memories: MemoryService
    recall: RecallService
    graph: GraphService
    delivery: DeliveryService
    feedback: FeedbackService
    state: StateService
    stats: StatsService
    keys: KeyService
    audit: AuditService
    default_workspace_id: str
    clock: Clock = system_clock
    jobs: JobRunner | None = field(default=None)
    """Periodic upkeep, claimed in the database so one replica runs each period."""
    """Where every time-driven lane reads "now" (tests pass a hand-moved clock)."""
    owns_embedder: bool = True
    """False when the caller passed the embedder in (it closes it, e.g. a shared test model)."""
    sleep: SleepService = field(init=False)
    """Consolidation (docs/concepts.md): run now, report, roll back; scheduled through ``jobs``."""
    connectors: ConnectorService = field(init=False)
    """Ingestion by external id (connector workers, Slack and Markdown imports)."""
    purge: PurgeService = field(init=False)
    """Erasure of a context's contents or of a source, every trace of it."""
    forgetting: ForgetService = field(init=False)
    """Forget by query: a preview, then a confirmation of exactly that preview."""
    oauth: OAuthService = field(init=False)
    """OAuth grants for MCP clients (consent, codes, tokens), each standing for an API key."""
    harness: HarnessService = field(init=False)
    """What agent harnesses' hooks add to a turn (Claude Code: pinned rules, memories)."""
    health: HealthService = field(init=False)
    """The database's and this process's status, for ``/health`` and ``/metrics``."""
    workspaces: WorkspaceService = field(init=False)
    """Workspaces by name, for the operator's local commands (``kioku keys``)."""
    bench: BenchService = field(init=False)
    """What ``kioku bench`` and ``kioku eval`` need beneath the operations (bulk vectors)."""

    def local_principal(self, channel: Channel) -> Principal:
        """The owner of the default workspace (dev mode, CLI, stdio MCP: no key needed)."""
        return Principal(workspace_id=self.default_workspace_id, role="owner", channel=channel)

    def start_background(self) -> None:
        """Start background workers (the embedding queue, periodic jobs)."""
        if self.embedding is not None and self.settings.embedder.background:
            self.embedding.start()
        if self.jobs is not None:
            self.jobs.start()

    def close(self) -> None:
        """Stop workers and release the store."""
        if self.jobs is not None:
            self.jobs.stop()
        if self.embedding is not None:
            self.embedding.stop()
        if self.recall.model_rerank is not None:
            self.recall.model_rerank.close()
        close_embedder = getattr(self.embedder, "close", None)
        if close_embedder is not None and self.owns_embedder:
            close_embedder()
        self.store.close()


def open_runtime(
    settings: Settings, *, embedder: Embedder | None = None, clock: Clock = system_clock
) -> Runtime:
    """Build the runtime. ``embedder`` overrides the configured one (tests pass a fake);
    ``clock`` is where the time-driven lanes (state expiry, trigger windows) read "now"."""
    # recall runs its two legs on two threads; a multi-threaded BLAS spinning after each
    # vector search steals the core the lexical leg needs (measured: hybrid p50 at 100k
    # memories 70 → 50 ms with one BLAS thread).
    threadpool_limits(limits=1, user_api="blas")
    store = open_store(
        settings.database.url,
        pool_size=settings.database.pool_size,
        lexical_index_min=settings.recall.lexical_index_min,
    )
    owns_embedder = embedder is None
    if embedder is None:
        embedder = make_embedder(settings)
    scheduler = (
        EmbeddingScheduler(
            store,
            embedder,
            queue_limit=settings.embedder.queue_size,
            lease=timedelta(seconds=settings.embedder.lease_seconds),
            item_budget=timedelta(seconds=settings.embedder.item_seconds),
        )
        if embedder is not None
        else None
    )
    workspace = store.ensure_workspace(DEFAULT_WORKSPACE)
    contexts = ContextService(store, clock)
    associations = Associations(store, contexts, clock=clock)
    runtime = Runtime(
        settings=settings,
        store=store,
        embedder=embedder,
        embedding=scheduler,
        contexts=contexts,
        memories=MemoryService(
            store,
            contexts,
            scheduler,
            max_content_bytes=settings.limits.max_content_bytes,
            embed_async=settings.embedder.background,
            graph=associations,
            clock=clock,
        ),
        recall=RecallService(
            store,
            contexts,
            embedder,
            fetch_factor=settings.recall.fetch_factor,
            graph=associations,
            model_rerank=_model_reranking(settings),
        ),
        graph=GraphService(store, contexts, associations),
        delivery=DeliveryService(store, contexts, clock=clock),
        feedback=FeedbackService(store, contexts, clock=clock, graph=associations),
        stats=StatsService(store, contexts, clock=clock),
        keys=KeyService(store, contexts, clock=clock),
        audit=AuditService(store),
        state=StateService(
            store, contexts, max_value_bytes=settings.limits.max_state_bytes, clock=clock
        ),
        default_workspace_id=workspace.id,
        clock=clock,
        jobs=JobRunner(store, _periodic_jobs(settings, store), clock=clock),
        owns_embedder=owns_embedder,
    )
    contexts.ensure_context(runtime.local_principal("cli"), DEFAULT_CONTEXT)
    runtime.sleep = SleepService(store, contexts, _sleep_config(settings), clock=clock)
    runtime.connectors = ConnectorService(store, contexts, runtime.memories, clock=clock)
    runtime.purge = PurgeService(store, contexts)
    runtime.forgetting = ForgetService(store, contexts, runtime.recall, clock)
    runtime.oauth = OAuthService(store, runtime.keys, clock)
    runtime.harness = HarnessService(
        store, runtime.delivery, runtime.recall, runtime.memories, clock
    )
    runtime.health = HealthService(store)
    runtime.workspaces = WorkspaceService(store)
    runtime.bench = BenchService(store)
    if settings.sleep.interval_seconds > 0 and runtime.jobs is not None:
        every = timedelta(seconds=settings.sleep.interval_seconds)
        runtime.jobs.jobs.append(sleep_job(store, runtime.sleep.run_context, every))
    return runtime


def _model_reranking(settings: Settings) -> ModelReranking | None:
    """The model reranker step of recall, when ``KIOKU_RERANKER_URL`` names one."""
    if not settings.reranker.url:
        return None
    from kioku.rerankers.http import HTTPReranker

    reranker = HTTPReranker(
        settings.reranker.url,
        format=settings.reranker.format,
        model=settings.reranker.model,
        api_key=settings.reranker.api_key.get_secret_value(),
        timeout=settings.reranker.timeout_seconds,
    )
    config = ModelRerankConfig(
        top_n=settings.reranker.top_n,
        weight=settings.reranker.weight,
        timeout_seconds=settings.reranker.timeout_seconds,
        max_chars=settings.reranker.max_chars,
        cooldown_seconds=settings.reranker.cooldown_seconds,
    )
    return ModelReranking(reranker, config)


def _sleep_config(settings: Settings) -> SleepConfig:
    llm = None
    if settings.sleep.llm_base_url:
        llm = LLMConfig(
            base_url=settings.sleep.llm_base_url,
            model=settings.sleep.llm_model,
            api_key=settings.sleep.llm_api_key,
            max_calls=settings.sleep.llm_max_calls,
        )
    return SleepConfig(
        max_memories=settings.sleep.max_memories,
        merge_threshold=settings.sleep.merge_threshold,
        edge_half_life=timedelta(days=settings.sleep.edge_half_life_days),
        edge_floor=settings.sleep.edge_floor,
        stale_after=timedelta(seconds=settings.sleep.stale_seconds),
        llm=llm,
    )


def _periodic_jobs(settings: Settings, store: Store) -> list[Job]:
    jobs: list[Job] = [sweep_verdicts(store)]
    if settings.jobs.state_sweep_seconds > 0:
        jobs.append(
            sweep_expired_state(store, timedelta(seconds=settings.jobs.state_sweep_seconds))
        )
    if settings.jobs.oauth_sweep_seconds > 0:
        jobs.append(sweep_oauth(store, timedelta(seconds=settings.jobs.oauth_sweep_seconds)))
    return jobs
