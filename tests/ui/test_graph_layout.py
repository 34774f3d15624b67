"""The graph page in a real headless Chromium, in English and in Japanese, with 0, 1 and 12
neighbours: labels at the body's font size (the old layout scaled its drawing to the page's
width, so one neighbour drew labels ~3× body size), no label over another label, a node or an
edge (the old one ran edges through the centre's label), a drawing sized to what it holds (not
a mostly empty card), and with no neighbour a sentence that says why and how associations are
made. Each case leaves a screenshot in the test artefacts (``graph-en-12.png``, ...)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, expect

from tests.e2e.conftest import running_server
from tests.ui.browser import shoot

pytestmark = pytest.mark.e2e

CENTRE = {
    "en": "The infrastructure notes of the platform team",
    "ja": "プラットフォームチームのインフラに関するメモ",
}
SUMMARIES = {
    "en": [
        "The staging database listens on port 5433",
        "Alice prefers oolong tea over coffee in the afternoon",
        "Deploys are frozen on Fridays after 3 pm",
        "The on-call rotation changes every Monday at 10:00",
        "Backups run nightly at 02:00 and are kept for 30 days",
        "The VPN certificate expires at the end of March",
        "Grafana alerts go to the #ops-alerts channel",
        "The build cache lives on the shared NFS volume",
        "Terraform state is stored in the infra-state bucket",
        "Load tests run against the perf cluster only",
        "The DNS zone is managed in Route 53",
        "Log retention is 14 days in the hot tier",
    ],
    "ja": [
        "ステージング環境のデータベースはポート5433で待ち受けています",
        "アリスは午後にコーヒーよりウーロン茶を好みます",
        "金曜日の15時以降はデプロイを凍結します",
        "オンコール当番は毎週月曜日の10時に交代します",
        "バックアップは毎晩2時に取得し30日間保持します",
        "VPNの証明書は3月末で期限切れになります",
        "Grafanaのアラートは#ops-alertsチャンネルに届きます",
        "ビルドキャッシュは共有NFSボリュームに置いてあります",
        "Terraformのステートはinfra-stateバケットに保存します",
        "負荷試験はperfクラスタに対してのみ実行します",
        "DNSゾーンはRoute 53で管理しています",
        "ホット層のログ保持期間は14日間です",
    ],
}

# Every box in page pixels; an edge as the points of its line or polyline.
MEASURE = """() => {
  const svg = document.getElementById('graph');
  if (!svg) return null;
  const box = e => { const r = e.getBoundingClientRect();
                     return [r.left, r.top, r.right, r.bottom]; };
  const onPage = (e, x, y) => { const p = new DOMPoint(x, y).matrixTransform(e.getScreenCTM());
                                return [p.x, p.y]; };
  const labels = [...svg.querySelectorAll('text')].map(t => {
    const m = t.getScreenCTM();
    return {box: box(t), text: t.textContent,
            font: parseFloat(getComputedStyle(t).fontSize) * Math.hypot(m.a, m.b)};
  });
  const edges = [...svg.querySelectorAll('line, polyline')].map(e => e.tagName === 'line'
    ? [onPage(e, e.x1.baseVal.value, e.y1.baseVal.value),
       onPage(e, e.x2.baseVal.value, e.y2.baseVal.value)]
    : [...e.points].map(p => onPage(e, p.x, p.y)));
  const drawn = [...svg.querySelectorAll('text, circle, rect, line, polyline')].map(box);
  return {labels, edges, circles: [...svg.querySelectorAll('circle')].map(box), drawn,
          svg: box(svg), main: box(document.querySelector('main')),
          body: parseFloat(getComputedStyle(document.body).fontSize)};
}"""


def overlap(a: list[float], b: list[float], slack: float = 0.5) -> bool:
    """Two boxes ``[left, top, right, bottom]`` share more than ``slack`` px each way."""
    return min(a[2], b[2]) - max(a[0], b[0]) > slack and min(a[3], b[3]) - max(a[1], b[1]) > slack


def crosses(p: list[float], q: list[float], rect: list[float], inset: float = 0.5) -> bool:
    """Whether the segment p–q passes through the box (shrunk by ``inset``): Liang–Barsky
    clipping of the segment against the box."""
    left, top, right, bottom = rect[0] + inset, rect[1] + inset, rect[2] - inset, rect[3] - inset
    dx, dy = q[0] - p[0], q[1] - p[1]
    low, high = 0.0, 1.0
    sides = ((-dx, p[0] - left), (dx, right - p[0]), (-dy, p[1] - top), (dy, bottom - p[1]))
    for step, room in sides:
        if step == 0:
            if room < 0:
                return False
            continue
        t = room / step
        if step < 0:
            low = max(low, t)
        else:
            high = min(high, t)
        if low > high:
            return False
    return True


def test_the_segment_test_itself() -> None:
    box = [0.0, 0.0, 10.0, 10.0]
    assert crosses([-5, 5], [15, 5], box)  # straight through
    assert crosses([5, 5], [20, 20], box)  # starts inside
    assert not crosses([-5, -1], [15, -1], box)  # passes above
    assert not crosses([8, 25], [25, 8], box)  # passes the corner, though their boxes meet
    assert not crosses([12, -5], [30, 5], box)  # beside it


def problems(measured: dict[str, Any]) -> list[str]:
    """Everything a person would trip over, named."""
    found: list[str] = []
    labels = measured["labels"]
    for i, a in enumerate(labels):
        ratio = a["font"] / measured["body"]
        if not 0.8 <= ratio <= 1.2:
            found.append(f"«{a['text']}» drawn at {ratio:.2f}× the body's font size")
        for b in labels[i + 1 :]:
            if overlap(a["box"], b["box"]):
                found.append(f"«{a['text']}» overlaps «{b['text']}»")
        for circle in measured["circles"]:
            if overlap(a["box"], circle):
                found.append(f"«{a['text']}» covers a node")
        for edge in measured["edges"]:
            if any(crosses(p, q, a["box"]) for p, q in itertools.pairwise(edge)):
                found.append(f"an edge runs through «{a['text']}»")
    return found


def fill(measured: dict[str, Any]) -> float:
    """How much of the drawing's card its content covers (the union box of what is drawn)."""
    drawn = measured["drawn"]
    left, top = min(b[0] for b in drawn), min(b[1] for b in drawn)
    right, bottom = max(b[2] for b in drawn), max(b[3] for b in drawn)
    card = measured["svg"]
    return ((right - left) * (bottom - top)) / ((card[2] - card[0]) * (card[3] - card[1]))


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running_server(tmp_path_factory.mktemp("graph"), "--dev") as url:
        yield url


