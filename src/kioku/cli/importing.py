"""``kioku import-jsonl`` and ``kioku reembed``: long work, with progress bars.

``import-jsonl`` writes through the batch path (``ConnectorService.import_memories``, 100
lines a call, each call one transaction) and leaves the vectors to the embedding worker, as
any write does: lines are accepted at the speed of the database, not of the model. Each line
is written once: its external id is the line's ``external_id`` if it has one, else a hash of
its content, and a line whose id is already a live memory of the context is skipped. So an
interrupted import is finished by running it again, and a finished one run again writes
nothing.
"""

from __future__ import annotations

import hashlib
import json
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

import typer

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
from kioku.errors import InvalidInputError

if TYPE_CHECKING:
    from kioku.runtime import Runtime
    from kioku.service.imports import ImportResult
    from kioku.service.principal import Principal

_BATCH = 100
INTERRUPTED = 130
"""The exit code of a command stopped by Ctrl-C (128 + SIGINT), as a shell reports it."""


@dataclass(frozen=True)
class Line:
    """One memory of the file: where it is, its external id, its fields."""

    number: int
    key: str
    fields: dict[str, Any]


@dataclass
class Reading:
    """The lines of a file to import, and what reading it found."""

    lines: list[Line] = field(default_factory=list)
    duplicates: int = 0
    """Lines that repeat an earlier line of the file (the same external id and content)."""
    errors: list[dict[str, Any]] = field(default_factory=list)


