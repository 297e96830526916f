"""Track 97 — plan mass: p(r'.planned_next) under do(r'), per Track 1 item whose r' plans an action of the step."""

from __future__ import annotations

from trb.stats import mean_by_session
from trb.tracks.base import Metric
from trb.tracks.track1 import track1_items


class PlanMass:
    id = "97"
    name = "plan mass"
    section = "toy: not a spec track"
    needs: tuple = ()
    metrics = (Metric("plan-mass", "97", "plan_mass", "Track 97 — plan mass",
                      "mean p(r'.planned_next) under do(r'), by session", bounds=(0.0, 1.0)),)
    columns: tuple = ()
    report = "trb_toy_extensions.track:SECTION"

    def _items(self, release, split):
        return [i for i in track1_items(release, split)
                if i.context.action_space and i.r_prime.get("planned_next") in i.context.action_space]

    def count(self, release, split, **_):
        return len(self._items(release, split))

    def items(self, release, split, **_):
        return iter(self._items(release, split))

    def score(self, adapter, items, timer=None, progress=None, **_):
        items = list(items)
        dists = adapter.act_many([i.context for i in items], [i.r_prime for i in items])
        rows = [{"track": self.id, "metric": "plan_mass", "item_id": i.item_id, "session_id": i.session_id, "t": i.t,
                 "split": i.split, "context_id": i.context_id, "score": float(d[i.r_prime["planned_next"]])}
                for i, d in zip(items, dists)]
        if progress is not None:
            progress(len(items))
        return rows, {"scored": len(rows)}

    def aggregate(self, metric, columns, *, n_resamples, confidence, seed):
        return mean_by_session(columns["score"].astype(float), columns["session_id"], n_resamples=n_resamples,
                               confidence=confidence, seed=seed)


class PlanMassReport:
    key = "plan_mass"
    position = 40

    def build(self, ctx):
        return {"baselines": sorted({b for b, _ in ctx.latest})}

    def markdown(self, report, **_):
        return ["## Track 97 — plan mass (a plug-in's own section)", "",
                f"Runs of: {', '.join(report['plan_mass']['baselines'])}.", ""]

    def html(self, report, **_):
        return "<h2>Track 97 — plan mass (a plug-in's own section)</h2>"


TRACK = PlanMass()
SECTION = PlanMassReport()
