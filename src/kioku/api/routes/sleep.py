"""``/contexts/{id}/sleep`` and ``/sleep/{run_id}``: consolidation now, its report, rollback."""

from __future__ import annotations

from fastapi import APIRouter

from kioku.api.deps import PrincipalDep, RuntimeDep
from kioku.models.sleep import SleepReport, SleepRequest, SleepRollback

router = APIRouter(tags=["sleep"])


@router.post("/contexts/{context_id}/sleep", operation_id="sleep")
def sleep(
    context_id: str,
    runtime: RuntimeDep,
    principal: PrincipalDep,
    body: SleepRequest | None = None,
) -> SleepReport:
    """Consolidate a context now: sweep expired state, decay and prune edges, and in ``full``
    mode merge near-duplicates, re-score importance and run the optional LLM phases. Returns
    the run with every action; 409 while another run of the context is in progress."""
    return runtime.sleep.sleep(principal, context_id, body)


@router.get("/sleep/{run_id}", operation_id="sleep_report")
def sleep_report(run_id: str, runtime: RuntimeDep, principal: PrincipalDep) -> SleepReport:
    """One Sleep run with every action it logged (values before and after)."""
    return runtime.sleep.sleep_report(principal, run_id)


@router.post("/sleep/{run_id}/rollback", operation_id="rollback_sleep")
def rollback_sleep(run_id: str, runtime: RuntimeDep, principal: PrincipalDep) -> SleepRollback:
    """Restore what a run changed (admin). Only the context's latest run that is not rolled
    back; 409 if a memory it touched was changed since."""
    return runtime.sleep.rollback_sleep(principal, run_id)
