"""``trb-annotate agreement``: how far annotators agree, per project.

For each project (``caused_by_self``: the attribution label; ``continuation``: the chosen
action), over the latest revision of each annotator's label on each item:

- Krippendorff's α, computed by the ``krippendorff`` package, at a chosen level of
  measurement: ``nominal`` (every disagreement counts the same; the default) or ``ordinal``
  for ``caused_by_self``, whose labels have a stated order ``self < unsure < exogenous``
  (:data:`ATTRIBUTION_ORDER`: "unsure" lies between the two answers, so self/exogenous is a
  larger disagreement than self/unsure). Actions have no order: ``continuation`` is always
  nominal. ``unsure`` may be a category (the default) or missing: dropped before anything
  is computed, as releases do (an adjudicated "unsure" leaves an item unlabelled);
- a 95 % percentile bootstrap CI of α that resamples **sessions**, not items: the items of one
  session are drawn together (a cluster bootstrap, seeded). A resample whose α is undefined
  (one category only, so no expected disagreement) is counted and left out of the interval.
  Each resample's α comes from the sessions' coincidence matrices, which reproduce the
  package's α exactly on the full data;
- Cohen's κ for every pair of annotators, over the items both labelled;
- the items on which annotators disagree, with their votes (as cast, whatever the treatment
  of ``unsure``: this is a work list, not a statistic).

- independence, per annotator: how many of their labels (latest revisions) were given after
  another annotator's label on the same item already existed (its first revision is older).
  In Label Studio Community every user can open any task from the Data Manager and see the
  others' answers; timestamps cannot prove a label was copied, but they bound how many labels
  could have been, so that a reader can judge independence (:func:`label_independence`).

Question 2 of ``caused_by_self`` (did the agent endorse the outcome?) is a project of its own here,
``endorsed``: α, κ and the disagreements over the labels that answered it (``endorsed`` / ``not endorsed``;
a label of "something outside" or "can't tell" has no endorsement and is not counted).

Only annotators' labels count. Labels on items of example sessions (source kind ``illustrative``, such as the
packaged 7f3a reconstruction with its invented annotators: :data:`annotate.tasks.EXAMPLE_SOURCE_KINDS`), whoever
gave them, are kept apart from α, κ, the disagreements, the independence counts and adjudication's votes (push
never makes tasks of them; an older toolkit did); each result says how many it left out.

Written continuations (open-ended steps) carry no category and are left out of α and κ (not
of independence). Nothing here needs Label Studio: it reads the corpus store only.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from itertools import combinations

import numpy as np

from annotate.tasks import example_items_sql
from corpus.errors import UsageError
from corpus.store import Corpus

__all__ = ["PROJECTS", "LEVELS", "UNSURE_TREATMENTS", "ATTRIBUTION_ORDER", "Project", "PairKappa",
           "ProjectAgreement", "AlphaBootstrap", "agreement", "project_agreement", "latest_labels", "item_sessions",
           "drop_unsure", "krippendorff_alpha", "bootstrap_alpha", "cohen_kappa", "Independence", "label_independence",
           "example_label_count", "ENDORSED"]

LEVELS = ("nominal", "ordinal")
UNSURE_TREATMENTS = ("category", "missing")
UNSURE = "unsure"
#: The order of the caused_by_self labels for ordinal α.
ATTRIBUTION_ORDER = ("self", UNSURE, "exogenous")


@dataclass(frozen=True)
class Project:
    target_kind: str  # annotations' target kind
    value_type: str  # annotations' value type
    column: str  # the annotations column holding the category
    table: str  # the corpus table of the items, which names their session
    id_column: str
    order: tuple[str, ...] | None  # the labels' order (ordinal α), None when they have none


#: The category of question 2 (endorsement) as the annotators' labels store it: a SQL expression.
ENDORSED = "CASE endorsed WHEN true THEN 'endorsed' WHEN false THEN 'not endorsed' END"
PROJECTS = {"caused_by_self": Project("attribution", "attribution", "label", "attribution", "item_id",
                                      ATTRIBUTION_ORDER),
            "endorsed": Project("attribution", "attribution", ENDORSED, "attribution", "item_id", None),
            "continuation": Project("counterfactual", "action", "action", "counterfactuals", "cf_id", None)}
_ITEMS = {"attribution": ("attribution", "item_id"), "counterfactual": ("counterfactuals", "cf_id")}

Units = Mapping[str, Mapping[str, str]]  # item id -> {annotator: category}


@dataclass
class PairKappa:
    a: str
    b: str
    n: int  # items both labelled
    kappa: float | None  # None when undefined (both gave one same category throughout)


@dataclass(frozen=True)
class AlphaBootstrap:
    ci: tuple[float, float] | None  # percentile interval over the defined resamples; None when none
    resamples: int  # resamples drawn (0 when fewer than two sessions hold pairable items)
    undefined: int  # resamples whose α is undefined (one category only): left out of the interval
    sessions: int  # sessions (clusters) resampled: those holding an item with two or more labels
    alpha: float | None  # α of the full data by the resamples' arithmetic: the package's α, to rounding


@dataclass(frozen=True)
class Independence:
    annotator: str
    labels: int  # items this annotator labelled (latest revision each)
    after_another: int  # of those, labels given after another annotator's label on the item existed


@dataclass
class ProjectAgreement:
    project: str
    level: str  # level of measurement α was computed at
    order: list[str] | None  # the category order used (ordinal), else None
    unsure: str | None  # "category" or "missing" (caused_by_self), None where there is no "unsure"
    unsure_dropped: int  # "unsure" labels dropped as missing
    items: int  # items with a label
    pairable_items: int  # items with two or more labels (what α uses)
    annotations: int
    annotators: list[str]
    alpha: float | None
    alpha_ci: tuple[float, float] | None
    sessions: int  # sessions holding pairable items: what the bootstrap resamples
    resamples: int
    undefined_resamples: int  # resamples with α undefined, left out of the CI
    kappa: list[PairKappa] = field(default_factory=list)
    disagreements: list[dict] = field(default_factory=list)  # {target_id, votes: {value: count}}
    independence: list[Independence] = field(default_factory=list)  # per annotator
    example_labels: int = 0  # labels on items of example sessions (source kind illustrative): left out of it all

    def as_dict(self) -> dict:
        d = asdict(self)
        d["alpha_ci"] = list(self.alpha_ci) if self.alpha_ci else None
        return d


def latest_labels(con, target_kind: str, value_type: str, column: str, *,
                  examples: bool = False) -> dict[str, dict[str, str]]:
    """target id -> {annotator: category}, the latest revision of each annotator's ``annotator``-role label
    (``column``: a column or SQL expression; a latest revision whose category is NULL counts as no label).
    Labels on example items (:func:`example_items_sql`) are left out unless ``examples``."""
    keep = "" if examples else f"AND target_id NOT IN ({example_items_sql(target_kind)})"
    rows = con.execute(f"""
        SELECT target_id, annotator_id, category FROM (
            SELECT target_id, annotator_id, {column} AS category FROM store.annotations
            WHERE target_kind = ? AND value_type = ? AND role = 'annotator' {keep}
            QUALIFY row_number() OVER (PARTITION BY target_id, annotator_id
                                       ORDER BY revision DESC, created_at DESC, annotation_id DESC) = 1)
        WHERE category IS NOT NULL
        ORDER BY target_id, annotator_id""", [target_kind, value_type]).fetchall()
    out: dict[str, dict[str, str]] = defaultdict(dict)
    for target, who, value in rows:
        out[target][who] = value
    return dict(out)


def example_label_count(con, target_kind: str, value_type: str, column: str) -> int:
    """How many (item, annotator) labels :func:`latest_labels` leaves out as example labels."""
    examples = latest_labels(con, target_kind, value_type, column, examples=True)
    real = latest_labels(con, target_kind, value_type, column)
    return sum(len(v) for v in examples.values()) - sum(len(v) for v in real.values())


def label_independence(con, target_kind: str) -> list[Independence]:
    """Per annotator: labels given, and how many after another annotator's label on the same item existed.

    A label's time is its latest revision's ``created_at``; another annotator's label existed from its
    first revision's. Every value type counts (written continuations too); roles other than
    ``annotator`` (adjudications, reviews) are not labels here, nor are labels on example items.
    """
    rows = con.execute(f"""
        WITH labels AS (
            SELECT target_id, annotator_id, created_at::TIMESTAMPTZ AS ts, revision, annotation_id
            FROM store.annotations WHERE target_kind = ? AND role = 'annotator'
              AND target_id NOT IN ({example_items_sql(target_kind)})),
        latest AS (
            SELECT target_id, annotator_id, ts FROM labels
            QUALIFY row_number() OVER (PARTITION BY target_id, annotator_id
                                       ORDER BY revision DESC, ts DESC, annotation_id DESC) = 1),
        first AS (SELECT target_id, annotator_id, min(ts) AS first_at FROM labels GROUP BY ALL)
        SELECT l.annotator_id, count(*),
               count(*) FILTER (WHERE EXISTS (SELECT 1 FROM first f WHERE f.target_id = l.target_id
                                              AND f.annotator_id <> l.annotator_id AND f.first_at < l.ts))
        FROM latest l GROUP BY 1 ORDER BY 1""", [target_kind]).fetchall()
    return [Independence(who, int(n), int(after)) for who, n, after in rows]


def item_sessions(con, project: Project) -> dict[str, str]:
    """item id -> session id, for the project's items that carry an annotation."""
    rows = con.execute(f"""
        SELECT {project.id_column}, session_id FROM store.{project.table}
        WHERE {project.id_column} IN (SELECT target_id FROM store.annotations WHERE target_kind = ?)""",
                       [project.target_kind]).fetchall()
    return dict(rows)


