"""What the views share: the open workspace (GUI-thread connection), preferences, the item listing, images."""

from __future__ import annotations

from dataclasses import replace

from PySide6.QtCore import QObject, Signal

from annotation import blind
from db import item_query
from gui.background import Background
from gui.images import ImageLoader
from gui.item_model import ItemTableModel
from gui.prefs import Preferences, PreferencesFile


class Context(QObject):
    benchmarkChanged = Signal()
    prefsChanged = Signal()
    sightChanged = Signal(bool)  # what the annotator may see changed (blind mode, reveal, who): True for a new name
    reviewsChanged = Signal(int)  # item id whose verdicts changed
    error = Signal(str, str)  # message, details
    info = Signal(str)
    runsChanged = Signal()  # a run was started, finished or stopped from the app
    workspaceChanged = Signal()  # another process or connection wrote to the workspace, or View › Refresh
    benchmarksChanged = Signal()  # this window added a benchmark or items (Arena › Live): the dock shows them at once
    filterChanged = Signal(str)  # Browse's filters changed: what they are, in words ("" for none), for Review
    actionRequested = Signal(str)  # a view asks the window for an action: a menu title, or "tab:NAME"

    def __init__(self, ws, prefs_file: PreferencesFile, prefs: Preferences, parent=None):
        super().__init__(parent)
        self.ws = ws
        self.prefs_file = prefs_file
        self.prefs = prefs
        self.loader = ImageLoader(str(ws.path), capacity=max(4, 2 * prefs.prefetch + 4), parent=self)
        self.model = ItemTableModel(ws, self)
        self.background = Background(ws.path, ws.read_only, self)  # reads that cost more than a frame
        self.background.error.connect(self.error)
        # Bumped when something besides the runs' own rows changed (a judge's verdicts, F5): kept figures go.
        self.figures_epoch = 0
        self._sync_model()
        self.benchmark = None
        self.runs: dict = {}
        self.runsChanged.connect(self._reload_runs)

    @property
    def annotator(self) -> str:
        return self.prefs.annotator

    def sight(self, *, item_ids=None) -> blind.Sight:
        """What the session's annotator may see now (the blind rule), for the benchmark shown or some items."""
        return blind.sight(
            self.ws,
            self.annotator,
            blind=self.prefs.blind,
            reveal_after_verdict=self.prefs.reveal_after_verdict,
            benchmark_id=self.benchmark.id if self.benchmark and item_ids is None else None,
            item_ids=item_ids,
        )

    def set_benchmark(self, benchmark) -> None:
        self.benchmark = benchmark
        bench_runs = item_query.runs_of_benchmark(self.ws, benchmark.id) if benchmark else []
        self.runs = {r.id: r for r in bench_runs}
        self.model.set_benchmark(benchmark, run_id=bench_runs[0].id if bench_runs else None)
        self.benchmarkChanged.emit()

    def _reload_runs(self) -> None:
        if self.benchmark is not None:
            self.runs = {r.id: r for r in item_query.runs_of_benchmark(self.ws, self.benchmark.id)}

    def _sync_model(self) -> bool:
        """Give the listing the session's annotator and blind settings; True when they changed."""
        m, p = self.model, self.prefs
        now = (p.annotator, p.blind, p.reveal_after_verdict)
        changed = (m.annotator, m.blind, m.reveal_after_verdict) != now
        m.annotator, m.blind, m.reveal_after_verdict = now
        return changed

    def update_prefs(self, **changes) -> None:
        before = self.prefs.annotator
        self.prefs = replace(self.prefs, **changes)
        sight_changed = self._sync_model()
        if sight_changed and self.benchmark is not None:
            self.model.reload()  # what the listing may show (and filter by) changed
        try:
            self.prefs_file.save(self.prefs)
        except OSError as exc:
            self.error.emit(f"Could not save preferences to {self.prefs_file.path}: {exc}", "")
        self.prefsChanged.emit()
        if sight_changed:
            self.sightChanged.emit(self.prefs.annotator != before)

    def close(self) -> None:
        self.loader.shutdown()
        self.background.stop()
