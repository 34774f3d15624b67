"""A stated deadline for ``kioku serve`` to stop: SIGTERM (or Ctrl-C) ends the process within
``KIOKU_SHUTDOWN_SECONDS`` plus a short grace, whatever is still running.

uvicorn gives the requests in flight ``shutdown_seconds`` to finish, then cancels their tasks;
but a synchronous handler runs in a worker thread that no cancellation stops, and closing the
runtime waits for background threads. kioku's own long work (inline and background
embedding) stops after its current batch once the runtime closes. Whatever is still running
``GRACE_SECONDS`` after the requests' deadline is abandoned: the process exits. Every write is
one transaction, so an abandoned one is rolled back (as after kill -9, see
docs/reliability.md), never half written; the vector cache is written beside and renamed.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from types import FrameType

import uvicorn

log = logging.getLogger(__name__)

GRACE_SECONDS = 5.0
"""After the requests' deadline: time to close the runtime (stop workers, flush the cache)."""


def _abandon(after: float) -> None:
    log.error("still running %.0f s after the stop signal: exiting now", after)
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(1)


class DeadlineServer(uvicorn.Server):
    """``uvicorn.Server`` whose first stop signal also arms a watchdog that ends the process
    ``shutdown_seconds + GRACE_SECONDS`` later if it is still alive."""

    def __init__(self, config: uvicorn.Config, shutdown_seconds: float) -> None:
        super().__init__(config)
        self.deadline = shutdown_seconds + GRACE_SECONDS
        self._armed = False

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if not self._armed:
            self._armed = True
            watchdog = threading.Timer(self.deadline, _abandon, (self.deadline,))
            watchdog.daemon = True
            watchdog.start()
        super().handle_exit(sig, frame)
