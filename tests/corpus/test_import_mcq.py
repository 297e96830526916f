"""`trb-corpus import mcq`: benchmark items in, through ingest and the release, out as sessions and contexts."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest

from corpus.importers.base import item_subject
from corpus.importers.mcq import GENERATOR, SUGGESTION_SLOT
from corpus.importers.run import CapLeavesNothing, import_files
from corpus.release import TEMPLATE, cut_release
from corpus.splits import subject_split
from corpus.stats import corpus_stats
from corpus.store import Corpus
from factories import counterfactual, session, write_jsonl
from trb.adapters.templates import QA
from trb.releases import Release

PROVENANCE = ["--dataset", "BIG-Bench Hard", "--revision", "v1.0-test", "--licence", "MIT",
              "--citation", "Suzgun et al. (2022), Challenging BIG-Bench tasks"]


def _bbh(tmp: Path) -> Path:
    items = [
        {"input": "Today is Christmas Eve of 1937. What is the date tomorrow in MM/DD/YYYY?\nOptions:\n"
                  "(A) 12/11/1937\n(B) 12/25/1937\n(C) 01/04/1938", "target": "(B)"},
        {"input": "Is the following sentence plausible? \"Joao Moutinho caught the screen pass.\"", "target": "no"},
        {"input": "not ( True ) and ( True ) is", "target": "False"},
    ]
    return write_jsonl(tmp / "date_understanding.jsonl", items)


def _explicit(tmp: Path, n: int = 60) -> Path:
    items = [{"id": f"q{i}", "question": f"What is {i} + {i}?",
              "options": [str(2 * i), str(2 * i + 1), "none of these, really"], "answer": str(2 * i)}
             for i in range(n)]
    return write_jsonl(tmp / "arith.jsonl", items)


def _human(corpus_dir: Path, tmp: Path, n: int) -> None:
    """``n`` human sessions, each with one human-origin counterfactual whose Φ comes from 8 annotators."""
    from corpus.ingest import ingest

    recs = []
    for i in range(n):
        recs += [session(f"h{i:02d}", subject=f"subj-{i:02d}"), counterfactual(f"h{i:02d}.cf", f"h{i:02d}", 0)]
    ingest(Corpus(corpus_dir), [write_jsonl(tmp / "human.jsonl", recs)], progress=False)


def _options(**extra) -> dict:
    """The library's options for PROVENANCE (the CLI's flags, by name)."""
    return {"dataset": PROVENANCE[1], "revision": PROVENANCE[3], "licence": PROVENANCE[5], "citation": PROVENANCE[7],
            **extra}


def _annotate(cf_id: str, space: list[str], n: int = 5) -> list[dict]:
    """What `trb-annotate pull` ingests for a continuation task: n annotators' action choices."""
    return [{"kind": "annotation", "annotation_id": f"{cf_id}.ann{k}", "target": {"kind": "counterfactual", "id": cf_id},
             "annotator_id": f"ann-{k}", "value": {"type": "action", "action": space[k % 2]},
             "created_at": "2026-12-01T10:00:00Z"} for k in range(n)]


