"""The retrieval evaluation gate (SPEC §9): golden set, metrics, leakage checks, harvest.

``kioku eval retrieval`` and ``kioku eval leakage`` are the gate (docs/eval.md); ``kioku eval
harvest`` proposes new golden items from feedback for a person to review.
"""
