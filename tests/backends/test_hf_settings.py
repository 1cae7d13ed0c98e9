"""The hf: backend's generation and processor settings, the run's chat setup and thinking output (issue 36), on tiny
random-weight VLMs loaded from disk through AutoProcessor / AutoModelForImageTextToText.

The thinking model is a tiny Qwen2-VL whose chat template is Qwen3's in shape: its generation prompt opens
``<think>`` unless ``enable_thinking`` is false (then it writes an empty thought), and ``<think>`` / ``</think>`` are
special tokens, so ``skip_special_tokens`` would drop them. Nothing forces the model's tokens from outside: its
output is what greedy decoding of the random weights gives, the template opens the thought, and the backend's own
thinking budget closes it — each checked against transformers' plain ``generate`` run by hand here.
"""

from __future__ import annotations

import pytest
import torch
from PIL import Image

from db.catalog import Benchmark
from evaluator.backends import load_backend, run_identity
from evaluator.backends.base import BackendError, Chat, Generation, Query
from evaluator.backends.hf import HFBackend, hf_identity, parse_hf_spec
from evaluator.backends.reasoning import cut_in_thought
from evaluator.engine.prompts import default_template
from evaluator.engine.runner import RunSettings, config_key
from tests.backends.test_hf import image_bytes

THINK_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n"
    "{% if m['content'] is string %}{{ m['content'] }}{% else %}{% for p in m['content'] %}"
    "{% if p['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif p['type'] == 'text' %}{{ p['text'] }}{% endif %}{% endfor %}{% endif %}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n"
    "{% if enable_thinking is defined and enable_thinking is false %}<think>\n\n</think>\n\n"
    "{% else %}<think>\n{% endif %}{% endif %}"
)
SQUARE = image_bytes((200, 30, 30), (112, 112))  # 112² px: an 8×8 grid, 16 merged tokens at the tiny processor's max
WIDE = image_bytes((20, 90, 200), (128, 64))
QUESTION = "What is shown in the image? Answer with the letter of the option."


def build_thinking_qwen2_vl(dir):
    """The Qwen2-VL of tests/tiny_families_qwen.py with THINK_TEMPLATE and the two thought tags as special tokens."""
    import transformers
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    from tests import tiny_families_qwen as q
    from tests.tiny_models import _SEED, _save, _tokenizer

    q.register_processors()
    tok = _tokenizer(q._SPECIAL, [*q._EXTRA, "<think>", "</think>"], THINK_TEMPLATE)
    ids = {
        f"{key}_token_id": tok.convert_tokens_to_ids(token)
        for key, token in (
            ("image", "<|image_pad|>"),
            ("video", "<|video_pad|>"),
            ("vision_start", "<|vision_start|>"),
            ("vision_end", "<|vision_end|>"),
        )
    }
    rope = {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [2, 3, 3]}
    config = transformers.Qwen2VLConfig(
        text_config=q._text_config(tok, rope_parameters=rope),
        vision_config=dict(depth=2, embed_dim=32, hidden_size=64, mlp_ratio=2, num_heads=2, patch_size=14),
        **ids,
    )
    torch.manual_seed(_SEED)
    model = transformers.Qwen2VLForConditionalGeneration(config)
    image_processor = Qwen2VLImageProcessorPil(min_pixels=56 * 56, max_pixels=112 * 112, patch_size=14, merge_size=2)
    processor = q._processor_class(transformers.Qwen2VLProcessor)(
        image_processor=image_processor, tokenizer=tok, chat_template=THINK_TEMPLATE
    )
    return _save(model, tok, processor, dir)


@pytest.fixture(scope="module")
def thinking_dir(tmp_path_factory, tiny_family_dirs):
    tiny_family_dirs("qwen2_vl")  # registers the video-less Qwen processors with AutoProcessor
    return build_thinking_qwen2_vl(tmp_path_factory.mktemp("thinking_qwen2_vl"))


@pytest.fixture(scope="module")
def thinking(thinking_dir):
    return HFBackend(str(thinking_dir))


