"""The vector leg starts with the recall (issue 31): the query is embedded on a pool thread
before the scope is read, the scope, the lexical leg and the lexical candidates' signals are
read meanwhile, and a recall that fails before the legs leaves nothing waiting."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from kioku.embeddings.fake import FakeEmbedder
from kioku.errors import NotFoundError
from kioku.models import MemoryCreate, RecallRequest
from kioku.runtime import Runtime, open_runtime
from kioku.service.ranking import vector_leg as legs
from kioku.storage.records import RankingSignals
from tests.conftest import make_settings

SLOW = 0.4


class SlowEmbedder(FakeEmbedder):
    """The fake, with a query embedding slow enough that everything else is done first."""

    def __init__(self) -> None:
        super().__init__()
        self.began: list[float] = []

    def embed_query(self, text: str) -> np.ndarray:
        self.began.append(time.perf_counter())
        time.sleep(SLOW)
        return super().embed_query(text)


@pytest.fixture
def runtime(tmp_path: Path) -> Iterator[Runtime]:
    runtime = open_runtime(make_settings(tmp_path), embedder=SlowEmbedder())
    principal = runtime.local_principal("rest")
    texts = ["Alice drinks green tea", "Bob drinks coffee", "tea ceremony in Kyoto", "a red bike"]
    for text in texts:
        runtime.memories.remember(principal, "default", MemoryCreate(summary=text))
    try:
        yield runtime
    finally:
        runtime.close()


def _watch(
    owner: object, name: str, calls: list[tuple[str, float, object]], pause: float = 0.0
) -> None:
    """Note when ``owner.<name>`` is called, and with what second argument (ids, a name);
    ``pause``: make it that much slower."""
    method = getattr(owner, name)

    def watched(*args: object, **kwargs: object) -> object:
        calls.append((name, time.perf_counter(), args[1] if len(args) > 1 else None))
        time.sleep(pause)
        return method(*args, **kwargs)

    setattr(owner, name, watched)


def test_the_query_is_embedded_while_the_scope_and_the_lexical_leg_are_read(
    runtime: Runtime,
) -> None:
    """Scope 0.2 s + lexical leg 0.15 s beside an embedding of 0.4 s: 0.4 s when they overlap,
    0.6 s when the embedding waits for the scope (as it did), 0.75 s in turn."""
    embedder = runtime.embedder
    assert isinstance(embedder, SlowEmbedder)
    calls: list[tuple[str, float, object]] = []
    _watch(runtime.recall.contexts, "resolve", calls, pause=0.2)  # the scope
    _watch(runtime.store, "lexical_search", calls, pause=0.15)
    began = time.perf_counter()
    result = runtime.recall.recall(
        runtime.local_principal("rest"), "default", RecallRequest(query="green tea", k=3)
    )
    took = time.perf_counter() - began
    assert result.results and result.results[0].summary == "Alice drinks green tea"
    assert embedder.began, "the query was not embedded"
    scope = next(at for name, at, _ in calls if name == "resolve")
    assert embedder.began[-1] < scope + 0.2  # embedding before the scope was read
    assert took < SLOW + 0.1, took


def test_the_signals_of_the_lexical_candidates_are_read_once(runtime: Runtime) -> None:
    calls: list[tuple[str, float, object]] = []
    _watch(runtime.store, "ranking_signals", calls)
    principal = runtime.local_principal("rest")
    ranking = runtime.recall.ranking(principal, "default", RecallRequest(query="tea", k=3))
    lexical = {hit.memory_id for hit in ranking.ran["lexical"]}
    every = {hit.memory_id for hits in ranking.ran.values() for hit in hits}
    read = [set(ids) for _, _, ids in calls if isinstance(ids, Sequence)]
    assert read[0] == lexical  # while the query was embedded
    assert all(not (ids & lexical) for ids in read[1:])  # never again
    assert set().union(*read) == every
    fresh = runtime.store.ranking_signals(principal.workspace_id, sorted(every), 64)
    assert set(ranking.signals) == every
    for memory_id, signals in ranking.signals.items():
        assert isinstance(signals, RankingSignals)
        assert signals.created_at == fresh[memory_id].created_at


def test_a_recall_that_fails_before_the_legs_leaves_no_embedding_waiting(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[legs.VectorLeg] = []
    original = legs.VectorLeg.__init__

    def noting(self: legs.VectorLeg, *args: object) -> None:
        original(self, *args)  # type: ignore[arg-type]
        started.append(self)

    monkeypatch.setattr(legs.VectorLeg, "__init__", noting)
    principal = runtime.local_principal("rest")
    for _ in range(6):  # more than the pool's threads: a stuck leg would block the rest
        with pytest.raises(NotFoundError):
            runtime.recall.recall(principal, "no-such-context", RecallRequest(query="tea"))
    assert len(started) == 6
    for leg in started:
        vector, found, _ = leg.result()  # returns: nothing waits for a search that never comes
        assert found is None and vector.shape == (64,)
    done = threading.Event()

    def recall() -> None:
        runtime.recall.recall(principal, "default", RecallRequest(query="tea"))
        done.set()

    threading.Thread(target=recall, daemon=True).start()
    assert done.wait(10), "a recall after failed ones never finished"


def test_the_thread_neighbours_of_the_lexical_candidates_are_read_while_the_query_is_embedded(
    tmp_path: Path,
) -> None:
    """``thread_neighbours``' read of the lexical candidates goes ahead while the query is
    embedded; the stage then reads only the others', and ranks as it does reading them all."""
    runtime = open_runtime(make_settings(tmp_path), embedder=SlowEmbedder())
    try:
        principal = runtime.local_principal("rest")
        turns = ["we planned the trip", "green tea in Kyoto", "it rained all day", "a red bike"]
        for text in turns:
            runtime.memories.remember(
                principal, "default", MemoryCreate(summary=text, thread="day-1")
            )
        read: list[tuple[float, list[str]]] = []
        method = runtime.store.thread_neighbours

        def watched(ws: str, contexts: list[str], ids: list[str], *rest: object) -> object:
            read.append((time.perf_counter(), list(ids)))
            return method(ws, contexts, ids, *rest)  # type: ignore[arg-type]

        runtime.store.thread_neighbours = watched  # type: ignore[method-assign]
        embedder = runtime.embedder
        assert isinstance(embedder, SlowEmbedder)
        request = RecallRequest(query="green tea", k=4)
        ahead = runtime.recall.ranking(principal, "default", request)
        lexical = [hit.memory_id for hit in ahead.ran["lexical"]]
        assert read[0][1] == lexical
        assert read[0][0] < embedder.began[-1] + SLOW  # before the embedding was done
        assert all(not set(ids) & set(lexical) for _, ids in read[1:])  # never again
        assert ahead.effects["thread"]  # the neighbours gave the tea turn's neighbours a share
        read.clear()
        fast = FakeEmbedder()  # done before the lexical leg: nothing goes ahead
        runtime.recall.tools = replace(runtime.recall.tools, embedder=fast)
        runtime.recall.embedder = fast
        behind = runtime.recall.ranking(principal, "default", request)
        assert behind.ranked == ahead.ranked
        assert behind.effects["thread"] == ahead.effects["thread"]
    finally:
        runtime.close()
