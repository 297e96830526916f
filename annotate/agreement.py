"""``trb-annotate agreement``: how far annotators agree, per project.

For each project (``caused_by_self``: the attribution label; ``continuation``: the chosen
action), over the latest revision of each annotator's label on each item:

- Krippendorff's α (nominal), computed by the ``krippendorff`` package, with a 95 %
  percentile bootstrap CI that resamples items (seeded; the α of each resample comes from the
  items' coincidence matrices, which reproduce the package's α exactly);
- Cohen's κ for every pair of annotators, over the items both labelled;
- the items on which annotators disagree, with their votes.

Written continuations (open-ended steps) carry no category and are left out. Nothing here
needs Label Studio: it reads the corpus store only.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from itertools import combinations

import numpy as np

from corpus.store import Corpus

__all__ = ["PROJECTS", "PairKappa", "ProjectAgreement", "agreement", "latest_labels", "alpha_nominal",
           "bootstrap_alpha", "cohen_kappa"]

#: project -> (annotation target kind, value type, column holding the category)
PROJECTS = {"caused_by_self": ("attribution", "attribution", "label"),
            "continuation": ("counterfactual", "action", "action")}


@dataclass
class PairKappa:
    a: str
    b: str
    n: int  # items both labelled
    kappa: float | None  # None when undefined (both gave one same category throughout)


@dataclass
class ProjectAgreement:
    project: str
    items: int  # items with a label
    pairable_items: int  # items with two or more labels (what α uses)
    annotations: int
    annotators: list[str]
    alpha: float | None
    alpha_ci: tuple[float, float] | None
    kappa: list[PairKappa] = field(default_factory=list)
    disagreements: list[dict] = field(default_factory=list)  # {target_id, votes: {value: count}}

    def as_dict(self) -> dict:
        d = asdict(self)
        d["alpha_ci"] = list(self.alpha_ci) if self.alpha_ci else None
        return d


def latest_labels(con, target_kind: str, value_type: str, column: str) -> dict[str, dict[str, str]]:
    """target id -> {annotator: category}, the latest revision of each annotator's ``annotator``-role label."""
    rows = con.execute(f"""
        SELECT target_id, annotator_id, {column} FROM store.annotations
        WHERE target_kind = ? AND value_type = ? AND role = 'annotator' AND {column} IS NOT NULL
        QUALIFY row_number() OVER (PARTITION BY target_id, annotator_id
                                   ORDER BY revision DESC, created_at DESC, annotation_id DESC) = 1
        ORDER BY target_id, annotator_id""", [target_kind, value_type]).fetchall()
    out: dict[str, dict[str, str]] = defaultdict(dict)
    for target, who, value in rows:
        out[target][who] = value
    return dict(out)


def _matrix(units: dict[str, dict[str, str]]) -> tuple[np.ndarray, list[str], list[str]]:
    """Reliability data (annotators × items, NaN = missing) with categories coded 0..V-1."""
    annotators = sorted({a for labels in units.values() for a in labels})
    cats = sorted({v for labels in units.values() for v in labels.values()})
    code = {c: i for i, c in enumerate(cats)}
    row = {a: i for i, a in enumerate(annotators)}
    m = np.full((len(annotators), len(units)), np.nan)
    for j, labels in enumerate(units.values()):
        for a, v in labels.items():
            m[row[a], j] = code[v]
    return m, annotators, cats


def alpha_nominal(units: dict[str, dict[str, str]]) -> float | None:
    """Krippendorff's α (nominal) by the ``krippendorff`` package; None when undefined (no variation or no pairs)."""
    import krippendorff

    pairable = {k: v for k, v in units.items() if len(v) >= 2}
    if not pairable:
        return None
    m, _, cats = _matrix(pairable)
    if len(cats) < 2:
        return None
    return float(krippendorff.alpha(reliability_data=m, level_of_measurement="nominal"))


def _coincidences(units: dict[str, dict[str, str]]) -> np.ndarray:
    """Per pairable item, its coincidence matrix (items × V × V): o_ck = pairs (c, k) / (m_u − 1)."""
    cats = sorted({v for labels in units.values() for v in labels.values()})
    code = {c: i for i, c in enumerate(cats)}
    out = np.zeros((len(units), len(cats), len(cats)))
    for j, labels in enumerate(units.values()):
        counts = np.bincount([code[v] for v in labels.values()], minlength=len(cats)).astype(float)
        m = counts.sum()
        out[j] = (np.outer(counts, counts) - np.diag(counts)) / (m - 1)
    return out


