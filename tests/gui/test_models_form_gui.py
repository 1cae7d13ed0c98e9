"""Models › Add a model, as found walking the app (issue 35): two fields were both labelled "Kind", Enter did not
save, and the panel changed width when the backend changed and grew a "spec:" line while typing, moving "Save model"
under the mouse. Real widgets at 1024×700 with the text two steps larger."""

from PySide6.QtCore import QPoint, QRect, Qt
from PySide6.QtWidgets import QApplication, QComboBox, QFormLayout, QLabel, QLineEdit

from db import models, open_workspace


def _settle():
    for _ in range(3):
        QApplication.processEvents()


def _open(make_window, path):
    window = make_window(path)
    window.set_appearance(theme="dark", font_scale=1.25)
    window.resize(1024, 700)
    window.show_view("models")
    _settle()
    return window, window.view("models")


def _saved(path):
    with open_workspace(path) as ws:
        return {m.name: m.spec for m in models.list_models(ws)}


def _labels(form):
    """The texts of the field labels in sight: the form's and the chosen backend's page's."""
    layouts = [form.layout(), form.stack.currentWidget().layout()]
    found = []
    for layout in layouts:
        if isinstance(layout, QFormLayout):
            for row in range(layout.rowCount()):
                item = layout.itemAt(row, QFormLayout.ItemRole.LabelRole)
                if item is not None and isinstance(item.widget(), QLabel) and item.widget().isVisible():
                    found.append(item.widget().text())
    return found


def _said(window, monkeypatch):
    said = []
    monkeypatch.setattr(
        window.message_bar, "show_message", lambda text, kind="error", details=None: said.append((text, kind))
    )
    return said


def test_the_fields_have_distinct_labels_on_every_backend(qtbot, demo_ws, make_window):
    window, view = _open(make_window, demo_ws)
    try:
        form = view.form
        for i in range(form.kind.count()):
            form.kind.setCurrentIndex(i)
            _settle()
            labels = _labels(form)
            assert len(labels) == len(set(labels)), (form.kind.currentData(), labels)
        form.kind.setCurrentIndex(form.kind.findData("baseline"))
        _settle()
        assert _labels(form)[:2] == ["Name", "Backend"] and "Kind" in _labels(form)  # the baseline's own kind
    finally:
        window.set_appearance(theme="light", font_scale=1.0)


def test_enter_in_any_field_saves_and_an_invalid_form_says_why_in_one_line(qtbot, demo_ws, make_window, monkeypatch):
    window, view = _open(make_window, demo_ws)
    said = _said(window, monkeypatch)
    try:
        form = view.form
        form.kind.setCurrentIndex(form.kind.findData("baseline"))
        # Enter with no name: nothing stored, one line naming what is missing.
        qtbot.keyClick(form.name, Qt.Key.Key_Return)
        assert _saved(demo_ws) == {} and len(said) == 1
        text, kind = said[-1]
        assert kind == "error" and "name" in text and "\n" not in text
        # Enter in the name field, in the backend's own choice list and in its line edit: each saves.
        baseline = form.inputs["baseline"]
        for name, widget in (("dice", form.name), ("first-try", baseline[""]), ("seeded", baseline["seed"])):
            form.name.setText(name)
            if widget is baseline[""]:
                baseline[""].setCurrentText("first")
            if widget is baseline["seed"]:
                baseline["seed"].setText("7")
            widget.setFocus()
            qtbot.keyClick(widget, Qt.Key.Key_Return)
            assert name in _saved(demo_ws), (name, said)
        assert _saved(demo_ws) == {
            "dice": "baseline:random",
            "first-try": "baseline:first",
            "seeded": "baseline:first?seed=7",
        }
        # A required field left empty: not saved, one line naming the field.
        form.kind.setCurrentIndex(form.kind.findData("hf"))
        form.name.setText("local")
        qtbot.keyClick(form.name, Qt.Key.Key_Return)
        assert "local" not in _saved(demo_ws)
        text, kind = said[-1]
        assert kind == "error" and text == "Model not saved: fill in Model directory or hub id"
        # The same name twice: the store's one-line reason.
        form.kind.setCurrentIndex(form.kind.findData("baseline"))
        form.name.setText("dice")
        qtbot.keyClick(form.name, Qt.Key.Key_Return)
        assert said[-1][1] == "error" and "exists already" in said[-1][0] and "\n" not in said[-1][0]
    finally:
        window.set_appearance(theme="light", font_scale=1.0)


def test_the_form_keeps_its_geometry_when_the_backend_changes_and_while_typing(qtbot, demo_ws, make_window):
    window, view = _open(make_window, demo_ws)
    try:
        form = view.form

        def where():
            _settle()
            return (
                QRect(form.mapTo(window, QPoint(0, 0)), form.size()),
                QRect(form.add.mapTo(window, QPoint(0, 0)), form.add.size()),
                form.preview.height(),
            )

        first = where()
        assert form.preview.isVisible() and form.preview.text().startswith("spec: ")
        for i in range(form.kind.count()):
            form.kind.setCurrentIndex(i)
            assert where() == first, form.kind.currentData()
            for widget in form.inputs.get(form.kind.currentData(), {}).values():
                if isinstance(widget, QLineEdit):
                    for text in ("x", "a-much-longer-text/" * 8):
                        widget.setText(text)
                        assert where() == first, (form.kind.currentData(), text)
                elif isinstance(widget, QComboBox):
                    for j in range(widget.count()):
                        widget.setCurrentIndex(j)
                        assert where() == first
        form.kind.setCurrentIndex(form.kind.findData("spec"))
        form.spec_text.setText("openai:" + "m" * 200 + "@http://localhost:8000/v1")
        assert where() == first
        assert form.preview.toolTip() == f"spec: {form.spec_text.text()}"  # elided on one line, whole in its tip
    finally:
        window.set_appearance(theme="light", font_scale=1.0)
