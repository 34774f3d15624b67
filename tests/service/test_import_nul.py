"""Imports build memories without a request model, and still never reach PostgreSQL with a
NUL (issue 34, item 3): a Slack or Markdown document goes through ``ConnectorService.sync``,
a ``kioku import`` file through the transfer records; each refuses the document or line,
naming the field, before anything is written, on both backends (a 500 on PostgreSQL before)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from kioku.errors import InvalidInputError
from kioku.models import MemoryCreate
from kioku.runtime import Runtime
from kioku.service.connectors import ExternalItem
from kioku.service.principal import Principal
from kioku.service.transfer import export_workspace, import_file
from kioku.settings import Settings
from tests.conftest import backend_settings


@pytest.fixture(params=["sqlite", "postgres"])
def settings(request: pytest.FixtureRequest, tmp_path: Path) -> Settings:
    return backend_settings(request, tmp_path)


def live_count(runtime: Runtime, principal: Principal) -> int:
    return len(runtime.memories.list_memories(principal, "default", limit=100).items)


@pytest.mark.parametrize(
    ("item", "field"),
    [
        (ExternalItem("doc#1", "A section", content="text\x00more"), "upserts[1].content"),
        (ExternalItem("doc#1", "A\x00section"), "upserts[1].summary"),
        (ExternalItem("doc#1", "A section", tags=["ok", "t\x00"]), "upserts[1].tags[1]"),
        (ExternalItem("doc\x00#1", "A section"), "upserts[1].external_id"),
    ],
)
def test_a_synced_document_holding_a_nul_is_refused_whole(
    runtime: Runtime, principal: Principal, item: ExternalItem, field: str
) -> None:
    context = runtime.contexts.resolve(principal, "default")
    fine = ExternalItem("doc#0", "Deploys happen on Mondays")
    with pytest.raises(InvalidInputError, match="NUL") as refused:
        runtime.connectors.sync(principal, context, [fine, item], owner="markdown")
    assert refused.value.field == field
    assert live_count(runtime, principal) == 0  # the good document was not written either


def test_an_export_line_holding_a_nul_is_refused_before_anything_is_imported(
    runtime: Runtime, principal: Principal, tmp_path: Path
) -> None:
    runtime.memories.remember(principal, "default", MemoryCreate(summary="Deploys on Mondays"))
    lines: list[str] = []
    export_workspace(runtime.store, "default", datetime.now(UTC), lines.append)
    poisoned = [
        line.replace("Deploys on Mondays", "Deploys on\\u0000Mondays") for line in lines
    ]  # as a file exported from a SQLite database that once stored a NUL would hold it
    path = tmp_path / "default.jsonl"
    path.write_text("".join(poisoned), encoding="utf-8")
    with pytest.raises(InvalidInputError, match=r"line \d+: .*NUL") as refused:
        import_file(runtime.store, path, workspace="elsewhere")
    assert refused.value.field == "memory.summary"
    assert runtime.store.get_workspace_by_name("elsewhere") is None
