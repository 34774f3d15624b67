"""Connector ingestion (``/contexts/{id}/ingest``) and purge (``/contexts/{id}/purge``,
``/purge``)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Header

from kioku.api.deps import PrincipalDep, RuntimeDep
from kioku.models import IngestRequest, IngestResult, PurgeResult, PurgeSource

router = APIRouter(tags=["connectors"])


@router.post("/contexts/{context_id}/ingest", operation_id="ingest")
def ingest(
    context_id: str,
    body: IngestRequest,
    runtime: RuntimeDep,
    principal: PrincipalDep,
    idempotency_key: Annotated[
        str | None,
        Header(
            alias="Idempotency-Key",
            description="Replaying a request with the same key returns the first answer and "
            "writes nothing.",
        ),
    ] = None,
) -> IngestResult:
    """Upsert or delete up to 100 documents by external id (a connector key, or an admin).

    Writes are stamped ``source_type=connector``, so they are always ``external``.
    """
    return runtime.connectors.ingest(principal, context_id, body, idempotency_key=idempotency_key)


@router.post("/contexts/{context_id}/purge", operation_id="purge_context")
def purge_context(context_id: str, runtime: RuntimeDep, principal: PrincipalDep) -> PurgeResult:
    """Erase every memory of the context and every trace of them (admin); keep the context."""
    return runtime.purge.purge_context(principal, context_id)


@router.post("/purge", operation_id="purge_source")
def purge_source(body: PurgeSource, runtime: RuntimeDep, principal: PrincipalDep) -> PurgeResult:
    """Erase every memory whose ``source_uri`` starts with a prefix, every trace of them."""
    return runtime.purge.purge_source(principal, body)
