"""Run a blocking call with a wall-clock budget, without waiting past it.

Python cannot stop a thread, and an embedder's work runs in C or on a remote server, so the
call goes on in a daemon thread of its own: the caller stops *waiting* when the budget is
spent, gets ``DeadlineExceeded`` and moves on, and what the call returns later is dropped.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class DeadlineExceeded(TimeoutError):
    """The call did not return within its budget."""


def call_within(fn: Callable[[], T], seconds: float, name: str = "kioku-deadline") -> T:
    """``fn()``'s result, or its exception, if it comes within ``seconds``; else raise
    ``DeadlineExceeded`` (the call keeps running in the background, its outcome dropped)."""
    values: list[T] = []
    errors: list[BaseException] = []
    done = threading.Event()

    def run() -> None:
        try:
            values.append(fn())
        except BaseException as exc:  # handed to the caller below
            errors.append(exc)
        finally:
            done.set()

    threading.Thread(target=run, name=name, daemon=True).start()
    if not done.wait(seconds):
        raise DeadlineExceeded(f"no result within {seconds:g} s")
    if errors:
        raise errors[0]
    return values[0]
