"""Render the window offscreen in a named state (a *screenshot view*), save it as PNG, and optionally list every text
visible in it — the check hook of the blind rule (`vlmdesk gui --screenshot … --visible-text FILE`).

Qt is imported inside the functions: `vlmdesk` imports this module to know the view names for its help, and a
command that never opens a window must not pay for loading Qt.
"""

from __future__ import annotations

import sqlite3
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from db import catalog
from db.errors import NotFound, UserError

MAX_CELLS = 5000  # item views: cells read per view (only those in the viewport are kept)
MAX_EDIT_CHARS = 20_000  # text fields: characters read


class ScreenshotError(UserError):
    """The state asked for cannot be shown (unknown benchmark, item, run…): one line for the user."""


@dataclass(frozen=True)
class Shot:
    """What to show: the options of `vlmdesk gui --screenshot`."""

    view: str = "browse"
    bench: str | None = None
    item: str | None = None
    queue: str | None = None
    tab: str | None = None  # review/browse: "predictions" or "history"
    image: int = 1  # review/browse: which of the item's images is shown large (1 = the first; issue 37)
    runs: tuple[int, ...] = ()
    chart: str | None = None
    launch: str = "baseline:random"
    size: tuple[int, int] = (1280, 800)
    annotator: str = "annotator"
    blind: bool = False
    theme: str = "light"  # light | dark (not "system": a picture must not depend on the desktop it is taken on)
    font_scale: float = 1.0  # View › Larger text: 1.1, 1.25 (two steps), … 1.75


# -- the views ---------------------------------------------------------------------------------------------


def _prepare_browse(window, shot: Shot) -> None:
    window.show_view("browse")
    if shot.item:
        _select_item(window, shot.item)
    _choose_image(window.view("browse"), shot.image)
    _lower_tab(window.view("browse"), shot.tab)


def _prepare_review(window, shot: Shot) -> None:
    review = window.view("review")
    window.show_view("review")
    if shot.item:
        _select_item(window, shot.item)
    else:
        model = window.ctx.model
        # The most telling first picture: an item that some run got wrong, so predictions and the key both show.
        row = model.find_row(0, 1, lambda r: r.run_result == "wrong") if model.filter.run_id else None
        review.show_row(row or 0)
    _choose_image(review, shot.image)
    _lower_tab(review, shot.tab)


def _choose_image(view, number: int) -> None:
    """The item's image `number` shown large, the strip marking it (an item of several images)."""
    shown = view.images.shas
    if number != 1 and not 1 <= number <= len(shown):
        index = view.item.index if view.item is not None else None
        raise ScreenshotError(f"image {number}: item {index!r} has {len(shown)} image(s)")
    view.images.go(number - 1)


def _lower_tab(view, tab: str | None) -> None:
    if tab is not None:
        view.tabs.setCurrentWidget({"predictions": view.predictions, "history": view.history}[tab])


def _prepare_queue(window, shot: Shot) -> None:
    queues = window.view("queues")
    window.show_view("queues")
    queues.refresh()
    name = shot.queue or next(
        (n for n, _, page in queues.pages if (page.remaining() if n != "qc" else len(page.remaining()))), "qc"
    )
    queues.select(name)


def _prepare_runs(window, shot: Shot) -> None:
    window.show_view("runs")


def _prepare_models(window, shot: Shot) -> None:
    window.show_view("models")


def _prepare_launcher(window, shot: Shot) -> None:
    """A run in progress (a real `vlmdesk run` child process, --new so the picture repeats) and one queued."""
    from PySide6.QtWidgets import QApplication

    from gui.run_queue import RunRequest, run_args

    runs_view = window.view("runs")
    window.show_view("runs")
    bench = window.ctx.benchmark
    runs_view.form.set_choice(bench=bench.name, model=shot.launch)
    job = runs_view.queue.submit(
        RunRequest((*run_args(bench=bench.name, model=shot.launch), "--new"), f"{shot.launch} on {bench.name}")
    )
    others = [b for b in catalog.list_benchmarks(window.ws) if b.id != bench.id]
    if others:
        runs_view.queue.submit(
            RunRequest(run_args(bench=others[0].name, model="baseline:first"), f"baseline:first on {others[0].name}")
        )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and job.state in ("queued", "running"):
        QApplication.processEvents()
        total = job.progress.get("items_total") or 0
        if total and job.progress.get("items_done", 0) >= 0.4 * total and "calls_per_s" in job.progress:
            break
        time.sleep(0.02)
    runs_view.jobs.setCurrentRow(0)


