"""The base install has no torch, transformers or accelerate (the hf extra, docs/adr/0041): what needs them says so in
one line, exit 2, and what does not works as before. A child process made unable to import them (a sitecustomize
whose import finder refuses them) stands for that install here; .ci/base-install runs the tests marked `base` in a
real one."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from annotation import reviews
from db import catalog, open_workspace
from vlmdesk.demo import ensure_demo

pytestmark = pytest.mark.base

# As an install without them: importing one raises ModuleNotFoundError and leaves no entry in sys.modules (a None
# entry there, the older way, crashed scipy's array-type checks, which look torch up in sys.modules).
NO_HF = """\
import sys


class _NoHF:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in ("torch", "transformers", "accelerate"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, _NoHF())
"""
INSTALL = "pip install 'vlmdesk[hf]'"


@pytest.fixture
def without_hf(tmp_path):
    """`vlmdesk …` in a child process that cannot import the hf extra's packages (this checkout's code)."""
    site = tmp_path / "no-hf"
    site.mkdir()
    (site / "sitecustomize.py").write_text(NO_HF, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), *sys.path])}

    def vlmdesk(ws_path, *args) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "vlmdesk", "--workspace", str(ws_path), *args],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )

    return vlmdesk


@pytest.fixture
def demo_ws(tmp_path):
    path = tmp_path / "ws.sqlite"
    with open_workspace(path, create=True) as ws:
        ensure_demo(ws)
    return path


def run_count(path) -> int:
    with open_workspace(path) as ws:
        return ws.conn.execute("SELECT count(*) FROM runs").fetchone()[0]


@pytest.mark.parametrize(
    "args",
    [
        ("run", "--bench", "demo", "--model", "hf:{model}"),
        ("run", "--bench", "demo", "--model", "hf:{model}", "--likelihood-score", "prefix", "--strategy", "vanilla"),
        ("models", "test", "hf:{model}"),
        ("qc", "text-only", "--bench", "demo", "--model", "hf:{model}"),
    ],
    ids=["run", "likelihood", "models-test", "qc-text-only"],
)
def test_a_local_model_without_the_hf_extra_is_one_line_naming_it_and_exit_2(without_hf, demo_ws, tmp_path, args):
    model = tmp_path / "my-vlm"
    model.mkdir()
    done = without_hf(demo_ws, *(a.format(model=model) for a in args))
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == f"error: hf:{model} needs the hf extra (no module torch): {INSTALL}"
    assert done.stdout == ""
    assert run_count(demo_ws) == 0  # nothing stored


def test_without_the_hf_extra_runs_on_servers_reviews_exports_and_reports_work(without_hf, demo_ws, tmp_path):
    with open_workspace(demo_ws) as ws:
        first = catalog.list_items(ws, catalog.benchmark_by_name(ws, "demo").id)[0]
        reviews.add_review(ws, first.id, "ana", "wrong_answer", corrected_answer="C")
    done = without_hf(demo_ws, "run", "--bench", "demo", "--model", "baseline:random", "--limit", "4", "--json")
    assert done.returncode == 0, done.stderr
    run_id = json.loads(done.stdout)["run_id"]
    plot = tmp_path / "abilities.png"
    done = without_hf(demo_ws, "report", str(run_id), "--plot", str(plot))
    assert done.returncode == 0, done.stderr
    assert plot.read_bytes().startswith(b"\x89PNG")
    out = tmp_path / "verdicts.jsonl"
    assert without_hf(demo_ws, "reviews", "export", "--out", str(out)).returncode == 0
    other = tmp_path / "other.sqlite"
    with open_workspace(other, create=True) as ws:
        ensure_demo(ws)
    done = without_hf(other, "reviews", "import", str(out), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["added"] == 1
    done = without_hf(demo_ws, "models", "families", "--json")  # the table of the hf: backend needs no torch
    assert done.returncode == 0 and json.loads(done.stdout), done.stderr


def test_a_hub_model_prompted_as_vlmevalkit_without_the_extra_is_the_same_line(without_hf, demo_ws):
    # Its family is read from the hub's config.json, whose client comes with transformers: asked before anything else.
    args = ("run", "--bench", "demo", "--model", "hf:llava-hf/llava-1.5-7b-hf", "--prompt", "vlmevalkit")
    done = without_hf(demo_ws, *args)
    assert (done.returncode, done.stderr.strip()) == (
        2,
        f"error: hf:llava-hf/llava-1.5-7b-hf needs the hf extra (no module torch): {INSTALL}",
    )
    assert run_count(demo_ws) == 0


@pytest.mark.parametrize("command", [("run",), ("models",), ("qc", "text-only")])
def test_the_help_of_commands_taking_a_model_names_the_extra(capsys, command):
    from vlmdesk.cli import main

    with pytest.raises(SystemExit):
        main([*command, "--help"])
    assert f"hf: models need the hf extra: {INSTALL}" in capsys.readouterr().out
