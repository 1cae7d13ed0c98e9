"""The launch form's Variant group: ChEF's run variants (label map, corruptions, k-shot, chain of thought) as the
`vlmdesk run` options they stand for. Off by default; the group opens when its box is ticked."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QGridLayout,
    QGroupBox,
    QLabel,
    QSizePolicy,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from evaluator.engine.corruptions import IMAGE_CORRUPTIONS
from evaluator.engine.variants import LABEL_MAPS, MAX_SHOTS, SHOT_SELECTIONS, TEXT_CORRUPTIONS
from gui.fitting import compact_combo


def _label_specs() -> list[str]:
    return [f"{kind}:{i}" for kind, maps in LABEL_MAPS.items() for i in range(len(maps))]


class VariantGroup(QGroupBox):
    changed = Signal()

    def __init__(self, parent=None):
        # A short title: a group box is never narrower than its title, and the launch form's width is fixed.
        super().__init__("Variant (labels, noise, shots, CoT)", parent)
        self.setCheckable(True)
        self.setChecked(False)
        self.setToolTip(
            "ChEF's desiderata as run settings — label map, corruption, k shots, chain of thought: each is part of "
            "the run's identity (docs/adr/0017)"
        )
        self.label_map = compact_combo(QComboBox())
        self.label_map.addItem("none", None)
        for spec in _label_specs():
            self.label_map.addItem(spec, spec)
        self.label_map.setToolTip('Relabel the options: "If the answer is "(A)", you need to output "1"."')
        self.image = compact_combo(QComboBox())
        self.image.addItem("none", None)
        for name in IMAGE_CORRUPTIONS:
            self.image.addItem(name.replace("_", " "), name)
        self.severity = QSpinBox(minimum=1, maximum=5, value=3)
        self.severity.setPrefix("severity ")
        self.text = compact_combo(QComboBox())
        self.text.addItem("none", None)
        for name in TEXT_CORRUPTIONS:
            self.text.addItem(name.replace("_", " "), name)
        self.options_too = QCheckBox("options too")
        self.options_too.setToolTip("Corrupt the option texts as well (order and answer key unchanged)")
        self.shots = QSpinBox(minimum=0, maximum=MAX_SHOTS, value=0)
        self.shots.setSuffix("-shot")
        self.selection = compact_combo(QComboBox())
        self.selection.addItems(SHOT_SELECTIONS)
        self.cot = QCheckBox("CoT")
        self.cot.setToolTip('Chain of thought: "think step by step, then give the final answer as Answer: X"')
        self.body = QWidget()
        grid = QGridLayout(self.body)
        grid.setContentsMargins(0, 0, 0, 0)
        grid.setVerticalSpacing(4)
        # Four rows (the chain-of-thought box beside the label map), so the form fits a 1024×700 window.
        rows = (
            ("Label map", (self.label_map, self.cot)),
            ("Image", (self.image, self.severity)),
            ("Text", (self.text, self.options_too)),
            ("Shots", (self.shots, self.selection)),
        )
        for r, (title, widgets) in enumerate(rows):
            label = QLabel(title)
            label.setBuddy(widgets[0])
            grid.addWidget(label, r, 0)
            for c, w in enumerate(widgets, start=1):
                grid.addWidget(w, r, c)
        grid.setColumnStretch(1, 1)
        # Its rows keep their height when the window is small (the runs list below gives way instead).
        self.body.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 4, 8, 4)
        layout.addWidget(self.body)
        self.body.setVisible(False)
        self.toggled.connect(self.body.setVisible)
        self.toggled.connect(lambda _: self._refresh())
        for combo in (self.label_map, self.image, self.text, self.selection):
            combo.currentIndexChanged.connect(self._refresh)
        for spin in (self.severity, self.shots):
            spin.valueChanged.connect(self._refresh)
        for box in (self.options_too, self.cot):
            box.toggled.connect(self._refresh)
        self._refresh()

    def set_kind(self, kind: str) -> None:
        """A yes/no benchmark has no options to relabel or corrupt."""
        self.label_map.setEnabled(kind == "mcq")
        self.options_too.setEnabled(kind == "mcq")
        if kind != "mcq":
            self.label_map.setCurrentIndex(0)
            self.options_too.setChecked(False)

    def _refresh(self) -> None:
        self.severity.setEnabled(self.image.currentData() is not None)
        self.selection.setEnabled(self.shots.value() > 0)
        has_text = self.text.currentData() is not None
        self.options_too.setEnabled(has_text and self.label_map.isEnabled())
        self.changed.emit()

    def args(self) -> list[str]:
        """The `vlmdesk run` options of the chosen variants (none while the group is off)."""
        if not self.isChecked():
            return []
        out: list[str] = []
        if self.label_map.currentData():
            out += ["--label-map", self.label_map.currentData()]
        if self.image.currentData():
            out += ["--corrupt", f"image:{self.image.currentData()}:{self.severity.value()}"]
        if self.text.currentData():
            out += ["--corrupt", f"text:{self.text.currentData()}"]
            if self.options_too.isChecked() and self.options_too.isEnabled():
                out.append("--corrupt-options")
        if self.shots.value():
            out += ["--shots", str(self.shots.value()), "--shot-selection", self.selection.currentText()]
        if self.cot.isChecked():
            out.append("--cot")
        return out

    def cot_on(self) -> bool:
        return self.isChecked() and self.cot.isChecked()