def _prepare_results(window, shot: Shot) -> None:
    from PySide6.QtWidgets import QApplication

    from evaluator.analysis.plots import bar_target

    dash = window.view("results")
    window.show_view("results")
    run_ids = list(shot.runs) or sorted(r.id for r in list(window.ctx.runs.values())[:3])  # newest first
    if not run_ids:
        raise ScreenshotError("--view results: the benchmark has no runs (vlmdesk run …)")
    dash.show_runs(run_ids, chart=shot.chart)
    settle(QApplication.instance(), window)  # the reports are computed off the GUI thread: the bars come then
    # The items behind a bar, as after a click: the first ability's CircularEval bar of the first run (an open run:
    # its first category's bar).
    bars = [bar_target(b) for b in dash.chart.bars()]
    target = (
        next((t for t in bars if t and t.get("group") and t.get("strategy") == "circular"), None)
        or next((t for t in bars if t and t.get("group") and t.get("metric")), None)
        or next(iter(bars), None)
    )
    if target:
        dash.show_items_of(target)  # listed in the worker: the settle that follows waits for the rows


def _prepare_desiderata(window, shot: Shot) -> None:
    dash = window.view("results")
    window.show_view("results")
    dash.pages.setCurrentWidget(dash.desiderata)
    from db import runs

    run_ids = list(shot.runs) or [r.id for r in runs.list_runs(window.ctx.ws)]  # every benchmark's: POPE too
    if not run_ids:
        raise ScreenshotError("--view desiderata: the workspace has no runs (vlmdesk run …)")
    dash.desiderata.show_runs(run_ids, figure=shot.chart)


def _prepare_groups(window, shot: Shot) -> None:
    from PySide6.QtWidgets import QApplication

    dash = window.view("results")
    window.show_view("results")
    dash.pages.setCurrentWidget(dash.groups)
    dash.groups.refresh()
    settle(QApplication.instance(), window)  # the report is computed off the GUI thread: its models come then
    models = [dash.groups.models.item(r).text() for r in range(dash.groups.models.count())]
    dash.groups.show_models(models)  # every model overlaid


def _prepare_annotators(window, shot: Shot) -> None:
    window.show_view("annotators")
    window.view("annotators").refresh()


def _prepare_alignment(window, shot: Shot) -> None:
    window.show_view("alignment")
    window.view("alignment").refresh()


def _prepare_arena(window, shot: Shot) -> None:
    window.show_view("arena")
    arena_view = window.view("arena")
    arena_view.inner.setCurrentWidget(arena_view.vote)
    arena_view.refresh()


def _prepare_live(window, shot: Shot) -> None:
    window.show_view("arena")
    arena_view = window.view("arena")
    arena_view.inner.setCurrentWidget(arena_view.live)
    arena_view.live.show_last()


def _prepare_leaderboard(window, shot: Shot) -> None:
    window.show_view("arena")
    arena_view = window.view("arena")
    arena_view.inner.setCurrentWidget(arena_view.board)
    arena_view.refresh()


VIEWS = {
    "browse": _prepare_browse,
    "review": _prepare_review,
    "queue": _prepare_queue,
    "runs": _prepare_runs,
    "launcher": _prepare_launcher,
    "results": _prepare_results,
    "dashboard": _prepare_results,
    "desiderata": _prepare_desiderata,
    "groups": _prepare_groups,
    "alignment": _prepare_alignment,
    "models": _prepare_models,
    "annotators": _prepare_annotators,
    "arena": _prepare_arena,
    "live": _prepare_live,
    "leaderboard": _prepare_leaderboard,
}
"""--view name -> function(window, shot) that puts the window in that state ("dashboard" is the older name of
"results"). Later views register here."""
TABS = ("predictions", "history")


def _select_item(window, index: str) -> None:
    from evaluator.formats.importers.common import index_for_lookup

    bench = window.ctx.benchmark
    item = catalog.item_by_index(window.ws, bench.id, index_for_lookup(index))
    row = window.ctx.model.row_of_item(item.id) if item is not None else None
    if row is None:
        raise ScreenshotError(f"benchmark {bench.name!r} has no item with index {index!r}")
    window.view("browse").table.selectRow(row)
    window.view("review").show_row(row)


# -- taking the picture ------------------------------------------------------------------------------------


