"""The launcher's Variant group: off by default, its widgets become `vlmdesk run` options, and a label-mapped
run started from the form shows its variant in the runs list."""

from PySide6.QtCore import Qt

from db import open_workspace, runs
from evaluator.engine.runner import settings_of
from gui.run_queue import RunJob

WAIT = 120_000


def test_variants_are_off_by_default_and_become_options(qtbot, demo_ws, make_window):
    window = make_window(demo_ws)
    view = window.view("runs")
    window.show_view("runs")
    form = view.form
    form.set_choice(bench="demo", model="baseline:random")
    assert "--label-map" not in form.command.toPlainText() and not form.variant.body.isVisibleTo(form)
    form.variant.setChecked(True)
    assert form.variant.body.isVisibleTo(form)
    form.variant.label_map.setCurrentText("natural:1")
    form.variant.image.setCurrentIndex(form.variant.image.findData("fog"))
    form.variant.severity.setValue(5)
    form.variant.text.setCurrentIndex(form.variant.text.findData("mild_mix"))
    form.variant.options_too.setChecked(True)
    form.variant.shots.setValue(2)
    form.variant.selection.setCurrentText("similar")
    form.variant.cot.setChecked(True)
    command = form.command.toPlainText()
    for part in (
        "--label-map natural:1",
        "--corrupt image:fog:5",
        "--corrupt text:mild_mix",
        "--corrupt-options",
        "--shots 2 --shot-selection similar",
        "--cot",
        "--max-new-tokens 512",
    ):
        assert part in command, command
    # a yes/no benchmark cannot relabel options
    form.set_choice(bench="demo-pope")
    assert not form.variant.label_map.isEnabled() and "--label-map" not in form.command.toPlainText()
    form.variant.setChecked(False)
    assert "--cot" not in form.command.toPlainText() and "--corrupt" not in form.command.toPlainText()


def test_a_label_mapped_run_from_the_form_is_listed_with_its_variant(qtbot, demo_ws, make_window):
    window = make_window(demo_ws)
    view = window.view("runs")
    window.show_view("runs")
    view.form.set_choice(bench="demo", model="baseline:random", batch=16)
    view.form.variant.setChecked(True)
    view.form.variant.label_map.setCurrentText("neutral:0")
    qtbot.mouseClick(view.form.start, Qt.LeftButton)
    job = view.queue.jobs[-1]
    qtbot.waitUntil(lambda: job.state not in (RunJob.QUEUED, RunJob.RUNNING), timeout=WAIT)
    assert job.state == RunJob.FINISHED, job.stderr
    with open_workspace(demo_ws) as ws:
        assert settings_of(runs.get_run(ws, job.run_id)).label_map == "neutral:0"
    view.runs.reload()
    row = view.runs.model.payloads.index(job.run_id)
    assert view.runs.model.rows[row][4] == "circular · neutral:0 labels"
