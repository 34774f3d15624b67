"""The container files, checked where no container engine runs (this machine has none): the
image installs kioku with the script tests/packaging/test_wheel.py runs, as a non-root user
with its data in a volume and a health check; compose.yaml wires kioku to PostgreSQL through
the init script, which is run here against a real PostgreSQL server."""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
import yaml
from psycopg import sql
from sqlalchemy import make_url

from kioku.storage.postgres.throwaway import _bundled_binaries

ROOT = Path(__file__).resolve().parents[2]


def dockerfile_instructions() -> list[tuple[str, str]]:
    text = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    lines = [line.strip() for line in text.splitlines()]
    return [
        (line.split(None, 1)[0].upper(), line.split(None, 1)[1])
        for line in lines
        if line and not line.startswith("#")
    ]


def test_the_image_installs_with_the_tested_script_and_runs_as_a_user_with_a_volume() -> None:
    steps = dockerfile_instructions()
    final = steps[max(i for i, (op, _) in enumerate(steps) if op == "FROM") :]
    runs = " ".join(arg for op, arg in final if op == "RUN")
    assert "install_kioku.sh /opt/kioku" in runs  # the script test_wheel.py runs
    assert ("COPY", "scripts/install_kioku.sh /usr/local/bin/install_kioku.sh") in final
    user = [arg for op, arg in final if op == "USER"]
    assert user == ["kioku"] and "useradd --system --uid 10001" in runs
    assert ("VOLUME", '["/data"]') in final
    assert any(op == "HEALTHCHECK" and "/health" in arg for op, arg in final)
    env = " ".join(arg for op, arg in final if op == "ENV")
    assert "KIOKU_DATABASE_URL=sqlite:////data/kioku.db" in env and "HF_HUB_OFFLINE=1" in env
    command = next(arg for op, arg in reversed(final) if op == "CMD")
    assert '"serve"' in command and "--dev" not in command  # keys required in the container


def test_compose_wires_kioku_to_postgres_through_the_init_script() -> None:
    compose = yaml.safe_load((ROOT / "compose.yaml").read_text())
    db, kioku = compose["services"]["db"], compose["services"]["kioku"]
    assert db["image"].startswith("pgvector/pgvector:")
    mounts = {m.split(":")[0]: m.split(":")[1] for m in db["volumes"]}
    init = mounts["./deploy/postgres/initdb-kioku.sh"]
    assert init.startswith("/docker-entrypoint-initdb.d/") and (ROOT / "deploy/postgres").is_dir()
    assert kioku["depends_on"]["db"]["condition"] == "service_healthy"
    url = make_url(kioku["environment"]["KIOKU_DATABASE_URL"])
    assert (url.username, url.host, url.database) == ("kioku", "db", "kioku")
    assert kioku["ports"] == ["127.0.0.1:8765:8765"]  # the host's loopback only


@pytest.fixture
def server(postgres_url: str) -> str:
    return postgres_url


def test_the_init_script_makes_a_role_row_level_security_binds(server: str, tmp_path: Path) -> None:
    user, name = f"kioku_{secrets.token_hex(4)}", f"kioku_deploy_{secrets.token_hex(4)}"
    password = secrets.token_urlsafe(16)
    admin = make_url(server)
    env = {
        **os.environ,
        "PATH": f"{_bundled_binaries()}:{os.environ['PATH']}",
        "PGHOST": str(admin.host), "PGPORT": str(admin.port), "PGUSER": str(admin.username),
        "KIOKU_DB_USER": user, "KIOKU_DB_NAME": name, "KIOKU_DB_PASSWORD": password,
    }  # fmt: skip
    try:
        done = subprocess.run(
            [ROOT / "deploy/postgres/initdb-kioku.sh"], env=env, capture_output=True, text=True,
            timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        url = admin.set(username=user, password=password, database=name)
        app_url = url.render_as_string(hide_password=False)
        with psycopg.connect(app_url) as conn:
            row = conn.execute(
                "SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user"
            ).fetchone()
            assert row == (False, False)
            assert conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone()
        kioku = {**os.environ, "KIOKU_DATABASE_URL": app_url, "KIOKU_EMBEDDER": "none"}
        for args in (["migrate"], ["remember", "The deploy script works"]):
            subprocess.run([sys.executable, "-m", "kioku.cli", *args], env=kioku, check=True,
                           capture_output=True, timeout=120)  # fmt: skip
        found = subprocess.run(
            [sys.executable, "-m", "kioku.cli", "recall", "deploy script", "--json"],
            env=kioku, check=True, capture_output=True, text=True, timeout=120,
        ).stdout  # fmt: skip
        assert re.search(r'"summary":\s*"The deploy script works"', found), found
    finally:
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                sql.Identifier(name)))  # fmt: skip
            conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(user)))
