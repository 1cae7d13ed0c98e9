"""Prompt presets: a run with `--prompt vlmevalkit` stores, character for character, the prompt VLMEvalKit's own code
builds for the same row and model class.

tests/data/vlmevalkit_prompts.json holds those prompts: built by executing VLMEvalKit's build_prompt code (the
commit is in the file) for a few MMBench rows (with and without a hint, 2–4 options, Chinese ones) in each rotation,
and POPE rows, for the class that serves each family. The end-to-end test runs `vlmdesk run` with tiny models of the
families built here (tests/tiny_families.py); every family's preset is checked against the data at the unit level.
"""

from __future__ import annotations

import base64
import dataclasses
import json
from pathlib import Path

import pytest

from db import catalog, open_workspace, runs
from db.errors import InvalidInput
from evaluator.backends.families import FAMILIES
from evaluator.engine.prompt_presets import (
    DATASET,
    VLMEVALKIT_PRESETS,
    choose_prompt,
    describe_prompt,
    family_preset_name,
    vlmevalkit_preset,
)
from evaluator.engine.prompts import PromptTemplate, default_template
from evaluator.engine.runner import RunSettings, config_key
from evaluator.formats.importers import import_benchmark
from tests.factories import jpeg_bytes, png_bytes, write_tsv
from tests.tiny_families import BUILDERS
from vlmdesk.cli import main

DATA = json.loads((Path(__file__).parents[1] / "data" / "vlmevalkit_prompts.json").read_text(encoding="utf-8"))
ROWS, POPE_ROWS, PROMPTS = DATA["rows"], DATA["pope_rows"], DATA["prompts"]
FAMILY_TYPES = [f.model_type for f in FAMILIES]
STORED = runs.Run(
    1, 1, "b", "baseline:first", "circular", "{}", "rules", {}, "k", {}, None, 0, "finished", None, "t", "t", "t"
)
# The families with a tiny model on this branch run end to end; the others are checked through the API below.
RUNNABLE = [t for t in FAMILY_TYPES if t in BUILDERS]


def _preset_of(family: str):
    return vlmevalkit_preset(family_preset_name(None if family == "default" else family))


def test_the_data_covers_every_family_and_names_its_vlmevalkit_commit():
    assert len(DATA["vlmevalkit_commit"]) == 40
    assert set(FAMILY_TYPES) | {"default"} == set(PROMPTS) == set(DATA["classes"])
    assert set(VLMEVALKIT_PRESETS) == set(FAMILY_TYPES)
    assert {"llava", "idefics3"} <= set(RUNNABLE)
    hints = [r["hint"] for r in ROWS]
    assert None in hints and any(hints) and {len(r["options"]) for r in ROWS} == {2, 3, 4}
    assert {r["language"] for r in ROWS} == {"en", "zh"} and any("\n" in (h or "") for h in hints)


@pytest.mark.parametrize("family", sorted(PROMPTS))
def test_every_family_preset_renders_vlmevalkits_prompts_exactly(family):
    preset = _preset_of(family)
    for row in ROWS:
        options = row["options"]
        for k, built in enumerate(PROMPTS[family][row["id"]]):
            shown = tuple(options[k:] + options[:k])
            mine = preset.mcq.render(
                question=row["question"], hint=row["hint"], options=shown, language=row["language"]
            )
            assert mine == built["text"], (family, row["id"], k)
    for row in POPE_ROWS:
        mine = preset.yesno.render(question=row["question"], hint=None, options=(), language="en")
        assert mine == PROMPTS[family][row["id"]]["text"], (family, row["id"])


def _model_dir(tmp_path: Path, model_type: str) -> Path:
    folder = tmp_path / model_type
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": model_type}))
    return folder


@pytest.mark.parametrize("model_type", FAMILY_TYPES)
def test_vlmevalkit_picks_the_preset_of_the_models_family_from_its_config(tmp_path, model_type):
    """Every family: the model type is read from config.json (no weights loaded) and names the run's preset."""
    chosen = choose_prompt("vlmevalkit", "mcq", f"hf:{_model_dir(tmp_path, model_type)}?dtype=bfloat16")
    assert chosen.preset == f"vlmevalkit:{model_type}" and chosen.note is None
    assert chosen.template == VLMEVALKIT_PRESETS[model_type].mcq
    assert choose_prompt("vlmevalkit", "yesno", f"hf:{tmp_path / model_type}").template.to_json() == (
        VLMEVALKIT_PRESETS[model_type].yesno.to_json()
    )


