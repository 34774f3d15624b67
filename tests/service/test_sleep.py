"""Sleep through the service, on the fake embedder: deterministic phases, the report,
rollback to a byte-identical export, permissions, the schedule's claims."""

from __future__ import annotations

import io
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from kioku.embeddings.fake import FakeEmbedder
from kioku.errors import ConflictError, ForbiddenError, NotFoundError
from kioku.models import ContextCreate, FeedbackCreate, MemoryCreate, MemoryUpdate, StateSet
from kioku.models.sleep import SleepRequest
from kioku.runtime import Runtime, open_runtime
from kioku.service.hebbian import declare_edges
from kioku.service.jobs import JobRunner
from kioku.service.principal import Principal
from kioku.service.sleep import SleepConfig, SleepService, sleep_job
from kioku.service.sleep import merge as merge_phase
from kioku.service.sleep.importance import rescored
from kioku.service.sleep.runner import RunContext, run_sleep
from kioku.service.transfer import export_workspace
from tests.conftest import ManualClock, make_settings
from tests.postgres import empty_postgres_database


def export(runtime: Runtime) -> bytes:
    out = io.StringIO()
    export_workspace(runtime.store, "default", datetime.now(UTC), out.write)
    return out.getvalue().encode()


def remember(runtime: Runtime, principal: Principal, summary: str, **kw: object) -> str:
    data = MemoryCreate(summary=summary, **kw)  # type: ignore[arg-type]
    return runtime.memories.remember(principal, "notes", data).id


@pytest.fixture
def notes(runtime: Runtime, principal: Principal, clock) -> dict[str, str]:
    return make_notes(runtime, principal, clock)


@pytest.fixture(params=["sqlite", "postgres"])
def any_runtime(
    request: pytest.FixtureRequest, tmp_path: Path, clock: ManualClock
) -> Iterator[Runtime]:
    """A runtime on SQLite, or on PostgreSQL as a role row-level security binds."""
    overrides: dict[str, object] = {}
    if request.param == "postgres":
        url = request.getfixturevalue("postgres_database")
        empty_postgres_database(url)
        overrides["database_url"] = url
    rt = open_runtime(make_settings(tmp_path, **overrides), embedder=FakeEmbedder(), clock=clock)
    try:
        yield rt
    finally:
        rt.close()


def make_notes(runtime: Runtime, principal: Principal, clock: ManualClock) -> dict[str, str]:
    clock.now = datetime.now(UTC) + timedelta(days=1)
    runtime.contexts.create_context(principal, ContextCreate(name="notes", sleep_mode="full"))
    connector = Principal(principal.workspace_id, "owner", "connector")
    ids = {
        "old": remember(runtime, principal, "Alice drinks green tea every morning", tags=["a"]),
        "other": remember(runtime, principal, "Bob maintains the billing service"),
        "pin1": remember(runtime, principal, "Never deploy on Fridays", delivery_mode="always"),
        "pin2": remember(runtime, principal, "Never deploy on Fridays", delivery_mode="always"),
        "ext": runtime.memories.remember(
            connector, "notes", MemoryCreate(summary="Alice drinks green tea every morning")
        ).id,
        "new": remember(runtime, principal, "Alice drinks green tea every morning", tags=["b"]),
    }
    declare_edges(
        runtime.store,
        principal.workspace_id,
        runtime.contexts.resolve(principal, "notes").id,
        [(ids["old"], ids["other"])],
        0.4,
        clock.now - timedelta(days=14),
    )
    runtime.feedback.feedback(
        principal, "notes", FeedbackCreate(memory_id=ids["other"], helpful=True)
    )
    return ids


def test_sleep_merges_duplicates_under_the_rules_and_rolls_back_exactly(
    any_runtime: Runtime, clock: ManualClock
) -> None:
    runtime = any_runtime
    principal = runtime.local_principal("rest")
    notes = make_notes(runtime, principal, clock)
    ws = principal.workspace_id
    ctx = runtime.contexts.resolve(principal, "notes").id
    runtime.state.set_state(principal, "notes", "k", StateSet(value=1, ttl_seconds=1))
    before, edges_before = export(runtime), runtime.store.list_edges(ws, ctx)

    report = runtime.sleep.sleep(principal, "notes")
    assert report.status == "done" and report.trigger == "manual"
    assert report.summary["merge"]["merged"] == 1
    old = runtime.store.get_memory(ws, notes["old"])
    new = runtime.store.get_memory(ws, notes["new"])
    assert old is not None and new is not None
    assert old.superseded_by == notes["new"] and new.tags == ["b", "a"]  # newer wins
    for untouched in ("pin1", "pin2", "ext", "other"):  # pinned, other tier, distinct
        row = runtime.store.get_memory(ws, notes[untouched])
        assert row is not None and row.superseded_by is None, untouched
    # The edge decayed one half-life (≈0.2) and moved to the winner with the merge.
    (edge,) = runtime.store.list_edges(ws, ctx)
    assert {edge.source_id, edge.target_id} == {notes["new"], notes["other"]}
    assert edge.weight == pytest.approx(0.2, rel=1e-3)
    # Helpful feedback raised "other" by 0.2 * 1/2.
    other = runtime.store.get_memory(ws, notes["other"])
    assert other is not None and other.importance == rescored(0.5, 1, 0, 0) == 0.6
    kinds = [action.kind for action in report.actions]
    assert {"supersede", "tags", "edge", "importance"} <= set(kinds)
    assert runtime.sleep.sleep_report(principal, report.run_id) == report
    assert runtime.stats.stats(principal, "notes").last_sleep == report.started_at

    rolled = runtime.sleep.rollback_sleep(principal, report.run_id)
    assert rolled.run.status == "rolled_back" and rolled.skipped == []
    assert export(runtime) == before
    assert runtime.store.list_edges(ws, ctx) == edges_before


