"""The mixed-language probe of issue 17: cross-lingual recall beside same-language distractors.

One context holds twelve English and twelve Japanese facts, in twelve pairs that share a
topic word (an English note on Kenta's bicycle, a Japanese one on 美咲's). Each fact is the
answer to one question asked in the *other* language, and that question shares surface words
with the pair's fact in its own language, which does not answer it: 「健太さんの自転車は何色？」
must find "Kenta rides a red road bike…", not 「美咲さんの自転車は…」. 24 questions, 12 each way.

Everything goes through REST (``POST …/memories/batch``, ``POST …/recall``) on whatever app
the caller gives: ``test_mixed_language_recall.py`` runs it on SQLite and PostgreSQL with the
real bundled model, and ``lab/mixed_probe.py`` runs it alone for the figures of
docs/benchmarks.md ("Centred cross-language scores"). It reports P@1 (the answer first), how
often the distractor ranks above the answer, and how many wrong first answers came with
confidence ``high``. The facts and questions were written for this probe and are in no other
set (the golden set's ``mixed-language`` bucket has its own).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

API = "/api/v1"

PAIRS: tuple[tuple[str, str], ...] = (
    (
        "Kenta rides a red road bike to work every day.",
        "美咲さんの自転車はいつも駅前の駐輪場に置いてある。",
    ),
    (
        "The printer on the second floor jams when you load thick paper.",
        "コピー用紙の注文は毎月末に事務の中村さんがする。",
    ),
    ("Lena's birthday is on March 14.", "佐々木さんの誕生日は七月三日です。"),
    (
        "Tom is vegetarian and does not eat fish either.",
        "山本さんは魚が苦手で、寿司は食べない。",
    ),
    (
        "The quarterly all-hands meeting takes place in the large hall on the first floor.",
        "営業会議は毎週月曜日の九時から三階の会議室で行う。",
    ),
    ("Emma's dog is named Biscuit.", "小林さんの猫の名前はミケです。"),
    (
        "The server room key is kept by the security guard at the entrance.",
        "倉庫の鍵は経理部の金庫に入っている。",
    ),
    (
        "Our office rent goes up by ten percent in April.",
        "四月から新しいインターンが二人来る。",
    ),
    (
        "Ben's train home leaves Shinagawa at 7:40 pm.",
        "大阪出張の電車の切符は会社がまとめて予約する。",
    ),
    (
        "The facilities team descales the coffee machine every Friday.",
        "給湯室の冷蔵庫は金曜日の夕方に空にする。",
    ),
    (
        "Grace's son plays the violin in the school orchestra.",
        "高橋さんの息子はサッカー部に入っている。",
    ),
    (
        "The company pays for one English lesson a week.",
        "会社の健康診断は毎年六月に行われる。",
    ),
)
"""(English fact, Japanese fact) pairs sharing a topic word."""

QUESTIONS: tuple[tuple[str, str], ...] = (
    ("健太さんの自転車は何色？", "Where does Misaki leave her bicycle?"),
    ("二階のプリンターで厚い紙を使うとどうなる？", "Who orders the copy paper, and when?"),
    ("レナの誕生日はいつ？", "When is Sasaki's birthday?"),
    ("トムは何を食べない？", "Does Yamamoto eat fish?"),
    ("四半期の全体会議はどこで行う？", "When is the sales meeting held?"),
    ("エマの犬の名前は？", "What is Kobayashi's cat named?"),
    ("サーバールームの鍵は誰が持っている？", "Where is the warehouse key kept?"),
    ("事務所の家賃は四月からどうなる？", "How many interns join in April?"),
    ("ベンの帰りの電車は何時に出る？", "Who books the train tickets for trips to Osaka?"),
    ("コーヒーマシンの手入れは何曜日？", "When is the kitchen fridge emptied on Fridays?"),
    ("グレースの息子は何の楽器を弾く？", "Which club is Takahashi's son in?"),
    ("会社が費用を出す英語のレッスンは週に何回？", "When is the company health check held?"),
)
"""Per pair: (a Japanese question answered by the English fact, an English question answered
by the Japanese fact); each shares words with the pair's fact in its own language."""


