"""The registries (backends, extractors, metrics), plugins named in VLMDESK_PLUGINS, the one launch path, and the
"How to add a backend" steps of docs/architecture.md followed literally with a toy backend."""

from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from db import models, open_workspace, runs
from evaluator.analysis import metrics
from evaluator.backends import REGISTRY, BackendError, check_spec, load_backend, spec_help
from evaluator.registry import PLUGINS_ENV, PluginError
from evaluator.scoring.llm_extraction import REGISTRY as EXTRACTORS
from evaluator.scoring.llm_extraction import load_extractor, parse_extractor_spec
from tests.backend_plugins import slow_backend  # noqa: F401 (fixture)
from tests.factories import png_bytes
from vlmdesk.cli import main
from vlmdesk.demo import ensure_demo

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def ws_path(tmp_path):
    path = tmp_path / "ws.sqlite"
    with open_workspace(path) as ws:
        ensure_demo(ws)
    return path


def cli(capsys, path, *args) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["--workspace", str(path), *map(str, args)])
    out = capsys.readouterr()
    return code, out.out, out.err


def vlmdesk(*args, env) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "vlmdesk", *map(str, args)], capture_output=True, text=True, timeout=300, env=env
    )


def write_plugin(folder: Path, name: str, text: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.py").write_text(text)


@pytest.fixture
def plugins(tmp_path, monkeypatch):
    """plugins(name=source, …): write modules into a folder on sys.path and name them in VLMDESK_PLUGINS."""
    folder = tmp_path / "plugins"
    monkeypatch.syspath_prepend(str(folder))

    def use(**sources):
        for name, text in sources.items():
            write_plugin(folder, name, text)
            sys.modules.pop(name, None)
        importlib.invalidate_caches()  # the folder's listing may be cached from before the file existed
        monkeypatch.setenv(PLUGINS_ENV, ",".join(sources))

    return use


# -- backends ------------------------------------------------------------------------------------------------


def test_the_built_in_backends_are_registered_with_their_syntax_and_form():
    assert {"hf", "openai", "baseline"} <= set(REGISTRY.names())
    for entry in REGISTRY.entries():
        assert entry.syntax.startswith(f"{entry.name}:") and entry.help and entry.fields
        assert entry.syntax in spec_help()
        for example in entry.examples:
            assert check_spec(example) == example  # validated without loading a model or calling a server


@pytest.mark.parametrize(
    "spec, why",
    [
        ("nope:x", "unknown model spec scheme 'nope'"),
        ("hf:", "bad model spec"),
        ("baseline", "bad model spec"),
        ("hf:some/model?dtype=int3", "unknown dtype"),
        ("hf:some/model?batch_size=0", "batch_size"),
        ("hf:some/model?colour=red", "unknown option 'colour'"),
        ("baseline:median", "unknown kind"),
        ("baseline:random?delay_ms=5", "unknown option(s) delay_ms"),
        ("openai:m@localhost:8000", "http://"),
    ],
)
def test_a_spec_no_backend_reads_is_refused_before_anything_loads(spec, why):
    with pytest.raises(BackendError, match=re.escape(why)):
        check_spec(spec)


def test_a_form_filled_in_the_app_composes_the_spec_the_backend_reads():
    hf = REGISTRY.get("hf").compose(
        {"": "llava-hf/llava-1.5-7b-hf", "dtype": "bfloat16", "device": "", "trust_remote_code": True}
    )
    assert hf == "hf:llava-hf/llava-1.5-7b-hf?dtype=bfloat16&trust_remote_code=1" and check_spec(hf) == hf
    api = REGISTRY.get("openai").compose({"": "qwen", "@": "http://localhost:8000/v1", "key_env": "VLLM_KEY"})
    assert api == "openai:qwen@http://localhost:8000/v1?key_env=VLLM_KEY" and check_spec(api) == api
    assert REGISTRY.get("baseline").compose({"": "first", "seed": None}) == "baseline:first"


def test_the_delay_hook_is_a_test_only_backend(ws_path, capsys, slow_backend):
    code, _, err = cli(capsys, ws_path, "run", "--bench", "demo", "--model", "baseline:random?delay_ms=1")
    assert code == 2 and "unknown option(s) delay_ms" in err
    code, out, _ = cli(
        capsys, ws_path, "run", "--bench", "demo", "--model", "slow:random?delay_ms=1", "--limit", "3", "--json"
    )
    assert code == 0
    with open_workspace(ws_path) as ws:
        assert runs.get_run(ws, json.loads(out)["run_id"]).model_spec == "slow:random?delay_ms=1"
    # The same answers as the baseline it slows down.
    code, out, _ = cli(
        capsys, ws_path, "run", "--bench", "demo", "--model", "baseline:random", "--limit", "3", "--json"
    )
    with open_workspace(ws_path) as ws:
        slow, fast = (
            ws.conn.execute(
                "SELECT response FROM predictions WHERE run_id = ? ORDER BY item_id, pass", (run_id,)
            ).fetchall()
            for run_id in (1, json.loads(out)["run_id"])
        )
    assert slow == fast


def test_without_the_fixture_the_test_backend_does_not_exist(monkeypatch):
    monkeypatch.delenv(PLUGINS_ENV, raising=False)
    assert "slow" not in REGISTRY.names()
    with pytest.raises(BackendError, match="unknown model spec scheme 'slow'"):
        load_backend("slow:random")


def test_a_plugin_that_cannot_be_imported_or_clashes_is_one_error_line(ws_path, capsys, plugins):
    plugins(missing_dependency="import not_installed_anywhere\n")
    with pytest.raises(PluginError, match="cannot import 'missing_dependency'"):
        REGISTRY.names()
    code, _, err = cli(capsys, ws_path, "run", "--bench", "demo", "--model", "baseline:first")
    assert code == 2 and err.startswith("error: VLMDESK_PLUGINS: cannot import") and err.count("\n") == 1
    plugins(clash="from evaluator.backends.baseline import BACKENDS\n")
    with pytest.raises(PluginError, match="backend 'baseline' is registered twice"):
        REGISTRY.names()
    os.environ[PLUGINS_ENV] = "not a module"
    with pytest.raises(PluginError, match="not a module name"):
        REGISTRY.names()


BROKEN_PLUGINS = {
    "raises": ('def setup():\n    raise RuntimeError("no licence\\nfound")\n\n\nsetup()\n',
               "cannot import 'raises': RuntimeError: no licence found (at raises.py:2)"),
    "not_a_tuple": ("BACKENDS = 5\n", "not_a_tuple.BACKENDS is of type int, not a tuple of backend entries"),
    "wrong_class": ("BACKENDS = ({'name': 'mine'},)\n",
                    "wrong_class.BACKENDS: entry 1 is of type dict, not BackendEntry"),
    "no_name": ("from evaluator.backends.baseline import BACKENDS as B\nimport dataclasses\n"
                "BACKENDS = (dataclasses.replace(B[0], name=''),)\n", "no_name.BACKENDS: entry 1 has no name"),
}  # fmt: skip


@pytest.mark.parametrize("name", list(BROKEN_PLUGINS))
def test_a_plugin_that_raises_or_declares_a_malformed_entry_is_one_line_naming_it(tmp_path, name):
    """Issue 40 §10: a plugin raising on import, or a malformed entry, printed a whole traceback. Now one line naming
    the plugin and what failed, exit 2, for the command that asks the registry; --help leaves the plugin out."""
    source, says = BROKEN_PLUGINS[name]
    write_plugin(tmp_path / "mine", name, source)
    env = {
        **os.environ,
        PLUGINS_ENV: name,
        "PYTHONPATH": os.pathsep.join([str(tmp_path / "mine"), str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    ws = tmp_path / "ws.sqlite"
    assert vlmdesk("--workspace", ws, "demo", env={k: v for k, v in env.items() if k != PLUGINS_ENV}).returncode == 0
    proc = vlmdesk("--workspace", ws, "run", "--bench", "demo", "--model", "baseline:first", env=env)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr == f"error: {PLUGINS_ENV}: {says}\n"
    helped = vlmdesk("run", "--help", env=env)
    assert helped.returncode == 0 and "baseline:random" in helped.stdout and helped.stderr == ""


def test_help_texts_list_the_registered_backends_and_extractors(capsys):
    for command in (["run"], ["qc", "text-only"], ["models"]):
        with pytest.raises(SystemExit):
            main([*command, "--help"])
        text = " ".join(capsys.readouterr().out.split())
        for entry in REGISTRY.entries():
            assert f"{entry.name}:" in text, (command, entry.name)
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert all(entry.syntax in text for entry in EXTRACTORS.entries())


# -- extractors ----------------------------------------------------------------------------------------------


def test_extractor_specs_are_read_through_the_registry(plugins):
    assert EXTRACTORS.names() == ("rules", "llm", "rules+llm")
    assert parse_extractor_spec("rules+llm:openai:gpt-4o-mini") == ("rules+llm", "openai:gpt-4o-mini")
    for bad in ("rules:x", "llm", "llm:nomodel", "regex"):
        with pytest.raises(ValueError):
            parse_extractor_spec(bad)
    plugins(
        shouting="""
from evaluator.scoring.extraction import Extraction
from evaluator.scoring.llm_extraction import ExtractorEntry


class Shouting:
    name = "shouting"

    def extract_many(self, inputs):
        return [Extraction(r.strip() if r.strip() in o else None, "rules", "upper case") for _, o, r in inputs]


EXTRACTORS = (ExtractorEntry("shouting", "shouting", "a letter alone, or nothing", lambda model, ws: Shouting()),)
"""
    )
    assert parse_extractor_spec("shouting") == ("shouting", None)
    got = load_extractor("shouting").extract_many([("q", {"A": "x", "B": "y"}, " B "), ("q", {"A": "x"}, "x")])
    assert [e.choice for e in got] == ["B", None]


# -- metrics -------------------------------------------------------------------------------------------------


def test_metrics_compute_the_report_figures_for_the_runs_they_apply_to(ws_path, capsys):
    for args in (
        ["--bench", "demo", "--model", "baseline:first"],
        ["--bench", "demo", "--model", "baseline:first", "--strategy", "vanilla"],
        ["--bench", "demo-pope", "--model", "baseline:random"],
    ):
        assert cli(capsys, ws_path, "run", *args)[0] == 0
    reports = [json.loads(cli(capsys, ws_path, "report", run_id, "--json")[1]) for run_id in (1, 2, 3)]
    with open_workspace(ws_path) as ws:
        assert metrics.compute(ws, "vanilla", 1) == reports[0]["overall"]["vanilla"] > 0
        assert metrics.compute(ws, "circular", 1) == reports[0]["overall"]["circular"] == 0.0
        assert metrics.compute(ws, "vanilla", 2) == reports[1]["overall"]["vanilla"]
        assert metrics.compute(ws, "pope_f1", 3) == reports[2]["pope"]["official"]["f1"]
        for name, run_id, why in (
            ("circular", 2, "needs a circular run"),
            ("consistency", 1, "--full-passes"),
            ("pope_f1", 1, "yes/no benchmark"),
            ("vanilla", 3, "multiple-choice"),
            ("ece", 1, "unknown metric"),
            ("vanilla", 99, "no run 99"),
        ):
            with pytest.raises(metrics.MetricUnavailable, match=re.escape(why)):
                metrics.compute(ws, name, run_id)


# -- one launch path -----------------------------------------------------------------------------------------


def test_saved_model_names_work_in_run_qc_text_only_and_models_test(ws_path, capsys):
    assert cli(capsys, ws_path, "models", "add", "lazy", "baseline:first")[0] == 0
    code, out, _ = cli(capsys, ws_path, "run", "--bench", "demo", "--model", "lazy", "--text-only", "--json")
    assert code == 0
    run_id = json.loads(out)["run_id"]
    # qc text-only asks the same run as `run --text-only`: it is found, not asked again.
    code, out, err = cli(capsys, ws_path, "qc", "text-only", "--bench", "demo", "--model", "lazy", "--json")
    assert code == 0 and f"run {run_id} already finished, reused" in err
    assert json.loads(out)["models"] == {"lazy": run_id}
    assert cli(capsys, ws_path, "models", "test", "lazy", "--json")[0] == 0
    with open_workspace(ws_path) as ws:
        assert [r.model_spec for r in runs.list_runs(ws)] == ["baseline:first"]
        assert models.get_model(ws, "lazy").spec == "baseline:first"


@pytest.mark.parametrize("command", [["run", "--bench", "demo"], ["qc", "text-only", "--bench", "demo"]])
def test_an_unknown_name_or_a_bad_spec_is_refused_before_any_run(ws_path, capsys, command):
    code, _, err = cli(capsys, ws_path, *command, "--model", "nobody")
    assert code == 2 and "no saved model named 'nobody'" in err and err.count("\n") == 1
    code, _, err = cli(capsys, ws_path, *command, "--model", "hf:x?dtype=int3")
    assert code == 2 and "unknown dtype" in err
    with open_workspace(ws_path) as ws:
        assert runs.list_runs(ws) == []


def test_qc_text_only_checks_every_model_before_running_the_first(ws_path, capsys):
    code, _, err = cli(
        capsys,
        ws_path,
        "qc",
        "text-only",
        "--bench",
        "demo",
        "--model",
        "baseline:first",
        "--model",
        "baseline:sometimes",
    )
    assert code == 2 and "unknown kind 'sometimes'" in err
    with open_workspace(ws_path) as ws:
        assert runs.list_runs(ws) == []
    assert cli(capsys, ws_path, "models", "add", "first", "baseline:first")[0] == 0
    code, _, err = cli(
        capsys, ws_path, "qc", "text-only", "--bench", "demo", "--model", "baseline:first", "--model", "first"
    )
    assert code == 2 and "a model is named twice" in err


# -- docs/architecture.md, "How to add a backend", followed literally ----------------------------------------


def documented_toy_backend() -> str:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    found = [b for b in blocks if b.lstrip().startswith("# toy_backend.py")]
    assert len(found) == 1, "docs/architecture.md: the toy backend's module"
    return "\n".join(line[3:] if line.startswith("   ") else line for line in found[0].splitlines())


def test_the_documented_toy_backend_runs_through_a_real_vlmdesk_run(tmp_path):
    package = tmp_path / "mine"
    write_plugin(package, "toy_backend", documented_toy_backend())  # nothing but the documented file
    env = {
        **os.environ,
        PLUGINS_ENV: "toy_backend",
        "PYTHONPATH": os.pathsep.join([str(package), str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    ws = tmp_path / "ws.sqlite"
    assert vlmdesk("--workspace", ws, "demo", env=env).returncode == 0
    helped = vlmdesk("run", "--help", env=env)
    assert "toy:last" in helped.stdout
    done = vlmdesk("--workspace", ws, "run", "--bench", "demo", "--model", "toy:last", "--json", env=env)
    assert done.returncode == 0, done.stderr
    run_id = json.loads(done.stdout)["run_id"]
    report = json.loads(vlmdesk("--workspace", ws, "report", run_id, "--json", env=env).stdout)
    assert report["model"] == "toy:last" and report["status"] == "finished" and report["questions"] == 30
    with open_workspace(ws) as opened:
        answers = {r[0] for r in opened.conn.execute("SELECT response FROM predictions WHERE run_id = ?", (run_id,))}
    assert answers <= set("BCDEF") and answers  # the last letter offered, never A
    bad = vlmdesk("--workspace", ws, "run", "--bench", "demo", "--model", "toy:first", env=env)
    assert bad.returncode == 2 and bad.stderr == "error: toy: unknown kind 'first' (last)\n"
    saved = vlmdesk("--workspace", ws, "models", "add", "toy", "toy:last", env=env)
    assert saved.returncode == 0, saved.stderr
    # Without the plugin the spec means nothing, and says so.
    gone = vlmdesk(
        "--workspace",
        ws,
        "run",
        "--bench",
        "demo",
        "--model",
        "toy:last",
        env={k: v for k, v in env.items() if k != PLUGINS_ENV},
    )
    assert gone.returncode == 2 and "unknown model spec scheme 'toy'" in gone.stderr


# -- formats -------------------------------------------------------------------------------------------------


def test_formats_are_read_written_and_detected_through_the_registry(tmp_path, capsys, plugins):
    from evaluator.formats import registry as formats

    assert formats.format_names() == (
        "mmbench-tsv",
        "pope",
        "jsonl",
        "parquet",
        "pope-parquet",
        "pope-tsv",
        "vqa-parquet",
        "vqa-tsv",
    )
    assert formats.export_formats("mcq") == ("mmbench-tsv", "jsonl", "parquet")
    assert formats.export_formats("yesno") == ("pope", "pope-parquet")
    assert formats.export_formats("open") == ("vqa-tsv",)
    assert formats.by_extension(".TSV") == "mmbench-tsv" and formats.by_extension(".jsonl") is None
    assert formats.sniff({"question_id": 1, "label": "yes"}, "", "") == "pope"
    assert formats.sniff({"question": "q", "options": []}, "{\t}", "") == "jsonl"  # a tab, but a JSON record
    assert formats.sniff(None, "index\tquestion", "") == "mmbench-tsv"
    with pytest.raises(SystemExit):
        main(["import", "--help"])
    assert "{jsonl,mmbench-tsv,parquet,pope,pope-parquet,pope-tsv,vqa-parquet,vqa-tsv}" in capsys.readouterr().out
    # A format of one's own: a module whose entry names a reader (here vlmdesk's JSONL one) and an extension.
    plugins(
        mine="""
from evaluator.formats.registry import FormatEntry

FORMATS = (FormatEntry("mine", "mcq", "JSONL under another name", "evaluator.formats.importers.jsonl:read_jsonl",
                       "evaluator.formats.exporters:_write_jsonl", extensions=(".mine",)),)
"""
    )
    src = tmp_path / "b.mine"
    (tmp_path / "img.png").write_bytes(png_bytes())
    src.write_text(
        json.dumps({"index": 1, "question": "Which?", "options": ["x", "y"], "answer": "B", "image": "img.png"}) + "\n"
    )
    ws = tmp_path / "ws.sqlite"
    code, out, err = cli(capsys, ws, "import", src, "--json")
    assert code == 0, err
    assert json.loads(out)["format"] == "mine"
    code, out, err = cli(capsys, ws, "qc", "export", "b", "--out", tmp_path / "out.jsonl", "--json")
    assert code == 0 and json.loads(out)["format"] == "mine", err
    assert json.loads((tmp_path / "out.jsonl").read_text())["options"] == ["x", "y"]
