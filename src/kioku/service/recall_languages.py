"""Recall across languages: what the legs' results mean when a context holds more than one.

Three corrections, all no-ops when every vector candidate is in the query's language (so a
context in one language ranks exactly as without them):

- the vector leg's scores are calibrated per memory language (``kioku.search.language_means``)
  so that a memory does not win on sharing the query's language;
- the lexical leg abstains on the vector leg's best memory when that one is in a language
  whose script the query does not use at all, instead of voting 0 for it: it cannot match
  words across that line, so its silence says nothing
  (``fuse_weighted``'s ``blind``);
- the lexical leg's weight is scaled by the share of the vector leg's ``SHARE_DEPTH`` best
  memories it can read: in a context mostly in the other language, its same-language matches
  do not outvote meaning.

It also tells whether the legs disagree across languages (the vector leg ranks among its best
``CROSS_DEPTH`` a memory in another language that the lexical leg did not find), which caps
``confidence`` below ``high``: the lexical leg's vote says nothing about that memory.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from kioku.embeddings.base import Embedder
from kioku.search.language import HEAD_CHARS, Language, language_of, readable_languages
from kioku.search.language_means import calibrate, language_means, offsets_for
from kioku.storage.base import Store
from kioku.storage.records import ScoredId

ABSTAIN_DEPTH = 1
"""The lexical leg abstains on the vector leg's best memory only. Abstaining on every memory
it cannot read floods a query with the other language's memories when that language holds
most of the context (measured: docs/embedders.md)."""
SHARE_DEPTH = 10
"""How many of the vector leg's best memories decide the lexical leg's share of the weight."""
CROSS_DEPTH = 3
"""As deep as ``confidence`` looks into each leg for ``high``."""


@dataclass
class LanguageView:
    """The legs as fusion should read them, and what was found out on the way."""

    ran: dict[str, list[ScoredId]]
    blind: dict[str, set[str]] = field(default_factory=dict)
    """Per leg, the memories it could not have found (see ``fuse_weighted``)."""
    scale: dict[str, float] = field(default_factory=dict)
    """Per leg, a factor on its weight: the lexical leg speaks for the share of the vector
    leg's best memories it can read."""
    crossed: bool = False
    """The vector leg's best memories include one in another language that the lexical leg
    did not find."""


def language_view(
    store: Store,
    embedder: Embedder | None,
    workspace_id: str,
    query: str,
    query_vector: np.ndarray | None,
    ran: dict[str, list[ScoredId]],
) -> LanguageView:
    """Read the legs with the candidates' languages in mind (see the module docstring)."""
    vector = ran.get("vector")
    if not vector or embedder is None or query_vector is None:
        return LanguageView(ran)
    lexical = ran.get("lexical", [])
    query_language = language_of(query)
    languages = _languages(store, workspace_id, vector)
    if all(language == query_language for language in languages.values()):
        return LanguageView(ran)
    offsets = offsets_for(query_vector, language_means(embedder))
    calibrated = {**ran, "vector": calibrate(vector, languages, query_language, offsets)}
    view = LanguageView(calibrated)
    if "lexical" in ran:
        found = {hit.memory_id for hit in lexical}
        readable = readable_languages(query)
        best = calibrated["vector"]
        unreadable = [
            hit.memory_id
            for hit in best
            if hit.memory_id not in found
            and languages.get(hit.memory_id, query_language) not in readable
        ]
        view.blind["lexical"] = {m for m in unreadable if m in _ids(best[:ABSTAIN_DEPTH])}
        top = best[:SHARE_DEPTH]
        view.scale["lexical"] = 1.0 - len(set(unreadable) & _ids(top)) / len(top)
        # The legs disagree across languages when the vector leg puts among its best three a
        # memory in another language that the lexical leg did not find: whatever the lexical
        # leg ranks first, it never weighed that one on its meaning.
        view.crossed = any(
            hit.memory_id not in found
            and languages.get(hit.memory_id, query_language) != query_language
            for hit in best[:CROSS_DEPTH]
        )
    return view


def _languages(store: Store, workspace_id: str, hits: list[ScoredId]) -> dict[str, Language]:
    heads = store.text_heads(workspace_id, [hit.memory_id for hit in hits], HEAD_CHARS)
    return {memory_id: language_of(text) for memory_id, text in heads.items()}


def _ids(hits: list[ScoredId]) -> set[str]:
    return {hit.memory_id for hit in hits}
