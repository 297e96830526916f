"""The HTML report in a real headless Chromium at 1,280 CSS px: the plot and the tables fit the window.

The report is built from a real results store shaped like the demo's (the five spec baselines on eval, a
bannered train split, Track 1 with its reference columns and slices, the LLR variant on the proxy baselines,
Track 3 with beliefs and one-class flags, emit_r counters, parameter counts, uuid run ids), with Track 2 on the
native baselines and proxy-tier grounding on two proxies (13 concepts, one not separable): the widest report
the toolkit makes today. Layout is measured in the browser, and a full-page screenshot is kept.
"""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image
from test_report import WITH_ACCESS, run, t1_rows, t2_rows, t3_rows

from trb.report import build_report, render_html
from trb.report.figures import _figure
from trb.results import ResultsStore

pytestmark = pytest.mark.browser

WIDTH = 1280
#: A table cell may hold two lines (a score with its CI, then its items and sessions); none may wrap further.
MAX_LINES = 2
N_SESSIONS = 125
PROXY = {"instruct-base": 611_456, "cot-prompted": 611_456, "cot-sft": 629_888}
NATIVE = {"trace-ablation": 629_952, "trace-full": 629_952}
#: Track 2's injection gain per baseline that runs it (the proxies': proxy-tier grounding).
GROUNDING = {"cot-prompted": 0.1, "cot-sft": 0.15, "trace-ablation": 0.35, "trace-full": 0.25}
#: 13 concepts as the simulated world gives them (goal cells, planned actions); goal=C7's direction is not separable.
CONCEPTS_13 = {**{f"goal=C{i}": 0.3 + 0.04 * i for i in range(1, 9)}, "goal=C7": 0.91,
               **{f"planned_next={a}": 0.25 for a in ("up", "down", "left", "right", "wait")}}


def demo_like_store(path) -> ResultsStore:
    """Five baselines on eval and two on train, with every column a real run of the demo fills."""
    rng = np.random.default_rng(13)
    store = ResultsStore(path)
    for split, names in (("eval", [*PROXY, *NATIVE]), ("train", ["cot-sft", "trace-full"])):
        for k, name in enumerate(names):
            tier = "proxy" if name in PROXY else "native"
            g = 0.5 + 0.08 * k
            t1 = []
            for i, row in enumerate(t1_rows([(f"{split}-cf{j}", f"{split}-s{j % N_SESSIONS}",
                                              float(np.clip(rng.normal(g, 0.2), 0, 1))) for j in range(1006)])):
                row.update(split=split, g_uniform=float(rng.uniform(0.4, 0.6)), g_own=float(rng.uniform(0.4, 0.7)),
                           r_sensitive=None if i % 3 == 0 else float(rng.random() < g), ood=i % 14 == 0,
                           adversarial=i % 10 == 0, origin="synthetic" if i % 2 else "paired_session")
                t1.append(row)
            if name in ("cot-prompted", "cot-sft"):  # proxies scoring text continuations: the LLR variant
                t1 += [dict(r, split=split) for r in t1_rows(
                    [(f"{split}-llr{j}", f"{split}-s{j % N_SESSIONS}", float(rng.normal(1.5, 2))) for j in range(300)],
                    metric="llr")]
            one_class = name != "trace-full"  # as in the demo: every proxy predicts "self"
            t3 = [dict(r, split=split, belief=float(rng.uniform(0.5, 1) if one_class else rng.random()))
                  for r in t3_rows([(f"{split}-a{j}", f"{split}-s{j % 44}", "self" if j % 2 else "exogenous",
                                     "self" if one_class or rng.random() < 0.7 else "exogenous")
                                    for j in range(55)])]
            timings = {"summary": {"1": {"scored": len(t1)}, "3": {"scored": len(t3)}}, **WITH_ACCESS}
            t2 = []
            if split == "eval" and name in GROUNDING:  # Track 2 (native), proxy-tier grounding (three layers)
                sites = ("h", "embed") if tier == "native" else ("layers.4", "layers.2", "layers.6")
                t2 = t2_rows(GROUNDING[name], k, sessions=40, dev=12, steps=1, concepts=CONCEPTS_13, sites=sites)
            if tier == "proxy":
                timings["emit_r"] = {"calls": 786, "missing": {"goal": k, "planned_next": 0, "caused_by_self": 2 * k,
                                                               "confidence": 0}}
            if name == "instruct-base":  # an adapter without continuation scoring: LLR "not applicable"
                timings["summary"]["1"]["not_applicable"] = {
                    "1-llr": {"needs": ["continuation_scoring"], "n_items": 300}}
            store.record_run(run(name, tier, smoke=True, split=split, run_id=None, synthetic_share=0.49,
                                 adapter_spec={"kind": tier, "n_parameters": (PROXY | NATIVE)[name]},
                                 timings=timings), t1 + t3 + t2)
    return store


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> dict:
    return build_report(demo_like_store(tmp_path_factory.mktemp("store") / "results.duckdb"), n_resamples=200)


