"""Transfer provenance at run time: who trained the model, and the check that they did not collect a transfer context.

Spec §5: "Transfer contexts (Track 6) must be collected by a party that did not train the
model." A release's transfer contexts each name their ``collector_org`` (the release's
``transfer`` config); a run records who trained the model under test, ``trained_by``:
the organisations given to ``trb run --trained-by ORG`` (repeatable) together with any
the adapter declares in its spec (``spec()["trained_by"]``, a name or a list of names).

A transfer-split run refuses, before anything is scored or written:

* a model whose trainer is not recorded at all: an unknown trainer cannot be checked
  against the collectors, so the spec's rule cannot be honoured;
* a release with a transfer context collected by one of the trainers, in the context's
  record (``collector_org``) or in any of its sessions' source (``collector``); or a
  context whose collector names no one, or without an attestation. Names are compared as
  organisations (:mod:`toolkit.orgs`: Unicode-normalised, look-alike letters folded,
  punctuation and legal forms dropped, a name found inside the other at word boundaries,
  initials), by the same rule as the release gate ``transfer_provenance``
  (:func:`toolkit.orgs.transfer_offences`).
"""

from __future__ import annotations

from collections.abc import Iterable

from toolkit.orgs import org_key, org_tokens, transfer_offences
from trb.errors import UsageError

__all__ = ["TransferProvenanceError", "trainers", "check_transfer_provenance"]


class TransferProvenanceError(UsageError):
    """A transfer-split run whose model's trainer is unknown, or collected one of the transfer contexts."""


def _names(value) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, Iterable):
        raise TransferProvenanceError(f"trained_by must be an organisation name or a list of them, not {value!r}")
    out = []
    for v in value:
        if not isinstance(v, str):
            raise TransferProvenanceError(f"trained_by must be an organisation name or a list of them, not {v!r}")
        if org_tokens(v):  # a name of blanks, punctuation or invisible characters names no one
            out.append(v.strip())
    return out


def _key(name: str) -> str:
    return org_key(name)


def trainers(given=None, declared=None) -> list[str]:
    """Who trained the model: the names ``given`` (``--trained-by``) and those the adapter ``declared``, once each
    (first spelling kept), in that order. Raises TransferProvenanceError for a value that is not names."""
    out: list[str] = []
    seen: set[str] = set()
    for name in _names(given) + _names(declared):
        if _key(name) not in seen:
            seen.add(_key(name))
            out.append(name)
    return out


def check_transfer_provenance(release, trained_by: list[str], who: str) -> dict:
    """Refuse a transfer-split run of ``release`` (an open :class:`~trb.releases.Release`) by a model trained by
    ``trained_by`` when that is unknown or collected a transfer context; return what was checked (for the run record).

    Raises:
        TransferProvenanceError: ``trained_by`` is empty; the release lists no transfer context; a context was
            collected by one of ``trained_by``.
    """
    if not trained_by:
        raise TransferProvenanceError(
            f"a transfer-split run must record who trained the model: {who} declares no trained_by in its spec; pass "
            "--trained-by ORG (trained_by=[...] in run_tracks). Transfer contexts must be collected by a party that "
            "did not train the model (TRB spec §5), and an unknown trainer cannot be checked against them")
    contexts = release.rows("SELECT context_id, collector_org, attestation_ref FROM transfer ORDER BY context_id") \
        if "transfer" in release.configs else []
    if not contexts:
        raise TransferProvenanceError(f"release {release.version} ({release.sha[:12]}) lists no transfer context "
                                      "(its transfer config is empty): the provenance of its transfer split cannot "
                                      "be checked")
    sessions = release.rows("SELECT context_id, collector, count(*) AS n FROM sessions WHERE split = 'transfer' "
                            "GROUP BY ALL ORDER BY ALL")
    bad = transfer_offences([(c["context_id"], c["collector_org"], c["attestation_ref"]) for c in contexts],
                            [(r["context_id"], r["collector"], r["n"]) for r in sessions], list(trained_by))
    if bad:
        collected = sum(any(o.kind == "trainer" for o in why) for why in bad.values())
        where = f"transfer context(s) of release {release.version} ({release.sha[:12]})"
        head = (f"{who} was trained by {', '.join(trained_by)}, who collected {collected} of the {len(contexts)} {where}"
                if collected else f"{len(bad)} of the {len(contexts)} {where} lack provenance")
        raise TransferProvenanceError(
            head + ": " + ", ".join(f"{cid} ({'; '.join(map(str, why))})" for cid, why in sorted(bad.items()))
            + "; transfer contexts must be collected by a party that did not train the model (TRB spec §5; names "
              "compared as organisations), each with an attestation: nothing was scored")
    collectors: dict[str, list[str]] = {}
    for r in sessions:
        collectors.setdefault(r["context_id"], []).append(r["collector"])
    return {"checked": True, "trained_by": list(trained_by), "rule": "toolkit.orgs.same_org",
            "contexts": [{"context_id": c["context_id"], "collector_org": c["collector_org"],
                          "session_collectors": collectors.get(c["context_id"], [])} for c in contexts]}