def reference(backend: HFBackend, query: Query, steps: list[int | str]) -> tuple[list[int], int]:
    """transformers' own greedy generate of the query's prompt alone (no batching, no prefix cache, no logits
    processor of vlmdesk's): ``steps`` are token counts to generate, or a token text appended by hand between them.
    Returns (the new token ids, the prompt's length)."""
    text = backend._render(query)
    enc = backend.processor(text=[text], images=[query.pil_images()] if query.images else None, return_tensors="pt")
    ids, width, new = enc["input_ids"], enc["input_ids"].shape[1], []
    for step in steps:
        if isinstance(step, str):
            token = torch.tensor([[backend.tokenizer.convert_tokens_to_ids(step)]])
        else:
            inputs = {**enc, "input_ids": ids, "attention_mask": torch.ones_like(ids)}
            if "mm_token_type_ids" in inputs:
                pad = ids.shape[1] - inputs["mm_token_type_ids"].shape[1]
                inputs["mm_token_type_ids"] = torch.nn.functional.pad(inputs["mm_token_type_ids"], (0, pad))
            with torch.inference_mode():
                out = backend.model.generate(**inputs, max_new_tokens=step, do_sample=False)
            token = out[:, ids.shape[1] :]
        ids = torch.cat([ids, token], dim=1)
        new += token[0].tolist()
    return new, width


def text_of(backend: HFBackend, ids: list[int]) -> str:
    return backend.tokenizer.decode(ids, skip_special_tokens=True).strip()


# ---- settings: read, bounded, named in the spec, describe() and the run's identity --------------------------------

ALL = "temperature=0.7&top_p=0.9&top_k=20&repetition_penalty=1.05&seed=7&min_pixels=3136&max_pixels=12544"


def test_every_setting_round_trips_into_spec_describe_and_identity(tiny_family_dirs):
    model = str(tiny_family_dirs("qwen2_vl"))
    backend = parse_hf_spec(f"{model}?{ALL}&dtype=float32")
    assert backend.spec == f"hf:{model}?dtype=float32&{ALL}"
    generation, processor = backend.describe()["generation"], backend.describe()["processor"]
    assert generation == {
        "do_sample": True,
        "temperature": 0.7,
        "top_p": 0.9,
        "top_k": 20,
        "repetition_penalty": 1.05,
        "seed": 7,
        "seed_from": "spec",
    }
    assert (processor["min_pixels"], processor["max_pixels"], processor["max_tiles"]) == (3136, 12544, None)
    assert processor["call"] == {"size": {"shortest_edge": 3136, "longest_edge": 12544}}
    again = parse_hf_spec(backend.spec.removeprefix("hf:"))
    assert again.spec == backend.spec and again.describe() == backend.describe()
    # Greedy by default; a sampled spec without a seed draws from the run's.
    assert parse_hf_spec(model).describe()["generation"]["do_sample"] is False
    assert parse_hf_spec(f"{model}?temperature=1", seed=42).describe()["generation"]["seed"] == 42


