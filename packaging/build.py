"""Build the standalone annotator app with PyInstaller: `python packaging/build.py` (docs/adr/0043).

Makes (or reuses) its own build venv, build/bundle-venv, with the project's base dependencies minus torch,
transformers and accelerate (the `hf` extra's) and the `bundle` extra (pyinstaller); then runs packaging/vlmdesk.spec
into dist/vlmdesk/ (one folder; --onefile: dist/onefile/vlmdesk, one file). On Linux it writes the desktop entry
dist/vlmdesk/vlmdesk.desktop (--install-desktop-entry copies it to ~/.local/share/applications). Prints the
bundle's size. Needs only the Python that runs it (3.11+) and PyPI, or a pip index that has the packages.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / "build" / "bundle-venv"
DIST = ROOT / "dist"
HF_ONLY = {"torch", "transformers", "accelerate"}  # local models: the `hf` extra, never in the app


def venv_python(venv_dir: Path) -> Path:
    return venv_dir / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def requirements() -> list[str]:
    """The base dependencies without the `hf` packages, and the `bundle` extra."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]

    def name(req: str) -> str:
        m = re.match(r"[A-Za-z0-9_.-]+", req)
        return m.group(0).lower() if m else req

    base = [r for r in project["dependencies"] if name(r) not in HF_ONLY]
    return base + list(project["optional-dependencies"]["bundle"])


def ensure_venv(venv_dir: Path) -> Path:
    """The build venv, made or brought up to date (a stamp of the requirements: unchanged ones install nothing)."""
    reqs = requirements()
    stamp = venv_dir / "vlmdesk-requirements.sha256"
    lock = ROOT / "requirements" / "lock.txt"  # the tested releases, as every install command takes them
    digest = hashlib.sha256("\n".join(reqs).encode() + lock.read_bytes()).hexdigest()
    python = venv_python(venv_dir)
    if python.exists() and stamp.exists() and stamp.read_text().strip() == digest:
        return python
    if not python.exists():
        print(f"making the build venv {venv_dir}", flush=True)
        venv.create(venv_dir, with_pip=True)
    print("installing: " + " ".join(reqs), flush=True)
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", "-c", str(lock), *reqs], check=True
    )
    stamp.write_text(digest + "\n")
    return python


def size_of(path: Path) -> int:
    """Bytes of every regular file under `path` (or of the file): the size unpacked on disk, links not followed."""
    if path.is_file():
        return path.stat().st_size
    return sum(p.lstat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def strip_debug(folder: Path) -> None:
    """Remove the debug sections of the bundle's shared libraries (libpython alone: 23 MB of its 28 MB here). Not the
    libraries auditwheel vendored into a wheel's `*.libs` folder (numpy's and scipy's OpenBLAS): patchelf laid them
    out so that strip(1) makes them unloadable ("ELF load command address/offset not page-aligned"), which is why
    the spec's own strip is off. Skipped, with a note, when binutils' strip is missing."""
    strip = shutil.which("strip")
    if strip is None:
        print("note: no strip(1) (binutils): the bundle keeps its debug sections, about 43 MB more")
        return
    libraries = [
        p
        for p in folder.rglob("*.so*")
        if p.is_file() and not p.is_symlink() and not any(part.endswith(".libs") for part in p.parts)
    ]
    for start in range(0, len(libraries), 200):
        subprocess.run([strip, "--strip-unneeded", *map(str, libraries[start : start + 200])], check=True)


def desktop_entry(app_dir: Path) -> str:
    """A freedesktop entry: the app in the menu with its icon, and "Open with vlmdesk" for workspace files."""
    exe = app_dir / "vlmdesk"
    icon = next(app_dir.rglob("vlmdesk.png"))
    return (
        "[Desktop Entry]\n"
        "Type=Application\n"
        "Name=vlmdesk\n"
        "Comment=Review vision-language benchmark items\n"
        f'Exec="{exe}" %f\n'  # %f: the double-clicked workspace, or nothing (then the default workspace)
        f"Icon={icon}\n"
        "Terminal=false\n"
        "Categories=Science;Education;\n"
        "MimeType=application/vnd.sqlite3;application/x-sqlite3;\n"
    )


def build(*, onefile: bool, venv_dir: Path, install_desktop_entry: bool) -> Path:
    python = ensure_venv(venv_dir)
    env = dict(os.environ, VLMDESK_ONEFILE="1" if onefile else "0")
    started = time.monotonic()
    subprocess.run(
        [
            str(python),
            "-m",
            "PyInstaller",
            "--noconfirm",
            "--log-level=WARN",
            f"--distpath={DIST / 'onefile' if onefile else DIST}",  # one file: its name would be the folder's
            f"--workpath={ROOT / 'build' / ('pyinstaller-onefile' if onefile else 'pyinstaller')}",
            str(ROOT / "packaging" / "vlmdesk.spec"),
        ],
        check=True,
        env=env,
        cwd=ROOT,
    )
    out = (DIST / "onefile" if onefile else DIST) / ("vlmdesk.exe" if onefile and os.name == "nt" else "vlmdesk")
    if sys.platform.startswith("linux") and not onefile:
        strip_debug(out)
    if sys.platform == "darwin" and not onefile:
        out = DIST / "vlmdesk.app"
    if sys.platform.startswith("linux") and not onefile:
        entry = out / "vlmdesk.desktop"
        entry.write_text(desktop_entry(out), encoding="utf-8")
        if install_desktop_entry:
            target = Path.home() / ".local" / "share" / "applications" / "vlmdesk.desktop"
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(entry, target)
            print(f"installed {target}")
    print(
        f"built {out} in {time.monotonic() - started:.0f} s: {size_of(out) / 1e6:.0f} MB"
        + (" (one file)" if onefile else " unpacked")
    )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--onefile", action="store_true", help="one executable file instead of one folder")
    parser.add_argument("--venv", type=Path, default=VENV, help=f"the build venv (default {VENV})")
    parser.add_argument(
        "--install-desktop-entry",
        action="store_true",
        help="Linux: also copy the desktop entry to ~/.local/share/applications",
    )
    args = parser.parse_args(argv)
    build(onefile=args.onefile, venv_dir=args.venv, install_desktop_entry=args.install_desktop_entry)
    return 0


if __name__ == "__main__":
    sys.exit(main())
