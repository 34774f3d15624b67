"""forget_by_query on both backends: a preview, then exactly that preview forgotten or nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kioku.embeddings.fake import FakeEmbedder
from kioku.errors import ConflictError, ForbiddenError, InvalidInputError, NotFoundError
from kioku.models import (
    BatchCreate,
    ContextCreate,
    ForgetQuery,
    ForgetResult,
    MemoryCreate,
    MemoryUpdate,
    RecallRequest,
)
from kioku.runtime import Runtime, open_runtime
from kioku.service.principal import Principal
from tests.conftest import ManualClock, make_settings
from tests.postgres import empty_postgres_database


@pytest.fixture(params=["sqlite", "postgres"])
def rt(request: pytest.FixtureRequest, tmp_path: Path, clock: ManualClock) -> Iterator[Runtime]:
    overrides: dict[str, object] = {}
    if request.param == "postgres":
        url = request.getfixturevalue("postgres_database")
        empty_postgres_database(url)
        overrides["database_url"] = url
    runtime = open_runtime(
        make_settings(tmp_path, **overrides), embedder=FakeEmbedder(), clock=clock
    )
    try:
        yield runtime
    finally:
        runtime.close()


@pytest.fixture
def me(rt: Runtime) -> Principal:
    return rt.local_principal("rest")


def write(rt: Runtime, who: Principal, summary: str, context: str = "default", **kw: Any) -> str:
    return rt.memories.remember(who, context, MemoryCreate(summary=summary, **kw)).id


def forget(rt: Runtime, who: Principal, context: str = "default", **kw: Any) -> ForgetResult:
    return rt.forgetting.forget_by_query(who, context, ForgetQuery(**kw))


def live(rt: Runtime, who: Principal, context: str = "default") -> set[str]:
    return {m.id for m in rt.memories.list_memories(who, context, limit=200).items}


def altered(token: str, part: int) -> str:
    pieces = token.split(".")
    pieces[part] = pieces[part][:-1] + ("0" if pieces[part][-1] != "0" else "1")
    return ".".join(pieces)


def test_preview_lists_exactly_what_would_go_then_confirm_forgets_just_that(
    rt: Runtime, me: Principal
) -> None:
    flights = write(rt, me, "Berlin trip: flights booked for May")
    hotel = write(rt, me, "Hotel for the Berlin trip is near Alexanderplatz")
    tokyo = write(rt, me, "Tokyo trip planning")  # shares one word only
    dentist = write(rt, me, "Dentist appointment on Tuesday")

    preview = forget(rt, me, query="Berlin trip")
    assert preview.status == "preview" and preview.forgotten_ids == []
    assert {m.id for m in preview.matches} == {flights, hotel} and preview.count == 2
    assert not preview.truncated and preview.pinned_kept == 0
    assert all(m.score is not None for m in preview.matches)
    assert preview.confirmation is not None and preview.confirmation.startswith("fq1.")
    assert live(rt, me) == {flights, hotel, tokyo, dentist}  # a preview forgets nothing

    again = forget(rt, me, query="Berlin trip")
    assert again.confirmation == preview.confirmation  # deterministic

    done = forget(rt, me, query="Berlin trip", confirmation=preview.confirmation)
    assert done.status == "forgotten" and done.confirmation is None
    assert set(done.forgotten_ids) == {flights, hotel}
    assert [m.id for m in done.matches] == [m.id for m in preview.matches]
    assert live(rt, me) == {tokyo, dentist}
    gone = rt.memories.get_memory(me, "default", flights, include_deleted=True)
    assert gone.deleted_at is not None  # soft: kept until purged

    line = rt.audit.list_audit(me).items[0]
    assert (line.action, line.outcome) == ("forget_by_query", "ok")
    assert line.detail == {"forgotten": 2, "memory_ids": done.forgotten_ids}


def test_one_more_match_between_preview_and_confirm_forgets_nothing(
    rt: Runtime, me: Principal
) -> None:
    first = write(rt, me, "Invoice 1041 from Acme is disputed")
    second = write(rt, me, "Acme invoice 1041: credit note requested")
    preview = forget(rt, me, query="Acme invoice 1041")
    assert preview.count == 2
    late = write(rt, me, "Invoice 1041 (Acme) was paid after all")

    with pytest.raises(ConflictError) as refused:
        forget(rt, me, query="Acme invoice 1041", confirmation=preview.confirmation)
    assert refused.value.field == "confirmation" and "preview again" in refused.value.message
    assert live(rt, me) == {first, second, late}

    fresh = forget(rt, me, query="Acme invoice 1041")
    assert fresh.count == 3 and fresh.confirmation != preview.confirmation
    forget(rt, me, query="Acme invoice 1041", confirmation=fresh.confirmation)
    assert live(rt, me) == set()


def test_a_previewed_memory_changed_or_forgotten_since_is_a_conflict(
    rt: Runtime, me: Principal
) -> None:
    ids = [write(rt, me, f"Release {n} checklist") for n in range(3)]
    preview = forget(rt, me, query="release checklist")
    rt.memories.update_memory(me, "default", ids[0], MemoryUpdate(importance=0.9))
    with pytest.raises(ConflictError):
        forget(rt, me, query="release checklist", confirmation=preview.confirmation)
    preview = forget(rt, me, query="release checklist")
    rt.memories.forget(me, "default", ids[1])
    with pytest.raises(ConflictError):
        forget(rt, me, query="release checklist", confirmation=preview.confirmation)
    assert live(rt, me) == {ids[0], ids[2]}


def test_an_altered_confirmation_forgets_nothing(rt: Runtime, me: Principal) -> None:
    ids = {write(rt, me, "Old wifi password hint"), write(rt, me, "wifi password rotates")}
    token = forget(rt, me, query="wifi password").confirmation
    assert token is not None
    with pytest.raises(ConflictError):
        forget(rt, me, query="wifi password", confirmation=altered(token, 2))
    with pytest.raises(InvalidInputError) as other:
        forget(rt, me, query="wifi password", confirmation=altered(token, 1))
    assert other.value.field == "confirmation"
    assert live(rt, me) == ids


def test_a_confirmation_is_bound_to_its_request_and_context(rt: Runtime, me: Principal) -> None:
    rt.contexts.create_context(me, ContextCreate(name="other"))
    kept = {write(rt, me, "Budget draft for Q3", tags=["finance"])}
    kept |= {write(rt, me, "Budget draft for Q3", context="other", tags=["finance"])}
    token = forget(rt, me, query="budget draft").confirmation
    variants: list[dict[str, Any]] = [
        {"query": "budget"},
        {"query": "budget draft", "k": 5},
        {"query": "budget draft", "match": "recall"},
        {"query": "budget draft", "filters": {"tags": ["finance"]}},
        {"query": "budget draft", "context": "other"},
    ]
    for variant in variants:
        with pytest.raises(InvalidInputError) as refused:
            forget(rt, me, **variant, confirmation=token)
        assert refused.value.field == "confirmation", variant
    assert live(rt, me) | live(rt, me, "other") == kept
    # The same filters spelled another way are the same request.
    tagged = forget(rt, me, query="budget draft", filters={"tags": ["finance"]}).confirmation
    done = forget(rt, me, query="budget draft", filters={"tags": {"any": ["finance"]}},
                  confirmation=tagged)  # fmt: skip
    assert done.count == 1


def test_a_confirmation_from_another_workspace_is_useless(rt: Runtime, me: Principal) -> None:
    intruder_ws = rt.store.ensure_workspace("intruder")
    intruder = Principal(workspace_id=intruder_ws.id, role="owner", channel="rest")
    mine = rt.contexts.create_context(me, ContextCreate(name="notes"))
    rt.contexts.create_context(intruder, ContextCreate(name="notes"))
    a = write(rt, me, "Salary review notes", context="notes")
    b = write(rt, intruder, "Salary review notes", context="notes")
    token = forget(rt, me, "notes", query="salary review").confirmation
    with pytest.raises(InvalidInputError):
        forget(rt, intruder, "notes", query="salary review", confirmation=token)
    with pytest.raises(NotFoundError):  # and A's context itself does not exist for B
        forget(rt, intruder, mine.id, query="salary review", confirmation=token)
    assert live(rt, me, "notes") == {a} and live(rt, intruder, "notes") == {b}


def test_more_matches_than_k_are_said_and_forgotten_k_at_a_time(rt: Runtime, me: Principal) -> None:
    ids = {write(rt, me, f"Standup note {n}: nothing blocked") for n in range(5)}
    preview = forget(rt, me, query="standup note", k=2)
    assert preview.count == 2 and preview.truncated
    forget(rt, me, query="standup note", k=2, confirmation=preview.confirmation)
    rest = forget(rt, me, query="standup note", k=10)
    assert rest.count == 3 and not rest.truncated
    assert {m.id for m in rest.matches} == live(rt, me) and live(rt, me) < ids


def test_pinned_memories_are_kept_unless_named(rt: Runtime, me: Principal) -> None:
    rule = write(rt, me, "Never deploy on Fridays", delivery_mode="always")
    note = write(rt, me, "The deploy script lives in ops/")
    preview = forget(rt, me, query="deploy")
    assert [m.id for m in preview.matches] == [note] and preview.pinned_kept == 1
    pinned = forget(rt, me, query="deploy", filters={"delivery_mode": ["always"]})
    assert [m.id for m in pinned.matches] == [rule] and pinned.pinned_kept == 0
    assert pinned.matches[0].delivery_mode == "always"


def test_filters_alone_match_newest_first(rt: Runtime, me: Principal) -> None:
    older = write(rt, me, "scratch: try the new parser", tags=["scratch"])
    newer = write(rt, me, "scratch: compare tokenizers", tags=["scratch"])
    keep = write(rt, me, "Parser design decision")
    preview = forget(rt, me, filters={"tags": ["scratch"]})
    assert [m.id for m in preview.matches] == [newer, older]
    assert all(m.score is None for m in preview.matches)
    forget(rt, me, filters={"tags": ["scratch"]}, confirmation=preview.confirmation)
    assert live(rt, me) == {keep}


def test_only_live_memories_match_and_nothing_is_learnt(rt: Runtime, me: Principal) -> None:
    ids = [write(rt, me, f"Printer on floor {n} is jammed") for n in range(3)]
    rt.memories.forget(me, "default", ids[0])
    preview = forget(rt, me, query="printer jammed")
    assert {m.id for m in preview.matches} == set(ids[1:])
    # recall strengthens edges between its results; a forget preview is not a recall
    assert rt.store.edges_touching(me.workspace_id, ids) == []


def test_match_recall_takes_recalls_top_k(rt: Runtime, me: Principal) -> None:
    write(rt, me, "Quarterly planning offsite agenda")
    write(rt, me, "Lunch order for the team")
    top = rt.recall.recall(me, "default", RecallRequest(query="planning agenda", k=1)).results[0]
    preview = forget(rt, me, query="planning agenda", match="recall", k=1)
    assert [m.id for m in preview.matches] == [top.id]
    assert preview.truncated  # recall had another candidate


@pytest.mark.parametrize(
    ("request_", "field"),
    [
        ({}, "query"),
        ({"filters": {"include_superseded": True}}, "query"),
        ({"query": "x", "filters": {"include_deleted": True}}, "filters.include_deleted"),
        ({"query": "x", "filters": {"context_ids": ["default"]}}, "filters.context_ids"),
        ({"filters": {"tags": ["a"]}, "match": "recall"}, "match"),
        ({"query": "the of and"}, "query"),
    ],
)
def test_refusals_name_the_field(
    rt: Runtime, me: Principal, request_: dict[str, Any], field: str
) -> None:
    write(rt, me, "Anything at all")
    with pytest.raises(InvalidInputError) as refused:
        forget(rt, me, **request_)
    assert refused.value.field == field


def test_a_viewer_cannot_even_preview(rt: Runtime, me: Principal) -> None:
    kept = write(rt, me, "Visible to viewers")
    viewer = Principal(workspace_id=me.workspace_id, role="viewer", channel="rest")
    with pytest.raises(ForbiddenError):
        forget(rt, viewer, query="visible viewers")
    assert live(rt, me) == {kept}


def test_a_change_landing_after_the_match_still_forgets_nothing(
    rt: Runtime, me: Principal, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = [write(rt, me, f"Vendor contract {n} renewal") for n in range(3)]
    token = forget(rt, me, query="vendor contract renewal").confirmation
    original = rt.store.soft_delete_memories

    def edit_first(*args: Any) -> bool:  # another writer, between the match and the delete
        rt.memories.update_memory(me, "default", ids[1], MemoryUpdate(summary="Vendor gone"))
        return original(*args)

    monkeypatch.setattr(rt.store, "soft_delete_memories", edit_first)
    with pytest.raises(ConflictError):
        forget(rt, me, query="vendor contract renewal", confirmation=token)
    assert live(rt, me) == set(ids)


def test_japanese_words_match_through_the_tokenizer(rt: Runtime, me: Principal) -> None:
    tokyo = write(rt, me, "東京都の会議は来週に延期")
    write(rt, me, "大阪の会議は予定どおり")
    preview = forget(rt, me, query="東京 会議")
    assert [m.id for m in preview.matches] == [tokyo]


def test_all_terms_looks_past_recalls_depth_before_it_says_truncated(
    rt: Runtime, me: Principal
) -> None:
    items = [{"summary": f"Trip report {n}: nothing special"} for n in range(45)]
    rt.memories.remember_batch(me, "default", BatchCreate(items=items, atomic=True))
    berlin = write(rt, me, "Berlin trip: the hotel was noisy")
    preview = forget(rt, me, query="Berlin trip", k=2)
    assert [m.id for m in preview.matches] == [berlin]
    assert not preview.truncated  # 46 share "trip", fewer than the 400 forget looks at
