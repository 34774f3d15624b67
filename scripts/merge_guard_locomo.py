"""Sleep's merge guard on text it was not written for: LoCoMo's clean conversations.

What it measures: in each LoCoMo conversation (every turn a memory, as ``kioku bench`` writes
them), the pairs of turns whose vectors reach Sleep's merge threshold with the default model
(multilingual-e5-small, int8 ONNX: what users get), and for each whether the guard
(``search/facts.py``) lets Sleep merge it or keeps it apart, and why. The figure is quoted by
docs/sleep.md ("Measured") and docs/benchmarks.md (the Sleep study's clean-data merges).

Vectors are of the text Sleep compares (``embedding_text``: summary, then content, 2,048
characters at most); the guard reads the whole turn, as Sleep does.

    HF_HUB_OFFLINE=1 .venv/bin/python scripts/merge_guard_locomo.py --data ../shared/data/locomo
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from kioku.benchmark.data import load_locomo, split_text
from kioku.eval.corpus import load_embedder
from kioku.search.facts import describe, differing_facts
from kioku.service.sleep import SleepConfig
from kioku.storage.records import embedding_text


def main() -> None:
    parser = argparse.ArgumentParser(description="Sleep's merge guard on LoCoMo.")
    parser.add_argument("--data", type=Path, required=True, help="the LoCoMo folder")
    args = parser.parse_args()
    threshold = SleepConfig().merge_threshold
    model = load_embedder("bundled")
    pairs = kept = turns = 0
    for corpus in load_locomo(args.data):
        texts = [doc.text for doc in corpus.docs]
        turns += len(texts)
        vectors = model.embed_documents([embedding_text(*split_text(t)) for t in texts])
        cosines = vectors @ vectors.T
        for i, j in np.argwhere(np.triu(cosines >= threshold, k=1)):
            pairs += 1
            differences = differing_facts(texts[i], texts[j])
            kept += bool(differences)
            verdict = f"kept apart: {describe(differences)}" if differences else "merged"
            print(f"{corpus.context} {cosines[i, j]:.4f} {verdict}")
            print(f"    {texts[i][:120]}\n    {texts[j][:120]}")
    print(
        f"{turns} turns, {pairs} pairs at cosine >= {threshold}: "
        f"{pairs - kept} merged, {kept} kept apart"
    )


if __name__ == "__main__":
    main()
