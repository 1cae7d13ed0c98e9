"""The browse table: a lazy model over SQLite. Rows arrive a page at a time (fetchMore, keyset paging); a row is a
few short columns, never image bytes, so tens of thousands of items scroll freely. The Run column of an open run holds
each item's primary score (evaluator/scoring/open_item.py), scored as its page arrives."""

from __future__ import annotations

from dataclasses import replace

from PySide6.QtCore import QAbstractTableModel, QModelIndex, Qt
from PySide6.QtGui import QBrush

from annotation import blind, browse
from annotation.item_kinds import ItemKind, kind_of
from db import item_query
from db.item_query import ItemFilter, ItemRow
from evaluator.analysis.plots import SHORT_L2
from evaluator.scoring import open_item
from gui.appearance import MUTED, PENDING, RIGHT, WRONG, colour
from gui.item_panel import RESULT_MARKS, score_colour

COLUMNS = ("Index", "Category", "L2", "Split", "Review", "QC", "Run", "Question")
PAGE = 200
_RESULT_COLOURS = {"right": RIGHT, "wrong": WRONG, "pending": PENDING, "unscored": MUTED}


class ItemTableModel(QAbstractTableModel):
    def __init__(self, ws, parent=None):
        super().__init__(parent)
        self.ws = ws
        self.benchmark = None
        self.filter = ItemFilter()
        self.review_filter: str | None = None
        self.qc_filter: str | None = None
        self.annotator = ""
        self.blind = False  # the session's blind mode and "reveal after my verdict" (Context keeps them in step)
        self.reveal_after_verdict = True
        self.sight = blind.Sight("", False, True, frozenset(), frozenset())
        self.rows: list[ItemRow] = []
        self.total = 0
        self.status: dict[int, browse.ReviewStatus] = {}
        self.qc: dict[int, browse.QCMark] = {}  # as the annotator may see them; _qc_marks: all
        self._qc_marks: dict[int, browse.QCMark] = {}
        self._row_of: dict[int, int] = {}
        self.open_run = False  # the listed run is open: its Run column holds scores (open_scores), not a result
        self.open_scores: dict[int, tuple[str, float | None]] = {}  # item id -> (text, primary score), paged in

    @property
    def kind(self) -> ItemKind | None:
        return kind_of(self.benchmark.kind) if self.benchmark is not None else None

    # -- queries
    def set_benchmark(self, benchmark, *, run_id: int | None = None) -> None:
        self.benchmark = benchmark
        self.filter = ItemFilter(run_id=run_id)
        self.review_filter = self.qc_filter = None
        self.reload()

    def set_filter(self, f: ItemFilter, *, review: str | None = None, qc: str | None = None) -> None:
        self.filter, self.review_filter, self.qc_filter = f, review, qc
        self.reload()

    @property
    def _benchmark_id(self) -> int:
        assert self.benchmark is not None  # set_benchmark comes before any read
        return int(self.benchmark.id)

    def reload(self, *, at_least: int = PAGE) -> None:
        """Query again; `at_least` rows are paged in at once (a refresh keeps what was scrolled to)."""
        self.beginResetModel()
        self.rows, self._row_of, self.total = [], {}, 0
        self.open_scores = {}
        run_id = self.filter.run_id
        self.open_run = run_id is not None and item_query.run_strategy(self.ws, run_id) == "open"
        if self.benchmark is not None:
            self._read_status()
            pairs = []
            if self.review_filter:
                pairs.append(browse.review_filter_ids(self.status, self.review_filter, self.annotator))
            if self.qc_filter:
                pairs.append(browse.qc_filter_ids(self.qc, self.qc_filter))
            if self.sight.blind and (self.qc_filter or self.filter.run_result):
                # Filtering by what is hidden would tell it: such filters list only items the annotator judged.
                pairs.append((self.sight.judged if self.sight.reveal_after_verdict else frozenset(), None))
            if self.filter.run_result:
                pairs.append((None, frozenset(i for r, i, _ in self.sight.hidden_passes if r == self.filter.run_id)))
            only, exclude = browse.combine(*pairs)
            self._query = replace(self.filter, only_ids=only, exclude_ids=exclude)
            self.total = item_query.count_items(self.ws, self._benchmark_id, self._query)
            if self.total:  # nothing matches: no page to look for (a rare filter would walk the benchmark)
                self._fetch(max(PAGE, at_least))
        self.endResetModel()

    def _read_status(self, *, qc: bool = True) -> None:
        """Review status, QC marks and the blind rule's sight, as this annotator may see them."""
        self.sight = blind.sight(
            self.ws,
            self.annotator,
            blind=self.blind,
            reveal_after_verdict=self.reveal_after_verdict,
            benchmark_id=self._benchmark_id,
        )
        self.status = browse.visible_status(browse.review_status(self.ws, self._benchmark_id), self.sight)
        if qc:
            self._qc_marks = browse.qc_marks(self.ws, self._benchmark_id)
        self.qc = browse.visible_qc(self._qc_marks, self.sight)

    def _fetch(self, n: int) -> list[ItemRow]:
        after = (self.rows[-1].position, self.rows[-1].id) if self.rows else None
        page = item_query.item_page(self.ws, self._benchmark_id, self._query, after=after, limit=n)
        for row in page:
            self._row_of[row.id] = len(self.rows)
            self.rows.append(row)
        self._score_open(page)
        return page

    def _score_open(self, page: list[ItemRow]) -> None:
        """An open run's primary score of each answered item of a page as it arrives (the page's passes only, never
        the run's): "VQA 67 %", or "answered" where no metric applies (no references: a live-arena question)."""
        if not self.open_run or self.filter.run_id is None:
            return
        answered = item_query.open_answers(self.ws, self.filter.run_id, [r.id for r in page if r.run_result != "none"])
        bench = self.benchmark  # its VQA rule (open_metrics.vqa_rule), as the report scores it
        for item_id, (response, references) in answered.items():
            scores = open_item.item_scores(
                response, references, bench.name if bench else None, bench.meta if bench else None
            )
            first = open_item.primary(scores, references)
            self.open_scores[item_id] = (
                (open_item.score_text(first, scores[first]), scores[first]) if first else ("answered", None)
            )

    def canFetchMore(self, parent=QModelIndex()) -> bool:
        return not parent.isValid() and self.benchmark is not None and len(self.rows) < self.total

    def fetchMore(self, parent=QModelIndex(), *, chunk: int = PAGE) -> None:
        if not self.canFetchMore(parent):
            return
        n = min(max(chunk, 1), self.total - len(self.rows))
        first = len(self.rows)
        self.beginInsertRows(QModelIndex(), first, first + n - 1)
        page = self._fetch(n)
        if len(page) < n:  # rows vanished meanwhile (another process deleted items): stop where the data ends
            self.total = len(self.rows)
        self.endInsertRows()

    def ensure_row(self, row: int) -> bool:
        """Fetch pages until `row` is loaded; False when the listing is shorter."""
        while row >= len(self.rows) and self.canFetchMore():
            self.fetchMore()
        return 0 <= row < len(self.rows)

    def row_of(self, item_id: int) -> int | None:
        return self._row_of.get(item_id)

    def row_of_item(self, item_id: int) -> int | None:
        """The item's row in the listing, paged in as far as it; None when the filters leave it out."""
        if self.benchmark is None:
            return None
        if item_id in self._row_of:
            return self._row_of[item_id]
        query = self._query
        only = frozenset({item_id}) if query.only_ids is None else query.only_ids & {item_id}
        return self._page_to(item_query.item_page(self.ws, self._benchmark_id, replace(query, only_ids=only), limit=1))

    def next_unreviewed_row(self, start: int) -> int | None:
        """The first row from `start` on whose item has no review status the annotator may see (blind: none of their
        own; else none by anyone). SQL finds it by index from where the annotator is, whatever the benchmark's size."""
        if self.benchmark is None:
            return None
        if start > 0 and not self.ensure_row(start - 1):
            return None
        after = (self.rows[start - 1].position, self.rows[start - 1].id) if start > 0 else None
        query = (
            replace(self._query, without_verdict_by=self.annotator)
            if self.sight.blind
            else replace(self._query, without_any_verdict=True)
        )
        return self._page_to(item_query.item_page(self.ws, self._benchmark_id, query, after=after, limit=1))

    def _page_to(self, found: list[ItemRow]) -> int | None:
        """Page the listing in up to the row found (in growing chunks: a far one costs a few queries, not hundreds)."""
        if not found:
            return None
        target = found[0]
        while target.id not in self._row_of and self.canFetchMore():
            if self.rows and (self.rows[-1].position, self.rows[-1].id) >= (target.position, target.id):
                break  # paged past it: it left the listing meanwhile
            self.fetchMore(chunk=max(PAGE, min(len(self.rows), 20 * PAGE)))
        return self._row_of.get(target.id)

    def find_row(self, start: int, step: int, predicate) -> int | None:
        """The first row from `start` in direction `step` whose item satisfies predicate(ItemRow); pages in."""
        r = start
        while True:
            if step > 0 and not self.ensure_row(r):
                return None
            if r < 0:
                return None
            if predicate(self.rows[r]):
                return r
            r += step

    def refresh_item(self, item_id: int) -> None:
        """Re-read the review status of one item (after a verdict) without reloading the listing: its own log rows
        and the blind rule asked for it alone, so a verdict costs the same in any benchmark."""
        if self.benchmark is None:
            return
        # A verdict may judge the item: what it reveals changes with it.
        self.sight = blind.resight(self.ws, self.sight, item_id)
        status = browse.visible_status({item_id: browse.item_review_status(self.ws, item_id)}, self.sight)
        self.status.pop(item_id, None)
        if status.get(item_id) and status[item_id].verdicts:
            self.status[item_id] = status[item_id]
        self.qc.pop(item_id, None)
        if item_id in self._qc_marks:
            self.qc.update(browse.visible_qc({item_id: self._qc_marks[item_id]}, self.sight))
        row = self._row_of.get(item_id)
        if row is not None:
            self.dataChanged.emit(self.index(row, 0), self.index(row, len(COLUMNS) - 1))

    def refresh_items(self, item_ids) -> bool:
        """After verdicts written elsewhere on these items: their rows only. False (nothing done) when the listing
        itself depends on verdicts (a review filter, or a blind filter listing only judged items): reload it."""
        if self.benchmark is None:
            return True
        if self.review_filter or (self.sight.blind and (self.qc_filter or self.filter.run_result)):
            return False
        for item_id in item_ids:
            self.refresh_item(item_id)
        return True

    def refresh_results(self, item_ids) -> bool:
        """After passes of the listed run written elsewhere on these items: their rows' run result only (and the
        blind rule asked for them). False (nothing done) when the listing itself depends on run results."""
        if self.benchmark is None or not item_ids:
            return True
        if self.filter.run_result:
            return False
        for item_id in item_ids:
            self.sight = blind.resight(self.ws, self.sight, item_id)
        query = replace(self._query, only_ids=frozenset(item_ids))
        fresh_rows = item_query.item_page(self.ws, self._benchmark_id, query, limit=len(item_ids))
        self._score_open([r for r in fresh_rows if r.id in self._row_of])
        for fresh in fresh_rows:
            row = self._row_of.get(fresh.id)
            if row is not None:
                self.rows[row] = fresh
                self.dataChanged.emit(self.index(row, 0), self.index(row, len(COLUMNS) - 1))
        return True

    def refresh_qc(self) -> None:
        if self.benchmark is None:
            return
        self._qc_marks = browse.qc_marks(self.ws, self._benchmark_id)
        self.qc = browse.visible_qc(self._qc_marks, self.sight)
        if self.rows:
            self.dataChanged.emit(self.index(0, 5), self.index(len(self.rows) - 1, 5))

    # -- Qt model
    def rowCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return COLUMNS[section]
        return None

    def display_text(self, row: ItemRow, col: int) -> str:
        if col == 0:
            return str(row.index)
        if col == 2:  # MMBench's short ability codes (CP, FP-S, …); the full name is the tooltip
            return SHORT_L2.get(row.l2_category or "", row.l2_category or "")
        if col in (1, 3):
            return (row.category, row.l2_category, row.split)[col - 1] or ""
        if col == 4:
            status = self.status.get(row.id)
            return status.text(self.kind) if status else ""
        if col == 5:
            mark = self.qc.get(row.id)
            return mark.short_label if mark else ""
        if col == 6:
            if row.run_result == "none" or not self.sight.shows_run_result(self.filter.run_id, row.id):
                return ""
            if self.open_run:
                return self.open_scores.get(row.id, ("answered", None))[0]
            return f"{RESULT_MARKS[row.run_result]} {row.run_result}"
        return " ".join(row.question.split())

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        row = self.rows[index.row()]
        col = index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            return self.display_text(row, col)
        elif role == Qt.ItemDataRole.ForegroundRole:
            shows_result = col == 6 and self.sight.shows_run_result(self.filter.run_id, row.id)
            if shows_result and self.open_run and row.id in self.open_scores:
                return QBrush(colour(score_colour(self.open_scores[row.id][1])))
            if shows_result and row.run_result in _RESULT_COLOURS:
                return QBrush(colour(_RESULT_COLOURS[row.run_result]))  # read when painted: follows a theme switch
            if col == 4 and (status := self.status.get(row.id)) and status.conflict:
                return QBrush(colour(WRONG))
        elif role == Qt.ItemDataRole.ToolTipRole and col == 7:
            return row.question
        elif role == Qt.ItemDataRole.ToolTipRole and col in (1, 2):
            return (row.category, row.l2_category)[col - 1]
        elif role == Qt.ItemDataRole.ToolTipRole and col == 5 and (mark := self.qc.get(row.id)):
            return mark.label
        elif role == Qt.ItemDataRole.ToolTipRole and col == 4 and (status := self.status.get(row.id)):
            return status.text(self.kind)  # the column may be narrowed (elided) to leave room for the question
        elif role == Qt.ItemDataRole.UserRole:
            return row.id
        elif role == Qt.ItemDataRole.TextAlignmentRole and col == 0:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None