def drop_unsure(units: Units) -> tuple[dict[str, dict[str, str]], int]:
    """The units with every "unsure" label removed (items left with none dropped), and how many were removed."""
    out, dropped = {}, 0
    for item, labels in units.items():
        kept = {a: v for a, v in labels.items() if v != UNSURE}
        dropped += len(labels) - len(kept)
        if kept:
            out[item] = kept
    return out, dropped


def _pairable(units: Units) -> dict[str, Mapping[str, str]]:
    return {k: v for k, v in units.items() if len(v) >= 2}


def _domain(units: Units, level: str, order: tuple[str, ...] | None) -> list[str]:
    """The categories, coded by position: the stated order (ordinal), else the observed ones sorted."""
    if level not in LEVELS:
        raise UsageError(f"level must be one of {', '.join(LEVELS)}, not {level!r}")
    seen = {v for labels in units.values() for v in labels.values()}
    if level == "nominal":
        return sorted(seen)
    if order is None:
        raise UsageError("ordinal α needs the categories' order")
    if seen - set(order):
        raise UsageError(f"labels {sorted(seen - set(order))} are not in the order {' < '.join(order)}")
    return list(order)


def _value_counts(units: Units, domain: list[str]) -> np.ndarray:
    """items × categories: how many annotators gave each category to each item."""
    code = {c: i for i, c in enumerate(domain)}
    out = np.zeros((len(units), len(domain)))
    for j, labels in enumerate(units.values()):
        for v in labels.values():
            out[j, code[v]] += 1
    return out


