"""Adapters that plug kioku into agent frameworks, each behind an optional extra.

- ``kioku.integrations.langgraph``: ``KiokuStore``, a LangGraph ``BaseStore`` (long-term
  memory) backed by a kioku server (``pip install 'kioku-memory-server[langgraph]'``).

The pinned block for any other harness needs no extra: ``kioku.client.pinned_block`` renders
it, ``kioku.client.load_pinned_block`` fetches and renders it (docs/integrations.md).
"""
