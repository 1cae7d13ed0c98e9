"""Workspace › Judge open answers… runs `vlmdesk judge` in a child process (the same function as the command line):
the dialog offers the open runs only, and the verdicts end up in the workspace."""

from db import open_judgements, open_workspace
from tests.servers import Step, completion
from vlmdesk.cli import main as cli_main

WAIT = 120_000


def test_judge_open_answers_from_the_workspace_menu(qtbot, demo_ws, make_window, serve):
    assert cli_main(["--workspace", str(demo_ws), "run", "--bench", "demo-open", "--model", "baseline:first"]) == 0
    server = serve(respond=lambda text: Step(200, completion("[Reason] Not what the reference says.\n[Verdict] wrong")))
    judge = f"openai:judge@{server.url}?retries=0"
    window = make_window(demo_ws)
    asked = []

    def answer(name, fields):
        asked.append((name, {f.name: f for f in fields}))
        return {"run": 2, "judge": judge, "rubric": ""}

    window.commands.answer = answer
    window.menu_action("Judge open answers…").trigger()
    process = window.commands.running[-1]
    qtbot.waitUntil(lambda: process.finished, timeout=WAIT)
    assert process.exit_code == 0, process.stderr
    ((name, fields),) = asked
    assert name == "judge" and [value for _, value in fields["run"].choices] == [2]  # run 1 is multiple choice
    assert process.args == ["judge", "2", "--judge", judge]
    with open_workspace(demo_ws) as ws:
        stored = open_judgements.judgements_of(ws, 2)
    assert len(stored) == 8 == server.count and {j.verdict for j in stored} == {"wrong"}
    assert "judge score 0.000 over 8 items" in window.message_bar.label.text()


def test_the_judge_is_chosen_among_the_saved_models_or_typed(qtbot, demo_ws, make_window):
    """The judge was free text only: the saved models are offered (by name, their specs in the tooltips) in an
    editable list, and a spec typed still goes to the command as written."""
    from PySide6.QtCore import Qt

    from gui.commands import CommandDialog

    assert cli_main(["--workspace", str(demo_ws), "run", "--bench", "demo-open", "--model", "baseline:first"]) == 0
    for name, spec in (("judge-a", "openai:judge-a@http://127.0.0.1:9/v1"), ("coin", "baseline:random")):
        assert cli_main(["--workspace", str(demo_ws), "models", "add", name, spec]) == 0
    window = make_window(demo_ws)
    asked = {}
    window.commands.answer = lambda name, fields: asked.setdefault(name, fields) and None
    window.menu_action("Judge open answers…").trigger()
    window.menu_action("Judge the language of a run…").trigger()
    for name in ("judge", "desiderata language"):
        dialog = CommandDialog(name, asked[name], window)
        qtbot.addWidget(dialog)
        judge = dialog.widgets["judge"]
        assert [judge.itemText(i) for i in range(judge.count())] == ["judge-a", "coin"]
        assert judge.itemData(0, Qt.ItemDataRole.ToolTipRole) == "openai:judge-a@http://127.0.0.1:9/v1"
        assert judge.isEditable()
        judge.setCurrentIndex(0)
        assert dialog.values()["judge"] == "judge-a"  # a saved model's name: the command reads its spec
        judge.setEditText("openai:other@http://127.0.0.1:9/v1")
        assert dialog.values()["judge"] == "openai:other@http://127.0.0.1:9/v1"