def krippendorff_alpha(units: Units, *, level: str = "nominal", order: tuple[str, ...] | None = None) -> float | None:
    """Krippendorff's α by the ``krippendorff`` package at ``level`` (with the categories' ``order`` when
    ordinal); None when undefined (no item with two labels, or a single category among them)."""
    import krippendorff

    pairable = _pairable(units)
    domain = _domain(pairable, level, order)
    if not pairable or len({v for labels in pairable.values() for v in labels.values()}) < 2:
        return None
    return float(krippendorff.alpha(value_counts=_value_counts(pairable, domain), value_domain=domain,
                                    level_of_measurement=level))


def _coincidences(units: Units, domain: list[str]) -> np.ndarray:
    """Per item, its coincidence matrix (items × V × V): o_ck = pairs (c, k) / (m_u − 1)."""
    counts = _value_counts(units, domain)
    m = counts.sum(axis=1)
    pairs = counts[:, :, None] * counts[:, None, :] - counts[:, :, None] * np.eye(len(domain))
    return pairs / (m - 1)[:, None, None]


def _alpha_from_coincidence(o: np.ndarray, level: str) -> np.ndarray:
    """α from summed coincidence matrices (… × V × V, categories in order), NaN where undefined:
    1 − (n − 1) Σ o_ck δ²_ck / Σ n_c n_k δ²_ck, with δ² = [c ≠ k] (nominal) or, ordinal,
    (Σ_{g=c..k} n_g − (n_c + n_k)/2)² = (M_k − M_c)² with M_g = Σ_{h≤g} n_h − n_g/2."""
    n_c = o.sum(axis=-1)
    n = n_c.sum(axis=-1)
    if level == "ordinal":
        mid = np.cumsum(n_c, axis=-1) - n_c / 2
        d = (mid[..., :, None] - mid[..., None, :]) ** 2
    else:
        d = 1 - np.eye(o.shape[-1])
    observed = (o * d).sum(axis=(-1, -2))
    expected = (n_c[..., :, None] * n_c[..., None, :] * d).sum(axis=(-1, -2))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(expected > 0, 1 - (n - 1) * observed / expected, np.nan)