def memory_with_neighbours(base: str, language: str, count: int) -> str:
    """A centre memory and ``count`` neighbours: up to eight linked to it, the rest one hop
    further out (each linked to one of the first eight); the centre's id."""
    api = f"{base}/api/v1/contexts/default/memories"
    centre = httpx.post(api, json={"summary": CENTRE[language]})
    assert centre.status_code == 201, centre.text
    made: list[str] = []
    for i, summary in enumerate(SUMMARIES[language][:count]):
        link = centre.json()["id"] if i < 8 else made[i - 8]
        response = httpx.post(api, json={"summary": summary, "linked_memory_ids": [link]})
        assert response.status_code == 201, response.text
        made.append(response.json()["id"])
    return centre.json()["id"]


@pytest.mark.parametrize("language", ["en", "ja"])
@pytest.mark.parametrize("count", [12, 1])
def test_the_graph_reads_at_a_glance(
    chromium: Browser, base: str, language: str, count: int
) -> None:
    centre = memory_with_neighbours(base, language, count)
    page = chromium.new_page(viewport={"width": 1280, "height": 900}, locale="ja-JP")
    try:
        page.goto(f"{base}/ui/")
        page.get_by_role("button", name="Continue as the local owner").click()
        page.goto(f"{base}/ui/contexts/default/memories/{centre}/graph?depth=2")
        expect(page.locator("#graph")).to_have_attribute("data-ready", str(count + 1))
        measured = page.evaluate(MEASURE)
        shoot(page, f"graph-{language}-{count}")
    finally:
        page.close()
    assert len(measured["labels"]) == count + 1
    assert problems(measured) == []
    assert fill(measured) > 0.6, f"the drawing covers {fill(measured):.0%} of its card"
    card, main = measured["svg"], measured["main"]
    assert card[0] >= main[0] and card[2] <= main[2], (card, main)  # no sideways scrolling


@pytest.mark.parametrize("language", ["en", "ja"])
def test_no_neighbour_says_why_and_how_associations_are_made(
    chromium: Browser, base: str, language: str
) -> None:
    centre = memory_with_neighbours(base, language, 0)
    page = chromium.new_page(viewport={"width": 1280, "height": 900}, locale="ja-JP")
    try:
        page.goto(f"{base}/ui/")
        page.get_by_role("button", name="Continue as the local owner").click()
        page.goto(f"{base}/ui/contexts/default/memories/{centre}/graph?depth=2")
        said = page.locator("#graph-empty").inner_text()
        drawn = page.locator("#graph").count()
        shoot(page, f"graph-{language}-0")
    finally:
        page.close()
    assert drawn == 0  # no picture of a lone dot
    assert "No other memory is associated with this one yet" in said
    for how in ("recalled together", "helpful", "linked_memory_ids", "Sleep"):
        assert how in said, said
