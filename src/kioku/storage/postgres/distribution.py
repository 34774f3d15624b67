"""How kioku's PostgreSQL tables spread over a Citus cluster: by tenant, ``workspace_id``.

Every table is in exactly one of three groups (``tests/storage/test_postgres_distribution.py``
checks the live schema against them, and every statement the contract suite sends against
:data:`DISTRIBUTED`):

- **distributed** by ``workspace_id``, all colocated: a tenant's rows of all
  of them live on one node, and every statement kioku sends them names one workspace (or, in
  cross-tenant upkeep, joins them only on equal ``workspace_id``), so each runs on one node or
  as a colocated multi-shard statement;
- **reference** tables, copied to every node: looked up before the tenant is known (a key by
  its hash, an OAuth client by its id, a workspace by its name) or referenced by distributed
  tables' foreign keys (``workspaces``);
- **coordinator-local** tables, which belong to no tenant: ``audit_events`` keeps denials with
  no workspace, ``job_claims`` one row per background job; ``alembic_version`` is the schema's.

``citus_statements()`` gives the statements that distribute a migrated database (see
docs/scaling.md for the steps around them).
"""

from __future__ import annotations

DISTRIBUTION_COLUMN = "workspace_id"

DISTRIBUTED: tuple[str, ...] = (
    # Parents before children (a foreign key must point at a table already distributed); all
    # are colocated with the first.
    "connectors",
    "contexts",
    "memories",
    "lexical_scope_stats",
    "lexical_term_stats",
    "retrieval_feedback",
    "agent_states",
    "memory_edges",
    "sleep_runs",
    "sleep_actions",
    "ingest_requests",
)
REFERENCE: tuple[str, ...] = ("workspaces", "api_keys", "oauth_clients", "oauth_grants")
COORDINATOR_LOCAL: tuple[str, ...] = ("audit_events", "job_claims", "alembic_version")


def citus_statements() -> list[str]:
    """The statements, in order, that turn a migrated kioku database into a Citus one: the
    reference tables first (distributed tables' foreign keys point at ``workspaces``), then
    every tenant table by ``workspace_id``, parents first, colocated with the first."""
    statements = [f"SELECT create_reference_table('{table}');" for table in REFERENCE]
    first, *rest = DISTRIBUTED
    statements.append(f"SELECT create_distributed_table('{first}', '{DISTRIBUTION_COLUMN}');")
    statements += [
        f"SELECT create_distributed_table('{table}', '{DISTRIBUTION_COLUMN}', "
        f"colocate_with => '{first}');"
        for table in rest
    ]
    return statements
