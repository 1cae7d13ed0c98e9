"""The launcher's prompt choice: vlmdesk's templates by default (left out of the command), VLMEvalKit's preset for
the model's family, or a template file picked through the app's file dialog; the run started from the form asks
with it and the runs list names its preset."""

from PySide6.QtCore import Qt

from db import open_workspace, runs
from gui import file_dialogs
from gui.run_queue import RunJob

WAIT = 120_000


def test_the_prompt_choice_becomes_the_commands_prompt(qtbot, demo_ws, make_window, tmp_path, monkeypatch):
    window = make_window(demo_ws)
    window.show_view("runs")
    view = window.view("runs")
    form = view.form
    form.set_choice(bench="demo", model="baseline:first")
    assert form.prompt.currentText() == "vlmdesk (default)" and "--prompt" not in form.command.toPlainText()
    form.set_choice(prompt="vlmevalkit")
    assert form.command.toPlainText().endswith("--prompt vlmevalkit")
    window.grab().save(str(tmp_path / "prompt-launcher.png"))

    template = tmp_path / "my template.txt"
    template.write_text("Q: {question}\n{options}\nLetter?")
    asked = []

    def pick(parent, title, start, filters=""):
        asked.append(title)
        return str(template)

    monkeypatch.setattr(file_dialogs, "open_file", pick)
    form.prompt.activated.emit(form.prompt.findData("file"))  # "Template file…", as a click on it does
    assert asked == ["Prompt template"] and form.prompt.currentText() == "File: my template.txt"
    assert form.command.toPlainText().endswith(f"--prompt '{template}'")
    monkeypatch.setattr(file_dialogs, "open_file", lambda *a, **k: None)  # cancelled: the file stays chosen
    form.prompt.activated.emit(form.prompt.findData("file"))
    assert form.prompt.currentText() == "File: my template.txt"

    form.set_choice(prompt="vlmevalkit")
    qtbot.mouseClick(form.start, Qt.LeftButton)
    job = view.queue.jobs[-1]
    qtbot.waitUntil(lambda: job.state not in (RunJob.QUEUED, RunJob.RUNNING), timeout=WAIT)
    assert job.state == RunJob.FINISHED, job.stderr
    with open_workspace(demo_ws) as ws:
        run = runs.get_run(ws, job.run_id)
        assert run is not None and run.config["prompt_preset"] == "vlmevalkit:default"
        assert runs.predictions_of(ws, run.id)[0].prompt.endswith("from the options above. \n")
    view.runs.reload()
    qtbot.waitUntil(lambda: "vlmevalkit:default prompt" in _list_texts(view), timeout=WAIT)


def _list_texts(view) -> str:
    model = view.runs.table.model()
    return " ".join(str(model.index(r, c).data()) for r in range(model.rowCount()) for c in range(model.columnCount()))
