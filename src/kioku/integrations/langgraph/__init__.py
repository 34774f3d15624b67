"""LangGraph long-term memory on kioku: ``KiokuStore``, a LangGraph ``BaseStore``.

Needs the ``langgraph`` extra: ``pip install 'kioku-memory-server[langgraph]'``.

    from kioku.integrations.langgraph import KiokuStore
    store = KiokuStore(base_url="http://127.0.0.1:8765")      # or client=kioku.Client(...)
    graph = builder.compile(store=store)

See ``KiokuStore``'s docstring and docs/integrations.md for how namespaces, keys and values
map to kioku contexts and memories, and what differs from LangGraph's own stores.
"""

from __future__ import annotations

try:
    import langgraph.store.base  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "kioku.integrations.langgraph needs LangGraph: pip install 'kioku-memory-server[langgraph]'"
    ) from exc

from kioku.integrations.langgraph._namespaces import context_name, namespace_of
from kioku.integrations.langgraph.store import KiokuStore

__all__ = ["KiokuStore", "context_name", "namespace_of"]
