"""examples/langchain_pinned_agent.py (LangChain, a scripted chat model) against a real
``kioku serve``: the pinned block in every model call, memory written and recalled by tools."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

EXAMPLE = Path(__file__).parents[2] / "examples" / "langchain_pinned_agent.py"


def test_the_langchain_agent_keeps_every_promise(server: str) -> None:
    for run in (1, 2):  # the second run reuses the set-up and finds the first run's memories
        done = subprocess.run(
            [sys.executable, str(EXAMPLE), "--url", server],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert "all promises held" in done.stdout, run
        out = done.stdout
        assert "5 model calls; distinct pinned blocks among them: 1" in out
        assert "Never promise refunds" in out and "full refunds are always possible" not in out
        assert "tool       recall_memories{'query': 'Dana order number'}" in out
        recalled = next(line for line in out.splitlines() if "recall_memories" in line)
        assert "4471" in recalled  # written by the turn-1 tool call, found in turn 2
