"""The suite plan dialog (Runs › Suite plan…): open a plan, its suite table, a bad edit's one-line error, save, run."""

from __future__ import annotations

import json
import os

import pytest

from gui.run_queue import RunJob
from vlmdesk.cli import main as cli_main

PLAN = """\
[settings]
max_new_tokens = 16

[[model]]
spec = "baseline:first"
name = "First"

[[model]]
spec = "baseline:random"
name = "Random"

[[benchmark]]
name = "demo"

[[benchmark]]
name = "demo-pope"

[[benchmark]]
name = "demo-open"
"""


def suite_json(ws_path, plan, capsys) -> dict:
    capsys.readouterr()
    assert cli_main(["--workspace", str(ws_path), "report", "--plan", str(plan), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def table_texts(dialog) -> list[list[str]]:
    m = dialog.table_model
    return [[m.data(m.index(r, c)) for c in range(m.columnCount())] for r in range(m.rowCount())]


@pytest.fixture
def finished_suite(demo_ws, tmp_path):
    plan = tmp_path / "suite.toml"
    plan.write_text(PLAN)
    assert cli_main(["--workspace", str(demo_ws), "run", "--plan", str(plan)]) == 0
    return plan


def test_the_dialog_opens_a_plan_and_shows_the_suite_table_of_the_command_line(
    make_window, demo_ws, finished_suite, qtbot, capsys
):
    window = make_window(demo_ws)
    dialog = window.view("runs").open_plan()
    assert dialog.open_path(finished_suite)
    qtbot.waitUntil(lambda: dialog.table_model.rowCount() == 2, timeout=60_000)
    expected = suite_json(demo_ws, finished_suite, capsys)
    assert dialog.table_model.columns == ("Model", "demo", "demo-pope", "demo-open", "Average")
    assert table_texts(dialog) == [
        [row["model"], *(c["text"] for c in row["cells"]), f"{row['average']:.1f}"] for row in expected["rows"]
    ]
    assert dialog.problem.text() == "" and not dialog.dirty
    assert "6 runs, 0 not finished" in dialog.status.text()


def test_a_bad_edit_shows_one_line_that_never_moves_the_layout_and_save_writes_the_file(
    make_window, demo_ws, finished_suite, qtbot
):
    window = make_window(demo_ws)
    dialog = window.view("runs").open_plan()
    dialog.open_path(finished_suite)
    qtbot.waitUntil(lambda: dialog.table_model.rowCount() == 2, timeout=60_000)
    editor_geometry, table_geometry = dialog.editor.geometry(), dialog.table.geometry()
    # A syntax error: told as you type, by the plan reader (file, line, field), before any save.
    dialog.editor.setPlainText(PLAN.replace("max_new_tokens = 16", "max_new_tokens = = 16"))
    assert dialog.dirty
    assert dialog.problem.text().startswith(f"{finished_suite}:2: syntax: not TOML")
    qtbot.wait(50)
    assert dialog.editor.geometry() == editor_geometry and dialog.table.geometry() == table_geometry
    # A key that is no run option: the command line's check, after the save that writes the file.
    bad = PLAN.replace('name = "Random"', 'name = "Random"\n[model.settings]\ntemprature = 3')
    dialog.editor.setPlainText(bad)
    assert dialog.problem.text() == ""  # its shape is fine
    assert dialog.save()
    assert finished_suite.read_text() == bad and not dialog.dirty
    qtbot.waitUntil(lambda: dialog.problem.text() != "", timeout=60_000)
    assert dialog.problem.text().startswith(f"{finished_suite}:12: model[2].settings.temprature: not a vlmdesk run")
    assert dialog.editor.geometry() == editor_geometry and dialog.table.geometry() == table_geometry


def test_run_plan_queues_each_run_not_finished_as_its_own_command(make_window, demo_ws, tmp_path, qtbot):
    plan = tmp_path / "suite.toml"
    plan.write_text(PLAN)
    assert cli_main(["--workspace", str(demo_ws), "run", "--bench", "demo", "--model", "baseline:first",
                     "--max-new-tokens", "16"]) == 0  # fmt: skip
    window = make_window(demo_ws)
    runs_view = window.view("runs")
    dialog = runs_view.open_plan()
    dialog.open_path(plan)
    qtbot.waitUntil(lambda: dialog.table_model.rowCount() == 2, timeout=60_000)
    assert table_texts(dialog)[0][2] == "not run" and table_texts(dialog)[0][1] != "not run"
    dialog.run_plan()
    qtbot.waitUntil(lambda: len(runs_view.queue.jobs) == 5, timeout=60_000)  # 6 runs, one finished already
    assert [j.request.args[:5] for j in runs_view.queue.jobs][0] == ("run", "--bench", "demo-pope", "--model",
                                                                      "baseline:first")  # fmt: skip
    qtbot.waitUntil(lambda: all(j.state == RunJob.FINISHED for j in runs_view.queue.jobs), timeout=120_000)
    # The table follows the queue: every cell finished, each model's average given.
    qtbot.waitUntil(lambda: all(row[-1] != "-" for row in table_texts(dialog)), timeout=60_000)
    assert not any("not run" in cell for row in table_texts(dialog) for cell in row)


def test_screenshot_of_a_finished_2x3_suite(make_window, demo_ws, finished_suite, qtbot):
    out = os.environ.get("VLMDESK_SHOTS")
    for theme in ("light", "dark"):
        window = make_window(demo_ws, font_scale=1.25, theme=theme)
        window.resize(1024, 700)
        dialog = window.view("runs").open_plan()
        dialog.resize(1024, 700)
        dialog.open_path(finished_suite)
        qtbot.waitUntil(lambda d=dialog: d.table_model.rowCount() == 2, timeout=60_000)
        assert dialog.minimumSizeHint().width() <= 1024 and dialog.minimumSizeHint().height() <= 700
        if out:
            dialog.grab().save(os.path.join(out, f"plan_dialog_{theme}.png"))
        window.close()


def test_the_dialogs_buttons_have_the_editors_keys(make_window, demo_ws, tmp_path, qtbot):
    """Keyboard-first: Ctrl+S saves the plan being edited, Ctrl+O opens one, Ctrl+Enter runs it (the keys are the
    buttons' own; walked in a real window, where the offscreen platform cannot make the dialog the active one)."""
    from PySide6.QtGui import QKeySequence

    plan = tmp_path / "suite.toml"
    plan.write_text(PLAN)
    window = make_window(demo_ws)
    dialog = window.view("runs").open_plan()
    dialog.open_path(plan)
    assert dialog.save_button.shortcut() == QKeySequence("Ctrl+S")
    assert dialog.open_button.shortcut() == QKeySequence("Ctrl+O")
    assert dialog.run_button.shortcut() == QKeySequence("Ctrl+Return")
    dialog.editor.appendPlainText("# edited")
    assert dialog.dirty
    dialog.save_button.click()
    assert not dialog.dirty and plan.read_text().rstrip().endswith("# edited")


def test_the_dialog_refuses_a_file_that_is_no_plan_before_opening_it(make_window, demo_ws, monkeypatch):
    """The workspace file itself chosen as a plan: refused by its suffix, never opened in the app's process (closing a
    descriptor of it would drop SQLite's locks)."""
    import evaluator.formats.plan_file as plan_file

    opened = []
    real = plan_file.read_input_text
    monkeypatch.setattr(plan_file, "read_input_text", lambda path, *a, **k: opened.append(path) or real(path, *a, **k))
    window = make_window(demo_ws)
    dialog = window.view("runs").open_plan()
    assert not dialog.open_path(demo_ws)
    assert opened == [] and dialog.problem.text().endswith("a plan file is .toml, .yaml or .yml")
    assert dialog.path is None
