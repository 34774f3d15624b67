"""An independent MCP client (the MCP Inspector CLI from npm) against ``kioku serve``."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

SCRIPT = Path(__file__).parents[2] / "scripts" / "mcp_inspector_check.sh"


def test_the_mcp_inspector_lists_tools_and_remembers_then_recalls(server: str) -> None:
    done = subprocess.run(
        ["bash", str(SCRIPT), f"{server}/mcp"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "recall found it" in done.stdout
