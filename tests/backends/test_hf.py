"""HFBackend against tiny random VLMs loaded from disk through AutoProcessor / AutoModelForImageTextToText."""

import io

import pytest
import torch
from PIL import Image

from evaluator.backends.base import BackendError, Query
from evaluator.backends.hf import HFBackend, parse_hf_spec


def image_bytes(color, size, fmt="PNG") -> bytes:
    """A small image with a gradient, so the vision tower sees more than one flat colour."""
    img = Image.new("RGB", size, color)
    for x in range(0, size[0], 4):
        img.putpixel((x, x % size[1]), (255 - color[0], 255 - color[1], 255 - color[2]))
    buf = io.BytesIO()
    img.save(buf, fmt)
    return buf.getvalue()


# Different prompt lengths, image sizes/aspect ratios and formats, and one text-only query.
QUERIES = [
    Query("What is shown in the image?", (image_bytes((200, 30, 30), (80, 50)),)),
    Query(
        "A. a red car B. a blue boat C. a green tree D. a dog on the grass. Answer with the letter of the option.",
        (image_bytes((20, 90, 200), (40, 96), "JPEG"),),
    ),
    Query("Is there a cat in the image? Please answer yes or no.", (image_bytes((10, 180, 40), (64, 64)),)),
    Query("How many?", (image_bytes((250, 250, 0), (120, 33), "JPEG"),)),
    Query("Question: how many people are standing near the table?"),  # text-only
]
# Candidates of different token lengths, a different number per query, and an empty one (log-prob 0).
CANDIDATES = [["A", "B. a blue boat", "yes"], ["C"], ["no", "Yes, there is a person.", ""], ["D", "A"], ["4", "two"]]


@pytest.fixture(scope="module", params=["llava", "idefics3"])
def vlm(request):
    return HFBackend(str(request.getfixturevalue(f"tiny_{request.param}_dir")))


@pytest.fixture(scope="module")
def text_lm(tiny_text_lm_dir):
    return HFBackend(str(tiny_text_lm_dir), max_batch_size=2)


def reference_score(backend: HFBackend, query: Query, candidate: str) -> float:
    """Log-likelihood computed independently: one unpadded sequence, via the processor's own chat-template path."""
    if backend.is_vlm:
        content = [{"type": "image", "image": img} for img in query.pil_images()]
        conversation = [{"role": "user", "content": content + [{"type": "text", "text": query.prompt}]}]
    else:
        conversation = [{"role": "user", "content": query.prompt}]
    inputs = backend.processor.apply_chat_template(
        conversation, add_generation_prompt=True, tokenize=True, return_dict=True, return_tensors="pt"
    )
    cand = torch.tensor([backend.tokenizer(candidate, add_special_tokens=False)["input_ids"]], dtype=torch.long)
    inputs["input_ids"] = torch.cat([inputs["input_ids"], cand], dim=1)
    inputs["attention_mask"] = torch.ones_like(inputs["input_ids"])
    with torch.inference_mode():
        logprobs = backend.model(**inputs).logits[0].float().log_softmax(-1)
    n = cand.shape[1]
    positions = range(inputs["input_ids"].shape[1] - n - 1, inputs["input_ids"].shape[1] - 1)
    return sum(logprobs[p, t].item() for p, t in zip(positions, cand[0].tolist()))


def test_vlm_loads_through_image_text_to_text(vlm):
    info = vlm.describe()
    assert info["kind"] == "image-text-to-text"
    assert info["model_class"] in {"LlavaForConditionalGeneration", "Idefics3ForConditionalGeneration"}
    assert info["dtype"] == "float32" and info["device"] == "cpu" and info["trust_remote_code"] is False
    assert {"transformers", "torch"} <= info.keys()


def test_batched_generation_equals_unbatched(vlm):
    one_by_one = [vlm.generate([q], max_new_tokens=8)[0] for q in QUERIES]
    assert vlm.generate(QUERIES, max_new_tokens=8) == one_by_one
    assert any(one_by_one), "random model produced only empty answers; the comparison would prove nothing"
    vlm.max_batch_size = 3  # several batches: results must still come back in the callers' order
    try:
        assert vlm.generate(QUERIES, max_new_tokens=8) == one_by_one
    finally:
        vlm.max_batch_size = 8


def test_text_only_query_on_vlm(vlm):
    [answer] = vlm.generate([QUERIES[-1]], max_new_tokens=5)
    assert isinstance(answer.text, str) and answer.finish_reason in ("length", "stop")


def test_score_matches_independent_log_likelihood(vlm):
    scores = vlm.score(QUERIES, CANDIDATES)
    assert [len(s) for s in scores] == [len(c) for c in CANDIDATES]
    for query, cands, got in zip(QUERIES, CANDIDATES, scores):
        expected = [reference_score(vlm, query, c) for c in cands]
        assert got == pytest.approx(expected, abs=1e-4)
    assert scores[2][2] == 0.0  # the empty candidate
    assert len({round(s, 3) for s in scores[0]}) == 3  # different candidates really get different scores


def test_text_lm_loads_through_causal_lm_fallback(text_lm):
    assert text_lm.describe()["kind"] == "causal-lm"
    assert text_lm.describe()["model_class"] == "LlamaForCausalLM"
    text_queries = [Query("Is there a cat?"), QUERIES[-1], Query("A. a red car B. a blue boat. Answer:")]
    one_by_one = [text_lm.generate([q], max_new_tokens=6)[0] for q in text_queries]
    assert text_lm.generate(text_queries, max_new_tokens=6) == one_by_one
    scores = text_lm.score(text_queries, [["A", "B. a blue boat"]] * 3)
    for query, got in zip(text_queries, scores):
        assert got == pytest.approx([reference_score(text_lm, query, c) for c in ["A", "B. a blue boat"]], abs=1e-4)


def test_text_lm_refuses_images(text_lm):
    with pytest.raises(BackendError, match="text-only"):
        text_lm.generate([QUERIES[0]], max_new_tokens=2)


def test_bad_path_is_a_readable_backend_error(tmp_path):
    with pytest.raises(BackendError, match="model directory not found: .*missing"):
        HFBackend(str(tmp_path / "missing"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(BackendError, match="cannot load model .*empty"):
        HFBackend(str(tmp_path / "empty"))


def test_parse_hf_spec(tiny_text_lm_dir):
    backend = parse_hf_spec(f"{tiny_text_lm_dir}?dtype=float32&device=cpu&batch_size=3&trust_remote_code=0")
    assert (backend.max_batch_size, backend.dtype, backend.device) == (3, "float32", "cpu")
    assert backend.spec == f"hf:{tiny_text_lm_dir}?dtype=float32&device=cpu&batch_size=3"
    assert parse_hf_spec(backend.spec.removeprefix("hf:")).describe() == backend.describe()
    for bad, message in [
        (f"{tiny_text_lm_dir}?colour=red", "unknown option 'colour'"),
        (f"{tiny_text_lm_dir}?batch_size=0", "batch_size"),
        (f"{tiny_text_lm_dir}?dtype=int3", "unknown dtype"),
        (f"{tiny_text_lm_dir}?trust_remote_code=maybe", "trust_remote_code"),
        ("?dtype=float32", "needs a model"),
    ]:
        with pytest.raises(BackendError, match=message):
            parse_hf_spec(bad)