@dataclass(frozen=True)
class ProbeQuestion:
    query: str
    answer: str
    distractor: str
    direction: str
    """``ja→en`` (a Japanese question, an English answer) or ``en→ja``."""


@dataclass(frozen=True)
class ProbeOutcome:
    question: ProbeQuestion
    first: str
    answer_rank: int | None
    distractor_rank: int | None
    confidence: str

    @property
    def correct(self) -> bool:
        return self.answer_rank == 1


class JsonResponse(Protocol):
    def raise_for_status(self) -> Any: ...

    def json(self) -> Any: ...


class JsonPoster(Protocol):
    """What the probe needs of a client: ``post(url, json=...)`` (httpx's, Starlette's test
    client, the tests' in-process one)."""

    def post(self, url: str, *, json: Any) -> JsonResponse: ...


def questions() -> list[ProbeQuestion]:
    """The 24 questions, Japanese-to-English first."""
    found = [
        ProbeQuestion(ja_question, english, japanese, "ja→en")
        for (english, japanese), (ja_question, _) in zip(PAIRS, QUESTIONS, strict=True)
    ]
    found += [
        ProbeQuestion(en_question, japanese, english, "en→ja")
        for (english, japanese), (_, en_question) in zip(PAIRS, QUESTIONS, strict=True)
    ]
    return found


def facts() -> list[str]:
    """The 24 facts, English then Japanese."""
    return [english for english, _ in PAIRS] + [japanese for _, japanese in PAIRS]


def write_facts(client: JsonPoster, context: str) -> dict[str, str]:
    """Write every fact into ``context`` through REST (embedded before it returns); text → id."""
    items = [{"summary": text} for text in facts()]
    response = client.post(
        f"{API}/contexts/{context}/memories/batch", json={"items": items, "wait": True}
    )
    response.raise_for_status()
    ids = [result["memory_id"] for result in response.json()["results"]]
    return dict(zip(facts(), ids, strict=True))


def ask(
    client: JsonPoster, context: str, ids: dict[str, str], question: ProbeQuestion
) -> ProbeOutcome:
    """One question through ``POST …/recall`` (k=10)."""
    response = client.post(
        f"{API}/contexts/{context}/recall", json={"query": question.query, "k": 10}
    )
    response.raise_for_status()
    body = response.json()
    ranked = [hit["id"] for hit in body["results"]]
    text = {memory_id: fact for fact, memory_id in ids.items()}

    def rank_of(fact: str) -> int | None:
        memory_id = ids[fact]
        return ranked.index(memory_id) + 1 if memory_id in ranked else None

    return ProbeOutcome(
        question,
        text.get(ranked[0], "?") if ranked else "",
        rank_of(question.answer),
        rank_of(question.distractor),
        body["confidence"],
    )


def run_probe(client: JsonPoster, context: str = "default") -> list[ProbeOutcome]:
    """Write the facts into ``context`` and ask every question."""
    ids = write_facts(client, context)
    return [ask(client, context, ids, question) for question in questions()]


def summary(outcomes: Sequence[ProbeOutcome]) -> dict[str, Any]:
    """P@1 overall and per direction, distractor-above-answer and wrong-and-``high`` counts."""

    def p_at_1(direction: str | None) -> float:
        chosen = [o for o in outcomes if direction is None or o.question.direction == direction]
        return round(sum(o.correct for o in chosen) / len(chosen), 3)

    def above(outcome: ProbeOutcome) -> bool:
        if outcome.distractor_rank is None:
            return False
        return outcome.answer_rank is None or outcome.distractor_rank < outcome.answer_rank

    return {
        "questions": len(outcomes),
        "p@1": p_at_1(None),
        "p@1 ja→en": p_at_1("ja→en"),
        "p@1 en→ja": p_at_1("en→ja"),
        "distractor_above_answer": sum(above(o) for o in outcomes),
        "wrong_and_high": sum(not o.correct and o.confidence == "high" for o in outcomes),
    }
