"""The agent state lane, through the service, with a clock moved by hand."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest

from kioku.errors import InvalidInputError, NotFoundError, PayloadTooLargeError
from kioku.models import StateSet
from kioku.runtime import Runtime
from kioku.service.principal import Principal
from tests.conftest import ManualClock


def put(runtime: Runtime, principal: Principal, key: str, body: dict) -> object:
    return runtime.state.set_state(principal, "default", key, StateSet.model_validate(body))


def state_rows(runtime: Runtime) -> int:
    db = runtime.store.db  # type: ignore[attr-defined]
    return db.connection().execute("SELECT count(*) FROM agent_states").fetchone()[0]


@pytest.mark.parametrize(
    "value",
    [{"step": 3, "done": ["a", "b"]}, ["x", 1, None], "チケット#42 対応中", 7, 2.5, True, None],
)
def test_any_json_value_round_trips(runtime: Runtime, principal: Principal, value: object) -> None:
    put(runtime, principal, "k", {"value": value})
    assert runtime.state.get_state(principal, "default", "k").value == value


def test_ttl_defaults_to_a_day_and_null_means_forever(
    runtime: Runtime, principal: Principal, clock: ManualClock
) -> None:
    default = put(runtime, principal, "a", {"value": 1})
    forever = put(runtime, principal, "b", {"value": 1, "ttl_seconds": None})
    assert default.expires_at == clock.now + timedelta(hours=24)  # type: ignore[attr-defined]
    assert default.expires_in_seconds == 86400  # type: ignore[attr-defined]
    assert forever.expires_at is None and forever.expires_in_seconds is None  # type: ignore[attr-defined]
    clock.advance(days=400)
    assert runtime.state.get_state(principal, "default", "b").value == 1
    with pytest.raises(NotFoundError):
        runtime.state.get_state(principal, "default", "a")


@pytest.mark.parametrize(
    ("asked", "applied", "clamped"),
    [(0, 1, True), (-50, 1, True), (1, 1, False), (2_592_000, 2_592_000, False),
     (2_592_001, 2_592_000, True), (10**30, 2_592_000, True)],
)  # fmt: skip
def test_ttl_is_clamped_to_one_second_through_thirty_days(
    runtime: Runtime, principal: Principal, clock: ManualClock, asked: int, applied: int,
    clamped: bool,
) -> None:  # fmt: skip
    state = put(runtime, principal, "k", {"value": 1, "ttl_seconds": asked})
    assert state.expires_at == clock.now + timedelta(seconds=applied)  # type: ignore[attr-defined]
    assert state.ttl_clamped is clamped  # type: ignore[attr-defined]


def test_an_expired_key_is_never_returned_and_is_swept(
    runtime: Runtime, principal: Principal, clock: ManualClock
) -> None:
    put(runtime, principal, "short", {"value": "x", "ttl_seconds": 60})
    put(runtime, principal, "long", {"value": "y", "ttl_seconds": 3600})
    clock.advance(seconds=59, microseconds=999_999)
    assert runtime.state.get_state(principal, "default", "short").value == "x"
    clock.advance(microseconds=1)  # exactly at expires_at: gone
    with pytest.raises(NotFoundError) as err:
        runtime.state.get_state(principal, "default", "short")
    assert err.value.field == "key"
    assert [s.key for s in runtime.state.list_state(principal, "default").items] == ["long"]
    with pytest.raises(NotFoundError):
        runtime.state.delete_state(principal, "default", "short")
    assert state_rows(runtime) == 1  # the read swept the expired row


def test_overwriting_an_expired_key_starts_a_new_life(
    runtime: Runtime, principal: Principal, clock: ManualClock
) -> None:
    first = put(runtime, principal, "k", {"value": 1, "ttl_seconds": 10})
    clock.advance(seconds=5)
    renewed = put(runtime, principal, "k", {"value": 2, "ttl_seconds": 10})
    assert renewed.created_at == first.created_at  # type: ignore[attr-defined]
    clock.advance(seconds=30)
    reborn = put(runtime, principal, "k", {"value": 3})
    assert reborn.created_at == clock.now  # type: ignore[attr-defined]
    assert reborn.value == 3  # type: ignore[attr-defined]


def test_value_over_16_kib_is_413_and_writes_nothing(
    runtime: Runtime, principal: Principal
) -> None:
    put(runtime, principal, "k", {"value": "x" * (16384 - 2)})  # two quotes: exactly the cap
    with pytest.raises(PayloadTooLargeError) as err:
        put(runtime, principal, "k", {"value": "あ" * 6000})  # 18,002 bytes of UTF-8
    assert err.value.field == "value"
    assert runtime.state.get_state(principal, "default", "k").value == "x" * 16382


@pytest.mark.parametrize("key", ["", "a/b", "tab\there", "x" * 257, "nul\x00"])
def test_bad_keys_are_refused_by_name(runtime: Runtime, principal: Principal, key: str) -> None:
    with pytest.raises(InvalidInputError) as err:
        put(runtime, principal, key, {"value": 1})
    assert err.value.field == "key"


def test_nan_is_not_json(runtime: Runtime, principal: Principal) -> None:
    with pytest.raises(InvalidInputError) as err:
        put(runtime, principal, "k", {"value": float("nan")})
    assert err.value.field == "value"


def test_listing_pages_through_every_live_key_once_in_order(
    runtime: Runtime, principal: Principal
) -> None:
    keys = [f"ticket:{n:03d}" for n in range(250)]
    for key in reversed(keys):
        put(runtime, principal, key, {"value": key})
    seen: list[str] = []
    cursor = None
    while True:
        page = runtime.state.list_state(principal, "default", cursor=cursor, limit=100)
        seen += [item.key for item in page.items]
        cursor = page.next_cursor
        if cursor is None:
            break
    assert seen == keys


def test_concurrent_writers_on_one_key_leave_one_row(
    runtime: Runtime, principal: Principal
) -> None:
    barrier = threading.Barrier(50)
    errors: list[BaseException] = []

    def write(n: int) -> None:
        try:
            barrier.wait()
            put(runtime, principal, "shared", {"value": n})
        except BaseException as exc:  # collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(50)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert state_rows(runtime) == 1
    assert runtime.state.get_state(principal, "default", "shared").value in range(50)


def test_another_workspace_cannot_reach_the_state(
    runtime: Runtime, principal: Principal, other_principal: Principal
) -> None:
    put(runtime, principal, "secret", {"value": "plan"})
    context_id = runtime.contexts.resolve(principal, "default").id
    for call in (
        lambda: runtime.state.get_state(other_principal, context_id, "secret"),
        lambda: runtime.state.list_state(other_principal, context_id),
        lambda: runtime.state.delete_state(other_principal, context_id, "secret"),
        lambda: runtime.state.set_state(
            other_principal, context_id, "secret", StateSet(value="overwritten")
        ),
    ):
        with pytest.raises(NotFoundError):
            call()
    assert runtime.state.get_state(principal, "default", "secret").value == "plan"
