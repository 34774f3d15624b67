"""``kioku bench``: LoCoMo + JSQuAD retrieval quality, ingest throughput and recall latency.

Entry point: ``kioku.benchmark.run.run_benchmark``. Protocol: ``../shared/BASELINES.md``.
"""
