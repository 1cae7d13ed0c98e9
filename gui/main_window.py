"""The main window: workspace, benchmarks dock, a tab per view, status bar and message bar.

Views and docks are registered as factories (`add_view`, `add_dock`) and built for each opened workspace, so later
parts of the app (runs launcher, dashboard) plug in without touching this file's logic.
"""

from __future__ import annotations

import getpass
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from PySide6.QtCore import QByteArray, QEvent, QMargins, QObject, QSettings, QSize, Qt, QTimer
from PySide6.QtGui import QAction, QActionGroup, QGuiApplication, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QApplication,
    QDockWidget,
    QInputDialog,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QMainWindow,
    QMenu,
    QTabWidget,
    QWidget,
)

from annotation.names import BadName, annotator_name
from db import catalog, item_query
from db.errors import EnvironmentFault, NotFound, UserError
from db.workspace import change_marks, database_error, open_workspace
from evaluator.analysis.groups import GROUPS, benchmark_groups
from gui import file_dialogs
from gui.alignment_view import AlignmentView
from gui.annotator_stats import AnnotatorsView
from gui.appearance import ACCENT, apply_appearance, next_scale, set_style
from gui.arena_view import ArenaView
from gui.browse_view import BrowseView
from gui.commands import WorkspaceCommands
from gui.context import Context
from gui.dashboard_view import DashboardView
from gui.errors import MessageBar
from gui.groups_view import edit_groups
from gui.models_view import ModelsView
from gui.prefs import Preferences, PreferencesFile, config_dir
from gui.queues_view import QueuesView
from gui.review_view import ReviewView
from gui.runs_view import RunsView
from gui.screen_fit import FRAME_GUESS, dock_width, fit_geometry
from gui.team_sync import TeamFolderSync

GROUPS_ACTION = "Capability &groups of the benchmark…"  # File menu and the Benchmarks list's context menu
SYNC_COMMANDS = {  # kind: (menu title, export command, import command)
    "reviews": ("reviews", ["reviews", "export"], ["reviews", "import"]),
    "labels": ("labels", ["align", "export-labels"], ["align", "import-labels"]),
    "decisions": ("QC decisions", ["qc", "export-decisions"], ["qc", "import-decisions"]),
    "votes": ("arena votes", ["arena", "export-votes"], ["arena", "import-votes"]),
    "open": ("open verdicts", ["align", "export-open"], ["align", "import-open"]),
    "plans": ("assignment plans", ["team", "export-plans"], ["team", "import-plans"]),
}


def _keeping_scroll(view, reload) -> None:
    """Run `reload` (which resets the view's model) and put the view's scroll bars back where they were."""
    with _scroll_kept(view):
        reload()


@contextmanager
def _scroll_kept(*views) -> Iterator[None]:
    """The views' scroll bars put back where they were after the block (which reloads them)."""
    bars = [bar for view in views for bar in (view.verticalScrollBar(), view.horizontalScrollBar())]
    values = [b.value() for b in bars]
    yield
    for bar, value in zip(bars, values):
        bar.setValue(value)


def _action(
    parent: QObject,
    text: str,
    *,
    triggered: Callable[[], object] | None = None,
    toggled: Callable[[bool], object] | None = None,
    shortcut: QKeySequence | None = None,
    checkable: bool = False,
) -> QAction:
    """A menu action, its signals connected (what QAction's keyword arguments do, spelt so the stubs know it)."""
    action = QAction(text, parent)
    if shortcut is not None:
        action.setShortcut(shortcut)
    action.setCheckable(checkable)
    if triggered is not None:
        action.triggered.connect(triggered)
    if toggled is not None:
        action.toggled.connect(toggled)
    return action


_FEW = 500  # more new verdicts than this (a sync import) reload the listing instead


class BenchmarksDock(QListWidget):
    def __init__(self, ctx, parent=None):
        super().__init__(parent)
        self.ctx = ctx
        self.setObjectName("benchList")
        self.setToolTip("Benchmarks in this workspace (vlmdesk import FILE adds one)")
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.setWordWrap(True)  # "30 items · multiple choice" wraps in a narrow dock rather than "30…"
        self.currentRowChanged.connect(self._chosen)  # filled by MainWindow.open_workspace
        self.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.customContextMenuRequested.connect(self._context_menu)
        self.groups_dialog = None  # the capability groups dialog last opened (gui/groups_view.py)

        self._fit_width()

    def _fit_width(self) -> None:
        """Wide enough for a benchmark's name of 14 characters at the text size in use: a window at 1024 px with
        text ×1.25 squeezed the list to 68 px ("de… 30…"). A minimum width, not a hint: the window honours it even
        when the X server, not a window manager, sets its size."""
        self.setMinimumWidth(self.fontMetrics().horizontalAdvance("x" * 14) + 24)

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() in (QEvent.Type.FontChange, QEvent.Type.StyleChange):
            self._fit_width()

    def preferred_width(self) -> int:
        """What the entries need to show whole ("demo-pope" over "48 items · yes/no"), at least the minimum."""
        content = self.sizeHintForColumn(0) + 2 * self.frameWidth() + self.verticalScrollBar().sizeHint().width()
        return max(self.minimumWidth(), content)

    def reload(self, benchmarks=None) -> None:
        current = self.currentItem().data(Qt.ItemDataRole.UserRole) if self.currentItem() else None
        self.blockSignals(True)
        self.clear()
        for b in benchmarks if benchmarks is not None else catalog.list_benchmarks(self.ctx.ws):
            kind = {"yesno": "yes/no", "open": "open"}.get(b.kind, "multiple choice")
            count = f"{b.questions:,} item{'s' if b.questions != 1 else ''}"
            item = QListWidgetItem(f"{b.name}\n{count} · {kind}")
            item.setData(Qt.ItemDataRole.UserRole, b.name)
            item.setData(Qt.ItemDataRole.UserRole + 1, b)
            groups = ", ".join(GROUPS[g].lower() for g in benchmark_groups(b))
            item.setToolTip(f"{b.name}\ncapability groups: {groups or 'none'} (right-click to change)")
            self.addItem(item)
            if b.name == current:  # a reload (another process imported) keeps the choice, without re-selecting
                self.setCurrentItem(item)
        self.blockSignals(False)

    def select(self, name: str) -> None:
        for row in range(self.count()):
            if self.item(row).data(Qt.ItemDataRole.UserRole) == name:
                self.setCurrentRow(row)
                return
        raise NotFound(f"no benchmark named {name!r}")

    def _context_menu(self, pos) -> None:
        item = self.itemAt(pos)
        if item is None:
            return
        menu = QMenu(self)
        menu.addAction(GROUPS_ACTION, lambda: self.edit_groups(item.data(Qt.ItemDataRole.UserRole + 1)))
        menu.popup(self.viewport().mapToGlobal(pos))

    def edit_groups(self, bench=None) -> None:
        """The capability groups dialog of `bench` (default: the benchmark in use)."""
        bench = bench or self.ctx.benchmark
        if bench is not None:
            self.groups_dialog = edit_groups(self, self.ctx, bench)

    def _chosen(self, row: int) -> None:
        if row >= 0:
            self.ctx.set_benchmark(self.item(row).data(Qt.ItemDataRole.UserRole + 1))


