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
dimensions (FAMILY_7B; random weights built on the device, nothing downloaded) and runs CircularEval with prefix
sharing on and off. A family whose build or run fails is reported and the others go on.
"""

from __future__ import annotations

import argparse
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

from db import catalog, open_workspace  # noqa: E402
from evaluator.backends.hf import HFBackend  # noqa: E402
from evaluator.importers.importer import import_benchmark  # noqa: E402
from evaluator.prompts import default_template  # noqa: E402
from evaluator.report import run_report  # noqa: E402
from evaluator.runner import Engine, RunSettings, new_run  # noqa: E402

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


# The public checkpoint each family's 7B-class config comes from, and its dimensions (config.json), applied over the
# tiny model's config: top-level keys, text_config, vision_config, and image-processor / processor attributes (the
# image size decides the image-token count, most of a prefix). Families missing here run at their tiny size.
FAMILY_7B: dict[str, dict[str, Any]] = {
    "llava": {
        "checkpoint": "llava-hf/llava-1.5-7b-hf",
        "text_config": dict(SCALES["7b"]["text"], vocab_size=32064),
        "vision_config": {k: v for k, v in SCALES["7b"]["vision"].items() if k != "projection_dim"},
        "top": dict(SCALES["7b"]["llava"]),
        "image_processor": {"size": {"shortest_edge": 336}, "crop_size": {"height": 336, "width": 336}},
        "processor": {"patch_size": 14},
    },
}


def _widen(config, sizes: dict[str, Any]) -> None:
    for key, value in sizes.get("top", {}).items():
        setattr(config, key, value)
    for part in ("text_config", "vision_config"):
        sub = getattr(config, part, None)
        for key, value in sizes.get(part, {}).items():
            setattr(sub, key, value)


def build_family(model_type: str, scale: str, folder: Path, *, layers: int | None, device: str, dtype: str):
    """(model, processor, checkpoint) of a family: the tiny test model's classes, widened to FAMILY_7B at 7b."""
    import torch
    from transformers import AutoConfig, AutoModelForImageTextToText, AutoProcessor

    from tests.tiny_families import BUILDERS

    source = BUILDERS[model_type](folder / model_type)
    config = AutoConfig.from_pretrained(source)
    processor = AutoProcessor.from_pretrained(source)
    sizes = FAMILY_7B.get(model_type, {}) if scale == "7b" else {}
    _widen(config, sizes)
    for key, value in sizes.get("image_processor", {}).items():
        setattr(processor.image_processor, key, value)
    for key, value in sizes.get("processor", {}).items():
        setattr(processor, key, value)
    if layers:  # a CPU check of the wide configs: every width real, few layers
        for sub in (config.get_text_config(decoder=True), getattr(config, "vision_config", None)):
            for key in ("num_hidden_layers", "depth"):
                if sub is not None and getattr(sub, key, None):
                    setattr(sub, key, min(layers, getattr(sub, key)))
    torch.manual_seed(0)
    with torch.device(device):
        model = AutoModelForImageTextToText.from_config(config, dtype=getattr(torch, dtype))
    model.eval()
    model.generation_config.eos_token_id = list(range(config.get_text_config(decoder=True).vocab_size))
    model.generation_config.pad_token_id = processor.tokenizer.pad_token_id
    return model, processor, sizes.get("checkpoint", "tiny test model")


def time_family(ws, bench, items, model, processor, model_type: str) -> str:
    """One row of the --family table: CircularEval over the items with prefix sharing on, then off."""

    def backend(share: bool) -> HFBackend:
        return HFBackend.from_loaded(model, processor, name=model_type, share_prefix=share)

    timed_run(ws, bench, backend(True), items, likelihood=False, limit=min(4, len(items)))  # warm-up
    on, off = (timed_run(ws, bench, backend(share), items, likelihood=False) for share in (True, False))
    params = sum(p.numel() for p in model.parameters()) / 1e9
    sharing = backend(True).share_prefix_note.split(":")[0]
    return (
        f"{params:>8.2f} {sharing:>8} {on['seconds']:>8.2f} {off['seconds']:>8.2f} "
        f"{off['seconds'] / on['seconds']:>7.2f} {on['ms_per_pass']:>10.1f}"
    )


def family_main(args) -> None:
    """--family: each family's CircularEval time with prefix sharing on and off."""
    import torch

    from evaluator.families import FAMILIES

    wanted = [f.model_type for f in FAMILIES] if args.family == "all" else args.family.split(",")
    unknown = set(wanted) - {f.model_type for f in FAMILIES}
    if unknown:
        sys.exit(f"error: unknown families {sorted(unknown)} (vlmdesk models families)")
    device = args.device or ("cpu" if args.scale == "tiny" else "cuda")
    if device == "cuda" and not torch.cuda.is_available():
        sys.exit("error: the 7b scale needs a CUDA GPU (try --scale tiny, or --layers 1 --device cpu)")
    dtype = "bfloat16" if device == "cuda" else "float32"
    n_items = args.items or (64 if device == "cuda" else 8)
    print(f"families at scale {args.scale!r} on {device} ({dtype}), {n_items} items, layers {args.layers or 'all'}")
    head = f"{'B params':>8} {'sharing':>8} {'s on':>8} {'s off':>8} {'off/on':>7} {'ms/pass on':>10}"
    print(f"{'family':<16} {head}  from")
    with tempfile.TemporaryDirectory() as tmp:
        path = write_items(Path(tmp), n_items)
        with open_workspace(Path(tmp) / "ws.sqlite") as ws:
            import_benchmark(ws, path, name="synthetic", progress=False)
            bench = catalog.benchmark_by_name(ws, "synthetic")
            items = catalog.list_items(ws, bench.id)
            for model_type in wanted:
                try:
                    model, processor, source = build_family(
                        model_type, args.scale, Path(tmp), layers=args.layers, device=device, dtype=dtype
                    )
                    print(f"{model_type:<16} {time_family(ws, bench, items, model, processor, model_type)}  {source}")
                    del model
                    if device == "cuda":
                        torch.cuda.empty_cache()
                except Exception as exc:  # one family's failure must not hide the others' figures
                    print(f"{model_type:<16} failed: {type(exc).__name__}: {str(exc)[:200]}")


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
    ap.add_argument("--family", help="comma-separated model types of evaluator/families.py, or all (see above)")
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
