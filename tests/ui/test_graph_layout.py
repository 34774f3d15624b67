"""The graph page in a real headless Chromium: with a dozen neighbours, English and Japanese
labels, no two labels overlap, every label is inside the picture, and the picture takes the
page's width (the old force layout overlapped labels and used 60 % of it)."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from playwright.sync_api import Browser, expect

from tests.e2e.conftest import running_server
from tests.ui.browser import shoot

pytestmark = pytest.mark.e2e

SUMMARIES = [
    "The staging database listens on port 5433",
    "ステージング環境のデータベースはポート5433で待ち受けています",
    "Alice prefers oolong tea over coffee in the afternoon",
    "アリスは午後にコーヒーよりウーロン茶を好みます",
    "Deploys are frozen on Fridays after 3 pm",
    "金曜日の15時以降はデプロイを凍結します",
    "The on-call rotation changes every Monday at 10:00",
    "オンコール当番は毎週月曜日の10時に交代します",
    "Backups run nightly at 02:00 and are kept for 30 days",
    "バックアップは毎晩2時に取得し30日間保持します",
    "The VPN certificate expires at the end of March",
    "VPNの証明書は3月末で期限切れになります",
]

MEASURE = """() => {
  const svg = document.getElementById('graph').getBoundingClientRect();
  const main = document.querySelector('main').getBoundingClientRect();
  const boxes = [...document.querySelectorAll('#graph text')].map(t => t.getBoundingClientRect());
  let overlaps = 0, outside = 0;
  for (let i = 0; i < boxes.length; i++) {
    const a = boxes[i];
    if (a.left < svg.left - 1 || a.right > svg.right + 1 || a.top < svg.top - 1 ||
        a.bottom > svg.bottom + 1) outside++;
    for (let j = i + 1; j < boxes.length; j++) {
      const b = boxes[j];
      if (Math.min(a.right, b.right) - Math.max(a.left, b.left) > 0.5 &&
          Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 0.5) overlaps++;
    }
  }
  return {labels: boxes.length, overlaps, outside, width: svg.width / main.width};
}"""


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running_server(tmp_path_factory.mktemp("graph"), "--dev") as url:
        yield url


def test_labels_never_overlap_and_the_graph_fills_the_width(base: str, chromium: Browser) -> None:
    api = f"{base}/api/v1/contexts/default/memories"
    centre = httpx.post(api, json={"summary": "The infrastructure notes of the platform team"})
    first_ring: list[str] = []
    for i, summary in enumerate(SUMMARIES):
        # Eight on the first ring, linked to the centre; four one hop further out.
        link = centre.json()["id"] if i < 8 else first_ring[i - 8]
        made = httpx.post(api, json={"summary": summary, "linked_memory_ids": [link]})
        assert made.status_code == 201, made.text
        first_ring.append(made.json()["id"])
    page = chromium.new_page(viewport={"width": 1280, "height": 900}, locale="ja-JP")
    try:
        page.goto(f"{base}/ui/")
        page.get_by_role("button", name="Continue as the local owner").click()
        page.goto(f"{base}/ui/contexts/default/memories/{centre.json()['id']}/graph?depth=2")
        expect(page.locator("#graph")).to_have_attribute("data-ready", "13")
        measured = page.evaluate(MEASURE)
        shoot(page, "graph-layout")
    finally:
        page.close()
    assert measured["labels"] == 13
    assert measured["overlaps"] == 0, measured
    assert measured["outside"] == 0, measured
    assert measured["width"] > 0.95, measured
