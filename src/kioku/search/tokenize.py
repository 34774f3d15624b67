"""The one tokenizer both lexical backends index and query with.

NFKC + case folding for every script; English words are stop-listed and Snowball-stemmed;
text with CJK characters goes through SudachiPy (short units, normalized forms) so that
東京都 / 東京 and ｶﾀｶﾅ / カタカナ meet on the same tokens.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections.abc import Iterator
from functools import lru_cache

import Stemmer
from sudachipy import Dictionary, Morpheme, SplitMode, Tokenizer

_CJK = re.compile(
    r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f\u3005\u3006]"
)
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")
# Sudachi refuses inputs above ~49 KB; cut well below at a sentence or space boundary.
_CHUNK_CHARS = 4000
_CHUNK_BREAK = re.compile(r"[。．！？!?\n]|\s")
# Parts of speech that carry no meaning for retrieval.
_SKIP_POS = {"助詞", "助動詞", "補助記号", "空白", "記号"}
# Symbols Sudachi tags as such can still hold digits or letters (¼ → "1⁄4"): keep those.
_SYMBOL_POS = {"補助記号", "記号"}

ENGLISH_STOPWORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "more",
        "most",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "s",
        "t",
        "d",
        "ll",
        "m",
        "re",
        "ve",
    ]
)

_local = threading.local()


@lru_cache(maxsize=1)
def _dictionary() -> Dictionary:
    return Dictionary(dict="core")


def _sudachi() -> Tokenizer:
    # Sudachi and Snowball tokenizers are not thread-safe: one per thread, one shared dictionary.
    tokenizer = getattr(_local, "sudachi", None)
    if tokenizer is None:
        dictionary = _dictionary()
        # SudachiPy 0.7 renamed create() to tokenizer(); accept both.
        factory = getattr(dictionary, "tokenizer", None) or dictionary.create
        tokenizer = factory(mode=SplitMode.A)
        _local.sudachi = tokenizer
    return tokenizer


def _stemmer() -> Stemmer.Stemmer:
    stemmer = getattr(_local, "stemmer", None)
    if stemmer is None:
        stemmer = Stemmer.Stemmer("english")
        _local.stemmer = stemmer
    return stemmer


def normalize(text: str) -> str:
    """Unicode NFKC then case folding: the canonical form every token starts from."""
    return unicodedata.normalize("NFKC", text).casefold()


def has_cjk(text: str) -> bool:
    """True if the text holds any Japanese/Chinese character."""
    return _CJK.search(text) is not None


def _word_tokens(text: str) -> Iterator[str]:
    stemmer = _stemmer()
    for match in _WORD.finditer(text):
        word = match.group().replace("’", "'")
        if "'" in word:
            word = word.split("'", 1)[0]
        if word in ENGLISH_STOPWORDS or not word:
            continue
        yield stemmer.stemWord(word) if word.isascii() and word.isalpha() else word


def _chunks(text: str) -> Iterator[str]:
    start = 0
    while len(text) - start > _CHUNK_CHARS:
        window = text[start : start + _CHUNK_CHARS]
        cut = max((m.end() for m in _CHUNK_BREAK.finditer(window)), default=_CHUNK_CHARS)
        yield text[start : start + cut]
        start += cut
    yield text[start:]


def morphemes(text: str) -> Iterator[Morpheme]:
    """Sudachi's morphemes (short units) of ``text``, in chunks it accepts: for a reader that
    needs parts of speech (Sleep's merge guard, ``facts.py``)."""
    tokenizer = _sudachi()
    for chunk in _chunks(text):
        yield from tokenizer.tokenize(chunk)


def _cjk_tokens(text: str) -> Iterator[str]:
    tokenizer = _sudachi()
    for chunk in _chunks(text):
        for morpheme in tokenizer.tokenize(chunk):
            pos = morpheme.part_of_speech()[0]
            surface = morpheme.surface()
            if pos in _SYMBOL_POS and not has_cjk(surface):
                yield from _word_tokens(surface)
                continue
            if pos in _SKIP_POS:
                continue
            if has_cjk(surface):
                yield from _clean(normalize(morpheme.normalized_form()))
            else:
                yield from _word_tokens(surface)


def _clean(token: str) -> Iterator[str]:
    # Keep letters and numbers only, so FTS5's unicode61 sees each token as exactly one token.
    kept = "".join(c if unicodedata.category(c)[0] in "LN" else " " for c in token)
    yield from kept.split()


def tokenize(text: str) -> list[str]:
    """Split text into normalized retrieval tokens (order kept, duplicates kept)."""
    text = normalize(text)
    if not text.strip():
        return []
    if has_cjk(text):
        return list(_cjk_tokens(text))
    return list(_word_tokens(text))
