"""Loaders for the benchmark data sets (LoCoMo, JSQuAD): pure functions, no kioku runtime."""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kioku.models import MAX_SUMMARY_CHARS

LOCOMO_CATEGORIES = (1, 2, 3, 4)
_SESSION = re.compile(r"session_(\d+)")
_EVIDENCE_SPLIT = re.compile(r"[;,\s]+")
_DIA_ID = re.compile(r"D:?(\d+):(\d+)")
_BREAK = re.compile(r"\s|(?<=[。．！？])")


@dataclass(frozen=True)
class Doc:
    """One item to remember: ``key`` is what questions name as gold (dia_id, paragraph key)."""

    key: str
    text: str
    source_uri: str
    thread: str | None = None
    """The thread declared for it through ``remember_batch`` (a LoCoMo session), if any."""
    position: int | None = None


@dataclass(frozen=True)
class Question:
    """One query with its gold document keys (``category`` 0 when the data set has none)."""

    qid: str
    text: str
    gold: tuple[str, ...]
    category: int = 0


@dataclass
class EvidenceStats:
    """What evidence normalisation changed, kept or dropped (reported beside the scores)."""

    questions_seen: int = 0
    questions_kept: int = 0
    ids_seen: int = 0
    ids_repaired: list[str] = field(default_factory=list)
    ids_dropped: list[str] = field(default_factory=list)
    questions_dropped: list[str] = field(default_factory=list)

    def merge(self, other: EvidenceStats) -> None:
        """Add another conversation's counts to these."""
        self.questions_seen += other.questions_seen
        self.questions_kept += other.questions_kept
        self.ids_seen += other.ids_seen
        self.ids_repaired += other.ids_repaired
        self.ids_dropped += other.ids_dropped
        self.questions_dropped += other.questions_dropped


@dataclass
class Corpus:
    """One kioku context worth of documents and the questions asked of it."""

    context: str
    docs: list[Doc]
    questions: list[Question]
    evidence: EvidenceStats | None = None


