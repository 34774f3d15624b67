import threading
from pathlib import Path

import numpy as np

from kioku.embeddings.base import normalize_rows
from kioku.storage.vector_index import ContextVectors, VectorIndexCache


def unit(*values: float) -> np.ndarray:
    return normalize_rows(np.array([values], dtype=np.float32))[0]


def test_exact_search_orders_by_cosine_and_breaks_ties_by_id() -> None:
    index = ContextVectors(dim=2, generation=0)
    index.upsert("b", unit(1, 0))
    index.upsert("a", unit(1, 0))
    index.upsert("c", unit(0, 1))
    assert [hit[0] for hit in index.search(unit(1, 0.1), 3, None)] == ["a", "b", "c"]


def test_remove_keeps_the_other_rows_findable() -> None:
    index = ContextVectors(dim=2, generation=0)
    for i in range(40):
        index.upsert(f"m{i:02d}", unit(1, i))
    index.remove("m00")
    index.remove("m39")
    found = {hit[0] for hit in index.search(unit(1, 5), 100, None)}
    assert found == {f"m{i:02d}" for i in range(1, 39)}


def test_allowed_ids_filter_results() -> None:
    index = ContextVectors(dim=2, generation=0)
    for i in range(10):
        index.upsert(f"m{i}", unit(1, i))
    hits = index.search(unit(1, 0), 3, {"m7", "m9", "elsewhere"})
    assert [hit[0] for hit in hits] == ["m7", "m9"]


def _loader(rows: list[tuple[str, np.ndarray]]):
    calls = []

    def load() -> tuple[int, list[tuple[str, np.ndarray]]]:
        calls.append(1)
        return 2, rows

    return load, calls


def test_cache_file_is_used_when_generation_matches(tmp_path: Path) -> None:
    rows = [("a", unit(1, 0)), ("b", unit(0, 1))]
    load, calls = _loader(rows)
    VectorIndexCache(tmp_path).get("ctx", 5, load)
    assert len(calls) == 1
    fresh = VectorIndexCache(tmp_path)  # a new process
    index = fresh.get("ctx", 5, load)
    assert len(calls) == 1 and index is not None and index.size == 2


def test_stale_cache_file_is_rebuilt_from_the_database(tmp_path: Path) -> None:
    load, calls = _loader([("a", unit(1, 0))])
    VectorIndexCache(tmp_path).get("ctx", 5, load)
    index = VectorIndexCache(tmp_path).get("ctx", 6, load)  # the database moved on (a crash)
    assert len(calls) == 2 and index is not None and index.generation == 6


def test_torn_cache_file_is_treated_as_stale(tmp_path: Path) -> None:
    load, calls = _loader([("a", unit(1, 0))])
    VectorIndexCache(tmp_path).get("ctx", 1, load)
    (tmp_path / "ctx.npz").write_bytes(b"garbage")
    index = VectorIndexCache(tmp_path).get("ctx", 1, load)
    assert len(calls) == 2 and index is not None and index.size == 1


def test_apply_out_of_order_reconciles_with_the_database_instead_of_guessing() -> None:
    load, calls = _loader([("a", unit(1, 0))])
    cache = VectorIndexCache(None)
    cache.get("ctx", 1, load)
    cache.apply("ctx", 3, upserts=[("b", unit(0, 1))])  # skipped generation 2
    index = cache.get("ctx", 3, load)
    assert len(calls) == 2 and index is not None
    assert [hit[0] for hit in index.search(unit(0, 1), 5)] == ["a"]  # the database's rows only


def test_stale_file_is_reconciled_row_by_row(tmp_path: Path) -> None:
    load, _ = _loader([("a", unit(1, 0)), ("b", unit(0, 1))])
    VectorIndexCache(tmp_path).get("ctx", 1, load)
    moved, calls = _loader([("b", unit(1, 0)), ("c", unit(1, 1))])  # a gone, b moved, c new
    index = VectorIndexCache(tmp_path).get("ctx", 2, moved)
    assert len(calls) == 1 and index is not None and index.generation == 2
    hits = index.search(unit(1, 0), 5)
    assert [hit[0] for hit in hits] == ["b", "c"] and hits[0][1] == 1.0


def test_writers_racing_on_one_cache_file_never_fail_or_mix_generations(tmp_path: Path) -> None:
    # Several processes on one SQLite file write the same context's cache: each write must be
    # whole (matrix, ids and generation from one writer), and none may fail another's.

    errors: list[BaseException] = []

    def writer(offset: int) -> None:
        try:
            for generation in range(offset, offset + 60, 2):
                rows = [(f"m{i}", unit(1, i)) for i in range(generation % 7 + 1)]
                load, _ = _loader(rows)
                VectorIndexCache(tmp_path).get("ctx", generation, load)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    for generation in range(60):
        loaded = VectorIndexCache(tmp_path)._read_file("ctx", generation)
        assert loaded is None or loaded.size == generation % 7 + 1
    assert not list(tmp_path.glob("*.tmp"))
