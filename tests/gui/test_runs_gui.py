"""Runs launched from the app: real `vlmdesk run --json-progress` child processes (QProcess), their progress,
cancel and resume, crashes, the queue, and the Models panel's test process."""

import os
import signal

import pytest
from PySide6.QtCore import Qt

from db import open_workspace, runs
from evaluator.analysis.report import run_report
from evaluator.scoring.choices import CHEF_COT_MAX_NEW_TOKENS
from gui.run_queue import RunJob
from gui.runs_view import STRATEGIES
from tests.backend_plugins import slow_backend  # noqa: F401 (fixture)
from vlmdesk.cli import main as cli_main

WAIT = 120_000  # ms: a child process imports the whole stack (torch for hf:) on a busy CI machine


def _launch(window, qtbot, **choice):
    view = window.view("runs")
    window.show_view("runs")
    view.form.set_choice(**choice)
    seen = []
    view.queue.jobChanged.connect(lambda job: seen.append(dict(job.progress)))
    qtbot.mouseClick(view.form.start, Qt.LeftButton)
    return view, view.queue.jobs[-1], seen


def _scores(report):
    return {k: report.to_json()[k] for k in ("overall", "by_l2", "by_category", "questions", "model_calls")}


def test_a_baseline_run_from_the_form_reports_progress_and_results(qtbot, demo_ws, make_window):
    window = make_window(demo_ws)
    view, job, seen = _launch(window, qtbot, bench="demo", model="baseline:random", batch=4)
    assert "vlmdesk run --bench demo --model baseline:random" in view.form.command.toPlainText()
    qtbot.waitUntil(lambda: job.state not in (RunJob.QUEUED, RunJob.RUNNING), timeout=WAIT)
    assert job.state == RunJob.FINISHED, job.stderr
    progress = [p for p in seen if "calls_per_s" in p]
    assert len(progress) >= 3 and progress[-1]["items_done"] == progress[-1]["items_total"] == 30
    assert [p["passes_done"] for p in progress] == sorted(p["passes_done"] for p in progress)
    assert view.card.bar.value() == 30 and "calls/s" in view.card.stats.text()
    with open_workspace(demo_ws) as ws:
        report = run_report(ws, job.run_id)
    assert report.status == "finished"
    # The runs list shows it with its figures (computed off the GUI thread), and the Results tab draws it.
    qtbot.waitUntil(lambda: not view.runs.computing, timeout=WAIT)
    row = view.runs.model.payloads.index(job.run_id)
    assert view.runs.model.rows[row][1] == "finished"
    assert view.runs.model.rows[row][6] == f"{100 * report.mcq.overall.circular:.1f} %"
    window.show_results([job.run_id])
    dash = window.view("results")
    qtbot.waitUntil(lambda: not dash.computing, timeout=WAIT)  # its report comes from the worker
    assert [r.run_id for r in dash.reports] == [job.run_id] and dash.chart.bars()
    # Browse offers the new run in its run filter without reopening the workspace.
    run_filter = window.view("browse").run
    assert run_filter.findData(job.run_id) > 0


def test_a_tiny_local_vlm_runs_from_the_form(qtbot, demo_ws, make_window, tiny_llava_dir):
    window = make_window(demo_ws)
    view, job, seen = _launch(
        window,
        qtbot,
        bench="demo",
        model=f"hf:{tiny_llava_dir}?device=cpu",
        strategy="VanillaEval",
        limit=3,
        max_tokens=4,
        batch=3,
    )
    qtbot.waitUntil(lambda: job.state not in (RunJob.QUEUED, RunJob.RUNNING), timeout=WAIT)
    assert job.state == RunJob.FINISHED, job.stderr
    assert any(p.get("items_done") == 3 for p in seen)
    with open_workspace(demo_ws) as ws:
        run = runs.get_run(ws, job.run_id)
        assert run.model_spec.startswith("hf:") and run.strategy == "vanilla" and run.predictions == 3
        assert run_report(ws, job.run_id).questions == 3
    assert job.run_id in view.runs.model.payloads


