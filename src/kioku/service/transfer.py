"""Export a workspace as JSONL, import one: lossless between SQLite and PostgreSQL.

The file: a header line, then connectors, contexts, memories (every column, the vector,
soft-deleted ones too), graph edges, feedback events (in append order) and live state keys,
then an ``end`` line with the counts (a truncated file is refused). Import checks every line
before writing anything, refuses ids the target database already holds, imports a context
into the target's empty context of the same name (a ``kioku serve`` started first made a
``default``) and refuses one that holds something, and restores the rows in one transaction.
docs/scaling.md describes the format.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, NoReturn

from pydantic import ValidationError

from kioku.errors import ConflictError, InvalidInputError, NotFoundError, first_error
from kioku.service.memories import lexical_text
from kioku.service.transfer_format import (
    RECORDS,
    ConnectorRecord,
    ContextRecord,
    EdgeRecord,
    FeedbackRecord,
    MemoryRecord,
    StateRecord,
    canonical_json,
    encode_row,
    parse_json,
)
from kioku.storage.migrations import head_revision
from kioku.storage.ports import TransferPort
from kioku.storage.transfer import IdKind, TransferRow

FORMAT = 1
HEADER = "kioku-export"
END = "end"
RESERVED: dict[str, str] = {}
"""Kinds a future format may use: refused with a message rather than as unknown."""
OPTIONAL_COUNTS = {"edge", "connector"}
"""Kinds an end record may leave out when the file has none (files written before them)."""
_KINDS = list(RECORDS)
Progress = Callable[[int, int | None], None]
"""Called after each record with (records done, records in all if known)."""


@dataclass
class TransferSummary:
    """What an export wrote or an import restored."""

    workspace: str
    counts: dict[str, int]
    adopted: list[str] = field(default_factory=list)
    """Contexts of the file imported into the target's own empty context of the same name
    (its id kept): e.g. the ``default`` a ``kioku serve`` made before the import."""


# ---------------------------------------------------------------- export


def export_workspace(
    store: TransferPort,
    workspace: str,
    now: datetime,
    write: Callable[[str], object],
    progress: Progress | None = None,
) -> TransferSummary:
    """Write the export of ``workspace`` line by line (each ending in a newline) to ``write``.

    Nothing time-dependent is written but the data itself, so exporting the same rows from
    any backend gives the same bytes. State keys expired at ``now`` are left out.
    """
    row = store.get_workspace_by_name(workspace)
    if row is None:
        raise NotFoundError(f"workspace {workspace!r} not found", field="workspace")
    header = {"kind": HEADER, "format": FORMAT, "workspace": workspace}
    write(canonical_json({**header, "schema_revision": head_revision()}) + "\n")
    counts = Counter({kind: 0 for kind in _KINDS})
    for stored in store.dump_workspace(row.id, now):
        record = encode_row(stored)
        counts[record["kind"]] += 1
        write(canonical_json(record) + "\n")
        if progress is not None:
            progress(counts.total(), None)
    write(canonical_json({"kind": END, "counts": dict(counts)}) + "\n")
    return TransferSummary(workspace, dict(counts))


# ---------------------------------------------------------------- import


@dataclass
class _Check:
    """What the first pass learns: the header, the ids to keep, the context names."""

    workspace: str = ""
    counts: Counter[str] = field(default_factory=Counter)
    ids: dict[IdKind, set[str]] = field(
        default_factory=lambda: {
            "connector": set(), "context": set(), "memory": set(), "feedback": set()
        }
    )  # fmt: skip
    connector_names: set[tuple[str, str]] = field(default_factory=set)
    context_names: set[str] = field(default_factory=set)
    context_ids: dict[str, str] = field(default_factory=dict)
    """The file's context id of each context name."""
    memory_contexts: dict[str, str] = field(default_factory=dict)
    context_dims: dict[str, int | None] = field(default_factory=dict)
    state_keys: set[tuple[str, str]] = field(default_factory=set)
    edges: set[tuple[str, str]] = field(default_factory=set)


