"""A session's steps as a timeline: one row per step, attribution items and counterfactuals marked."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import DataTable

from corpus.browse import SessionDetail

__all__ = ["Timeline", "STATUS_MARK"]

#: How an attribution item's label status shows on the timeline.
STATUS_MARK = {"design_label_only": ("◇", "yellow"), "annotated": ("◆", "cyan"), "adjudicated": ("✔", "green")}


def _short(s: str | None, n: int) -> str:
    s = " ".join((s or "").split())
    return s if len(s) <= n else s[: n - 1] + "…"


class Timeline(DataTable):
    """Steps of one session; the cursor row is the selected step (its key is ``t``)."""

    DEFAULT_CSS = "Timeline { height: 1fr; }"

    def __init__(self, **kw):
        super().__init__(cursor_type="row", zebra_stripes=False, **kw)

    def on_mount(self) -> None:
        self.add_column("t", key="t")
        self.add_column("◆", key="items")
        self.add_column("cf", key="cf")
        self.add_column("action", key="action")
        self.add_column("outcome", key="outcome")

    def show(self, detail: SessionDetail, select_t: int | None = None) -> None:
        self.clear()
        for step in detail.steps:
            marks = Text()
            for item in detail.items_at(step.t):
                mark, style = STATUS_MARK[item.status]
                if item.disagreement and item.status != "adjudicated":
                    style = "bold red"
                marks.append(mark, style=style)
            n_cf = len(detail.counterfactuals.get(step.t, []))
            self.add_row(str(step.t), marks, str(n_cf) if n_cf else "", _short(step.action, 14),
                         _short(step.outcome, 40), key=str(step.t))
        if select_t is not None:
            self.select_step(select_t)

    def select_step(self, t: int) -> None:
        try:
            self.move_cursor(row=self.get_row_index(str(t)))
        except Exception:  # no such step: stay where we are
            pass

    @property
    def selected_t(self) -> int | None:
        if self.row_count == 0:
            return None
        key = self.coordinate_to_cell_key((self.cursor_row, 0)).row_key.value
        return int(key) if key is not None else None