def split_text(text: str, limit: int = MAX_SUMMARY_CHARS) -> tuple[str, str]:
    """Split a text into (summary ≤ ``limit`` chars, content) without losing or repeating text.

    kioku indexes ``summary + "\\n" + content``, so the text is cut once, at the last whitespace
    (which the newline replaces) or after the last Japanese full stop in the second half of the
    window; only a text with neither is cut hard at ``limit``.
    """
    if len(text) <= limit:
        return text, ""
    window = text[: limit + 1]  # a space right after the limit is a fine cut too
    cuts = [m.start() for m in _BREAK.finditer(window) if limit // 2 <= m.start() <= limit]
    if not cuts:
        return text[:limit], text[limit:]
    cut = cuts[-1]
    if text[cut].isspace():
        return text[:cut], text[cut + 1 :]
    return text[:cut], text[cut:]


def normalise_dia_id(raw: str) -> str:
    """``D30:05`` → ``D30:5``, ``D:11:26`` → ``D11:26``; anything else is returned unchanged."""
    match = _DIA_ID.fullmatch(raw)
    if match is None:
        return raw
    return f"D{int(match.group(1))}:{int(match.group(2))}"


def normalise_evidence(
    evidence: list[str], known: set[str]
) -> tuple[list[str], list[str], list[str]]:
    """Split, repair and check evidence ids: returns (kept ids, repaired raw ids, dropped ids).

    Items are split on ``;``, ``,`` and whitespace; ids not in ``known`` after repair are dropped.
    Kept ids are unique, in first-seen order.
    """
    kept: list[str] = []
    repaired: list[str] = []
    dropped: list[str] = []
    for item in evidence:
        parts = [p for p in _EVIDENCE_SPLIT.split(str(item)) if p]
        if len(parts) > 1:
            repaired.append(str(item))
        for part in parts:
            fixed = normalise_dia_id(part)
            if fixed != part:
                repaired.append(part)
            if fixed not in known:
                dropped.append(part)
            elif fixed not in kept:
                kept.append(fixed)
    return kept, repaired, dropped


def locomo_turns(conversation: dict[str, Any]) -> list[tuple[str, str, str]]:
    """Every turn of a LoCoMo conversation as (dia_id, memory text, session), sessions in
    order."""
    numbers = sorted(
        int(m.group(1)) for key in conversation if (m := _SESSION.fullmatch(key)) is not None
    )
    turns: list[tuple[str, str, str]] = []
    for number in numbers:
        when = conversation.get(f"session_{number}_date_time", "")
        for turn in conversation[f"session_{number}"]:
            text = f"{turn['speaker']} ({when}): {turn['text']}"
            if turn.get("blip_caption"):
                text += f" [image: {turn['blip_caption']}]"
            turns.append((str(turn["dia_id"]), text, f"session_{number}"))
    return turns


def locomo_corpus(name: str, conversation: dict[str, Any]) -> Corpus:
    """One conversation (``name`` like ``conv-26``) as a corpus of turns and cat. 1-4 questions."""
    if "conversation" in conversation:  # the upstream locomo10.json item shape
        conversation = {**conversation["conversation"], "qa": conversation.get("qa", [])}
    turns = locomo_turns(conversation)
    # Each session is declared as a thread, its turns in order: what any client importing a
    # chat transcript through the public API would do (docs/concepts.md, *Threads*).
    docs: list[Doc] = []
    positions: Counter[str] = Counter()
    for dia, text, session in turns:
        docs.append(Doc(dia, text, f"locomo:{name}:{dia}", session, positions[session]))
        positions[session] += 1
    known = {doc.key for doc in docs}
    stats = EvidenceStats()
    questions: list[Question] = []
    for index, qa in enumerate(conversation.get("qa", [])):
        if qa.get("category") not in LOCOMO_CATEGORIES:
            continue
        qid = f"{name}:q{index}"
        stats.questions_seen += 1
        evidence = qa.get("evidence") or []
        stats.ids_seen += len(evidence)
        kept, repaired, dropped = normalise_evidence(evidence, known)
        stats.ids_repaired += [f"{name}:{r}" for r in repaired]
        stats.ids_dropped += [f"{name}:{d}" for d in dropped]
        if not kept or not str(qa.get("question", "")).strip():
            stats.questions_dropped.append(qid)
            continue
        stats.questions_kept += 1
        questions.append(Question(qid, str(qa["question"]), tuple(kept), int(qa["category"])))
    return Corpus(f"locomo-{name}", docs, questions, stats)


def _conversation_number(path: Path) -> tuple[int, str]:
    digits = re.findall(r"\d+", path.stem)
    return (int(digits[-1]) if digits else 0, path.stem)


def load_locomo(folder: Path, limit: int | None = None) -> list[Corpus]:
    """Every ``conv-*.json`` of ``folder`` in numeric order (the first ``limit`` if given)."""
    paths = sorted(folder.glob("conv-*.json"), key=_conversation_number)
    if not paths:
        raise FileNotFoundError(f"no LoCoMo conversations (conv-*.json) in {folder}")
    corpora = []
    for path in paths[:limit]:
        conversation = json.loads(path.read_text(encoding="utf-8"))
        corpora.append(locomo_corpus(path.stem, conversation))
    return corpora


def jsquad_corpus(
    squad: dict[str, Any],
    *,
    max_questions: int | None = None,
    extra_paragraphs: int = 0,
    seed: int = 0,
) -> Corpus:
    """SQuAD-v1-format data as one corpus of distinct paragraphs; gold = the question's paragraph.

    With ``max_questions`` only the first questions are kept, with the paragraphs they need plus
    ``extra_paragraphs`` others drawn at random (seeded) as distractors.
    """
    keys: dict[str, str] = {}
    questions: list[Question] = []
    for article in squad["data"]:
        for paragraph in article["paragraphs"]:
            text = paragraph["context"]
            key = keys.setdefault(text, f"p{len(keys):05d}")
            for qa in paragraph["qas"]:
                questions.append(Question(str(qa["id"]), str(qa["question"]), (key,)))
    questions = [q for q in questions if q.text.strip()]
    docs = [Doc(key, text, f"jsquad:{key}") for text, key in keys.items()]
    if max_questions is not None:
        questions = questions[:max_questions]
        needed = {q.gold[0] for q in questions}
        others = [doc.key for doc in docs if doc.key not in needed]
        extra = random.Random(seed).sample(others, min(extra_paragraphs, len(others)))
        keep = needed | set(extra)
        docs = [doc for doc in docs if doc.key in keep]
    return Corpus("jsquad", docs, questions)


def load_jsquad(path: Path, **options: Any) -> Corpus:
    """Read ``valid-v1.3.json`` (see ``jsquad_corpus`` for the options)."""
    if not path.exists():
        raise FileNotFoundError(f"no JSQuAD file at {path}")
    return jsquad_corpus(json.loads(path.read_text(encoding="utf-8")), **options)
