"""Ingest warns, with the figures, when the corpus after it would break the 3:1 synthetic:human cap at release."""

from __future__ import annotations

from corpus.ingest import ingest
from corpus.store import Corpus
from factories import counterfactual, session, write_jsonl


def _synthetic(n: int, start: int = 0) -> list[dict]:
    return [counterfactual(f"s1.t0.syn{i}", "s1", 0, origin="synthetic") for i in range(start, start + n)]


def test_ingest_over_the_cap_warns_with_the_figures(corpus_dir, tmp_path, cli):
    f = write_jsonl(tmp_path / "a.jsonl", [session("s1"), counterfactual("s1.t0.h", "s1", 0), *_synthetic(3)])
    code, _, err = cli("ingest", "--corpus", corpus_dir, "-q", f)
    assert code == 0 and "warning" not in err  # 3 synthetic vs 1 human: at the limit, within it
    g = write_jsonl(tmp_path / "b.jsonl", _synthetic(4, start=3))
    code, _, err = cli("validate", "--corpus", corpus_dir, "-q", g)
    assert code == 0 and "warning: after this ingest the corpus would hold 7 synthetic vs 1 human-origin" in err
    code, _, err = cli("ingest", "--corpus", corpus_dir, "-q", g)
    assert code == 0
    warning = next(line for line in err.splitlines() if line.startswith("warning:"))
    for figure in ("the corpus now holds 7 synthetic vs 1 human-origin counterfactual(s)", "ratio 7.00:1",
                   "the limit is 3:1", "2 more human-origin counterfactual(s) are needed", "gate synthetic_cap"):
        assert figure in warning, warning
    # the library reports the same figures
    report = ingest(Corpus(corpus_dir), [g], progress=False)
    assert (report.cap.synthetic, report.cap.human, report.cap.human_needed) == (7, 1, 2)


def test_no_human_origin_counterfactuals_at_all_is_said_so(corpus_dir, tmp_path, cli):
    f = write_jsonl(tmp_path / "a.jsonl", [session("s1"), *_synthetic(2)])
    code, _, err = cli("ingest", "--corpus", corpus_dir, "-q", f)
    assert code == 0 and "2 synthetic vs 0 human-origin counterfactual(s)" in err and "no human-origin ones" in err
    assert "1 more human-origin counterfactual(s) are needed" in err