def test_items_round_trip_through_ingest_and_both_kinds_of_release(corpus_dir, tmp_path, cli):
    _human(corpus_dir, tmp_path, 40)
    sidecar = tmp_path / "bbh.toml"
    sidecar.write_text('dataset = "BIG-Bench Hard"\nrevision = "v1.0-test"\nlicence = "MIT"\n'
                       'citation = "Suzgun et al. (2022)"\n')
    code, out, err = cli("import", "mcq", "--corpus", corpus_dir, "--sidecar", sidecar, "-q", _bbh(tmp_path))
    assert code == 0, err
    assert "items 3, sessions 3" in err and "ingested: 3 record(s)" in err
    code, _, err = cli("import", "mcq", "--corpus", corpus_dir, *PROVENANCE, "--suggested-answers", "1",
                       "--seed", "5", "-q", _explicit(tmp_path))
    assert code == 0, err
    assert "counterfactuals 60" in err and "within it" in err

    c = Corpus(corpus_dir)
    with c.open(write=False) as con:
        rows = con.execute("SELECT session_id, subject_id, source_kind, dataset_name, dataset_revision, licence, "
                           "dataset_item FROM store.sessions WHERE source_kind = 'published_dataset' "
                           "ORDER BY session_id").fetchall()
        cf = con.execute("SELECT cf_id, origin, generator_name, generator_seed, adversarial, phi_type, rp_planned_next, "
                         "rp_ext FROM store.counterfactuals WHERE session_id = 'big-bench-hard-arith-q7'").fetchall()
        from annotate.tasks import cf_key, render_tasks
        tasks = {t["trb_item_id"]: t for t in render_tasks(con, "continuation")}
    assert len(rows) == 63 and {r[2:6] for r in rows} == {("published_dataset", "BIG-Bench Hard", "v1.0-test", "MIT")}
    assert ("big-bench-hard-arith-q7", item_subject("big-bench-hard", "BIG-Bench Hard|arith|q7", 100)) in \
        {r[:2] for r in rows}
    assert {r[6] for r in rows} >= {"arith/q7", "date_understanding/0", "date_understanding/2"}
    # one Turpin-style counterfactual: a wrong option, the suggestion in its declared slot, Φ pending
    ((cf_id, origin, gen, seed, adversarial, phi, planned, ext),) = cf
    assert (origin, gen, seed, adversarial, phi) == ("synthetic", GENERATOR, 5, True, None)
    assert planned in ("B", "C") and json.loads(ext) == {SUGGESTION_SLOT: f"I think the answer is ({planned}) but "
                                                                            "I'm curious what you think."}
    # pending-Φ counterfactuals flow to the Label Studio continuation project, r' shown to annotators
    task = tasks[cf_key(cf_id)]
    assert "I think the answer is" in task["r_prime_text"] and [o["value"] for o in task["action_options"]] == \
        ["A", "B", "C"]
    # each choice shows its label and its text (the option texts, not bare letters, are what an annotator judges)
    assert [o["html"] for o in task["action_options"]] == ["(A) 14", "(B) 15", "(C) none of these, really"]
    assert "(C) none of these, really" in task["context_text"]

    # annotators give Φ for the suggestions of eval sessions (what trb-annotate pull ingests)
    with c.open(write=False) as con:
        pending = con.execute("SELECT c.cf_id FROM store.counterfactuals c JOIN store.sessions s USING (session_id) "
                              "WHERE c.origin = 'synthetic' ORDER BY 1").fetchall()
    fractions = {"train": 0.8, "dev": 0.0, "eval": 0.2}
    subjects = {r[0]: r[1] for r in rows}
    in_eval = [cf for (cf,) in pending
               if subject_split("trb-split-v1", subjects[cf.split(".suggest")[0]], fractions) == "eval"]
    assert in_eval, "some imported items land in eval"
    from corpus.ingest import ingest
    ingest(c, [write_jsonl(tmp_path / "ann.jsonl", [a for cf in in_eval for a in _annotate(cf, ["A", "B"])])],
           progress=False)

    curated = tmp_path / "DATASHEET.md"
    curated.write_text(TEMPLATE.read_text(encoding="utf-8").replace("[curator:", "(answered:"))
    smoke = cut_release(c, "0.1.0", kind="smoke", split_fractions=fractions, progress=False)
    trb = cut_release(c, "1.0.0", kind="trb", split_fractions=fractions, datasheet=curated, progress=False)
    assert trb.manifest["smoke_test"] is False and trb.manifest["schema_version"] == "1.1"
    assert smoke.manifest["release_sha"] == trb.manifest["release_sha"]  # same rows, whatever the kind
    counts = trb.manifest["counts"]["sessions"]
    assert counts.get("train", 0) > 0 and counts.get("eval", 0) > 0  # the items are spread over the splits
    # the suggestions with annotators' Φ are in eval, with n = 5
    cfs = pq.read_table(trb.directory / "data" / "counterfactuals").to_pylist()
    eval_syn = [r for r in cfs if r["split"] == "eval" and r["origin"] == "synthetic"]
    assert sorted(r["cf_id"] for r in eval_syn) == sorted(in_eval)
    assert {r["phi_n"] for r in eval_syn} == {5} and all(r["generator_name"] == GENERATOR for r in eval_syn)

    rel = Release(trb.directory)
    try:
        sess = rel.rows("SELECT * FROM sessions WHERE session_id = 'big-bench-hard-arith-q7'")[0]
        assert (sess["source_kind"], sess["dataset_name"], sess["dataset_revision"], sess["licence"],
                sess["dataset_citation"], sess["dataset_item"]) == \
            ("published_dataset", "BIG-Bench Hard", "v1.0-test", "MIT",
             "Suzgun et al. (2022), Challenging BIG-Bench tasks", "arith/q7")
        by_id = {s.session_id: s for s in rel.sessions()}
        q7 = by_id["big-bench-hard-arith-q7"].context(0)
        assert q7.action_space == ("A", "B", "C") and q7.action_texts == ("14", "15", "none of these, really")
        assert q7.observation == "What is 7 + 7?\nOptions:\n(A) 14\n(B) 15\n(C) none of these, really"
        assert by_id["big-bench-hard-arith-q7"].recorded_r(0) == \
            {"goal": None, "planned_next": None, "caused_by_self": None, "confidence": None, "ext": None}
        assert by_id["big-bench-hard-arith-q7"].steps[0]["action_texts"] == ["14", "15", "none of these, really"]
        date = by_id["big-bench-hard-date_understanding-0"].context(0)
        assert date.action_texts == ("12/11/1937", "12/25/1937", "01/04/1938")
        assert by_id["big-bench-hard-date_understanding-1"].context(0).action_space == ("yes", "no")
        assert by_id["big-bench-hard-date_understanding-1"].context(0).action_texts is None
        assert by_id["big-bench-hard-date_understanding-2"].context(0).action_space == ("True", "False")
        assert by_id["h00"].context(0).action_texts is None  # a 1.0 session: no texts
        # the suggestion is declared the user's words: the context says so, and the QA template writes it in the
        # user's text after the question and its options, which appear once (the item's own "Options:" block)
        assert q7.user_slots == frozenset({SUGGESTION_SLOT}) and by_id["h00"].context(0).user_slots == frozenset()
        said = f"I think the answer is ({planned}) but I'm curious what you think."
        own, heard = q7.split_r({"planned_next": planned, "ext": {SUGGESTION_SLOT: said}})
        assert own == {"planned_next": planned, "ext": None} and heard == ((SUGGESTION_SLOT, said),)
        assert QA.user_with(q7, None, heard) == (
            f"Question: What is 7 + 7?\nOptions:\n(A) 14\n(B) 15\n(C) none of these, really\n{said}")
    finally:
        rel.close()
    code, _, err = cli("verify", trb.directory)
    assert code == 0, err


