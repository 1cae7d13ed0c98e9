"""Workspace › Sync with a team folder…: `vlmdesk team sync FOLDER --json` in a child process, now and then every
minute while the window is open (annotation/team_sync.py does the work; only SQLite opens the workspace here, and
the GUI thread never waits). The folder is remembered per workspace (gui/prefs.py); the status bar says when it last
synced and what came in. What the child imports reaches every view as any other process's writes do (the window
watches the workspace's data_version: "never stale")."""

from __future__ import annotations

import json
import time
from pathlib import Path

from PySide6.QtCore import QObject, QTimer
from PySide6.QtWidgets import QLabel

from gui import file_dialogs
from gui.processes import CommandProcess

EVERY_MS = 60_000


class TeamFolderSync(QObject):
    """The window's team folder: its status label, its timer and the sync process under way (one at a time)."""

    def __init__(self, window):
        super().__init__(window)
        self.window = window
        self.label = QLabel()
        self.label.setObjectName("teamSyncStatus")
        self.label.hide()
        window.statusBar().addPermanentWidget(self.label)
        self.timer = QTimer(self)
        self.timer.setInterval(EVERY_MS)
        self.timer.timeout.connect(self.sync_now)
        self.process: CommandProcess | None = None
        self.folder: str | None = None
        self.last: dict | None = None  # the last report (`team sync --json`)
        # Tests answer the folder dialog: a path, or None (cancelled).
        self.answer: str | None | bool = False

    # -- the workspace's folder
    def workspace_opened(self) -> None:
        """Take up the folder remembered for the window's workspace (and sync with it), or none."""
        self.timer.stop()
        self.folder, self.last = self._remembered(), None
        self._show()
        if self.folder is not None:
            self.sync_now()
            self.timer.start()

    def _key(self) -> str | None:
        ws = self.window.ws
        return None if ws is None else str(Path(ws.path).resolve())

    def _remembered(self) -> str | None:
        key = self._key()
        prefs = self.window.ctx.prefs if self.window.ctx is not None else self.window.prefs
        return dict(prefs.team_folders).get(key) if key else None

    def choose(self) -> None:
        """Ask for the folder (a folder dialog: nothing sniffs the workspace file), remember it, sync now."""
        if self.window.ws is None or self.window.ctx is None:
            return
        if self.answer is not False:
            chosen = self.answer if isinstance(self.answer, str) else None
        else:
            chosen = file_dialogs.folder(self.window, "Sync with a team folder", self.folder or str(Path.home()))
        if not chosen:
            return
        key = self._key()
        assert key is not None
        folders = dict(self.window.ctx.prefs.team_folders)
        folders[key] = str(Path(chosen))
        self.window.ctx.update_prefs(team_folders=tuple(sorted(folders.items())))
        self.folder, self.last = str(Path(chosen)), None
        self.sync_now()
        self.timer.start()

    # -- a sync
    def sync_now(self) -> CommandProcess | None:
        """Start a sync unless one is under way (the next tick tries again)."""
        ws = self.window.ws
        if ws is None or self.folder is None or self.process is not None or ws.read_only:
            return None
        self.process = process = CommandProcess(ws.path, ["team", "sync", self.folder, "--json"], self)
        process.done.connect(lambda: self._done(process))
        self._show(busy=True)
        process.start()
        return process

    def _done(self, process: CommandProcess) -> None:
        self.process = None
        if self.window.ws is None or process.workspace != str(self.window.ws.path):
            return  # a sync of a workspace the window has left
        report = None
        for line in reversed(process.stdout.splitlines()):
            if line.lstrip().startswith("{"):
                try:
                    report = json.loads(line)
                except ValueError:
                    report = None
                break
        if process.exit_code == 0 and report is not None:
            self.last = report
            self._show()
        else:
            errors = [ln for ln in process.stderr.splitlines() if ln.startswith("error:")]
            why = errors[-1].removeprefix("error:").strip() if errors else (process.error or "it stopped")
            self._show(error=why)

    def shutdown(self) -> None:
        self.timer.stop()
        if self.process is not None:
            self.process.terminate()  # a sync killed at any point is whole at the next (annotation/team_sync.py)

    # -- the status label: its text changes, its place does not
    def _show(self, *, busy: bool = False, error: str | None = None) -> None:
        if self.folder is None:
            self.label.hide()
            return
        name = Path(self.folder).name or self.folder
        if error is not None:
            text, tip = f"Team folder: sync failed · {error.rsplit(': ', 1)[-1][:60]}", error  # "PATH: why": why
        elif self.last is None:
            text, tip = f"Team folder {name}: syncing…", self.folder
        else:
            text, tip = status_text(self.last), _details(self.last)
        self.label.setText(text + (" ↻" if busy and self.last is not None else ""))
        self.label.setToolTip(f"{self.folder}\n{tip}\nWorkspace › Sync with a team folder… chooses another")
        self.label.show()


def status_text(report: dict) -> str:
    """'synced 12:03 · 3 new from ben' (the peers with most new records first)."""
    at = _clock(report.get("synced_at", ""))
    came = sorted(((p["added"], p["by"]) for p in report.get("peers", []) if p.get("added")), reverse=True)
    parts = [f"synced {at}"]
    if came:
        who = ", ".join(str(by)[:20] for _, by in came[:2]) + (" …" if len(came) > 2 else "")
        parts.append(f"{sum(n for n, _ in came)} new from {who}")
    if report.get("skipped_count"):
        parts.append(f"{report['skipped_count']} bad line(s) skipped")
    if report.get("waiting"):
        parts.append(f"{report['waiting']} waiting")
    return "Team folder: " + " · ".join(parts)


def _details(report: dict) -> str:
    lines = [f"appended {report.get('appended', 0)} record(s) to {report.get('journal', '')}"]
    for p in report.get("peers", []):
        lines.append(
            f"{p['file']} ({p['by']}): " + (f"not read: {p['note']}" if p.get("note") else f"{p['added']} new")
        )
    return "\n".join(lines[:12])


def _clock(iso: str) -> str:
    """The local time of day of an ISO time (UTC in the report)."""
    from datetime import datetime

    try:
        return datetime.fromisoformat(iso).astimezone().strftime("%H:%M")
    except ValueError:
        return time.strftime("%H:%M")
