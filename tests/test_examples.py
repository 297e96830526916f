"""The 7f3a example: packaged, valid, ingestible, honest about being illustrative, and it holds the spec's two instances."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import corpus
from corpus.errors import ExitCode, UsageError
from corpus.examples import example_names, example_path, example_readme
from corpus.ingest import ingest
from corpus.release import TEMPLATE
from corpus.stats import corpus_stats
from corpus.store import Corpus
from tests_paths import EXAMPLE_7F3A, ROOT

PACKAGE = Path(corpus.__file__).resolve().parent


def _records():
    return [json.loads(line) for line in EXAMPLE_7F3A.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_7f3a_ingests_and_is_marked_illustrative(corpus_dir):
    report = ingest(Corpus(corpus_dir), [EXAMPLE_7F3A], progress=False)
    recs = _records()
    assert sum(report.new.values()) == len(recs)
    s = corpus_stats(Corpus(corpus_dir))
    assert set(s["sessions_by_source_kind"]) == {"illustrative"}
    assert {"same_session_revision", "paired_session", "synthetic"} <= set(s["counterfactuals_by_origin"])
    assert s["within_synthetic_cap"]
    assert "illustrative" in (PACKAGE / "examples" / "README.md").read_text().lower()
    assert "illustrative" in example_readme("7f3a").lower()


def test_7f3a_holds_the_two_instances_the_spec_names():
    recs = _records()
    session = next(r for r in recs if r["kind"] == "session" and r["session_id"] == "7f3a")
    text = json.dumps(session)
    assert "2+2=2" in text and "2+2=4" in text
    assert "3:44" in text and "3:46" in text
    items = [r for r in recs if r["kind"] == "attribution" and r["session_id"] == "7f3a"]
    labels = {r["design_label"] for r in items}
    assert labels == {"self", "exogenous"}, "Track 3 needs both classes"
    assert any(r.get("endorsed") is False for r in items), "the demonstration-vs-endorsement item"
    phis = {r["phi"]["type"] for r in recs if r["kind"] == "counterfactual" and r.get("phi")}
    assert phis == {"distribution", "text"}


def test_the_examples_are_package_data_found_by_name():
    assert example_names() == ["7f3a"]
    assert EXAMPLE_7F3A == example_path("7f3a") == PACKAGE / "examples" / "7f3a" / "7f3a.jsonl"
    with pytest.raises(UsageError, match="no example 'nope'; the examples are: 7f3a"):
        example_path("nope")


def test_trb_corpus_examples_lists_prints_and_feeds_validate(cli):
    assert cli("examples") == (0, f"7f3a\t{EXAMPLE_7F3A}\n", "")
    code, out, _ = cli("examples", "7f3a")
    assert code == 0 and out == f"{EXAMPLE_7F3A}\n"
    assert cli("validate", "-q", out.strip())[0] == 0
    code, out, _ = cli("examples", "7f3a", "--readme")
    assert code == 0 and out == example_readme("7f3a")
    code, out, err = cli("examples", "nope")
    assert code == ExitCode.USAGE and out == "" and "the examples are: 7f3a" in err
    assert cli("examples", "--readme")[0] == ExitCode.USAGE


def test_top_level_datasheet_and_examples_only_point_into_the_package():
    """One copy of the template and of the examples: the checkout's top-level files are pointers, kept right here."""
    assert Path(str(TEMPLATE)) == PACKAGE / "templates" / "DATASHEET.md"
    pointer = (ROOT / "DATASHEET.md").read_text(encoding="utf-8")
    assert "(corpus/templates/DATASHEET.md)" in pointer and "{{" not in pointer
    mds = [*ROOT.glob("*.md"), *(p for d in ("schemas", "corpus", "annotate", "trb", "examples", "tests", "bench")
                                 for p in (ROOT / d).rglob("*.md"))]
    templates = [p.relative_to(ROOT).as_posix() for p in mds if "{{release_version}}" in p.read_text(encoding="utf-8")]
    assert templates == ["corpus/templates/DATASHEET.md"], "a second copy of the datasheet template can drift"
    links = re.findall(r"\]\(([^)]+)\)", (ROOT / "examples" / "README.md").read_text(encoding="utf-8"))
    assert links and all((ROOT / "examples" / link).resolve().is_file() for link in links)
    assert sorted(p.name for p in (ROOT / "examples").iterdir()) == ["README.md"]