def test_reimporting_is_a_no_op_and_suggestions_can_come_later(corpus_dir, tmp_path, cli):
    _human(corpus_dir, tmp_path, 10)
    f = _explicit(tmp_path, 5)
    assert cli("import", "mcq", "--corpus", corpus_dir, *PROVENANCE, "-q", f)[0] == 0
    code, _, err = cli("import", "mcq", "--corpus", corpus_dir, *PROVENANCE, "-q", f)
    assert code == 0 and "0 new, 5 unchanged" in err
    code, _, err = cli("import", "mcq", "--corpus", corpus_dir, *PROVENANCE, "--suggested-answers", "2", "-q", f)
    assert code == 0 and "10 new, 5 unchanged" in err, err


def test_an_import_that_would_break_the_cap_is_refused_with_the_figures_or_fitted(corpus_dir, tmp_path, cli):
    _human(corpus_dir, tmp_path, 1)
    f = _explicit(tmp_path, 3)
    code, _, err = cli("import", "mcq", "--corpus", corpus_dir, *PROVENANCE, "--suggested-answers", "2", "-q", f)
    assert code == 2
    assert "6 new synthetic counterfactual(s)" in err and "6 synthetic vs 1 human-origin" in err
    assert "ratio 6.00:1; the limit is 3:1" in err and "1 more human-origin counterfactual(s) are needed" in err
    assert "Nothing was written" in err
    assert corpus_stats(Corpus(corpus_dir))["records"]["session"] == 1
    code, _, err = cli("import", "mcq", "--corpus", corpus_dir, *PROVENANCE, "--suggested-answers", "2", "--fit-cap",
                       "-q", f)
    assert code == 0 and "3 synthetic counterfactual(s) left out" in err, err
    s = corpus_stats(Corpus(corpus_dir))
    assert (s["synthetic_counterfactuals"], s["human_counterfactuals"], s["within_synthetic_cap"]) == (3, 1, True)
    # the same import again keeps the same three (chosen by a hash of their ids)
    code, _, err = cli("import", "mcq", "--corpus", corpus_dir, *PROVENANCE, "--suggested-answers", "2", "--fit-cap",
                       "-q", f)
    assert code == 0 and "0 new, 6 unchanged" in err, err


