"""The importer registry: built-in and third-party importers, registered the same way.

An importer is an :class:`~corpus.importers.base.Importer` object published under the
entry-point group ``trb.importers``. The built-ins are listed in ``pyproject.toml``
under that group exactly as a lab's package lists its own::

    [project.entry-points."trb.importers"]
    my-format = "my_package.trb_import:IMPORTER"

and, so that a bare checkout works too, :data:`BUILTIN` names the same entry points
(loaded through the same code, as :mod:`trb.adapters.registry` does for adapters).
``trb-corpus import KIND`` builds one subcommand per registered importer.
"""

from __future__ import annotations

import importlib
from functools import cache
from importlib import metadata

from corpus.errors import UsageError
from corpus.importers.base import Importer

__all__ = ["ENTRY_POINT_GROUP", "BUILTIN", "available_importers", "get_importer", "registry_problems"]

ENTRY_POINT_GROUP = "trb.importers"
#: The built-in importers, as entry points of the same group.
BUILTIN = {
    "mcq": "corpus.importers.mcq:IMPORTER",
    "inspect": "corpus.importers.inspect_log:IMPORTER",
}


class _Broken(Exception):
    pass


def _load(name: str, value: str, source: str) -> Importer:
    module, _, attr = value.partition(":")
    try:
        obj = importlib.import_module(module)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except Exception as e:  # a broken plug-in must not break the others
        raise _Broken(f"importer {name!r} ({value}, from {source}) cannot be loaded: {type(e).__name__}: {e}") from e
    if not isinstance(obj, Importer):
        raise _Broken(f"importer {name!r} ({value}, from {source}) is not a corpus.importers.Importer")
    if obj.name != name:
        raise _Broken(f"entry point {name!r} ({value}) names an importer called {obj.name!r}")
    return Importer(**{**obj.__dict__, "source": source})


@cache
def _registry() -> tuple[dict[str, Importer], tuple[str, ...]]:
    found: dict[str, tuple[str, str]] = {n: (v, "built-in") for n, v in BUILTIN.items()}
    problems: list[str] = []
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        dist = getattr(ep, "dist", None)
        source = f"{dist.name} {dist.version}" if dist is not None else "installed"
        if ep.name in found:
            if found[ep.name][0] == ep.value:  # the built-in, listed by the toolkit's own metadata
                continue
            problems.append(f"importer {ep.name!r} from {source} ({ep.value}) clashes with {found[ep.name][0]} "
                            f"({found[ep.name][1]}); the first one is kept")
            continue
        found[ep.name] = (ep.value, source)
    kinds: dict[str, Importer] = {}
    for name, (value, source) in found.items():
        try:
            kinds[name] = _load(name, value, source)
        except _Broken as e:
            problems.append(str(e))
    return kinds, tuple(problems)


def available_importers() -> dict[str, Importer]:
    """Every importer that loads, by name (built-ins first)."""
    return dict(_registry()[0])


def registry_problems() -> tuple[str, ...]:
    """Importers that were found but could not be loaded, or that clash with another, as messages."""
    return _registry()[1]


def get_importer(name: str) -> Importer:
    """The importer called ``name``; a UsageError naming the available ones if none is."""
    kinds = _registry()[0]
    if name not in kinds:
        raise UsageError(f"no importer {name!r} (available: {', '.join(sorted(kinds)) or 'none'})")
    return kinds[name]
