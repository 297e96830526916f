"""One option of a kind a registry holds (an adapter kind, a runner, a track), as the CLI offers it.

Every kind that takes options declares them as a tuple of :class:`Option`; ``trb run`` adds one flag per
option of every installed kind, with the owner in brackets in its help (``[ray] ...``, ``[track 2] ...``), and
hands each value to the kind that declared it. A lab's adapter, runner or track gets its flags the same way,
without editing the CLI.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Option", "option_names"]


@dataclass(frozen=True)
class Option:
    """One CLI option of a kind: ``--flag VALUE`` becomes keyword ``name`` of what the kind makes or scores.

    ``type`` is ``str``, ``int``, ``float`` or ``bool`` (a flag); ``choices`` restricts a str; ``minimum`` bounds
    an int or a float from below; ``metavar`` names the value in ``--help``.
    ``spec_default``: for an adapter option added after runs were recorded, the value that reproduces what
    those runs did; :func:`trb.adapters.registry.adapter_from_spec` passes it when a stored spec's options lack
    the option (the option's default for new runs may differ). None: the option has no such value.
    """

    name: str
    help: str
    type: type = str
    choices: tuple[str, ...] | None = None
    flag: str | None = None  # default: "--" + name with "_" as "-"
    spec_default: Any = None
    minimum: float | None = None
    metavar: str | None = None

    @property
    def cli_flag(self) -> str:
        return self.flag or "--" + self.name.replace("_", "-")

    def click_type(self):
        """The click parameter type of the option's values."""
        import click

        if self.choices:
            return click.Choice(list(self.choices))
        if self.minimum is not None and self.type is int:
            return click.IntRange(min=int(self.minimum))
        if self.minimum is not None and self.type is float:
            return click.FloatRange(min=float(self.minimum))
        return self.type


def option_names(declared: Iterable[Option] | Mapping[str, str] | None) -> tuple[str, ...]:
    """The names of a kind's declared options: a tuple of :class:`Option`, or (a track's older form) a mapping
    of name to help."""
    if not declared:
        return ()
    if isinstance(declared, Mapping):
        return tuple(declared)
    return tuple(o.name for o in declared)