def test_two_specs_differing_in_one_setting_are_two_runs():
    bench = Benchmark(1, "b", "mcq", "tsv", "b.tsv", "0" * 64, 1, 0, 0, "", {})

    def key(spec: str) -> str:
        return config_key(bench, spec, RunSettings(), default_template("mcq"))

    base = "hf:/m?dtype=bfloat16"
    assert run_identity(base) == base  # a spec without the new options keeps the identity it always had
    assert run_identity("hf:/m?share_prefix=0&dtype=float16") == "hf:/m?share_prefix=0&dtype=float16"
    one = {
        "temperature": "0.7",
        "repetition_penalty": "1.05",
        "min_pixels": "3136",
        "max_pixels": "12544",
        "max_tiles": "6",
    }
    keys = {key(base)}
    for name, value in one.items():
        keys.add(key(f"{base}&{name}={value}"))
    sampled = f"{base}&temperature=0.7"
    for name, value in {"top_p": "0.9", "top_k": "20", "seed": "3"}.items():
        keys.add(key(f"{sampled}&{name}={value}"))
    assert len(keys) == 1 + len(one) + 3
    # One setting, two spellings (or orders): one run; temperature=0 is greedy, the default.
    assert key(f"{base}&temperature=0.70&top_p=.9") == key(f"{base}&top_p=0.9&temperature=0.7")
    assert key(f"{base}&temperature=0") == key(base)
    assert hf_identity("/m?max_pixels=12544&dtype=bfloat16") == "/m?dtype=bfloat16&max_pixels=12544"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ("temperature=2.5", r"temperature must be a number in 0\.\.2, got '2.5'"),
        ("temperature=nan", "temperature must be a number"),
        ("top_p=0&temperature=1", "top_p must be a number in"),
        ("top_k=1.5&temperature=1", "top_k must be a whole number in 1..1000000"),
        ("repetition_penalty=0", "repetition_penalty must be a number"),
        ("seed=-1&temperature=1", "seed must be a whole number"),
        ("max_pixels=0", "max_pixels must be a whole number in 1.."),
        ("max_tiles=2000", "max_tiles must be a whole number in 1..1024"),
        ("top_p=0.9", r"top_p applies only when sampling \(temperature > 0\)"),
        ("seed=3&temperature=0", "seed applies only when sampling"),
        ("min_pixels=20000&max_pixels=10000", "min_pixels 20000 is above max_pixels 10000"),
        ("seed=1&seed=2&temperature=1", "seed is given twice"),
    ],
)
def test_a_bad_setting_is_one_line_naming_it(options, message):
    from evaluator.backends import check_spec

    with pytest.raises(BackendError, match=message) as caught:
        check_spec(f"hf:/m?{options}")
    assert "\n" not in str(caught.value)


def test_a_processor_setting_the_processor_cannot_take_is_refused_when_loading(
    tiny_family_dirs, tiny_llava_dir, tiny_text_lm_dir
):
    cases = [
        (tiny_family_dirs("qwen2_vl"), "max_tiles=4", "max_tiles is InternVL's .* does not take it"),
        (tiny_family_dirs("internvl"), "max_pixels=12544", "max_pixels is the Qwen-VL family's .*GotOcr2"),
        (tiny_llava_dir, "min_pixels=3136", "min_pixels is the Qwen-VL family's .*CLIPImageProcessor"),
        (tiny_text_lm_dir, "max_tiles=2", "has no image processor"),
        (tiny_family_dirs("qwen2_vl"), "min_pixels=20000", r"pixel bounds would be 20000\.\.12544"),
    ]
    for model, options, message in cases:
        with pytest.raises(BackendError, match=message) as caught:
            parse_hf_spec(f"{model}?{options}")
        assert "\n" not in str(caught.value)


# ---- processor settings reach the processor --------------------------------------------------------------------


