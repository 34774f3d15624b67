"""Stage ``languages``: what the legs' results mean when a context holds more than one language.

Three corrections, all no-ops when every vector candidate is in the query's language (so a
context in one language ranks exactly as without them), all off with the context's
``search_config.language_calibration: off``:

- the vector leg's scores are put on one scale across memory languages
  (``kioku.search.language_means``: ``centered`` by default, or the older ``shifted``) so that
  a memory does not win on sharing the query's language; with ``centered``, a memory in the
  query's language that shares words with it also loses part of its vector score for them
  (``kioku.search.language_overlap``): the lexical leg already counts those words;
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
from typing import Literal

import numpy as np

from kioku.embeddings.base import Embedder
from kioku.embeddings.language_means import language_means, query_means
from kioku.search.language import Language, language_of
from kioku.search.language_means import calibrate, centre, offsets_for
from kioku.search.language_overlap import discount_shared_words
from kioku.service.ranking.state import Query, Ranking, Tools
from kioku.storage.ports import RankingPort
from kioku.storage.records import ScoredId

Calibration = Literal["centered", "shifted", "off"]
"""``search_config.language_calibration``: how the vector leg's scores are put on one scale
across languages, or ``off`` (no language-aware reading at all, as before issue 17)."""
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


def run(ranking: Ranking, tools: Tools) -> None:
    """Apply the language view (below) to the ranking: the legs as fusion should read them,
    which memories the lexical leg abstains on, its weight's share, and ``crossed``."""
    heads = {memory_id: signal.head for memory_id, signal in ranking.signals.items()}
    view = language_view(
        tools.store, tools.embedder, ranking.ws, ranking.query, ranking.query_vector,
        ranking.ran, heads, ranking.config.language_calibration, ranking.fresh_vectors,
    )  # fmt: skip
    ranking.raw_vector = ranking.ran.get("vector")  # confidence reads the raw cosines
    ranking.ran = view.ran
    for leg, memory_ids in view.blind.items():
        ranking.blind.setdefault(leg, set()).update(memory_ids)
    ranking.weight_scale.update(view.scale)
    ranking.crossed = view.crossed


def language_view(
    store: RankingPort,
    embedder: Embedder | None,
    workspace_id: str,
    query: Query,
    query_vector: np.ndarray | None,
    ran: dict[str, list[ScoredId]],
    heads: dict[str, str],
    calibration: Calibration = "centered",
    fresh_vectors: dict[str, np.ndarray] | None = None,
) -> LanguageView:
    """Read the legs with the candidates' languages in mind (see the module docstring)."""
    vector = ran.get("vector")
    if not vector or embedder is None or query_vector is None or calibration == "off":
        return LanguageView(ran)
    lexical = ran.get("lexical", [])
    query_language = query.language
    languages: dict[str, Language] = {
        hit.memory_id: language_of(heads[hit.memory_id]) for hit in vector if hit.memory_id in heads
    }  # the head of each text, read with the candidates' signals
    if all(language == query_language for language in languages.values()):
        return LanguageView(ran)
    calibrated = {
        **ran,
        "vector": _calibrated(
            store, embedder, workspace_id, query_vector, query_language, vector, languages,
            calibration, fresh_vectors or {},
        ),
    }  # fmt: skip
    view = LanguageView(calibrated)
    if "lexical" in ran:
        found = {hit.memory_id for hit in lexical}
        readable = query.readable
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
    if calibration == "centered" and lexical:
        # After the rules above, which read the vector leg's own judgement of meaning: this
        # only keeps fusion from counting shared words in both legs.
        view.ran = {
            **calibrated,
            "vector": discount_shared_words(
                calibrated["vector"], lexical, languages, query_language
            ),
        }
    return view


def _calibrated(
    store: RankingPort,
    embedder: Embedder,
    workspace_id: str,
    query_vector: np.ndarray,
    query_language: Language,
    vector: list[ScoredId],
    languages: dict[str, Language],
    calibration: Calibration,
    fresh_vectors: dict[str, np.ndarray],
) -> list[ScoredId]:
    """The vector leg's hits on one scale across languages (``language_means``)."""
    means = language_means(embedder)
    if calibration == "shifted":
        offsets = offsets_for(query_vector, means)
        return calibrate(vector, languages, query_language, offsets)
    signals = store.version_signals(workspace_id, [hit.memory_id for hit in vector])
    vectors = {memory_id: signal.vector for memory_id, signal in signals.items()}
    for memory_id, fresh in fresh_vectors.items():  # not stored yet (the ``pending`` stage)
        if vectors.get(memory_id) is None:
            vectors[memory_id] = fresh
    return centre(
        vector, vectors, languages, query_vector, query_language, means, query_means(embedder)
    )


def _ids(hits: list[ScoredId]) -> set[str]:
    return {hit.memory_id for hit in hits}
