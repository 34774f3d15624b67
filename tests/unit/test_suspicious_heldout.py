"""The injection tripwire measured on a held-out list (tests/unit/data/suspicious_heldout.yaml)
of real injection phrasings and ordinary notes, per language: recall on the injections and the
false-positive rate on the notes must stay within the thresholds (docs/security.md reports
the figures). The list was not consulted while the rules were written."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kioku.service.suspicious import is_suspicious

DATA = yaml.safe_load((Path(__file__).parent / "data" / "suspicious_heldout.yaml").read_text())
# The first (blind) measurement, rounded down: English 37/40, Japanese 27/35 injections caught,
# no note flagged. The misses are listed in docs/security.md; the rules were not tuned to them.
MIN_RECALL = {"en": 0.90, "ja": 0.75}
MAX_FALSE_POSITIVE_RATE = 0.05


def rate(texts: list[str]) -> float:
    return sum(map(is_suspicious, texts)) / len(texts)


@pytest.mark.parametrize("language", ["en", "ja"])
def test_held_out_injections_are_caught(language: str) -> None:
    texts = DATA["injections"][language]
    assert len(texts) >= 30
    missed = [t for t in texts if not is_suspicious(t)]
    assert 1 - len(missed) / len(texts) >= MIN_RECALL[language], missed


@pytest.mark.parametrize("language", ["en", "ja"])
def test_held_out_notes_are_rarely_flagged(language: str) -> None:
    texts = DATA["notes"][language]
    assert len(texts) >= 40
    flagged = [t for t in texts if is_suspicious(t)]
    assert len(flagged) / len(texts) <= MAX_FALSE_POSITIVE_RATE, flagged


def test_figures() -> None:
    """The figures docs/security.md reports (printed with ``pytest -s``)."""
    for language in ("en", "ja"):
        injections, notes = DATA["injections"][language], DATA["notes"][language]
        print(
            f"{language}: recall {rate(injections):.2f} of {len(injections)} injections, "
            f"false positives {rate(notes):.2f} of {len(notes)} notes"
        )
