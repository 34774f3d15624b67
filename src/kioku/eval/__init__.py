"""The retrieval evaluation gate (docs/eval.md): golden set, metrics, leakage checks, harvest.

``kioku eval retrieval`` and ``kioku eval leakage`` are the gate (docs/eval.md); ``kioku eval
harvest`` proposes new golden items from feedback for a person to review.
"""
