"""Plug-in discovery shared by the toolkit's registries: tracks, adapters, runners, environments, importers.

Each registry is one entry-point group (``trb.tracks``, ``trb.adapters``, ``trb.runners``,
``trb.environments``, ``trb.importers``). The toolkit's own plug-ins are listed once, as entry
points of its group in ``pyproject.toml``, and are found and loaded exactly as a lab's package's
are: :func:`discover` reads the group from the installed packages' metadata, puts the toolkit's
own (source ``"built-in"``) first, keeps the first of two clashing names, loads each object and
collects, as messages, the entry points that could not be loaded, for the registry to show. A
registry never imports its built-ins itself.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from importlib import metadata
from typing import TypeVar

from toolkit.errors import ExitCode, ToolkitError

__all__ = ["PluginError", "TOOLKIT_DISTRIBUTION", "discover", "discover_once", "import_object", "load_object"]

T = TypeVar("T")


class PluginError(ToolkitError):
    """An entry point that cannot be used (the message says which and why): an installed package's fault, listed
    by its registry as a problem rather than raised at a user."""

    exit_code = ExitCode.USAGE


def import_object(value: str):
    """The object an entry-point value ``module:attr.attr`` names (ImportError / AttributeError as raised)."""
    module, _, attr = value.partition(":")
    obj = importlib.import_module(module)
    for part in attr.split(".") if attr else ():
        obj = getattr(obj, part)
    return obj


#: The toolkit's own distribution: its entry points are the built-ins.
TOOLKIT_DISTRIBUTION = "trb-toolkit"


def load_object(what: str, name: str, value: str, source: str):
    """The object entry point ``name`` of a ``what`` names; a PluginError saying which and why when it cannot be
    imported (a broken plug-in must not break the others)."""
    try:
        return import_object(value)
    except Exception as e:
        raise PluginError(f"{what} {name!r} ({value}, from {source}) cannot be loaded: {type(e).__name__}: {e}") from e


def _normalise(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def discover(group: str, load: Callable[[str, str, str], T], what: str) -> tuple[dict[str, T], tuple[str, ...]]:
    """Every plug-in of entry-point ``group``: the toolkit's own (the built-ins) first, then the installed ones.

    Args:
        group: the entry-point group (``"trb.adapters"``).
        load: ``load(name, value, source)`` -> the plug-in; raises :class:`PluginError` (or the
            registry's own error type, whose ``message``/str is kept) for one that cannot be used.
            ``source`` is ``"built-in"`` for the toolkit's own, else ``"<distribution> <version>"``.
        what: the plug-in's kind in messages (``"adapter"``).
    Returns:
        ``(plug-ins by name, problems)``: an entry point that clashes with an earlier one of the same
        name (the first is kept) or fails to load is left out and described in ``problems``.
    """
    eps = []
    for ep in metadata.entry_points(group=group):
        dist = getattr(ep, "dist", None)
        own = dist is not None and _normalise(dist.name) == TOOLKIT_DISTRIBUTION
        source = "built-in" if own else f"{dist.name} {dist.version}" if dist is not None else "installed"
        eps.append((not own, ep, source))
    eps.sort(key=lambda x: x[0])  # stable: the built-ins first, each side in the metadata's order
    found: dict[str, tuple[str, str]] = {}
    problems: list[str] = []
    for _, ep, source in eps:
        if ep.name in found:
            if found[ep.name][0] == ep.value:  # the same entry point listed twice (two copies of one package)
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


def discover_once(state: dict, group: str, load: Callable[[str, str, str], T], what: str) -> tuple[str, ...]:
    """:func:`discover` for a registry that keeps what it loads itself (``load`` registers each plug-in), run the
    first time only; ``state`` is the registry's ``{"loaded": bool, "problems": tuple}``. Returns the problems."""
    if not state["loaded"]:
        _, problems = discover(group, load, what)
        state.update(loaded=True, problems=problems)
    return state["problems"]
