"""The hybrid does not let a stray word match outvote meaning (issue 17), through REST, real
model, SQLite and PostgreSQL, English and Japanese.

The failure this guards against: a paraphrased question shares one ordinary word with an
unrelated memory, the lexical leg ranks that memory first, and weighted
fusion's min-max gives it the full lexical weight, so it beats the memory the vector leg
(rightly) ranks first. With ``search_config.leg_trust`` = ``sharpness`` (the default) the
lexical leg's weight follows how far its best hit stands out, and the answer comes first;
``fixed`` keeps the old equal weights, and with them the stray memory.
"""

from __future__ import annotations

import pytest

from tests.conftest import SyncASGIClient

pytestmark = pytest.mark.integration
API = "/api/v1"

ENGLISH = [
    "The user wants replies in bullet points, never long paragraphs.",
    "Maya answered 40 of the 52 survey questions in the first week.",
    "The staging database listens on port 5433.",
    "Friday deploys need a second reviewer on call.",
    "Our office plants are watered every Monday by the facilities team.",
    "The quarterly report is due on the 15th of each month after the quarter ends.",
    "Invoices older than 90 days are archived to cold storage.",
    "The guest wifi password is rotated every month.",
    "Kenji is the contact for anything about the mobile app release.",
    "The old newsletter tool will be shut down in March; use the new mailer instead.",
    "Lunch orders must be in by 11 am.",
    "The answer key for the onboarding quiz lives in the HR drive.",
]
JAPANESE = [
    "ユーザーは箇条書きでの返信を好み、長い段落は嫌う。",
    "マヤさんは最初の週にアンケート52問のうち40問に回答した。",
    "ステージング環境のデータベースはポート5433で待ち受けている。",
    "金曜日のデプロイには待機中の二人目のレビュアーが必要。",
    "オフィスの観葉植物は毎週月曜日に総務が水やりをする。",
    "四半期報告書は四半期終了後の翌月15日が締め切り。",
    "90日より古い請求書はコールドストレージに移される。",
    "来客用Wi-Fiのパスワードは毎月変更される。",
    "モバイルアプリのリリースについてはケンジさんが窓口。",
    "古いメルマガ配信ツールは3月に停止するので、新しいメーラーを使うこと。",
    "昼食の注文は午前11時までに。",
    "オンボーディングクイズの解答はHRのドライブにある。",
]
# (language, question, its answer, the memory a stray shared word makes the lexical leg's best)
STRAY = [
    ("en", "What is the deadline for the three-monthly summary?", ENGLISH[5], ENGLISH[7]),
    ("ja", "スマホアプリを出すときは誰に聞けばいい？", JAPANESE[8], JAPANESE[10]),
]


def fill(client: SyncASGIClient, name: str, texts: list[str], config: dict | None) -> None:
    body: dict = {"name": name} if config is None else {"name": name, "search_config": config}
    assert client.post(f"{API}/contexts", json=body).status_code == 201
    items = [{"summary": text} for text in texts]
    response = client.post(
        f"{API}/contexts/{name}/memories/batch", json={"items": items, "wait": True}
    )
    assert response.status_code == 200, response.text


def first(client: SyncASGIClient, context: str, query: str) -> dict:
    response = client.post(f"{API}/contexts/{context}/recall", json={"query": query, "k": 5})
    assert response.status_code == 200, response.text
    return response.json()["results"][0]


@pytest.mark.parametrize(("language", "query", "answer", "stray"), STRAY, ids=["en", "ja"])
def test_a_stray_word_match_does_not_outvote_the_meaning(
    client: SyncASGIClient, language: str, query: str, answer: str, stray: str
) -> None:
    texts = ENGLISH if language == "en" else JAPANESE
    fill(client, "default-trust", texts, None)
    top = first(client, "default-trust", query)
    assert top["summary"] == answer, top
    # The answer won on the vector leg; the lexical leg's best was the stray memory, which
    # the old equal weights put first.
    assert top["score_breakdown"]["vector_rank"] == 1
    assert top["score_breakdown"]["lexical_rank"] != 1
    fill(client, "fixed", texts, {"leg_trust": "fixed"})
    assert first(client, "fixed", query)["summary"] == stray
