"""The co-recall study runs end to end on a tiny session (the real one: docs/graph.md):
every rule is measured, edge recall is the share of the learnable same-topic pairs linked,
and the table names each session's role (rules are chosen on development sessions only)."""

from __future__ import annotations

from hebbian_study import RULES, Session, markdown, run_study

from kioku.benchmark.data import Doc, Question
from kioku.embeddings.fake import FakeEmbedder


def tiny_session() -> Session:
    texts = {
        "kiwi": [
            "kiwi fruit grows in Nelson",
            "kiwi fruit is picked in May",
            "kiwi fruit ships cold",
        ],
        "port": ["staging port is 5433", "staging port needs the VPN", "staging port was 5432"],
    }
    docs = [
        Doc(f"{t}:{i}", text, f"tiny:{t}:{i}")
        for t, rows in texts.items()
        for i, text in enumerate(rows)
    ]
    topic = {doc.key: doc.key.split(":")[0] for doc in docs}
    asked = [Question("q1", "kiwi fruit", ("kiwi",)), Question("q2", "staging port", ("port",))]
    return Session("tiny", "development", docs, topic, asked * 2, asked)


def test_every_rule_is_measured_with_edge_precision_and_recall() -> None:
    session = tiny_session()
    results = run_study([session], FakeEmbedder(), RULES)
    assert list(results["tiny"]) == list(RULES)
    before = results["tiny"]["top 3, every result (before)"]
    assert before["learnable_pairs"] > 0 and before["edge_recall"] == 1.0
    for row in results["tiny"].values():
        assert row["learnable_pairs"] == before["learnable_pairs"]  # the ranking ignores the rule
        assert row["edge_recall"] is None or 0.0 <= row["edge_recall"] <= 1.0
    table = markdown(results, {"tiny": "development"})
    assert table.count("| tiny (development) |") == len(RULES)
    assert "edge recall" in table.splitlines()[0]
