"""The runs lists (Runs and Results) say what a run's server said its passes cost, in the model's tooltip, only for a
run whose passes carry usage."""

import dataclasses

from db import open_workspace, runs
from evaluator.analysis.report import describe_tokens
from tests.db.test_pass_tokens import new_run_like_first


def test_runs_lists_show_tokens_only_for_runs_with_usage(qtbot, demo_ws, make_window):
    with open_workspace(demo_ws) as ws:
        run_id = new_run_like_first(ws, "with-usage")
        passes = [
            dataclasses.replace(p, run_id=run_id, prompt_tokens=1200 + i, completion_tokens=3)
            for i, p in enumerate(runs.predictions_of(ws, 1))
        ]
        runs.add_predictions(ws, passes)
        line = describe_tokens(runs.token_usage(ws, run_id))
    assert line == f"tokens {sum(p.prompt_tokens for p in passes):,} prompt + {3 * len(passes)} completion over " + (
        f"{len(passes)} passes"
    )
    window = make_window(demo_ws)
    for name in ("runs", "results"):
        view = window.view(name)
        window.show_view(name)  # listed when shown; the tokens come with the figures, off the GUI thread
        qtbot.waitUntil(lambda view=view: not view.runs.computing, timeout=5000)
        model = view.runs.model
        column = model.columns.index("Model")
        tip = model.data(model.index(model.payloads.index(run_id), column), 3)  # Qt.ToolTipRole
        assert tip.splitlines()[-1] == line
        assert "tokens" not in model.data(model.index(model.payloads.index(1), column), 3)
