"""Rows copied verbatim from ``/work/shared/BASELINES.md`` (measured by the CEO's harness).

They are constants on purpose: the report must show the same reference figures whatever
machine or checkout it is generated on. Update them only when BASELINES.md changes.
"""

from __future__ import annotations

SOURCE = "BASELINES.md (CEO's harness)"

LOCOMO_COLUMNS = ("n", "recall@5", "recall@10", "recall@20", "hit@10", "mrr@10")
LOCOMO: dict[str, tuple[str, ...]] = {
    "bm25": ("883", "0.505", "0.577", "0.664", "0.644", "0.418"),
    "dense-minilm": ("883", "0.455", "0.552", "0.651", "0.622", "0.356"),
    "hybrid-rrf": ("883", "0.535", "0.623", "0.743", "0.689", "0.447"),
    "chromadb": ("883", "0.455", "0.553", "0.650", "0.623", "0.356"),
    "mem0": ("883", "0.455", "0.552", "0.651", "0.622", "0.356"),
    "mcp-memory": ("883", "0.000", "0.000", "0.000", "0.000", "0.000"),
    "dense-multilingual": ("883", "0.427", "0.503", "0.597", "0.553", "0.354"),
    "hybrid-rrf-multilingual": ("883", "0.511", "0.598", "0.700", "0.663", "0.427"),
    "dense-use": ("883", "0.256", "0.349", "0.454", "0.400", "0.199"),
    "hybrid-rrf-use": ("883", "0.411", "0.528", "0.643", "0.591", "0.325"),
}

JSQUAD_COLUMNS = ("n", "recall@1", "recall@5", "recall@10", "mrr@10")
JSQUAD: dict[str, tuple[str, ...]] = {
    "bm25": ("4442", "0.905", "0.964", "0.976", "0.931"),
    "dense-minilm": ("4442", "0.210", "0.317", "0.363", "0.255"),
    "hybrid-rrf": ("4442", "0.394", "0.721", "0.909", "0.529"),
    "dense-multilingual": ("4442", "0.826", "0.946", "0.969", "0.880"),
    "hybrid-rrf-multilingual": ("4442", "0.900", "0.971", "0.982", "0.931"),
    "chromadb": ("4442", "0.210", "0.316", "0.362", "0.255"),
    "mem0": ("4442", "0.210", "0.317", "0.363", "0.255"),
    "mcp-memory": ("4442", "0.010", "0.011", "0.011", "0.011"),
}

LATENCY_COLUMNS = ("items/s", "p50 ms", "p95 ms", "p99 ms", "peak RSS MB")
LATENCY: dict[str, tuple[str, ...]] = {
    "bm25": ("11188", "0.7", "0.9", "–", "66"),
    "dense-minilm": ("88", "15.4", "24.6", "–", "1049"),
    "hybrid-rrf": ("84", "17.9", "24.9", "–", "1112"),
    "chromadb": ("74", "20.0", "28.1", "–", "1219"),
    "mem0": ("32", "29.2", "42.5", "–", "1108"),
    "mcp-memory": ("4531", "4.3", "6.5", "–", "173"),
    "dense-multilingual": ("25", "15.5", "23.0", "–", "155"),
    "hybrid-rrf-multilingual": ("22", "18.0", "29.5", "–", "178"),
    "dense-use": ("27", "215.9", "244.1", "–", "170"),
    "hybrid-rrf-use": ("27", "228.0", "268.5", "–", "190"),
}