def import_file(
    store: TransferPort, path: Path, workspace: str | None = None, progress: Progress | None = None
) -> TransferSummary:
    """Restore an export into ``workspace`` (default: the exported one; created if missing).

    A context of the file whose name the target workspace already uses is imported into that
    context when it is empty (no memory, forgotten ones included, and no state key, expired
    ones included: ``held_contexts``), which keeps its id; the summary names them. All or
    nothing: a bad line, an id the database already holds or a context name taken by a
    context that holds something raises before anything is written.
    """
    check = check_file(path)
    name = workspace or check.workspace
    _check_workspace_name(name)
    target = store.get_workspace_by_name(name)
    adopted = {} if target is None else _adoptable(store, target.id, name, check)
    written: dict[IdKind, set[str]] = {
        **check.ids,
        "context": check.ids["context"] - adopted.keys(),
    }
    for kind, ids in written.items():
        clash = store.existing_ids(kind, sorted(ids))
        if clash:
            raise ConflictError(
                f"{len(clash)} {kind} id(s) already exist in the target database "
                f"(first: {min(clash)}); nothing was imported",
                field=f"{kind}.id",
            )
    target = target or store.ensure_workspace(name)
    total = check.counts.total()
    rows = _rows(path, target.id, total, progress, adopted)
    store.restore_workspace(target.id, rows, adopt=set(adopted.values()))
    counts = {kind: check.counts[kind] for kind in _KINDS}
    names = {file_id: context for context, file_id in check.context_ids.items()}
    return TransferSummary(name, counts, sorted(names[file_id] for file_id in adopted))


def _adoptable(store: TransferPort, workspace_id: str, name: str, check: _Check) -> dict[str, str]:
    """The file's context ids whose names the workspace already uses, each with the id of the
    workspace's context of that name; raises if one of those holds anything."""
    existing = {c.name: c.id for c in store.list_contexts(workspace_id)}
    taken = sorted(check.context_names & existing.keys())
    held = store.held_contexts(workspace_id, [existing[context] for context in taken])
    if full := [context for context in taken if existing[context] in held]:
        raise ConflictError(
            f"workspace {name!r} already has contexts named {', '.join(full)} that hold "
            "memories or state keys; nothing was imported. Import into another workspace "
            "(--workspace NEW_NAME); or, if their contents may go, erase them first with "
            f"kioku purge --context {full[0]} --yes (KIOKU_DATABASE_URL set to this database; "
            "it purges the default workspace) and import again",
            field="workspace",
        )
    return {check.context_ids[context]: existing[context] for context in taken}


def check_file(path: Path) -> _Check:
    """Validate every line of an export (first pass); raise on the first bad one."""
    check = _Check()
    position = -1  # index in _KINDS of the last record's kind: kinds come in order
    ended = False
    for number, record in _records(path):
        kind = record.get("kind")
        if ended:
            _fail(number, "kind", "nothing may follow the end record")
        if not check.workspace or kind == HEADER:
            _check_header(number, record, check)
        elif kind == END:
            _check_end(number, record, check)
            ended = True
        else:
            model = _validate(number, record)
            if _KINDS.index(str(kind)) < position:
                _fail(number, "kind", f"a {kind} record after {_KINDS[position]} records")
            position = _KINDS.index(str(kind))
            _check_references(number, model, check)
            check.counts[str(kind)] += 1
    if not check.workspace:
        raise InvalidInputError(f"{path.name} is empty: not a kioku export")
    if not ended:
        raise InvalidInputError(
            f"{path.name} has no end record (a truncated export?); nothing was imported"
        )
    return check


def _rows(
    path: Path,
    workspace_id: str,
    total: int,
    progress: Progress | None,
    adopted: dict[str, str] | None = None,
) -> Iterator[TransferRow]:
    """The second pass: the checked lines as rows to restore (tokens recomputed here); a
    context of ``adopted`` (the file's id: the target's) takes the target's id everywhere."""
    done = 0
    for number, record in _records(path):
        if record.get("kind") in (HEADER, END):
            continue
        model = _validate(number, record)
        if adopted:
            model = _renamed(model, adopted)
        if isinstance(model, ConnectorRecord | ContextRecord):
            yield model.to_row(workspace_id)
        elif isinstance(model, MemoryRecord):
            tokens = lexical_text(model.summary, model.content, model.tags)
            yield model.to_dump(workspace_id, tokens)
        elif isinstance(model, EdgeRecord | FeedbackRecord):
            yield model.to_row(workspace_id)
        else:
            assert isinstance(model, StateRecord)
            yield model.to_row()
        done += 1
        if progress is not None:
            progress(done, total)


def _renamed(model: Any, adopted: dict[str, str]) -> Any:
    """``model`` with an adopted context's id replaced by the target's."""
    if isinstance(model, ContextRecord) and model.id in adopted:
        return model.model_copy(update={"id": adopted[model.id]})
    context_id = getattr(model, "context_id", None)
    if context_id in adopted:
        return model.model_copy(update={"context_id": adopted[context_id]})
    return model


