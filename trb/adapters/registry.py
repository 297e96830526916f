"""The adapter registry: built-in and third-party adapters, registered the same way.

An adapter *kind* is an :class:`AdapterKind` object published under the entry-point
group ``trb.adapters``. The built-ins (``native``, ``proxy``, ``served``) are listed in
``pyproject.toml`` under that group exactly as a lab's package lists its own::

    [project.entry-points."trb.adapters"]
    my-model = "my_package.trb_adapter:ADAPTER"

and are found and loaded through the same code (:func:`toolkit.plugins.discover`). ``trb run --adapter NAME``
and ``trb adapters``
read this registry; every kind declares the CLI options it takes and what
``--model`` it accepts (a path, a URL, a name).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from toolkit.plugins import discover, import_object
from toolkit.urls import redact_url
from trb.adapters.capabilities import BoundAdapter, bind
from trb.errors import AdapterError, UsageError
from trb.options import Option

__all__ = [
    "ENTRY_POINT_GROUP",
    "AdapterOption",
    "AdapterKind",
    "available_adapters",
    "get_adapter_kind",
    "load_adapter",
    "adapter_from_spec",
    "RECREATE_KEYS",
]

ENTRY_POINT_GROUP = "trb.adapters"
#: The keys :func:`load_adapter` adds to an adapter's own spec: enough to re-create it.
RECREATE_KEYS = ("adapter", "model", "options")
_ACCEPTS = ("path", "url", "name")


#: An adapter kind's option (:class:`trb.options.Option`; the name labs' adapters import).
AdapterOption = Option


@dataclass(frozen=True)
class AdapterKind:
    """What a registered adapter kind is and how to load it.

    Attributes:
        name: the ``--adapter`` value.
        tier: ``"native"`` or ``"proxy"`` (spec §2).
        summary: one line for ``trb adapters`` and ``--help``.
        load: ``load(model: str, **options) -> adapter``; raises AdapterError.
        accepts: what ``--model`` may be: ``"path"`` (an existing file or directory),
            ``"url"`` (http:// or https://), ``"name"`` (anything the kind resolves itself).
        model_help: what ``--model`` means for this kind.
        options: the CLI options this kind takes.
        capabilities: the capability names its adapters declare (for listings; the
            loaded adapter's own declaration is what is checked).
        spec_added: keys the adapter's spec gained after runs were recorded, each with the value it has
            when every option takes its ``spec_default``: a stored spec without such a key matches a
            re-created adapter that reports that value (see :func:`adapter_from_spec`).
    """

    name: str
    tier: str
    summary: str
    load: Callable[..., Any]
    accepts: tuple[str, ...] = ("path",)
    model_help: str = "the checkpoint to load"
    options: tuple[AdapterOption, ...] = ()
    capabilities: tuple[str, ...] = ()
    spec_added: Mapping[str, Any] = field(default_factory=dict, compare=False)
    source: str = field(default="", compare=False)  # filled by the registry: "built-in" or "pkg x.y"

    def check_model(self, model: str) -> str:
        """``model`` if this kind accepts it; else a UsageError saying what it accepts."""
        if "url" in self.accepts and str(model).startswith(("http://", "https://")):
            return str(model)
        if "path" in self.accepts and Path(model).exists():
            return str(model)
        if "name" in self.accepts and not str(model).startswith(("http://", "https://")):
            return str(model)
        what = " or ".join({"path": "an existing path", "url": "an http(s) URL", "name": "a name"}[a]
                           for a in self.accepts)
        raise UsageError(f"--model {redact_url(model)}: adapter {self.name} accepts {what} ({self.model_help})")


def _load_entry(name: str, value: str, source: str) -> AdapterKind:
    try:
        obj = import_object(value)
    except Exception as e:  # a broken plug-in must not break the others
        raise AdapterError(f"adapter {name!r} ({value}, from {source}) cannot be loaded: {type(e).__name__}: {e}") from e
    if not isinstance(obj, AdapterKind):
        raise AdapterError(f"adapter {name!r} ({value}, from {source}) is not a trb.adapters.AdapterKind")
    if obj.name != name:
        raise AdapterError(f"entry point {name!r} ({value}) names an adapter called {obj.name!r}")
    if obj.tier not in ("native", "proxy") or not obj.accepts or set(obj.accepts) - set(_ACCEPTS):
        raise AdapterError(f"adapter {name!r} ({value}): tier must be native or proxy and accepts one of {_ACCEPTS}")
    return AdapterKind(**{**obj.__dict__, "source": source})


@cache
def _registry() -> tuple[dict[str, AdapterKind], tuple[str, ...]]:
    return discover(ENTRY_POINT_GROUP, _load_entry, "adapter")


def available_adapters() -> dict[str, AdapterKind]:
    """Every adapter kind installed (built-ins first, then entry points by name)."""
    return dict(_registry()[0])


def registry_problems() -> tuple[str, ...]:
    """Entry points that could not be loaded or clash with another (shown by ``trb adapters``)."""
    return _registry()[1]


def get_adapter_kind(name: str) -> AdapterKind:
    kinds = available_adapters()
    if name not in kinds:
        raise UsageError(f"unknown adapter {name!r} (installed: {', '.join(kinds) or 'none'}; "
                         "`trb adapters` lists them)")
    return kinds[name]


def load_adapter(name: str, model: str | os.PathLike, **options) -> BoundAdapter:
    """Load adapter kind ``name`` on ``model`` with its ``options``; check its contract once.

    Options left None are not passed. The bound adapter's :meth:`spec` carries, beside
    the adapter's own description, ``adapter``, ``model`` and ``options``: what
    :func:`adapter_from_spec` needs to re-create it.

    Raises:
        UsageError: an unknown kind, an option it does not take, a model it does not accept.
        AdapterError: the adapter could not be loaded or breaks its contract.
    """
    kind = get_adapter_kind(name)
    given = {k: v for k, v in options.items() if v is not None}
    known = {o.name for o in kind.options}
    unknown = sorted(set(given) - known)
    if unknown:
        raise UsageError(f"adapter {name} takes no option(s) {', '.join(unknown)} "
                         f"(its options: {', '.join(o.cli_flag for o in kind.options) or 'none'})")
    model = kind.check_model(str(model))
    adapter = kind.load(model, **given)
    bound = bind(adapter)
    if bound.tier != kind.tier:
        raise AdapterError(f"adapter {name} is registered as tier {kind.tier} but loaded a {bound.tier} adapter")
    bound.recreate = {"adapter": name, "model": model, "options": dict(sorted(given.items()))}
    return bound


def adapter_from_spec(spec: Mapping) -> BoundAdapter:
    """Re-create the adapter a run was made with, from the run's stored ``adapter_spec``.

    The adapter is loaded by kind, model and options, and its own spec must match the
    stored one (same weights sha256, same settings): a changed checkpoint is refused.

    A run recorded before an option existed has no value for it (the spec lacks the key named like the
    option): the option's ``spec_default`` (what the adapter did then) is passed, never its current default, and a spec key the kind
    added since (``AdapterKind.spec_added``) that the stored spec lacks must have the value listed there.

    Raises:
        UsageError: the spec was not made by :func:`load_adapter` (an adapter object
            handed to ``run_tracks`` directly), or names a kind not installed.
        AdapterError: the re-created adapter differs from the recorded one.
    """
    if not isinstance(spec, Mapping) or not all(k in spec for k in RECREATE_KEYS):
        raise UsageError("this run's adapter was not loaded from the adapter registry (no adapter/model/options "
                         "in its spec), so it cannot be re-created by name")
    kind = get_adapter_kind(spec["adapter"])
    options = dict(spec["options"] or {})
    for o in kind.options:
        # only a spec recorded before the option existed lacks its key; a newer run with the option at its
        # default records the key (and passes no option), and must be re-created with that default
        if o.name not in options and o.name not in spec and o.spec_default is not None:
            options[o.name] = o.spec_default
    bound = load_adapter(spec["adapter"], spec["model"], **options)
    now = bound.spec()
    recorded = {**{k: v for k, v in kind.spec_added.items() if k not in spec}, **spec}
    diffs = sorted(k for k in set(recorded) | set(now) if k not in ("options",) and recorded.get(k) != now.get(k))
    if diffs:
        shown = "; ".join(f"{k}: recorded {recorded.get(k)!r}, now {now.get(k)!r}" for k in diffs[:3])
        raise AdapterError(f"the adapter re-created from the run's spec differs from the recorded one ({shown}); "
                           "the checkpoint or its settings changed since the run")
    return bound
