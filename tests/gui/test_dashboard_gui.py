"""The Results and Alignment tabs: the charts' bars are the report's figures (read back from the matplotlib Axes),
a click on a bar lists its items, an item opens in Review, and charts, tables and predictions export."""

import csv

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtWidgets import QApplication

from annotation import alignment
from db import open_workspace
from evaluator.analysis.plots import bar_target
from evaluator.analysis.report import group_items, run_report
from evaluator.scoring.llm_extraction import load_extractor
from gui.tables import write_csv
from vlmdesk.cli import main as cli_main


@pytest.fixture
def three_runs(demo_ws):
    """demo_ws has run 1 (baseline:first); add run 2 (random, circular), 3 (random, vanilla), 4 (POPE)."""
    for args in (
        ["--bench", "demo", "--model", "baseline:random"],
        ["--bench", "demo", "--model", "baseline:random", "--strategy", "vanilla"],
        ["--bench", "demo-pope", "--model", "baseline:random"],
    ):
        assert cli_main(["--workspace", str(demo_ws), "run", *args]) == 0
    return demo_ws


def _heights(chart):
    return {tuple(sorted(bar_target(p).items())): p.get_height() for p in chart.bars()}


def _key(**target):
    return tuple(sorted((k, str(v)) for k, v in target.items()))


def test_ability_and_drop_charts_are_the_reports_figures(qtbot, three_runs, make_window):
    window = make_window(three_runs)
    dash = window.view("results")
    window.show_view("results")  # a tab out of sight computes nothing
    dash.show_runs([1, 2, 3], chart="l2")
    qtbot.waitUntil(lambda: not dash.computing, timeout=10_000)  # the reports come from the worker
    with open_workspace(three_runs) as ws:
        reports = {i: run_report(ws, i) for i in (1, 2, 3)}
    heights = _heights(dash.chart)
    expected = {}
    for run_id, report in reports.items():
        for strategy in ("vanilla", "circular"):
            overall = getattr(report.mcq.overall, strategy)
            expected[_key(run=run_id, level="all", strategy=strategy)] = 100 * (overall or 0)
            for name, scores in report.mcq.by_l2.items():
                expected[_key(run=run_id, level="l2", group=name, strategy=strategy)] = 100 * (
                    getattr(scores, strategy) or 0
                )
    assert heights == pytest.approx(expected)
    assert any(h > 0 for h in heights.values())
    dash.show_runs([1, 2], chart="category")
    qtbot.waitUntil(lambda: not dash.computing, timeout=10_000)
    heights = _heights(dash.chart)
    for name, scores in reports[2].mcq.by_category.items():
        assert heights[_key(run=2, level="category", group=name, strategy="circular")] == pytest.approx(
            100 * scores.circular
        )
    dash.show_runs([1, 2, 3], chart="drop")  # the vanilla run has no CircularEval figure: left out
    qtbot.waitUntil(lambda: not dash.computing, timeout=10_000)
    assert _heights(dash.chart) == pytest.approx(
        {
            _key(run=r, level="all", strategy=s): 100 * getattr(reports[r].mcq.overall, s)
            for r in (1, 2)
            for s in ("vanilla", "circular")
        }
    )


def test_pope_chart_and_mixed_selection(qtbot, three_runs, make_window):
    window = make_window(three_runs)
    dash = window.view("results")
    window.show_view("results")
    dash.show_runs([4])
    qtbot.waitUntil(lambda: not dash.computing, timeout=10_000)
    assert dash.kind.currentData() == "pope"
    with open_workspace(three_runs) as ws:
        report = run_report(ws, 4)
    assert _heights(dash.chart) == pytest.approx(
        {
            _key(run=4, level="pope", parser=parser, metric=m): 100 * getattr(report.pope.pope[parser], m)
            for parser in ("official", "strict")
            for m in ("accuracy", "precision", "recall", "f1", "yes_ratio")
        }
    )
    dash.show_runs([2, 4])
    qtbot.waitUntil(lambda: not dash.computing, timeout=10_000)
    assert dash.chart.bars() == [] and "cannot share a chart" in dash.chart.figure.texts[0].get_text()