def take(workspace: Path, out: Path, shot: Shot, *, visible_text: Path | None = None) -> list[str]:
    """Open the window on `workspace` with a throw-away configuration (the user's settings are never read or
    changed), put it in the state `shot` names, save the PNG, and write the visible texts when asked. Returns them."""
    from PySide6.QtCore import QBuffer, QCoreApplication, QIODevice

    from evaluator.formats.outfiles import check_output, write_file
    from gui.app import application
    from gui.main_window import MainWindow
    from gui.prefs import Preferences, PreferencesFile

    if shot.view not in VIEWS:
        raise ScreenshotError(f"--view: unknown view {shot.view!r} (one of {', '.join(VIEWS)})")
    for path in (
        out,
        visible_text,
    ):  # evaluator/formats/outfiles.py's rule, before rendering (folders may be made below)
        if path is not None and path.parent.is_dir():
            check_output(path)
    app = application()
    with tempfile.TemporaryDirectory() as config:
        prefs = PreferencesFile(Path(config) / "preferences.json")
        prefs.save(
            # Light first, the theme asked for by a live switch below: a dark picture shows what a switch leaves.
            Preferences(annotator=shot.annotator, blind=shot.blind, theme="light", font_scale=shot.font_scale)
        )
        shown = workspace
        if shot.view == "launcher":  # its picture starts real runs: on a copy, so the workspace keeps no trace
            shown = Path(config) / workspace.name
            with sqlite3.connect(workspace) as source, sqlite3.connect(shown) as copy:
                source.backup(copy)
        window = MainWindow(shown, prefs_file=prefs, settings_path=Path(config) / "window.ini")
        window.workspace_label.setText(f"Workspace: {workspace}")
        try:
            if window.ctx is None:
                raise ScreenshotError(window.message_bar.label.text())
            if shot.bench:
                try:
                    window.select_benchmark(shot.bench)
                except NotFound as exc:
                    raise ScreenshotError(str(exc)) from None
            window.resize(*shot.size)
            window.show()
            VIEWS[shot.view](window, shot)
            if shot.theme != "light":
                settle(app, window)
                window.set_appearance(theme=shot.theme)
            settle(app, window)
            texts = visible_texts(window)
            try:
                out.parent.mkdir(parents=True, exist_ok=True)
                png = QBuffer()
                png.open(QIODevice.OpenModeFlag.WriteOnly)
                if not window.grab().save(png, "PNG"):
                    raise ScreenshotError(f"could not write {out}")
                write_file(out, lambda f: f.write(png.data().data()), binary=True)
                if visible_text is not None:
                    visible_text.parent.mkdir(parents=True, exist_ok=True)
                    write_file(visible_text, lambda f: f.write("".join(t + "\n" for t in texts)))
            except OSError as exc:
                raise ScreenshotError(f"could not write {exc.filename or out}: {exc.strerror or exc}") from None
        finally:
            window.close()
            QCoreApplication.processEvents()
    return texts


def settle(app, window) -> None:
    """Let decoding workers and figures being computed (gui/background.py) finish and reach the views before the
    picture is taken."""
    from PySide6.QtCore import QCoreApplication, QEvent

    for _ in range(5):
        app.processEvents()
        window.ctx.loader.pool.waitForDone(5000)
        window.ctx.background.pool.waitForDone(60_000)
        app.processEvents()
        # Widgets replaced with deleteLater() go only when the event loop runs; there is none here.
        QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)


# -- what is visible ---------------------------------------------------------------------------------------


