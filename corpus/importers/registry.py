"""The importer registry: built-in and third-party importers, registered the same way.

An importer is an :class:`~corpus.importers.base.Importer` object published under the
entry-point group ``trb.importers``. The built-ins are listed in ``pyproject.toml``
under that group exactly as a lab's package lists its own::

    [project.entry-points."trb.importers"]
    my-format = "my_package.trb_import:IMPORTER"

and are found and loaded through the same code (:func:`toolkit.plugins.discover`), as adapters are.
``trb-corpus import KIND`` builds one subcommand per registered importer.
"""

from __future__ import annotations

from functools import cache

from corpus.errors import UsageError
from corpus.importers.base import Importer
from toolkit.plugins import PluginError, discover, load_object

__all__ = ["ENTRY_POINT_GROUP", "available_importers", "get_importer", "registry_problems"]

ENTRY_POINT_GROUP = "trb.importers"


def _load(name: str, value: str, source: str) -> Importer:
    obj = load_object("importer", name, value, source)
    if not isinstance(obj, Importer):
        raise PluginError(f"importer {name!r} ({value}, from {source}) is not a corpus.importers.Importer")
    if obj.name != name:
        raise PluginError(f"entry point {name!r} ({value}) names an importer called {obj.name!r}")
    return Importer(**{**obj.__dict__, "source": source})


@cache
def _registry() -> tuple[dict[str, Importer], tuple[str, ...]]:
    return discover(ENTRY_POINT_GROUP, _load, "importer")


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
