"""Whether two near-duplicate texts state different facts: Sleep's guard before a merge.

The bundled embedder puts "Invoice INV-1001 from Acme was paid on March 3" and the same
sentence about INV-1002 at cosine 0.99, above the merge threshold: to a vector they are one
memory. ``differing_facts`` compares what the two texts state and names each kind of fact in
which they differ; Sleep merges a pair only when the list is empty (docs/sleep.md).

Kinds of fact compared, English and Japanese (``fact_values.py`` reads the values):

- ``identifier``, ``version``, ``date``, ``time``, ``amount``, ``number``: the set of
  canonical values must be equal, so one value written two ways (ＩＮＶ−１００１ and INV-1001,
  ３月３日 and March 3) agrees, and a value present on one side only disagrees (a text that
  adds a date is kept apart too: the newer text would win and the date could be lost);
- ``negation``: the count of negating words must be equal (not, never, no, n't, cannot,
  without; ない, ません, なかった, ず, なし, and 不/未/無/非 words such as 未払い), and a word
  may not face its opposite (paid/unpaid, approved/rejected, 成功/失敗);
- ``name``: a proper name (a person, a company, a place: capitalisation cannot tell them
  apart) on one side must appear on the other, in any case. English: capitalised words that
  are not stop words nor a sentence's opening filler; Japanese: Sudachi's proper nouns
  (人名, 地名, 固有名詞) and whatever stands before an honorific (さん, 様, 氏, くん, ちゃん, 殿).

Not covered: who did what to whom ("Alice paid Bob" / "Bob paid Alice"), where a negation
stands when both sides have one, antonyms outside a short list, Japanese names Sudachi does
not know that carry no honorific, numbers written in words in Japanese other than kanji
numerals before a counter.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from kioku.search.fact_values import VALUE_KINDS, at_sentence_start, normalise, scan
from kioku.search.tokenize import ENGLISH_STOPWORDS, has_cjk, morphemes

NEGATION, NAME = "negation", "name"
KINDS = (*VALUE_KINDS, NEGATION, NAME)

_EN_NEGATION = re.compile(
    r"(?i)\b(?:not|never|none|nobody|nothing|nowhere|neither|nor|cannot|without|"
    r"no(?!\.?\s*\d))\b|n['’]t\b"
)
_JA_NEGATING_AUXILIARIES = {"ない", "ず", "ぬ", "まい"}
_JA_NEGATING_WORDS = {"無い", "無し", "なし"}
_JA_NEGATING_PREFIXES = ("不", "未", "無", "非")
_JA_NOT_NEGATIONS = {"未来", "非常", "無事", "不動産", "不思議"}
_HONORIFICS = {"さん", "様", "さま", "氏", "君", "くん", "ちゃん", "殿"}
_LATIN_WORD = re.compile(r"[A-Za-z]+(?:['’][A-Za-z]+)*")
_NAME = re.compile(r"(?<![A-Za-z0-9'’])[A-Z][A-Za-z]*(?:-[A-Za-z]+)*(?:['’][A-Za-z]+)?")
# Capitalised only because they open a sentence: never a name there.
_OPENERS = {
    "also", "however", "yes", "yeah", "no", "ok", "okay", "thanks", "thank", "hi", "hello",
    "hey", "so", "well", "oh", "please", "note", "remember", "reminder", "update", "fyi",
    "important", "todo", "done", "finally", "then", "next", "now", "currently", "still",
    "may", "might", "must", "shall", "let", "did", "does", "yep", "yup", "nope", "sure",
    "great", "cool", "nice", "wow", "awesome", "sorry", "right", "true", "exactly", "totally",
    "definitely", "absolutely", "haha", "lol", "btw", "anyway", "actually", "honestly",
}  # fmt: skip
_OPPOSITES = [
    ("approved", "rejected"), ("approved", "denied"), ("accepted", "rejected"),
    ("accepted", "declined"), ("passed", "failed"), ("succeeded", "failed"),
    ("success", "failure"), ("enabled", "disabled"), ("online", "offline"),
    ("allowed", "denied"), ("allowed", "blocked"), ("true", "false"), ("open", "closed"),
    ("opened", "closed"), ("increased", "decreased"), ("increase", "decrease"),
    ("before", "after"), ("above", "below"), ("more", "less"), ("added", "removed"),
    ("started", "stopped"), ("win", "lose"), ("won", "lost"),
    ("成功", "失敗"), ("承認", "却下"), ("増加", "減少"), ("上昇", "下降"), ("以上", "以下"),
    ("有効", "無効"), ("有料", "無料"), ("開始", "停止"), ("合格", "不合格"),
]  # fmt: skip
_OPPOSITE_OF: dict[str, set[str]] = {}
for _x, _y in _OPPOSITES:
    _OPPOSITE_OF.setdefault(_x, set()).add(_y)
    _OPPOSITE_OF.setdefault(_y, set()).add(_x)
_POLAR = frozenset(_OPPOSITE_OF)
_NEGATING_PREFIXES = ("non-", "non", "un", "in", "im", "ir", "il", "dis")


@dataclass(frozen=True)
class Facts:
    """What one text states, read once (a Sleep run reads each memory once)."""

    values: dict[str, dict[str, str]]
    """Per kind, each canonical value with the words that said it (``INV1001``: ``INV-1001``)."""
    negations: tuple[str, ...]
    names: frozenset[str]
    words: frozenset[str]
    """Its Latin words, lower-cased: where a name or an opposite is looked for."""
    folded: str
    """The normalised text, case-folded: where a Japanese name is looked for."""
    polar: frozenset[str]
    """The words of ``_OPPOSITES`` it holds."""


@dataclass(frozen=True)
class Difference:
    """One kind of fact two texts state differently: what only the first and only the
    second says (for ``negation``: each side's negating words)."""

    kind: str
    first: tuple[str, ...]
    second: tuple[str, ...]

    def describe(self) -> str:
        """``identifier INV-1001 vs INV-1002`` (``none``: the side says nothing of the kind)."""
        first, second = ", ".join(self.first) or "none", ", ".join(self.second) or "none"
        return f"{self.kind} {first} vs {second}"


def facts_of(text: str) -> Facts:
    """Read the facts of a text (its values, negations and names)."""
    normal = normalise(text)
    values, rest = scan(normal)
    negations = [m.group(0).lower() for m in _EN_NEGATION.finditer(normal)]
    names = set(_english_names(rest))
    if has_cjk(normal):
        japanese_negations, japanese_names = _japanese(normal, rest)
        negations += japanese_negations
        names |= japanese_names
    return Facts(
        values=values,
        negations=tuple(negations),
        names=frozenset(names),
        words=(words := frozenset(w.lower() for w in _LATIN_WORD.findall(normal))),
        folded=(folded := normal.casefold()),
        polar=frozenset(w for w in _POLAR if (w in words if w.isascii() else w in folded)),
    )


def differing_facts(a: str | Facts, b: str | Facts) -> list[Difference]:
    """The kinds of fact in which ``a`` and ``b`` differ (empty: they may be one memory)."""
    if isinstance(a, str) and isinstance(b, str) and normalise(a) == normalise(b):
        return []
    first = facts_of(a) if isinstance(a, str) else a
    second = facts_of(b) if isinstance(b, str) else b
    found: list[Difference] = []
    for kind in VALUE_KINDS:
        ours, theirs = first.values[kind], second.values[kind]
        if ours.keys() == theirs.keys():
            continue
        only_first = tuple(ours[value] for value in sorted(ours.keys() - theirs.keys()))
        only_second = tuple(theirs[value] for value in sorted(theirs.keys() - ours.keys()))
        if only_first or only_second:
            found.append(Difference(kind, only_first, only_second))
    negation = _negation(first, second)
    if negation is not None:
        found.append(negation)
    only_first = sorted(n for n in first.names if not _mentions(second, n))
    only_second = sorted(n for n in second.names if not _mentions(first, n))
    if only_first or only_second:
        found.append(Difference(NAME, tuple(only_first), tuple(only_second)))
    return found


def describe(differences: Iterable[Difference]) -> str:
    """``identifier INV-1001 vs INV-1002; negation none vs not``."""
    return "; ".join(difference.describe() for difference in differences)


def _negation(first: Facts, second: Facts) -> Difference | None:
    if len(first.negations) != len(second.negations):
        return Difference(NEGATION, first.negations, second.negations)
    opposed = set(_opposed(first, second))
    if opposed:
        ours, theirs = sorted({x for x, _ in opposed}), sorted({y for _, y in opposed})
        return Difference(NEGATION, tuple(ours), tuple(theirs))
    return None


def _opposed(first: Facts, second: Facts) -> Iterable[tuple[str, str]]:
    """Word pairs, one only in ``first`` and its opposite only in ``second``."""
    only_first, only_second = first.polar - second.polar, second.polar - first.polar
    for x in only_first:
        for y in _OPPOSITE_OF[x] & only_second:
            yield x, y
    mine, theirs = first.words - second.words, second.words - first.words
    for ours, others, flipped in ((mine, theirs, False), (theirs, mine, True)):
        for word in ours:
            for prefix in _NEGATING_PREFIXES:
                stem = word[len(prefix) :]
                if word.startswith(prefix) and len(stem) >= 3 and stem in others:
                    yield (stem, word) if flipped else (word, stem)


def _mentions(facts: Facts, name: str) -> bool:
    """Whether a text names ``name`` (a word of it in any case; for Japanese, anywhere)."""
    folded = name.casefold()
    if folded.isascii():
        return (
            folded in facts.words
            or re.search(rf"(?<![a-z0-9]){re.escape(folded)}(?![a-z0-9])", facts.folded) is not None
        )
    return folded in facts.folded


def _english_names(rest: str) -> Iterable[str]:
    for match in _NAME.finditer(rest):
        word = re.sub(r"['’]s$", "", match.group(0))
        base = re.split(r"['’]", word)[0].lower()
        if len(word) < 2 or base in ENGLISH_STOPWORDS:
            continue
        if base in _OPENERS and at_sentence_start(rest, match.start()):
            continue
        yield word


def _japanese(normal: str, rest: str) -> tuple[list[str], set[str]]:
    """Negating words of the whole text; proper names of what its values left."""
    negations: list[str] = []
    previous = ""
    for m in morphemes(normal):
        pos, form, surface = m.part_of_speech()[0], m.normalized_form(), m.surface()
        before, previous = previous, surface
        if surface == "ん" and before == "ませ":
            surface = "ません"  # the polite negative, told as written
        if (
            (pos == "助動詞" and form in _JA_NEGATING_AUXILIARIES)
            or form in _JA_NEGATING_WORDS
            or (pos == "接頭辞" and surface in _JA_NEGATING_PREFIXES)
            or (
                pos in ("名詞", "形状詞")
                and len(surface) >= 2
                and surface.startswith(_JA_NEGATING_PREFIXES)
                and surface not in _JA_NOT_NEGATIONS
            )
        ):
            negations.append(surface)
    names: set[str] = set()
    previous = None
    for m in morphemes(rest):
        surface = m.surface().strip()
        pos = m.part_of_speech()
        if pos[1] == "固有名詞" and has_cjk(surface):
            names.add(surface)
        elif surface in _HONORIFICS and previous is not None and has_cjk(previous):
            names.add(previous)
        previous = surface if pos[0] == "名詞" else None
    return negations, names
