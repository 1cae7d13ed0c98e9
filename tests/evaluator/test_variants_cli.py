"""`vlmdesk run`'s variant options end to end: the demo benchmark, baselines, a tiny LLaVA and Idefics3."""

from __future__ import annotations

import json

import pytest

from db import open_workspace, runs
from evaluator.backends import Query, load_backend
from evaluator.engine.runner import settings_of
from vlmdesk.cli import main


def cli(capsys, *args):
    try:
        code = main(list(args))
    except SystemExit as exc:  # argparse's one-line errors
        code = exc.code
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def demo_ws(tmp_path, capsys):
    path = tmp_path / "ws.sqlite"
    assert cli(capsys, "--workspace", str(path), "demo")[0] == 0
    return path


def test_label_mapped_random_baseline_run_and_its_resume(demo_ws, capsys):
    w = ("--workspace", str(demo_ws))
    code, out, _ = cli(
        capsys, *w, "run", "--bench", "demo", "--model", "baseline:random", "--label-map", "neutral:1", "--json"
    )
    assert code == 0
    run_id = json.loads(out)["run_id"]
    with open_workspace(demo_ws) as ws:
        run = runs.get_run(ws, run_id)
        preds = runs.predictions_of(ws, run_id)
    assert run.config["label_map"] == "neutral:1" and settings_of(run).label_map == "neutral:1"
    # the random baseline answers one of the offered labels; the stored choice is the shown option's letter
    assert preds and all(p.choice in "ABCDEF" and p.stage == "rules" for p in preds)
    assert all(p.response in ("foo", "dog", "hip", "oh", "cat", "lake") for p in preds)
    assert all(p.correct == (p.choice == p.answer) for p in preds)
    code, out, _ = cli(capsys, *w, "report", str(run_id), "--json")
    assert code == 0 and json.loads(out)["run_id"] == run_id


def test_runs_without_variants_keep_their_key_and_variants_make_new_runs(demo_ws, capsys):
    w = ("--workspace", str(demo_ws))
    base = ("run", "--bench", "demo", "--model", "baseline:first", "--strategy", "vanilla", "--json")
    first = json.loads(cli(capsys, *w, *base)[1])["run_id"]
    assert json.loads(cli(capsys, *w, *base)[1])["run_id"] == first
    varied = json.loads(cli(capsys, *w, *base, "--corrupt", "image:fog:1", "--corrupt", "text:lowercase")[1])
    assert varied["run_id"] != first
    with open_workspace(demo_ws) as ws:
        assert runs.get_run(ws, first).config.keys().isdisjoint({"label_map", "corrupt", "shots", "cot"})
        assert settings_of(runs.get_run(ws, varied["run_id"])).corrupt == ("image:fog:1", "text:lowercase")
    # --cot chooses a longer answer by default
    cot = json.loads(cli(capsys, *w, *base, "--cot")[1])["run_id"]
    with open_workspace(demo_ws) as ws:
        assert runs.get_run(ws, cot).config["max_new_tokens"] == 512


@pytest.mark.parametrize(
    "extra, field",
    [
        (("--label-map", "natural:7"), "--label-map"),
        (("--corrupt", "image:fog:9"), "--corrupt"),
        (("--corrupt", "text:shout"), "--corrupt"),
        (("--shots", "4"), "--shots"),
        (("--shot-selection", "best", "--shots", "1"), "--shot-selection"),
        (("--corrupt-options",), "--corrupt-options"),
    ],
)
def test_bad_variant_options_are_one_line_errors_storing_nothing(demo_ws, capsys, extra, field):
    code, out, err = cli(
        capsys, "--workspace", str(demo_ws), "run", "--bench", "demo", "--model", "baseline:first", *extra
    )
    assert code == 2 and err.startswith("error: ") and len(err.strip().splitlines()) == 1 and field in err
    with open_workspace(demo_ws) as ws:
        assert runs.list_runs(ws) == []


def test_a_label_map_on_a_yes_no_benchmark_is_refused(demo_ws, capsys):
    code, _, err = cli(
        capsys,
        "--workspace",
        str(demo_ws),
        "run",
        "--bench",
        "demo-pope",
        "--model",
        "baseline:first",
        "--label-map",
        "natural:0",
    )
    assert code == 2 and "yes/no" in err


@pytest.mark.parametrize("family", ["tiny_llava_dir", "tiny_idefics3_dir"])
def test_tiny_vlms_take_a_k_shot_query_with_several_images(demo_ws, capsys, request, family):
    """A 2-shot, label-mapped, corrupted CoT run of a tiny random VLM: three images per query go through the
    model's own processor and chat template, and every pass is stored with a standard letter or undecided."""
    model = request.getfixturevalue(family)
    code, out, err = cli(
        capsys,
        "--workspace",
        str(demo_ws),
        "run",
        "--bench",
        "demo",
        "--model",
        f"hf:{model}",
        "--limit",
        "3",
        "--strategy",
        "vanilla",
        "--shots",
        "2",
        "--shot-selection",
        "similar",
        "--label-map",
        "natural:0",
        "--corrupt",
        "image:pixelate:2",
        "--max-new-tokens",
        "4",
        "--json",
    )
    assert code == 0, err
    run_id = json.loads(out)["run_id"]
    with open_workspace(demo_ws) as ws:
        preds = runs.predictions_of(ws, run_id)
    assert len(preds) == 3
    assert all(p.prompt.count("Example ") == 2 and "(image 3)" in p.prompt for p in preds)
    assert all(p.choice is None or p.choice in "ABCD" for p in preds)
    backend = load_backend(f"hf:{model}")
    query = Query(prompt="Example 1 (image 1): … Now (image 2)?", images=(_png(), _png()), letters=("A", "B"))
    assert len(backend.generate([query], 2)) == 1


def _png() -> bytes:
    from tests.factories import jpeg_bytes

    return jpeg_bytes(1, side=40)


def test_runs_lists_variants_and_imports_in_the_apps_words(demo_ws, capsys, tmp_path):
    w = ("--workspace", str(demo_ws))
    base = ("run", "--bench", "demo", "--model", "baseline:random", "--strategy", "vanilla", "--limit", "4")
    assert cli(capsys, *w, *base)[0] == 0
    assert cli(capsys, *w, *base, "--label-map", "natural:1", "--shots", "2", "--corrupt", "text:lowercase")[0] == 0
    out = tmp_path / "preds.tsv"
    assert cli(capsys, *w, "export-predictions", "1", "--out", str(out), "--layout", "vlmevalkit")[0] == 0
    code, _, err = cli(capsys, *w, "import-predictions", str(out), "--bench", "demo", "--model", "elsewhere")
    assert code == 0, err
    code, listing, _ = cli(capsys, *w, "runs")
    lines = {int(line.split()[0]): line for line in listing.splitlines()[1:]}
    assert code == 0 and set(lines) == {1, 2, 3}
    assert " vanilla " in lines[1] and "·" not in lines[1]
    assert "vanilla · natural:1 labels · text:lowercase · 2-shot random " in lines[2]
    assert "vanilla · ⇩ imported " in lines[3]
    # The columns stay aligned whatever the strategy column holds.
    assert len({line.index("finished") for line in lines.values()}) == 1
    code, out_json, _ = cli(capsys, *w, "runs", "--json")
    found = {r["run_id"]: (r["variants"], r["imported"]) for r in json.loads(out_json)}
    assert found == {
        1: ("", False),
        2: ("natural:1 labels · text:lowercase · 2-shot random", False),
        3: ("", True),
    }
