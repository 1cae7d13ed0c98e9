"""Every row of evaluator/backends/families.py, proven on a tiny random-weight model of that exact architecture class:
built
locally (tests/tiny_families.py), loaded back through AutoProcessor / AutoModelForImageTextToText and run through
`vlmdesk run` — batched left-padded generation, likelihood with single- and multi-token candidates, POPE — with the
prefix-sharing decision of its row. Exactness of prefix sharing where it is on: tests/backends/test_hf_prefix.py,
parametrised over the same rows."""

from __future__ import annotations

import json

import pytest

from db import open_workspace, runs
from evaluator.backends.base import Query
from evaluator.backends.families import FAMILIES
from evaluator.backends.hf import HFBackend
from tests.backends.test_hf_prefix import query
from vlmdesk.cli import main
from vlmdesk.demo import ensure_demo

TYPES = [f.model_type for f in FAMILIES]


@pytest.fixture
def demo_ws(tmp_path):
    path = tmp_path / "ws.sqlite"
    with open_workspace(path) as ws:
        ensure_demo(ws)
    return path


@pytest.fixture(scope="module")
def loaded(tiny_family_dirs):
    """model_type → HFBackend over that family's tiny model, loaded once per module."""
    cache: dict[str, HFBackend] = {}

    def get(model_type: str) -> HFBackend:
        if model_type not in cache:
            cache[model_type] = HFBackend(str(tiny_family_dirs(model_type)))
        return cache[model_type]

    return get


def _run(capsys, ws, *args) -> int:
    assert main(["--workspace", str(ws), "run", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])["run_id"]


def _responses(ws, run_id) -> dict[tuple[int, int], str]:
    with open_workspace(ws) as w:
        return {(p.item_id, p.pass_): p.response for p in runs.predictions_of(w, run_id)}


@pytest.mark.parametrize("model_type", TYPES)
def test_the_tiny_model_is_that_family_loaded_through_the_auto_classes(model_type, loaded):
    import transformers
    from transformers.models.auto.modeling_auto import MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES
    from transformers.models.auto.processing_auto import PROCESSOR_MAPPING_NAMES

    backend = loaded(model_type)
    assert backend.model.config.model_type == model_type and backend.is_vlm
    assert type(backend.model).__name__ == MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES[model_type]
    # The family's real processor class (a fixture subclass of it where the real one wants a video processor).
    name = PROCESSOR_MAPPING_NAMES[model_type]
    real = getattr(transformers, name)
    if getattr(real, "is_dummy", False):
        # transformers.PixtralProcessor is a placeholder without torchvision (tests/tiny_families_plain.py imports
        # the class itself): the real class is the one of that name from transformers.models the processor has.
        real = next(
            c
            for c in type(backend.processor).__mro__
            if c.__name__ == name and c.__module__.startswith("transformers.models.")
        )
    assert isinstance(backend.processor, real)
    assert backend.tokenizer.padding_side == "left"
    family = next(f for f in FAMILIES if f.model_type == model_type)
    assert backend.share_prefix == family.share_prefix
    assert backend.describe()["notes"] == []  # a verified family: no "unverified" note


@pytest.mark.parametrize("model_type", TYPES)
def test_circular_generation_is_the_same_at_batch_1_and_3_and_the_sharing_decision_is_stored(
    model_type, tiny_family_dirs, demo_ws, capsys
):
    spec = f"hf:{tiny_family_dirs(model_type)}"
    common = ["--bench", "demo", "--limit", "5", "--full-passes", "--max-new-tokens", "6", "--new"]
    one = _run(capsys, demo_ws, "--model", spec, "--batch-size", "1", *common)
    three = _run(capsys, demo_ws, "--model", spec, "--batch-size", "3", *common)
    unshared = _run(capsys, demo_ws, "--model", spec, "--batch-size", "3", "--no-share-prefix", *common)
    first = _responses(demo_ws, one)
    assert len(first) > 5 and first == _responses(demo_ws, three) == _responses(demo_ws, unshared)
    assert len(set(first.values())) > 1, "every answer alike: a broken model could not be told apart"
    family = next(f for f in FAMILIES if f.model_type == model_type)
    with open_workspace(demo_ws) as ws:
        info = runs.get_run(ws, three).versions["backend"]
    assert info["model_class"].endswith("ForConditionalGeneration")
    assert info["share_prefix"] == ("on" if family.share_prefix else f"off: {family.share_off}")


@pytest.mark.parametrize("model_type", TYPES)
def test_likelihood_and_pope_runs(model_type, tiny_family_dirs, demo_ws, capsys):
    spec = f"hf:{tiny_family_dirs(model_type)}"
    letters = _run(capsys, demo_ws, "--model", spec, "--bench", "demo", "--limit", "4", "--likelihood")
    with open_workspace(demo_ws) as ws:
        preds = runs.predictions_of(ws, letters)
    assert preds and all(p.stage == "likelihood" and p.choice == p.response for p in preds)
    for mode in ([], ["--likelihood"]):
        pope = _run(
            capsys, demo_ws, "--model", spec, "--bench", "demo-pope", "--limit", "6", "--max-new-tokens", "3", *mode
        )
        assert main(["--workspace", str(demo_ws), "report", str(pope), "--json"]) == 0
        report = json.loads(capsys.readouterr().out)
        assert report["strategy"] == "pope" and report["answered"] == 6 and report["pope"]["strict"]["questions"] == 6