def line_key(value: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """A line's external id and its memory's fields: its own ``external_id`` if it carries
    one, else ``sha256:`` and the hash of its content (keys sorted, so spacing and key order
    do not matter; where the line is in the file does not either)."""
    fields = dict(value)
    explicit = fields.pop("external_id", None)
    if explicit is not None:
        if not isinstance(explicit, str) or not explicit:
            raise InvalidInputError("must be a non-empty string", field="external_id")
        return explicit, fields
    canonical = json.dumps(fields, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(
        canonical.encode("utf-8", "surrogatepass")
    ).hexdigest(), fields


def read_lines(path: Path) -> Reading:
    """Every memory of a JSONL file, each external id once. A line that is not a JSON object
    stops the import (the file is not what it should be); a line whose ``external_id`` is
    wrong, or repeats an earlier line's with other content, is an error of that line."""
    reading = Reading()
    seen: dict[str, tuple[int, dict[str, Any]]] = {}
    with path.open(encoding="utf-8") as handle:
        for number, text in enumerate(handle, start=1):
            if not text.strip():
                continue
            try:
                value = json.loads(text)
            except json.JSONDecodeError as exc:
                raise InvalidInputError(f"line {number}: not JSON ({exc.msg})") from None
            if not isinstance(value, dict):
                raise InvalidInputError(f"line {number}: expected a JSON object")
            try:
                key, fields = line_key(value)
            except InvalidInputError as exc:
                reading.errors.append(_line_error(number, exc.code, exc.field, exc.message))
                continue
            earlier = seen.get(key)
            if earlier is None:
                seen[key] = (number, fields)
                reading.lines.append(Line(number, key, fields))
            elif earlier[1] == fields:
                reading.duplicates += 1
            else:
                message = f"repeats the external_id of line {earlier[0]}, with other fields"
                reading.errors.append(_line_error(number, "conflict", "external_id", message))
    return reading


def _line_error(number: int, code: str, field: str | None, message: str) -> dict[str, Any]:
    return {"line": number, "code": code, "field": field or "", "message": message}


@dataclass
class Tally:
    """What the import did so far."""

    created: int = 0
    skipped: int = 0
    errors: list[dict[str, Any]] = field(default_factory=list)

    def add(self, result: ImportResult, chunk: list[Line]) -> None:
        self.created += result.created
        self.skipped += result.skipped
        for item in result.results:
            if item.error:
                self.errors.append({"line": chunk[item.index].number, **item.error})


class Interrupts:
    """Ctrl-C during an import: the first one stops it after the batch being written (each
    batch is one transaction, so nothing is half-written); a second one stops it at once."""

    def __init__(self) -> None:
        self.requested = False

    def check(self) -> None:
        """Stop here (``KeyboardInterrupt``) if Ctrl-C was pressed."""
        if self.requested:
            raise KeyboardInterrupt

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True


@contextmanager
def deferred_interrupts(interrupts: Interrupts) -> Iterator[None]:
    """Ctrl-C as ``interrupts`` says, while the block runs (in the main thread only: signal
    handlers live there; elsewhere Ctrl-C raises where it lands, as usual)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, interrupts._handle)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def import_jsonl(
    path: Path = typer.Argument(..., exists=True, dir_okay=False, help="One memory per line."),
    context: str = ContextOption,
    strict: bool = typer.Option(
        False, "--strict", help="Validate every line first; write nothing if any is invalid."
    ),
    embed: bool = typer.Option(
        False,
        "--embed/--no-embed",
        help="Also wait here until every memory is embedded (vector-searchable), embedding "
        "them in this process. Default: the lines are written at once and their vectors "
        "computed in the background by kioku serve or kioku mcp on this database, as for "
        "any write (keyword search finds them meanwhile).",
    ),
    as_json: bool = JsonOption,
) -> None:
    """Import memories from a JSONL file (fields of remember), stamped source_type=import;
    a line already imported is skipped.

    A line is the same line as before if it has the same external_id (an optional field of
    its own), or without one the same content: run the same command again to finish an
    interrupted import; nothing is written twice."""
    from rich.progress import Progress

    from kioku.service.imports import JSONL_OWNER
    from kioku.settings import Settings

    interrupts = Interrupts()
    with deferred_interrupts(interrupts), handle_errors():  # Ctrl-C from now on: exit 130
        embedder = Settings().embedder.kind
        reading = read_lines(path)
        if strict:
            _validate(reading)
    tally = Tally(errors=list(reading.errors))
    interrupted = False
    pending = 0
    with (
        deferred_interrupts(interrupts),
        cli_runtime(embed=embed, background=embed) as runtime,
        handle_errors(),
        Progress(console=console, disable=as_json) as progress,
    ):
        principal = runtime.local_principal("import")
        context_id = runtime.contexts.resolve(principal, context).id
        task = progress.add_task(f"importing {path.name}", total=len(reading.lines))
        try:
            for start in range(0, len(reading.lines), _BATCH):
                interrupts.check()
                chunk = reading.lines[start : start + _BATCH]
                result = runtime.connectors.import_memories(
                    principal, context, [(line.key, line.fields) for line in chunk], atomic=strict
                )
                tally.add(result, chunk)
                progress.advance(task, len(chunk))
            if embed and runtime.embedding is not None:
                total = _pending(runtime, principal, context_id)
                vectors = progress.add_task("embedding", total=total)
                wait_for_vectors(
                    runtime, principal, context_id, interrupts,
                    lambda left: progress.update(vectors, completed=max(0, total - left)),
                )  # fmt: skip
        except KeyboardInterrupt:
            interrupted = True
        keys = [line.key for line in reading.lines]
        held = runtime.connectors.count_imported(principal, context_id, keys, owner=JSONL_OWNER)
        if embedder != "none":  # else no vector is ever computed: none is waited for
            pending = _pending(runtime, principal, context_id)
    tally.errors.sort(key=lambda error: error["line"])
    _report(path, context, reading, tally, held, pending, interrupted, as_json)
    if interrupted:
        raise typer.Exit(INTERRUPTED)
    if tally.errors and not as_json:  # --json: the errors are in the answer
        raise typer.Exit(1)


def _validate(reading: Reading) -> None:
    """--strict: every line must be a valid memory before anything is written."""
    from pydantic import ValidationError

    from kioku.errors import first_error
    from kioku.models import MemoryCreate

    if reading.errors:
        first = reading.errors[0]
        raise InvalidInputError(
            f"line {first['line']}: {first['message']}; nothing was imported", field=first["field"]
        )
    for line in reading.lines:
        try:
            MemoryCreate.model_validate(line.fields)
        except ValidationError as exc:
            where, message = first_error(exc)
            raise InvalidInputError(
                f"line {line.number}: {message}; nothing was imported", field=where
            ) from None


def _report(
    path: Path,
    context: str,
    reading: Reading,
    tally: Tally,
    in_context: int,
    pending: int,
    interrupted: bool,
    as_json: bool,
) -> None:
    in_file = len(reading.lines)
    if as_json:
        print_json(
            {
                "created": tally.created, "skipped": tally.skipped,
                "duplicates": reading.duplicates, "failed": len(tally.errors),
                "errors": tally.errors, "in_file": in_file, "in_context": in_context,
                "pending_vectors": pending, "interrupted": interrupted,
            }
        )  # fmt: skip
    if interrupted:
        if in_context < in_file:
            advice = "To finish, run the same command again: lines already imported are skipped."
        else:  # stopped while waiting for the vectors
            advice = f"{_vectors_later(pending, context)}."
        err_console.print(
            f"interrupted: {in_context} of the {count(in_file, 'memory', 'memories')} of "
            f"{path.name} are in context {context} ({tally.created} written now). {advice}",
            soft_wrap=True,
            highlight=False,
        )
        return
    if as_json:
        return
    skipped = f"; {tally.skipped} already there (skipped)" if tally.skipped else ""
    repeated = (
        f"; {count(reading.duplicates, 'repeated line')} left out" if reading.duplicates else ""
    )
    console.print(
        f"imported {count(tally.created, 'memory', 'memories')} into {context}{skipped}"
        f"{repeated}; {count(len(tally.errors), 'line')} failed",
        highlight=False,
    )
    for error in tally.errors[:20]:
        console.print(f"  line {error['line']}: {error['field']}: {error['message']}")
    if pending:
        console.print(f"{_vectors_later(pending, context)}.", soft_wrap=True, highlight=False)


def _vectors_later(pending: int, context: str) -> str:
    return (
        f"{count(pending, 'memory', 'memories')} of {context} wait for their vectors: "
        "kioku serve or kioku mcp on this database embeds them in the background "
        "(keyword search finds them meanwhile); --embed waits for them here"
    )


def wait_for_vectors(
    runtime: Runtime,
    principal: Principal,
    context_id: str,
    interrupts: Interrupts,
    progressed: Callable[[int], None],
) -> int:
    """Wait until the embedding worker (this process's, or a server's on this database) has
    embedded the context's pending memories, or nothing has moved for longer than a lease.
    Returns how many are still pending."""
    waiting = runtime.settings.embedder.lease_seconds + 10
    left = _pending(runtime, principal, context_id)
    quiet_since = time.monotonic()
    while left:
        interrupts.check()
        time.sleep(0.2)
        now_left = _pending(runtime, principal, context_id)
        if now_left < left:
            quiet_since = time.monotonic()
        left = now_left
        progressed(left)
        if time.monotonic() - quiet_since > waiting:
            break
    return left


def reembed(
    context: str = ContextOption,
    yes: bool = typer.Option(False, "--yes", help="Do not ask for confirmation."),
    as_json: bool = JsonOption,
) -> None:
    """Re-embed every memory of a context with the configured embedder (after a model change).

    A server on the same database may embed some of them meanwhile (it shares the queue): the
    progress counts what is done by anyone, and the command waits for the rest."""
    from rich.progress import Progress

    if not yes:
        typer.confirm(
            f"Drop and recompute every vector of context {context}?", abort=True, err=True
        )
    with cli_runtime() as runtime, handle_errors():
        if runtime.embedding is None or runtime.embedder is None:
            raise InvalidInputError("no embedder configured (KIOKU_EMBEDDER=none)")
        principal = runtime.local_principal("cli")
        row = runtime.contexts.resolve(principal, context)
        total = runtime.embedding.reset(principal.workspace_id, row.id)
        waiting = timedelta(seconds=runtime.settings.embedder.lease_seconds + 10)
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
