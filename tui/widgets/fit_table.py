"""A row table whose columns fit the terminal: full content where there is room, cut only where there is none.

Each column has its content's width (its longest cell or its title). When a row does not
fit, cells given in two forms (:class:`Alt`: a figure with its item count, and the figure
alone) take their short form, a whole column at a time; then columns marked droppable are
hidden (the least needed first); then the *flexible* columns (free text: contexts, outcomes,
labels) give up width, widest first, down to their minimum, and only those are cut (with
``…``); past that the table scrolls sideways. The widths are worked out again on every resize and every new set of
rows, and the cursor stays on the row it was on.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rich.cells import cell_len
from rich.text import Text
from textual.widgets import DataTable

__all__ = ["Alt", "Col", "FitTable", "fit_widths"]


@dataclass(frozen=True)
class Col:
    """One column: ``key``, title ``label``; ``drop`` > 0 columns are hidden when the row does not fit
    (highest ``drop`` first); then ``flex`` columns are cut (never below ``min``)."""

    key: str
    label: str
    flex: bool = False
    min: int = 6
    drop: int = 0


@dataclass(frozen=True)
class Alt:
    """A cell in two forms: ``long`` where its column has room, ``short`` (never cut) where it has not."""

    long: str
    short: str

    def __str__(self) -> str:
        return self.long


def _short(cell):
    return cell.short if isinstance(cell, Alt) else cell


def _len(cell) -> int:
    return max((cell_len(line) for line in str(cell.plain if isinstance(cell, Text) else cell).split("\n")), default=0)


def fit_widths(specs: Sequence[Col], rows: Iterable[Sequence], room: int, padding: int = 1) -> dict[str, int]:
    """Column widths for ``rows`` (cells in ``specs`` order) in ``room`` cells, by key; hidden columns are absent."""
    rows = list(rows)
    natural = {}
    for i, c in enumerate(specs):
        natural[c.key] = max([_len(c.label), *(_len(r[i]) for r in rows if i < len(r))], default=1) or 1
    short = {}  # the width of a column with two-form cells when every one of them takes its short form
    for i, c in enumerate(specs):
        if any(i < len(r) and isinstance(r[i], Alt) for r in rows):
            short[c.key] = max([_len(c.label), *(_len(_short(r[i])) for r in rows if i < len(r))], default=1) or 1
    shown = list(specs)
    while True:
        widths = {c.key: natural[c.key] for c in shown}
        avail = room - 2 * padding * len(shown)
        over = sum(widths.values()) - avail
        if over > 0:  # short forms before anything is hidden or cut
            for c in shown:
                if c.key in short:
                    over -= widths[c.key] - short[c.key]
                    widths[c.key] = short[c.key]
        flex = [c for c in shown if c.flex]
        droppable = [c for c in shown if c.drop > 0]
        if over > 0 and droppable:  # hide the least needed columns before cutting any text
            worst = max(droppable, key=lambda c: (c.drop, shown.index(c)))
            shown.remove(worst)
            continue
        while over > 0:  # the widest flexible column gives up one cell at a time
            cands = [c for c in flex if widths[c.key] > min(c.min, natural[c.key])]
            if not cands:
                break  # no more room to make: the table scrolls sideways
            widest = max(cands, key=lambda c: widths[c.key])
            widths[widest.key] -= 1
            over -= 1
        return widths


def _cut(cell, width: int):
    if isinstance(cell, Alt):
        cell = cell.long if _len(cell.long) <= width else cell.short
    if _len(cell) <= width:
        return cell
    if isinstance(cell, Text):
        t = cell.copy()
        t.truncate(width, overflow="ellipsis")
        return t
    s = str(cell)
    while cell_len(s) > width - 1:
        s = s[:-1]
    return s + "…"


class FitTable(DataTable):
    """A :class:`DataTable` (row cursor) of :class:`Col` columns; :meth:`fill` sets its rows."""

    def __init__(self, columns: Sequence[Col], *, empty_enter: str = "nothing to open: the list is empty", **kw) -> None:
        kw.setdefault("cursor_type", "row")
        super().__init__(**kw)
        self.empty_enter = empty_enter  # what Enter on an empty table says
        self.specs = list(columns)
        self._fit_rows: list[tuple[str, list]] = []
        self._fit_widths: dict[str, int] | None = None

    def on_mount(self) -> None:
        self._layout(None)

    def on_resize(self) -> None:
        self._layout(self.cursor_key())

    def set_columns(self, columns: Sequence[Col]) -> None:
        """Other columns (the rows must follow with :meth:`fill`)."""
        self.specs = list(columns)
        self._fit_widths = None
        self._fit_rows = []
        self._layout(None)

    def cursor_key(self) -> str | None:
        """The key of the row under the cursor (None when the table is empty)."""
        if self.row_count == 0:
            return None
        return self.coordinate_to_cell_key((self.cursor_row, 0)).row_key.value

    def fill(self, rows: Iterable[tuple[str, Sequence]], *, keep: str | None = None) -> None:
        """Replace the rows (``(key, cells)`` with cells in column order). The cursor goes to row ``keep`` if
        given and present, else stays on the row it was on, else keeps its position (the row after a removed one)."""
        current = self.cursor_key()
        index = self.cursor_row
        self._fit_rows = [(k, list(cells)) for k, cells in rows]
        keys = [k for k, _ in self._fit_rows]
        target = keep if keep in keys else current if current in keys else None
        self._layout(target, index)

    def _room(self) -> int:
        width = self.size.width or self.app.size.width
        return width - self.styles.scrollbar_size_vertical

    def _layout(self, target: str | None, index: int | None = None) -> None:
        if not self.is_mounted:
            return
        index = self.cursor_row if index is None else index
        widths = fit_widths(self.specs, [c for _, c in self._fit_rows], self._room(), self.cell_padding)
        if widths != self._fit_widths:
            self.clear(columns=True)
            for c in self.specs:
                if c.key in widths:
                    self.add_column(c.label, key=c.key, width=widths[c.key])
            self._fit_widths = widths
        else:
            self.clear()
        shown = [i for i, c in enumerate(self.specs) if c.key in widths]
        # a column whose long forms do not all fit shows every two-form cell short: one form per column
        short = {i for i in shown if any(isinstance(cells[i], Alt) and _len(cells[i].long) > widths[self.specs[i].key]
                                         for _, cells in self._fit_rows if i < len(cells))}
        for key, cells in self._fit_rows:
            self.add_row(*(_cut(_short(cells[i]) if i in short else cells[i], widths[self.specs[i].key])
                           for i in shown), key=key)
        if not self._fit_rows:
            return
        if target is not None:
            self.move_cursor(row=self.get_row_index(target))
        else:
            self.move_cursor(row=min(max(index, 0), len(self._fit_rows) - 1))

    def action_select_cursor(self) -> None:
        if self.row_count == 0:
            cannot = getattr(self.app, "cannot", None)
            (cannot or self.app.notify)(self.empty_enter)
            return
        super().action_select_cursor()

    def shown_columns(self) -> list[str]:
        """The keys of the columns on screen (the others were dropped for room)."""
        return [c.key for c in self.specs if self._fit_widths and c.key in self._fit_widths]