def bootstrap_alpha(units: Units, sessions: Mapping[str, str] | None = None, *, level: str = "nominal",
                    order: tuple[str, ...] | None = None, reps: int = 1000, seed: int = 0,
                    ci_level: float = 0.95) -> AlphaBootstrap:
    """Percentile CI of α from ``reps`` cluster-bootstrap resamples of the sessions.

    ``sessions`` maps item id -> session id (None, or an item it does not name: the item is its
    own cluster). Only sessions holding an item with two or more labels are resampled. The
    sessions are taken in sorted order and resample r draws ``S`` of them with replacement by
    ``numpy.random.default_rng(seed).integers(0, S, size=(reps, S))[r]`` (drawn in blocks of
    rows; the same stream). A resample's α is that of the drawn sessions' items pooled, a
    session drawn twice counting twice.
    """
    pairable = _pairable(units)
    domain = _domain(pairable, level, order)
    sessions = sessions or {}
    keys = sorted({sessions.get(item, f"item:{item}") for item in pairable})
    if not keys:
        return AlphaBootstrap(None, 0, 0, 0, None)
    at = {k: i for i, k in enumerate(keys)}
    per_item = _coincidences(pairable, domain).reshape(len(pairable), -1)
    per_session = np.zeros((len(keys), per_item.shape[1]))
    np.add.at(per_session, [at[sessions.get(item, f"item:{item}")] for item in pairable], per_item)
    s, v = len(keys), len(domain)
    full = float(_alpha_from_coincidence(per_session.sum(axis=0).reshape(v, v), level))
    full = None if np.isnan(full) else full
    if s < 2 or reps < 1:
        return AlphaBootstrap(None, 0, 0, s, full)
    rng = np.random.default_rng(seed)
    alphas = []
    for start in range(0, reps, 200):  # a block of resamples: (block × sessions) weights @ (sessions × V²)
        k = min(200, reps - start)
        idx = rng.integers(0, s, size=(k, s))
        w = np.bincount((idx + s * np.arange(k)[:, None]).ravel(), minlength=k * s).reshape(k, s)
        alphas.append(_alpha_from_coincidence((w @ per_session).reshape(k, v, v), level))
    a = np.concatenate(alphas)
    undefined = int(np.isnan(a).sum())
    a = a[~np.isnan(a)]
    if not len(a):
        return AlphaBootstrap(None, reps, undefined, s, full)
    tail = (1 - ci_level) / 2 * 100
    return AlphaBootstrap((float(np.percentile(a, tail)), float(np.percentile(a, 100 - tail))), reps, undefined, s,
                          full)


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


