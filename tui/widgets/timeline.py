"""A session's steps as a timeline: one row per step, attribution items and counterfactuals marked."""

from __future__ import annotations

from rich.text import Text
from textual.binding import Binding

from corpus.browse import SessionDetail
from tui.widgets.fit_table import Col, FitTable

__all__ = ["Timeline", "STATUS_MARK"]

#: How an attribution item's label status shows on the timeline.
STATUS_MARK = {"design_label_only": ("◇", "yellow"), "annotated": ("◆", "cyan"), "adjudicated": ("✔", "green")}

#: The footer's group of the detail-scrolling keys.
DETAIL_KEYS = Binding.Group("Detail")

_COLUMNS = (Col("t", "t"), Col("items", "◆"), Col("cf", "cf"), Col("action", "action", flex=True, min=6),
            Col("outcome", "outcome", flex=True, min=8))


def _one_line(s: str | None) -> str:
    return " ".join((s or "").split())


class Timeline(FitTable):
    """Steps of one session; the cursor row is the selected step (its key is ``t``)."""

    DEFAULT_CSS = "Timeline { height: 1fr; }"
    # PgDn/PgUp scroll the step's detail beside the timeline (the screen's action), not the timeline
    BINDINGS = [Binding("pagedown", "screen.scroll_detail(1)", "detail down", key_display="PgDn", group=DETAIL_KEYS),
                Binding("pageup", "screen.scroll_detail(-1)", "detail up", key_display="PgUp", group=DETAIL_KEYS)]

    def __init__(self, **kw):
        super().__init__(_COLUMNS, zebra_stripes=False, **kw)

    def show(self, detail: SessionDetail, select_t: int | None = None) -> None:
        rows = []
        for step in detail.steps:
            marks = Text()
            for item in detail.items_at(step.t):
                mark, style = STATUS_MARK[item.status]
                if item.disagreement and item.status != "adjudicated":
                    style = "bold red"
                marks.append(mark, style=style)
            n_cf = len(detail.counterfactuals.get(step.t, []))
            rows.append((str(step.t), [str(step.t), marks, str(n_cf) if n_cf else "", _one_line(step.action),
                                       _one_line(step.outcome)]))
        self.fill(rows, keep=None if select_t is None else str(select_t))

    def select_step(self, t: int) -> None:
        try:
            self.move_cursor(row=self.get_row_index(str(t)))
        except Exception:  # no such step: stay where we are
            pass

    @property
    def selected_t(self) -> int | None:
        key = self.cursor_key()
        return int(key) if key is not None else None
