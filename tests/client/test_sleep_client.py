"""Sleep over REST through both SDK clients: run, report, rollback, typed errors."""

from __future__ import annotations

import pytest

from kioku import Client, ConflictError, NotFoundError


def test_sleep_report_and_rollback_through_the_sdk(kioku: Client) -> None:
    kioku.create_context(name="notes", sleep_mode="full")
    for _ in range(2):
        kioku.remember("notes", "The staging database listens on port 5433", wait=True)
    run = kioku.sleep("notes")
    assert run.status == "done" and run.summary["merge"]["merged"] == 1
    assert [a.kind for a in run.actions][:1] == ["supersede"]
    assert kioku.sleep_report(run.run_id) == run
    assert kioku.stats("notes").last_sleep_run_id == run.run_id
    assert len(kioku.list_memories("notes").items) == 1  # the loser is superseded
    rolled = kioku.rollback_sleep(run.run_id)
    assert rolled.run.status == "rolled_back" and rolled.undone == 1
    assert len(kioku.list_memories("notes").items) == 2
    with pytest.raises(ConflictError):
        kioku.rollback_sleep(run.run_id)
    with pytest.raises(NotFoundError):
        kioku.sleep_report("no-such-run")
    edges_only = kioku.sleep("notes", mode="edges_only")
    assert set(edges_only.summary) == {"sweep", "edges"}