def test_servers_baselines_and_unknown_families_get_the_datasets_prompt(tmp_path):
    for spec in ("openai:qwen@http://127.0.0.1:9/v1", "baseline:first"):
        chosen = choose_prompt("vlmevalkit", "mcq", spec)
        assert chosen.preset == "vlmevalkit:default" and chosen.note is None and chosen.template == DATASET.mcq
    odd = choose_prompt("vlmevalkit", "mcq", f"hf:{_model_dir(tmp_path, 'blip-2')}")
    assert odd.preset == "vlmevalkit:default" and "'blip-2' has no VLMEvalKit preset" in (odd.note or "")
    # the original InternVL repositories (trust_remote_code) are served by the same class
    assert choose_prompt("vlmevalkit", "mcq", f"hf:{_model_dir(tmp_path, 'internvl_chat')}").preset == (
        "vlmevalkit:internvl"
    )
    # a family named by hand (an openai: server serving Qwen2-VL)
    named = choose_prompt("vlmevalkit:qwen2_vl", "yesno", "openai:q@http://127.0.0.1:9/v1")
    assert named.preset == "vlmevalkit:qwen2_vl" and named.template == VLMEVALKIT_PRESETS["qwen2_vl"].yesno
    assert choose_prompt(None, "mcq", "baseline:first") == choose_prompt("vlmdesk", "mcq", "baseline:first")
    assert choose_prompt("vlmdesk", "mcq", "baseline:first").template == default_template("mcq")
    with pytest.raises(InvalidInput, match="not one of vlmevalkit:default"):
        choose_prompt("vlmevalkit:nope", "mcq", "baseline:first")
    with pytest.raises(InvalidInput, match="cannot read the model type"):
        choose_prompt("vlmevalkit", "mcq", f"hf:{tmp_path}")  # a folder without config.json


def test_a_hub_id_is_read_from_the_hub_cache_without_the_network(tmp_path, monkeypatch):
    from huggingface_hub import constants

    snapshot = tmp_path / "hub" / "models--Qwen--Qwen2-VL-2B-Instruct" / "snapshots" / ("a" * 40)
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text(json.dumps({"model_type": "qwen2_vl"}))
    (snapshot.parents[1] / "refs").mkdir()
    (snapshot.parents[1] / "refs" / "main").write_text("a" * 40)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert choose_prompt("vlmevalkit", "mcq", "hf:Qwen/Qwen2-VL-2B-Instruct").preset == "vlmevalkit:qwen2_vl"
    with pytest.raises(InvalidInput, match="cannot read the model type of 'Qwen/not-cached'"):
        choose_prompt("vlmevalkit", "mcq", "hf:Qwen/not-cached")


def test_a_preset_is_stored_whole_and_read_back_and_plain_templates_keep_their_json():
    for preset in VLMEVALKIT_PRESETS.values():
        for template in (preset.mcq, preset.yesno, preset.open):
            assert PromptTemplate.from_json(template.to_json()) == template
    assert default_template("mcq").to_json() == json.dumps(
        default_template("mcq").by_language, ensure_ascii=False, sort_keys=True
    )
    for bad in (
        '{"texts": {"en": "{nope}"}}',
        '{"texts": {"en": "{question}"}, "hint_prefix": 3}',
        '{"texts": {"en": "{question}"}, "extra": 1}',
        '{"texts": {"en": "{question}"}, "language_from_text": "yes"}',
    ):
        with pytest.raises(InvalidInput):
            PromptTemplate.from_json(bad)


def test_the_preset_is_part_of_the_runs_identity():
    class Bench:
        source_sha256 = "s"

    llava = VLMEVALKIT_PRESETS["llava"].mcq
    plain = RunSettings()
    named = RunSettings(prompt_preset="vlmevalkit:llava")
    assert "prompt_preset" not in plain.identity()  # vlmdesk's runs keep the key they always had
    assert named.identity()["prompt_preset"] == "vlmevalkit:llava"
    keys = {
        config_key(Bench(), "hf:m", plain, default_template("mcq")),
        config_key(Bench(), "hf:m", named, llava),
        config_key(Bench(), "hf:m", RunSettings(prompt_preset="vlmevalkit:internvl"), llava),  # same text, other name
    }
    assert len(keys) == 3
    with pytest.raises(InvalidInput, match="prompt_preset"):
        RunSettings(prompt_preset="vlmevalkit:nope").check()

    def run(config, template, strategy="circular"):
        return dataclasses.replace(STORED, config=config, prompt_template=template, strategy=strategy)

    assert describe_prompt(run({"prompt_preset": "vlmevalkit:llava"}, llava.to_json())) == "vlmevalkit:llava"
    assert describe_prompt(run({}, default_template("yesno").to_json(), "pope")) == "vlmdesk"
    assert describe_prompt(run({}, '{"en": "{question}"}', "pope")) == "template file"
    origin = {"origin": {"format": "vlmevalkit", "file": "x.xlsx"}}
    assert describe_prompt(run(origin, default_template("mcq").to_json())) == "imported"


