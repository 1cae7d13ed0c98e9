"""K samples per item in the app (issue 38): the launcher's Samples box puts `--samples K` in the command and says the
command's own refusal under the form; a queue entry that runs K sample runs names each; the runs list names a
sample's number; Results shows a sampled run's mean@K and pass@k under its chart."""

from __future__ import annotations

import json
import random

from db import open_workspace, runs
from evaluator.analysis.report import run_report
from evaluator.analysis.samples import sample_lines
from gui.run_queue import RunJob, RunQueue, RunRequest
from tests.server_process import completion
from tests.servers import Step
from vlmdesk.cli import main as cli_main


def test_the_samples_box_adds_samples_to_the_command_and_says_why_it_cannot(qtbot, demo_ws, make_window, tmp_path):
    window = make_window(demo_ws)
    window.show_view("runs")
    form = window.view("runs").form
    form.set_choice(bench="demo", model="openai:m@http://127.0.0.1:9/v1")
    assert "--samples" not in form.command.toPlainText() and form.start.isEnabled()
    form.set_choice(samples=4)
    refusal = (
        "--samples 4 needs sampling: add ?temperature=0.7 to the model spec (greedy decoding gives the same answer "
        "4 times)"
    )
    assert form.problem.text() == refusal and not form.start.isEnabled() and form.start.toolTip() == refusal
    form.set_choice(model="openai:m@http://127.0.0.1:9/v1?temperature=0.7&seed=3")
    assert form.problem.text().startswith("--samples 4: the spec's seed=3 makes every sample the same")
    form.set_choice(model="openai:m@http://127.0.0.1:9/v1?temperature=0.7")
    assert form.problem.text() == "" and form.start.isEnabled()
    assert form.command.toPlainText().endswith("--samples 4")
    window.resize(1024, 700)
    form.fields_scroll.ensureWidgetVisible(form.samples)
    window.grab().save(str(tmp_path / "samples-launcher.png"))
    form.set_choice(again=True)
    assert form.problem.text().startswith("--new with --samples") and not form.start.isEnabled()


def test_a_queue_entry_running_several_sample_runs_names_each(qtbot, demo_ws):
    queue = RunQueue(str(demo_ws))
    job = RunJob(7, RunRequest(("run",), "m on demo"), queue)
    for run_id in (3, 8, 9):  # the events of `run --samples 3 --json-progress`: one start each sample run
        queue._event(job, {"event": "start", "run_id": run_id, "items_total": 5, "passes_done": 0})
    assert job.run_id == 9 and job.run_ids == [3, 8, 9]
    assert job.summary().startswith("Queue #7 → runs 3, 8, 9 · m on demo")


def test_results_show_a_sampled_runs_group_and_the_runs_list_its_sample_number(
    qtbot, serve, demo_ws, make_window, tmp_path
):
    rng = random.Random(5)
    server = serve(respond=lambda text: Step(200, completion(rng.choice("AB"))))
    spec = f"openai:m@{server.url}?concurrency=1&retries=0&temperature=0.7"
    args = ["--workspace", str(demo_ws), "run", "--bench", "demo", "--model", spec, "--samples", "2", "--json"]
    assert cli_main(args) == 0
    window = make_window(demo_ws)
    with open_workspace(demo_ws) as ws:
        group = [r for r in runs.list_runs(ws) if r.model_spec == spec]
        expected = sample_lines(run_report(ws, group[0].id))
    assert len(group) == 2 and expected and expected[0].startswith("samples: K=2")
    dash = window.view("results")
    window.show_view("results")
    dash.show_runs([group[1].id], chart="l2")
    qtbot.waitUntil(lambda: not dash.computing, timeout=10_000)
    assert dash.samples_note.isVisible()
    assert dash.samples_note.text() == f"Run {group[1].id} · {expected[1].strip()}"  # the headline figure
    assert expected[1].strip().startswith("CircularEval: mean@2 ")
    assert dash.samples_note.toolTip() == f"Run {group[1].id}\n" + "\n".join(expected)
    window.resize(1024, 700)
    qtbot.wait(300)  # the chart redrawn at the new size
    window.grab().save(str(tmp_path / "samples-results.png"))
    dash.show_runs([1], chart="l2")  # the baseline run of the demo: no siblings, no note
    qtbot.waitUntil(lambda: not dash.computing, timeout=10_000)
    assert not dash.samples_note.isVisible()
    window.show_view("runs")
    listed = window.view("runs").runs  # the Runs tab's list: its Strategy column
    qtbot.waitUntil(lambda: listed.table.model().rowCount() == 3, timeout=10_000)
    model = listed.table.model()
    strategies = {
        model.index(r, 0).data(): " ".join(str(model.index(r, c).data()) for c in range(model.columnCount()))
        for r in range(model.rowCount())
    }
    assert any("sample 1" in text for text in strategies.values())
    assert sum("sample" in text for text in strategies.values()) == 1
    json.dumps(expected)  # plain text, as the report prints it
