"""GPU throughput of the hf: backend with the real engine: LLaVA-1.5-7B's exact architecture, random weights.

Builds LLaVA-1.5-7B's configuration (CLIP ViT-L/14 at 336 px → 576 image tokens, Llama-2-7B text model, 32,064-token
vocabulary) with random weights directly on the GPU in bfloat16 (nothing downloaded, nothing written to disk but a
temporary workspace of synthetic items), a tokenizer trained in memory, and the real processor. It runs the real
HFBackend + Engine (CircularEval, 4 options) over synthetic MMBench-style items. A wrapper turns the model's raw
output into right or wrong letters (60 % of the items are "known" and answered right every pass, the rest get a
seeded random letter: about 70 % right at pass 0), so early termination behaves as with a real model; the model's
generation config makes every token an end of sequence, so rows stop after one token as a real "A</s>" nearly does.

Prints: prefill TFLOP/s at batch 1 / 8 / 32; ms per pass for batch 8 vs automatic; prefix sharing on vs off;
overlap on vs off; likelihood mode with one row per query vs one row per option; and the projected wall time of
MMBench-dev EN (1,164 questions) from the best setting's time per item.

    python bench/gpu_bench.py                  # CUDA, 7B, 256 items: a few minutes on one H200
    python bench/gpu_bench.py --scale tiny     # CPU, a tiny LLaVA, 24 items: under a minute on an idle machine
    python bench/gpu_bench.py --family all     # CUDA: every verified family at its 7B-class config, sharing on/off
    python bench/gpu_bench.py --family all --scale tiny   # CPU: the test suite's tiny model of every family
    python bench/gpu_bench.py --family all --layers 1 --items 2 --device cpu   # CPU check of the 7B-class configs

`--family` builds each family from the test suite's tiny model (tests/tiny_families.py: the family's real model,
processor and chat template classes), then, at scale 7b, widens its config to the public 7B-class checkpoint's
dimensions (FAMILY_7B, merged into the tiny model's saved config and processor files before they load; random
weights built on the device, nothing downloaded) and runs CircularEval with prefix sharing on and off. A family whose
build or run fails is reported and the others go on. One row a family: parameters, prompt tokens of the first item
(its image tokens included), whether sharing is on for the family, seconds with sharing on and off and their ratio,
ms per pass with sharing, and the build time. With --layers on a CPU each tower keeps N layers, the weights are zeros
(drawing billions of random numbers takes minutes there) and each family makes one generate call on the first item
instead of the CircularEval runs: a check that the real widths, head counts and image-token counts fit together.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import inspect
import json
import os
import platform
import random
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from db.errors import MissingExtra  # noqa: E402
from evaluator.backends.hf import require_hf  # noqa: E402

try:  # before anything loads a model: the base install has no torch (one line, exit 2, as `vlmdesk` says it)
    require_hf("bench/gpu_bench.py")
except MissingExtra as exc:
    print(f"error: {exc}", file=sys.stderr)
    sys.exit(2)

from db import catalog, open_workspace  # noqa: E402
from evaluator.analysis.report import run_report  # noqa: E402
from evaluator.backends.hf import HFBackend  # noqa: E402
from evaluator.engine.prompts import default_template  # noqa: E402
from evaluator.engine.runner import Engine, RunSettings, new_run  # noqa: E402
from evaluator.formats.importers.importer import import_benchmark  # noqa: E402

MMBENCH_DEV_EN = 1164
# llava-hf/llava-1.5-7b-hf's config.json: CLIP ViT-L/14-336 (feature layer -2), 2-layer GELU projector, Llama-2-7B.
SCALES: dict[str, dict[str, Any]] = {
    "7b": {
        "vision": dict(
            hidden_size=1024,
            intermediate_size=4096,
            num_hidden_layers=24,
            num_attention_heads=16,
            image_size=336,
            patch_size=14,
            projection_dim=768,
            hidden_act="quick_gelu",
            layer_norm_eps=1e-5,
        ),
        "text": dict(
            vocab_size=32064,
            hidden_size=4096,
            intermediate_size=11008,
            num_hidden_layers=32,
            num_attention_heads=32,
            num_key_value_heads=32,
            max_position_embeddings=4096,
            rms_norm_eps=1e-5,
        ),
        "llava": dict(vision_feature_layer=-2, image_seq_length=576, projector_hidden_act="gelu"),
        "items": 256,
        "device": "cuda",
        "dtype": "bfloat16",
    },
    "tiny": {
        "vision": dict(
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=2,
            image_size=64,
            patch_size=16,
        ),
        # Large enough that prefill, not Python overhead, is most of a pass (as on a GPU with 7B), so sharing and
        # overlap show on a CPU; small enough for the whole bench to take about a minute on 2 cores.
        "text": dict(
            vocab_size=2048,
            hidden_size=256,
            intermediate_size=768,
            num_hidden_layers=3,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=2048,
        ),
        "llava": dict(vision_feature_layer=-1, image_seq_length=16),
        "items": 24,
        "device": "cpu",
        "dtype": "float32",
    },
}
# LLaVA-1.5's conversation format.
TEMPLATE = (
    "{% for m in messages %}{% if m['role'] == 'user' %}USER: {% else %}ASSISTANT: {% endif %}"
    "{% for p in m['content'] %}{% if p['type'] == 'image' %}<image>\n{% else %}{{ p['text'] }}{% endif %}{% endfor %}"
    " {% endfor %}{% if add_generation_prompt %}ASSISTANT:{% endif %}"
)
WORDS = (
    "red blue green yellow car boat tree dog cat bird person table chair window street river mountain sky "
    "cloud house road light shadow left right above below near far large small two three many none kitchen "
    "market station bridge field forest beach snow rain morning evening people animal vehicle building"
).split()


def build_model(scale: str):
    """The model (random weights, on its device) and its processor; no file is written."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import (
        CLIPVisionConfig,
        LlamaConfig,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
        PreTrainedTokenizerFast,
    )
    from transformers.models.clip.image_processing_pil_clip import CLIPImageProcessorPil

    cfg = SCALES[scale]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    specials = ["<s>", "</s>", "<unk>", "<pad>", "<image>"]
    trainer = trainers.BpeTrainer(
        vocab_size=min(2000, cfg["text"]["vocab_size"]),
        special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    rng = random.Random(0)
    tok.train_from_iterator(
        [" ".join(rng.choices(WORDS, k=40)) + " Question: Options: Hint: A. B. C. D." for _ in range(400)], trainer
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        padding_side="left",
        bos_token="<s>",
        eos_token="</s>",
        unk_token="<unk>",
        pad_token="<pad>",
        extra_special_tokens=["<image>"],
        chat_template=TEMPLATE,
    )
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in specials}
    config = LlavaConfig(
        vision_config=CLIPVisionConfig(**cfg["vision"]),
        text_config=LlamaConfig(
            **cfg["text"], bos_token_id=ids["<s>"], eos_token_id=ids["</s>"], pad_token_id=ids["<pad>"]
        ),
        image_token_index=ids["<image>"],
        vision_feature_select_strategy="default",
        pad_token_id=ids["<pad>"],
        **cfg["llava"],
    )
    dtype = getattr(torch, cfg["dtype"])
    device = cfg["device"]
    torch.manual_seed(0)
    with torch.device(device):  # random weights created on the GPU, in bfloat16 from the start
        model = LlavaForConditionalGeneration._from_config(config, dtype=dtype)
    model.eval()
    # Every token ends a row: a random model would otherwise talk for max_new_tokens, a real one says "A</s>".
    model.generation_config.eos_token_id = list(range(config.text_config.vocab_size))
    model.generation_config.pad_token_id = ids["<pad>"]
    size = cfg["vision"]["image_size"]
    processor = LlavaProcessor(
        image_processor=CLIPImageProcessorPil(size={"shortest_edge": size}, crop_size={"height": size, "width": size}),
        tokenizer=tokenizer,
        patch_size=cfg["vision"]["patch_size"],
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,
        chat_template=TEMPLATE,
    )
    return model, processor


