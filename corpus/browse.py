"""Reading a corpus the way a reviewer does: paged session lists, one session in full, labels per item.

Headless (the review TUI calls it; nothing here imports ``textual``). Every call opens
the corpus read-only for the one query it needs and closes it again, so a reviewer's
app never holds the corpus between keystrokes and other processes can write. Lists
page in DuckDB (``ORDER BY session_id LIMIT/OFFSET``); nothing loads the whole corpus.

Split of a session: a split is only fixed when a release is cut. Here a session's
split is the one the next release would give it: :func:`corpus.splits.subject_split`,
computed in DuckDB by :func:`corpus.splits.split_sql` (with the salt and fractions of
the latest release under ``<corpus>/releases/``, or the defaults when there is none);
subjects the latest release held out in ``eval`` stay there, and sessions of a
declared transfer context are ``transfer``. For a session already released this is
the split it has in the latest release.

Label status of an attribution item (as in :mod:`corpus.stats`): ``adjudicated`` if
it has a decision (:func:`corpus.labels.decide`: a reviewer's "unsure" or a withdrawn
label is no decision), ``annotated`` if it has any label but no decision, else
``design_label_only``. An item *has a disagreement* when two or more annotators'
latest ``annotator`` labels on it differ.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import orjson

from corpus.labels import UNDO_METHOD, WITHDRAWN_NOTE, Position, decide, decisions_sql
from corpus.splits import DEFAULT_SALT, split_sql
from corpus.store import Corpus
from schemas.release_format import SPLIT_FRACTIONS, SPLITS
from toolkit import strict_json

__all__ = [
    "LABEL_STATUSES",
    "item_is_withdrawn_sql",
    "standing_labels",
    "SessionFilter",
    "SessionRow",
    "SessionPage",
    "Slots",
    "StepView",
    "Counterfactual",
    "ItemLabel",
    "AttributionItem",
    "SessionDetail",
    "SplitRule",
    "split_rule",
    "facets",
    "list_sessions",
    "session_detail",
    "item_labels",
    "locate_item",
    "ItemContext",
    "item_contexts",
]

LABEL_STATUSES = ("design_label_only", "annotated", "adjudicated")
#: How long a read waits for a corpus another process is writing.
READ_WAIT_SECONDS = 10.0


# -- filters and rows ------------------------------------------------------------------------------

@dataclass(frozen=True)
class SessionFilter:
    """Which sessions to list. ``None``/empty means any.

    ``label_status`` keeps sessions with at least one attribution item in that status;
    ``has_disagreement`` keeps sessions with at least one item whose annotators disagree;
    ``search`` keeps sessions whose id, or the id of one of their attribution items or
    counterfactuals, contains it (ignoring case).
    """

    source_kind: str | None = None
    split: str | None = None
    context_id: str | None = None
    label_status: str | None = None
    has_disagreement: bool = False
    search: str = ""

    def __post_init__(self):
        if self.label_status is not None and self.label_status not in LABEL_STATUSES:
            raise ValueError(f"label_status must be one of {', '.join(LABEL_STATUSES)}, not {self.label_status!r}")


@dataclass(frozen=True)
class SessionRow:
    session_id: str
    source_kind: str
    split: str
    context_id: str
    n_steps: int
    n_items: int
    n_unlabelled: int  # attribution items with only their design label
    n_disagreements: int
    match_id: str | None = None  # the item or counterfactual id the search matched (None: the session id did)
    match_t: int | None = None  # its step


@dataclass(frozen=True)
class SessionPage:
    rows: list[SessionRow]
    offset: int
    limit: int
    total: int  # sessions matching the filter


@dataclass(frozen=True)
class Slots:
    """An r snapshot in its named schema slots."""

    goal: str | None
    planned_next: str | None
    caused_by_self: float | None
    confidence: float | None
    ext: dict | None

    def items(self) -> list[tuple[str, object]]:
        """(slot, value) for the four core slots, then each extension slot as ``ext.<name>``."""
        out: list[tuple[str, object]] = [("goal", self.goal), ("planned_next", self.planned_next),
                                         ("caused_by_self", self.caused_by_self), ("confidence", self.confidence)]
        out += [(f"ext.{k}", v) for k, v in sorted((self.ext or {}).items())]
        return out


@dataclass(frozen=True)
class Counterfactual:
    cf_id: str
    t: int
    r_prime: Slots
    origin: str
    paired_session_id: str | None
    adversarial: bool
    ood: bool
    author: str  # a person id, or generator name@version seed N
    phi_type: str | None  # distribution | text | None (Φ not yet collected)
    phi_probs: dict[str, float] | None
    phi_text: str | None
    phi_n: int | None


@dataclass(frozen=True)
class ItemLabel:
    annotation_id: str
    annotator_id: str
    role: str
    method: str | None
    label: str | None
    rationale: str | None
    created_at: str
    revision: int


@dataclass(frozen=True)
class AttributionItem:
    item_id: str
    t: int
    design_label: str
    endorsed: bool | None
    note: str | None
    status: str
    disagreement: bool
    labels: list[ItemLabel] = field(default_factory=list)
    decision: Position | None = None  # the label that stands (corpus.labels.decide); None: undecided


@dataclass(frozen=True)
class StepView:
    t: int
    observation: str
    r: Slots | None
    action: str
    action_space: list[str] | None
    outcome: str | None


@dataclass(frozen=True)
class SessionDetail:
    session_id: str
    source_kind: str
    collector: str | None
    subject_id: str
    context_id: str
    language: str | None
    split: str
    r_extensions: dict
    steps: list[StepView]
    items: list[AttributionItem]
    counterfactuals: dict[int, list[Counterfactual]]  # by step t

    def items_at(self, t: int) -> list[AttributionItem]:
        return [i for i in self.items if i.t == t]


# -- split ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SplitRule:
    """How sessions get a split here: salt, fractions, the release they come from (None: defaults)."""

    salt: str
    fractions: dict[str, float]
    release: str | None  # version of the latest release, if any
    release_dir: Path | None

    def describe(self) -> str:
        src = f"release {self.release}" if self.release else "defaults (no release yet)"
        return f"split as the next release would assign it (salt and fractions from {src})"


def split_rule(corpus: Corpus) -> SplitRule:
    """The split rule of the latest release under ``<corpus>/releases/``, or the defaults."""
    root = corpus.dir / "releases"
    best: tuple[tuple[int, ...], dict, Path] | None = None
    for m in root.glob("*/manifest.json") if root.is_dir() else []:
        try:
            man = strict_json.loads(m.read_bytes())  # a manifest is anyone's file: a loose one is skipped
            key = tuple(int(x) for x in man["version"].split("."))
        except (OSError, ValueError, KeyError):
            continue
        if best is None or key > best[0]:
            best = (key, man, m.parent)
    if best is None:
        return SplitRule(DEFAULT_SALT, dict(SPLIT_FRACTIONS), None, None)
    _, man, d = best
    return SplitRule(man.get("salt") or DEFAULT_SALT, man.get("split_fractions") or dict(SPLIT_FRACTIONS),
                     man["version"], d)


def _sql_str(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def _split_sql(rule: SplitRule, alias: str = "s") -> str:
    """A SQL expression for the split of session row ``alias`` (see the module docstring)."""
    pinned = ""
    if rule.release_dir is not None:
        files = sorted((rule.release_dir / "data" / "sessions").glob("*.parquet"))
        if files:
            lst = "[" + ", ".join(_sql_str(str(f)) for f in files) + "]"
            pinned = (f"WHEN {alias}.subject_id IN (SELECT subject_id FROM read_parquet({lst}) "
                      f"WHERE split = 'eval') THEN 'eval' ")
    return (f"CASE WHEN {alias}.context_id IN (SELECT context_id FROM store.transfer_contexts) THEN 'transfer' "
            f"{pinned}ELSE {split_sql(_sql_str(rule.salt), f'{alias}.subject_id', rule.fractions)} END")


# -- queries ----------------------------------------------------------------------------------------

def _item_state(page: str | None = None) -> str:
    """CTEs ``item_state`` (per attribution item: its status and whether its annotators disagree) and
    ``session_state``; with ``page`` (a temp table of session ids) only for those sessions."""
    items = f"SELECT item_id FROM store.attribution WHERE session_id IN (SELECT session_id FROM {page})"
    only_items = f" AND target_id IN ({items})" if page else ""
    only_sessions = f"WHERE a.session_id IN (SELECT session_id FROM {page})" if page else ""
    return f"""
    decided AS ({decisions_sql(where=only_items.removeprefix(" AND "))}),
    item_state AS (
        SELECT a.item_id, a.session_id,
               CASE WHEN bool_or(d.target_id IS NOT NULL) THEN 'adjudicated'
                    WHEN count(n.annotation_id) > 0 THEN 'annotated'
                    ELSE 'design_label_only' END AS status,
               coalesce(count(DISTINCT n.label) FILTER (WHERE n.role = 'annotator' AND n.latest) > 1
                        AND count(DISTINCT n.annotator_id) FILTER (WHERE n.role = 'annotator' AND n.latest) >= 2,
                        false) AS disagreement
        FROM store.attribution a
        LEFT JOIN (
            SELECT *, bool_or(latest AND {item_is_withdrawn_sql()}) OVER (PARTITION BY target_id, annotator_id, role)
                      AS withdrawn
            FROM (SELECT *, row_number() OVER (PARTITION BY target_id, annotator_id, role
                                               ORDER BY revision DESC, created_at DESC, annotation_id DESC) = 1 AS latest
                  FROM store.annotations WHERE target_kind = 'attribution'{only_items})
        ) n ON n.target_id = a.item_id AND NOT n.withdrawn
        LEFT JOIN decided d ON d.target_id = a.item_id
        {only_sessions}
        GROUP BY a.item_id, a.session_id
    ),
    session_state AS (
        SELECT session_id, count(*) AS n_items,
               count(*) FILTER (WHERE status = 'design_label_only') AS n_unlabelled,
               count(*) FILTER (WHERE disagreement) AS n_disagreements,
               list(DISTINCT status) AS statuses
        FROM item_state GROUP BY session_id
    )"""


def _open(corpus: Corpus, wait_seconds: float | None):
    return corpus.open(write=False, wait_seconds=READ_WAIT_SECONDS if wait_seconds is None else wait_seconds,
                       purpose="trb-review")


def facets(corpus: Corpus, *, wait_seconds: float | None = None) -> dict[str, list[str]]:
    """The values each filter can take: source kinds, splits, context ids, label statuses."""
    with _open(corpus, wait_seconds) as con:
        kinds = [r[0] for r in con.execute("SELECT DISTINCT source_kind FROM store.sessions ORDER BY 1").fetchall()]
        contexts = [r[0] for r in con.execute("SELECT DISTINCT context_id FROM store.sessions ORDER BY 1").fetchall()]
    return {"source_kind": kinds, "split": list(SPLITS), "context_id": contexts,
            "label_status": list(LABEL_STATUSES)}


def list_sessions(corpus: Corpus, flt: SessionFilter | None = None, *, offset: int = 0, limit: int = 50,
                  rule: SplitRule | None = None, wait_seconds: float | None = None) -> SessionPage:
    """One page of the sessions matching ``flt``, by session id, and how many match in all."""
    flt = flt or SessionFilter()
    rule = rule or split_rule(corpus)
    where, params = [], []
    for col, value in (("source_kind", flt.source_kind), ("context_id", flt.context_id), ("split", flt.split)):
        if value:
            where.append(f"x.{col} = ?")
            params.append(value)
    term = flt.search.strip().lower()
    if term:
        where.append("(contains(lower(x.session_id), ?) "
                     "OR x.session_id IN (SELECT session_id FROM store.attribution WHERE contains(lower(item_id), ?)) "
                     "OR x.session_id IN (SELECT session_id FROM store.counterfactuals WHERE contains(lower(cf_id), ?)))")
        params += [term, term, term]
    # the per-item state is computed over the whole corpus only when a filter needs it;
    # otherwise only for the sessions of the page
    needs_state = bool(flt.label_status or flt.has_disagreement)
    if flt.label_status:
        where.append("list_contains(coalesce(x.statuses, []), ?)")
        params.append(flt.label_status)
    if flt.has_disagreement:
        where.append("coalesce(x.n_disagreements, 0) > 0")
    base = f"""
        SELECT s.session_id, s.source_kind, {_split_sql(rule)} AS split, s.context_id, s.n_steps
               {', ss.n_disagreements, ss.statuses' if needs_state else ''}
        FROM store.sessions s {'LEFT JOIN session_state ss USING (session_id)' if needs_state else ''}"""
    if not flt.split:  # the split is only computed for the rows shown
        base = base.replace(f"{_split_sql(rule)} AS split", "NULL AS split")
    cond = f"WHERE {' AND '.join(where)}" if where else ""
    with_state = f"WITH {_item_state()}" if needs_state else ""
    with _open(corpus, wait_seconds) as con:
        # one pass gives the page and the total (a window count over every match, before the LIMIT)
        hits = con.execute(
            f"{with_state} SELECT x.session_id, count(*) OVER () FROM ({base}) x {cond} "
            f"ORDER BY x.session_id LIMIT {int(limit)} OFFSET {int(offset)}", params).fetchall()
        ids = [r[0] for r in hits]
        if hits:
            total = hits[0][1]
        else:  # past the last page: count on its own
            total = con.execute(f"{with_state} SELECT count(*) FROM ({base}) x {cond}", params).fetchone()[0]
        rows, counts = [], {}
        if ids:
            rows = con.execute(
                f"SELECT s.session_id, s.source_kind, {_split_sql(rule)}, s.context_id, s.n_steps "
                "FROM store.sessions s WHERE s.session_id IN (SELECT unnest(?)) ORDER BY s.session_id",
                [ids]).fetchall()
            con.execute("CREATE OR REPLACE TEMP TABLE page_ids AS SELECT unnest(?) AS session_id", [ids])
            page_state = _item_state("page_ids")
            counts = {sid: (n, un, dis) for sid, n, un, dis in con.execute(
                f"WITH {page_state} SELECT session_id, n_items, n_unlabelled, n_disagreements FROM session_state"
            ).fetchall()}
            matches = _inner_matches(con, term, [sid for sid in ids if term not in sid.lower()]) if term else {}
    out = [SessionRow(sid, kind, split, ctx, n_steps, *counts.get(sid, (0, 0, 0)), *matches.get(sid, (None, None)))
           for sid, kind, split, ctx, n_steps in rows]
    return SessionPage(out, offset, limit, total)


def _inner_matches(con, term: str, session_ids: list[str]) -> dict[str, tuple[str, int]]:
    """For sessions found through an item or counterfactual id: the first such id (by step, then id) and its step."""
    if not session_ids:
        return {}
    rows = con.execute(
        "SELECT session_id, id, t FROM ("
        "  SELECT session_id, item_id AS id, t FROM store.attribution WHERE contains(lower(item_id), ?)"
        "  UNION ALL SELECT session_id, cf_id, t FROM store.counterfactuals WHERE contains(lower(cf_id), ?)) "
        "WHERE session_id IN (SELECT unnest(?)) ORDER BY session_id, t, id", [term, term, session_ids]).fetchall()
    out: dict[str, tuple[str, int]] = {}
    for sid, id_, t in rows:
        out.setdefault(sid, (id_, t))
    return out


def _slots(row: tuple) -> Slots:
    goal, planned, cbs, conf, ext = row
    # not strict_json: the corpus store's own JSON column, written by the toolkit after ingest's strict read
    return Slots(goal, planned, cbs, conf, None if ext is None else orjson.loads(ext))


def _labels(con, item_ids: list[str]) -> dict[str, list[ItemLabel]]:
    out: dict[str, list[ItemLabel]] = {}
    if not item_ids:
        return out
    for r in con.execute(
            "SELECT target_id, annotation_id, annotator_id, role, method, label, rationale, created_at, revision "
            "FROM store.annotations WHERE target_kind = 'attribution' AND target_id IN (SELECT unnest(?)) "
            "ORDER BY target_id, created_at, annotation_id", [item_ids]).fetchall():
        out.setdefault(r[0], []).append(ItemLabel(*r[1:]))
    return out


def item_is_withdrawn_sql() -> str:
    """A condition on an annotations row: it is a reviewer's undo that withdrew the reviewer's label (as the
    latest revision, the reviewer holds no label on the item: it counts as never labelled)."""
    return (f"(role = 'reviewer' AND method = '{UNDO_METHOD}' AND coalesce(rationale, '') "
            f"LIKE '%{WITHDRAWN_NOTE}')")


def _withdrawn(lb: ItemLabel) -> bool:
    return lb.role == "reviewer" and lb.method == UNDO_METHOD and (lb.rationale or "").endswith(WITHDRAWN_NOTE)


def standing_labels(labels: list[ItemLabel]) -> list[ItemLabel]:
    """The labels without those of a reviewer whose latest revision withdrew their label (an undo of their first)."""
    latest: dict[tuple[str, str], ItemLabel] = {}
    for lb in labels:
        cur = latest.get((lb.annotator_id, lb.role))
        if cur is None or (lb.revision, lb.created_at, lb.annotation_id) > (cur.revision, cur.created_at, cur.annotation_id):
            latest[(lb.annotator_id, lb.role)] = lb
    gone = {k for k, lb in latest.items() if _withdrawn(lb)}
    return [lb for lb in labels if (lb.annotator_id, lb.role) not in gone]


def _status(labels: list[ItemLabel]) -> tuple[str, bool]:
    if decide(labels) is not None:
        status = "adjudicated"
    elif standing_labels(labels):
        status = "annotated"
    else:
        status = "design_label_only"
    latest: dict[str, ItemLabel] = {}
    for lb in labels:
        if lb.role != "annotator":
            continue
        cur = latest.get(lb.annotator_id)
        if cur is None or (lb.revision, lb.created_at, lb.annotation_id) > (cur.revision, cur.created_at, cur.annotation_id):
            latest[lb.annotator_id] = lb
    return status, len(latest) >= 2 and len({lb.label for lb in latest.values()}) > 1


def session_detail(corpus: Corpus, session_id: str, *, rule: SplitRule | None = None,
                   wait_seconds: float | None = None) -> SessionDetail | None:
    """One session in full: steps, attribution items with their labels, counterfactuals by step (None if absent)."""
    rule = rule or split_rule(corpus)
    with _open(corpus, wait_seconds) as con:
        head = con.execute(
            f"SELECT s.session_id, s.source_kind, s.collector, s.subject_id, s.context_id, s.language, "
            f"{_split_sql(rule)}, s.r_extensions FROM store.sessions s WHERE s.session_id = ?", [session_id]).fetchone()
        if head is None:
            return None
        steps = []
        for t, obs, has_r, *r, action, space, outcome in con.execute(
                "SELECT t, observation, has_r, r_goal, r_planned_next, r_caused_by_self, r_confidence, r_ext, "
                "action, action_space, outcome FROM store.steps WHERE session_id = ? ORDER BY t",
                [session_id]).fetchall():
            steps.append(StepView(t, obs, _slots(tuple(r)) if has_r else None, action, space, outcome))
        attr = con.execute("SELECT item_id, t, design_label, endorsed, note FROM store.attribution "
                           "WHERE session_id = ? ORDER BY t, item_id", [session_id]).fetchall()
        labels = _labels(con, [a[0] for a in attr])
        cfs: dict[int, list[Counterfactual]] = {}
        for r in con.execute(
                "SELECT cf_id, t, rp_goal, rp_planned_next, rp_caused_by_self, rp_confidence, rp_ext, origin, "
                "paired_session_id, adversarial, ood, author_person, generator_name, generator_version, "
                "generator_seed, phi_type, phi_probs, phi_text, phi_n FROM store.counterfactuals "
                "WHERE session_id = ? ORDER BY t, cf_id", [session_id]).fetchall():
            (cf_id, t, *rp), rest = r[:7], r[7:]
            origin, paired, adv, ood, person, gname, gver, gseed, ptype, probs, ptext, pn = rest
            author = person if person is not None else f"{gname}@{gver} seed {gseed}"
            cfs.setdefault(t, []).append(Counterfactual(
                cf_id, t, _slots(tuple(rp)), origin, paired, bool(adv), bool(ood), author, ptype,
                # not strict_json: the corpus store's own JSON column, written by the toolkit after ingest's strict read
                None if probs is None else orjson.loads(probs), ptext, pn))
    items = []
    for item_id, t, design, endorsed, note in attr:
        lbs = labels.get(item_id, [])
        status, dis = _status(lbs)
        items.append(AttributionItem(item_id, t, design, endorsed, note, status, dis, lbs, decide(lbs)))
    sid, kind, collector, subject, ctx, lang, split, rext = head
    # not strict_json: the corpus store's own JSON column, written by the toolkit after ingest's strict read
    return SessionDetail(sid, kind, collector, subject, ctx, lang, split, orjson.loads(rext) if rext else {},
                         steps, items, cfs)


def item_labels(corpus: Corpus, item_id: str, *, wait_seconds: float | None = None) -> list[ItemLabel]:
    """Every label on attribution item ``item_id``, oldest first."""
    with _open(corpus, wait_seconds) as con:
        return _labels(con, [item_id]).get(item_id, [])


def locate_item(corpus: Corpus, target_kind: str, target_id: str, *,
                wait_seconds: float | None = None) -> tuple[str, int] | None:
    """(session_id, t) of an attribution item or counterfactual, or None if the corpus has no such item."""
    table, key = {"attribution": ("attribution", "item_id"), "counterfactual": ("counterfactuals", "cf_id")}[target_kind]
    with _open(corpus, wait_seconds) as con:
        row = con.execute(f"SELECT session_id, t FROM store.{table} WHERE {key} = ?", [target_id]).fetchone()
    return None if row is None else (row[0], row[1])


@dataclass(frozen=True)
class ItemContext:
    """Where an attribution item sits: its session and step, what the agent did there, its design label."""

    item_id: str
    session_id: str
    t: int
    design_label: str
    action: str | None
    outcome: str | None


def item_contexts(corpus: Corpus, item_ids: list[str], *, wait_seconds: float | None = None) -> dict[str, ItemContext]:
    """Each attribution item's :class:`ItemContext`, by id (ids the corpus lacks are left out)."""
    if not item_ids:
        return {}
    with _open(corpus, wait_seconds) as con:
        rows = con.execute(
            "SELECT a.item_id, a.session_id, a.t, a.design_label, st.action, st.outcome FROM store.attribution a "
            "LEFT JOIN store.steps st ON st.session_id = a.session_id AND st.t = a.t "
            "WHERE a.item_id IN (SELECT unnest(?))", [list(item_ids)]).fetchall()
    return {r[0]: ItemContext(*r) for r in rows}
