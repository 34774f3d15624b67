"""How fast the ``kioku`` command starts, and how fast ``kioku import-jsonl`` takes lines
(issue 36, item 5). Run from the repository root::

    .venv/bin/python scripts/cli_speed.py                 # warm starts, median of 10, + import
    .venv/bin/python scripts/cli_speed.py --cold 5        # also cold starts (root: drops caches)
    .venv/bin/python scripts/cli_speed.py --src /tmp/main/src   # another tree's code, e.g.
    # git archive HEAD src | tar -x -C /tmp/main   (main's, to compare)

It starts ``kioku serve --dev`` on a scratch database (the configured embedder: the bundled
model unless ``KIOKU_EMBEDDER`` says otherwise) for the ``--url`` commands, and uses another
scratch database for the in-process ones; nothing of yours is touched. Each figure is the wall
time of the whole command as a shell runs it (``.venv/bin/kioku ...``: interpreter start,
imports, the work, exit). Warm: one run discarded, then the median (and min-max) of
``--runs``. Cold: before each run the page cache is dropped (``sync; echo 3 >
/proc/sys/vm/drop_caches``, root only), so Python, kioku and its libraries are read from disk.
``import-jsonl`` imports a generated file of ``--lines`` lines into a fresh database (lines/s =
lines / wall time, start-up included), then runs again (nothing new to write); ``--embed``
also times ``import-jsonl --embed`` (returns once every vector is computed). The load
average is printed before and after: on a busy machine every figure is slower.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

KIOKU = Path(sys.executable).parent / "kioku"

QUICK = [
    ("kioku --version", ["--version"], False),
    ("kioku pinned --url", ["pinned", "--url", "{url}"], False),
    ("kioku recall --url", ["recall", "what does Alice drink?", "--url", "{url}"], False),
    ("kioku state get --url", ["state", "get", "ticket:42", "--url", "{url}"], False),
    ("kioku pinned (local database)", ["pinned"], True),
    ("kioku state get (local database)", ["state", "get", "ticket:42"], True),
    ("kioku recall (local database)", ["recall", "what does Alice drink?"], True),
]

WORDS = [
    "alice", "bob", "tea", "coffee", "deploy", "friday", "berlin", "trip", "server", "port",
    "staging", "release", "migrate", "database", "ticket", "review", "budget", "meeting",
    "design", "api", "cache", "latency", "memory", "vector", "search", "index", "東京", "会議",
    "予算", "設計",
]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10, help="warm runs per command (median)")
    parser.add_argument("--cold", type=int, default=0, help="cold runs per command (root)")
    parser.add_argument("--lines", type=int, default=3000, help="lines of the import file")
    parser.add_argument("--no-import", action="store_true", help="skip the import-jsonl figures")
    parser.add_argument("--embed", action="store_true", help="also time import-jsonl --embed")
    parser.add_argument("--src", help="run this source tree's kioku (put first on PYTHONPATH)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON too")
    options = parser.parse_args()
    if options.cold and os.geteuid() != 0:
        parser.error("--cold drops the page cache: run as root")
    with tempfile.TemporaryDirectory(prefix="kioku-cli-speed-") as folder:
        figures = measure(Path(folder), options)
    print_report(figures)
    if options.json:
        print(json.dumps(figures, ensure_ascii=False))


def measure(folder: Path, options: argparse.Namespace) -> dict:
    os.chmod(folder, 0o700)
    base = {k: v for k, v in os.environ.items() if k not in ("KIOKU_URL", "KIOKU_API_KEY")}
    base["HF_HUB_OFFLINE"] = "1"
    base["COLUMNS"] = "120"
    if options.src:
        base["PYTHONPATH"] = os.pathsep.join(filter(None, [options.src, base.get("PYTHONPATH")]))
    local = {**base, "KIOKU_DATABASE_URL": f"sqlite:///{folder / 'local.db'}"}
    figures: dict = {
        "load_before": os.getloadavg(),
        "cpus": os.cpu_count(),
        "python": sys.version.split()[0],
        "kioku": run(local, ["--version"]).strip(),
        "src": options.src or "installed",
        "commands": [],
    }
    seed(local)
    with server(folder, base) as url:
        seed(local, url)
        for label, args, _ in QUICK:
            argv = [arg.format(url=url) for arg in args]
            env = local
            timing = {"command": label, "argv": argv}
            timing["warm"] = summary([timed(env, argv) for _ in range(options.runs + 1)][1:])
            if options.cold:
                timing["cold"] = summary([timed(env, argv, cold=True) for _ in range(options.cold)])
            figures["commands"].append(timing)
    if not options.no_import:
        figures["import"] = measure_import(folder, base, options.lines, options.embed)
    figures["load_after"] = os.getloadavg()
    return figures


def seed(env: dict[str, str], url: str | None = None) -> None:
    """A rule, a fact and a state key, in the local database or (``url``) the server's."""
    where = ["--url", url] if url else []
    run(env, ["remember", "Never deploy on Fridays", "--delivery-mode", "always", *where])
    run(env, ["remember", "Alice prefers tea over coffee", *where])
    run(env, ["state", "set", "ticket:42", '{"phase": "drafted"}', *where])