def _records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = parse_json(line)
            except ValueError as exc:
                _fail(number, None, f"not JSON ({exc})")
            if not isinstance(record, dict):
                _fail(number, None, "expected a JSON object")
            yield number, record


def _validate(number: int, record: dict[str, Any]) -> Any:
    kind = record.get("kind")
    if kind in RESERVED:
        _fail(number, "kind", f"{kind!r} records are reserved for {RESERVED[str(kind)]}")
    model = RECORDS.get(kind) if isinstance(kind, str) else None
    if model is None:
        expected = ", ".join([*_KINDS, END])
        _fail(number, "kind", f"unknown kind {json.dumps(kind)} (expected one of {expected})")
    try:
        return model.model_validate(record)
    except ValidationError as exc:
        _fail(number, *first_error(exc, f"{kind}."))


def _check_header(number: int, record: dict[str, Any], check: _Check) -> None:
    if check.workspace or record.get("kind") != HEADER:
        _fail(number, "kind", f"the first line must be the {HEADER} header (only)")
    if record.get("format") != FORMAT:
        _fail(number, "format", f"format {record.get('format')!r} (this kioku reads {FORMAT})")
    workspace = record.get("workspace")
    if not isinstance(workspace, str):
        _fail(number, "workspace", "expected the workspace name")
    _check_workspace_name(workspace, number)
    check.workspace = workspace


def _check_workspace_name(name: str, number: int | None = None) -> None:
    if not 1 <= len(name) <= 64:
        message = "a workspace name has 1 to 64 characters"
        if number is None:
            raise InvalidInputError(message, field="workspace")
        _fail(number, "workspace", message)


def _check_end(number: int, record: dict[str, Any], check: _Check) -> None:
    expected = {kind: check.counts[kind] for kind in _KINDS}
    counts = record.get("counts")
    if isinstance(counts, dict):
        counts = {kind: 0 for kind in OPTIONAL_COUNTS} | counts
    if set(record) != {"kind", "counts"} or counts != expected:
        _fail(number, "counts", f"the end record does not match the file ({expected})")


def _check_references(number: int, model: Any, check: _Check) -> None:
    """Ids unique, and every reference to a row earlier in the file (the restore order)."""
    if isinstance(model, ConnectorRecord):
        _unique(number, "connector.id", model.id, check.ids["connector"])
        _unique(number, "connector.name", (model.connector_kind, model.name), check.connector_names)
    elif isinstance(model, ContextRecord):
        _unique(number, "context.id", model.id, check.ids["context"])
        _unique(number, "context.name", model.name, check.context_names)
        check.context_ids[model.name] = model.id
        if model.connector_id is not None and model.connector_id not in check.ids["connector"]:
            _fail(number, "context.connector_id", "no connector with this id above in the file")
        check.context_dims[model.id] = model.embedding_dim
    elif isinstance(model, MemoryRecord):
        _unique(number, "memory.id", model.id, check.ids["memory"])
        _known(number, "memory.context_id", model.context_id, check.ids["context"])
        check.memory_contexts[model.id] = model.context_id
        # The PostgreSQL vector leg's exact search relies on it (vector_leg.py).
        if model.embedding is not None and model.embedding.dim != check.context_dims.get(
            model.context_id
        ):
            _fail(number, "memory.embedding.dim", "not its context's embedding_dim")
    elif isinstance(model, EdgeRecord):
        _unique(number, "edge", (model.source_id, model.target_id), check.edges)
        for end in ("source_id", "target_id"):
            if check.memory_contexts.get(getattr(model, end)) != model.context_id:
                _fail(number, f"edge.{end}", "no memory with this id in this context above")
    elif isinstance(model, FeedbackRecord):
        _unique(number, "feedback.id", model.id, check.ids["feedback"])
        if check.memory_contexts.get(model.memory_id) != model.context_id:
            _fail(number, "feedback.memory_id", "no memory with this id in this context above")
    elif isinstance(model, StateRecord):
        _known(number, "state.context_id", model.context_id, check.ids["context"])
        _unique(number, "state.key", (model.context_id, model.key), check.state_keys)


def _unique(number: int, where: str, value: Any, seen: set[Any]) -> None:
    if value in seen:
        _fail(number, where, "appears twice in the file")
    seen.add(value)


def _known(number: int, where: str, value: str, ids: set[str]) -> None:
    if value not in ids:
        _fail(number, where, f"no context {value!r} above in the file")


def _fail(number: int, where: str | None, message: str) -> NoReturn:
    raise InvalidInputError(f"line {number}: {message}; nothing was imported", field=where)