# In the page: each table cell's number of text lines (the line boxes of its text nodes, those that overlap
# vertically by half a line being one line), the page's and each table's extent, and the plot's box.
MEASURE = """(maxLines) => {
  const lines = (cell) => {
    const rects = [];
    const walk = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let node = walk.nextNode(); node; node = walk.nextNode()) {
      if (!node.textContent.trim()) continue;
      const range = document.createRange();
      range.selectNodeContents(node);
      rects.push(...[...range.getClientRects()].filter(r => r.width > 0 && r.height > 0));
    }
    const rows = [];
    for (const r of rects.sort((a, b) => a.top - b.top)) {
      const row = rows.find(w => Math.min(w.bottom, r.bottom) - Math.max(w.top, r.top) >= 0.5 * r.height);
      if (row) { row.top = Math.min(row.top, r.top); row.bottom = Math.max(row.bottom, r.bottom); }
      else rows.push({top: r.top, bottom: r.bottom});
    }
    return rows.length;
  };
  const tables = [...document.querySelectorAll('table')].map((t) => {
    const cells = [...t.querySelectorAll('th, td')].map(c => ({lines: lines(c), text: c.innerText.slice(0, 60)}));
    const box = t.getBoundingClientRect();
    const scroller = t.parentElement;
    return {left: box.left, right: box.right, width: box.width, container: scroller.clientWidth,
            containerScroll: scroller.scrollWidth, maxLines: Math.max(...cells.map(c => c.lines)),
            worst: cells.filter(c => c.lines > maxLines).slice(0, 5)};
  });
  const imgs = Object.fromEntries([...document.querySelectorAll('img')].map((img) => {
    const box = img.getBoundingClientRect();
    return [img.id, {left: box.left, right: box.right, width: box.width, height: box.height,
                     naturalWidth: img.naturalWidth, naturalHeight: img.naturalHeight,
                     container: img.parentElement.clientWidth}];
  }));
  return {scrollWidth: document.documentElement.scrollWidth, clientWidth: document.documentElement.clientWidth,
          tables, imgs};
}"""


def test_the_html_report_fits_a_1280px_window(report, page, tmp_path):
    html_path = tmp_path / "report.html"
    html_path.write_text(render_html(report), encoding="utf-8")
    page.goto(html_path.as_uri())
    m = page.evaluate(MEASURE, MAX_LINES)
    figures = {"page scrollWidth": m["scrollWidth"], "plots": m["imgs"],
               "tables": [(round(t["width"]), t["container"], t["maxLines"]) for t in m["tables"]]}

    # no horizontal page overflow: nothing is cut off at the right edge
    assert m["scrollWidth"] <= WIDTH, figures

    # the tables: every cell on at most two lines, every table inside the page without scrolling
    # eval and train, each a profile table and a reference table; Track 2 native and proxy-tier, each a summary,
    # a sweep and a per-concept table; the profile vectors
    assert len(m["tables"]) == 11
    for t in m["tables"]:
        assert t["maxLines"] <= MAX_LINES, (t["worst"], figures)
        assert 0 <= t["left"] and t["right"] <= m["clientWidth"], figures
        assert t["containerScroll"] <= t["container"], figures  # no table needs its scroll wrapper at this width

    # the plots (per track, and the profile vector per baseline): inside the window, never cropped, their aspect
    # kept; shown whole (scaled down only to fit)
    assert set(m["imgs"]) == {"tracks-plot", "profiles-plot"}
    for img in m["imgs"].values():
        assert 0 <= img["left"] and img["right"] <= m["clientWidth"], figures
        assert img["width"] == pytest.approx(min(img["naturalWidth"], img["container"]), abs=1), figures
        assert img["width"] >= 0.9 * img["container"], figures  # the column's width, not a thumbnail
        assert img["width"] / img["height"] == pytest.approx(img["naturalWidth"] / img["naturalHeight"], rel=0.01)
    img = m["imgs"]["tracks-plot"]

    # the Δgov panel: its centre, mapped from the figure onto the rendered image, is in the window and is the image
    fig = _figure(report)
    fig.canvas.draw()
    (delta,) = [ax for ax in fig.axes if ax.get_title().startswith("Δgov")]
    box = delta.get_position()  # figure fraction, y from the bottom; the PNG is the whole figure
    page.locator("#tracks-plot").scroll_into_view_if_needed()
    top = page.evaluate("() => document.querySelector('#tracks-plot').getBoundingClientRect().top")
    x = img["left"] + img["width"] * (box.x0 + box.x1) / 2
    y = top + img["height"] * (1 - (box.y0 + box.y1) / 2)
    assert 0 < x < m["clientWidth"] and 0 < y < page.viewport_size["height"], (x, y, figures)
    assert page.evaluate("([x, y]) => document.elementFromPoint(x, y).tagName", [x, y]) == "IMG"
    for corner in (box.x1 - 0.01, box.x0 + 0.01):  # both edges of the panel, not just its middle
        cx = img["left"] + img["width"] * corner
        assert 0 < cx < m["clientWidth"]
        assert page.evaluate("([x, y]) => document.elementFromPoint(x, y).tagName", [cx, y]) == "IMG"

    # a full-page screenshot at the window's width
    shot = tmp_path / "report.png"
    page.screenshot(path=str(shot), full_page=True)
    with Image.open(shot) as im:
        assert im.size[0] == WIDTH, im.size