def test_clicking_a_bar_lists_its_items_and_an_item_opens_in_review(qtbot, three_runs, make_window):
    window = make_window(three_runs)
    dash = window.view("results")
    window.show_view("results")
    dash.show_runs([2], chart="l2")
    qtbot.waitUntil(lambda: not dash.computing, timeout=10_000)
    chart = dash.chart
    chart.canvas.draw()
    bar = next(
        p
        for p in chart.bars()
        if bar_target(p).get("group") == "coarse_perception" and bar_target(p)["strategy"] == "vanilla"
    )
    x, y = bar.axes.transData.transform((bar.get_x() + bar.get_width() / 2, bar.get_height() / 2))
    ratio = chart.canvas.device_pixel_ratio
    qtbot.mouseClick(chart.canvas, Qt.LeftButton, pos=QPoint(int(x / ratio), int(chart.canvas.height() - y / ratio)))
    qtbot.waitUntil(lambda: not dash.items_computing, timeout=10_000)  # listed in the worker
    with open_workspace(three_runs) as ws:
        expected = group_items(ws, 2, level="l2", group="coarse_perception")
    assert dash.items.payloads == [r.item_id for r in expected] and len(expected) > 1
    assert [row[1] for row in dash.items.rows] == [("✓ right" if r.vanilla else "✗ wrong") for r in expected]
    right = sum(r.vanilla for r in expected)
    assert f"{right} of {len(expected)} right" in dash.items_title.text()
    assert right == round(bar.get_height() / 100 * len(expected))  # the bar is these items' share
    # Double-click the second item: Review shows it, even with Browse filtered to hide it.
    browse = window.view("browse")
    browse.search.setText("zzzz-nothing")
    browse.apply_filters()
    index = dash.items.index(1, 0)
    dash.items_table.scrollTo(index)
    where = dash.items_table.visualRect(index).center()
    qtbot.mouseClick(dash.items_table.viewport(), Qt.LeftButton, pos=where)  # a double click follows a press
    qtbot.mouseDClick(dash.items_table.viewport(), Qt.LeftButton, pos=where)
    assert window.tabs.currentWidget() is window.view("review")
    assert window.view("review").item.id == expected[1].item_id


def test_exports_chart_table_and_predictions(qtbot, three_runs, make_window, tmp_path):
    window = make_window(three_runs)
    dash = window.view("results")
    window.show_view("results")
    dash.show_runs([2], chart="l2")
    qtbot.waitUntil(lambda: not dash.computing, timeout=10_000)
    assert dash.chart.export(tmp_path / "c.png").read_bytes()[:4] == b"\x89PNG"
    assert b"<svg" in dash.chart.export(tmp_path / "c.svg").read_bytes()[:400]
    dash.show_items_of({"run": "2", "level": "all", "strategy": "circular"})
    qtbot.waitUntil(lambda: not dash.items_computing, timeout=10_000)
    assert write_csv(dash.items, tmp_path / "items.csv") == 30
    rows = list(csv.reader(open(tmp_path / "items.csv", encoding="utf-8")))
    assert rows[0][:2] == ["Index", "Result"] and len(rows) == 31
    assert write_csv(dash.runs.model, tmp_path / "runs.csv") == 4
    done = dash.export_predictions(tmp_path / "preds.tsv")
    assert (
        cli_main(["--workspace", str(three_runs), "export-predictions", "2", "--out", str(tmp_path / "cli.tsv")]) == 0
    )
    assert done.path.read_text() == (tmp_path / "cli.tsv").read_text()


