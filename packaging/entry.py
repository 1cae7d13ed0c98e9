"""The standalone app's entry point (PyInstaller runs this file): `vlmdesk.cli.main` with three additions a frozen
app needs, and one check hook.

- A workspace opened by double-click or "Open with" arrives as the only argument (a Linux desktop entry's %f, a
  Windows file association's "%1"): `vlmdesk team.sqlite` becomes `vlmdesk --workspace team.sqlite`.
- The app starts its runs as `sys.executable -m vlmdesk …` (gui/processes.py); in the bundle sys.executable is this
  program, so a leading `-m vlmdesk` is dropped.
- With no argument at all (a double-clicked app icon) the app opens on the default workspace, with the demo on first
  start, as `vlmdesk` does.

Check hook, for packaging/measure.py and packaging/smoke.py only: VLMDESK_BUNDLE_HOOK=first-paint prints one line
when the main window has painted for the first time and exits; VLMDESK_BUNDLE_HOOK=verdict:<annotator> also answers
the "Who is annotating?" question with <annotator>, gives the first item of the review view the verdict "ok" by
clicking its button, prints what it saved and closes the window. Nothing else reads the variable, the app's help
does not name it, and it is documented in docs/adr/0043.
"""

from __future__ import annotations

import os
import sys
import time

HOOK_ENV = "VLMDESK_BUNDLE_HOOK"


def translate(argv: list[str]) -> list[str]:
    """The command line the CLI sees, from the one the bundle was started with (see the module's docstring)."""
    if argv[:2] == ["-m", "vlmdesk"]:
        argv = argv[2:]
    if len(argv) == 1 and not argv[0].startswith("-") and os.path.isfile(argv[0]):
        return ["--workspace", argv[0]]
    return argv


def install_hook(spec: str) -> None:
    """Watch for the first paint (see the module's docstring); the QApplication made here is reused by gui.app."""
    from PySide6.QtCore import QEvent, QObject, QTimer
    from PySide6.QtWidgets import QApplication, QInputDialog

    from gui.app import application
    from gui.main_window import MainWindow

    action, _, annotator = spec.partition(":")
    if action not in ("first-paint", "verdict"):
        raise SystemExit(f"{HOOK_ENV}: expected first-paint or verdict:<annotator>, got {spec!r}")
    app = application()
    deadline = time.monotonic() + 60

    def done(line: str, code: int = 0) -> None:
        print(line, flush=True)
        sys.stderr.flush()
        os._exit(code)

    def drive(window: MainWindow) -> None:
        modal = QApplication.activeModalWidget()
        if isinstance(modal, QInputDialog):  # the once-only "Who is annotating?" question
            modal.setTextValue(annotator or "bundle-smoke")
            modal.accept()
            QTimer.singleShot(50, lambda: drive(window))
            return
        if modal is not None:
            done(f"vlmdesk-hook: unexpected dialog {modal.windowTitle()!r}", 1)
        if window.ctx is None:
            done(f"vlmdesk-hook: no workspace open: {window.message_bar.label.text()}", 1)
        if not window.ctx.prefs.annotator:  # painted before the question was asked: wait for it
            if time.monotonic() > deadline:
                done("vlmdesk-hook: the app never asked who is annotating", 1)
            QTimer.singleShot(50, lambda: drive(window))
            return
        review = window.view("review")
        window.show_view("review")
        review.show_row(0)
        if review.item is None:
            done("vlmdesk-hook: the review view shows no item", 1)
        review.verdict_buttons["ok"].click()
        saved = review.saved.text()
        if "Saved" not in saved:
            done(f"vlmdesk-hook: no verdict saved ({saved!r})", 1)
        print(f"vlmdesk-hook: {saved}", flush=True)
        window.close()  # closes the workspace (MainWindow.closeEvent)
        done("vlmdesk-hook: closed")

    class FirstPaint(QObject):
        def eventFilter(self, watched, event):  # noqa: N802 (Qt's name)
            if event.type() == QEvent.Type.Paint and isinstance(watched, MainWindow):
                app.removeEventFilter(self)
                if action == "first-paint":
                    done("vlmdesk-hook: first window painted")
                QTimer.singleShot(0, lambda: drive(watched))
            return False

    app.installEventFilter(FirstPaint(app))


def main() -> int:
    sys.argv[1:] = translate(sys.argv[1:])
    hook = os.environ.get(HOOK_ENV)
    if hook:
        install_hook(hook)
    from vlmdesk.cli import main as cli_main

    return cli_main()  # argv None: the CLI's own command line, so Ctrl+C ends it as `vlmdesk` does


if __name__ == "__main__":
    # PyInstaller's bootloader on Windows/macOS may start child processes with multiprocessing's arguments.
    import multiprocessing

    multiprocessing.freeze_support()
    sys.exit(main())