class MainWindow(QMainWindow):
    def __init__(
        self, workspace: str | Path, *, prefs_file: PreferencesFile | None = None, settings_path: Path | None = None
    ):
        super().__init__()
        self._fitted: QSize | None = None  # the size fitted to the screen, until the window manager framed it
        self.setWindowTitle("vlmdesk")
        self.prefs_file = prefs_file or PreferencesFile()
        self.prefs: Preferences = self.prefs_file.load()
        self._apply_appearance()
        self.settings = QSettings(str(settings_path or config_dir() / "window.ini"), QSettings.Format.IniFormat)
        self.ctx: Context | None = None
        self.ws = None
        self.views: dict[str, QWidget] = {}
        self.docks: dict[str, QDockWidget] = {}
        self._view_factories: list[tuple[str, str, object]] = []
        self._dock_factories: list[tuple[str, str, object, Qt.DockWidgetArea]] = []
        self._stale: set[str] = set()  # views to reload when next shown ("model": the Browse listing)
        self._data_version: int | None = None
        self._told_reconnections = 0  # the workspace's reconnections the window has told the user about
        self._marks: dict[str, tuple[int, ...]] | None = None  # db.workspace.change_marks at the last check
        self._changed: set[str] | None = None  # tables another process added to since the last check; None: any
        self._reviews_since = 0
        self._passes_since = 0
        self._poll = QTimer(self)
        self._poll.setInterval(1000)
        self._poll.timeout.connect(self._check_for_changes)

        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        self.tabs.currentChanged.connect(self._tab_changed)
        self.setCentralWidget(self.tabs)
        self.message_bar = MessageBar(self, anchor=self.tabs)  # floats over the tabs: a message moves nothing

        self.annotator_label = QLabel()
        self.workspace_label = QLabel()
        self.blind_label = QLabel("Blind")  # the session's blind mode, always in sight while it is on
        self.blind_label.setObjectName("blindIndicator")
        self.blind_label.setToolTip("Blind mode: what could bias a verdict stays hidden until yours (B toggles)")
        set_style(
            self.blind_label,
            f"QLabel {{ background: {ACCENT}; color: white; border-radius: 3px; padding: 1px 8px; font-weight: 600; }}",
        )
        self.blind_label.hide()
        self.statusBar().addPermanentWidget(self.workspace_label)
        self.statusBar().addPermanentWidget(self.blind_label)
        self.statusBar().addPermanentWidget(self.annotator_label)
        self.commands = WorkspaceCommands(self)
        self.team_folder = TeamFolderSync(self)  # Workspace › Sync with a team folder…, then every minute
        self._make_menus()

        self.add_dock("benchmarks", "Benchmarks", BenchmarksDock, Qt.DockWidgetArea.LeftDockWidgetArea)
        self.add_view("browse", "Browse", BrowseView)
        self.add_view("review", "Review", ReviewView)
        self.add_view("queues", "Queues", QueuesView)
        self.add_view("runs", "Runs", RunsView)
        self.add_view("results", "Results", DashboardView)
        self.add_view("alignment", "Alignment", AlignmentView)
        self.add_view("models", "Models", ModelsView)
        self.add_view("annotators", "Annotators", AnnotatorsView)
        self.add_view("arena", "Arena", ArenaView)
        for problem in self.prefs_file.problems:
            self.show_error(problem)
        self.open_workspace(workspace)
        self._restore_layout()

    # -- extension points
    def add_view(self, name: str, title: str, factory) -> None:
        """Register a tab: factory(ctx) -> QWidget, built now and again for every workspace opened."""
        self._view_factories.append((name, title, factory))
        if self.ctx is not None:
            self._build_view(name, title, factory)
        self._update_view_menu()

    def add_dock(self, name: str, title: str, factory, area=Qt.DockWidgetArea.RightDockWidgetArea) -> None:
        dock = QDockWidget(title, self)
        dock.setObjectName(f"dock_{name}")
        dock.setFeatures(
            QDockWidget.DockWidgetFeature.DockWidgetMovable | QDockWidget.DockWidgetFeature.DockWidgetClosable
        )
        self.addDockWidget(area, dock)
        self.docks[name] = dock
        self._dock_factories.append((name, title, factory, area))
        self.view_menu.addAction(dock.toggleViewAction())
        if self.ctx is not None:
            dock.setWidget(factory(self.ctx))

    def _build_view(self, name: str, title: str, factory) -> None:
        view = factory(self.ctx)
        self.views[name] = view
        self.tabs.addTab(view, title)
        if hasattr(view, "openInReview"):  # a view that lists items (Browse, Results) opens one in Review
            view.openInReview.connect(self.open_item)
        if hasattr(view, "openResults"):
            view.openResults.connect(self.show_results)
        if hasattr(view, "keyIgnored"):  # a key that did nothing says why, where the eye does not have to search
            view.keyIgnored.connect(lambda text: self.statusBar().showMessage(text, 5000))

    def menu_action(self, title: str) -> QAction | None:
        """The menu action with this title (File, View, Workspace… menus), or None."""
        for menu_action in self.menuBar().actions():
            menu = menu_action.menu()
            stack = [menu] if menu is not None else []
            while stack:
                current = stack.pop()
                for action in current.actions():
                    if action.menu() is not None:
                        stack.append(action.menu())
                    elif action.text().replace("&", "") == title:
                        return action
        return None

    def trigger(self, what: str) -> None:
        """What an empty state's button asks for: "tab:NAME" shows a tab, anything else is a menu action's title."""
        if what.startswith("tab:"):
            self.show_view(what[4:])
        elif (action := self.menu_action(what)) is not None:
            action.trigger()

    def _shutdown_views(self) -> None:
        """Views that own child processes (runs, model tests) stop them before they go; so do Workspace commands."""
        self.commands.shutdown()
        self.team_folder.shutdown()
        for view in self.views.values():
            if hasattr(view, "shutdown"):
                view.shutdown()

    # -- workspace
    def open_workspace(self, path: str | Path) -> bool:
        """Open another workspace; one that cannot be opened (or read) is one message, and the open one stays."""
        ws = None
        try:
            ws = open_workspace(path, probe=True)
            benches = catalog.list_benchmarks(ws)  # once: it counts every benchmark's items and images
        except (UserError, EnvironmentFault, OSError, sqlite3.DatabaseError) as exc:
            if ws is not None:
                ws.close()
            error = database_error(path, exc) if isinstance(exc, sqlite3.DatabaseError) else exc
            if error is None:
                raise
            self.show_error(str(error))
            return False
        if self.ctx is not None and self.message_bar.kind == "error":
            self.message_bar.hide()  # an error about the workspace left behind is no longer about what is shown
        self._close_workspace()
        self.ws = ws
        self.ctx = Context(ws, self.prefs_file, self.prefs, self)
        self.ctx.error.connect(self.show_error)
        self.ctx.info.connect(lambda text: self.message_bar.show_message(text, "info"))
        self.ctx.prefsChanged.connect(self._prefs_changed)
        self.ctx.workspaceChanged.connect(self._workspace_changed)
        self.ctx.benchmarksChanged.connect(self.refresh)  # written by this window: data_version does not move
        self.ctx.sightChanged.connect(self._sight_changed)
        self.ctx.actionRequested.connect(self.trigger)
        self.views = {}
        self.tabs.blockSignals(True)  # building tabs must not run a half-built view's on-show code
        for name, title, factory in self._view_factories:
            self._build_view(name, title, factory)
        self.tabs.blockSignals(False)
        for name, _, factory, _ in self._dock_factories:
            self.docks[name].setWidget(factory(self.ctx))
        self.ctx.update_prefs(recent_workspaces=self.prefs.with_recent(str(Path(ws.path).resolve())).recent_workspaces)
        self.workspace_label.setText(f"Workspace: {ws.path}")
        self.setWindowTitle(f"vlmdesk — {Path(ws.path).name}")
        self._update_recent_menu()
        self.team_folder.workspace_opened()
        self.docks["benchmarks"].widget().reload(benches)
        if benches:
            self.select_benchmark(benches[0].name)
        if ws.read_only:
            self.message_bar.show_message(
                f"{ws.path} is read-only: you can browse and export, but nothing you do here can be saved", "info"
            )
        self._stale = set()
        self._data_version = self._read_data_version()
        self._told_reconnections = 0
        self._marks = self._read_marks()
        self._poll.start()
        self._tab_changed(self.tabs.currentIndex())  # the first tab's on-show work, now that every view exists
        return True

    def _close_workspace(self) -> None:
        """Take down everything that holds the old connection before closing it: the poll timer, child processes,
        views and docks (their timers stopped, their signals cut, deleted), the context (image loader, item model).
        Without this, a tab switch during the teardown or a queued timer ran queries on the closed database."""
        self._poll.stop()
        if self.ctx is None:
            return
        self._shutdown_views()
        old = [self.tabs.widget(i) for i in range(self.tabs.count())]
        old += [dock.widget() for dock in self.docks.values() if dock.widget() is not None]
        self.tabs.blockSignals(True)
        while self.tabs.count():
            self.tabs.removeTab(0)
        self.tabs.blockSignals(False)
        for name, *_ in self._dock_factories:
            widget = self.docks[name].widget()
            if widget is not None:
                self.docks[name].setWidget(None)
        self.ctx.close()
        for obj in (self.ctx, self.ctx.model, self.ctx.loader, *old):
            obj.blockSignals(True)
        for widget in old:
            for timer in widget.findChildren(QTimer):
                timer.stop()
            widget.hide()
            widget.deleteLater()
        self.ctx.deleteLater()
        self.views = {}
        self.ws.close()
        self.ctx, self.ws = None, None

    # -- never stale: what other processes and connections write shows within about a second
    def _read_data_version(self) -> int | None:
        try:  # changes only when another connection commits: one cheap pragma per tick
            return self.ws.conn.execute("PRAGMA data_version").fetchone()[0]
        except Exception:  # noqa: BLE001 — a workspace going away must not flood the window with errors
            return None

    def _check_for_changes(self) -> None:
        if self.ws is None:
            return
        self._keep_hold()
        version = self._read_data_version()
        if version is not None and version != self._data_version:
            self._data_version = version
            old, self._marks = self._marks, self._read_marks()
            if old is not None and self._marks is not None:
                # What another process added: the refresh reloads only that (None: everything).
                self._changed = {t for t, mark in self._marks.items() if old.get(t) != mark}
                self._reviews_since = old["reviews"][0]
                self._passes_since = old["predictions"][0]
            self.ctx.workspaceChanged.emit()

    def _keep_hold(self) -> None:
        """Regain the hold on the workspace when something in this process dropped its locks, or another process
        replaced its -wal (docs/adr/0023-the-hold-on-the-workspace.md); say so. A write that found the hold lost
        regained it itself (db.workspace.WorkspaceDatabase): that is told here too."""
        if (reason := self.ws.hold_lost()) is not None:
            self.ctx.loader.pool.waitForDone(2000)  # image reads share SQLite's locks: none may hold the old ones
            self.ctx.background.stop()  # so do figures being computed: the reload after reconnecting computes them
            try:
                self.ws.reconnect(reason)
            except (UserError, EnvironmentFault, sqlite3.DatabaseError) as exc:
                error = database_error(self.ws.path, exc) if isinstance(exc, sqlite3.DatabaseError) else exc
                self.show_error(f"The workspace could not be opened again: {error or exc}")
                return
        if len(self.ws.reconnections) > self._told_reconnections:
            self._told_reconnections = len(self.ws.reconnections)
            self.message_bar.show_message(
                f"The app had lost its hold on the workspace ({self.ws.reconnections[-1]}) and opened it again: "
                "everything shown as saved is in the file, and what other programs wrote since is shown now.",
                "info",
            )
            # A new connection counts its own data_version, and the old one may have missed writes: reload it all.
            self._data_version, self._marks = None, None

    def _read_marks(self) -> dict[str, tuple[int, ...]] | None:
        try:
            return change_marks(self.ws)
        except Exception:  # noqa: BLE001 — as _read_data_version: a workspace going away is shown elsewhere
            return None

    def refresh(self) -> None:
        """View › Refresh (F5): the same as a change written by another process."""
        if self.ctx is not None:
            self.ctx.workspaceChanged.emit()

    def _workspace_changed(self) -> None:
        """Reload what shows the workspace: the benchmarks dock and the visible tab now; the hidden tabs when they
        are shown next (a run writing every second must not redraw every chart of the window)."""
        ctx = self.ctx
        benches = catalog.list_benchmarks(self.ws)
        self.docks["benchmarks"].widget().reload(benches)
        if ctx.benchmark is not None:
            fresh = next((b for b in benches if b.id == ctx.benchmark.id), None)
            if fresh is None:  # deleted elsewhere: show another one
                if benches:
                    self.select_benchmark(benches[0].name)
                return
            ctx.benchmark = fresh
            if [(r.id, r.status) for r in item_query.runs_of_benchmark(self.ws, fresh.id)] != [
                (r.id, r.status) for r in ctx.runs.values()
            ]:
                ctx.runsChanged.emit()
        elif benches:
            self.select_benchmark(benches[0].name)
            return
        changed, self._changed = self._changed, None
        if changed is None or not changed <= {"reviews", "runs", "predictions"}:
            ctx.figures_epoch += 1  # a judge's verdicts, F5…: the runs' figures are computed anew, not kept by run
        stale_model = True
        touched: set[int] | None = None  # the items written about, for the item Browse shows (None: any)
        if changed is not None and changed <= {"reviews", "runs", "predictions"}:
            # Only verdicts, run heartbeats and passes (a run writing elsewhere): the items they are about are read
            # again, not the listing.
            rows = self.ws.conn.execute(  # the new end of the log, by its primary key
                "SELECT item_id FROM reviews WHERE id > ? ORDER BY id LIMIT ?", (self._reviews_since, _FEW + 1)
            ).fetchall()
            fresh = list(dict.fromkeys(r[0] for r in rows))
            if len(rows) <= _FEW and "runs" not in changed:  # a run added or deleted: any item's passes
                touched = set(fresh)
                shown = self.views["browse"].item
                if shown is not None and "predictions" in changed and self._new_passes(shown.id):
                    touched.add(shown.id)
            stale_model = len(rows) > _FEW or not ctx.model.refresh_items(fresh)
            if not stale_model and "predictions" in changed and ctx.model.filter.run_id is not None:
                passes = self.ws.conn.execute(  # the new passes of the listed run, by rowid past the last mark
                    "SELECT item_id FROM predictions WHERE rowid > ? AND run_id = ? LIMIT ?",
                    (self._passes_since, ctx.model.filter.run_id, _FEW + 1),
                ).fetchall()
                answered = list(dict.fromkeys(r[0] for r in passes))
                stale_model = len(passes) > _FEW or not ctx.model.refresh_results(answered)
        self._reload_tabs(stale_model=stale_model, touched=touched)

    def _new_passes(self, item_id: int) -> bool:
        """Whether another process stored passes for the item since the last check (by its index: the cost of the
        item's own passes, whatever the workspace holds)."""
        return (
            self.ws.conn.execute(
                "SELECT 1 FROM predictions WHERE item_id = ? AND rowid > ? LIMIT 1", (item_id, self._passes_since)
            ).fetchone()
            is not None
        )

    def _sight_changed(self, _new_annotator: bool) -> None:
        """Blind mode, the reveal preference or the annotator changed: every tab shows what it keeps again under the
        new sight — the visible one now (the Queues counts of the new name at once), the others when shown — through
        the same reloads as a write by another process (each re-asks the blind rule for whatever it keeps). The
        Browse listing was reloaded already (Context.update_prefs)."""
        self._reload_tabs(stale_model=False)

    def _reload_tabs(self, *, stale_model: bool, touched: set[int] | None = None) -> None:
        """The visible tab now, every other one when it is shown next."""
        self._stale = set(self.views) | ({"model"} if stale_model else set())
        current = self.tabs.currentWidget()
        for name, view in self.views.items():
            if view is current:
                self._refresh_view(name, touched)

    def _refresh_view(self, name: str, touched: set[int] | None = None) -> None:
        """Reload the view `name`; `touched`: the items another process wrote about since the last check (None: any),
        for the item shown in Browse."""
        self._stale.discard(name)
        view = self.views[name]
        if name in ("browse", "review"):
            # The item shown, read again where its predictions and history were scrolled to; Review keeps its pick
            # and the note being typed (ReviewView.refresh_item), Browse its selection.
            with _scroll_kept(view.predictions, view.history):
                if "model" in self._stale:
                    self._stale.discard("model")
                    self._reload_items()
                if name == "review" or touched is None or (view.item is not None and view.item.id in touched):
                    view.refresh_item()
        elif name == "queues":
            view.reload()
        elif name == "runs":
            _keeping_scroll(view.runs.table, view.runs.reload)
            if not view.form.isAncestorOf(QApplication.focusWidget()):  # never under the fingers of someone typing
                view.form.reload()
        elif name == "results":
            _keeping_scroll(view.runs.table, view.refresh)
        elif hasattr(view, "refresh"):  # alignment
            view.refresh()
        elif hasattr(view, "reload"):  # models
            view.reload()

    def _reload_items(self) -> None:
        """The Browse listing again, as far as it was paged in, at the same scroll position and selection."""
        table = self.views["browse"].table
        review = self.views["review"]
        review.holding = True
        try:
            _keeping_scroll(table, lambda: self.ctx.model.reload(at_least=len(self.ctx.model.rows)))
        finally:
            review.holding = False

    def select_benchmark(self, name: str) -> None:
        dock = self.docks["benchmarks"].widget()
        dock.select(name)

    def view(self, name: str) -> QWidget:
        return self.views[name]

    def open_item(self, item_id: int) -> None:
        """Show an item in Review: its benchmark chosen, and the Browse filters cleared if they hide it."""
        item = item_query.item_by_id(self.ws, item_id)
        if item is None:
            self.show_error(f"Item {item_id} is not in this workspace any more")
            return
        if self.ctx.benchmark is None or self.ctx.benchmark.id != item.benchmark_id:
            bench = next(b for b in catalog.list_benchmarks(self.ws) if b.id == item.benchmark_id)
            self.select_benchmark(bench.name)
        row = self.ctx.model.row_of_item(item_id)
        if row is None:
            self.views["browse"].clear_filters()
            row = self.ctx.model.row_of_item(item_id)
        if row is None:
            self.show_error(f"Item {item_id} could not be found in the Browse listing")
            return
        self.show_view("review")
        self.views["review"].show_row(row)

    def show_results(self, run_ids: list) -> None:
        self.show_view("results")
        self.views["results"].show_runs(list(run_ids))

    def show_view(self, name: str) -> None:
        self.tabs.setCurrentWidget(self.views[name])

    # -- annotator and preferences
    def ensure_annotator(self, *, ask: bool = True) -> str:
        """Ask once for the name that signs every verdict; later starts reuse it (Annotator menu to change)."""
        if not self.ctx.prefs.annotator:
            default = getpass.getuser()
            name, ok = (
                QInputDialog.getText(self, "Who is annotating?", "Your name (signs every verdict):", text=default)
                if ask
                else (default, True)
            )
            self.ctx.update_prefs(annotator=(self._valid_name(name) if ok and name.strip() else None) or default)
        return self.ctx.prefs.annotator

    def change_annotator(self) -> None:
        name, ok = QInputDialog.getText(self, "Annotator", "Your name:", text=self.ctx.prefs.annotator)
        if ok and name.strip() and (name := self._valid_name(name)):
            self.ctx.update_prefs(annotator=name)

    # -- appearance (gui/appearance.py; remembered in preferences.json)
    def _apply_appearance(self) -> None:
        app = QApplication.instance()
        if isinstance(app, QApplication):
            self.theme = apply_appearance(app, self.prefs.theme, self.prefs.font_scale)

    def set_appearance(self, *, theme: str | None = None, font_scale: float | None = None) -> None:
        changes = {k: v for k, v in (("theme", theme), ("font_scale", font_scale)) if v is not None}
        if self.ctx is not None:
            self.ctx.update_prefs(**changes)  # saves, then _prefs_changed applies
        else:
            self.prefs = replace(self.prefs, **changes)
            self._apply_appearance()

    def scale_text(self, step: int) -> None:
        """View › Larger (1) / Smaller (-1) / Normal (0) text."""
        self.set_appearance(font_scale=1.0 if step == 0 else next_scale(self.prefs.font_scale, step))

    def _valid_name(self, name: str) -> str | None:
        """The name as every record stores it (annotation/names.py), or None after saying why it cannot be."""
        try:
            return annotator_name(name)
        except BadName as exc:
            self.show_error(f"Annotator name: {exc}")
            return None

    def _prefs_changed(self) -> None:
        looks = (self.prefs.theme, self.prefs.font_scale)
        self.prefs = self.ctx.prefs
        if looks != (self.prefs.theme, self.prefs.font_scale):
            self._apply_appearance()
            self.theme_actions[self.prefs.theme].setChecked(True)
            for view in self.views.values():  # charts take the theme's colours when drawn: draw them again
                if hasattr(view, "redraw"):
                    view.redraw()
        self.annotator_label.setText(f"Annotator: {self.prefs.annotator or '—'}")
        self.blind_action.setChecked(self.prefs.blind)
        self.blind_label.setVisible(self.prefs.blind)
        self.reveal_action.setChecked(self.prefs.reveal_after_verdict)
        self.advance_action.setChecked(self.prefs.advance)

    # -- errors
    def show_error(self, message: str, details: str = "") -> None:
        self.message_bar.show_message(message, "error", details or None)

    # -- menus
    def _make_menus(self) -> None:
        file_menu = self.menuBar().addMenu("&File")
        new = _action(self, "&New workspace…", shortcut=QKeySequence("Ctrl+N"), triggered=self._new_workspace)
        opn = _action(self, "&Open workspace…", shortcut=QKeySequence("Ctrl+O"), triggered=self._open_dialog)
        self.recent_menu = file_menu.addMenu("Open &recent")
        quit_ = _action(self, "&Quit", shortcut=QKeySequence("Ctrl+Q"), triggered=self.close)
        file_menu.addAction(new)
        file_menu.addAction(opn)
        file_menu.addMenu(self.recent_menu)
        file_menu.addSeparator()
        file_menu.addAction(
            _action(self, "&Import benchmark…", shortcut=QKeySequence("Ctrl+I"), triggered=self._import_dialog)
        )
        file_menu.addAction(_action(self, "Import a benchmark &by name…", triggered=self._fetch_dialog))
        file_menu.addAction(
            _action(self, "Import a &parquet folder (shards of one split)…", triggered=self._import_folder_dialog)
        )
        file_menu.addAction(_action(self, "Import the &demo benchmarks", triggered=self.import_demo))
        file_menu.addAction(
            _action(self, "Import predictions &made elsewhere…", triggered=self._import_predictions_dialog)
        )
        file_menu.addAction(
            _action(self, GROUPS_ACTION, triggered=lambda: self.docks["benchmarks"].widget().edit_groups())
        )
        file_menu.addSeparator()
        for kind, (title, _, _) in SYNC_COMMANDS.items():  # annotators on several machines: exchange JSON Lines
            file_menu.addAction(
                _action(self, f"Export {title}…", triggered=lambda _=False, k=kind: self._export_dialog(k))
            )
            file_menu.addAction(
                _action(self, f"Import {title}…", triggered=lambda _=False, k=kind: self._import_dialog_records(k))
            )
        file_menu.addSeparator()
        file_menu.addAction(quit_)
        self.view_menu = self.menuBar().addMenu("&View")
        self.view_actions_anchor = self.view_menu.addSeparator()
        self.blind_action = _action(
            self,
            "&Blind mode (B)",
            checkable=True,
            toggled=lambda on: self.ctx and self.ctx.prefs.blind != on and self.ctx.update_prefs(blind=on),
        )
        self.reveal_action = _action(
            self,
            "&Reveal after my verdict (blind mode)",
            checkable=True,
            toggled=lambda on: (
                self.ctx
                and self.ctx.prefs.reveal_after_verdict != on
                and self.ctx.update_prefs(reveal_after_verdict=on)
            ),
        )
        # B everywhere but in Review, whose own B shortcut (gui/shortcuts.py) would otherwise be ambiguous.
        self.blind_shortcut = QShortcut(QKeySequence("B"), self, activated=self.blind_action.toggle)
        # F1 on every other tab: that tab's actions and keys (Review's F1 is its own).
        self.help_shortcut = QShortcut(QKeySequence("F1"), self, activated=self._help)
        self.advance_action = _action(
            self,
            "&Advance after a verdict",
            checkable=True,
            toggled=lambda on: self.ctx and self.ctx.prefs.advance != on and self.ctx.update_prefs(advance=on),
        )
        self.view_menu.addAction(_action(self, "Re&fresh", shortcut=QKeySequence("F5"), triggered=self.refresh))
        self.view_menu.addAction(self.blind_action)
        self.view_menu.addAction(self.reveal_action)
        self.view_menu.addAction(self.advance_action)
        self.view_menu.addSeparator()
        theme_menu = self.view_menu.addMenu("&Theme")
        self.theme_actions = {}
        group = QActionGroup(self)
        for theme, title in (("system", "Follow the &system"), ("light", "&Light"), ("dark", "&Dark")):
            action = _action(
                self, title, checkable=True, triggered=lambda _=False, t=theme: self.set_appearance(theme=t)
            )
            action.setChecked(self.prefs.theme == theme)
            group.addAction(action)
            theme_menu.addAction(action)
            self.theme_actions[theme] = action
        for title, key, step in (
            ("&Larger text", "Ctrl+=", 1),
            ("&Smaller text", "Ctrl+-", -1),
            ("&Normal text size", "Ctrl+0", 0),
        ):
            self.view_menu.addAction(
                _action(self, title, shortcut=QKeySequence(key), triggered=lambda _=False, s=step: self.scale_text(s))
            )
        self.view_menu.addSeparator()
        self.command_actions = self.commands.fill_menu(self.menuBar().addMenu("&Workspace"))
        ann = self.menuBar().addMenu("&Annotator")
        ann.addAction(_action(self, "&Change name…", triggered=self.change_annotator))
        help_menu = self.menuBar().addMenu("&Help")
        help_menu.addAction(_action(self, "&Keys and actions of this tab (F1)", triggered=self._help))
        self._view_actions: list[QAction] = []

    def _update_view_menu(self) -> None:
        for action in self._view_actions:
            self.view_menu.removeAction(action)
            action.setParent(None)
            action.deleteLater()
        self._view_actions = []
        for n, (name, title, _) in enumerate(self._view_factories):
            action = _action(self, title, triggered=lambda _=False, v=name: self.show_view(v))
            if n < 9:
                action.setShortcut(QKeySequence(f"Ctrl+{n + 1}"))
            self.view_menu.insertAction(self.view_actions_anchor, action)
            self._view_actions.append(action)

    def _update_recent_menu(self) -> None:
        self.recent_menu.clear()
        for path in self.prefs.recent_workspaces:
            self.recent_menu.addAction(_action(self, path, triggered=lambda _=False, p=path: self.open_workspace(p)))

    def _open_dialog(self) -> None:
        path = file_dialogs.open_file(
            self, "Open workspace", str(Path(self.ws.path).parent), "vlmdesk workspaces (*.sqlite *.db);;All files (*)"
        )
        if path:
            self.open_workspace(path)

    # -- importing (the same `vlmdesk import` / `vlmdesk demo` commands, in a child process)
    def _import_dialog(self) -> None:
        path = file_dialogs.open_file(
            self,
            "Import a benchmark",
            str(Path(self.ws.path).parent),
            "Benchmarks (*.tsv *.jsonl *.json *.parquet);;All files (*)",
        )
        if not path:
            return
        if path.lower().endswith(".parquet"):  # parquet holds its images
            self.import_file(path)
            return
        # POPE files name their images, and JSONL/TSV image paths may be relative to another folder: optional.
        images = file_dialogs.folder(
            self, "Images folder (optional: Cancel if the file holds its images)", str(Path(path).parent)
        )
        self.import_file(path, images or None)

    def import_file(self, path: str, images: str | None = None):
        return self._run_import(
            ["import", path, "--json-progress", *(["--images", images] if images else [])],
            f"Importing {Path(path).name}",
        )

    def _fetch_dialog(self) -> None:
        """A catalog benchmark by name: `vlmdesk import NAME` downloads (or finds in the cache) and imports it."""
        import os

        from db.errors import UserError
        from evaluator.formats.importers.catalog import catalog as benchmark_catalog
        from evaluator.formats.importers.fetch import MIRROR_ENV
        from gui.fetch_dialog import FetchDialog

        try:
            entries = benchmark_catalog()
        except UserError as exc:  # a bad $VLMDESK_CATALOG: said as the command says it
            self.show_error(f"error: {exc}")
            return
        dialog = FetchDialog(entries, os.environ.get(MIRROR_ENV, ""), self)
        if dialog.exec():
            self.fetch_and_import(dialog.arguments())

    def fetch_and_import(self, args: list[str]):
        return self._run_import(args, f"Fetching and importing {args[1]}")

    def import_demo(self):
        return self._run_import(["demo"], "Importing the demo benchmarks")

    def _import_folder_dialog(self) -> None:
        folder = file_dialogs.folder(self, "Folder of parquet shards", str(Path(self.ws.path).parent))
        if folder:
            self.import_file(folder)

    def _import_predictions_dialog(self) -> None:
        from gui.prediction_import_dialog import PredictionImportDialog

        names = [b.name for b in catalog.list_benchmarks(self.ws)]
        if not names:
            self.show_error("No benchmark in this workspace: import the benchmark the predictions answer first")
            return
        current = self.ctx.benchmark.name if self.ctx.benchmark is not None else None
        dialog = PredictionImportDialog(names, str(Path(self.ws.path).parent), current, self)
        if dialog.exec():
            self.import_predictions(*dialog.values())

    def import_predictions(self, path: str, bench: str, model: str, fmt: str | None = None):
        """`vlmdesk import-predictions` in a child process: a VLMEvalKit or lmms-eval file becomes a finished run."""
        args = ["import-predictions", path, "--bench", bench, "--model", model, *(["--format", fmt] if fmt else [])]
        return self._run_command(args, f"Importing predictions from {Path(path).name}…", refresh=True)

    def _run_import(self, args: list[str], busy: str):
        """Run the command in a child process, with a strip in the status bar showing the rows read so far and a
        Cancel button (terminate: the child removes whatever it stored, so the workspace is left as it was)."""
        from PySide6.QtWidgets import QHBoxLayout, QProgressBar, QPushButton

        from gui.processes import CommandProcess

        process = CommandProcess(self.ws.path, args, self)
        strip = QWidget(objectName="importProgress")
        layout = QHBoxLayout(strip)
        layout.setContentsMargins(0, 0, 0, 0)
        label = QLabel(f"{busy}…", objectName="importProgressLabel")
        bar = QProgressBar(maximumWidth=140, textVisible=False)
        bar.setRange(0, 0)  # busy until the first progress event tells the size
        cancel = QPushButton("Cancel", objectName="importCancel", toolTip="Stop the import; nothing is kept")
        for widget in (label, bar, cancel):
            layout.addWidget(widget)
        self.statusBar().addPermanentWidget(strip)
        cancelled, done = [], []

        def on_event(event: dict) -> None:
            kind = event.get("event")
            if kind == "done":
                done.append(event)
            elif kind == "fetch_start":
                label.setText(f"{busy}: {'in the cache' if event.get('cached') else 'downloading'}…")
            elif kind == "fetch_progress":  # `import NAME`: the download before the import
                total = event.get("bytes_total")
                shown = f"{event.get('bytes_done', 0) / 1e6:,.1f}" + (f" of {total / 1e6:,.1f}" if total else "")
                label.setText(f"{busy}: {shown} MB downloaded")
                if total:
                    bar.setRange(0, 1000)
                    bar.setValue(int(1000 * event.get("bytes_done", 0) / total))
            elif kind == "progress":
                label.setText(f"{busy}: {event['rows']:,} rows read")
                if event.get("bytes_total"):
                    bar.setRange(0, 1000)
                    bar.setValue(int(1000 * event["bytes_read"] / event["bytes_total"]))

        def on_cancel() -> None:
            cancelled.append(True)
            cancel.setEnabled(False)
            label.setText(f"{busy}: cancelling…")
            process.terminate()

        def finished() -> None:
            self.statusBar().removeWidget(strip)
            strip.deleteLater()
            if self.ws is None:  # the window closed while the import ran: nothing left to show it in
                return
            if process.exit_code == 0:
                benches = catalog.list_benchmarks(self.ws)
                self.docks["benchmarks"].widget().reload(benches)
                if self.ctx.benchmark is None and benches:
                    self.select_benchmark(benches[0].name)
                lines = [line for line in process.stdout.splitlines() if line.strip()]
                if len(done) > 1:  # a catalog name that makes several benchmarks (POPE: one per setting)
                    text = "Imported " + ", ".join(
                        f"{r['name']!r} ({r['questions']:,} questions{', already there' * r['already_imported']})"
                        for r in done
                    )
                elif done:
                    report = done[-1]
                    text = (
                        f"{report['name']!r} was already imported"
                        if report["already_imported"]
                        else f"Imported {report['name']!r}: {report['questions']:,} questions"
                        + (f", {report['rows_skipped']:,} rows skipped" if report["rows_skipped"] else "")
                    )
                else:
                    text = lines[-1] if lines else "Imported the demo benchmarks"
                self.message_bar.show_message(text, "info")
            elif cancelled:
                self.message_bar.show_message(f"{busy}: cancelled; nothing was imported", "info")
            else:
                errors = [line for line in process.stderr.splitlines() if line.startswith("error:")]
                self.show_error(
                    errors[-1] if errors else f"import failed: {process.error or process.stderr[-300:]}", process.stderr
                )

        process.event.connect(on_event)
        cancel.clicked.connect(on_cancel)
        process.done.connect(finished)
        process.start()
        return process

    # -- annotators on several machines: the `vlmdesk reviews|align|qc` export and import commands, in a child process
    def export_records(self, kind: str, path: str, *, set_name: str | None = None):
        """Write this workspace's `kind` (reviews, labels, decisions) to a JSON Lines file."""
        title, export, _ = SYNC_COMMANDS[kind]
        args = [*export, *(["--set", set_name] if kind == "labels" else []), "--out", path]
        return self._run_command(args, f"Exporting {title}…", refresh=False)

    def import_records(self, kind: str, path: str):
        """Merge a JSON Lines file of `kind` written by another copy of the workspace (idempotent by record id)."""
        title, _, import_ = SYNC_COMMANDS[kind]
        return self._run_command([*import_, path], f"Importing {title} from {Path(path).name}…", refresh=True)

    def _export_dialog(self, kind: str) -> None:
        set_name = None
        if kind == "labels":
            from annotation import alignment

            names = [s.name for s in alignment.list_sets(self.ws)]
            if not names:
                self.show_error("No adjudication set in this workspace: nothing to export (vlmdesk align sample)")
                return
            set_name, ok = (
                QInputDialog.getItem(self, "Export labels", "Adjudication set:", names, 0, False)
                if len(names) > 1
                else (names[0], True)
            )
            if not ok:
                return
        path = file_dialogs.save_file(
            self,
            f"Export {SYNC_COMMANDS[kind][0]}",
            str(Path(self.ws.path).parent / f"{kind}.jsonl"),
            "JSON Lines (*.jsonl);;All files (*)",
        )
        if path:
            self.export_records(kind, path, set_name=set_name)

    def _import_dialog_records(self, kind: str) -> None:
        path = file_dialogs.open_file(
            self,
            f"Import {SYNC_COMMANDS[kind][0]}",
            str(Path(self.ws.path).parent),
            "JSON Lines (*.jsonl);;All files (*)",
        )
        if path:
            self.import_records(kind, path)

    def _run_command(self, args: list[str], busy: str, *, refresh: bool):
        """Run `vlmdesk ARGS` on this workspace in a child process and report its last line (or its error line)."""
        from gui.processes import CommandProcess

        process = CommandProcess(self.ws.path, args, self)
        self.message_bar.show_message(busy, "info")

        def finished() -> None:
            if process.exit_code == 0:
                lines = [
                    line
                    for line in (process.stdout + "\n" + process.stderr).splitlines()
                    if line.strip() and not line.startswith("{")
                ]
                self.message_bar.show_message(lines[-1] if lines else "Done.", "info")
                if refresh:
                    self.refresh()
            else:
                errors = [line for line in process.stderr.splitlines() if line.startswith("error:")]
                self.show_error(
                    errors[-1] if errors else f"{args[0]} failed: {process.error or process.stderr[-300:]}",
                    process.stderr,
                )

        process.done.connect(finished)
        process.start()
        return process

    def _new_workspace(self) -> None:
        path = file_dialogs.save_file(
            self, "New workspace", str(Path(self.ws.path).parent / "workspace.sqlite"), "vlmdesk workspaces (*.sqlite)"
        )
        if path:
            if Path(path).exists():
                self.show_error(f"{path} exists already: use Open workspace")
                return
            self.open_workspace(path)

    def _help(self) -> None:
        """The visible tab's keys and actions over it (F1 again, Esc or a click closes)."""
        from gui.help_overlay import HelpOverlay
        from gui.tab_help import rows_for

        current = self.tabs.currentWidget()
        if current is self.views.get("review"):
            current.help.toggle()
            return
        name = next((n for n, v in self.views.items() if v is current), "")
        if current is None:
            return
        overlay = next((o for o in current.findChildren(HelpOverlay) if o.property("tabHelp")), None)
        if overlay is None:
            title = self.tabs.tabText(self.tabs.currentIndex())
            overlay = HelpOverlay(current, rows_for(name), f"{title}: keys and actions")
            overlay.setProperty("tabHelp", True)
        overlay.toggle()

    def _tab_changed(self, index: int) -> None:
        widget = self.tabs.widget(index)
        self.blind_shortcut.setEnabled(widget is not self.views.get("review"))
        self.help_shortcut.setEnabled(widget is not self.views.get("review"))
        if widget is not None and hasattr(widget, "setFocus"):
            widget.setFocus()
        name = next((n for n, v in self.views.items() if v is widget), None)
        if name in self._stale:  # changed elsewhere while hidden
            self._refresh_view(name)
        elif widget is self.views.get("queues"):
            widget.update_counts()
        elif hasattr(widget, "on_shown"):  # views whose content others change (labels → alignment)
            widget.on_shown()

    # -- layout memory (QSettings: geometry and docks only), fitted to the screen the window opens on
    def _restore_layout(self) -> None:
        geometry = self.settings.value("geometry")
        state = self.settings.value("state")
        share = self.settings.value("benchmarks_share")
        if not (isinstance(geometry, QByteArray) and self.restoreGeometry(geometry)):  # False: saved on another screen
            self.resize(1280, 800)
        if isinstance(state, QByteArray):
            self.restoreState(state)
        self._fit_to_screen(FRAME_GUESS)
        # Shown, the window learns its real frame (a window manager's title bar): fitted again then, unless code
        # (a test, a screenshot) sized it on purpose meanwhile.
        self._fitted = self.size()
        dock = self.docks["benchmarks"]
        try:
            saved_share = float(share) if share is not None else None
        except (TypeError, ValueError):  # a hand-edited window.ini
            saved_share = None
        if isinstance(state, QByteArray) and saved_share is None:
            return  # a layout saved before shares were: as it was
        if not dock.isHidden() and dock.widget() is not None:
            width = dock_width(saved_share, self.width(), 210, dock.widget().preferred_width())
            self.resizeDocks([dock], [width], Qt.Orientation.Horizontal)

    def _fit_to_screen(self, frame: QMargins) -> None:
        """Shrink and move the window (not maximized or full screen) to lie within the available area of the screen
        it is on: a session on a bigger screen left it 1280×800 on a 1024×700 one, its status bar off-screen."""
        if self.windowState() & (Qt.WindowState.WindowMaximized | Qt.WindowState.WindowFullScreen):
            return
        screen = QGuiApplication.screenAt(self.geometry().center()) or self.screen()
        fitted = fit_geometry(self.geometry(), screen.availableGeometry(), frame, self.minimumSizeHint())
        if fitted != self.geometry():
            self.setGeometry(fitted)

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if self._fitted is not None and (handle := self.windowHandle()) is not None:
            handle.installEventFilter(self)  # its frame is known when the window manager has mapped it (Expose)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        handle = self.windowHandle()
        if watched is handle and event.type() in (QEvent.Type.Expose, QEvent.Type.Move, QEvent.Type.Resize):
            frame = handle.frameMargins()
            if self._fitted is None or self.size() != self._fitted:  # done, or sized on purpose since
                self._fitted = None
                handle.removeEventFilter(self)
            elif not frame.isNull():  # framed: fit the frame too
                self._fitted = None
                handle.removeEventFilter(self)
                self._fit_to_screen(frame)
        return super().eventFilter(watched, event)

    def keyPressEvent(self, event) -> None:
        # Esc that no page used (a note field, the help, a dialog take theirs first) dismisses the message.
        if event.key() == Qt.Key.Key_Escape and self.message_bar.isVisible():
            self.message_bar.hide()
        else:
            super().keyPressEvent(event)

    def closeEvent(self, event) -> None:
        self._shutdown_views()
        self.settings.setValue("geometry", self.saveGeometry())
        self.settings.setValue("state", self.saveState())
        dock = self.docks["benchmarks"]
        if not dock.isHidden() and self.width() > 0:  # its share of the window, for a window of another size
            self.settings.setValue("benchmarks_share", round(dock.width() / self.width(), 4))
        self.settings.sync()
        self._close_workspace()
        super().closeEvent(event)