def test_alignment_view_draws_the_study(qtbot, three_runs, make_window):
    with open_workspace(three_runs) as ws:
        alignment.build_set(ws, "s1", [1, 2], [load_extractor("llm:baseline:first")], size=10, seed=0)
        for n in range(12):
            task = alignment.next_for(ws, "s1", "ana")
            alignment.add_label(ws, task.item_id, "ana", "Z" if n % 5 == 0 else task.response.strip()[:1])
        report = alignment.alignment_report(ws, "s1")
    window = make_window(three_runs)
    view = window.view("alignment")
    window.show_view("alignment")
    assert view.set_combo.currentData() == "s1"
    bars = {bar_target(p)["extractor"]: p for p in view.chart.bars()}
    assert set(bars) == set(report.extractors)
    for name, e in report.extractors.items():
        assert bars[name].get_height() == pytest.approx(100 * e.overall.rate)
    # The error bars are the Wilson intervals.
    ax = view.chart.figure.axes[0]
    caps = sorted(round(y, 6) for line in ax.lines for y in line.get_ydata())
    for e in report.extractors.values():
        assert round(100 * e.overall.wilson_95[0], 6) in caps and round(100 * e.overall.wilson_95[1], 6) in caps
    assert [row[0] for row in view.table.rows] == list(report.extractors)
    assert view.table.rows[0][3] == f"{100 * report.extractors['rules'].overall.rate:.1f} %"
    # The confusion matrix of the chosen extractor.
    view.extractor.setCurrentIndex(view.extractor.findData("llm:baseline:first"))
    image = view.chart.figure.axes[1].images[0]
    assert image.get_array().tolist() == [list(row) for row in report.extractors["llm:baseline:first"].confusion.matrix]


def test_screenshots_of_the_new_views(qtbot, three_runs, tmp_path):
    from PySide6.QtGui import QImage

    for view in ("dashboard", "alignment"):
        out = tmp_path / f"{view}.png"
        assert cli_main(["--workspace", str(three_runs), "gui", "--screenshot", str(out), "--view", view]) == 0
        assert QImage(str(out)).width() == 1280


def test_table_csv_export_neutralises_formula_cells(qtbot, tmp_path):
    """The app's "Export table as CSV" follows the CSV-injection rule of evaluator/outfiles.csv_cell."""
    from gui.tables import RowsModel

    model = RowsModel(("=Model", "Note"))
    model.set_rows([("=cmd|' /C calc'!A0", "-0.5"), ("@SUM(A1)", "plain"), ("a\rb", "+1")])
    assert write_csv(model, tmp_path / "t.csv") == 3
    rows = list(csv.reader(open(tmp_path / "t.csv", encoding="utf-8", newline="")))
    assert rows == [["'=Model", "Note"], ["'=cmd|' /C calc'!A0", "'-0.5"], ["'@SUM(A1)", "plain"], ["a\rb", "'+1"]]


SERVER_MODEL = "Qwen/Qwen2.5-VL-72B-Instruct-AWQ"


@pytest.fixture
def many_baselines(demo_ws, serve, monkeypatch):
    """demo_ws's run 1 (baseline:first) and four more baseline runs on demo (2-5), and a server model's run (6)
    whose spec ends in a long URL and a key variable: what the walk found cut to "b…" and "…key_env=…"."""
    for args in (
        ["--model", "baseline:random"],
        ["--model", "baseline:random", "--strategy", "vanilla"],
        ["--model", "baseline:random?seed=3"],
        ["--model", "baseline:frequent"],
    ):
        assert cli_main(["--workspace", str(demo_ws), "run", "--bench", "demo", *args]) == 0
    server = serve()
    monkeypatch.setenv("VLMDESK_TEST_KEY", "not-a-secret")
    spec = f"openai:{SERVER_MODEL}@{server.url}?key_env=VLMDESK_TEST_KEY"
    assert cli_main(["--workspace", str(demo_ws), "run", "--bench", "demo", "--model", spec, "--limit", "4"]) == 0
    return demo_ws


