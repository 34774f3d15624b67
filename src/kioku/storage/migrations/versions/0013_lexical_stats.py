"""BM25's corpus statistics kept by PostgreSQL itself, per workspace and context.

The lexical leg needs, for its scope (a workspace's contexts): N (live memories), avgdl (their
mean ``lexical_length``) and each query term's df (how many of them hold it). Counting them
per query reads every posting of a common word: at a million memories that was the leg's
tail (docs/benchmarks-postgres-scale.md, *Issue 21 measurements*). Two tables hold them:

- ``lexical_scope_stats (workspace_id, context_id)``: n, total_length;
- ``lexical_term_stats (workspace_id, context_id, term)``: df.

Both count the live memories (``deleted_at IS NULL``) exactly as the old count did, and a
trigger on ``memories`` keeps them in the writing transaction (so a search never sees
statistics that disagree with the rows it scores): one statement-level trigger per event,
with transition tables, so a multi-row INSERT (``remember_batch``) folds into one upsert per
distinct term. An UPDATE changes the statistics only for the rows whose tokens, length,
liveness or context changed (an embedding or access-count update cancels out and writes
nothing). Rows whose count reaches zero are deleted (a forgotten context leaves no terms
behind). Every write that changes anything upserts its contexts' scope rows first (even by
zero), in (workspace, context) order, then the term rows in (workspace, context, term) order:
the scope row is where the writers of one context queue, before they touch a term row, so
they cannot deadlock on the terms.

PostgreSQL only (SQLite's FTS5 keeps its own statistics per workspace table, see 0009).
Row-level security as on every tenant table; the backfill runs with
``kioku.workspace_id = '*'``. No foreign keys: the trigger itself removes a deleted context's
rows (a cascade would race the trigger's own writes).

Revision ID: 0013_lexical_stats
Revises: 0011_threads
"""

from __future__ import annotations

from alembic import op

revision = "0013_lexical_stats"
down_revision = "0011_threads"
branch_labels = None
depends_on = None

SCOPE = "current_setting('kioku.workspace_id', true)"

_CHANGED = (
    "o.lexical_tokens IS DISTINCT FROM n.lexical_tokens "
    "OR o.lexical_length IS DISTINCT FROM n.lexical_length "
    "OR (o.deleted_at IS NULL) <> (n.deleted_at IS NULL) "
    "OR o.context_id IS DISTINCT FROM n.context_id"
)

FUNCTION = f"""
CREATE FUNCTION memories_lexical_stats() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    ws text[]; ctx text[]; toks tsvector[]; lens bigint[]; signs bigint[];
BEGIN
    IF TG_OP = 'INSERT' THEN
        SELECT array_agg(workspace_id), array_agg(context_id), array_agg(lexical_tokens),
               array_agg(lexical_length::bigint), array_agg(1::bigint)
          INTO ws, ctx, toks, lens, signs
          FROM new_rows WHERE deleted_at IS NULL;
    ELSIF TG_OP = 'DELETE' THEN
        SELECT array_agg(workspace_id), array_agg(context_id), array_agg(lexical_tokens),
               array_agg(lexical_length::bigint), array_agg(-1::bigint)
          INTO ws, ctx, toks, lens, signs
          FROM old_rows WHERE deleted_at IS NULL;
    ELSE
        SELECT array_agg(c.workspace_id), array_agg(c.context_id), array_agg(c.lexical_tokens),
               array_agg(c.lexical_length::bigint), array_agg(c.sign)
          INTO ws, ctx, toks, lens, signs
          FROM (
            SELECT o.workspace_id, o.context_id, o.lexical_tokens, o.lexical_length,
                   -1::bigint AS sign
              FROM old_rows o JOIN new_rows n ON n.workspace_id = o.workspace_id AND n.id = o.id
             WHERE o.deleted_at IS NULL AND ({_CHANGED})
            UNION ALL
            SELECT n.workspace_id, n.context_id, n.lexical_tokens, n.lexical_length, 1
              FROM old_rows o JOIN new_rows n ON n.workspace_id = o.workspace_id AND n.id = o.id
             WHERE n.deleted_at IS NULL AND ({_CHANGED})
          ) c;
    END IF;
    IF ws IS NULL THEN
        RETURN NULL;
    END IF;
    INSERT INTO lexical_scope_stats AS s (workspace_id, context_id, n, total_length)
    SELECT x.w, x.c, sum(x.sg), sum(x.sg * x.l)
      FROM unnest(ws, ctx, lens, signs) AS x(w, c, l, sg)
     GROUP BY x.w, x.c
     ORDER BY x.w, x.c
    ON CONFLICT (workspace_id, context_id) DO UPDATE
       SET n = s.n + excluded.n, total_length = s.total_length + excluded.total_length;
    INSERT INTO lexical_term_stats AS s (workspace_id, context_id, term, df)
    SELECT x.w, x.c, u.lexeme, sum(x.sg)
      FROM unnest(ws, ctx, toks, signs) AS x(w, c, t, sg), unnest(x.t) AS u
     GROUP BY x.w, x.c, u.lexeme HAVING sum(x.sg) <> 0
     ORDER BY x.w, x.c, u.lexeme
    ON CONFLICT (workspace_id, context_id, term) DO UPDATE SET df = s.df + excluded.df;
    IF -1 = ANY(signs) THEN
        DELETE FROM lexical_scope_stats s
         USING (SELECT DISTINCT x.w, x.c FROM unnest(ws, ctx, signs) AS x(w, c, sg)
                 WHERE x.sg < 0) d
         WHERE s.workspace_id = d.w AND s.context_id = d.c AND s.n <= 0;
        DELETE FROM lexical_term_stats s
         USING (SELECT DISTINCT x.w, x.c, u.lexeme
                  FROM unnest(ws, ctx, toks, signs) AS x(w, c, t, sg), unnest(x.t) AS u
                 WHERE x.sg < 0) d
         WHERE s.workspace_id = d.w AND s.context_id = d.c AND s.term = d.lexeme
           AND s.df <= 0;
    END IF;
    RETURN NULL;
END $$
"""

