"""The report's text, byte for byte, on a fixed store (the demo's; tests/trb/report_golden.py).

The golden files were rendered before the report became a package fed by the tracks (issue 38): a change that
moves report code, or adds a track's section through the registry, must leave every byte of them as it was.
"""

from __future__ import annotations

import difflib

import pytest
from report_golden import GOLDEN, load_store, render_all

# every track's figures with 2,000 session-bootstrap resamples on 23,525 item scores: half a minute
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    return render_all(load_store(tmp_path_factory.mktemp("golden") / "results.duckdb"))


@pytest.mark.parametrize("name", ["report.md", "report.html", "report.json"])
def test_the_report_text_is_unchanged_byte_for_byte(rendered, name):
    want = (GOLDEN / name).read_text(encoding="utf-8")
    got = rendered[name]
    if got != want:
        diff = "".join(difflib.unified_diff(want.splitlines(True), got.splitlines(True), f"golden/{name}", name, n=1))
        pytest.fail(f"{name} differs from tests/trb/data/report_golden/{name}:\n{diff[:6000]}")


def test_the_fixed_store_covers_every_section(rendered):
    md = rendered["report.md"]
    for heading in ("## Split eval (held out)", "## Split transfer (held out)", "## Track 2 — grounding",
                    "## Profile vector", "## Track 6 — transfer"):
        assert heading in md, heading
    assert md.count("| trace-full |") >= 2
