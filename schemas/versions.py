"""Every version the toolkit states, in one place.

``TRB_VERSION``
    The TRB spec version this toolkit implements (spec §7); releases and runs record it.
``SCHEMA_VERSION``
    The record schemas' version (defined with the models in :mod:`schemas.models`).
``TOOLKIT_VERSION``
    This toolkit's own version: the installed ``trb-toolkit`` distribution's, read
    once at import; from a bare checkout (nothing installed), the ``version`` in the
    checkout's ``pyproject.toml``. Releases, ingests, runs and every ``--version`` use it.

Format versions of persisted stores (the corpus store's, the release manifest's, the
results store's) stay with the code that reads and writes them.
"""

from __future__ import annotations

import tomllib
from importlib import metadata
from pathlib import Path

from schemas.models import SCHEMA_VERSION

__all__ = ["DISTRIBUTION", "SCHEMA_VERSION", "TOOLKIT_VERSION", "TRB_VERSION"]

#: The TRB spec version this toolkit implements (spec §7).
TRB_VERSION = "0.1"

#: The distribution this toolkit is installed as.
DISTRIBUTION = "trb-toolkit"

_PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def _pyproject_version(path: Path = _PYPROJECT) -> str | None:
    """``project.version`` of the checkout's pyproject.toml, if it is this distribution's."""
    try:
        project = tomllib.loads(path.read_text(encoding="utf-8")).get("project", {})
    except (OSError, tomllib.TOMLDecodeError):
        return None
    return project.get("version") if project.get("name") == DISTRIBUTION else None


def _toolkit_version() -> str:
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:  # a bare checkout: nothing installed
        return _pyproject_version() or "0+unknown"


#: This toolkit's version (see the module docstring).
TOOLKIT_VERSION = _toolkit_version()
