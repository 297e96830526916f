"""Importers: outside data (benchmark items, evaluation logs) into schema records with honest provenance.

``trb-corpus import KIND FILE …`` runs the importer registered as KIND
(:mod:`corpus.importers.registry`: built-ins and the ``trb.importers`` entry-point group)
and puts what it makes through the 3:1 cap check and the ordinary validation and ingest
(:func:`corpus.importers.run.import_files`).
"""

from corpus.importers.base import Converted, Importer, ImporterOption
from corpus.importers.registry import ENTRY_POINT_GROUP, available_importers, get_importer
from corpus.importers.run import CapRefused, ImportReport, import_files

__all__ = ["ENTRY_POINT_GROUP", "Converted", "Importer", "ImporterOption", "available_importers", "get_importer",
           "CapRefused", "ImportReport", "import_files"]
