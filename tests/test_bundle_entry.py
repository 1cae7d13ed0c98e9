"""The standalone app's entry point (packaging/entry.py), run from source: the command lines a double-click and the
app's own runs give it, and the check hook packaging/smoke.py drives the bundle with (docs/adr/0043)."""

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from vlmdesk.cli import main

ROOT = Path(__file__).resolve().parent.parent
ENTRY = ROOT / "packaging" / "entry.py"


def load_entry(path=ENTRY):
    spec = importlib.util.spec_from_file_location(f"bundle_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_workspace_alone_opens_it_and_the_apps_run_form_drops_its_module(tmp_path):
    translate = load_entry().translate
    ws = tmp_path / "team.sqlite"
    ws.write_bytes(b"")
    assert translate([str(ws)]) == ["--workspace", str(ws)]  # a double-click, an "Open with"
    assert translate([]) == []  # the app icon: the default workspace
    assert translate(["-m", "vlmdesk", "--workspace", str(ws), "run"]) == ["--workspace", str(ws), "run"]
    assert translate(["benchmarks"]) == ["benchmarks"]  # a command, not a file
    assert translate([str(tmp_path / "missing.sqlite")]) == [str(tmp_path / "missing.sqlite")]  # the CLI says why


def start(tmp_path, *args, hook):
    env = dict(
        os.environ,
        PYTHONPATH=str(ROOT),
        QT_QPA_PLATFORM="offscreen",
        VLMDESK_CONFIG_DIR=str(tmp_path / "config"),
        VLMDESK_BUNDLE_HOOK=hook,
        MPLCONFIGDIR=str(tmp_path / "mpl"),
    )
    return subprocess.run(
        [sys.executable, str(ENTRY), *args], env=env, capture_output=True, text=True, timeout=120, check=False
    )


def test_the_verdict_hook_records_a_verdict_through_the_app_on_a_double_clicked_workspace(tmp_path):
    ws = tmp_path / "annotator.sqlite"
    assert main(["--workspace", str(ws), "demo"]) == 0
    done = start(tmp_path, str(ws), hook="verdict:ana")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Saved #" in done.stdout
    out = tmp_path / "ana.jsonl"
    assert main(["--workspace", str(ws), "reviews", "export", "--out", str(out)]) == 0
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [(r["benchmark"], r["annotator"], r["verdict"]) for r in records] == [("demo", "ana", "ok")]


def test_the_first_paint_hook_reports_the_window_on_the_default_workspace(tmp_path):
    done = start(tmp_path, hook="first-paint")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "vlmdesk-hook: first window painted" in done.stdout
    assert Path(os.environ["VLMDESK_WORKSPACE"]).exists()  # the first start made it, with the demo


@pytest.mark.parametrize("hook", ["paint", "verdict-ana"])
def test_an_unknown_hook_is_refused_before_any_window(tmp_path, hook):
    done = start(tmp_path, hook=hook)
    assert done.returncode == 1
    assert "VLMDESK_BUNDLE_HOOK: expected first-paint or verdict:<annotator>" in done.stderr


def test_the_build_installs_the_base_without_the_hf_packages_and_writes_a_desktop_entry(tmp_path):
    build = load_entry(ROOT / "packaging" / "build.py")
    names = [re.match(r"[A-Za-z0-9_.-]+", r).group(0).lower() for r in build.requirements()]
    assert "pyside6-essentials" in names and "pyinstaller" in names
    assert not set(names) & {"torch", "transformers", "accelerate"}
    app = tmp_path / "vlmdesk"
    (app / "_internal").mkdir(parents=True)
    (app / "_internal" / "vlmdesk.png").write_bytes(b"png")
    entry = build.desktop_entry(app)
    assert f'Exec="{app / "vlmdesk"}" %f\n' in entry  # %f: a double-clicked workspace, or nothing
    assert f"Icon={app / '_internal' / 'vlmdesk.png'}\n" in entry


def test_a_parquet_file_without_pyarrow_is_one_line_saying_so(tmp_path):
    """The bundle leaves pyarrow out (docs/adr/0043): importing a parquet file there is one line naming what to
    install, exit 2, and no benchmark is stored."""
    site = tmp_path / "no-pyarrow"
    site.mkdir()
    (site / "sitecustomize.py").write_text('import sys\nsys.modules["pyarrow"] = None\n', encoding="utf-8")
    data = tmp_path / "x.parquet"
    data.write_bytes(b"PAR1" + b"\0" * 64 + b"PAR1")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), *sys.path])}
    ws = tmp_path / "w.sqlite"
    done = subprocess.run(
        [sys.executable, "-m", "vlmdesk", "--workspace", str(ws), "import", str(data), "--name", "x"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "needs pyarrow" in lines[0] and "pip install pyarrow" in lines[0], done.stderr
    listed = subprocess.run(
        [sys.executable, "-m", "vlmdesk", "--workspace", str(ws), "benchmarks", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert listed.returncode == 0 and json.loads(listed.stdout) == [], listed.stdout
