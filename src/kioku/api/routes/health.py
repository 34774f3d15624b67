"""``GET /health``: liveness and what the server runs on."""

from __future__ import annotations

from fastapi import APIRouter

from kioku import __version__
from kioku.api.deps import RuntimeDep
from kioku.models import Health

router = APIRouter(tags=["health"])


@router.get("/health", operation_id="health")
def health(runtime: RuntimeDep) -> Health:
    """Always ``ok`` when the server answers; says which database and embedder it uses."""
    database = runtime.health.database_health()
    return Health(
        status="ok",
        version=__version__,
        database=database.backend,
        embedder=runtime.embedder.name if runtime.embedder else "none",
        embedding_queue=database.embedding_queue,
    )
