"""kioku's BM25 saturation and length constants, one pair for both backends.

BM25 scores a memory ``sum idf(t) × tf × (k1 + 1) / (tf + k1 × (1 − b + b × dl / avgdl))``.
The textbook pair (k1 1.2, b 0.75, FTS5's and Lucene's defaults) suits documents far longer
than a memory; agent memories are short notes and chat turns, where a second occurrence of a
word says little more than the first and a longer note is not less about its words. Lower
values rank better there. The pair was chosen through the whole recall: the best LoCoMo
recall@10 plus JSQuAD recall@5 on their development halves (conversations 26, 41, 43; even
questions) among the pairs with which the retrieval gate passes (docs/benchmarks.md, "BM25
constants for short memories"). Lower pairs (0.2 / 0.2) scored better still on both
benchmarks but put the product below its vector leg on the golden set's japanese bucket.

PostgreSQL scores with them exactly. SQLite's FTS5 ranks with its own fixed pair, so its leg
takes FTS5's best rows as candidates and re-scores them with these (``sqlite/bm25.py``).
"""

from __future__ import annotations

K1 = 0.5
"""Term-frequency saturation: how much a repeated word adds (1.2 in FTS5 and Lucene)."""
B = 0.3
"""Length normalisation: how much a long memory's words count less (0.75 in FTS5 and Lucene)."""
