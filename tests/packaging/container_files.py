"""The container files read as an engine reads them, for the tests that stand in for one.

No container engine runs on the machines the suite runs on (docs/operations.md,
"What is checked where"), so the tests take the Dockerfile's final stage and
compose.yaml apart here and run their commands against the installed package: the
Dockerfile's instructions, its ``ENV`` with ``$VAR`` expanded, exec-form commands, and
compose's ``${VAR}`` interpolation (``$$`` is a literal ``$``).
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
IMAGE_PORT = "8765"


def dockerfile_instructions() -> list[tuple[str, str]]:
    """Every instruction of the Dockerfile as (KEYWORD, arguments), continuations joined."""
    text = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    lines = [line.strip() for line in text.splitlines()]
    return [
        (line.split(None, 1)[0].upper(), line.split(None, 1)[1])
        for line in lines
        if line and not line.startswith("#")
    ]


def final_stage() -> list[tuple[str, str]]:
    """The instructions of the last stage: the image that runs."""
    steps = dockerfile_instructions()
    return steps[max(i for i, (op, _) in enumerate(steps) if op == "FROM") :]


def dockerfile_comments() -> str:
    """The Dockerfile's comment lines, ``#`` stripped: the instructions it gives people."""
    lines = (ROOT / "Dockerfile").read_text().splitlines()
    return "\n".join(line.lstrip("# ") for line in lines if line.startswith("#"))


def image_env(base: Mapping[str, str]) -> dict[str, str]:
    """The final stage's ``ENV`` pairs, each ``$VAR``/``${VAR}`` expanded against what came
    before it (``base`` stands for the base image's environment, e.g. its ``PATH``)."""
    env, image = dict(base), {}
    for op, arg in final_stage():
        if op != "ENV":
            continue
        for pair in shlex.split(arg):
            name, _, value = pair.partition("=")
            expanded = re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: env.get(m[1] or m[2], ""), value)
            env[name] = image[name] = expanded
    return image


def exec_form(op: str) -> list[str]:
    """The last ``op`` (CMD, HEALTHCHECK) of the final stage as an argv (exec form only)."""
    arg = next(arg for found, arg in reversed(final_stage()) if found == op)
    if op == "HEALTHCHECK":
        arg = arg[arg.index("CMD") + len("CMD") :]
    command = json.loads(arg)
    assert isinstance(command, list) and all(isinstance(part, str) for part in command)
    return command


def image_user() -> tuple[str, int, int, str]:
    """The final stage's ``USER``, with the uid, gid and home directory the stage gives it."""
    (user,) = [arg for op, arg in final_stage() if op == "USER"]
    runs = " ".join(arg for op, arg in final_stage() if op == "RUN")
    uid = re.search(rf"useradd [^&]*--uid (\d+)[^&]* {user}\b", runs)
    gid = re.search(rf"groupadd [^&]*--gid (\d+)[^&]* {user}\b", runs)
    home = re.search(rf"useradd [^&]*--home-dir (\S+)[^&]* {user}\b", runs)
    assert uid and home, f"no useradd for {user} in the Dockerfile"
    return user, int(uid[1]), int(gid[1]) if gid else int(uid[1]), home[1]


def compose() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "compose.yaml").read_text())


def interpolate(value: str, variables: Mapping[str, str]) -> str:
    """``value`` as compose renders it from ``variables`` (the ``.env`` file): ``${X}``,
    ``${X:?message}``, ``${X:-default}``, ``$X``; ``$$`` stays one literal ``$``."""

    def one(match: re.Match[str]) -> str:
        if match[0] == "$$":
            return "$"
        name = match[1] or match[4]
        if variables.get(name):
            return variables[name]
        if match[2] == ":?":
            raise KeyError(f"compose refuses to start: {match[3]}")
        return (match[3] or "") if match[2] == ":-" else ""

    return re.sub(r"\$\$|\$\{(\w+)(?:(:\?|:-)([^}]*))?\}|\$(\w+)", one, value)


def service_env(service: str, variables: Mapping[str, str]) -> dict[str, str]:
    """The ``environment`` compose gives ``service``, rendered from ``variables``."""
    environment = compose()["services"][service]["environment"]
    return {name: interpolate(str(value), variables) for name, value in environment.items()}
