"""What recall reads about its candidates on SQLite, without loading their whole text:
the re-ranker's signals and the head of each text (to tell its language)."""

from __future__ import annotations

from collections.abc import Sequence

from kioku.storage.records import RankingSignals
from kioku.storage.sqlite.codec import decode_required_time
from kioku.storage.sqlite.connection import SQLiteDatabase
from kioku.storage.sqlite.filters import chunked, placeholders


class SQLiteCandidateLane:
    """Mixed into ``SQLiteStore``: ``text_heads`` and ``ranking_signals``."""

    db: SQLiteDatabase

    def text_heads(
        self, workspace_id: str, memory_ids: Sequence[str], chars: int
    ) -> dict[str, str]:
        found: dict[str, str] = {}
        conn = self.db.connection()
        for chunk in chunked(list(memory_ids)):
            rows = conn.execute(
                "SELECT id, substr(summary, 1, ?) || char(10) || substr(content, 1, ?) "
                f"FROM memories WHERE +workspace_id = ? AND id IN ({placeholders(chunk)})",
                (chars, chars, workspace_id, *chunk),
            ).fetchall()
            found.update((row[0], row[1]) for row in rows)
        return found

    def ranking_signals(
        self, workspace_id: str, memory_ids: Sequence[str]
    ) -> dict[str, RankingSignals]:
        found: dict[str, RankingSignals] = {}
        conn = self.db.connection()
        for chunk in chunked(list(memory_ids)):
            rows = conn.execute(
                "SELECT id, importance, created_at, access_count, context_id, thread FROM memories "
                f"WHERE +workspace_id = ? AND id IN ({placeholders(chunk)})",
                (workspace_id, *chunk),
            ).fetchall()
            votes = {
                vote[0]: (vote[1], vote[2])
                for vote in conn.execute(
                    "SELECT memory_id, sum(helpful), count(*) FROM retrieval_feedback "
                    f"WHERE workspace_id = ? AND memory_id IN ({placeholders(chunk)}) "
                    "GROUP BY memory_id",
                    (workspace_id, *chunk),
                )
            }
            for row in rows:
                helpful, total = votes.get(row[0], (0, 0))
                found[row[0]] = RankingSignals(
                    row[1],
                    decode_required_time(row[2]),
                    row[3],
                    helpful,
                    total - helpful,
                    None if row[5] is None else (row[4], row[5]),
                )
        return found