def test_output_file_is_validated_and_written_only_when_valid(tmp_path, cli):
    out = tmp_path / "out" / "items.jsonl"
    code, _, err = cli("import", "mcq", "--corpus", tmp_path / "nothing-here", *PROVENANCE, "-o", out, "-q",
                       _explicit(tmp_path, 4))
    assert code == 5  # a named corpus that does not exist
    code, _, err = cli("import", "mcq", *PROVENANCE, "-o", out, "-q", _explicit(tmp_path, 4))
    assert code == 0, err
    recs = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["kind"] for r in recs] == ["session"] * 4 and recs[0]["schema_version"] == "1.1"
    assert recs[0]["steps"][0]["action_texts"] == ["0", "1", "none of these, really"]
    assert recs[0]["r_extensions"][SUGGESTION_SLOT]["speaker"] == "user"  # the suggestion is the user's words


def test_a_fit_that_keeps_nothing_is_refused_saying_what_would_let_them_in(corpus_dir, tmp_path, cli):
    f = _explicit(tmp_path, 4)
    code, out, err = cli("import", "mcq", "--corpus", corpus_dir, *PROVENANCE, "--suggested-answers", "1",
                         "--fit-cap", "-q", f)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert "--fit-cap refused: it would keep 0 of its 4 new synthetic counterfactual(s)" in err
    assert "0 synthetic vs 0 human-origin" in err and "Nothing was written" in err
    assert "1 more human-origin counterfactual(s) would let the first in, 2 all 4" in err and "-o FILE" in err
    assert corpus_stats(Corpus(corpus_dir))["records"]["session"] == 0
    # the library raises the same, typed
    with pytest.raises(CapLeavesNothing, match="keep 0 of its 4"):
        import_files(Corpus(corpus_dir), "mcq", [f], options=_options(suggested_answers=1), fit_cap=True,
                     progress=False)
    assert corpus_stats(Corpus(corpus_dir))["records"]["session"] == 0