def project_agreement(name: str, units: Units, sessions: Mapping[str, str] | None = None, *,
                      level: str = "nominal", order: tuple[str, ...] | None = None, unsure: str | None = None,
                      reps: int = 1000, seed: int = 0) -> ProjectAgreement:
    """Agreement of one project's ``units``; ``unsure`` "missing" drops "unsure" labels first (None or
    "category": kept). ``sessions`` (item -> session) are the bootstrap's clusters."""
    if unsure is not None and unsure not in UNSURE_TREATMENTS:
        raise UsageError(f"unsure must be one of {', '.join(UNSURE_TREATMENTS)}, not {unsure!r}")
    disagreements = [{"target_id": t, "votes": dict(sorted(Counter(labels.values()).items()))}
                     for t, labels in units.items() if len(set(labels.values())) > 1]
    dropped = 0
    if unsure == "missing":
        units, dropped = drop_unsure(units)
    annotators = sorted({a for labels in units.values() for a in labels})
    kappas = []
    for a, b in combinations(annotators, 2):
        both = [(labels[a], labels[b]) for labels in units.values() if a in labels and b in labels]
        if both:
            kappas.append(PairKappa(a, b, len(both), cohen_kappa([p[0] for p in both], [p[1] for p in both])))
    boot = bootstrap_alpha(units, sessions, level=level, order=order, reps=reps, seed=seed)
    return ProjectAgreement(
        project=name, level=level, order=list(order) if level == "ordinal" else None, unsure=unsure,
        unsure_dropped=dropped, items=len(units), pairable_items=sum(len(v) >= 2 for v in units.values()),
        annotations=sum(len(v) for v in units.values()), annotators=annotators,
        alpha=krippendorff_alpha(units, level=level, order=order), alpha_ci=boot.ci, sessions=boot.sessions,
        resamples=boot.resamples, undefined_resamples=boot.undefined, kappa=kappas, disagreements=disagreements)


def agreement(corpus: Corpus, *, level: str = "nominal", unsure: str = "category", reps: int = 1000, seed: int = 0,
              wait_seconds: float | None = None) -> dict[str, ProjectAgreement]:
    """Agreement of every project that has annotator labels in ``corpus``, by project name.

    ``level`` applies to the projects whose labels have an order (caused_by_self); the others are
    nominal, and each result says the level it used. ``unsure`` ("category" or "missing") applies
    to caused_by_self.
    """
    if level not in LEVELS:
        raise UsageError(f"--level must be one of {', '.join(LEVELS)}, not {level!r}")
    if unsure not in UNSURE_TREATMENTS:
        raise UsageError(f"--unsure must be one of {', '.join(UNSURE_TREATMENTS)}, not {unsure!r}")
    out = {}
    with corpus.open(write=False, wait_seconds=wait_seconds, purpose="trb-annotate agreement") as con:
        data = {name: (latest_labels(con, p.target_kind, p.value_type, p.column), item_sessions(con, p), p)
                for name, p in PROJECTS.items()}
        independence = {name: label_independence(con, p.target_kind) for name, p in PROJECTS.items()}
        examples = {name: example_label_count(con, p.target_kind, p.value_type, p.column)
                    for name, p in PROJECTS.items()}
    for name, (units, sessions, p) in data.items():
        if units:
            out[name] = project_agreement(name, units, sessions, level=level if p.order else "nominal",
                                          order=p.order, unsure=unsure if UNSURE in (p.order or ()) else None,
                                          reps=reps, seed=seed)
            out[name].independence = independence[name] if p.column != ENDORSED else []  # caused_by_self's
            out[name].example_labels = examples[name]
    return out
