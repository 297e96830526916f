"""The TRB corpus: schema-v1 records in a DuckDB store, ingested all or nothing.

The command line (``trb-corpus``) is a thin layer over these functions::

    from corpus import Corpus, init_corpus, ingest, validate, corpus_stats
    c = Corpus(init_corpus("my-corpus"))
    report = ingest(c, ["sessions.jsonl"])       # raises InvalidInput / RecordConflict
    print(corpus_stats(c)["synthetic_to_human"])
"""

from corpus.errors import (
    CorpusBusy,
    CorpusError,
    CorpusExists,
    CorpusNotFound,
    ExitCode,
    InvalidInput,
    Problem,
    RecordConflict,
)
from corpus.ingest import IngestReport, ingest, validate
from corpus.stats import corpus_stats
from corpus.store import Corpus, init_corpus, resolve_corpus_dir

__all__ = [
    "Corpus",
    "init_corpus",
    "resolve_corpus_dir",
    "ingest",
    "validate",
    "IngestReport",
    "corpus_stats",
    "CorpusError",
    "InvalidInput",
    "RecordConflict",
    "CorpusBusy",
    "CorpusNotFound",
    "CorpusExists",
    "ExitCode",
    "Problem",
]
