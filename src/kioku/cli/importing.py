"""``kioku import-jsonl`` and ``kioku reembed``: long work, with progress bars."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from datetime import timedelta
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
    err_console,
    handle_errors,
    print_json,
)
from kioku.errors import InvalidInputError, first_error
from kioku.models import BatchCreate, MemoryCreate
from kioku.runtime import Runtime
from kioku.service.principal import Principal

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
                    field, message = first_error(exc)
                    raise InvalidInputError(
                        f"line {number}: {message}; nothing was imported", field=field
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
    as_json: bool = JsonOption,
) -> None:
    """Re-embed every memory of a context with the configured embedder (after a model change).

    A server on the same database may embed some of them meanwhile (it shares the queue): the
    progress counts what is done by anyone, and the command waits for the rest."""
    if not yes:
        typer.confirm(
            f"Drop and recompute every vector of context {context}?", abort=True, err=True
        )
    with cli_runtime() as runtime, handle_errors():
        if runtime.embedding is None or runtime.embedder is None:
            raise InvalidInputError("no embedder configured (KIOKU_EMBEDDER=none)")
        principal = runtime.local_principal("cli")
        row = runtime.contexts.resolve(principal, context)
        total = runtime.store.reset_embeddings(principal.workspace_id, row.id)
        waiting = timedelta(seconds=runtime.settings.embed_lease_seconds + 10)
        with Progress(console=err_console, disable=as_json, transient=as_json) as progress:
            task = progress.add_task(f"embedding with {runtime.embedder.name}", total=total)
            left = reembed_until_done(
                runtime, principal, row.id, waiting,
                lambda left: progress.update(task, completed=max(0, total - left)),
            )  # fmt: skip
        statuses = runtime.stats.stats(principal, row.id).embeddings
    failed = statuses.get("failed", 0)
    result = {
        "context": context, "model": runtime.embedder.name, "memories": total,
        "embedded": total - left - failed, "failed": failed, "pending": left,
    }  # fmt: skip
    if as_json:
        print_json(result)
    else:
        console.print(
            f"re-embedded {count(result['embedded'], 'memory', 'memories')} of {context}"
            + (f"; {failed} failed (see the log)" if failed else "")
            + (f"; {left} still pending, held by another worker" if left else "")
        )
    if left or failed:
        raise typer.Exit(1)


def reembed_until_done(
    runtime: Runtime,
    principal: Principal,
    context_id: str,
    waiting: timedelta,
    progressed: Callable[[int], None],
) -> int:
    """Embed the context's pending memories in this process, and wait for those another
    worker (a server on this database) has claimed, until none is pending or nothing has moved
    for ``waiting`` (longer than a lease: a crashed worker's claim runs out before). Returns
    how many are still pending. Claimed jobs of other contexts are embedded too: they are
    leased to this process now, and leaving them would delay them until the lease runs out."""
    assert runtime.embedding is not None
    left = _pending(runtime, principal, context_id)
    quiet_since = time.monotonic()
    while left:
        jobs = runtime.embedding.claim(64)
        if jobs:
            runtime.embedding.embed_jobs(jobs)
        now_left = _pending(runtime, principal, context_id)
        if now_left < left:
            quiet_since = time.monotonic()
        left = now_left
        progressed(left)
        if not jobs and left:
            if time.monotonic() - quiet_since > waiting.total_seconds():
                break
            time.sleep(0.5)  # another worker holds them: let it finish
    return left


def _pending(runtime: Runtime, principal: Principal, context_id: str) -> int:
    return runtime.stats.stats(principal, context_id).embeddings.get("pending", 0)
