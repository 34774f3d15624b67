"""Recall's ranking as a pipeline of named stages (``pipeline.STAGES``, docs/architecture.md).

Each stage is one module with one entry point ``run(ranking, tools)``: it reads what the
``Ranking`` holds so far (and, through ``tools``, the store or the embedder), changes the
order, and records what it did to each memory under its breakdown field. The pipeline times
every stage (``Server-Timing``, ``/metrics``, ``kioku bench``).
"""
