"""Schema fuzzing of the REST API (schemathesis over the OpenAPI document, authenticated).

Every route gets generated requests, valid and invalid, with an owner's key; path ids point
at real objects so the bodies reach the service. The checks: no 5xx, and every response
conforms to the schema the route declares (status code, content type, body), and requests
the schema forbids are refused with a 4xx. About half of the JSON bodies are made hostile
(``tests/fuzz/hostile.py``: lone UTF-16 surrogates in strings and object keys, values nested
up to 900 deep), which the server must refuse with a 4xx too. Not checked: that every
schema-valid request is accepted (``positive_data_acceptance``): business rules rightly
refuse some (a key expiring in the past, an unknown memory id in a feedback body, a second
run while one is in progress), with a 4xx that names the field, which the other checks see.
The example count is bounded for ``make test``; ``make soak`` raises it
(``KIOKU_FUZZ_EXAMPLES``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.specs.openapi.checks import positive_data_acceptance

from kioku.api import create_app
from kioku.embeddings.fake import FakeEmbedder
from kioku.models import KeyCreate, MemoryCreate
from kioku.models.sleep import SleepRequest
from kioku.runtime import open_runtime
from tests.conftest import ManualClock, make_settings
from tests.fuzz.hostile import flatmap_body

EXAMPLES = int(os.environ.get("KIOKU_FUZZ_EXAMPLES", "25"))


def _labels() -> list[str]:
    """Every REST operation as schemathesis labels it (``POST /api/v1/...``)."""
    spec = create_app().openapi()
    return sorted(
        f"{method.upper()} {path}"
        for path, methods in spec["paths"].items()
        for method in methods
        if method in ("get", "put", "post", "patch", "delete")
    )


@pytest.fixture
def api(tmp_path: Path) -> Iterator[tuple[Any, dict[str, str]]]:
    """The app on a fresh database with real objects to aim at, and an owner's key."""
    settings_ = make_settings(tmp_path, dev=False, rate_limit_per_minute=0)
    runtime = open_runtime(settings_, embedder=FakeEmbedder(), clock=ManualClock())
    try:
        owner = runtime.local_principal("rest")
        memory = runtime.memories.remember(owner, "default", MemoryCreate(summary="Fuzz target"))
        run = runtime.sleep.sleep(owner, "default", SleepRequest(mode="edges_only"))
        key = runtime.keys.create_key(owner, KeyCreate(name="fuzz", role="owner"))
        spare = runtime.keys.create_key(owner, KeyCreate(name="spare", role="viewer"))
        ids = {
            "context_id": "default", "memory_id": memory.id, "run_id": run.run_id,
            "key_id": spare.id, "key": key.key,
        }  # fmt: skip
        schema = schemathesis.openapi.from_asgi("/openapi.json", create_app(runtime=runtime))
        schema.hook(flatmap_body)
        yield schema, ids
    finally:
        runtime.close()


@pytest.mark.parametrize("label", _labels())
def test_no_route_answers_5xx_or_outside_its_schema(
    api: tuple[Any, dict[str, str]], label: str
) -> None:
    schema, ids = api
    operation = schema.find_operation_by_label(label)
    assert operation is not None, label
    hostile = 0

    @given(case=operation.as_strategy())
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        derandomize=True,
        database=None,
    )
    def fuzz(case: Any) -> None:
        nonlocal hostile
        hostile += isinstance(case.body, bytes)
        for name in case.path_parameters or {}:
            if name in ids:
                case.path_parameters[name] = ids[name]
        case.call_and_validate(
            headers={"Authorization": f"Bearer {ids['key']}"},
            excluded_checks=[positive_data_acceptance],
        )

    fuzz()
    if operation.body and EXAMPLES >= 25:
        assert hostile, f"no hostile body was sent to {label}"
