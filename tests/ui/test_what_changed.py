"""Pages whose numbers a person can trust, on both backends: a Sleep run's page lists only
what the run changed (a merge logs the winner's link as ``weight 0.500 → 0.500`` when the
loser's equal link folds into it: no change to tell), and the overview's counts add up (its
``Embedded`` counted merged memories beside live ``Memories``: ``Embedded 14``, ``Memories
11``)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from kioku.embeddings.fake import FakeEmbedder
from kioku.models import MemoryCreate
from kioku.models.sleep import SleepAction
from kioku.runtime import Runtime, open_runtime
from kioku.service.principal import Principal
from kioku.ui.sleep_words import tell
from tests.conftest import ManualClock, make_settings
from tests.postgres import empty_postgres_database
from tests.ui.conftest import Browser
from tests.ui.test_pages import changes_of, signed_in

DUPLICATE = "The staging database listens on port 5433"
SAME_SHOWN = re.compile(r"(\d+\.\d{3}) → \1\b")
"""A value told as changed that reads the same on both sides."""


@pytest.fixture(params=["sqlite", "postgres"])
def secured(
    request: pytest.FixtureRequest, tmp_path: Path, clock: ManualClock
) -> Iterator[Runtime]:
    """The UI's runtime that needs keys (``tests/ui/conftest.py``), on each backend."""
    url = None
    if request.param == "postgres":
        url = request.getfixturevalue("postgres_database")
        empty_postgres_database(url)
    settings = make_settings(tmp_path, dev=False, **({"database_url": url} if url else {}))
    rt = open_runtime(settings, embedder=FakeEmbedder(), clock=clock)
    try:
        yield rt
    finally:
        rt.close()


@pytest.fixture
def owner(browser: Callable[..., Browser], key_of: Callable[..., str]) -> Browser:
    return signed_in(browser, key_of("owner"))


def merged_duplicates(secured: Runtime, principal: Principal, owner: Browser) -> str:
    """Two copies of one memory, each linked to a third, merged by a real Sleep run; the run
    page's address. The older copy's link folds into the newer's link of equal weight."""

    def remember(summary: str, links: list[str]) -> str:
        made = MemoryCreate(summary=summary, linked_memory_ids=links)
        return secured.memories.remember(principal, "default", made).id

    hub = remember("Notes on the staging environment", [])
    remember(DUPLICATE, [hub])
    remember(DUPLICATE, [hub])
    response = owner.post("/ui/contexts/default/sleep", {"mode": "full"})
    assert response.status_code == 303, response.text
    return response.headers["location"]


def test_a_sleep_run_lists_only_what_changed(
    owner: Browser, secured: Runtime, owner_principal: Principal
) -> None:
    run = merged_duplicates(secured, owner_principal, owner)
    report = secured.sleep.sleep_report(owner_principal, run.rsplit("/", 1)[1])
    unmoved = [
        a for a in report.actions
        if a.kind == "edge" and a.before and a.after
        and f"{a.before['weight']:.3f}" == f"{a.after['weight']:.3f}"
    ]  # fmt: skip
    assert unmoved, f"the run logged no unchanged edge to leave out: {report.actions}"
    page = owner.get(run).text
    said = changes_of(page)
    assert f"Merged «{DUPLICATE}» into «{DUPLICATE}»" in said
    assert not SAME_SHOWN.search(said), said
    # Left out of the words, kept in the table of every action as logged.
    assert f"Every action as logged ({len(report.actions)})" in page


def test_the_overview_counts_add_up(
    owner: Browser, secured: Runtime, owner_principal: Principal
) -> None:
    merged_duplicates(secured, owner_principal, owner)
    stats = secured.stats.stats(owner_principal, "default")
    assert (stats.memories, stats.superseded) == (2, 1)
    row = re.search(r'<th scope="row"><a href="/ui/contexts/[^"]+">default</a>.*?</tr>',
                    owner.get("/ui/").text, re.S)  # fmt: skip
    assert row
    cells = [
        re.sub(r"<[^>]+>", " ", c).split() for c in re.findall(r"<td>(.*?)</td>", row.group(0))
    ]
    memories, embedded = cells[1], cells[6]
    assert memories == ["2", "+", "1", "merged"], memories
    assert embedded == ["3", "of", "3"], embedded


def edge(weight_before: float, weight_after: float, **after: str) -> SleepAction:
    ends = {"source_id": "a", "target_id": "b", "origin": "declared", "trust_tier": "trusted"}
    return SleepAction(
        seq=1, phase="merge", kind="edge", target="a|b", note=None, at=datetime.now(UTC),
        before={**ends, "weight": weight_before}, after={**ends, "weight": weight_after, **after},
    )  # fmt: skip


def test_a_change_is_told_when_it_shows() -> None:
    def told(action: SleepAction) -> list[str]:
        return [line.text for line in tell([action], lambda memory_id: memory_id).lines]

    assert told(edge(0.1901, 0.1904)) == []  # reads 0.190 → 0.190
    assert told(edge(0.190, 0.250)) == ["Association «a» — «b»: weight 0.190 → 0.250"]
    assert told(edge(0.19, 0.19, trust_tier="external")) == [
        "Association «a» — «b»: trust tier trusted → external"
    ]
