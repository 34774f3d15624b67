"""The image run without an engine: the container check that runs where none does.

Where ``docker info`` succeeds, ``.ci/run`` builds the image and runs it
(``scripts/container_check.sh``); on the machines the suite runs on no engine runs
(docs/operations.md, "What is checked where"), so this module does what the image
does with the same files. The build stage's wheel, installed by ``scripts/install_kioku.sh``
into ``<image>/opt/kioku`` (offline: the dependencies come from the development venv through a
path line, as in test_wheel.py); then the final stage's ``CMD`` with its ``ENV``, ``WORKDIR``
and ``USER`` (as that uid when the suite runs as root), ``/data`` and ``/opt/kioku`` mapped to
folders here and the port to a free one, polled with the ``HEALTHCHECK`` command until it
passes: as ``docker run`` with the named volume, as ``docker run --user`` with a folder of the
host, and as compose's kioku service on PostgreSQL.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.e2e.conftest import free_port
from tests.packaging.compose_db import DOTENV, db_env, password_server, run_init_script
from tests.packaging.container_files import (
    IMAGE_PORT,
    ROOT,
    dockerfile_instructions,
    exec_form,
    final_stage,
    image_env,
    image_user,
    service_env,
)

pytestmark = pytest.mark.e2e

# python:3.11-slim's PATH, which the image's ``ENV PATH=/opt/kioku/bin:$PATH`` extends.
BASE_PATH = "/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin"
AS_ROOT = os.geteuid() == 0
OTHER_UID = 4242  # `docker run --user 4242:4242`: a uid the image does not know


@dataclass(frozen=True)
class Image:
    root: Path  # the image's "/" on this machine
    logs: Path  # the servers' output, outside the image

    def on_host(self, value: str, data: Path, port: int) -> str:
        """``value`` from the image with its paths and port mapped to this machine's."""
        value = re.sub(r"/opt/kioku(?=/|$|:)", str(self.root / "opt/kioku"), value)
        value = re.sub(r"(?<![\w.])/data(?=/|$|:)", str(data), value)
        return re.sub(rf"\b{IMAGE_PORT}\b", str(port), value)


def python_for_every_uid() -> Path:
    """A Python 3.11 another uid can run: a system one when the suite runs as root (the
    development venv's may live in root's home), else the venv's base interpreter."""
    if not AS_ROOT:
        return Path(sys.base_prefix) / "bin" / "python3"
    name = f"python{sys.version_info.major}.{sys.version_info.minor}"
    found = shutil.which(name, path="/usr/local/bin:/usr/bin")
    assert found, f"no system {name} (outside root's home) to install the image's venv with"
    return Path(found)