@pytest.mark.usefixtures("slow_backend")
def test_cancel_then_resume_gives_the_scores_of_an_uninterrupted_run(qtbot, demo_ws, make_window):
    # The test-only slow backend: slow enough that the cancel lands mid-run on a loaded machine.
    spec = "slow:random?delay_ms=150"
    window = make_window(demo_ws)
    view, job, seen = _launch(window, qtbot, bench="demo", model=spec, batch=2)
    qtbot.waitUntil(lambda: job.progress.get("passes_done", 0) >= 6, timeout=WAIT)
    assert view.card.cancel.isEnabled()
    qtbot.mouseClick(view.card.cancel, Qt.LeftButton)
    qtbot.waitUntil(lambda: job.state == RunJob.CANCELLED, timeout=WAIT)
    with open_workspace(demo_ws) as ws:
        stopped = runs.get_run(ws, job.run_id)
    assert stopped.status == "interrupted" and 6 <= stopped.predictions < 39
    # Resume from the runs list (vlmdesk run --resume ID).
    view.runs.select([job.run_id])
    assert view.resume.isEnabled()
    view.resume.click()
    resumed = view.queue.jobs[-1]
    assert resumed.request.args == ("run", "--resume", str(job.run_id))
    qtbot.waitUntil(lambda: resumed.state not in (RunJob.QUEUED, RunJob.RUNNING), timeout=WAIT)
    assert resumed.state == RunJob.FINISHED, resumed.stderr
    assert resumed.start_event["resumed"] is True and resumed.start_event["passes_done"] == stopped.predictions
    assert (
        cli_main(["--workspace", str(demo_ws), "run", "--bench", "demo", "--model", spec, "--batch-size", "2", "--new"])
        == 0
    )
    with open_workspace(demo_ws) as ws:
        again = max(r.id for r in runs.list_runs(ws))
        assert _scores(run_report(ws, job.run_id)) == _scores(run_report(ws, again))
        assert run_report(ws, job.run_id).status == "finished"


@pytest.mark.usefixtures("slow_backend")
def test_crashing_runs_show_their_error_and_the_queue_goes_on(qtbot, demo_ws, make_window, tmp_path):
    window = make_window(demo_ws)
    view = window.view("runs")
    window.show_view("runs")  # its runs list is listed when shown: the killed run is resumed from it below
    queue = view.queue
    # A model that cannot load: the process exits with an error, the window shows it.
    view.form.set_choice(bench="demo", model=f"hf:{tmp_path / 'no-such-model'}")
    view.form.start.click()
    broken = queue.jobs[-1]
    # A slow run queued behind it, killed with SIGKILL mid-way (what an out-of-memory kill looks like).
    view.form.set_choice(model="slow:random?delay_ms=150", batch=2)  # still running when killed, under load
    view.form.start.click()
    killed = queue.jobs[-1]
    # A third run queued behind both still runs: one after another, never two at once.
    view.form.set_choice(model="baseline:first", batch=8)
    view.form.start.click()
    last = queue.jobs[-1]
    running_at_once = []
    queue.jobChanged.connect(lambda _: running_at_once.append(sum(j.state == RunJob.RUNNING for j in queue.jobs)))
    qtbot.waitUntil(lambda: broken.state == RunJob.FAILED, timeout=WAIT)
    assert "model directory not found" in broken.message and "Traceback" not in broken.stderr
    assert window.message_bar.isVisible() and "model directory not found" in window.message_bar.label.text()
    qtbot.waitUntil(lambda: killed.progress.get("passes_done", 0) >= 4, timeout=WAIT)
    assert last.state == RunJob.QUEUED
    os.kill(killed.process.pid(), signal.SIGKILL)
    qtbot.waitUntil(lambda: killed.state == RunJob.FAILED, timeout=WAIT)
    assert killed.process.crashed and killed.message.startswith("the process crashed")
    qtbot.waitUntil(lambda: last.state == RunJob.FINISHED, timeout=WAIT)
    assert max(running_at_once) == 1
    # The app still works: the killed run can be resumed to the end from the runs list.
    view.runs.select([killed.run_id])
    view.resume.click()
    resumed = queue.jobs[-1]
    qtbot.waitUntil(lambda: resumed.state == RunJob.FINISHED, timeout=WAIT)
    with open_workspace(demo_ws) as ws:
        assert runs.get_run(ws, killed.run_id).status == "finished"
    view.jobs.setCurrentRow(queue.jobs.index(broken))
    assert "model directory not found" in view.log.toPlainText()