def _at_1024(window, scale=1.25):
    from PySide6.QtWidgets import QApplication

    window.set_appearance(theme="dark", font_scale=scale)
    window.resize(1024, 700)
    for _ in range(3):
        QApplication.processEvents()


def test_the_runs_lists_keep_each_model_readable_at_1024(qtbot, many_baselines, make_window):
    """Results › Charts and Runs at 1024×700, text ×1.25: the Model column is at least MODEL_CHARS characters (the
    figure columns beside it squeezed it to "b…"), a baseline's spec shows whole, and a server model keeps its
    name — never the end of its URL."""
    import sqlite3

    from gui.runs_list import MODEL_CHARS

    with sqlite3.connect(many_baselines) as conn:  # an unfinished run: the narrow list marks it by its number
        conn.execute("UPDATE runs SET status = 'interrupted' WHERE id = 5")
    window = make_window(many_baselines)
    try:
        _at_1024(window)
        for name in ("results", "runs"):
            window.show_view(name)
            view = window.view(name).runs
            qtbot.waitUntil(lambda view=view: not view.computing, timeout=10_000)
            header, metrics = view.table.horizontalHeader(), view.table.fontMetrics()
            width = header.sectionSize(view.model_column)
            assert width >= metrics.averageCharWidth() * MODEL_CHARS, (name, width)
            shown = {run_id: view.shown_model(row) for row, run_id in enumerate(view.model.payloads)}
            assert shown[2] == shown[3] == "baseline:random" and shown[5] == "baseline:frequent", shown
            assert shown[4].startswith("baseli") and shown[4].endswith("?seed=3"), shown  # elided in the middle
            assert shown[6].startswith("Qwen2") and "key_env" not in shown[6] and "127.0.0.1" not in shown[6], shown
            row = view.model.payloads.index(6)
            assert view.model.data(view.model.index(row, view.model_column)).startswith("openai:Qwen/")  # kept whole
            row = view.model.payloads.index(5)
            if name == "results":  # no Status column: the score keeps its room, the status marks the number
                assert "Status" not in view.model.columns and view.model.rows[row][0] == "5 ■"
                assert view.model.data(view.model.index(row, 0), Qt.ItemDataRole.ToolTipRole) == "run 5: interrupted"
            else:
                assert view.model.rows[row][view.model.columns.index("Status")] == "interrupted"
    finally:
        window.set_appearance(theme="light", font_scale=1.0)


def test_a_chart_legend_stays_inside_and_names_the_server_model(qtbot, many_baselines, make_window):
    """The legend of the ability chart, at the canvas's width in a 1024×700 window: inside the figure, each label
    starting with its run and naming the model (it was cut from the left: "….0.1:42745/v1?key_env=…")."""
    window = make_window(many_baselines)
    try:
        _at_1024(window)
        window.show_view("results")
        dash = window.view("results")
        dash.show_runs([2, 3, 6], chart="l2")
        qtbot.waitUntil(lambda: not dash.computing, timeout=10_000)
        figure = dash.chart.figure
        dash.chart.canvas.draw()
        legend = figure.axes[0].get_legend()
        box = legend.get_window_extent()
        assert 0 <= box.x0 and box.x1 <= figure.bbox.width, (box, figure.bbox.width)
        labels = [t.get_text() for t in legend.get_texts()]
        server = [label for label in labels if label.startswith("run 6 · ")]
        assert len(server) == 2 and all("Qwen2" in label and "key_env" not in label for label in server), labels
        assert any(label.startswith("run 2 · baseline:random") for label in labels), labels
        # A wider canvas gets the labels back whole (the legend is laid out again from what was asked).
        window.resize(1600, 900)
        QApplication.processEvents()
        dash.chart.canvas.draw()
        labels = [t.get_text() for t in figure.axes[0].get_legend().get_texts()]
        assert "run 6 · openai:Qwen2.5-VL-72B-Instruct-AWQ — circular" in labels, labels
    finally:
        window.set_appearance(theme="light", font_scale=1.0)


