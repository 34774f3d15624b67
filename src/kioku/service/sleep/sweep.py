"""Phase 1: delete the context's expired state keys (reads hide them already)."""

from __future__ import annotations

from typing import Any

from kioku.service.sleep.log import log_sleep_action
from kioku.service.sleep.runner import RunContext


def sweep_state(run: RunContext) -> dict[str, Any]:
    """Sweep expired keys; logged as a count. Rollback does not bring them back: an expired
    key is already absent for every reader, so restoring it would change nothing visible."""
    deleted = run.store.sweep_state(run.workspace_id, run.context.id, run.now)
    if deleted:
        log_sleep_action(
            run.store, run.workspace_id, run.run_id, "sweep", "sweep_state", run.context.id,
            run.now,
            after={"deleted": deleted}, note="expired state keys; not restored by rollback",
        )  # fmt: skip
    return {"expired_state_keys": deleted}