class server:
    """``kioku serve --dev`` on a free loopback port and its own scratch database."""

    def __init__(self, folder: Path, env: dict[str, str]) -> None:
        self.env = {**env, "KIOKU_DATABASE_URL": f"sqlite:///{folder / 'server.db'}"}
        self.log = folder / "serve.log"

    def __enter__(self) -> str:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        self.process = subprocess.Popen(
            [str(KIOKU), "serve", "--dev", "--port", str(port)], env=self.env,
            stdout=self.log.open("w"), stderr=subprocess.STDOUT,
        )  # fmt: skip
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise SystemExit(f"kioku serve stopped:\n{self.log.read_text()}")
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=1) as answer:
                    if answer.status == 200:
                        return url
            except OSError:
                time.sleep(0.2)
        raise SystemExit(f"kioku serve did not answer:\n{self.log.read_text()}")

    def __exit__(self, *exc: object) -> None:
        self.process.terminate()
        self.process.wait(timeout=60)


def run(env: dict[str, str], argv: list[str]) -> str:
    done = subprocess.run([str(KIOKU), *argv], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"kioku {' '.join(argv)} failed ({done.returncode}):\n{done.stderr}")
    return done.stdout


def timed(env: dict[str, str], argv: list[str], *, cold: bool = False) -> float:
    """Seconds of one run of ``kioku ARGV``, as a shell would see them."""
    if cold:
        subprocess.run(["sync"], check=True)
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
    start = time.perf_counter()
    done = subprocess.run([str(KIOKU), *argv], env=env, capture_output=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"kioku {' '.join(argv)} failed:\n{done.stderr.decode()}")
    return seconds


def summary(seconds: list[float]) -> dict[str, float]:
    ms = [round(s * 1000, 1) for s in seconds]
    return {"median_ms": round(statistics.median(ms), 1), "min_ms": min(ms), "max_ms": max(ms),
            "runs": len(ms)}  # fmt: skip


def measure_import(folder: Path, env: dict[str, str], lines: int, embed: bool) -> dict:
    """``kioku import-jsonl`` of ``lines`` generated memories into a fresh database, twice;
    with ``embed``, then with ``--embed`` into another fresh one (every vector waited for)."""
    path = folder / f"memories-{lines}.jsonl"
    rng = random.Random(36)
    with path.open("w", encoding="utf-8") as handle:
        for i in range(lines):
            summary_text = " ".join(rng.choice(WORDS) for _ in range(10))
            content = " ".join(rng.choice(WORDS) for _ in range(40))
            item = {"summary": f"note {i}: {summary_text}", "content": content, "tags": ["gen"]}
            handle.write(json.dumps(item, ensure_ascii=False) + "\n")
    runs = []
    attempts = [("first", "import.db", []), ("again", "import.db", [])]
    if embed:
        attempts.append(("--embed, fresh database", "embedded.db", ["--embed"]))
    for attempt, database, flags in attempts:
        start = time.perf_counter()
        done = subprocess.run(
            [str(KIOKU), "import-jsonl", str(path), "--json", *flags],
            env={**env, "KIOKU_DATABASE_URL": f"sqlite:///{folder / database}"},
            capture_output=True, text=True,
        )  # fmt: skip
        seconds = time.perf_counter() - start
        if done.returncode != 0:
            raise SystemExit(f"import-jsonl failed ({done.returncode}):\n{done.stderr}")
        answer = json.loads(done.stdout.strip().splitlines()[-1])
        runs.append({
            "run": attempt, "seconds": round(seconds, 2),
            "lines_per_second": round(lines / seconds), "created": answer.get("created"),
            "pending_vectors": answer.get("pending_vectors"),
        })  # fmt: skip
    return {"lines": lines, "runs": runs}


def print_report(figures: dict) -> None:
    load = " ".join(f"{x:.2f}" for x in figures["load_before"])
    after = " ".join(f"{x:.2f}" for x in figures["load_after"])
    print(f"{figures['kioku']} ({figures['src']}), Python {figures['python']}, "
          f"{figures['cpus']} CPUs; load average {load} before, {after} after")  # fmt: skip
    print()
    print("| command | warm median (min-max), ms | cold median (min-max), ms |")
    print("|---|---|---|")
    for timing in figures["commands"]:
        warm = timing["warm"]
        cold = timing.get("cold")
        cold_text = f"{cold['median_ms']} ({cold['min_ms']}-{cold['max_ms']})" if cold else "-"
        print(f"| {timing['command']} | {warm['median_ms']} ({warm['min_ms']}-{warm['max_ms']}) "
              f"| {cold_text} |")  # fmt: skip
    if "import" in figures:
        print()
        print(f"import-jsonl, {figures['import']['lines']} generated lines, fresh database:")
        for run_ in figures["import"]["runs"]:
            print(
                f"  {run_['run']}: {run_['seconds']} s, {run_['lines_per_second']} lines/s, "
                f"{run_['created']} created, {run_['pending_vectors']} vectors pending"
            )


if __name__ == "__main__":
    main()