def test_importance_rescoring_is_idempotent_and_respects_a_later_edit(
    runtime: Runtime, principal: Principal, notes: dict[str, str], clock
) -> None:
    runtime.sleep.sleep(principal, "notes")
    clock.advance(hours=1)
    second = runtime.sleep.sleep(principal, "notes")
    assert second.summary["importance"]["rescored"] == 0  # the same signals: no drift
    from kioku.models import MemoryUpdate

    runtime.memories.update_memory(principal, "notes", notes["other"], MemoryUpdate(importance=0.1))
    clock.advance(hours=1)
    runtime.sleep.sleep(principal, "notes")
    row = runtime.store.get_memory(principal.workspace_id, notes["other"])
    assert row is not None and row.importance == rescored(0.1, 1, 0, 0)


def test_rollback_needs_admin_and_goes_newest_first(
    runtime: Runtime, principal: Principal, notes: dict[str, str], clock
) -> None:
    first = runtime.sleep.sleep(principal, "notes", SleepRequest(mode="edges_only"))
    assert set(first.summary) == {"sweep", "edges"}
    clock.advance(hours=1)
    second = runtime.sleep.sleep(principal, "notes")
    member = Principal(principal.workspace_id, "member", "rest")
    viewer = Principal(principal.workspace_id, "viewer", "rest")
    with pytest.raises(ForbiddenError):
        runtime.sleep.rollback_sleep(member, second.run_id)
    with pytest.raises(ForbiddenError):
        runtime.sleep.sleep(viewer, "notes")
    assert runtime.sleep.sleep_report(viewer, second.run_id).run_id == second.run_id
    with pytest.raises(ConflictError, match="roll it back first"):
        runtime.sleep.rollback_sleep(principal, first.run_id)
    runtime.sleep.rollback_sleep(principal, second.run_id)
    runtime.sleep.rollback_sleep(principal, first.run_id)


def test_runs_are_invisible_to_another_workspace(
    runtime: Runtime, principal: Principal, other_principal: Principal, notes: dict[str, str]
) -> None:
    report = runtime.sleep.sleep(principal, "notes")
    with pytest.raises(NotFoundError):
        runtime.sleep.sleep_report(other_principal, report.run_id)
    with pytest.raises(NotFoundError):
        runtime.sleep.rollback_sleep(other_principal, report.run_id)
    with pytest.raises(NotFoundError):
        runtime.sleep.sleep(other_principal, "notes")


def test_two_replicas_scheduling_one_context_run_it_once(
    runtime: Runtime, principal: Principal, notes: dict[str, str], clock
) -> None:
    every = timedelta(hours=1)
    runners = [
        JobRunner(runtime.store, [sleep_job(runtime.store, runtime.sleep.run_context, every)],
                  holder=f"replica-{i}", clock=clock)
        for i in range(2)
    ]  # fmt: skip
    assert [runner.run_due() for runner in runners] == [["sleep"], []]
    ctx = runtime.contexts.resolve(principal, "notes")
    runs = runtime.store.list_sleep_runs(principal.workspace_id, ctx.id)
    assert len(runs) == 1 and runs[0].trigger == "schedule"
    # The default context is edges_only: it ran too, once; nothing of a context set to off.
    clock.advance(hours=2)
    assert sorted(len(r.run_due()) for r in runners) == [0, 1]
    assert len(runtime.store.list_sleep_runs(principal.workspace_id, ctx.id)) == 2