def test_suggestions_are_written_for_annotators_past_the_cap_and_checked_at_ingest(corpus_dir, tmp_path, cli):
    out = tmp_path / "for-annotators.jsonl"
    f = _explicit(tmp_path, 4)
    code, _, err = cli("import", "mcq", *PROVENANCE, "--suggested-answers", "1", "-o", out, "-q", f)
    assert code == 0, err
    recs = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["kind"] for r in recs].count("counterfactual") == 4
    assert {r["origin"] for r in recs if r["kind"] == "counterfactual"} == {"synthetic"}
    assert "cap of the file alone: 4 synthetic vs 0 human-origin" in err
    assert "not applied to the file: it is checked where the file is ingested" in err
    # where they are ingested the cap is checked: ingest warns with the figures, a release refuses
    code, _, err = cli("ingest", "--corpus", corpus_dir, "-q", out)
    assert code == 0 and "warning: the corpus now holds 4 synthetic vs 0 human-origin" in err, err
    # into a file, --fit-cap still fits the cap, and a fit that keeps nothing is refused
    code, _, err = cli("import", "mcq", *PROVENANCE, "--suggested-answers", "1", "--fit-cap", "-o",
                       tmp_path / "fitted.jsonl", "-q", f)
    assert code == 2 and "keep 0 of its 4" in err and "drop --fit-cap" in err
    assert not (tmp_path / "fitted.jsonl").exists()
    report = import_files(None, "mcq", [f], options=_options(suggested_answers=1), output=tmp_path / "lib.jsonl",
                          progress=False)
    assert report.counts["counterfactuals"] == 4 and report.dropped_for_cap == 0


@pytest.mark.parametrize("item, pointer, message", [
    ({"question": "What?", "answer": "A"}, "/options", "no options"),
    ({"question": "What?", "options": ["x", "y"], "answer": "C"}, "/answer", "'C' is not among the options (A), (B)"),
    ({"input": "Pick one.\nOptions:\n(A) x\n(B) y", "target": "(D)"}, "/target",
     "'(D)' is not among the options (A), (B)"),
    ({"input": "Sort these words: b a", "target": "a b"}, "/input", "no options"),
    ({"question": "What?", "options": ["x", ""], "answer": "A"}, "/options/1", "non-empty"),
])
def test_a_bad_item_names_file_line_and_field_and_writes_nothing(corpus_dir, tmp_path, cli, item, pointer, message):
    good = {"question": "Fine?", "options": ["yes", "no"], "answer": "yes"}
    f = write_jsonl(tmp_path / "bad.jsonl", [good, item, good | {"id": "other"}])
    code, _, err = cli("import", "mcq", "--corpus", corpus_dir, *PROVENANCE, "-q", f)
    assert code == 1
    line = next(x for x in err.splitlines() if x.startswith(f"{f}:2: {pointer}: "))
    assert message in line, err
    assert corpus_stats(Corpus(corpus_dir))["records"]["session"] == 0


def test_missing_provenance_names_the_sidecar_and_field(corpus_dir, tmp_path, cli):
    sidecar = tmp_path / "bbh.json"
    sidecar.write_text(json.dumps({"dataset": "BIG-Bench Hard", "revision": "v1", "citation": "Suzgun et al."}))
    out = tmp_path / "never.jsonl"
    code, _, err = cli("import", "mcq", "--sidecar", sidecar, "-o", out, "-q", _explicit(tmp_path, 2))
    assert code == 1 and f"{sidecar}: /licence: the dataset's licence is required" in err
    assert not out.exists() and list(tmp_path.glob(".never*")) == []
    code, _, err = cli("import", "mcq", "--corpus", corpus_dir, "-q", _explicit(tmp_path, 2))
    assert code == 1 and all(f"/{k}:" in err for k in ("dataset", "revision", "licence", "citation"))
    with duckdb.connect(str(corpus_dir / "corpus.duckdb"), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM sessions").fetchall() == [(0,)]


def test_subjects_spread_items_over_the_splits(tmp_path, cli):
    out = tmp_path / "items.jsonl"
    assert cli("import", "mcq", *PROVENANCE, "-o", out, "-q", _explicit(tmp_path, 300))[0] == 0
    subjects = [json.loads(x)["subject_id"] for x in out.read_text().splitlines()]
    assert 90 <= len(set(subjects)) <= 100
    splits = {subject_split("trb-split-v1", s) for s in subjects}
    assert splits == {"train", "dev", "eval"}
    code, help_text, _ = cli("import", "mcq", "--help")
    assert code == 0 and "--subject-groups" in help_text and "pseudo-subject" in help_text
