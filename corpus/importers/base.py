"""What an importer is: a named converter from outside data to schema records, with declared options.

An importer never writes to a corpus. It turns input files into plain record dicts
(schema 1.1), located problems (:class:`~corpus.errors.Problem`: file, line, field)
when the input is bad, and counts of what it could not map. :mod:`corpus.importers.run`
then puts the records through the cap check and the ordinary validation and ingest:
there is no other way in.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["ImporterOption", "Importer", "Converted", "identifier", "item_subject", "DEFAULT_SUBJECT_GROUPS",
           "SUBJECTS_HELP"]

#: How many pseudo-subjects an importer spreads items over by default (see :func:`item_subject`).
DEFAULT_SUBJECT_GROUPS = 100

#: What every importer's --help says about subjects (split fractions work because of it).
SUBJECTS_HELP = (
    "Subjects: releases split by subject, so one subject id for every item would put every item in one split. "
    "Each item gets a pseudo-subject instead: the first 8 bytes of sha256(its item key) modulo --subject-groups K "
    f"(default {DEFAULT_SUBJECT_GROUPS}) pick one of K ids PREFIX-gNNN; the same item always lands in the same "
    "group, so the same item (every epoch, every model) stays in one split, and the release's split fractions cut "
    "the K groups."
)

_ID_BAD = re.compile(r"[^A-Za-z0-9._:\-]+")


def identifier(text: str, limit: int = 128) -> str:
    """``text`` as a schema Identifier: unsafe runs become ``-``; too long, it ends in a hash of the whole."""
    out = _ID_BAD.sub("-", text).strip("-._:") or "x"
    if not out[0].isalnum():
        out = "x" + out
    if len(out) > limit:
        out = out[: limit - 17].rstrip("-._:") + "-" + hashlib.sha256(text.encode()).hexdigest()[:16]
    return out


def item_subject(prefix: str, item_key: str, groups: int) -> str:
    """The pseudo-subject of an item: one of ``groups`` ids ``PREFIX-gNNN``, by a hash of ``item_key``."""
    k = int.from_bytes(hashlib.sha256(item_key.encode()).digest()[:8], "big") % groups
    width = max(3, len(str(groups - 1)))
    return identifier(f"{prefix}-g{k:0{width}d}")


@dataclass(frozen=True)
class ImporterOption:
    """One option of an importer: ``--flag VALUE`` becomes keyword ``name`` of ``convert``.

    ``type`` is ``str``, ``int`` or ``bool`` (a flag); ``default`` is used when the option is not given.
    """

    name: str
    help: str
    type: type = str
    default: Any = None
    flag: str | None = None  # default: "--" + name with "_" as "-"

    @property
    def cli_flag(self) -> str:
        return self.flag or "--" + self.name.replace("_", "-")


@dataclass
class Converted:
    """What an importer made of its input: records and what it could not map.

    ``batches`` maps the name each batch's records are recorded under in the corpus
    (``import KIND FILE``) to the records, in order; ``counts`` says how many of
    each thing were read and made; ``unmapped`` counts, by reason, what was read but
    could not be mapped (those are left out, never invented); ``mapping`` names the
    versioned mapping used.
    """

    batches: dict[str, list[dict]] = field(default_factory=dict)
    counts: Counter = field(default_factory=Counter)
    unmapped: Counter = field(default_factory=Counter)
    mapping: str = ""

    def records(self) -> list[dict]:
        return [r for recs in self.batches.values() for r in recs]


@dataclass(frozen=True)
class Importer:
    """A registered importer kind.

    Attributes:
        name: the ``trb-corpus import`` KIND.
        summary: one line for listings.
        help: the command's --help text (what it reads, what it makes, how subjects are assigned).
        convert: ``convert(files: list[Path], **options) -> Converted``; raises
            :class:`~corpus.errors.InvalidInput` (every problem located: file, line, field) or
            :class:`~corpus.errors.UsageError`; writes nothing.
        options: the options it takes.
        mapping: the name and version of its mapping (recorded in generated records where they have room).
    """

    name: str
    summary: str
    help: str
    convert: Callable[..., Converted]
    options: tuple[ImporterOption, ...] = ()
    mapping: str = ""
    source: str = field(default="", compare=False)  # filled by the registry: "built-in" or "pkg x.y"

    def run(self, files: list[Path], options: dict[str, Any]) -> Converted:
        known = {o.name: o for o in self.options}
        unknown = sorted(set(options) - set(known))
        if unknown:
            from corpus.errors import UsageError

            raise UsageError(f"importer {self.name} has no option(s) {', '.join(unknown)} "
                             f"(it takes {', '.join(o.cli_flag for o in self.options) or 'none'})")
        values = {name: (options[name] if options.get(name) is not None else o.default) for name, o in known.items()}
        return self.convert(list(files), **values)
