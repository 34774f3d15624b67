"""What recall reads about its candidates without loading their whole text: the re-ranker's
signals with the head of each text (to tell its language), and the text to embed of those
still waiting for a vector."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Protocol

from kioku.storage.records import EMBED_MAX_CHARS, RankingSignals, embedding_text
from kioku.storage.shared.database import Database, select_among


class CandidateStore(Protocol):
    """Candidate reads, written once for both backends (tests/storage/
    test_candidates_contract.py)."""

    sql: Database

    def reads_together(self, workspace_id: str) -> AbstractContextManager[None]:
        """The block's reads for ``workspace_id`` on this thread share one transaction
        (PostgreSQL: recall's reads after its legs cost one pool checkout, scope statement
        and commit, not one of each per read; SQLite: nothing changes). Reads only."""
        return self.sql.reads_together(workspace_id)

    def ranking_signals(
        self, workspace_id: str, memory_ids: Sequence[str], head_chars: int = 0
    ) -> dict[str, RankingSignals]:
        """What recall reads about its candidates, in one statement and without their text:
        re-ranking inputs, whether each still waits for its vector, and (``head_chars`` > 0)
        the first ``head_chars`` characters of its summary and of its content, joined by a
        newline (enough to tell its language)."""
        d = self.sql.dialect
        head = "substr(m.summary, 1, %s) || %s || substr(m.content, 1, %s)" if head_chars else "''"
        head_params = (head_chars, "\n", head_chars) if head_chars else ()
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
                "AS suspicious, "
                "CASE WHEN m.embedding_status = 'pending' THEN 1 ELSE 0 END AS pending, "
                f"{head} AS head "
                # The ids name the rows: the planner uses the unique id index, not a scan.
                f"FROM memories m WHERE {d.unindexed('m.workspace_id')} = %s AND {{among}}",
                "m.id",
                memory_ids,
                before=(*head_params, workspace_id),
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
                row["head"],
                bool(row["pending"]),
            )
            for row in rows
        }

    def pending_texts(
        self, workspace_id: str, memory_ids: Sequence[str]
    ) -> dict[str, tuple[str, str]]:
        """Of ``memory_ids``, the live memories still waiting for a vector: (context id, the
        text they will be embedded from). Recall embeds a few of them on the fly."""
        d = self.sql.dialect
        query = (
            # Never more of the content than is embedded (memories hold up to 1 MiB).
            "SELECT id, context_id, summary, substr(content, 1, %s) AS content FROM memories "
            f"WHERE {d.unindexed('workspace_id')} = %s AND embedding_status = 'pending' "
            "AND deleted_at IS NULL AND {among}"
        )
        with self.sql.read(workspace_id) as tx:
            rows = select_among(tx, d, query, "id", memory_ids, (EMBED_MAX_CHARS, workspace_id))
        return {
            row["id"]: (row["context_id"], embedding_text(row["summary"], row["content"]))
            for row in rows
        }
