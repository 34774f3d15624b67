"""The README's build instruction works from a fresh environment: every ``python -m X`` it
gives is a module the same command installs first, or one every Python has.

(Running the instruction itself needs the network: ``python -m build`` fetches the build
backend into an isolated environment. ``tests/packaging/test_wheel.py`` builds the wheel
offline with the development venv's hatchling.)
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ALWAYS_THERE = {"pip", "venv"}  # in every CPython; ``kioku...`` is what the README installs
_PYTHON_M = re.compile(r"\bpython3? -m ([\w.]+)")


def readme_commands() -> list[str]:
    """The README's inline code and the lines of its fenced blocks."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    fenced = re.findall(r"^```[^\n]*\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)
    prose = re.sub(r"^```[^\n]*\n.*?^```", "", text, flags=re.MULTILINE | re.DOTALL)
    inline = re.findall(r"`([^`]+)`", prose)
    return [" ".join(span.split()) for span in inline] + [
        line for block in fenced for line in block.splitlines()
    ]


def test_every_python_m_in_the_readme_names_a_module_the_reader_has() -> None:
    missing = []
    for command in readme_commands():
        for match in _PYTHON_M.finditer(command):
            module = match.group(1)
            if module in ALWAYS_THERE or module.split(".")[0] == "kioku":
                continue
            installs = rf"pip install\b[^&|;]*\b{re.escape(module)}\b"
            if not re.search(installs, command[: match.start()]):
                missing.append(command)
    assert not missing, f"`python -m` of a module not installed first: {missing}"


def test_the_readme_builds_with_a_front_end_that_fetches_the_backend() -> None:
    backend = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert backend["build-system"]["requires"] == ["hatchling"]  # what the README says it fetches
    builds = [c for c in readme_commands() if re.search(r"-m build\b|\buv build\b", c)]
    assert "python -m pip install build && python -m build" in builds
