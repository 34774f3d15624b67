"""The build context a container builder receives: what the Dockerfile copies, nothing else.

No engine runs here (docs/operations.md, "What is checked where"), so the context
is computed as the legacy builder computes it before it sends it: the checkout walked in
order, each path tested against ``.dockerignore`` with the rules of moby's patternmatcher
(``*`` and ``?`` stop at ``/``, ``**`` spans directories, a pattern that matches a parent
directory matches what it holds, ``!`` takes a path back, the last matching line wins), a
directory skipped whole when no ``!`` line reaches inside it, and the Dockerfile and
``.dockerignore`` always sent. BuildKit reads the same file with the same rules.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from tests.packaging.container_files import ROOT, dockerfile_instructions


@dataclass(frozen=True)
class Pattern:
    text: str  # cleaned, without the leading "!"
    exception: bool
    regex: re.Pattern[str]


def compile_pattern(line: str) -> Pattern:
    """One ``.dockerignore`` line as patternmatcher compiles it."""
    exception = line.startswith("!")
    text = os.path.normpath(line[1:].strip() if exception else line).lstrip("/")
    assert "[" not in text and "\\" not in text, f"{line!r}: this matcher has no [classes]"
    regex, i = "^", 0
    while i < len(text):
        if text.startswith("**", i):
            i += 2
            if text.startswith("/", i):
                i += 1
            regex += ".*" if i == len(text) else "(.*/)?"
        elif text[i] == "*":
            regex, i = regex + "[^/]*", i + 1
        elif text[i] == "?":
            regex, i = regex + "[^/]", i + 1
        else:
            regex, i = regex + re.escape(text[i]), i + 1
    return Pattern(text, exception, re.compile(regex + "$"))


def read_patterns(dockerignore: Path) -> list[Pattern]:
    lines = [line.strip() for line in dockerignore.read_text().splitlines()]
    patterns = [compile_pattern(line) for line in lines if line and not line.startswith("#")]
    # The docker CLI sends the Dockerfile and .dockerignore whatever the file says.
    return [*patterns, compile_pattern("!Dockerfile"), compile_pattern("!.dockerignore")]


def is_excluded(path: str, patterns: list[Pattern]) -> bool:
    """patternmatcher's ``MatchesOrParentMatches``: the last pattern that matches ``path``
    or one of its parent directories decides."""
    parents = path.split("/")[:-1]
    excluded = False
    for pattern in patterns:
        if pattern.exception != excluded:
            continue  # cannot change the verdict
        matched = bool(pattern.regex.match(path)) or any(
            pattern.regex.match("/".join(parents[: i + 1])) for i in range(len(parents))
        )
        if matched:
            excluded = not pattern.exception
    return excluded


def legacy_context(checkout: Path) -> set[str]:
    """The files (relative, ``/``-separated) the legacy builder sends from ``checkout``."""
    patterns = read_patterns(checkout / ".dockerignore")
    exceptions = [p.text for p in patterns if p.exception]
    sent: set[str] = set()
    for folder, dirs, files in os.walk(checkout):
        here = Path(folder).relative_to(checkout).as_posix()
        prefix = "" if here == "." else f"{here}/"
        for name in list(dirs):
            path = prefix + name
            # Skipped whole unless an exception line names something inside it.
            if is_excluded(path, patterns) and not any(
                f"{text}/".startswith(f"{path}/") for text in exceptions
            ):
                dirs.remove(name)
        sent.update(prefix + name for name in files if not is_excluded(prefix + name, patterns))
    return sent


def copy_sources() -> list[str]:
    """What the Dockerfile's ``COPY`` lines take from the build context."""
    sources = []
    for op, arg in dockerfile_instructions():
        words = arg.split()
        if op == "COPY" and not any(word.startswith("--from") for word in words):
            sources += [w for w in words[:-1] if not w.startswith("--")]
    return sources


def sends(context: set[str], source: str) -> bool:
    return source in context or any(path.startswith(f"{source}/") for path in context)


NEEDED = ["pyproject.toml", "README.md", "LICENSE", "src/kioku/__init__.py",
          "src/kioku/ui/templates/base.html", "scripts/install_kioku.sh"]  # fmt: skip
NOT_WANTED = [
    ".venv/bin/python", ".venv/lib/python3.11/site-packages/torch/lib.so", ".git/HEAD",
    ".git/objects/ab/cdef0123", ".ci/node/node_modules/@anthropic-ai/claude-code/cli.js",
    ".ci/run", "src/kioku/__pycache__/settings.cpython-311.pyc",
    "src/kioku_memory_server.egg-info/PKG-INFO", ".pytest_cache/v/cache/nodeids",
    ".ruff_cache/0.9/123", ".hypothesis/examples/ab/cd", ".cache/huggingface/hub/model.bin",
    "test-artifacts/ui/page.png", "bench/results/locomo.json", ".kioku-bench/run/kioku.db",
    "kioku.db", "kioku.db-wal", "data/kioku.db", "data/.local/share/kioku/models/m.onnx",
    "src/kioku/scratch.db", ".env", "dist/kioku_memory_server-0.1.0-py3-none-any.whl",
    "build/lib/kioku/__init__.py", "scripts/cli_speed.py", "tests/test_x.py", "docs/api.md",
    "examples/triage_agent.py", "compose.yaml", "deploy/postgres/initdb-kioku.sh",
]  # fmt: skip


def test_the_context_holds_what_the_dockerfile_copies_and_no_local_state(tmp_path: Path) -> None:
    for name in [*NEEDED, *NOT_WANTED]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x")
    shutil.copy(ROOT / ".dockerignore", tmp_path / ".dockerignore")
    (tmp_path / "Dockerfile").write_text("FROM scratch\n")
    context = legacy_context(tmp_path)
    assert sorted(context & set(NOT_WANTED)) == []
    assert context == {*NEEDED, "Dockerfile", ".dockerignore"}


def test_this_checkout_sends_every_copy_source_and_little_else() -> None:
    context = legacy_context(ROOT)
    missing = [source for source in copy_sources() if not sends(context, source)]
    assert copy_sources() and missing == []
    top = {path.split("/")[0] for path in context}
    assert top <= {"src", "scripts", "pyproject.toml", "README.md", "LICENSE", "Dockerfile",
                   ".dockerignore"}, top  # fmt: skip
    assert not [p for p in context if re.search(r"__pycache__|\.pyc$|\.db(-\w+)?$", p)]
    size = sum((ROOT / path).stat().st_size for path in context)
    assert size < 8_000_000, f"the build context is {size:,} bytes"
