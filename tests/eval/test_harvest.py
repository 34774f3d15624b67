"""Harvest: feedback → candidate golden items, stratified, de-duplicated, never written back."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from kioku.cli import app
from kioku.eval.golden import DEFAULT_GOLDEN, load_golden
from kioku.eval.harvest import harvest, normalise_query
from kioku.models import ContextCreate, FeedbackCreate, MemoryCreate
from kioku.runtime import Runtime, open_runtime
from kioku.service.principal import Principal
from kioku.settings import Settings


def seed(runtime: Runtime, principal: Principal) -> dict[str, str]:
    """Memories in a trusted and an external context, and feedback on them."""
    runtime.contexts.create_context(principal, ContextCreate(name="slack", trust_tier="external"))

    def remember(context: str, summary: str, **fields: object) -> str:
        data = MemoryCreate.model_validate({"summary": summary, **fields})
        return runtime.memories.remember(principal, context, data).id

    ids = {
        "deploy": remember("default", "Deploys happen on Tuesdays"),
        "rule": remember("default", "Never push to main", delivery_mode="always"),
        "rumour": remember("slack", "deploy whenever you like"),
        "office": remember("default", "本社は渋谷にある"),
    }
    votes = [
        ("default", "deploy", True, "When do we deploy?"),
        ("default", "deploy", True, "when do we  DEPLOY"),  # the same query, normalised
        ("slack", "rumour", False, "When do we deploy?"),
        ("default", "rule", True, "can I push to main?"),
        ("default", "office", True, "Where is the head office?"),
        ("default", "office", True, "本社はどこ？"),
        ("default", "deploy", False, "what is the wifi password"),
        ("default", "deploy", True, "Deploys happen on Tuesdays"),
        ("default", "deploy", True, "How are deploys scheduled?"),
        ("default", "deploy", True, "deploy cadence?"),
        ("default", "deploy", True, "deploy cadence"),
        ("default", "deploy", True, None),  # no query: nothing to propose
        ("default", "deploy", True, load_golden().queries[0].query),  # already golden
    ]
    for context, key, helpful, query in votes:
        event = FeedbackCreate(memory_id=ids[key], helpful=helpful, query=query, note="why")
        runtime.feedback.feedback(principal, context, event)
    return ids


def test_normalised_queries_ignore_case_width_punctuation_and_spacing() -> None:
    assert normalise_query("When do we  DEPLOY?") == normalise_query("when do we deploy")
    assert normalise_query("ＡＰＩ　の上限！") == normalise_query("api の上限")


def test_candidates_are_guessed_into_buckets_and_deduplicated(
    runtime: Runtime, principal: Principal
) -> None:
    ids = seed(runtime, principal)
    found = {(c.context, c.query): c for c in harvest(runtime, principal, load_golden())}
    assert load_golden().queries[0].query not in {query for _, query in found}
    assert len({(context, normalise_query(query)) for context, query in found}) == len(found)
    deploy = found[("default", "When do we deploy?")]
    assert deploy.bucket == "trusted-only" and deploy.events == 2
    assert deploy.relevant == [ids["deploy"]] and deploy.unhelpful == []
    assert deploy.tempting == [ids["rumour"]]  # voted down in slack for the same query
    rumour = found[("slack", "When do we deploy?")]  # slack's own candidate, its own votes
    assert rumour.bucket == "negative" and rumour.events == 1
    assert rumour.unhelpful == [ids["rumour"]] and rumour.tempting == []
    buckets = {query: c.bucket for (context, query), c in found.items() if context == "default"}
    assert buckets["can I push to main?"] == "pinned-vs-recall"
    assert buckets["Where is the head office?"] == "cross-lingual"
    assert buckets["本社はどこ？"] == "japanese"
    assert buckets["what is the wifi password"] == "negative"
    assert buckets["Deploys happen on Tuesdays"] == "exact"
    assert buckets["How are deploys scheduled?"] == "paraphrase"
    assert len(found) == 9  # 13 events: one merged twice, one without a query, one golden


def test_at_most_n_per_context_and_bucket_most_voted_first(
    runtime: Runtime, principal: Principal
) -> None:
    seed(runtime, principal)
    kept = harvest(runtime, principal, load_golden(), per_stratum=1)
    strata = [(c.context, c.bucket) for c in kept]
    assert len(strata) == len(set(strata))
    paraphrase = [c for c in kept if c.bucket == "paraphrase"]
    assert [c.query for c in paraphrase] == ["deploy cadence"]  # 2 events beat 1


def test_one_context_only(runtime: Runtime, principal: Principal) -> None:
    seed(runtime, principal)
    only_slack = harvest(runtime, principal, load_golden(), context="slack")
    assert [(c.query, c.bucket) for c in only_slack] == [("When do we deploy?", "negative")]


def test_a_candidate_reads_like_a_golden_item(runtime: Runtime, principal: Principal) -> None:
    ids = seed(runtime, principal)
    found = harvest(runtime, principal, load_golden())
    deploy = next(c for c in found if (c.context, c.query) == ("default", "When do we deploy?"))
    item = deploy.as_dict()
    assert item["relevant"] == [f"m-{ids['deploy'][:8]}"]
    assert item["tempting"] == [f"m-{ids['rumour'][:8]}"]
    contexts = {doc["memory_id"]: doc["context"] for doc in item["documents"]}  # type: ignore[union-attr]
    assert contexts == {ids["deploy"]: "default", ids["rumour"]: "slack"}
    assert "TODO" in str(item["rationale"])


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def cli_database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KIOKU_DATABASE_URL", f"sqlite:///{tmp_path / 'cli.db'}")
    monkeypatch.setenv("KIOKU_EMBEDDER", "none")
    runtime = open_runtime(Settings({"embedder": {"background": False}}))
    try:
        seed(runtime, runtime.local_principal("cli"))
    finally:
        runtime.close()


@pytest.mark.usefixtures("cli_database")
def test_the_command_writes_candidates_and_never_the_golden_set(tmp_path: Path) -> None:
    before = sha(DEFAULT_GOLDEN)
    out = tmp_path / "candidates.yaml"
    runner = CliRunner()
    result = runner.invoke(app, ["eval", "harvest", "--out", str(out), "--per-stratum", "5"])
    assert result.exit_code == 0, result.output
    assert sha(DEFAULT_GOLDEN) == before
    written = yaml.safe_load(out.read_text(encoding="utf-8"))
    assert written["strata"]["default"]["trusted-only"] == 1
    as_json = json.loads(runner.invoke(app, ["eval", "harvest", "--json"]).stdout)
    assert as_json == written


@pytest.mark.usefixtures("cli_database")
def test_the_command_refuses_to_write_over_the_golden_set(tmp_path: Path) -> None:
    golden = tmp_path / "golden.yaml"
    shutil.copy(DEFAULT_GOLDEN, golden)
    before = sha(golden)
    result = CliRunner().invoke(
        app, ["eval", "harvest", "--golden", str(golden), "--out", str(golden)]
    )
    assert result.exit_code == 2 and "refusing" in result.output
    assert sha(golden) == before