def merged_tokens(image: bytes, low: int, high: int) -> int:
    """Image tokens of a Qwen2-VL image under these pixel bounds, by transformers' own resize rule (14 px patches,
    2×2 merged)."""
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import smart_resize

    width, height = Image.open(__import__("io").BytesIO(image)).size
    h, w = smart_resize(height, width, factor=28, min_pixels=low, max_pixels=high)
    return (h // 28) * (w // 28)


def test_pixel_bounds_change_the_number_of_image_tokens(tiny_family_dirs):
    model = str(tiny_family_dirs("qwen2_vl"))
    small = image_bytes((10, 180, 40), (40, 40))
    queries = [Query(QUESTION, (SQUARE,)), Query(QUESTION, (small,))]
    prompts = {}
    for options in ("", "?max_pixels=3136", "?min_pixels=12544"):
        said = parse_hf_spec(model + options).generate(queries, 2)
        prompts[options] = [g.usage.prompt_tokens for g in said]
    default = (56 * 56, 112 * 112)  # the tiny processor's own bounds
    for i, image in enumerate((SQUARE, small)):
        for options, bounds in (("?max_pixels=3136", (56 * 56, 56 * 56)), ("?min_pixels=12544", (112 * 112,) * 2)):
            want = merged_tokens(image, *bounds) - merged_tokens(image, *default)
            assert prompts[options][i] - prompts[""][i] == want
    assert prompts["?max_pixels=3136"][0] < prompts[""][0] and prompts["?min_pixels=12544"][1] > prompts[""][1]


def test_the_tile_count_reaches_internvls_processor(tiny_family_dirs):
    model = str(tiny_family_dirs("internvl"))
    query = Query(QUESTION, (WIDE,))
    processor = HFBackend(model).processor
    counts = {}
    for tiles in (None, 1, 2):
        backend = parse_hf_spec(model + (f"?max_tiles={tiles}" if tiles else ""))
        [said] = backend.generate([query], 2)
        text = backend._render(query)
        kwargs = {"max_patches": tiles} if tiles else {}
        alone = processor(text=[text], images=[query.pil_images()], return_tensors="pt", **kwargs)
        assert said.usage.prompt_tokens == alone["input_ids"].shape[1]
        counts[tiles] = said.usage.prompt_tokens
    assert counts[1] < counts[2] <= counts[None]


# ---- the run's chat setup reaches the chat template -----------------------------------------------------------


def test_system_prompt_and_template_kwargs_reach_the_chat_template(thinking):
    plain = Query(QUESTION, (SQUARE,))
    chatty = Query(
        QUESTION, (SQUARE,), chat=Chat(system="Answer briefly.", template_kwargs='{"enable_thinking": false}')
    )
    text = thinking._render(chatty)
    assert text.startswith("<|im_start|>system\nAnswer briefly.<|im_end|>\n<|im_start|>user\n")
    assert text.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    assert thinking._render(plain).endswith("<|im_start|>assistant\n<think>\n")
    # ... and what the model reads: the rendered prompt's tokens, image tokens expanded.
    [a, b] = thinking.generate([plain, chatty], 1)
    system_tokens = len(thinking.tokenizer("<|im_start|>system\nAnswer briefly.<|im_end|>\n")["input_ids"])
    closing = len(thinking.tokenizer("\n</think>\n\n")["input_ids"])
    assert b.usage.prompt_tokens == a.usage.prompt_tokens + system_tokens + closing
    for bad, message in [('{"tokenize": true}', "may not set tokenize"), ("[1]", "must be a JSON object")]:
        with pytest.raises(BackendError, match=message):
            thinking.generate([Query(QUESTION, chat=Chat(template_kwargs=bad))], 1)


def test_a_text_lm_takes_the_system_prompt_as_a_string(tiny_text_lm_dir):
    backend = HFBackend(str(tiny_text_lm_dir))
    text = backend._render(Query("Is there a cat?", chat=Chat(system="Be brief.")))
    assert text.startswith("<s><|system|>\nBe brief.</s>\n<|user|>\nIs there a cat?</s>\n")


# ---- Generations: text with its tags, finish_reason, tokens ------------------------------------------------------


def test_generate_says_length_at_the_budget_and_counts_tokens(tiny_family_dirs):
    backend = HFBackend(str(tiny_family_dirs("qwen2_vl")))
    queries = [Query(QUESTION, (SQUARE,)), Query("Is there a cat in the image?", (WIDE,)), Query("How many?")]
    said = backend.generate(queries, 5)
    assert all(isinstance(g, Generation) for g in said)
    for query, got in zip(queries, said):
        new, width = reference(backend, query, [5])
        eos = next((i for i, t in enumerate(new) if t == backend.tokenizer.eos_token_id), None)
        assert got.text == text_of(backend, new[: eos if eos is not None else len(new)])
        assert got.finish_reason == ("length" if eos is None else "stop")
        assert got.usage.prompt_tokens == width
        assert got.usage.completion_tokens == (5 if eos is None else eos + 1)
        assert got.thought is None and got.usage.reasoning_tokens is None
    assert any(g.finish_reason == "length" for g in said)


def test_sampling_is_seeded_and_leaves_the_process_random_state_alone(tiny_family_dirs):
    model = str(tiny_family_dirs("qwen2_vl"))
    queries = [Query(QUESTION, (SQUARE,)), Query("How many?")]
    greedy = HFBackend(model).generate(queries, 8)
    state = torch.get_rng_state()
    first = parse_hf_spec(f"{model}?temperature=1.5&seed=5").generate(queries, 8)
    assert torch.equal(torch.get_rng_state(), state)
    assert parse_hf_spec(f"{model}?temperature=1.5&seed=5").generate(queries, 8) == first
    other = parse_hf_spec(f"{model}?temperature=1.5&seed=6").generate(queries, 8)
    assert [g.text for g in other] != [g.text for g in first]
    assert [g.text for g in first] != [g.text for g in greedy]


# ---- thinking output through the door, as a server's ----------------------------------------------------------


def test_special_thought_tags_are_kept_where_skip_special_tokens_drops_them(thinking):
    close = thinking.tokenizer.convert_tokens_to_ids("</think>")
    assert thinking.tokenizer.decode([close], skip_special_tokens=True) == ""  # what decoding alone would do
    query = Query(QUESTION, (SQUARE,), chat=Chat(thinking_budget=2))
    [said] = thinking.generate([query], 8)
    assert said.text.startswith("<think>\n") and "</think>" in said.text


def test_a_thinking_budget_closes_the_thought_and_the_door_splits_it(thinking_dir):
    door = load_backend(f"hf:{thinking_dir}")
    backend = door.backend
    assert door.takes_thinking_budget is True
    queries = [
        Query(QUESTION, (SQUARE,), ("A", "B"), Chat(thinking_budget=2)),
        Query("Is there a cat in the image?", (WIDE,), chat=Chat(thinking_budget=4)),
        Query("How many?", chat=Chat(thinking_budget=3)),
    ]
    said = door.generations(queries, 10, "auto")
    for query, got in zip(queries, said):
        budget = query.chat.thinking_budget
        new, width = reference(backend, query, [budget, "</think>", 10 - budget - 1])
        assert backend.tokenizer.eos_token_id not in new[:budget], "the thought ended itself: nothing to check"
        eos = next((i for i, t in enumerate(new) if t == backend.tokenizer.eos_token_id), len(new))
        assert got.thought == text_of(backend, new[:budget])
        assert got.text == text_of(backend, new[budget + 1 : eos])
        assert got.finish_reason == ("length" if eos == len(new) else "stop")
        assert got.usage.reasoning_tokens == budget + 1 and got.usage.prompt_tokens == width
        assert got.thought and not cut_in_thought(got)


def test_a_thought_cut_by_max_new_tokens_is_all_thought(thinking_dir):
    door = load_backend(f"hf:{thinking_dir}")
    query = Query(QUESTION, (SQUARE,))
    new, _ = reference(door.backend, query, [4])
    assert door.backend.tokenizer.convert_tokens_to_ids("</think>") not in new
    [got] = door.generations([query], 4, "auto")
    assert got.text == "" and got.thought == text_of(door.backend, new)
    assert got.finish_reason == "length" and cut_in_thought(got)
    assert got.usage.reasoning_tokens == got.usage.completion_tokens == 4
    # The rule "off" keeps the whole turn as the answer, tag included.
    [kept] = door.generations([query], 4, "off")
    assert kept.text.startswith("<think>") and kept.thought is None


def test_thinking_switched_off_by_the_template_kwargs_leaves_no_thought(thinking_dir):
    door = load_backend(f"hf:{thinking_dir}")
    query = Query(QUESTION, (SQUARE,), chat=Chat(template_kwargs='{"enable_thinking": false}'))
    new, _ = reference(door.backend, query, [6])
    [got] = door.generations([query], 6, "auto")
    assert got.thought is None and got.text == text_of(door.backend, new)
    assert got.usage.reasoning_tokens is None


def test_a_budget_is_refused_where_the_tokenizer_has_no_closing_tag(tiny_family_dirs):
    backend = HFBackend(str(tiny_family_dirs("qwen2_vl")))
    assert backend.takes_thinking_budget is False
    with pytest.raises(BackendError, match="no single </think> token"):
        backend.generate([Query("How many?", chat=Chat(thinking_budget=3))], 8)