def test_models_panel_saves_specs_without_secrets_and_tests_them_in_a_process(qtbot, demo_ws, make_window, tmp_path):
    window = make_window(demo_ws)
    view = window.view("models")
    window.show_view("models")
    form = view.form
    form.name.setText("local-server")
    # One page per registered backend, built from the fields its entry declares.
    assert [form.kind.itemData(i) for i in range(form.kind.count())] == [
        "baseline",
        "hf",
        "vllm",
        "sglang",
        "openai",
        "spec",
    ]
    form.set_values("openai", {"": "qwen", "@": "http://127.0.0.1:9/v1", "key_env": "MY_KEY"})
    assert form.spec() == "openai:qwen@http://127.0.0.1:9/v1?key_env=MY_KEY"
    form.add.click()
    assert view.add_model("leaky", "openai:qwen@http://127.0.0.1:9/v1?api_key=sk-0123456789abcdefghij") is False
    assert "API key" in window.message_bar.label.text()
    assert view.add_model("coin", "baseline:random") and view.add_model("broken", f"hf:{tmp_path / 'nothing'}")
    assert view.model.payloads == ["local-server", "coin", "broken"]
    assert cli_main(["--workspace", str(demo_ws), "models", "list"]) == 0  # the same store as the command
    # The launcher offers them by name.
    window.view("runs").form.reload()
    assert window.view("runs").form.model.findText("coin") >= 0
    view.select("coin")
    view.test_button.click()
    qtbot.waitUntil(lambda: view.process.finished, timeout=WAIT)
    assert view.output.toPlainText().count("✓ baseline:random loaded") == 1
    assert "Item 1 of demo" in view.output.toPlainText()
    view.select("broken")
    view.test_button.click()
    qtbot.waitUntil(lambda: view.process.finished, timeout=WAIT)
    assert "✗ test failed" in view.output.toPlainText()
    assert "model directory not found" in view.output.toPlainText()
    view.select("coin")
    view.remove_selected()
    assert view.model.payloads == ["local-server", "broken"]


def test_a_run_waiting_on_retry_after_says_so_and_cancel_ends_it(qtbot, demo_ws, make_window, serve):
    from tests.servers import Step

    server = serve([Step(429, {"error": {"message": "slow down"}}, {"Retry-After": "999999"})])
    window = make_window(demo_ws)
    view, job, _ = _launch(window, qtbot, bench="demo", model=f"openai:m@{server.url}?concurrency=1", limit=1)
    said = "server asked to retry after 999999 s; waiting 60 s (try 2 of 5)"
    qtbot.waitUntil(lambda: said in view.card.stats.text(), timeout=WAIT)
    assert job.state == RunJob.RUNNING and view.card.cancel.isEnabled()
    qtbot.mouseClick(view.card.cancel, Qt.LeftButton)
    qtbot.waitUntil(lambda: job.state == RunJob.CANCELLED, timeout=10_000)  # within the wait of 60 s, not after it
    assert "interrupted" in view.card.stats.text() and said not in view.card.stats.text()
    with open_workspace(demo_ws) as ws:
        assert runs.get_run(ws, job.run_id).status == "interrupted"


