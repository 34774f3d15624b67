"""A background job's log line is a sentence for the operator (whole run ids, to act on), and
its data rides as fields of the JSON log line (``KIOKU_LOG_FORMAT=json``)."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime, timedelta

import pytest

from kioku.api.log_json import JsonFormatter
from kioku.models import ContextCreate, StateSet
from kioku.runtime import Runtime
from kioku.service.jobs import JobRunner, sweep_expired_state
from kioku.service.sleep import sleep_job
from tests.conftest import ManualClock


@pytest.fixture
def runtime(runtime_on_each_backend: Runtime) -> Runtime:
    return runtime_on_each_backend


def job_lines(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "kioku.service.jobs"]


def test_a_scheduled_sleep_is_logged_as_a_sentence_with_its_runs(
    runtime: Runtime, clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    clock.now = datetime.now(UTC) + timedelta(days=1)
    principal = runtime.local_principal("rest")
    notes = runtime.contexts.create_context(
        principal, ContextCreate(name="notes", sleep_mode="full")
    )
    job = sleep_job(runtime.store, runtime.sleep.run_context, timedelta(hours=1))
    runner = JobRunner(runtime.store, [job], holder="replica-0", clock=clock)
    with caplog.at_level(logging.INFO, logger="kioku.service.jobs"):
        assert runner.run_due() == ["sleep"]
    (record,) = job_lines(caplog)
    (run,) = runtime.store.list_sleep_runs(principal.workspace_id, notes.id)
    default = runtime.contexts.resolve(principal, "default")
    (default_run,) = runtime.store.list_sleep_runs(principal.workspace_id, default.id)
    assert record.getMessage() == (
        f"job sleep ran on replica-0: slept 2 contexts: default (run {default_run.id}), "
        f"notes (run {run.id})"
    )
    line = json.loads(JsonFormatter().format(record))
    assert (line["job"], line["holder"]) == ("sleep", "replica-0")
    assert [r["run_id"] for r in line["result"]] == [default_run.id, run.id]
    assert line["result"][1]["context_id"] == notes.id and line["result"][1]["context"] == "notes"

    clock.now += timedelta(minutes=10)  # the job is due again, no context is
    with caplog.at_level(logging.INFO, logger="kioku.service.jobs"):
        caplog.clear()
        runner.run_due()
    assert job_lines(caplog)[0].getMessage() == "job sleep ran on replica-0: no context was due"


def test_a_sweep_says_what_it_removed_in_words(
    runtime: Runtime, clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    principal = runtime.local_principal("rest")
    runtime.state.set_state(principal, "default", "k", StateSet(value=1, ttl_seconds=1))
    clock.advance(seconds=2)
    runner = JobRunner(
        runtime.store, [sweep_expired_state(runtime.store, timedelta(minutes=1))],
        holder="replica-0", clock=clock,
    )  # fmt: skip
    with caplog.at_level(logging.INFO, logger="kioku.service.jobs"):
        runner.run_due()
    (record,) = job_lines(caplog)
    assert record.getMessage() == "job state-sweep ran on replica-0: deleted 1 expired state key"
    assert json.loads(JsonFormatter().format(record))["result"] == 1
