"""File › Import predictions: the dialog's values run `vlmdesk import-predictions` in a child process; the run lands
in SQLite and is marked as imported in Runs and Results."""

from db import open_workspace, runs
from gui.prediction_import_dialog import PredictionImportDialog, model_from_file_name
from gui.runs_list import IMPORTED_ARROW, IMPORTED_MARK
from vlmdesk.cli import main as cli_main


def test_predictions_are_imported_from_the_app_and_marked(qtbot, tmp_path, demo_ws, make_window):
    out = tmp_path / "first_demo.tsv"
    assert cli_main(["--workspace", str(demo_ws), "export-predictions", "1", "--out", str(out)]) == 0
    window = make_window(demo_ws)

    dialog = PredictionImportDialog(["demo", "demo-pope"], str(tmp_path), "demo", window)
    qtbot.addWidget(dialog)
    ok = dialog.buttons.buttons()[0]
    assert not ok.isEnabled()  # no file, no model name yet
    qtbot.keyClicks(dialog.path, str(out))
    qtbot.keyClicks(dialog.model, "elsewhere-model")
    assert ok.isEnabled() and dialog.values() == (str(out), "demo", "elsewhere-model", None)

    done = window.import_predictions(*dialog.values())
    qtbot.waitUntil(lambda: done.finished, timeout=60_000)
    assert done.exit_code == 0, done.stderr
    assert "imported run 2" in window.message_bar.label.text()
    with open_workspace(demo_ws) as ws:
        run = runs.get_run(ws, 2)
    assert run.model_spec == "elsewhere-model" and run.status == "finished" and run.config["origin"]["file"] == out.name

    for name in ("runs", "results"):
        view = window.view(name)
        window.show_view(name)  # listed when shown
        model = view.runs.model
        row = model.payloads.index(2)
        column = model.columns.index("Model")
        shown = f"{IMPORTED_ARROW} elsewhere-model" if name == "results" else f"elsewhere-model {IMPORTED_MARK}"
        assert model.data(model.index(row, column)) == shown
        assert f"Imported from {out.name}" in model.data(model.index(row, column), 3)  # Qt.ToolTipRole
        assert IMPORTED_ARROW not in model.data(model.index(model.payloads.index(1), column))

    assert model_from_file_name("/d/llava_v1.5_7b_MMBench_DEV_EN.xlsx") == "llava_v1.5_7b"
    assert model_from_file_name("Qwen2-VL-7B_POPE.tsv") == "Qwen2-VL-7B"
    assert model_from_file_name("samples_pope_pop.jsonl") == model_from_file_name("preds.tsv") == ""

    failed = window.import_predictions(str(out), "demo-pope", "m")
    qtbot.waitUntil(lambda: failed.finished, timeout=60_000)
    assert failed.exit_code == 2 and "error: " in window.message_bar.label.text()
