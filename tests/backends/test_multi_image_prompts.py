"""Where a query's images go (issue 37): the one rule (evaluator/backends/base.py image_parts), the openai: request
body built from it, and a tiny hf: LLaVA given the images in that order — its chat template's image tokens and the
pixels its processor receives, and the scores of an interleaved prompt equal to the processor's own path.

VLMEvalKit read at e8e78f05f3080fe28154f2130321f17951c3be94: MMMUDataset.split_MMMU (vlmeval/dataset/image_mcq.py)
puts image N where `<image N>` stands and drops the placeholder's text; Qwen2VLPromptMixin._build_mmmu_prompt
(vlmeval/vlm/qwen2_vl/prompt.py), LLaVA.build_prompt (vlmeval/vlm/llava/llava.py) and InternVLChat through
reorganize_prompt (vlmeval/vlm/internvl/utils.py) put every image first and leave the placeholders in the text.
"""

from __future__ import annotations

import base64
import io
from random import Random

import pytest
from PIL import Image

from evaluator.backends.base import (
    MAX_QUERY_IMAGES,
    BackendError,
    Query,
    image_parts,
    shift_placeholders,
)
from evaluator.engine.prompt_presets import place_images
from evaluator.engine.variants import TextCorruption, corrupt_around_images, corrupt_text


@pytest.mark.parametrize(
    ("prompt", "images", "parts"),
    [
        ("What is it?", 0, ["What is it?"]),  # text-only: nothing changes
        ("What is it?", 1, [0, "What is it?"]),  # one image, no placeholder: image first (as always)
        ("Which?", 3, [0, 1, 2, "Which?"]),  # no placeholder: every image first, in order
        ("", 2, [0, 1, ""]),  # the text part kept even empty, as before
        ("<image 1> and <image 2>?", 2, [0, " and ", 1, "?"]),  # placeholder text replaced, empty texts left out
        ("<image 2> then <image 1>", 2, [1, " then ", 0]),  # placed where named, not in the item's order
        ("See <image 2>.", 3, [0, 2, "See ", 1, "."]),  # images nobody names go first, in order
        ("<image 1><image 1> twice", 1, [0, "<image 1> twice"]),  # an image placed once; a second mention is text
        ("Is <image 4> here?", 2, [0, 1, "Is <image 4> here?"]),  # naming no image: text
        ("<image 0> <image 01> <image1>", 1, [0, "<image 0> <image 01> <image1>"]),  # not placeholders
        ("A. <image 2>\nB. <image 3>", 3, [0, "A. ", 1, "\nB. ", 2]),  # MMMU's image options
    ],
)
def test_the_placement_rule(prompt, images, parts):
    assert image_parts(prompt, images) == parts
    assert Query(prompt, tuple(b"x" for _ in range(images))).parts() == parts


def test_more_images_than_a_query_sends_is_refused_in_one_line():
    assert len(image_parts("x", MAX_QUERY_IMAGES)) == MAX_QUERY_IMAGES + 1
    with pytest.raises(BackendError, match=f"^a query of {MAX_QUERY_IMAGES + 1} images: at most {MAX_QUERY_IMAGES}"):
        image_parts("x", MAX_QUERY_IMAGES + 1)


def test_the_query_cap_holds_every_item_the_importers_keep():
    from evaluator.formats.importers import common

    assert getattr(common, "MAX_ITEM_IMAGES", MAX_QUERY_IMAGES) <= MAX_QUERY_IMAGES


def test_shifting_placeholders_for_examples_before_the_item():
    assert shift_placeholders("<image 1> or <image 2>? <image x>", 3) == "<image 4> or <image 5>? <image x>"
    assert shift_placeholders("<image 1>", 0) == "<image 1>"


def test_text_corruptions_leave_placeholders_whole():
    text = "Compare <image 2> with <image 1> carefully, looking at either picture and its colours"
    steps = [TextCorruption("misspell", 1.0), TextCorruption("extra_spaces")]
    out = corrupt_around_images(text, steps, Random(7))
    assert "<image 2>" in out and "<image 1>" in out and out != text
    assert [p for p in image_parts(out, 2) if isinstance(p, int)] == [1, 0]  # both still placed, in place
    # Without placeholders, exactly the corruption of the whole text (a run's old passes stay as they were).
    plain = "looking at either picture and its colours"
    rng_a, rng_b = Random(3), Random(3)
    whole = plain
    for step in steps:
        whole = corrupt_text(whole, step, rng_a)
    assert corrupt_around_images(plain, steps, rng_b) == whole


@pytest.mark.parametrize(
    ("preset", "prompt", "images", "expected"),
    [
        (None, "Q <image 1>", 1, "Q <image 1>"),  # vlmdesk's templates: the rule as it is
        ("vlmevalkit:default", "Q <image 2>", 2, "Q <image 2>"),  # the dataset's prompt: split_MMMU
        ("vlmevalkit:qwen2_5_vl", "Q <image 2>", 2, "Q <image 2>"),  # use_custom_prompt=False: the dataset's
        ("vlmevalkit:qwen2_vl", "Q <image 2>", 2, "<image 1><image 2>Q <image 2>"),
        ("vlmevalkit:llava_next", "Q <image 1>", 1, "<image 1>Q <image 1>"),
        ("vlmevalkit:qwen2_vl", "Q", 1, "Q"),  # one image, no placeholder: what such runs always asked
        ("vlmevalkit:qwen2_vl", "Q", 3, "Q"),  # every image first already
        ("vlmevalkit:internvl", "Q", 1, "Q"),
        ("vlmevalkit:internvl", "Q", 2, "Image-1: <image 1>\nImage-2: <image 2>\nQ"),
        ("vlmevalkit:llava", "Q <image 1>", 0, "Q <image 1>"),  # text-only
    ],
)
def test_vlmevalkit_classes_put_images_first_and_keep_the_placeholders(preset, prompt, images, expected):
    placed = place_images(preset, prompt, images)
    assert placed == expected
    if preset in ("vlmevalkit:qwen2_vl", "vlmevalkit:llava_next") and images:
        # Every image first, in order; the question's placeholders are the second mention: text.
        assert image_parts(placed, images) == [*range(images), prompt]