def test_export_chart_says_where_it_saved_and_refuses_a_bad_path_in_one_line(
    qtbot, three_runs, make_window, tmp_path, monkeypatch
):
    from gui import file_dialogs

    window = make_window(three_runs)
    said = []
    monkeypatch.setattr(
        window.message_bar, "show_message", lambda text, kind="error", details=None: said.append((text, kind))
    )
    dash = window.view("results")
    window.show_view("results")
    dash.show_runs([2], chart="l2")
    qtbot.waitUntil(lambda: not dash.computing, timeout=10_000)
    chosen = []
    monkeypatch.setattr(file_dialogs, "save_file", lambda *a, **k: chosen.pop(0))
    target = tmp_path / "charts" / "l2.svg"
    target.parent.mkdir()
    for path in (target, tmp_path / "chart-without-suffix", tmp_path / "missing" / "l2.png"):
        chosen.append(str(path))
        qtbot.mouseClick(dash.chart.export_button, Qt.MouseButton.LeftButton)
    assert b"<svg" in target.read_bytes()[:400]
    assert said[0] == (f"Chart saved to {target.resolve()}", "info")
    for (text, kind), bad in zip(said[1:], ("chart-without-suffix", "missing")):
        assert kind == "error" and text.startswith("Chart not exported: ") and bad in text and "\n" not in text
    assert "png, .svg or .pdf" in said[1][0] and "no such directory" in said[2][0]
    assert len(said) == 3 and [p.name for p in target.parent.iterdir()] == ["l2.svg"]
    assert not (tmp_path / "chart-without-suffix").exists() and not (tmp_path / "missing").exists()


def test_headers_stay_on_one_line_whole_beside_free_space_elided_with_a_tooltip_otherwise(
    qtbot, many_baselines, make_window
):
    """The researcher's tables and titles at 1280×800 with the largest text, then at 1024×700 ×1.25: no column title
    wraps (no word-wrap alignment, elided when its column is narrower); a column beside free space shows its title
    whole; every title has a tooltip with its whole text; the pane titles are one line, elided with a tooltip."""
    from PySide6.QtWidgets import QTableView

    from gui.fitting import ElidedLabel

    window = make_window(many_baselines)
    try:
        for size, scale in (((1280, 800), 1.75), ((1024, 700), 1.25)):
            window.set_appearance(theme="dark", font_scale=scale)
            window.resize(*size)
            seen = 0
            for name in ("results", "runs", "models", "alignment", "annotators"):
                window.show_view(name)
                view = window.view(name)
                if name == "results":
                    qtbot.waitUntil(lambda view=view: not view.runs.computing, timeout=10_000)
                QApplication.processEvents()
                for table in view.findChildren(QTableView):
                    if not table.isVisible() or table.model() is None:
                        continue
                    seen += 1
                    header, model = table.horizontalHeader(), table.model()
                    assert not header.defaultAlignment().value & Qt.TextFlag.TextWordWrap.value
                    assert header.textElideMode() == Qt.TextElideMode.ElideRight
                    shown = [c for c in range(model.columnCount()) if not header.isSectionHidden(c)]
                    free = table.viewport().width() - sum(header.sectionSize(c) for c in shown)
                    for c in shown:
                        title = model.headerData(c, Qt.Orientation.Horizontal)
                        assert model.headerData(c, Qt.Orientation.Horizontal, Qt.ItemDataRole.ToolTipRole) == title
                        if free >= 0:  # room to spare: every title whole
                            assert header.sectionSize(c) >= header.fontMetrics().horizontalAdvance(title), (name, title)
                for label in view.findChildren(ElidedLabel):
                    if label.isVisible() and label.text():
                        assert label.height() <= 2 * label.fontMetrics().height(), (name, label.text())  # one line
                        assert label.toolTip() == (label.text() if label.elided() else ""), (name, label.text())
            assert seen >= 6, seen
    finally:
        window.set_appearance(theme="light", font_scale=1.0)
