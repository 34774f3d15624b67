"""Which language (by script) a text is written in, as recall's fusion needs to know it.

Recall does not need to name a language, only to tell when a query and a memory cannot share
words: the lexical leg is blind across that line, and the embedder measures every pair across
it on a different scale. Scripts draw the line well enough for that: a text in Han or kana is
``ja`` (a short Japanese query is often all kanji, 「東京本社」, so Han alone cannot tell
Chinese apart; kioku's tokenizer reads both the same way), Hangul is ``ko``, anything else
(Latin, Cyrillic, …) is ``other``. Mixed texts go by their letters: a Japanese note naming
"Storybook" is Japanese.
"""

from __future__ import annotations

import re
from typing import Literal

Language = Literal["ja", "ko", "other"]

_KANA = re.compile(r"[\u3040-\u30ff\uff66-\uff9f]")
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3005]")
_HANGUL = re.compile(r"[\uac00-\ud7af\u1100-\u11ff\u3130-\u318f]")
_LETTER = re.compile(r"[^\W\d_]")
_OTHER_WORD = re.compile(
    r"[^\W\d_\u3040-\u30ff\uff66-\uff9f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3005"
    r"\uac00-\ud7af\u1100-\u11ff\u3130-\u318f]{2,}"
)
KANA_PROSE = 10
HEAD_CHARS = 200
"""How much of a memory's summary (and of its content) tells its language."""


def language_of(text: str) -> Language:
    """The script group of ``text``: CJK wins once its characters are at least a quarter of the
    letters (a Japanese sentence is short in characters next to the English words it holds),
    and whenever it holds ``KANA_PROSE`` kana (Japanese prose about, say, an Italian
    association with a long name: kana belong to Japanese alone)."""
    if text.isascii():  # no CJK or Hangul at all (a flag CPython keeps): most memories, at once
        return "other"
    letters = len(_LETTER.findall(text))
    if not letters:
        return "other"
    kana, han, hangul = (len(p.findall(text)) for p in (_KANA, _HAN, _HANGUL))
    if kana >= KANA_PROSE:
        return "ja"
    if 4 * (kana + han + hangul) < letters:
        return "other"
    return "ko" if hangul > kana + han else "ja"


def readable_languages(text: str) -> set[Language]:
    """The languages whose memories a query's words can match at all: those whose script the
    query uses anywhere ("Oncorhynchus ketaを日本語で？" can match both English and Japanese)."""
    found: set[Language] = set()
    if _KANA.search(text) or _HAN.search(text):
        found.add("ja")
    if _HANGUL.search(text):
        found.add("ko")
    if _OTHER_WORD.search(text):
        found.add("other")
    return found
