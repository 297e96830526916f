"""The examples that ship inside the package: the illustrative 7f3a reconstruction.

Example ``NAME`` is the folder ``corpus/examples/NAME/`` holding ``NAME.jsonl``
(schema-v1 records) and a ``README.md`` that tells its story; ``README.md`` beside
the folders says what examples are for (smoke tests only: nothing here is real
human data). They are package data, read through :mod:`importlib.resources`, so an
installed wheel has them exactly as a checkout does::

    from corpus import Corpus, ingest
    from corpus.examples import example_path

    ingest(Corpus("my-corpus"), [example_path("7f3a")])

``trb-corpus examples`` is the command-line way in.
"""

from __future__ import annotations

import atexit
from contextlib import ExitStack
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

from corpus.errors import UsageError

__all__ = ["example_names", "example_path", "example_readme"]

#: Keeps the files that :func:`importlib.resources.as_file` had to extract (a zipped
#: install) until the process ends; for an ordinary install it holds nothing.
_extracted = ExitStack()
atexit.register(_extracted.close)
_paths: dict[str, Path] = {}


def _root() -> Traversable:
    return resources.files(__name__)


def example_names() -> list[str]:
    """The names of the packaged examples, sorted (``["7f3a"]``)."""
    return sorted(d.name for d in _root().iterdir() if d.is_dir() and d.joinpath(f"{d.name}.jsonl").is_file())


def _example(name: str) -> Traversable:
    if name not in example_names():
        raise UsageError(f"no example {name!r}; the examples are: {', '.join(example_names()) or '(none)'}")
    return _root() / name


def example_path(name: str) -> Path:
    """The JSONL file of example ``name``, as a path on the file system (valid until the process exits).

    Raises:
        UsageError: there is no example ``name`` (the message lists the ones there are).
    """
    if name not in _paths:
        _paths[name] = _extracted.enter_context(resources.as_file(_example(name) / f"{name}.jsonl"))
    return _paths[name]


def example_readme(name: str) -> str:
    """The text of example ``name``'s ``README.md``: what each record is for.

    Raises:
        UsageError: there is no example ``name``.
    """
    return (_example(name) / "README.md").read_text(encoding="utf-8")
