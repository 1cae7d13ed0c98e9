"""User preferences in a readable JSON file in the user config directory (window geometry stays in QSettings)."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

CONFIG_ENV = "VLMDESK_CONFIG_DIR"
ZOOMS = ("fit", "100")
MAX_RECENT = 8
THEMES = ("system", "light", "dark")  # gui/appearance.py's
SCALE_RANGE = (0.8, 1.75)
CHECKED = ("recent_workspaces", "zoom", "theme", "font_scale", "team_folders")  # fields with their own check
MAX_TEAM_FOLDERS = 64  # workspaces that remember a team folder


def config_dir() -> Path:
    """`$VLMDESK_CONFIG_DIR`, else the platform's user config directory (~/.config/vlmdesk on Linux)."""
    env = os.environ.get(CONFIG_ENV)
    if env:
        return Path(env).expanduser()
    from platformdirs import user_config_path

    return user_config_path("vlmdesk", appauthor=False)


@dataclass(frozen=True)
class Preferences:
    annotator: str = ""  # asked once; every verdict and label carries it
    blind: bool = False  # blind mode (annotation/blind.py): nothing that could bias a verdict before it is given
    reveal_after_verdict: bool = True  # in blind mode, show what was hidden once my verdict on the item stands
    zoom: str = "fit"  # "fit" or "100" (actual pixels)
    advance: bool = True  # move to the next item after a verdict
    prefetch: int = 3  # images decoded ahead of the current item
    recent_workspaces: tuple[str, ...] = ()
    theme: str = "system"  # system | light | dark (gui/appearance.py)
    font_scale: float = 1.0  # text size, 0.8–1.75
    team_folders: tuple[tuple[str, str], ...] = ()  # (workspace, its team folder): synced each minute (gui/team_sync)

    def with_recent(self, path: str) -> Preferences:
        recent = (path, *(p for p in self.recent_workspaces if p != path))[:MAX_RECENT]
        return replace(self, recent_workspaces=recent)

    def to_json(self) -> dict:
        d = asdict(self)
        d["recent_workspaces"] = list(self.recent_workspaces)
        d["team_folders"] = [list(pair) for pair in self.team_folders]
        return d


def _pairs_of_text(value: object) -> bool:
    return isinstance(value, list) and all(
        isinstance(p, list) and len(p) == 2 and all(isinstance(v, str) for v in p) for p in value
    )


class PreferencesFile:
    """Load and save Preferences. A damaged or hand-edited file never stops the app: bad fields fall back to their
    defaults and `problems` says which."""

    def __init__(self, path: Path | None = None):
        self.path = Path(path) if path is not None else config_dir() / "preferences.json"
        self.problems: list[str] = []

    def load(self) -> Preferences:
        self.problems = []
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return Preferences()
        except (OSError, ValueError) as exc:
            self.problems.append(f"{self.path}: unreadable, defaults used ({exc})")
            return Preferences()
        if not isinstance(raw, dict):
            self.problems.append(f"{self.path}: not a JSON object, defaults used")
            return Preferences()
        defaults = Preferences()
        values: dict[str, Any] = {}
        for f in fields(Preferences):
            if f.name not in raw:
                continue
            value, default = raw[f.name], getattr(defaults, f.name)
            if f.name == "recent_workspaces" and isinstance(value, list) and all(isinstance(v, str) for v in value):
                values[f.name] = tuple(value)[:MAX_RECENT]
            elif f.name == "zoom" and value in ZOOMS:
                values[f.name] = value
            elif f.name == "team_folders" and _pairs_of_text(value):
                values[f.name] = tuple((str(w), str(t)) for w, t in value)[:MAX_TEAM_FOLDERS]
            elif f.name == "theme" and value in THEMES:
                values[f.name] = value
            elif f.name == "font_scale" and type(value) in (int, float) and SCALE_RANGE[0] <= value <= SCALE_RANGE[1]:
                values[f.name] = float(value)
            elif f.name not in CHECKED and type(value) is type(default):
                values[f.name] = value
            else:
                self.problems.append(f"{self.path}: {f.name}: bad value {value!r}, default {default!r} used")
        return replace(defaults, **values)

    def save(self, prefs: Preferences) -> None:
        # Temp file + atomic replace: a crash while saving never leaves a half-written file.
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(prefs.to_json(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        os.replace(tmp, self.path)
