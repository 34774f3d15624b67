"""Migration 0019 on a database in use (SQLite, and PostgreSQL as the application role under
row-level security): a verdict the tripwire took on the first 2,048 characters of a long
external memory is cleared for the sweep to take again; other verdicts stay."""

from __future__ import annotations

from sqlalchemy import inspect as schema_of

from kioku.storage.migrations import downgrade_database, upgrade_database
from tests.storage.test_provenance_migration import T, run, url  # noqa: F401 (the fixture)

OLD = "0018_consent_quota"
LONG = "x" * 2_100


def memory(mid: str, tier: str, verdict: str, content: str = "") -> str:
    return (
        "INSERT INTO memories (id, workspace_id, context_id, summary, content, source_type, "
        f"trust_tier, created_at, updated_at, instruction_like) VALUES ('{mid}', 'ws', 'c', "
        f"'memory {mid}', '{content}', 'manual', '{tier}', :t, :t, {verdict})"
    )


def test_long_external_verdicts_are_cleared_and_others_kept(url: str) -> None:  # noqa: F811
    upgrade_database(url, OLD)
    run(
        url,
        "INSERT INTO workspaces (id, name, created_at) VALUES ('ws', 'default', :t)",
        "INSERT INTO contexts (id, workspace_id, name, trust_tier, created_at, updated_at) "
        "VALUES ('c', 'ws', 'c', 'external', :t, :t)",
        memory("long-false", "external", "false", LONG),
        memory("long-true", "external", "true", LONG),
        memory("short", "external", "false", "short text"),
        memory("trusted-long", "trusted", "NULL", LONG),
        params={"t": T},
    )
    upgrade_database(url)
    rows = run(url, "SELECT id, instruction_like FROM memories")
    verdicts = {r[0]: None if r[1] is None else bool(r[1]) for r in rows}
    assert verdicts == {"long-false": None, "long-true": None, "short": False, "trusted-long": None}
    found = run(url, "SELECT id FROM memories WHERE trust_tier = 'external' "
                "AND instruction_like IS NULL AND deleted_at IS NULL")  # fmt: skip
    assert sorted(r[0] for r in found) == ["long-false", "long-true"]
    downgrade_database(url, OLD)
    assert run(url, "SELECT count(*) FROM memories")[0][0] == 4


def index_names(database: str) -> set[str]:
    from sqlalchemy import create_engine

    engine = create_engine(database)
    try:
        return {i["name"] for i in schema_of(engine).get_indexes("memories") if i["name"]}
    finally:
        engine.dispose()


def test_the_sweep_index_comes_and_goes(url: str) -> None:  # noqa: F811
    upgrade_database(url)
    assert "ix_memories_unjudged" in index_names(url)
    downgrade_database(url, OLD)
    assert "ix_memories_unjudged" not in index_names(url)
