"""Where and how a run happened: the command line, the machine, the configured embedder."""

from __future__ import annotations

import os
import platform
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kioku.embeddings import Embedder, make_embedder
from kioku.settings import Settings


def configured_embedder() -> Embedder | None:
    """The embedder ``KIOKU_EMBEDDER`` selects (default: bundled), with a readable failure."""
    settings = Settings()
    try:
        return make_embedder(settings)
    except ImportError as exc:
        raise SystemExit(
            f"error: the {settings.embedder.kind!r} embedder is not available ({exc}); "
            "run with KIOKU_EMBEDDER=none for a BM25-only benchmark"
        ) from exc


def command_line(
    out: str,
    data: str,
    scales: Sequence[int],
    quick: bool,
    as_json: bool,
    backend: str = "sqlite",
    postgres_url: str | None = None,
    scale_only: bool = False,
    workspaces: int = 1,
) -> str:
    """The ``kioku bench`` invocation that reproduces this run (with ``KIOKU_EMBEDDER``);
    a PostgreSQL URL is shown without its password."""
    parts = ["kioku bench"]
    parts += [] if backend == "sqlite" else [f"--backend {backend}"]
    if postgres_url:
        from sqlalchemy import make_url

        parts.append(f"--postgres-url {make_url(postgres_url).render_as_string()}")
    parts += ["--quick"] if quick else []
    parts += ["--scale-only"] if scale_only else []
    parts += [f"--scale {n}" for n in scales]
    parts += [f"--workspaces {workspaces}"] if workspaces != 1 else []
    parts += [f"--out {out}", f"--data {data}"] + (["--json"] if as_json else [])
    embedder = Settings().embedder.kind  # from the environment or the settings file
    env = f"KIOKU_EMBEDDER={embedder}" if embedder != "bundled" else ""
    return (env + " " if env else "") + " ".join(parts)


def machine() -> dict[str, Any]:
    """CPU model, CPUs this process may use, Python and OS."""
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "cpu_model": model,
        "cpus": cpus,
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def load_average() -> list[float] | None:
    """1/5/15-minute load averages: above the CPU count, other work competed with the run."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (OSError, AttributeError):
        return None
