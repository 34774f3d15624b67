"""The merge corpus (``data/merge_pairs.yaml``): near-duplicate pairs labelled ``same`` (one
fact said twice: Sleep should merge them) or ``different`` (two facts: never merged)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import yaml

CORPUS = Path(__file__).parent / "data" / "merge_pairs.yaml"


@dataclass(frozen=True)
class Pair:
    id: str
    label: Literal["same", "different"]
    lang: Literal["en", "ja"]
    kind: str
    """For ``different``, the kind of fact that differs; for ``same``, how it is restated."""
    a: str
    b: str


def load_pairs() -> list[Pair]:
    pairs = [Pair(**item) for item in yaml.safe_load(CORPUS.read_text(encoding="utf-8"))["pairs"]]
    assert len({pair.id for pair in pairs}) == len(pairs), "pair ids are unique"
    assert all(pair.label in ("same", "different") for pair in pairs)
    return pairs
