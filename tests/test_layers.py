"""The layer rules of DESIGN.md: only gui/ imports Qt; imports point down (gui -> annotation -> evaluator -> db); the
composition root (vlmdesk/) reaches Qt only through gui/. The static rules are import-linter contracts in
pyproject.toml (run here and by `lint-imports` in CI); what only running code shows is checked here."""

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
QT_FREE = ("db", "evaluator", "annotation")


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


def test_lower_layers_import_without_qt():
    modules = sorted(
        ".".join(p.relative_to(ROOT).with_suffix("").parts) for layer in QT_FREE for p in (ROOT / layer).rglob("*.py")
    )
    modules = [m.removesuffix(".__init__") for m in modules]
    assert len(modules) > 10
    code = (
        "import importlib, sys\n"
        f"for m in {modules!r}: importlib.import_module(m)\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('PySide6', 'shiboken6'))\n"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr


def test_import_contracts_hold():
    # The rules themselves live in pyproject.toml ([tool.importlinter]): imports point down
    # (vlmdesk -> gui -> annotation -> evaluator -> db), and nothing below gui imports Qt, even indirectly.
    code = "import sys\nfrom importlinter.cli import lint_imports\nsys.exit(lint_imports(no_cache=True, no_logo=True))"
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_the_command_line_reaches_qt_only_through_gui():
    # Statically: no module of vlmdesk/ imports PySide6 (or matplotlib's Qt backend) itself.
    offences = [
        f"{p.relative_to(ROOT)} imports Qt"
        for p in (ROOT / "vlmdesk").rglob("*.py")
        if _imports(p) & {"PySide6", "shiboken6"} or "backend_qt" in p.read_text(encoding="utf-8")
    ]
    assert offences == []
    # And at run time: building every command's parser (gui's included) loads no Qt.
    code = (
        "import sys\nfrom vlmdesk.cli import build_parser\nbuild_parser()\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('PySide6', 'shiboken6'))\n"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