def _png(rgb, size=(40, 40)) -> bytes:
    img = Image.new("RGB", size, rgb)
    for x in range(0, size[0], 3):
        img.putpixel((x, x % size[1]), (255 - rgb[0], 255 - rgb[1], 255 - rgb[2]))
    buf = io.BytesIO()
    img.save(buf, "PNG")
    return buf.getvalue()


RED, GREEN, BLUE = _png((220, 20, 20)), _png((20, 200, 20)), _png((20, 20, 220))
INTERLEAVED = Query("Is <image 2> brighter than <image 1>? Answer yes or no.", (RED, GREEN, BLUE))


def test_openai_request_body_interleaves_image_and_text_parts():
    from evaluator.backends.openai_backend import OpenAIBackend, image_data_url

    backend = OpenAIBackend("m", "http://127.0.0.1:9/v1", retries=0)
    content = backend._request_body(INTERLEAVED, 8)["messages"][-1]["content"]
    assert content == [
        {"type": "image_url", "image_url": {"url": image_data_url(BLUE)}},
        {"type": "text", "text": "Is "},
        {"type": "image_url", "image_url": {"url": image_data_url(GREEN)}},
        {"type": "text", "text": " brighter than "},
        {"type": "image_url", "image_url": {"url": image_data_url(RED)}},
        {"type": "text", "text": "? Answer yes or no."},
    ]
    assert base64.b64decode(content[2]["image_url"]["url"].split(",", 1)[1]) == GREEN
    assert backend._request_body(Query("No image <image 1>"), 8)["messages"][-1]["content"] == "No image <image 1>"


@pytest.fixture(scope="module")
def llava(tiny_llava_dir):
    from evaluator.backends.hf import HFBackend

    return HFBackend(str(tiny_llava_dir), share_prefix=False)


def test_hf_chat_template_gets_the_images_where_the_prompt_places_them(llava):
    text = llava._render(INTERLEAVED)
    # The tiny LLaVA's template writes "<image>\n" per image part (tests/tiny_models.py): blue (unnamed) first,
    # then green at <image 2>, red at <image 1>.
    assert text == "<s>USER: <image>\nIs <image>\n brighter than <image>\n? Answer yes or no. ASSISTANT:"
    enc = llava._process([text], [INTERLEAVED])
    image_token = llava.tokenizer.convert_tokens_to_ids("<image>")
    assert int((enc["input_ids"][0] == image_token).sum()) == 3 * 16  # 16 tokens an image (64 px, 16 px patches)
    # The processor got the images in that order: blue, green, red.
    alone = [
        llava.processor.image_processor(Image.open(io.BytesIO(b)).convert("RGB"), return_tensors="pt")
        for b in (
            BLUE,
            GREEN,
            RED,
        )
    ]
    for row, single in zip(enc["pixel_values"], alone):
        assert row.shape == single["pixel_values"][0].shape
        assert (row - single["pixel_values"][0]).abs().max().item() < 1e-6
    plain = Query("What colour?", (RED,))
    assert llava._render(plain) == "<s>USER: <image>\nWhat colour? ASSISTANT:"  # one image: as it always was


def test_hf_scores_an_interleaved_prompt_as_the_processors_own_path_does(llava):
    import torch

    query = INTERLEAVED
    images = {0: RED, 1: GREEN, 2: BLUE}
    content = [
        {"type": "text", "text": p} if isinstance(p, str) else {"type": "image", "image": _pil(images[p])}
        for p in query.parts()
    ]
    inputs = llava.processor.apply_chat_template(
        [{"role": "user", "content": content}],
        add_generation_prompt=True,
        tokenize=True,
        return_dict=True,
        return_tensors="pt",
    )
    cand = llava.tokenizer(" yes", add_special_tokens=False)["input_ids"]
    inputs["input_ids"] = torch.cat([inputs["input_ids"], torch.tensor([cand])], dim=1)
    inputs["attention_mask"] = torch.ones_like(inputs["input_ids"])
    with torch.inference_mode():
        logprobs = llava.model(**inputs).logits[0].float().log_softmax(-1)
    end = inputs["input_ids"].shape[1]
    reference = sum(logprobs[p, t].item() for p, t in zip(range(end - len(cand) - 1, end - 1), cand))
    (scored,) = llava.score([query], [[" yes"]])
    assert scored[0] == pytest.approx(reference, abs=1e-4)
    # The same text with green and red swapped scores otherwise: the order of the images reached the model.
    (swapped,) = llava.score([Query(query.prompt, (GREEN, RED, BLUE))], [[" yes"]])
    assert swapped[0] != pytest.approx(reference, abs=1e-4)
    assert llava.generate([query], max_new_tokens=4)[0].usage.prompt_tokens == inputs["input_ids"].shape[1] - len(cand)


def _pil(data: bytes):
    return Image.open(io.BytesIO(data)).convert("RGB")
