"""PII scanner for release gate 5: personal data by kind in a release's text fields.

Kinds (:data:`PII_KINDS`): e-mail, phone (international and national formats), IPv4, IPv6, card,
IBAN (any case), US SSN, national identity numbers of fifteen countries, people's names, postal
addresses; each also when percent-encoded, written as HTML character references or in base64, and
when split across two neighbouring fields of a record. Modules by kind: :mod:`~corpus.pii.exact`
(the exact patterns), :mod:`~corpus.pii.phones` (libphonenumber), :mod:`~corpus.pii.ids`
(python-stdnum), :mod:`~corpus.pii.names` (titles, cues, name fields; nameparser), :mod:`~corpus.pii.people` (spaCy's
named-entity model for names with no title or cue),
:mod:`~corpus.pii.addresses`, :mod:`~corpus.pii.encoded`; :mod:`~corpus.pii.scanner` joins them.
"""

from corpus.pii.exact import _FORMAT_CHARS, PII_KINDS, PiiHit, normalise
from corpus.pii.scanner import (
                                field_name,
                                prime_names,
                                record_hits,
                                redact,
                                redact_value,
                                scan_field,
                                scan_record,
                                scan_records,
                                scan_text,
                                text_fields,
)

__all__ = ["PII_KINDS", "PiiHit", "field_name", "normalise", "prime_names", "record_hits", "redact", "redact_value", "scan_field",
           "scan_record", "scan_records", "scan_text", "text_fields"]
_FORMAT_CHARS = _FORMAT_CHARS  # the tests check it against the running Python's unicodedata