def visible_texts(window) -> list[str]:
    """Every text a person could read in the window now, one line each, first occurrence kept: the window title,
    menu titles, labels, buttons, group titles, current combo texts, text fields, tab titles, visible cells and
    headers of tables, trees and lists (and their tooltips), progress texts, status bar, tooltips of visible
    widgets, every text of the matplotlib figures shown (titles, tick labels, legends, bar labels), and the
    placeholder text of an empty image area."""
    from matplotlib.backends.backend_qtagg import FigureCanvasQTAgg
    from PySide6.QtWidgets import (
        QAbstractButton,
        QAbstractItemView,
        QComboBox,
        QDockWidget,
        QGroupBox,
        QHeaderView,
        QLabel,
        QLineEdit,
        QMenuBar,
        QPlainTextEdit,
        QProgressBar,
        QStatusBar,
        QTabBar,
        QTextEdit,
        QWidget,
    )

    from gui.image_view import ImageView

    found: list[str] = [window.windowTitle()]
    for w in window.findChildren(QWidget):
        if not w.isVisible() or w.width() <= 0 or w.height() <= 0:
            continue
        if isinstance(w, QLabel):
            found.append(_plain(w.text()))
        elif isinstance(w, QAbstractButton):
            found.append(w.text())
        elif isinstance(w, QComboBox):
            found.append(w.currentText())
        elif isinstance(w, QLineEdit):
            found.append(w.text() or w.placeholderText())
        elif isinstance(w, QPlainTextEdit):
            found.append(w.toPlainText()[:MAX_EDIT_CHARS] or w.placeholderText())
        elif isinstance(w, QTextEdit):
            found.append(w.toPlainText()[:MAX_EDIT_CHARS] or w.placeholderText())
        elif isinstance(w, QTabBar):
            for i in range(w.count()):
                found += [w.tabText(i), w.tabToolTip(i)]
        elif isinstance(w, QHeaderView):
            found += _header_texts(w)
        elif isinstance(w, QAbstractItemView):
            found += _cell_texts(w)
        elif isinstance(w, QProgressBar) and w.isTextVisible():
            found.append(w.text())
        elif isinstance(w, QStatusBar):
            found.append(w.currentMessage())
        elif isinstance(w, QMenuBar):
            found += [a.text().replace("&", "") for a in w.actions()]
        elif isinstance(w, FigureCanvasQTAgg):
            found += _figure_texts(w.figure)
        elif isinstance(w, ImageView) and not w.has_image():
            found.append(w.placeholder)  # painted over the empty image area
        if isinstance(w, QGroupBox):
            found.append(w.title())
        if isinstance(w, QDockWidget):
            found.append(w.windowTitle())
        found.append(w.toolTip())
    out, seen = [], set()
    for text in found:
        for line in (text or "").replace("\u200b", "").splitlines():  # zero-width spaces only let long words wrap
            line = line.strip()
            if line and line not in seen:
                seen.add(line)
                out.append(line)
    return out


def _plain(text: str) -> str:
    from PySide6.QtGui import Qt, QTextDocumentFragment  # QtGui's Qt namespace holds mightBeRichText

    return QTextDocumentFragment.fromHtml(text).toPlainText() if Qt.mightBeRichText(text) else text


def _header_texts(header) -> list[str]:
    from PySide6.QtCore import Qt

    model = header.model()
    if model is None or header.isHidden():
        return []
    out = []
    for section in range(header.count()):
        if header.isSectionHidden(section) or header.sectionSize(section) <= 0:
            continue
        pos = header.sectionViewportPosition(section)
        extent = header.width() if header.orientation() == Qt.Orientation.Horizontal else header.height()
        if pos + header.sectionSize(section) > 0 and pos < extent:
            out.append(str(model.headerData(section, header.orientation(), Qt.ItemDataRole.DisplayRole) or ""))
    return out


def _cell_texts(view) -> list[str]:
    """DisplayRole and ToolTipRole of the cells whose rectangle meets the viewport (expanded tree rows included)."""
    from PySide6.QtCore import QModelIndex, Qt
    from PySide6.QtWidgets import QTableView, QTreeView

    model = view.model()
    if model is None:
        return []
    area = view.viewport().rect()
    out: list[str] = []
    budget = [MAX_CELLS]

    def walk(parent) -> None:
        try:
            columns = model.columnCount(parent)
        except TypeError:  # list models (QListWidget's) keep columnCount private: they have one column
            columns = 1
        for r in range(model.rowCount(parent)):
            if budget[0] <= 0:
                return
            if isinstance(view, QTableView) and view.isRowHidden(r):
                continue
            if isinstance(view, QTreeView) and view.isRowHidden(r, parent):
                continue
            for c in range(columns):
                budget[0] -= 1
                if isinstance(view, (QTableView, QTreeView)) and view.isColumnHidden(c):
                    continue
                index = model.index(r, c, parent)
                if view.visualRect(index).intersects(area):
                    out.extend(
                        str(model.data(index, role) or "")
                        for role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole)
                    )
            first = model.index(r, 0, parent)
            if isinstance(view, QTreeView) and view.isExpanded(first):
                walk(first)

    walk(QModelIndex())
    return out


def _figure_texts(figure) -> list[str]:
    from matplotlib.text import Text

    if figure.canvas is not None:
        figure.canvas.draw()  # tick labels are laid out at drawing time
    return [t.get_text() for t in figure.findobj(Text) if t.get_visible() and t.get_text()]
