"""The app's run launcher without the hf extra (docs/adr/0041): a run of an hf: model fails in its queue with the
one line naming the extra; the next run, on a baseline, still runs."""

import os
import sys

import pytest

from gui.run_queue import RunJob
from tests.test_hf_extra import INSTALL, NO_HF

pytestmark = pytest.mark.base  # also run in the base install (.ci/base-install)

WAIT = 120_000  # ms: a child process imports the whole stack on a busy CI machine


def test_a_local_model_run_without_the_extra_fails_in_one_line_and_the_queue_goes_on(
    qtbot, demo_ws, make_window, tmp_path, monkeypatch
):
    site = tmp_path / "no-hf"
    site.mkdir()
    (site / "sitecustomize.py").write_text(NO_HF, encoding="utf-8")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), *sys.path]))  # the launcher's children inherit it
    model = tmp_path / "my-vlm"
    model.mkdir()
    window = make_window(demo_ws)
    view = window.view("runs")
    window.show_view("runs")
    view.form.set_choice(bench="demo", model=f"hf:{model}")
    view.form.start.click()
    local = view.queue.jobs[-1]
    view.form.set_choice(bench="demo", model="baseline:first", batch=8)
    view.form.start.click()
    after = view.queue.jobs[-1]
    qtbot.waitUntil(lambda: after.state not in (RunJob.QUEUED, RunJob.RUNNING), timeout=WAIT)
    assert local.state == RunJob.FAILED
    assert local.message == f"error: hf:{model} needs the hf extra (no module torch): {INSTALL}"
    assert "Traceback" not in local.stderr
    assert INSTALL in window.message_bar.label.text()
    assert after.state == RunJob.FINISHED, after.stderr