@pytest.fixture(scope="module")
def image() -> Iterator[Image]:
    """The final stage's files: the wheel built as the build stage builds it, installed as the
    final stage installs it. In a folder every uid may enter (pytest's own is root's only)."""
    steps = dockerfile_instructions()
    build_stage = steps[: max(i for i, (op, _) in enumerate(steps) if op == "FROM")]
    build = " ".join(arg for op, arg in build_stage if op == "RUN")
    assert "python -m hatchling build --target wheel --directory /dist" in build
    root = Path(tempfile.mkdtemp(prefix="kioku-image-"))
    try:
        root.chmod(0o755)
        subprocess.run([sys.executable, "-m", "hatchling", "build", "--target", "wheel",
                        "--directory", root / "dist"], cwd=ROOT, check=True, capture_output=True,
                       timeout=300)  # fmt: skip
        (shim := root / "shim").mkdir()
        (shim / "python3").symlink_to(python_for_every_uid())
        venv = root / "opt/kioku"
        subprocess.run([shim / "python3", "-m", "venv", "--without-pip", venv], check=True)
        version = f"python{sys.version_info.major}.{sys.version_info.minor}"
        site = venv / "lib" / version / "site-packages"
        (site / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
        wheel = next((root / "dist").glob("*.whl"))
        done = subprocess.run(
            [ROOT / "scripts/install_kioku.sh", venv, wheel, "--no-deps", "--no-index"],
            env={**os.environ, "PATH": f"{shim}:{os.environ['PATH']}"},
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        (logs := root / "logs").mkdir()
        yield Image(root, logs)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def folder(path: Path, uid: int, gid: int) -> Path:
    """A folder owned by ``uid`` with mode 0700 (as the final stage makes /data, or as
    ``mkdir -m 700 data`` makes a host folder for ``--user``)."""
    path.mkdir(mode=0o700)
    if AS_ROOT:
        os.chown(path, uid, gid)
    return path


def home_of(uid: int) -> str:
    """HOME as the engine sets it when the image's ENV does not: the passwd entry's home for
    the image's own user, ``/`` for a uid the image does not know."""
    _, image_uid, _, home = image_user()
    return home if uid == image_uid else "/"


@dataclass(frozen=True)
class Running:
    port: int
    log: Path


@contextmanager
def running(image: Image, data: Path, uid: int, gid: int,
            overrides: dict[str, str] | None = None) -> Iterator[Running]:  # fmt: skip
    """Run the image's CMD as ``uid`` with ``/data`` at ``data``; once its HEALTHCHECK passes,
    yield where it listens; stop it after (SIGTERM, as ``docker stop``)."""
    port = free_port()
    env = {"HOME": home_of(uid), **image_env({"PATH": BASE_PATH}), **(overrides or {})}
    env = {name: image.on_host(value, data, port) for name, value in env.items()}
    env["HOME"] = str(image.root) if env["HOME"] == "/" else env["HOME"]
    env["LANG"] = "C.UTF-8"
    workdir = next(arg for op, arg in reversed(final_stage()) if op == "WORKDIR")
    command = [image.on_host(part, data, port) for part in exec_form("CMD")]
    probe = [image.on_host(part, data, port) for part in exec_form("HEALTHCHECK")]
    who = {"user": uid, "group": gid, "extra_groups": []} if AS_ROOT else {}
    log = image.logs / f"serve-{port}.log"
    with log.open("w") as sink:
        process = subprocess.Popen(
            [shutil.which(command[0], path=env["PATH"]) or command[0], *command[1:]],
            env=env, cwd=image.on_host(workdir, data, port), stdout=sink,
            stderr=subprocess.STDOUT, **who,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 120
            while True:
                assert process.poll() is None, log.read_text()[-4000:]
                checked = subprocess.run(
                    [shutil.which(probe[0], path=env["PATH"]) or probe[0], *probe[1:]],
                    env=env, capture_output=True, timeout=10, **who,
                )  # fmt: skip
                if checked.returncode == 0:
                    break
                assert time.monotonic() < deadline, log.read_text()[-4000:]
                time.sleep(0.3)
            yield Running(port, log)
        finally:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def owned_files(data: Path) -> dict[str, int]:
    """Every file under ``data``, relative, with its owner's uid."""
    return {p.relative_to(data).as_posix(): p.stat().st_uid for p in data.rglob("*") if p.is_file()}


def test_the_image_serves_as_its_own_user_with_data_in_the_volume(image: Image) -> None:
    _, uid, gid, _ = image_user()
    data = folder(image.root / "volume", uid, gid)  # a named volume starts as the image's /data
    with running(image, data, uid, gid):
        pass
    files = owned_files(data)
    assert "kioku.db" in files and any(name.endswith(".onnx") for name in files), files
    if AS_ROOT:
        assert set(files.values()) == {uid}


def test_the_image_serves_as_another_uid_with_a_folder_of_the_host(image: Image) -> None:
    """The documented recipe: ``mkdir -m 700 data`` then ``docker run --user "$(id -u):$(id
    -g)" -v "$PWD/data:/data"``. The model cache must land in that folder too: the image's
    HOME is /data; a uid it does not know would otherwise get HOME=/, where it cannot write."""
    uid = gid = OTHER_UID if AS_ROOT else os.geteuid()
    data = folder(image.root / "host-data", uid, gid)
    image.root.chmod(0o555)  # the image's "/": nobody but root writes there
    try:
        with running(image, data, uid, gid):
            pass
    finally:
        image.root.chmod(0o755)
    files = owned_files(data)
    assert "kioku.db" in files and any(name.endswith(".onnx") for name in files), files
    if AS_ROOT:
        assert set(files.values()) == {uid}


def test_compose_kioku_serves_on_postgres_and_answers_its_service_name(image: Image) -> None:
    _, uid, gid, _ = image_user()
    data = folder(image.root / "compose-volume", uid, gid)
    with password_server() as server:
        run_init_script(server)
        compose_env = service_env("kioku", DOTENV)
        port_env = {"PGHOSTADDR": "127.0.0.1", "PGPORT": str(server.port)}
        assert db_env(server)["KIOKU_DB_PASSWORD"] == compose_env["PGPASSWORD"]
        with running(image, data, uid, gid, {**compose_env, **port_env}) as served:
            # http://kioku:8765 from another service of the compose file
            health = httpx.get(f"http://127.0.0.1:{served.port}/health",
                               headers={"Host": f"kioku:{served.port}"}, timeout=5)  # fmt: skip
            assert health.status_code == 200 and health.json()["database"] == "postgresql", (
                health.text
            )
            log = served.log.read_text()
    assert "kioku serving postgresql://kioku@db/kioku" in log, log[-2000:]
