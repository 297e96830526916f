"""Importers register through the `trb.importers` entry-point group: a lab's package is found like the built-ins."""

from __future__ import annotations

import sys
import textwrap

import pytest

from corpus.importers import registry
from corpus.store import Corpus

PLUGIN = '''
from corpus.importers import Converted, Importer, ImporterOption


def convert(files, *, tag="x"):
    out = Converted(mapping="lines/1")
    for path in files:
        recs = []
        for i, line in enumerate(path.read_text().splitlines()):
            recs.append({"kind": "session", "session_id": f"{tag}-{i}", "subject_id": f"{tag}-subj-{i}",
                         "source": {"kind": "model_rollout", "collector": "lab-z"},
                         "context": {"context_id": "c", "stimulus_set": "lines", "subject_population": "models",
                                     "language": "en"},
                         "steps": [{"t": 0, "observation": line, "action": "ok"}]})
        out.batches[f"import lines {path}"] = recs
        out.counts["sessions"] += len(recs)
    return out


IMPORTER = Importer(name="lines", summary="one session a line", help="One session a line.", convert=convert,
                    options=(ImporterOption("tag", "Id prefix."),), mapping="lines/1")
'''


@pytest.fixture
def plugin_on_path(tmp_path, monkeypatch):
    site = tmp_path / "site"
    (site / "lab_lines").mkdir(parents=True)
    (site / "lab_lines" / "__init__.py").write_text(PLUGIN)
    info = site / "lab_lines-0.2.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: lab-lines\nVersion: 0.2.0\n")
    (info / "entry_points.txt").write_text(textwrap.dedent("""\
        [trb.importers]
        lines = lab_lines:IMPORTER
        mcq = lab_lines:IMPORTER
        """))
    monkeypatch.syspath_prepend(str(site))
    registry._registry.cache_clear()
    yield
    registry._registry.cache_clear()
    sys.modules.pop("lab_lines", None)


def test_builtins_and_a_lab_importer_come_from_the_same_group(plugin_on_path, corpus_dir, tmp_path, cli):
    kinds = registry.available_importers()
    assert kinds["mcq"].source == "built-in" and kinds["inspect"].source == "built-in"
    assert kinds["lines"].source == "lab-lines 0.2.0"
    # a plug-in may not take a built-in's name: the built-in is kept and the clash reported
    assert any("'mcq' from lab-lines 0.2.0" in p and "clashes" in p for p in registry.registry_problems())
    f = tmp_path / "in.txt"
    f.write_text("hello\nworld\n")
    code, _, err = cli("import", "lines", "--corpus", corpus_dir, "--tag", "lab", "-q", f)
    assert code == 0 and "ingested: 2 record(s)" in err, err
    from corpus.stats import corpus_stats
    assert corpus_stats(Corpus(corpus_dir))["sessions_by_source_kind"] == {"model_rollout": 2}
    code, out, _ = cli("import", "--help")
    assert code == 0 and "lines" in out and "mcq" in out and "inspect" in out


def test_an_unknown_kind_names_the_available_ones(cli, tmp_path):
    f = tmp_path / "x.jsonl"
    f.write_text("{}\n")
    code, _, err = cli("import", "nope", f)
    assert code == 2 and "nope" in err
