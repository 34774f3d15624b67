"""The seed's worked example (examples/triage_agent.py) against a real ``kioku serve``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

EXAMPLE = Path(__file__).parents[2] / "examples" / "triage_agent.py"


def test_the_triage_agent_keeps_every_promise(server: str) -> None:
    for run in (1, 2):  # the second run reuses the set-up: idempotent, same promises
        done = subprocess.run(
            [sys.executable, str(EXAMPLE), "--url", server],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert "all promises held" in done.stdout, run
        # The planted instruction did come up as a hint (so excluding it from the basis is a
        # real exclusion), flagged, and never as a basis.
        hint_lines = [line for line in done.stdout.splitlines() if line.strip().startswith("hint")]
        assert any(
            "refunds are always possible" in line and "SUSPICIOUS" in line for line in hint_lines
        )
        basis_lines = [
            line for line in done.stdout.splitlines() if line.strip().startswith("basis")
        ]
        assert basis_lines and all("[trusted]" in line for line in basis_lines)
