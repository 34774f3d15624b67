"""``kioku import-jsonl`` and ``kioku reembed``: long work, with progress bars."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from pydantic import ValidationError
from rich.progress import Progress

from kioku.cli.common import (
    ContextOption,
    JsonOption,
    cli_runtime,
    console,
    count,
    handle_errors,
    print_json,
)
from kioku.errors import InvalidInputError
from kioku.models import BatchCreate, MemoryCreate

_BATCH = 100


def _read_lines(path: Path) -> list[tuple[int, dict]]:
    items: list[tuple[int, dict]] = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InvalidInputError(f"line {number}: not JSON ({exc.msg})") from None
            if not isinstance(value, dict):
                raise InvalidInputError(f"line {number}: expected a JSON object")
            items.append((number, value))
    return items


def import_jsonl(
    path: Path = typer.Argument(..., exists=True, dir_okay=False, help="One memory per line."),
    context: str = ContextOption,
    strict: bool = typer.Option(
        False, "--strict", help="Validate every line first; write nothing if any is invalid."
    ),
    embed: bool = typer.Option(
        True, "--embed/--no-embed", help="Embed now (else the server does)."
    ),
    as_json: bool = JsonOption,
) -> None:
    """Import memories from a JSONL file (fields of remember), stamped source_type=import."""
    with handle_errors():
        lines = _read_lines(path)
        if strict:
            for number, item in lines:
                try:
                    MemoryCreate.model_validate(item)
                except ValidationError as exc:
                    error = exc.errors()[0]
                    field = ".".join(str(p) for p in error["loc"])
                    raise InvalidInputError(
                        f"line {number}: {error['msg']}; nothing was imported", field=field
                    ) from None
    created = 0
    errors: list[dict] = []
    with (
        cli_runtime(embed=embed) as runtime,
        handle_errors(),
        Progress(console=console, disable=as_json) as progress,
    ):
        principal = runtime.local_principal("import")
        task = progress.add_task(f"importing {path.name}", total=len(lines))
        for start in range(0, len(lines), _BATCH):
            chunk = lines[start : start + _BATCH]
            result = runtime.memories.remember_batch(
                principal,
                context,
                BatchCreate(items=[item for _, item in chunk], atomic=strict, wait=embed),
            )
            created += result.created
            for item_result in result.results:
                if item_result.error:
                    # Name the field relative to its line, not to the batch it travelled in.
                    field = str(item_result.error.get("field") or "")
                    field = field.split("].", 1)[1] if field.startswith("items[") else field
                    errors.append(
                        {"line": chunk[item_result.index][0], **item_result.error, "field": field}
                    )
            progress.advance(task, len(chunk))
    summary = {"created": created, "failed": len(errors), "errors": errors}
    if as_json:
        print_json(summary)
        return
    console.print(
        f"imported {count(created, 'memory', 'memories')} into {context}; "
        f"{count(len(errors), 'line')} failed"
    )
    for error in errors[:20]:
        console.print(f"  line {error['line']}: {error['field']}: {error['message']}")
    if errors:
        raise typer.Exit(1)


def reembed(
    context: str = ContextOption,
    yes: bool = typer.Option(False, "--yes", help="Do not ask for confirmation."),
) -> None:
    """Re-embed every memory of a context with the configured embedder (after a model change)."""
    if not yes:
        typer.confirm(f"Drop and recompute every vector of context {context}?", abort=True)
    with cli_runtime() as runtime, handle_errors():
        if runtime.embedding is None:
            raise InvalidInputError("no embedder configured (KIOKU_EMBEDDER=none)")
        principal = runtime.local_principal("cli")
        row = runtime.contexts.resolve(principal, context)
        total = runtime.store.reset_embeddings(principal.workspace_id, row.id)
        with Progress(console=console) as progress:
            task = progress.add_task(f"embedding with {runtime.embedder.name}", total=total)  # type: ignore[union-attr]
            # Claimed jobs of other contexts are embedded too: they are leased to this
            # process now, and leaving them would delay them until the lease runs out.
            while jobs := runtime.embedding.claim(64):
                runtime.embedding.embed_jobs(jobs)
                progress.advance(task, sum(job.context_id == row.id for job in jobs))
    console.print(f"re-embedded {count(total, 'memory', 'memories')} of {context}")