POSTGRES = [
    """
    CREATE TABLE lexical_scope_stats (
        workspace_id  text NOT NULL,
        context_id    text NOT NULL,
        n             bigint NOT NULL,
        total_length  bigint NOT NULL,
        PRIMARY KEY (workspace_id, context_id)
    )
    """,
    """
    CREATE TABLE lexical_term_stats (
        workspace_id  text NOT NULL,
        context_id    text NOT NULL,
        term          text NOT NULL,
        df            bigint NOT NULL,
        PRIMARY KEY (workspace_id, context_id, term)
    )
    """,
    "SELECT set_config('kioku.workspace_id', '*', true)",
    """
    INSERT INTO lexical_scope_stats (workspace_id, context_id, n, total_length)
    SELECT workspace_id, context_id, count(*), sum(lexical_length)
      FROM memories WHERE deleted_at IS NULL GROUP BY 1, 2
    """,
    """
    INSERT INTO lexical_term_stats (workspace_id, context_id, term, df)
    SELECT m.workspace_id, m.context_id, u.lexeme, count(*)
      FROM memories m, unnest(m.lexical_tokens) AS u
     WHERE m.deleted_at IS NULL GROUP BY 1, 2, 3
    """,
    FUNCTION,
    "CREATE TRIGGER memories_lexical_stats_insert AFTER INSERT ON memories "
    "REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT "
    "EXECUTE FUNCTION memories_lexical_stats()",
    "CREATE TRIGGER memories_lexical_stats_update AFTER UPDATE ON memories "
    "REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT "
    "EXECUTE FUNCTION memories_lexical_stats()",
    "CREATE TRIGGER memories_lexical_stats_delete AFTER DELETE ON memories "
    "REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT "
    "EXECUTE FUNCTION memories_lexical_stats()",
    *(
        statement
        for table in ("lexical_scope_stats", "lexical_term_stats")
        for statement in (
            f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY",
            f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY",
            f"CREATE POLICY tenant_isolation ON {table} "
            f"USING (workspace_id = {SCOPE} OR {SCOPE} = '*')",
        )
    ),
]


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for statement in POSTGRES:
        op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for event in ("insert", "update", "delete"):
        op.execute(f"DROP TRIGGER IF EXISTS memories_lexical_stats_{event} ON memories")
    op.execute("DROP FUNCTION IF EXISTS memories_lexical_stats()")
    op.execute("DROP TABLE IF EXISTS lexical_term_stats")
    op.execute("DROP TABLE IF EXISTS lexical_scope_stats")
