"""Browse a benchmark: filters and full-text search over a lazy table, and the selected item in full."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QItemSelectionModel, Qt, QTimer, Signal
from PySide6.QtGui import QFont, QFontMetrics, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QAbstractItemView,
    QApplication,
    QComboBox,
    QFrame,
    QHeaderView,
    QLabel,
    QLineEdit,
    QMenu,
    QPushButton,
    QScrollArea,
    QSplitter,
    QTableView,
    QTabWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from annotation import reviews
from annotation.browse import QC_FILTERS, REVIEW_FILTERS, VERDICT_LABELS
from db import item_query
from db.item_query import RUN_RESULTS, ItemFilter
from gui.empty_states import NO_BENCHMARK, EmptyState
from gui.fitting import FlowLayout, flow_item
from gui.image_view import ItemImages
from gui.item_model import COLUMNS
from gui.item_panel import HistoryView, ItemPanel, PredictionsView, show_item_details
from gui.review_view import typing_in
from gui.shortcuts import IMAGE_MOVES

ANY = "All"
CATEGORY_WIDTH = 135
QUESTION_SHARE = 0.35  # of the table's width, at least, for the question column
HIDE_FIRST = (3, 2, 5, 1)  # split, L2, QC, category: hidden in this order when the table is too narrow
_REVIEW_TEXT: dict[str, str] = {
    "unreviewed": "Unreviewed",
    "reviewed": "Reviewed",
    "mine": "Reviewed by me",
    "not_mine": "Not reviewed by me",
    "conflict": "Conflicting verdicts",
    **{v: f"Verdict: {VERDICT_LABELS[v]}" for v in reviews.VERDICTS},
}
_QC_TEXT = {
    "flagged": "Flagged",
    "unflagged": "Not flagged",
    "pending": "Flag pending",
    "disputed": "Flag disputed",
    "confirmed": "Flag confirmed",
    "rejected": "Flag rejected",
}


def _combo(name: str, width: int = 130) -> QComboBox:
    c = QComboBox()
    c.setObjectName(name)
    c.setMinimumWidth(width)
    c.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
    return c


class BrowseView(QWidget):
    openInReview = Signal(int)  # item id

    def __init__(self, ctx, parent=None):
        super().__init__(parent)
        self.ctx = ctx
        self.item = None

        self.search = QLineEdit()
        self.search.setPlaceholderText("Search questions, hints and options…")
        self.search.setClearButtonEnabled(True)
        self.search.setMinimumWidth(220)
        self._debounce = QTimer(self)
        self._debounce.setSingleShot(True)
        self._debounce.setInterval(250)
        self._debounce.timeout.connect(self.apply_filters)
        self.search.textChanged.connect(lambda _: self._debounce.start())
        self.search.returnPressed.connect(self.apply_filters)
        self.category = _combo("category", 150)
        self.l2 = _combo("l2", 150)
        self.split = _combo("split", 80)
        self.review = _combo("review", 150)
        self.qc = _combo("qc", 120)
        self.run = _combo("run", 180)
        self.result = _combo("result", 90)
        self.review.addItem(ANY, None)
        for f in REVIEW_FILTERS:
            self.review.addItem(_REVIEW_TEXT[f], f)
        self.qc.addItem(ANY, None)
        for f in QC_FILTERS:
            self.qc.addItem(_QC_TEXT[f], f)
        self.result.addItem(ANY, None)
        for r in RUN_RESULTS:
            self.result.addItem(r, r)
        self.count = QLabel()
        self.count.setObjectName("muted")

        filters = QWidget()
        filters.setObjectName("filterBar")
        # The filters wrap onto more rows when the window is narrow or the text large: the bar's minimum width is
        # its widest filter, so the window fits 1024 px at any text size.
        fl = FlowLayout(filters)
        fl.setContentsMargins(10, 8, 10, 8)
        fl.addWidget(flow_item(self.search, self.count, grow=True))
        for label, combo in (
            ("Category", self.category),
            ("L2", self.l2),
            ("Split", self.split),
            ("Review", self.review),
            ("QC", self.qc),
            ("Run", self.run),
            ("Result", self.result),
        ):
            lab = QLabel(label)
            lab.setObjectName("filterLabel")
            fl.addWidget(flow_item(lab, combo))
            combo.currentIndexChanged.connect(self.apply_filters)
        clear = QPushButton("Clear filters")
        clear.clicked.connect(self.clear_filters)
        # Saved filters: named views kept in the workspace (annotation/saved_filters.py), for everyone who opens it.
        self.current_view: str | None = None
        self.views_button = QToolButton()
        self.views_button.setText("Views")
        self.views_button.setObjectName("savedViews")
        self.views_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.views_button.setToolTip("Saved views of this workspace (named filters), and saving these filters as one")
        self.views_menu = QMenu(self.views_button)
        self.views_button.setMenu(self.views_menu)
        fl.addWidget(flow_item(self.views_button, clear))

        self.table = QTableView()
        self.table.setModel(ctx.model)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.verticalHeader().hide()
        self.table.verticalHeader().setDefaultSectionSize(26)
        self.table.setAlternatingRowColors(True)
        self.table.setShowGrid(False)
        self.table.setWordWrap(False)
        self.table.setTextElideMode(Qt.TextElideMode.ElideRight)
        header = self.table.horizontalHeader()
        header.setHighlightSections(False)
        # Short columns are sized to their content once per listing (see _fit_columns); the question takes the rest.
        # (ResizeToContents would re-measure on every page fetched and every repaint: seconds on a big benchmark.)
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        # Leaf categories run to 38 characters: a fixed width, elided, the full name in the tooltip.
        self.table.setColumnWidth(1, CATEGORY_WIDTH)
        self._widths: dict[int, int] = {}
        self.table.viewport().installEventFilter(self)
        header.setSectionResizeMode(7, QHeaderView.ResizeMode.Stretch)
        header.setStretchLastSection(False)
        # The question is what a row is about: right after the index, so a narrow window (1024 px) still shows it.
        header.moveSection(7, 1)
        self.table.selectionModel().currentRowChanged.connect(self._on_current)
        self.table.doubleClicked.connect(lambda idx: self._open(idx.row()))

        self.images = ItemImages(ctx.loader)  # the item's images: the one shown large, a strip for several
        self.image = self.images.view
        self.panel = ItemPanel()
        self.panel_scroll = panel_scroll = QScrollArea()
        panel_scroll.setWidgetResizable(True)
        panel_scroll.setFrameShape(QFrame.Shape.NoFrame)
        inner = QWidget()
        il = QVBoxLayout(inner)
        il.setContentsMargins(14, 10, 14, 10)
        il.addWidget(self.panel)
        il.addStretch(1)
        panel_scroll.setWidget(inner)
        panel_scroll.setHorizontalScrollBarPolicy(
            Qt.ScrollBarPolicy.ScrollBarAlwaysOff
        )  # long words wrap (item_panel.breakable)
        self.open_button = open_btn = QPushButton("Review this item  ⏎")
        open_btn.setObjectName("primary")
        open_btn.clicked.connect(lambda: self.item and self.openInReview.emit(self.item.id))
        # Outside the scrolling text, so it is never below the fold.
        panel_box = QWidget()
        pl = QVBoxLayout(panel_box)
        pl.setContentsMargins(0, 0, 0, 6)
        pl.setSpacing(4)
        pl.addWidget(panel_scroll, 1)
        pl.addWidget(open_btn, 0, Qt.AlignmentFlag.AlignHCenter)
        self.tabs = QTabWidget()
        self.predictions = PredictionsView()
        self.history = HistoryView()
        self.tabs.addTab(self.predictions, "Predictions")
        self.tabs.addTab(self.history, "Review history")

        detail = QSplitter(Qt.Orientation.Vertical)
        detail.addWidget(self.images)
        detail.addWidget(panel_box)
        detail.addWidget(self.tabs)
        detail.setSizes([210, 400, 150])
        detail.setChildrenCollapsible(False)

        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(self.table)
        split.addWidget(detail)
        split.setSizes([750, 330])
        split.setChildrenCollapsible(False)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(filters)
        layout.addWidget(split, 1)

        ctx.benchmarkChanged.connect(self._on_benchmark)
        self._view_values: dict = {}
        self.reload_views()
        self.empty = EmptyState(self, ctx, "browse")
        self.empty.show_state(*NO_BENCHMARK)  # until a benchmark is chosen (the window chooses one when it can)
        ctx.model.modelReset.connect(self._after_reset)
        ctx.model.rowsInserted.connect(lambda *_: self._update_count())
        self._image_keys: list[QShortcut] = []
        for move in IMAGE_MOVES:  # ] / [ (Alt+→ / Alt+←): the item's images, as in Review
            for key in move.keys:
                sc = QShortcut(QKeySequence(key), self)
                sc.setContext(Qt.ShortcutContext.WindowShortcut)
                sc.setEnabled(False)  # while Browse is the tab shown (showEvent): Review has the same keys
                sc.activated.connect(lambda forward=move.action == "next_image": self.move_image(forward))
                self._image_keys.append(sc)
        ctx.reviewsChanged.connect(self._on_reviews)
        ctx.runsChanged.connect(self._on_runs)
        ctx.prefsChanged.connect(lambda: self.item and self._show(self.item.id))

    # -- filters
    def _on_benchmark(self) -> None:
        bench = self.ctx.benchmark
        self.empty.setVisible(bench is None)
        self.reload_views()
        facets = item_query.facet_values(self.ctx.ws, bench.id) if bench else {}
        widgets = (self.category, self.l2, self.split, self.run)
        for w in widgets:
            w.blockSignals(True)
        for combo, column in ((self.category, "category"), (self.l2, "l2_category"), (self.split, "split")):
            combo.clear()
            combo.addItem(ANY, None)
            for v in facets.get(column, []):
                combo.addItem(v or "(none)", v)
        self._fill_runs()
        self.run.setCurrentIndex(1 if self.ctx.runs else 0)
        for w in (self.review, self.qc, self.result):
            w.blockSignals(True)
            w.setCurrentIndex(0)
        self.search.blockSignals(True)
        self.search.clear()
        self.search.blockSignals(False)
        for w in (*widgets, self.review, self.qc, self.result):
            w.blockSignals(False)
        self._after_reset()

    def _fill_runs(self) -> None:
        self.run.clear()
        self.run.addItem("(no run)", None)
        for run in self.ctx.runs.values():
            self.run.addItem(f"run {run.id} · {run.model_spec}", run.id)

    def _on_runs(self) -> None:
        """A run started or finished in the app: offer it in the run filter, keeping the current choice."""
        current = self.run.currentData()
        self.run.blockSignals(True)
        self._fill_runs()
        self.run.setCurrentIndex(max(0, self.run.findData(current)))
        self.run.blockSignals(False)

    def current_filter(self) -> tuple[ItemFilter, str | None, str | None]:
        return (
            ItemFilter(
                text=self.search.text(),
                category=self.category.currentData(),
                l2_category=self.l2.currentData(),
                split=self.split.currentData(),
                run_id=self.run.currentData(),
                run_result=self.result.currentData(),
            ),
            self.review.currentData(),
            self.qc.currentData(),
        )

    def apply_filters(self) -> None:
        if self.ctx.benchmark is None:
            return
        f, review, qc = self.current_filter()
        self.ctx.model.set_filter(f, review=review, qc=qc)
        if self.current_view is not None and self.filter_values() != self._view_values:
            self.current_view = None  # the filters were changed by hand: no longer the saved view
            self.views_button.setText("Views")
        self.ctx.filterChanged.emit(self.active_filter_text())

    # -- saved views
    def filter_values(self) -> dict:
        """The filters as a saved view stores them (annotation/saved_filters.FIELDS)."""
        f, review, qc = self.current_filter()
        values = {
            "text": f.text.strip(),
            "category": f.category,
            "l2_category": f.l2_category,
            "split": f.split,
            "review": review,
            "qc": qc,
            "run_id": f.run_id if f.run_result else None,
            "run_result": f.run_result,
        }
        return {k: v for k, v in values.items() if v not in (None, "")}

    def active_filter_text(self) -> str:
        from annotation.saved_filters import describe

        values = self.filter_values()
        name = self.current_view
        return f"{name}: {describe(values)}" if name else describe(values) if values else ""

    def reload_views(self) -> None:
        from annotation import saved_filters

        self.views_menu.clear()
        found = saved_filters.list_filters(self.ctx.ws)
        for saved in found:
            action = self.views_menu.addAction(saved.name)
            action.setToolTip(saved.describe())
            action.setCheckable(True)
            action.setChecked(saved.name == self.current_view)
            action.triggered.connect(lambda _=False, n=saved.name: self.apply_saved(n))
        if not found:
            self.views_menu.addAction("No saved view yet").setEnabled(False)
        self.views_menu.setToolTipsVisible(True)
        self.views_menu.addSeparator()
        self.views_menu.addAction("Save these filters as a view…").triggered.connect(self._save_view_dialog)

    def save_view(self, name: str) -> bool:
        from annotation import saved_filters
        from db.errors import InvalidInput

        try:
            saved = saved_filters.save(self.ctx.ws, name, self.filter_values(), self.ctx.annotator)
        except InvalidInput as exc:
            self.ctx.error.emit(f"View not saved: {exc}", "")
            return False
        self._show_view(saved.name, saved.filters)
        self.ctx.filterChanged.emit(self.active_filter_text())
        self.ctx.info.emit(f"Saved the view {saved.name!r}: {saved.describe()}")
        return True

    def _save_view_dialog(self) -> None:
        from PySide6.QtWidgets import QInputDialog

        name, ok = QInputDialog.getText(self, "Save view", "Name of this view (everyone with the workspace sees it):")
        if ok and name.strip():
            self.save_view(name)

    def apply_saved(self, name: str | None) -> None:
        """Set every filter from the saved view `name` (values this benchmark lacks are left at "any")."""
        from annotation import saved_filters

        saved = saved_filters.get(self.ctx.ws, name) if name else None
        if saved is None:
            return
        values = saved.filters
        widgets = {
            "category": self.category,
            "l2_category": self.l2,
            "split": self.split,
            "review": self.review,
            "qc": self.qc,
            "run_id": self.run,
            "run_result": self.result,
        }
        for key, combo in widgets.items():
            combo.blockSignals(True)
            combo.setCurrentIndex(max(0, combo.findData(values.get(key))) if key in values else 0)
            combo.blockSignals(False)
        self.search.blockSignals(True)
        self.search.setText(values.get("text", ""))
        self.search.blockSignals(False)
        self._show_view(saved.name, saved.filters)
        self.apply_filters()

    def _show_view(self, name: str, values: dict) -> None:
        self.current_view, self._view_values = name, values
        self.views_button.setText(f"View: {name if len(name) <= 14 else name[:13] + '…'}")
        self.reload_views()

    def clear_filters(self) -> None:
        for w in (self.category, self.l2, self.split, self.review, self.qc, self.result):
            w.blockSignals(True)
            w.setCurrentIndex(0)
            w.blockSignals(False)
        self.search.blockSignals(True)
        self.search.clear()
        self.search.blockSignals(False)
        self.apply_filters()

    def select_combo(self, combo: QComboBox, data) -> None:
        """Choose a filter value by its data (tests, --view presets)."""
        index = combo.findData(data)
        if index < 0:
            raise ValueError(f"{combo.objectName()}: no value {data!r}")
        combo.setCurrentIndex(index)

    def _fit_columns(self) -> None:
        """Width of each short column from its header and the texts of the first page."""
        model = self.ctx.model
        cells, head = self.table.fontMetrics(), self._header_metrics()
        sample = model.rows[:200]
        self._widths = {1: CATEGORY_WIDTH}
        for col in (0, 2, 3, 4, 5, 6):
            widest = max((cells.horizontalAdvance(model.display_text(r, col)) for r in sample), default=0)
            self._widths[col] = max(widest, head.horizontalAdvance(COLUMNS[col])) + 22
        self._share_width()

    def _header_metrics(self) -> QFontMetrics:
        """The headers' text as painted: demi-bold (gui/style.py); the header widget's own font is not."""
        font = QFont(self.table.horizontalHeader().font())
        font.setWeight(QFont.Weight.DemiBold)
        return QFontMetrics(font)

    def _share_width(self) -> None:
        """Leave the question at least QUESTION_SHARE of the table: narrow the category, review and QC columns
        (elided, the whole text in their tooltips; never narrower than their header) before anything scrolls; when
        that is not enough (a narrow window, a large text size), hide the split, L2, QC and category columns in that
        order (their filters stay above, the item panel names them) rather than cut a header or the question."""
        widths = dict(self._widths)
        head = self._header_metrics()
        room = self.table.viewport().width()
        wanted = sum(widths.values()) + int(QUESTION_SHARE * room) - room
        for col in (1, 4, 5):
            narrowest = head.horizontalAdvance(COLUMNS[col]) + 22  # the header stays readable
            widths[col] = max(narrowest, widths[col] - max(0, wanted))
            wanted = sum(widths.values()) + int(QUESTION_SHARE * room) - room
        hidden = set()
        for col in HIDE_FIRST:
            if wanted <= 0:
                break
            hidden.add(col)
            wanted -= widths[col]
        for col, width in widths.items():
            self.table.setColumnHidden(col, col in hidden)
            self.table.setColumnWidth(col, width)

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        # View › Larger text: the columns were measured in the old size (their headers were cut at text ×1.25).
        if event.type() in (QEvent.Type.FontChange, QEvent.Type.StyleChange) and self._widths:
            self._fit_columns()

    def eventFilter(self, watched, event) -> bool:
        if watched is self.table.viewport() and event.type() == QEvent.Type.Resize and self._widths:
            self._share_width()
        return super().eventFilter(watched, event)

    def _after_reset(self) -> None:
        self._update_count()
        self._fit_columns()
        model = self.ctx.model
        if model.rows:
            row = model.row_of(self.item.id) if self.item else None
            self.table.selectionModel().setCurrentIndex(
                model.index(row or 0, 0),
                QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows,
            )
        else:
            self._show(None)

    def _update_count(self) -> None:
        model = self.ctx.model
        self.count.setText(f"{model.total:,} item{'' if model.total == 1 else 's'}" if model.benchmark else "")

    # -- the selected item
    def _on_current(self, current, _previous) -> None:
        if current.isValid():
            self._show(self.ctx.model.rows[current.row()].id)

    def _show(self, item_id: int | None) -> None:
        ctx = self.ctx
        again = self.item is not None and self.item.id == item_id  # a verdict, the preferences: the same item
        self.item = item_query.item_by_id(ctx.ws, item_id) if item_id is not None else None
        show_item_details(
            ctx, self.item, panel=self.panel, predictions=self.predictions, history=self.history, tabs=self.tabs
        )
        self.open_button.setEnabled(self.item is not None)
        self.open_button.setToolTip("" if self.item is not None else "Choose an item in the table first")
        if self.item is None:
            self.images.show_images((), empty="No item selected")
            return
        self.images.show_images(self.item.images, keep=again)  # shown again: the image looked at stays

    def move_image(self, forward: bool) -> None:
        """The item's next (previous) image: ] / [ or Alt+→ / Alt+←, off while a text field (the search) is typed in."""
        if not typing_in(QApplication.focusWidget()):
            if forward:
                self.images.next_image()
            else:
                self.images.previous_image()

    def showEvent(self, event) -> None:
        super().showEvent(event)
        for sc in self._image_keys:
            sc.setEnabled(True)

    def hideEvent(self, event) -> None:
        super().hideEvent(event)
        for sc in self._image_keys:
            sc.setEnabled(False)

    def refresh_item(self) -> None:
        """The selected item's text, predictions and history read again (another process wrote about it), its
        selection, image and the panel's scroll position as they were."""
        if self.item is None:
            return
        item = item_query.item_by_id(self.ctx.ws, self.item.id)
        if item is None:  # deleted elsewhere
            self._show(None)
            return
        self.item = item
        bar = self.panel_scroll.verticalScrollBar()
        value = bar.value()
        show_item_details(
            self.ctx, item, panel=self.panel, predictions=self.predictions, history=self.history, tabs=self.tabs
        )
        self.images.show_images(item.images, keep=True)
        bar.setValue(value)

    def _on_reviews(self, item_id: int) -> None:
        if self.item is not None and self.item.id == item_id:
            self._show(item_id)  # a verdict may reveal what blind mode hid

    def _open(self, row: int) -> None:
        self.openInReview.emit(self.ctx.model.rows[row].id)

    def keyPressEvent(self, event) -> None:
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and self.item is not None:
            self.openInReview.emit(self.item.id)
        else:
            super().keyPressEvent(event)
