"""`vlmdesk` commands in child processes (QProcess, the same Python interpreter): the window never waits for a
model, and a crash or an out-of-memory in one cannot take the window down — its stderr is kept and shown."""

from __future__ import annotations

import json
import shlex
import sys

from PySide6.QtCore import QObject, QProcess, QProcessEnvironment, Signal

from db.platform_io import CHILD_CREATION_FLAGS, ask_to_stop


class CommandProcess(QObject):
    """One `vlmdesk --workspace WS ARGS…` run. stdout lines that are JSON objects arrive as `event`s."""

    # The signal's name shadows QObject.event (never called on this class); renaming it touches every listener.
    event = Signal(dict)  # type: ignore[assignment]
    stderrChanged = Signal()
    done = Signal()  # after exit (normal or crash) or a failure to start; see exit_code / crashed / error

    def __init__(self, workspace: str, args: list[str], parent=None):
        super().__init__(parent)
        self.workspace, self.args = str(workspace), [str(a) for a in args]
        self.stdout, self.stderr = "", ""
        self.exit_code: int | None = None
        self.crashed = False
        self.error = ""
        self.finished = False
        self._partial = ""
        self.process = QProcess(self)
        env = QProcessEnvironment.systemEnvironment()
        env.insert("PYTHONUNBUFFERED", "1")
        self.process.setProcessEnvironment(env)
        self.process.readyReadStandardOutput.connect(self._read_stdout)
        self.process.readyReadStandardError.connect(self._read_stderr)
        self.process.finished.connect(self._finished)
        self.process.errorOccurred.connect(self._error)
        # Windows: a process group of its own, so that Cancel's CTRL_BREAK_EVENT reaches the child alone (ADR 0042).
        # Qt for Windows only has the modifier; without it, Cancel kills.
        modifier = getattr(self.process, "setCreateProcessArgumentsModifier", None)
        self._own_group = not CHILD_CREATION_FLAGS or modifier is not None
        if CHILD_CREATION_FLAGS and modifier is not None:
            modifier(self._in_own_group)

    @staticmethod
    def _in_own_group(arguments) -> None:
        arguments.flags |= CHILD_CREATION_FLAGS

    def command_line(self) -> str:
        """The same command, to run by hand."""
        return shlex.join(["vlmdesk", "--workspace", self.workspace, *self.args])

    def start(self) -> None:
        self.process.start(sys.executable, ["-m", "vlmdesk", "--workspace", self.workspace, *self.args])

    def running(self) -> bool:
        return self.process.state() != QProcess.ProcessState.NotRunning

    def terminate(self) -> None:
        """Ask it to stop (SIGTERM; CTRL_BREAK_EVENT on Windows): `vlmdesk run` stops between two batches and marks
        the run interrupted. A child that cannot be asked (a windowed app on Windows) is killed."""
        if self.running() and not ask_to_stop(self.pid(), own_group=self._own_group):
            self.process.kill()

    def kill(self) -> None:
        if self.running():
            self.process.kill()

    def pid(self) -> int:
        return int(self.process.processId())

    def json_output(self):
        """stdout parsed as one JSON document (commands run with --json), else None."""
        try:
            return json.loads(self.stdout)
        except ValueError:
            return None

    def _read_stdout(self) -> None:
        text = bytes(self.process.readAllStandardOutput().data()).decode("utf-8", "replace")
        self.stdout += text
        self._partial += text
        *lines, self._partial = self._partial.split("\n")
        for line in lines:
            line = line.strip()
            if line.startswith("{"):
                try:
                    obj = json.loads(line)
                except ValueError:
                    continue
                if isinstance(obj, dict):
                    self.event.emit(obj)

    def _read_stderr(self) -> None:
        self.stderr += bytes(self.process.readAllStandardError().data()).decode("utf-8", "replace")
        self.stderrChanged.emit()

    def _finished(self, code: int, status) -> None:
        self._read_stdout()
        self._read_stderr()
        self.crashed = status == QProcess.ExitStatus.CrashExit
        self.exit_code = code
        self._finish()

    def _error(self, error) -> None:
        if error == QProcess.ProcessError.FailedToStart:
            self.error = f"could not start {sys.executable}: {self.process.errorString()}"
            self._finish()

    def _finish(self) -> None:
        if not self.finished:
            self.finished = True
            self.done.emit()