# ---- end to end: `vlmdesk run --prompt vlmevalkit` with tiny models of the families built here ---------------


def _cli(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def preset_ws(tmp_path, capsys) -> Path:
    """A workspace with the data's MMBench rows (as a TSV) and its POPE rows (POPE's JSON lines)."""
    header = ["index", "question", "hint", "A", "B", "C", "D", "answer", "category", "image", "l2-category", "split"]
    rows = []
    for n, row in enumerate(ROWS, start=1):
        options = row["options"] + [""] * (4 - len(row["options"]))
        image = base64.b64encode(jpeg_bytes(n, 64)).decode()
        rows.append(
            dict(
                zip(
                    header,
                    [str(n), row["question"], row["hint"] or "nan", *options, row["answer"], "cat", image, "l2", "dev"],
                )
            )
        )
    write_tsv(tmp_path / "mmbench_rows.tsv", rows, header=header)
    images = tmp_path / "imgs"
    images.mkdir()
    (images / "a.png").write_bytes(png_bytes())
    pope = tmp_path / "coco_pope_random.json"
    pope.write_text(
        "".join(
            json.dumps({"question_id": n, "image": "a.png", "text": r["question"], "label": r["answer"]}) + "\n"
            for n, r in enumerate(POPE_ROWS, start=1)
        )
    )
    ws_path = tmp_path / "ws.sqlite"
    with open_workspace(ws_path) as ws:
        import_benchmark(ws, tmp_path / "mmbench_rows.tsv", name="rows")
        import_benchmark(ws, pope, images_dir=images, name="pope")
    return ws_path


def _stored_prompts(ws_path: Path, run_id: int) -> dict[tuple[str, int], str]:
    with open_workspace(ws_path) as ws:
        run = runs.get_run(ws, run_id)
        assert run is not None
        index = {i.id: i.index for i in catalog.list_items(ws, run.benchmark_id)}
        return {(index[p.item_id], p.pass_): p.prompt for p in runs.predictions_of(ws, run_id)}


@pytest.mark.parametrize("model_type", RUNNABLE)
def test_a_vlmevalkit_run_stores_vlmevalkits_prompts_character_for_character(
    preset_ws, tiny_family_dirs, capsys, model_type
):
    model = f"hf:{tiny_family_dirs(model_type)}"
    base = ["--workspace", str(preset_ws), "run", "--model", model, "--max-new-tokens", "1", "--json"]
    code, out, err = _cli(capsys, *base, "--bench", "rows", "--full-passes", "--prompt", "vlmevalkit")
    assert code == 0, err
    run_id = json.loads(out)["run_id"]
    stored = _stored_prompts(preset_ws, run_id)
    expected = {
        (n, k): built["text"]
        for n, row in enumerate(ROWS, start=1)
        for k, built in enumerate(PROMPTS[model_type][row["id"]])
    }
    assert stored == expected
    code, out, err = _cli(capsys, *base, "--bench", "pope", "--prompt", "vlmevalkit")
    assert code == 0, err
    pope_run = json.loads(out)["run_id"]
    assert _stored_prompts(preset_ws, pope_run) == {
        (n, 0): PROMPTS[model_type][r["id"]]["text"] for n, r in enumerate(POPE_ROWS, start=1)
    }
    # The preset is named in the run and is part of its identity: asked again, the same run; with vlmdesk's
    # prompt, another one.
    with open_workspace(preset_ws) as ws:
        run = runs.get_run(ws, run_id)
        assert run is not None and run.config["prompt_preset"] == f"vlmevalkit:{model_type}"
    code, out, err = _cli(capsys, *base, "--bench", "rows", "--full-passes", "--prompt", "vlmevalkit")
    assert json.loads(out)["run_id"] == run_id and "already finished" in err
    code, out, _ = _cli(capsys, *base, "--bench", "rows", "--full-passes", "--strategy", "vanilla", "--limit", "1")
    assert json.loads(out)["run_id"] != run_id
    _, listing, _ = _cli(capsys, "--workspace", str(preset_ws), "runs")
    assert f"circular · vlmevalkit:{model_type} prompt" in listing
    _, listed, _ = _cli(capsys, "--workspace", str(preset_ws), "runs", "--json")
    prompts = {r["run_id"]: r["prompt"] for r in json.loads(listed)}
    assert prompts[run_id] == f"vlmevalkit:{model_type}" and "vlmdesk" in prompts.values()
    _, report, _ = _cli(capsys, "--workspace", str(preset_ws), "report", str(run_id))
    assert report.splitlines()[0].endswith(f"prompt vlmevalkit:{model_type}")


def test_prompt_and_prompt_template_are_one_choice(preset_ws, tmp_path, capsys):
    template = tmp_path / "t.txt"
    template.write_text("Q: {question}\n{options}")
    base = ["--workspace", str(preset_ws), "run", "--bench", "rows", "--model", "baseline:first", "--json"]
    code, out, _ = _cli(capsys, *base, "--prompt-template", str(template))
    first = json.loads(out)["run_id"]
    code, out, err = _cli(capsys, *base, "--prompt", str(template))
    assert json.loads(out)["run_id"] == first and "already finished" in err  # the alias is the same run
    code, _, err = _cli(capsys, *base, "--prompt", str(template), "--prompt-template", str(template))
    assert code == 2 and "give one" in err
    code, out, _ = _cli(capsys, *base, "--prompt", "vlmevalkit")
    with open_workspace(preset_ws) as ws:
        run = runs.get_run(ws, json.loads(out)["run_id"])
        assert run is not None and run.config["prompt_preset"] == "vlmevalkit:default"
        first_pass = runs.predictions_of(ws, run.id)[0]
        assert first_pass.prompt.endswith("Please select the correct answer from the options above. \n")


def test_the_chinese_instruction_follows_vlmevalkits_test_not_the_items_language():
    """VLMEvalKit's cn_string looks for U+4E00–U+9FFF anywhere in the hint, question and options; an item marked
    Chinese without such a character gets the English instruction, an English one with one the Chinese."""
    llava = VLMEVALKIT_PRESETS["llava"].mcq
    english = "\nAnswer with the option's letter from the given choices directly."
    assert llava.render(question="Which?", hint=None, options=("a", "b"), language="zh").endswith(english)
    assert llava.render(question="Which?", hint=None, options=("a", "猫"), language="en").endswith(
        "\n请直接回答选项字母。"
    )
    assert llava.render(question="Which?", hint="\u3400", options=("a", "b"), language="zh").endswith(english)
    assert llava.render(question="Which?", hint="", options=("a", "b"), language="en") == (
        "Which?\nA. a\nB. b" + english
    )


@pytest.mark.parametrize("kind", ["a FIFO", "a link to /dev/zero", "a sparse file of 1 GB", "nested 100,000 deep"])
def test_a_hostile_config_json_is_one_line_through_the_bounded_door(tmp_path, kind):
    """Issue 40 §6: `--prompt vlmevalkit` read an hf: folder's config.json with a plain open(): a FIFO hung, a link to
    /dev/zero reached 7.5 GB, a sparse 1 GB file 2.1 GB. It goes through the importers' door (a regular file of at
    most 1 MB, JSON of bounded depth): one line, exit 2, no run stored. The real CLI, in a child process."""
    import os

    from tests.test_errors import one_line_error, vlmdesk

    model = tmp_path / "model"
    model.mkdir()
    config = model / "config.json"
    says = {
        "a FIFO": "config.json is a FIFO (named pipe), not a regular file",
        "a link to /dev/zero": "config.json is a character device, not a regular file",
        "a sparse file of 1 GB": "config.json is 1024 MB, over the limit for a config.json of 1.0 MB",
        "nested 100,000 deep": "(config.json: JsonTooDeep)",
    }[kind]
    if kind == "a FIFO":
        os.mkfifo(config)
    elif kind == "a link to /dev/zero":
        config.symlink_to("/dev/zero")
    elif kind == "a sparse file of 1 GB":
        with open(config, "wb") as f:
            f.truncate(2**30)
    else:
        config.write_text("[" * 100_000 + "]" * 100_000)
    ws = tmp_path / "ws.sqlite"
    assert vlmdesk("--workspace", str(ws), "demo").returncode == 0
    proc = vlmdesk("--workspace", str(ws), "run", "--bench", "demo", "--model", f"hf:{model}", "--prompt", "vlmevalkit")
    assert proc.returncode == 2, proc.stderr
    line = one_line_error(proc)
    assert line.startswith(f"error: --prompt vlmevalkit: cannot read the model type of {str(model)!r}") and says in line
    with open_workspace(ws) as w:
        assert runs.list_runs(w) == []