def write_items(folder: Path, n: int) -> Path:
    """n MMBench-style items (hint on half, 4 options, one 640×480 JPEG each) as generic JSONL."""
    import numpy as np
    from PIL import Image

    rng = random.Random(1)
    lines = []
    for i in range(n):
        pixels = np.random.default_rng(i).integers(0, 255, (48, 64, 3), dtype=np.uint8)
        image = Image.fromarray(pixels).resize((640, 480), Image.BILINEAR)
        image.save(folder / f"{i}.jpg", quality=90)
        options = [" ".join(rng.choices(WORDS, k=rng.randint(2, 6))) + f" {i}-{j}" for j in range(4)]
        item = {
            "index": i,
            "question": f"Item {i}: " + " ".join(rng.choices(WORDS, k=rng.randint(8, 30))) + "?",
            "hint": " ".join(rng.choices(WORDS, k=rng.randint(20, 60))) if i % 2 else None,
            "options": options,
            "answer": "ABCD"[rng.randrange(4)],
            "image": f"{i}.jpg",
        }
        lines.append(json.dumps({k: v for k, v in item.items() if v is not None}))
    path = folder / "synthetic.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


class Answerer:
    """The real backend does all the work; its output is then replaced by a right or wrong letter."""

    def __init__(self, inner: HFBackend, items: list[catalog.Item]):
        self.inner, self.spec = inner, inner.spec
        rng = random.Random(2)
        # question → (the right option's text, known)
        self.truth = {it.question: (it.options["ABCD".index(it.answer)], rng.random() < 0.6) for it in items}
        for name in ("chunk_items", "call_size", "describe"):
            if hasattr(inner, name):
                setattr(self, name, getattr(inner, name))

    def _letter(self, query) -> str:
        question = re.search(r"Question: (.*)\nOptions:", query.prompt).group(1)
        right_text, known = self.truth[question]
        shown = dict(re.findall(r"^([A-D])\. (.*)$", query.prompt, re.M))
        right = next(letter for letter, text in shown.items() if text == right_text)
        if known:
            return right
        return "ABCD"[int(hashlib.sha256(query.prompt.encode()).hexdigest(), 16) % 4]

    def generate(self, queries, max_new_tokens):
        self.inner.generate(queries, max_new_tokens)
        return [self._letter(q) for q in queries]

    def score(self, queries, candidates, **kw):
        scores = self.inner.score(queries, candidates, **kw)
        out = []
        for q, s in zip(queries, scores):
            s = [0.0] * len(s)
            s["ABCD".index(self._letter(q))] = 1.0
            out.append(s)
        return out