@pytest.mark.parametrize("model_type", TYPES)
def test_multi_token_scores_are_the_log_probs_generation_gives_those_tokens(model_type, loaded):
    """A candidate of several tokens is scored as the model would see it while generating it: the greedy
    continuation's score equals the sum of generate()'s own log-probs for those tokens (positions included: Qwen's
    3-D rotary positions, a sliding window, cross-attention images), alone and in a batch of three."""
    import torch

    backend = loaded(model_type)
    queries = [query(0, 0), query(1, 2), query(2, 1)]
    expected, candidates = [], []
    for q in queries:
        enc = backend._encode([q])
        out = backend.model.generate(
            **enc,
            max_new_tokens=4,
            do_sample=False,
            return_dict_in_generate=True,
            output_logits=True,
            pad_token_id=backend.tokenizer.pad_token_id,
        )
        new = out.sequences[0, enc["input_ids"].shape[1] :].tolist()
        steps = [torch.log_softmax(lg[0].float(), -1) for lg in out.logits]
        eos = backend.model.generation_config.eos_token_id
        n = next((i for i, t in enumerate(new) if t == eos or (isinstance(eos, list) and t in eos)), len(new))
        new, steps = new[: max(n, 2)], steps[: max(n, 2)]
        expected.append(sum(float(s[t]) for s, t in zip(steps, new)))
        # Another candidate of text tokens: never a special token such as the image placeholder, which no
        # candidate's text tokenizes to and which the model would take for an image without pixels.
        special, size = set(backend.tokenizer.all_special_ids), len(backend.tokenizer)
        other = [next(u for k in range(7, size) if (u := (t + k) % size) not in special) for t in new]
        candidates.append([new, new[:1], other])
    got = [[0.0] * 3 for _ in queries]
    backend._score_rows(queries, [["x"] * 3] * 3, candidates, got, [0, 1, 2])
    alone = [[0.0] * 3]
    backend._score_rows(queries[1:2], [["x"] * 3], candidates[1:2], alone, [0])
    for want, scores in zip(expected, got):
        assert scores[0] == pytest.approx(want, abs=1e-3)
        assert scores[1] >= scores[0] - 1e-4  # a prefix of the candidate is at least as likely
    assert alone[0] == pytest.approx(got[1], abs=1e-4)
    assert len({round(s[2], 3) for s in got}) > 1


def test_a_model_type_outside_the_table_runs_generically_and_says_once_it_is_unverified(tiny_llava_dir, caplog):
    from transformers import AutoModelForImageTextToText, AutoProcessor

    model = AutoModelForImageTextToText.from_pretrained(tiny_llava_dir)
    model.config.model_type = "my_own_vlm"  # a plugin's architecture: mapped through auto_map, not a known type
    model.config.auto_map = {"AutoModelForImageTextToText": "my_own_vlm.Model"}
    with caplog.at_level("WARNING", logger="evaluator.backends"):
        backend = HFBackend.from_loaded(model, AutoProcessor.from_pretrained(tiny_llava_dir), name="my-vlm")
    said = [r.getMessage() for r in caplog.records if "unverified" in r.getMessage()]
    assert len(said) == 1 and "'my_own_vlm'" in said[0]
    info = backend.describe()
    assert info["notes"] == [said[0].removeprefix("hf: ")]
    assert info["share_prefix"] == "off: continuing a cached prefix is not verified exact for model type 'my_own_vlm'"
    # The generic path answers as the verified LLaVA path does with the same weights.
    asked = [query(0, 0), query(1, 1)]
    assert backend.generate(asked, 6) == HFBackend(str(tiny_llava_dir)).generate(asked, 6)


@pytest.mark.parametrize("model_type", TYPES)
def test_a_tiny_image_and_slivers_are_answered(model_type, loaded):
    """Benchmarks hold icons and strips: an 8×8 image (below Pixtral's merged patch: enlarged) and 2-pixel slivers
    are answered, shared or not."""
    import io

    from PIL import Image

    backend = loaded(model_type)
    queries = []
    for size in ((8, 8), (2, 100), (100, 2)):
        buf = io.BytesIO()
        Image.new("RGB", size, (200, 30, 30)).save(buf, "PNG")
        queries.append(Query("Is there a cat in the image?", (buf.getvalue(),), ("Yes", "No")))
    shared = backend.generate(queries, 3)
    backend.share_prefix, share = False, backend.share_prefix
    try:
        assert backend.generate(queries, 3) == shared
    finally:
        backend.share_prefix = share
    assert len(shared) == 3


def test_a_processor_that_needs_torchvision_is_one_line_saying_so(tiny_family_dirs, tmp_path):
    """The product loads a family's real processor; where that wants torchvision (Qwen-VL's video processor) and
    torchvision is missing, as on these machines, the error says what to install."""
    import json
    import shutil

    from evaluator.backends.base import BackendError

    model = shutil.copytree(tiny_family_dirs("qwen2_vl"), tmp_path / "qwen")
    for name in ("processor_config.json", "preprocessor_config.json", "tokenizer_config.json"):
        path = model / name
        if path.exists():
            config = json.loads(path.read_text())
            if "processor_class" in config:
                config["processor_class"] = "Qwen2VLProcessor"  # the real class, video slot and all
                path.write_text(json.dumps(config))
    # A real checkpoint carries its video processor's config too.
    (model / "video_preprocessor_config.json").write_text(json.dumps({"video_processor_type": "Qwen2VLVideoProcessor"}))
    with pytest.raises(BackendError) as caught:
        HFBackend(str(model))
    assert "needs torchvision" in str(caught.value) and "\n" not in str(caught.value)
