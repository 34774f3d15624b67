"""The committed golden set meets the gate's rules; a broken file is one readable error."""

from __future__ import annotations

import copy
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from kioku.eval.golden import BUCKETS, DEFAULT_GOLDEN, GoldenSetError, load_golden, parse_golden


def raw_golden() -> dict[str, Any]:
    return yaml.safe_load(DEFAULT_GOLDEN.read_text(encoding="utf-8"))


def test_the_committed_set_is_big_enough_and_covers_every_bucket() -> None:
    golden = load_golden()
    assert len(golden.documents) >= 60
    assert len(golden.queries) >= 120
    per_bucket = Counter(query.bucket for query in golden.queries)
    assert set(per_bucket) == set(BUCKETS)
    assert min(per_bucket.values()) >= 10, per_bucket
    assert all(query.rationale for query in golden.queries)


def test_the_committed_set_has_external_decoys_and_dated_facts() -> None:
    golden = load_golden()
    tiers = {context.name: context.trust_tier for context in golden.contexts}
    assert "external" in tiers.values() and tiers[golden.primary] == "trusted"
    assert any(doc.delivery_mode == "always" for doc in golden.documents)
    assert any(doc.age_days > 0 for doc in golden.documents)
    # Cross-lingual goes both ways: English asking Japanese and Japanese asking English.
    from kioku.search.tokenize import has_cjk

    directions = {
        (has_cjk(q.query), has_cjk(golden.doc(q.relevant[0]).summary))
        for q in golden.queries
        if q.bucket == "cross-lingual"
    }
    assert directions == {(False, True), (True, False)}


def test_the_absent_bucket_asks_in_both_languages_about_what_the_corpus_knows() -> None:
    """Issue 32's abstention set: half English, half Japanese, nothing relevant."""
    from kioku.search.tokenize import has_cjk

    absent = [q for q in load_golden().queries if q.bucket == "absent"]
    assert all(not q.relevant for q in absent)
    languages = Counter(has_cjk(q.query) for q in absent)
    assert languages[True] >= 8 and languages[False] >= 8, languages


def broken(change: str) -> dict[str, Any]:
    data = copy.deepcopy(raw_golden())
    if change == "unknown relevant":
        data["queries"][0]["relevant"] = ["no-such-doc"]
    elif change == "negative with relevant":
        negative = next(q for q in data["queries"] if q["bucket"] == "negative")
        negative["relevant"] = [data["documents"][0]["id"]]
    elif change == "absent with relevant":
        absent = next(q for q in data["queries"] if q["bucket"] == "absent")
        absent["relevant"] = [data["documents"][0]["id"]]
    elif change == "unknown bucket":
        data["queries"][0]["bucket"] = "fuzzy"
    elif change == "duplicate document":
        data["documents"].append(dict(data["documents"][0]))
    elif change == "trusted decoy":
        query = next(q for q in data["queries"] if q["bucket"] == "trusted-only")
        query["tempting"] = [data["documents"][0]["id"]]  # a trusted infra note
    elif change == "older answer":
        query = next(q for q in data["queries"] if q["bucket"] == "temporal")
        query["relevant"], query["tempting"] = query["tempting"], query["relevant"]
    elif change == "typo field":
        data["queries"][0]["relevent"] = data["queries"][0].pop("relevant")
    elif change == "missing rationale":
        del data["queries"][0]["rationale"]
    elif change == "unknown context":
        data["documents"][0]["context"] = "nowhere"
    return data


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ("unknown relevant", "queries[0].relevant: unknown document 'no-such-doc'"),
        ("negative with relevant", "a negative query has no relevant documents"),
        ("absent with relevant", "an absent query has no relevant documents"),
        ("unknown bucket", "queries[0].bucket: 'fuzzy' is not one of"),
        ("duplicate document", "documents: duplicate id"),
        ("trusted decoy", "trusted-only decoys must be external"),
        ("older answer", "a temporal answer must be newer than its tempting facts"),
        ("typo field", "queries[0]: unknown field(s) relevent"),
        ("missing rationale", "queries[0].rationale: expected a non-empty string"),
        ("unknown context", "documents[0].context: unknown context 'nowhere'"),
    ],
)
def test_invalid_sets_are_refused_with_the_field(change: str, message: str) -> None:
    with pytest.raises(GoldenSetError) as error:
        parse_golden(broken(change))
    assert message in str(error.value)


def test_a_missing_or_unparsable_file_is_a_golden_set_error(tmp_path: Path) -> None:
    with pytest.raises(GoldenSetError, match="cannot read golden set"):
        load_golden(tmp_path / "absent.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("queries: [unclosed", encoding="utf-8")
    with pytest.raises(GoldenSetError, match="not valid YAML"):
        load_golden(bad)