def prefill_tflops(backend: HFBackend, query, batches=(1, 8, 32)) -> list[tuple[int, int, float, float]]:
    """(batch, tokens per row, seconds, TFLOP/s) of one forward over the whole prompt (images included)."""
    import torch

    model = backend.model
    inner = model.model
    vision = sum(p.numel() for p in inner.vision_tower.parameters()) + sum(
        p.numel() for p in inner.multi_modal_projector.parameters()
    )
    text = sum(p.numel() for p in inner.language_model.parameters()) - inner.language_model.embed_tokens.weight.numel()
    patches = (backend.processor.image_processor.crop_size["height"] // backend.processor.patch_size) ** 2 + 1
    rows = []
    for b in batches:
        enc = backend._to_device(backend._process([backend._render(query)] * b, [query] * b))
        tokens = enc["input_ids"].shape[1]
        flops = 2 * b * (text * tokens + vision * patches)
        with torch.inference_mode():
            model(**enc, logits_to_keep=1)  # warm-up
            sync(model)
            t0 = time.perf_counter()
            for _ in range(3):
                model(**enc, logits_to_keep=1)
            sync(model)
        seconds = (time.perf_counter() - t0) / 3
        rows.append((b, tokens, seconds, flops / seconds / 1e12))
    return rows


def sync(model) -> None:
    import torch

    if model.device.type == "cuda":
        torch.cuda.synchronize()


def timed_run(ws, bench, backend: HFBackend, items, *, likelihood: bool, limit: int | None = None) -> dict[str, Any]:
    backend.clear_cache()
    answerer = Answerer(backend, items)
    settings = RunSettings(max_new_tokens=8, likelihood=likelihood, limit=limit)
    # What the engine hands one call (the contract's call_size; an engine without it still gets it this way).
    call = backend.call_size(backend.max_batch_size)
    run = new_run(
        ws,
        bench,
        f"{backend.spec}#{time.monotonic_ns()}",
        settings,
        default_template("mcq"),
        batch_size=call,
        backend_info={},
    )
    engine = Engine(ws, run, answerer, batch_size=call)
    sync(backend.model)
    t0 = time.perf_counter()
    engine.execute()
    sync(backend.model)
    seconds = time.perf_counter() - t0
    report = run_report(ws, run.id)
    return {
        "seconds": seconds,
        "passes": engine.calls,
        "ms_per_pass": 1000 * seconds / max(engine.calls, 1),
        "s_per_item": seconds / (limit or len(items)),
        "vanilla": report.mcq.overall.vanilla,
        "circular": report.mcq.overall.circular,
        "batch": backend.max_batch_size,
        "stats": dict(backend.stats),
    }


# The public checkpoint each family's 7B-class config comes from, and its dimensions (config.json), merged into the
# tiny model's saved files before they are loaded: top-level keys, text_config, vision_config, and the image-processor
# and processor settings (the image size and tiling decide the image-token count, most of a prefix). Token ids stay the
# tiny tokenizer's (only vocab_size grows), so the tiny chat template and special tokens still hold. Families missing
# here run at their tiny size. "From memory" marks a value no stored source confirmed; it changes no width that the
# CPU check (--layers 1) would not catch, or (rope scaling, context length) none that changes the time of a prefill.
_ROPE = {"rope_type": "default"}
_CLIP_L14_336 = dict(  # openai/clip-vit-large-patch14-336, as LLaVA-1.5 and LLaVA-NeXT use it
    hidden_size=1024,
    intermediate_size=4096,
    num_hidden_layers=24,
    num_attention_heads=16,
    image_size=336,
    patch_size=14,
    hidden_act="quick_gelu",
    layer_norm_eps=1e-5,
)
_SIGLIP_SO400M = dict(  # google/siglip-so400m-patch14-384's tower (27 layers), as the SigLIP families use it
    hidden_size=1152, intermediate_size=4304, num_hidden_layers=27, num_attention_heads=16, patch_size=14
)
_QWEN2_7B = dict(  # Qwen2-7B / Qwen2.5-7B: 28 layers, 3584 wide, 28 query heads, 4 KV heads (head_dim 128)
    hidden_size=3584,
    intermediate_size=18944,
    num_hidden_layers=28,
    num_attention_heads=28,
    num_key_value_heads=4,
    rms_norm_eps=1e-6,
)
_NEXT_GRID = [[336, 672], [672, 336], [672, 672], [1008, 336], [336, 1008]]
_ONEVISION_GRID = [[h, w] for h in range(384, 2305, 384) for w in range(384, 2305, 384)]  # 36 any-res layouts
_QWEN_PIXELS = {"shortest_edge": 56 * 56, "longest_edge": 28 * 28 * 16384}  # Qwen2(.5)-VL: 3,136 … 12,845,056 px
FAMILY_7B: dict[str, dict[str, Any]] = {
    # The bench's own LLaVA-1.5-7B (SCALES["7b"] above): 576 image tokens.
    "llava": {
        "checkpoint": "llava-hf/llava-1.5-7b-hf",
        "text_config": dict(SCALES["7b"]["text"], vocab_size=32064, head_dim=128),
        "vision_config": {k: v for k, v in SCALES["7b"]["vision"].items() if k != "projection_dim"},
        "top": dict(SCALES["7b"]["llava"]),
        "image_processor": {"size": {"shortest_edge": 336}, "crop_size": {"height": 336, "width": 336}},
        "processor": {"patch_size": 14},
    },
    # transformers' convert_llava_next_weights_to_hf.py: Mistral-7B-Instruct-v0.2 + CLIP ViT-L/14-336, vocabulary
    # 32,000 + 2 padded to 32,064, the 5 any-res layouts; LlavaNextConfig's defaults are this checkpoint's (feature
    # layer -2, 576 tokens a tile). Mistral-7B-v0.2: 32 layers × 4096, 8 KV heads, rope θ 1e6, no sliding window.
    # A 640×480 image: the base tile plus the 672×672 layout's 4 tiles, unpadded, one newline a row.
    "llava_next": {
        "checkpoint": "llava-hf/llava-v1.6-mistral-7b-hf",
        "text_config": dict(
            vocab_size=32064,
            hidden_size=4096,
            intermediate_size=14336,
            num_hidden_layers=32,
            num_attention_heads=32,
            num_key_value_heads=8,
            head_dim=128,
            max_position_embeddings=32768,
            rms_norm_eps=1e-5,
            sliding_window=None,
            rope_parameters={**_ROPE, "rope_theta": 1e6},
        ),
        "vision_config": _CLIP_L14_336,
        "top": dict(
            image_grid_pinpoints=_NEXT_GRID,
            vision_feature_layer=-2,
            vision_feature_select_strategy="default",
            image_seq_length=576,
        ),
        "image_processor": {
            "size": {"shortest_edge": 336},
            "crop_size": {"height": 336, "width": 336},
            "image_grid_pinpoints": _NEXT_GRID,
        },
        "processor": {"patch_size": 14, "vision_feature_select_strategy": "default", "num_additional_image_tokens": 1},
    },
    # transformers' convert_llava_onevision_weights_to_hf.py: Qwen2-7B-Instruct's config, vocabulary 152,064 + 2
    # (<image>, <video>) padded to a multiple of 64 = 152,128; SigLIP so400m at 384 px with its last layer dropped (26
    # layers, no head), 729 tokens a tile, feature select "full"; LlavaOnevisionConfig's defaults are this checkpoint's
    # (the 36 layouts, anyres_max_9). Qwen2-7B: rope θ 1e6, 32k context, untied embeddings.
    "llava_onevision": {
        "checkpoint": "llava-hf/llava-onevision-qwen2-7b-ov-hf",
        "text_config": dict(
            _QWEN2_7B,
            vocab_size=152128,
            max_position_embeddings=32768,
            rope_parameters={**_ROPE, "rope_theta": 1e6},
            tie_word_embeddings=False,
        ),
        "vision_config": dict(_SIGLIP_SO400M, num_hidden_layers=26, image_size=384, vision_use_head=False),
        "top": dict(
            image_grid_pinpoints=_ONEVISION_GRID,
            vision_aspect_ratio="anyres_max_9",
            vision_feature_layer=-1,
            vision_feature_select_strategy="full",
            tie_word_embeddings=False,
        ),
        "image_processor": {"size": {"height": 384, "width": 384}, "image_grid_pinpoints": _ONEVISION_GRID},
        "processor": {
            "num_image_tokens": 729,
            "vision_feature_select_strategy": "full",
            "vision_aspect_ratio": "anyres_max_9",
        },
    },
    # Qwen2VLConfig's defaults (auto_docstring checkpoint Qwen/Qwen2-VL-7B-Instruct) and a printed Qwen2-VL-7B module
    # tree (embed 152,064 × 3584, 28 layers, k/v 512 = 4 KV heads × 128, MLP 18,944; vision 32 blocks × 1280, merger to
    # 3584); mrope_section [16, 24, 24] sums to head_dim / 2 = 64. A 640×480 image: 476×644 px, 34×46 patches, 391
    # merged tokens.
    "qwen2_vl": {
        "checkpoint": "Qwen/Qwen2-VL-7B-Instruct",
        "text_config": dict(
            _QWEN2_7B,
            vocab_size=152064,
            max_position_embeddings=32768,
            rope_parameters={**_ROPE, "rope_theta": 1e6, "mrope_section": [16, 24, 24]},
        ),
        "vision_config": dict(
            depth=32,
            embed_dim=1280,
            hidden_size=3584,
            mlp_ratio=4,
            num_heads=16,
            patch_size=14,
            spatial_merge_size=2,
            temporal_patch_size=2,
        ),
        "top": dict(tie_word_embeddings=False),
        "image_processor": {"size": _QWEN_PIXELS, "patch_size": 14, "merge_size": 2, "temporal_patch_size": 2},
    },
    # A printed Qwen2.5-VL-7B module tree (vision 32 blocks × 1280, gated SiLU MLP 3420, RMSNorm, merger 5120 → 3584;
    # decoder as Qwen2-VL-7B's) and public ports' copies of its vision config: window 112 px, full attention in
    # blocks 7, 15, 23, 31. 128k context; mrope [16, 24, 24]. Same 391 tokens for a 640×480 image.
    "qwen2_5_vl": {
        "checkpoint": "Qwen/Qwen2.5-VL-7B-Instruct",
        "text_config": dict(
            _QWEN2_7B,
            vocab_size=152064,
            max_position_embeddings=128000,
            rope_parameters={**_ROPE, "rope_theta": 1e6, "mrope_section": [16, 24, 24]},
        ),
        "vision_config": dict(
            depth=32,
            hidden_size=1280,
            intermediate_size=3420,
            num_heads=16,
            out_hidden_size=3584,
            hidden_act="silu",
            patch_size=14,
            spatial_merge_size=2,
            temporal_patch_size=2,
            window_size=112,
            fullatt_block_indexes=[7, 15, 23, 31],
        ),
        "top": dict(tie_word_embeddings=False),
        "image_processor": {"size": _QWEN_PIXELS, "patch_size": 14, "merge_size": 2, "temporal_patch_size": 2},
    },
    # Several public ports' copies of Qwen3-VL-8B's config (an mlx-style config table, a Cosmos3 reasoner test, a
    # documented config.json): decoder 36 layers × 4096, MLP 12,288, 32 heads / 8 KV, head_dim 128, rope θ 5e6,
    # interleaved mrope [24, 20, 20] (sums to 64 = head_dim / 2), 256k context, untied; vision 27 blocks × 1152, MLP
    # 4304, 16 px patches, 48×48 learned positions, DeepStack from blocks 8, 16, 24, merger to 4096. Processor: 16 px
    # patches merged 2×2 (32 px a token: 300 tokens for 640×480); its pixel bounds (65,536 … 16,777,216) from memory.
    "qwen3_vl": {
        "checkpoint": "Qwen/Qwen3-VL-8B-Instruct",
        "text_config": dict(
            vocab_size=151936,
            hidden_size=4096,
            intermediate_size=12288,
            num_hidden_layers=36,
            num_attention_heads=32,
            num_key_value_heads=8,
            head_dim=128,
            max_position_embeddings=262144,
            rms_norm_eps=1e-6,
            rope_parameters={**_ROPE, "rope_theta": 5e6, "mrope_section": [24, 20, 20], "mrope_interleaved": True},
        ),
        "vision_config": dict(
            depth=27,
            hidden_size=1152,
            intermediate_size=4304,
            num_heads=16,
            out_hidden_size=4096,
            hidden_act="gelu_pytorch_tanh",
            patch_size=16,
            spatial_merge_size=2,
            temporal_patch_size=2,
            num_position_embeddings=2304,
            deepstack_visual_indexes=[8, 16, 24],
        ),
        "top": dict(tie_word_embeddings=False),
        "image_processor": {
            "size": {"shortest_edge": 65536, "longest_edge": 16777216},
            "patch_size": 16,
            "merge_size": 2,
            "temporal_patch_size": 2,
        },
    },
    # Public copies of gemma-3-4b-it's config.json (and Gemma3TextConfig's auto_docstring checkpoint): 34 layers ×
    # 2560, MLP 10,240, 8 heads / 4 KV, head_dim 256, query_pre_attn_scalar 256, vocabulary 262,208, sliding window
    # 1024 on 5 layers of 6 (layer_types rebuilt from the pattern), linear rope ×8 (θ 1e6) on the global layers, θ 1e4
    # on the sliding ones; SigLIP so400m at 896 px pooled to 256 tokens an image.
    "gemma3": {
        "checkpoint": "google/gemma-3-4b-it",
        "text_config": dict(
            vocab_size=262208,
            hidden_size=2560,
            intermediate_size=10240,
            num_hidden_layers=34,
            num_attention_heads=8,
            num_key_value_heads=4,
            head_dim=256,
            query_pre_attn_scalar=256,
            sliding_window=1024,
            max_position_embeddings=131072,
            rms_norm_eps=1e-6,
            rope_parameters={
                "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1e6},
                "sliding_attention": {"rope_type": "default", "rope_theta": 1e4},
            },
        ),
        "vision_config": dict(_SIGLIP_SO400M, image_size=896, vision_use_head=False),
        "top": dict(mm_tokens_per_image=256),
        "image_processor": {"size": {"height": 896, "width": 896}},
        "processor": {"image_seq_length": 256},
    },
    # InternVL3-8B-hf's config as printed in vllm-project/vllm#17634 (downsample_ratio 0.5, image_seq_length 256,
    # vocabulary 151,674, rope θ 1e6); its decoder is Qwen2.5-7B's (untied) and its vision InternViT-300M-448px:
    # InternVLVisionConfig's defaults (24 layers × 1024, 448 px, 14 px patches, layer scale 0.1). The processor crops
    # to up to 12 tiles of 448 px plus a thumbnail: a 4:3 image is 12 + 1 tiles = 3,328 image tokens, as the real one.
    "internvl": {
        "checkpoint": "OpenGVLab/InternVL3-8B-hf",
        "text_config": dict(
            _QWEN2_7B,
            vocab_size=151674,
            max_position_embeddings=32768,
            rope_parameters={**_ROPE, "rope_theta": 1e6},
            tie_word_embeddings=False,
        ),
        "vision_config": dict(
            hidden_size=1024,
            intermediate_size=4096,
            num_hidden_layers=24,
            num_attention_heads=16,
            image_size=[448, 448],
            patch_size=[14, 14],
            use_qk_norm=False,
            norm_type="layer_norm",
            layer_scale_init_value=0.1,
        ),
        "top": dict(downsample_ratio=0.5, image_seq_length=256, vision_feature_layer=-1, tie_word_embeddings=False),
        "image_processor": {
            "size": {"height": 448, "width": 448},
            "crop_to_patches": True,
            "min_patches": 1,
            "max_patches": 12,
        },
        "processor": {"image_seq_length": 256},
    },
    # A public port's test copy of its config (vision 1152 wide, 27 layers, 16 heads, 364 px, 14 px patches; decoder
    # 32 layers × 4096, MLP 14,336, 32 heads / 8 KV, vocabulary 128,256 + 3 = 128,259; scale_factor 2), another's of
    # its processor files (longest edge 1456 = 4 × 364, tiles of 364, splitting on, image_seq_len 169 = 26² / 2²), and
    # Idefics3Config's auto_docstring checkpoint. The decoder is Llama-3.1-8B-Instruct's (θ 5e5; its llama3 rope
    # scaling and 128k context from memory, neither changes a prefill's time). A 640×480 image: 4×3 tiles + the global
    # one, 13 × 169 = 2,197 tokens.
    "idefics3": {
        "checkpoint": "HuggingFaceM4/Idefics3-8B-Llama3",
        "text_config": dict(
            vocab_size=128259,
            hidden_size=4096,
            intermediate_size=14336,
            num_hidden_layers=32,
            num_attention_heads=32,
            num_key_value_heads=8,
            head_dim=128,
            max_position_embeddings=131072,
            rms_norm_eps=1e-5,
            rope_parameters={**_ROPE, "rope_theta": 5e5},
        ),
        "vision_config": dict(_SIGLIP_SO400M, image_size=364),
        "top": dict(scale_factor=2, tie_word_embeddings=False),
        "image_processor": {
            "size": {"longest_edge": 1456},
            "max_image_size": {"longest_edge": 364},
            "do_image_splitting": True,
        },
        "processor": {"image_seq_len": 169},
    },
    # SmolVLMConfig's auto_docstring checkpoint, the largest SmolVLM (HuggingFaceTB/SmolVLM-Instruct has the same 2.2B
    # dimensions under model_type idefics3): SmolLM2-1.7B (24 layers × 2048, 32 heads, no GQA, vocabulary 49,280) and
    # SigLIP so400m at 384 px (27×27 patches, pixel shuffle ×3 → 81 tokens a tile). From memory: rope θ 130,000, 8k
    # context, longest edge 1536 = 4 × 384 (a 640×480 image: 4×3 tiles + global, 13 × 81 = 1,053 tokens).
    "smolvlm": {
        "checkpoint": "HuggingFaceTB/SmolVLM2-2.2B-Instruct",
        "text_config": dict(
            vocab_size=49280,
            hidden_size=2048,
            intermediate_size=8192,
            num_hidden_layers=24,
            num_attention_heads=32,
            num_key_value_heads=32,
            head_dim=64,
            max_position_embeddings=8192,
            rms_norm_eps=1e-5,
            rope_parameters={**_ROPE, "rope_theta": 130000.0},
        ),
        "vision_config": dict(_SIGLIP_SO400M, image_size=384),
        "top": dict(scale_factor=3, tie_word_embeddings=False),
        "image_processor": {
            "size": {"longest_edge": 1536},
            "max_image_size": {"longest_edge": 384},
            "do_image_splitting": True,
        },
        "processor": {"image_seq_len": 81},
    },
    # Public copies of the checkpoint's config.json (a Mistral3 config dump, transformers 4.57.1; a port's table for
    # mistral-small-3.1-24b-instruct) and Mistral3Config's auto_docstring checkpoint: decoder 40 layers × 5120, MLP
    # 32,768, 32 heads / 8 KV, head_dim 128, vocabulary 131,072, θ 1e9, 128k context, no sliding window; Pixtral vision
    # 24 layers × 1024, 16 heads (head_dim 64), SiLU, 1540 px, 14 px patches, θ 1e4; 2×2 patch merger, no projector
    # bias. A 640×480 image is not resized: 46×35 patches, merged to 23×18 tokens plus a break a row = 432 tokens.
    "mistral3": {
        "checkpoint": "mistralai/Mistral-Small-3.1-24B-Instruct-2503",
        "text_config": dict(
            vocab_size=131072,
            hidden_size=5120,
            intermediate_size=32768,
            num_hidden_layers=40,
            num_attention_heads=32,
            num_key_value_heads=8,
            head_dim=128,
            max_position_embeddings=131072,
            rms_norm_eps=1e-5,
            sliding_window=None,
            rope_parameters={**_ROPE, "rope_theta": 1e9},
        ),
        "vision_config": dict(
            hidden_size=1024,
            intermediate_size=4096,
            num_hidden_layers=24,
            num_attention_heads=16,
            hidden_act="silu",
            image_size=1540,
            patch_size=14,
            rope_parameters={**_ROPE, "rope_theta": 1e4},
        ),
        "top": dict(
            spatial_merge_size=2,
            vision_feature_layer=-1,
            multimodal_projector_bias=False,
            projector_hidden_act="gelu",
            tie_word_embeddings=False,
        ),
        "image_processor": {"size": {"longest_edge": 1540}, "patch_size": {"height": 14, "width": 14}},
        "processor": {"patch_size": 14, "spatial_merge_size": 2},
    },
    # Public copies of Llama-3.2-11B-Vision's config.json and preprocessor_config.json (MllamaConfig's defaults are
    # the same checkpoint's): decoder 40 layers × 4096 with cross-attention at 3, 8, …, 38, 8 KV heads, vocabulary
    # 128,256, llama3 rope ×8 on θ 5e5; vision 32 + 8 global layers × 1280 at 560 px, 14 px patches, up to 4 tiles
    # of 1601 states, intermediate layers 3, 7, 15, 23, 30 concatenated (7680 = 6 × 1280). The prompt holds one
    # <|image|>: the image reaches the decoder through cross-attention, not as prompt tokens.
    "mllama": {
        "checkpoint": "meta-llama/Llama-3.2-11B-Vision-Instruct",
        "text_config": dict(
            vocab_size=128256,
            hidden_size=4096,
            intermediate_size=14336,
            num_hidden_layers=40,
            num_attention_heads=32,
            num_key_value_heads=8,
            cross_attention_layers=[3, 8, 13, 18, 23, 28, 33, 38],
            max_position_embeddings=131072,
            rms_norm_eps=1e-5,
            rope_parameters={
                "rope_type": "llama3",
                "rope_theta": 5e5,
                "factor": 8.0,
                "low_freq_factor": 1.0,
                "high_freq_factor": 4.0,
                "original_max_position_embeddings": 8192,
            },
        ),
        "vision_config": dict(
            hidden_size=1280,
            intermediate_size=5120,
            num_hidden_layers=32,
            num_global_layers=8,
            attention_heads=16,
            image_size=560,
            patch_size=14,
            max_num_tiles=4,
            intermediate_layers_indices=[3, 7, 15, 23, 30],
            vision_output_dim=7680,
        ),
        "image_processor": {"size": {"height": 560, "width": 560}, "max_image_tiles": 4},
    },
    # No stored copy of paligemma2-3b-pt-448's own config.json was found; its parts' are: google/gemma-2-2b-it's
    # config.json (26 layers × 2304, MLP 9216, 8 heads / 4 KV, head_dim 256, query_pre_attn_scalar 256, sliding window
    # 4096, soft caps 50 / 30, 8k context) and paligemma-3b-pt-448's (vocabulary 257,216, SigLIP so400m at 448 px:
    # 32×32 patches = 1,024 image tokens), the projection going to the decoder's 2304.
    "paligemma": {
        "checkpoint": "google/paligemma2-3b-pt-448",
        "text_config": dict(
            vocab_size=257216,
            hidden_size=2304,
            intermediate_size=9216,
            num_hidden_layers=26,
            num_attention_heads=8,
            num_key_value_heads=4,
            head_dim=256,
            query_pre_attn_scalar=256,
            sliding_window=4096,
            attn_logit_softcapping=50.0,
            final_logit_softcapping=30.0,
            max_position_embeddings=8192,
            rms_norm_eps=1e-6,
        ),
        "vision_config": dict(_SIGLIP_SO400M, image_size=448, vision_use_head=False),
        "top": dict(projection_dim=2304, hidden_size=2304, vocab_size=257216),
        "image_processor": {"size": {"height": 448, "width": 448}, "image_seq_length": 1024},
    },
}


def _cap_layers(config: dict[str, Any], n: int) -> None:
    """At most n layers per tower (config.json as a dict), keeping the indices that name layers inside the towers."""
    text, vision = config.get("text_config", config), config.get("vision_config") or {}
    for sub in (text, vision):
        for key in ("num_hidden_layers", "depth", "num_global_layers"):
            if sub.get(key):
                sub[key] = min(n, sub[key])
        layers = sub.get("num_hidden_layers") or sub.get("depth")
        if isinstance(sub.get("layer_types"), list):
            sub["layer_types"] = sub["layer_types"][:layers]
    if "cross_attention_layers" in text:  # Mllama: at least one cross-attention layer stays
        kept = [i for i in text["cross_attention_layers"] if i < text["num_hidden_layers"]]
        text["cross_attention_layers"] = kept or [text["num_hidden_layers"] - 1]
    if "deepstack_visual_indexes" in vision:  # Qwen3-VL: at least one DeepStack merger stays
        kept = [i for i in vision["deepstack_visual_indexes"] if i < vision["depth"]]
        vision["deepstack_visual_indexes"] = kept or [vision["depth"] - 1]
    if "fullatt_block_indexes" in vision:
        vision["fullatt_block_indexes"] = [i for i in vision["fullatt_block_indexes"] if i < vision["depth"]]
    if "intermediate_layers_indices" in vision:  # Mllama: as many as before, so 7680 stays
        top = vision["num_hidden_layers"]
        vision["intermediate_layers_indices"] = [min(i, top - 1) for i in vision["intermediate_layers_indices"]]


def _widen(source: Path, sizes: dict[str, Any], layers: int | None) -> None:
    """Merge a FAMILY_7B entry into the tiny model's saved config and processor files, so that loading them derives
    what a config or processor derives at construction (Gemma 3's layer pattern, a processor's image-token string)."""
    path = source / "config.json"
    config = json.loads(path.read_text())
    config.update(sizes.get("top", {}))
    for part in ("text_config", "vision_config"):
        given = sizes.get(part, {})
        sub = config.get(part)
        if not given:
            continue
        if sub is None:
            raise ValueError(f"FAMILY_7B gives {part} but the tiny config has none")
        if "layer_types" not in given:
            sub.pop("layer_types", None)  # rebuilt from num_hidden_layers on load
        sub.update(given)
        if "head_dim" in sub and "head_dim" not in given and sub.get("num_attention_heads"):
            sub["head_dim"] = sub["hidden_size"] // sub["num_attention_heads"]
    if layers:  # a CPU check of the wide configs: every width real, few layers
        _cap_layers(config, layers)
    path.write_text(json.dumps(config, indent=2))
    for name in ("processor_config.json", "preprocessor_config.json"):
        file = source / name
        if not file.exists():
            continue
        saved = json.loads(file.read_text())
        image = saved.get("image_processor", saved)  # nested in processor_config.json, flat in preprocessor_config
        image.update(sizes.get("image_processor", {}))
        if name == "processor_config.json":
            saved.update(sizes.get("processor", {}))
        file.write_text(json.dumps(saved, indent=2))


def build_family(model_type: str, scale: str, folder: Path, *, layers: int | None, device: str, dtype: str):
    """(model, processor, checkpoint) of a family: the tiny test model's classes, widened to FAMILY_7B at 7b."""
    import torch
    from transformers import AutoConfig, AutoModelForImageTextToText, AutoProcessor
    from transformers.initialization import no_init_weights

    from tests.tiny_families import BUILDERS

    zeros = bool(layers) and device == "cpu"

    source = BUILDERS[model_type](folder / model_type)
    sizes = FAMILY_7B.get(model_type, {}) if scale == "7b" else {}
    _widen(source, sizes, layers)
    config = AutoConfig.from_pretrained(source)
    processor = AutoProcessor.from_pretrained(source)
    torch.manual_seed(0)
    with torch.device(device), no_init_weights() if zeros else contextlib.nullcontext():
        model = AutoModelForImageTextToText.from_config(config, dtype=getattr(torch, dtype))
    if zeros:  # the CPU check of widths: drawing a billion random numbers on a shared CPU takes minutes
        for p in model.parameters():
            p.data.zero_()
    model.eval()
    model.generation_config.eos_token_id = list(range(config.get_text_config(decoder=True).vocab_size))
    model.generation_config.pad_token_id = processor.tokenizer.pad_token_id
    return model, processor, sizes.get("checkpoint", "tiny test model")


def time_family(ws, bench, items, model, processor, model_type: str, *, check: bool = False) -> str:
    """One row of the --family table: CircularEval over the items with prefix sharing on, then off (check: one
    generate call on the first item, for the CPU check of the wide configs)."""
    from evaluator.backends.base import Query

    def backend(share: bool) -> HFBackend:
        return HFBackend.from_loaded(model, processor, name=model_type, share_prefix=share)

    first, plain = items[0], backend(False)
    text = default_template("mcq").render(
        question=first.question, hint=first.hint, options=tuple(first.options), language="en"
    )
    query = Query(text, (catalog.image_bytes(ws, first.image_sha256)[0],), tuple("ABCD"))
    tokens = plain._process([plain._render(query)], [query])["input_ids"].shape[1]  # image tokens included
    params = sum(p.numel() for p in model.parameters()) / 1e9
    sharing = backend(True).share_prefix_note.split(":")[0]
    if check:  # widths only: one generate call (the shared-prefix path where the family has it), no engine
        shared = backend(True)
        t0 = time.perf_counter()
        shared.generate([query], 1)
        seconds = time.perf_counter() - t0
        return f"{params:>8.4f} {tokens:>7} {sharing:>8} {seconds:>8.2f} {'-':>8} {'-':>7} {1000 * seconds:>10.1f}"
    warm = min(4 if model.device.type == "cuda" else 1, len(items))  # kernels, allocator, first calls of both paths
    for share in (True, False):
        timed_run(ws, bench, backend(share), items, likelihood=False, limit=warm)
    on, off = (timed_run(ws, bench, backend(share), items, likelihood=False) for share in (True, False))
    return (
        f"{params:>8.4f} {tokens:>7} {sharing:>8} {on['seconds']:>8.2f} {off['seconds']:>8.2f} "
        f"{off['seconds'] / on['seconds']:>7.2f} {on['ms_per_pass']:>10.1f}"
    )


def family_main(args) -> None:
    """--family: each family's CircularEval time with prefix sharing on and off."""
    import gc

    import torch

    from evaluator.backends.families import FAMILIES

    wanted = [f.model_type for f in FAMILIES] if args.family == "all" else args.family.split(",")
    unknown = set(wanted) - {f.model_type for f in FAMILIES}
    if unknown:
        sys.exit(f"error: unknown families {sorted(unknown)} (vlmdesk models families)")
    device = args.device or ("cpu" if args.scale == "tiny" else "cuda")
    if device == "cuda" and not torch.cuda.is_available():
        sys.exit("error: the 7b scale needs a CUDA GPU (try --scale tiny, or --layers 1 --device cpu)")
    dtype = "bfloat16" if device == "cuda" else "float32"
    n_items = args.items or (64 if device == "cuda" else 8)
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none"
    print(
        f"families at scale {args.scale!r} on {device} ({dtype}, GPU {gpu}, torch {torch.__version__}), "
        f"{n_items} items, layers {args.layers or 'all'}"
    )
    head = f"{'B params':>8} {'tokens':>7} {'sharing':>8} {'s on':>8} {'s off':>8} {'off/on':>7} {'ms/pass on':>10}"
    print(f"{'family':<16} {head} {'build s':>8}  from", flush=True)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        path = write_items(Path(tmp), n_items)
        with open_workspace(Path(tmp) / "ws.sqlite") as ws:
            import_benchmark(ws, path, name="synthetic", progress=False)
            bench = catalog.benchmark_by_name(ws, "synthetic")
            items = catalog.list_items(ws, bench.id)
            for model_type in wanted:
                model = None
                try:
                    t0 = time.perf_counter()
                    model, processor, source = build_family(
                        model_type, args.scale, Path(tmp), layers=args.layers, device=device, dtype=dtype
                    )
                    built = time.perf_counter() - t0
                    check = bool(args.layers) and device == "cpu"
                    row = time_family(ws, bench, items, model, processor, model_type, check=check)
                    print(f"{model_type:<16} {row} {built:>8.1f}  {source}", flush=True)
                except Exception as exc:  # one family's failure must not hide the others' figures
                    print(f"{model_type:<16} failed: {type(exc).__name__}: {str(exc)[:300]}", flush=True)
                del model
                gc.collect()
                if device == "cuda":
                    torch.cuda.empty_cache()
    print(f"total {time.perf_counter() - started:.1f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", choices=tuple(SCALES), default="7b", help="7b: LLaVA-1.5-7B on CUDA; tiny: CPU")
    ap.add_argument("--items", type=int, help="synthetic items (default 256 for 7b, 24 for tiny)")
    ap.add_argument(
        "--repeat",
        type=int,
        help="rounds over every setting, in turn; each setting's best round is reported (first calls of a code path "
        "pay one-off costs that would otherwise land on whichever setting runs first); default 3 for tiny, 1 for 7b "
        "(after its warm-up run: the whole bench must fit in 5 minutes on an H200)",
    )
    ap.add_argument(
        "--family", help="comma-separated model types of evaluator/backends/families.py, or all (see above)"
    )
    ap.add_argument("--layers", type=int, help="with --family: at most N layers per tower (a CPU check of widths)")
    ap.add_argument("--device", help="with --family: cuda (default at 7b) or cpu")
    args = ap.parse_args()
    if args.family:
        family_main(args)
        return
    import torch
    import transformers

    cfg = SCALES[args.scale]
    n_items = args.items or cfg["items"]
    args.repeat = args.repeat or (3 if args.scale == "tiny" else 1)
    if cfg["device"] == "cuda" and not torch.cuda.is_available():
        sys.exit("error: --scale 7b needs a CUDA GPU (try --scale tiny)")
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none"
    print(
        f"machine: {platform.platform()}, {os.cpu_count()} CPUs, GPU {gpu}, torch {torch.__version__}, "
        f"transformers {transformers.__version__}"
    )
    started = time.perf_counter()
    model, processor = build_model(args.scale)
    params = sum(p.numel() for p in model.parameters()) / 1e9
    print(
        f"model: LLaVA-1.5-7B architecture at scale {args.scale!r}, {params:.3f} B parameters, {cfg['dtype']} on "
        f"{cfg['device']} (built in {time.perf_counter() - started:.1f} s)"
    )
    chunking = "chunk_items" in inspect.getsource(Engine)  # w3-engine's side of the contract, once merged
    walk = "walks waves in chunks of chunk_items" if chunking else "waves over every item (no chunking yet)"
    print(f"engine: {walk}")

    def backend(**kw) -> HFBackend:
        return HFBackend.from_loaded(model, processor, name=f"llava-1.5-7b-config-random-{args.scale}", **kw)

    with tempfile.TemporaryDirectory() as tmp:
        path = write_items(Path(tmp), n_items)
        with open_workspace(Path(tmp) / "ws.sqlite") as ws:
            import_benchmark(ws, path, name="synthetic", progress=False)
            bench = catalog.benchmark_by_name(ws, "synthetic")
            items = catalog.list_items(ws, bench.id)
            auto = backend()
            sample = Answerer(auto, items)
            from evaluator.backends.base import Query

            first = items[0]
            query = Query(
                default_template("mcq").render(
                    question=first.question, hint=first.hint, options=tuple(first.options), language="en"
                ),
                (catalog.image_bytes(ws, first.image_sha256)[0],),
                tuple("ABCD"),
            )
            del sample
            print("\nprefill (whole prompt, image included)")
            print(f"{'batch':>6} {'tokens/row':>11} {'ms':>9} {'TFLOP/s':>9}")
            for b, tokens, seconds, tflops in prefill_tflops(auto, query):
                print(f"{b:>6} {tokens:>11} {1000 * seconds:>9.1f} {tflops:>9.3f}")

            print(f"\nCircularEval over {n_items} items (4 options), simulated answerer, max_new_tokens 8")
            # Warm-up (kernels, allocator) on a few items, not timed.
            timed_run(ws, bench, backend(), items, likelihood=False, limit=min(16, n_items))
            configs = [
                ("batch 8, sharing, overlap", dict(max_batch_size=8), False),
                ("auto batch, sharing, overlap", {}, False),
                ("auto batch, no sharing", dict(share_prefix=False), False),
                ("auto batch, no overlap", dict(overlap=False), False),
                ("likelihood, one row per query", {}, True),
                ("likelihood, one row per option", {}, True),
            ]
            results = {}
            print(
                f"{'setting':<34} {'batch':>5} {'passes':>7} {'s':>8} {'ms/pass':>8} {'vanilla':>8} {'circular':>9} "
                f"{'prefix hits/misses':>19}"
            )
            rounds: dict[str, list[dict[str, Any]]] = {name: [] for name, _, _ in configs}
            for _ in range(max(1, args.repeat)):
                for name, kw, likelihood in configs:
                    b = backend(**kw)
                    if name.endswith("per option"):
                        b.single_row_likelihood = False
                    rounds[name].append(timed_run(ws, bench, b, items, likelihood=likelihood))
            for name, _, _ in configs:
                r = results[name] = min(rounds[name], key=lambda x: x["seconds"])
                print(
                    f"{name:<34} {r['batch']:>5} {r['passes']:>7} {r['seconds']:>8.2f} {r['ms_per_pass']:>8.2f} "
                    f"{r['vanilla']:>8.3f} {r['circular']:>9.3f} "
                    f"{r['stats']['prefix_hits']:>10}/{r['stats']['prefix_misses']}"
                )

    def ratio(a: str, b: str) -> str:
        return f"{results[a]['seconds'] / results[b]['seconds']:.2f}"

    print(f"\nratios (time / time, same run, best of {max(1, args.repeat)} rounds each)")
    shared = "auto batch, sharing, overlap"
    print(f"  batch 8 / auto batch:                     {ratio('batch 8, sharing, overlap', shared)}")
    print(f"  no sharing / sharing:                     {ratio('auto batch, no sharing', shared)}")
    print(f"  no overlap / overlap:                     {ratio('auto batch, no overlap', shared)}")
    per_option = ratio("likelihood, one row per option", "likelihood, one row per query")
    print(f"  likelihood rows per option / per query:   {per_option}")
    best = min(("auto batch, sharing, overlap", "batch 8, sharing, overlap"), key=lambda k: results[k]["seconds"])
    for name in (best, "likelihood, one row per query"):
        projected = results[name]["s_per_item"] * MMBENCH_DEV_EN
        print(f"projected MMBench-dev EN ({MMBENCH_DEV_EN} questions), {name}: {projected:.1f} s")
    print(f"total bench time {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