def test_a_run_that_dies_half_way_leaves_a_consistent_store_and_rolls_back(
    runtime: Runtime, principal: Principal, clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock.now = datetime.now(UTC) + timedelta(days=1)
    runtime.contexts.create_context(principal, ContextCreate(name="notes", sleep_mode="full"))
    for text in ("alpha beta", "gamma delta", "epsilon zeta"):
        for _ in range(2):
            remember(runtime, principal, text)
    before = export(runtime)
    real_merge = merge_phase.sleep_merge
    calls = 0

    def dying_merge(*args: object, **kwargs: object):
        nonlocal calls
        calls += 1
        if calls == 2:
            raise RuntimeError("power cut")
        return real_merge(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(merge_phase, "sleep_merge", dying_merge)
    report = runtime.sleep.sleep(principal, "notes")
    assert report.status == "failed" and "power cut" in (report.error or "")
    # The first merge happened and is logged; the second did not happen at all.
    assert [a.kind for a in report.actions] == ["supersede"]
    assert runtime.stats.stats(principal, "notes").superseded == 1
    monkeypatch.undo()
    runtime.sleep.rollback_sleep(principal, report.run_id)
    assert export(runtime) == before


def test_a_run_whose_process_died_is_refused_rollback_until_stale_then_rolls_back(
    runtime: Runtime, principal: Principal, clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock.now = datetime.now(UTC) + timedelta(days=1)
    runtime.contexts.create_context(principal, ContextCreate(name="notes", sleep_mode="full"))
    for text in ("alpha beta", "gamma delta"):
        for _ in range(2):
            remember(runtime, principal, text)
    before = export(runtime)

    def killed(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt("kill -9: nothing after this line runs")

    # The process dies after its merges, before it can record the end (or a failure).
    monkeypatch.setattr(runtime.store, "finish_sleep_run", killed)
    with pytest.raises(KeyboardInterrupt):
        runtime.sleep.sleep(principal, "notes")
    monkeypatch.undo()
    run_id = runtime.stats.stats(principal, "notes").last_sleep_run_id
    assert run_id is not None
    assert runtime.sleep.sleep_report(principal, run_id).status == "running"
    assert runtime.stats.stats(principal, "notes").superseded == 2
    with pytest.raises(ConflictError):  # it might still be running somewhere
        runtime.sleep.rollback_sleep(principal, run_id)
    clock.advance(seconds=runtime.settings.sleep.stale_seconds + 1)
    undone = runtime.sleep.rollback_sleep(principal, run_id)
    assert undone.run.status == "rolled_back" and "abandoned" in (undone.run.error or "")
    assert export(runtime) == before


def test_templated_notes_are_kept_apart_and_listed_up_to_a_cap(
    any_runtime: Runtime, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = any_runtime
    principal = runtime.local_principal("rest")
    clock.now = datetime.now(UTC) + timedelta(days=1)
    runtime.contexts.create_context(principal, ContextCreate(name="notes", sleep_mode="full"))
    ids = [remember(runtime, principal, f"Deployed build {1001 + i} to staging") for i in range(6)]
    monkeypatch.setattr(merge_phase, "KEPT_APART_LISTED", 5)
    loose = SleepService(runtime.store, runtime.contexts, SleepConfig(merge_threshold=0.0))

    report = loose.sleep(principal, "notes")
    # 15 near-duplicate pairs, every one two facts: nothing merged, five listed, all counted.
    assert not [a for a in report.actions if a.kind == "supersede"]
    assert report.summary["merge"] == {
        "considered": 6, "merged": 0, "kept_apart": 15, "kept_apart_unlisted": 10,
    }  # fmt: skip
    assert len(report.kept_apart) == 5 and report.summary["rejected"] == {"merge": 5}
    for kept in report.kept_apart:
        assert set(kept.memory_ids) <= set(ids)
        assert [d.kind for d in kept.differences] == ["number"]
        assert "they differ in number " in kept.reason


def test_a_memory_edited_after_the_guard_read_it_is_not_merged(
    any_runtime: Runtime, clock: ManualClock
) -> None:
    """The guard compares texts read before the merge's transaction: a merge whose memory was
    edited in between (INV-1001 became INV-1002) does not happen."""
    runtime = any_runtime
    principal = runtime.local_principal("rest")
    clock.now = datetime.now(UTC) + timedelta(days=1)
    runtime.contexts.create_context(principal, ContextCreate(name="notes", sleep_mode="full"))
    for _ in range(2):
        remember(runtime, principal, "Invoice INV-1001 was paid on March 3")
    outcomes: list[str] = []

    def edit_then_merge(run: RunContext) -> dict[str, object]:
        rows, _ = merge_phase.candidates(run)
        edited = MemoryUpdate(summary="Invoice INV-1002 was paid on March 3")
        runtime.memories.update_memory(principal, "notes", rows[0].id, edited)
        outcomes.append(merge_phase.merge_pair(run, "merge", rows[0], rows[1], "read before"))
        return {}

    context = runtime.contexts.resolve(principal, "notes")
    run_sleep(
        runtime.store, principal.workspace_id, context, [("merge", edit_then_merge)],
        config=SleepConfig(), clock=clock, trigger="manual",
    )  # fmt: skip
    assert outcomes == ["unchanged"]
    assert runtime.stats.stats(principal, "notes").superseded == 0