def _alpha_from_coincidence(o: np.ndarray) -> np.ndarray:
    """α (nominal) from summed coincidence matrices (… × V × V): 1 − (n − 1) Σ_{c≠k} o_ck / Σ_{c≠k} n_c n_k."""
    n_c = o.sum(axis=-1)
    n = n_c.sum(axis=-1)
    observed = o.sum(axis=(-1, -2)) - np.trace(o, axis1=-2, axis2=-1)
    expected = n ** 2 - (n_c ** 2).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(expected > 0, 1 - (n - 1) * observed / expected, np.nan)


def bootstrap_alpha(units: dict[str, dict[str, str]], *, reps: int = 1000, seed: int = 0,
                    level: float = 0.95) -> tuple[float, float] | None:
    """Percentile CI of α from ``reps`` resamples of the pairable items (with replacement)."""
    pairable = {k: v for k, v in units.items() if len(v) >= 2}
    if len(pairable) < 2 or reps < 1:
        return None
    per_item = _coincidences(pairable).reshape(len(pairable), -1)
    rng = np.random.default_rng(seed)
    alphas = []
    for start in range(0, reps, 200):  # resample weights in blocks: (block × items) @ (items × V²)
        k = min(200, reps - start)
        w = rng.multinomial(len(pairable), np.full(len(pairable), 1 / len(pairable)), size=k)
        v = int(round(per_item.shape[1] ** 0.5))
        alphas.append(_alpha_from_coincidence((w @ per_item).reshape(k, v, v)))
    a = np.concatenate(alphas)
    a = a[~np.isnan(a)]
    if not len(a):
        return None
    tail = (1 - level) / 2 * 100
    return float(np.percentile(a, tail)), float(np.percentile(a, 100 - tail))


def cohen_kappa(x: list[str], y: list[str]) -> float | None:
    """Cohen's κ of two raters' paired labels: (p_o − p_e) / (1 − p_e); None when p_e = 1."""
    n = len(x)
    if n == 0:
        return None
    p_o = sum(a == b for a, b in zip(x, y)) / n
    cx, cy = Counter(x), Counter(y)
    p_e = sum(cx[c] * cy[c] for c in cx) / (n * n)
    if p_e == 1:
        return None
    return (p_o - p_e) / (1 - p_e)


def project_agreement(name: str, units: dict[str, dict[str, str]], *, reps: int = 1000,
                      seed: int = 0) -> ProjectAgreement:
    annotators = sorted({a for labels in units.values() for a in labels})
    kappas = []
    for a, b in combinations(annotators, 2):
        both = [(labels[a], labels[b]) for labels in units.values() if a in labels and b in labels]
        if both:
            kappas.append(PairKappa(a, b, len(both), cohen_kappa([p[0] for p in both], [p[1] for p in both])))
    disagreements = [{"target_id": t, "votes": dict(sorted(Counter(labels.values()).items()))}
                     for t, labels in units.items() if len(set(labels.values())) > 1]
    return ProjectAgreement(
        project=name, items=len(units), pairable_items=sum(len(v) >= 2 for v in units.values()),
        annotations=sum(len(v) for v in units.values()), annotators=annotators,
        alpha=alpha_nominal(units), alpha_ci=bootstrap_alpha(units, reps=reps, seed=seed),
        kappa=kappas, disagreements=disagreements)


def agreement(corpus: Corpus, *, reps: int = 1000, seed: int = 0,
              wait_seconds: float | None = None) -> dict[str, ProjectAgreement]:
    """Agreement of every project that has annotator labels in ``corpus``, by project name."""
    out = {}
    with corpus.open(write=False, wait_seconds=wait_seconds, purpose="trb-annotate agreement") as con:
        units = {name: latest_labels(con, *spec) for name, spec in PROJECTS.items()}
    for name, u in units.items():
        if u:
            out[name] = project_agreement(name, u, reps=reps, seed=seed)
    return out