def test_models_tab_lists_the_verified_families_and_a_row_fills_the_form(qtbot, demo_ws, make_window):
    from PySide6.QtCore import Qt

    from evaluator.backends.families import FAMILIES

    window = make_window(demo_ws)
    view = window.view("models")
    window.show_view("models")
    rows = view.families.rows
    assert [r[1] for r in rows] == [f.model_type for f in FAMILIES]
    off = next((r for r, f in enumerate(FAMILIES) if f.share_off), None)
    if off is not None:
        assert view.families.data(view.families.index(off, 2), Qt.ItemDataRole.ToolTipRole).startswith("off: ")
    qwen = next(r for r, f in enumerate(FAMILIES) if f.model_type == "qwen2_5_vl")
    view.families_table.setFocus()
    view.families_table.setCurrentIndex(view.families.index(qwen, 0))
    qtbot.keyClick(view.families_table, Qt.Key.Key_Return)
    assert view.form.spec() == f"hf:{FAMILIES[qwen].checkpoint}"
    assert view.form.name.text() == "qwen2.5-vl-3b-instruct"
    assert view.add_model(view.form.name.text(), view.form.spec())
    assert "qwen2.5-vl-3b-instruct" in view.model.payloads


def test_the_launcher_offers_chefs_calibration_score_with_its_thought_length(qtbot, demo_ws, make_window):
    window = make_window(demo_ws)
    form = window.view("runs").form
    label = next(lbl for lbl, _, likelihood in STRATEGIES["mcq"] if likelihood == "chef")
    form.set_choice(bench="demo", model="baseline:random", strategy=label)
    command = form.command.toPlainText()
    assert "--likelihood-score chef" in command and "--strategy vanilla" in command
    assert form.max_tokens.value() == CHEF_COT_MAX_NEW_TOKENS  # ChEF's chain of thought is 256 tokens
    form.set_choice(strategy="VanillaEval")
    assert form.max_tokens.value() == 32 and "--likelihood" not in form.command.toPlainText()


@pytest.mark.parametrize("scale", [1.25, 1.75])
def test_start_run_is_in_sight_at_1024x700_whatever_the_text_size(qtbot, demo_ws, make_window, scale):
    """The launcher's "Start run" was below the fold even at 1280×800 (the form ended at "Variant" at 1024×700): the
    fields scroll and the action row stays under them, whole and clickable, and no field is cut on the right."""
    from PySide6.QtCore import QPoint, QRect
    from PySide6.QtWidgets import QApplication

    window = make_window(demo_ws)
    try:
        window.set_appearance(theme="dark", font_scale=scale)
        window.resize(1024, 700)
        window.show_view("runs")
        view = window.view("runs")
        view.form.variant.setChecked(True)  # the tallest form: the variant rows open
        for _ in range(3):
            QApplication.processEvents()
        start = view.form.start
        assert start.isVisible() and start.visibleRegion().boundingRect() == start.rect()  # not clipped at all
        place = QRect(start.mapTo(window, QPoint(0, 0)), start.size())
        assert window.rect().contains(place), (place, window.rect())
        fields = view.form.fields_scroll
        assert fields.verticalScrollBar().maximum() > 0  # the fields do scroll (else the test proves nothing)
        assert fields.widget().width() >= fields.widget().minimumSizeHint().width()  # nothing cut on the right
        assert fields.widget().width() <= fields.viewport().width()
        view.form.set_choice(bench="demo", model="baseline:first", limit=2)
        qtbot.mouseClick(start, Qt.LeftButton)
        job = view.queue.jobs[-1]
        qtbot.waitUntil(lambda: job.state != RunJob.RUNNING and job.state != RunJob.QUEUED, timeout=WAIT)
        assert job.state == RunJob.FINISHED, job.stderr
    finally:
        window.set_appearance(theme="light", font_scale=1.0)
