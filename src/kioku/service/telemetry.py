"""What the services tell whoever measures them (``/metrics``), without knowing who that is.

A service calls one of the functions below where the thing happens; every registered listener
(``kioku.api.metrics`` registers one per app) hears it. With no listener, a call costs a loop
over an empty set. Listeners are held weakly: an app that is gone stops listening.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Mapping
from typing import Any, Protocol

log = logging.getLogger(__name__)


class Listener(Protocol):
    def recall_leg(self, leg: str, seconds: float) -> None: ...

    def recall_stage(self, stage: str, seconds: float) -> None: ...

    def embedded(self, count: int) -> None: ...

    def sleep_run(self, trigger: str, status: str, summary: Mapping[str, Any]) -> None: ...


_listeners: weakref.WeakSet[Any] = weakref.WeakSet()


def listen(listener: Listener) -> None:
    _listeners.add(listener)


def _each(method: str, *args: Any) -> None:
    for listener in list(_listeners):
        try:
            getattr(listener, method)(*args)
        except Exception:  # measuring must never break the work it measures
            log.exception("telemetry listener failed on %s", method)


def recall_leg(leg: str, seconds: float) -> None:
    """One recall leg (``lexical``, ``vector``: query embedding included) took ``seconds``."""
    _each("recall_leg", leg, seconds)


def recall_stage(stage: str, seconds: float) -> None:
    """One stage of recall's ranking (``service/ranking/pipeline.py``), or the loading of its
    results (``hits``), took ``seconds``."""
    _each("recall_stage", stage, seconds)


def embedded(count: int) -> None:
    """``count`` memories just became vector-searchable."""
    _each("embedded", count)


def sleep_run(trigger: str, status: str, summary: Mapping[str, Any]) -> None:
    """A Sleep run ended (``done`` or ``failed``) with its per-phase counts."""
    _each("sleep_run", trigger, status, summary)
