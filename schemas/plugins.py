"""Plug-in discovery shared by the toolkit's registries (adapters, importers).

A registry names its built-ins as entry points of its group (so that a bare checkout
works) and reads the same group from the installed packages' metadata, so a lab's
package registers its own exactly as the toolkit does. :func:`discover` merges the
two, keeps the first of two clashing names, loads each object and collects, as
messages, the entry points that could not be loaded, for the registry to show.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from importlib import metadata
from typing import TypeVar

__all__ = ["PluginError", "discover", "import_object"]

T = TypeVar("T")


class PluginError(Exception):
    """An entry point that cannot be used (the message says which and why)."""


def import_object(value: str):
    """The object an entry-point value ``module:attr.attr`` names (ImportError / AttributeError as raised)."""
    module, _, attr = value.partition(":")
    obj = importlib.import_module(module)
    for part in attr.split(".") if attr else ():
        obj = getattr(obj, part)
    return obj


def discover(group: str, builtin: Mapping[str, str], load: Callable[[str, str, str], T],
             what: str) -> tuple[dict[str, T], tuple[str, ...]]:
    """Every plug-in of entry-point ``group``: the built-ins first, then the installed ones.

    Args:
        group: the entry-point group (``"trb.adapters"``).
        builtin: name -> entry-point value of the toolkit's own plug-ins (source ``"built-in"``).
        load: ``load(name, value, source)`` -> the plug-in; raises :class:`PluginError` (or the
            registry's own error type, whose ``message``/str is kept) for one that cannot be used.
        what: the plug-in's kind in messages (``"adapter"``).
    Returns:
        ``(plug-ins by name, problems)``: an entry point that clashes with an earlier one of the same
        name (the first is kept) or fails to load is left out and described in ``problems``.
    """
    found: dict[str, tuple[str, str]] = {n: (v, "built-in") for n, v in builtin.items()}
    problems: list[str] = []
    for ep in metadata.entry_points(group=group):
        dist = getattr(ep, "dist", None)
        source = f"{dist.name} {dist.version}" if dist is not None else "installed"
        if ep.name in found:
            if found[ep.name][0] == ep.value:  # the built-in, listed by the toolkit's own metadata
                continue
            problems.append(f"{what} {ep.name!r} from {source} ({ep.value}) clashes with {found[ep.name][0]} "
                            f"({found[ep.name][1]}); the first one is kept")
            continue
        found[ep.name] = (ep.value, source)
    loaded: dict[str, T] = {}
    for name, (value, source) in found.items():
        try:
            loaded[name] = load(name, value, source)
        except Exception as e:  # a broken plug-in must not break the others
            problems.append(getattr(e, "message", None) or str(e))
    return loaded, tuple(problems)
