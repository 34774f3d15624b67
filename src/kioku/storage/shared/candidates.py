"""What recall reads about its candidates without loading their whole text: the re-ranker's
signals and the head of each text (to tell its language)."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Protocol

from kioku.storage.records import RankingSignals
from kioku.storage.shared.database import Database, select_among


class CandidateStore(Protocol):
    """Candidate reads, written once for both backends (tests/storage/test_text_heads_contract)."""

    sql: Database

    def reads_together(self, workspace_id: str) -> AbstractContextManager[None]:
        """The block's reads for ``workspace_id`` on this thread share one transaction
        (PostgreSQL: recall's reads after its legs cost one pool checkout, scope statement
        and commit, not one of each per read; SQLite: nothing changes). Reads only."""
        return self.sql.reads_together(workspace_id)

    def ranking_signals(
        self, workspace_id: str, memory_ids: Sequence[str]
    ) -> dict[str, RankingSignals]:
        """Re-ranking inputs for candidates, without loading their text."""
        d = self.sql.dialect
        with self.sql.read(workspace_id) as tx:
            rows = select_among(
                tx,
                d,
                "SELECT m.id, m.importance, m.created_at, m.access_count, m.context_id, m.thread, "
                "(SELECT count(*) FROM retrieval_feedback f WHERE f.workspace_id = m.workspace_id "
                "AND f.memory_id = m.id AND f.helpful) AS helpful, "
                "(SELECT count(*) FROM retrieval_feedback f WHERE f.workspace_id = m.workspace_id "
                "AND f.memory_id = m.id AND NOT f.helpful) AS unhelpful, "
                "CASE WHEN m.trust_tier = 'external' AND m.instruction_like THEN 1 ELSE 0 END "
                "AS suspicious "
                # The ids name the rows: the planner uses the unique id index, not a scan.
                f"FROM memories m WHERE {d.unindexed('m.workspace_id')} = %s AND {{among}}",
                "m.id",
                memory_ids,
                before=(workspace_id,),
            )
        return {
            row["id"]: RankingSignals(
                row["importance"],
                d.read_time(row["created_at"]),
                row["access_count"],
                row["helpful"],
                row["unhelpful"],
                None if row["thread"] is None else (row["context_id"], row["thread"]),
                bool(row["suspicious"]),
            )
            for row in rows
        }

    def text_heads(
        self, workspace_id: str, memory_ids: Sequence[str], chars: int
    ) -> dict[str, str]:
        """The first ``chars`` characters of each memory's summary and of its content, joined
        by a newline: enough to tell a memory's language without loading up to 1 MiB each."""
        d = self.sql.dialect
        query = (
            "SELECT id, substr(summary, 1, %s) || %s || substr(content, 1, %s) AS head "
            f"FROM memories WHERE {d.unindexed('workspace_id')} = %s AND {{among}}"
        )
        with self.sql.read(workspace_id) as tx:
            rows = select_among(tx, d, query, "id", memory_ids, (chars, "\n", chars, workspace_id))
        return {row["id"]: row["head"] for row in rows}
