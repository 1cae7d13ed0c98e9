"""Tiny random-weight builders (see tests/tiny_families.py): the Qwen-VL families, whose decoders take 3-D rotary
positions (M-RoPE: temporal, height, width) computed from each image's grid.

Qwen2-VL, Qwen2.5-VL and Qwen3-VL each get their real model, config and processor classes: a 2-layer, 64-wide
decoder, a 2-block vision tower (Qwen2.5-VL's with window attention and one full-attention block, Qwen3-VL's with
a DeepStack merger and learned position embeddings), and the PIL image processor at 56–112 px, so an image is 4 to
16 merged tokens and images of different sizes get different grids. The real processors want a video processor,
which needs torchvision (it does not load beside the CPU torch here); each family's processor is a fixture
subclass without the video slot, registered with AutoProcessor, still an instance of the real class.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.tiny_models import _SEED, TINY_CONTEXT, _save, _tokenizer

_SPECIAL = {"eos": "<|im_end|>", "pad": "<|endoftext|>"}  # Qwen tokenizers have no BOS
_EXTRA = ["<|im_start|>", "<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>"]

# The families' templates, image parts as <|vision_start|><|image_pad|><|vision_end|>. Qwen2-VL and Qwen2.5-VL add a
# default system message when the conversation has none; Qwen3-VL does not.
_SYSTEM = (
    "{% if loop.first and m['role'] != 'system' %}<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
    "{% endif %}"
)
_QWEN_TEMPLATE = (
    "{% for m in messages %}" + "{system}" + "<|im_start|>{{ m['role'] }}\n"
    "{% if m['content'] is string %}{{ m['content'] }}{% else %}{% for p in m['content'] %}"
    "{% if p['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif p['type'] == 'text' %}{{ p['text'] }}{% endif %}{% endfor %}{% endif %}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
QWEN2_TEMPLATE = _QWEN_TEMPLATE.replace("{system}", _SYSTEM)
QWEN3_TEMPLATE = _QWEN_TEMPLATE.replace("{system}", "")

_PROCESSORS: dict[str, type] = {}


def _processor_class(base: type) -> type:
    """``base`` without its video slot: transformers reads a processor's parts from its ``__init__`` signature."""
    from transformers import ProcessorMixin

    if base.__name__ not in _PROCESSORS:

        def __init__(self: Any, image_processor: Any = None, tokenizer: Any = None, chat_template: Any = None, **kw):
            self.image_token = "<|image_pad|>"
            self.video_token = "<|video_pad|>"
            self.image_token_id = tokenizer.convert_tokens_to_ids(self.image_token)
            self.video_token_id = tokenizer.convert_tokens_to_ids(self.video_token)
            self.vision_start_token, self.vision_end_token = "<|vision_start|>", "<|vision_end|>"
            self.vision_start_token_id = tokenizer.convert_tokens_to_ids(self.vision_start_token)
            self.vision_end_token_id = tokenizer.convert_tokens_to_ids(self.vision_end_token)
            ProcessorMixin.__init__(self, image_processor, tokenizer, chat_template=chat_template)

        _PROCESSORS[base.__name__] = type(f"Tiny{base.__name__}", (base,), {"__init__": __init__})
    return _PROCESSORS[base.__name__]


def register_processors() -> None:
    """Make AutoProcessor load the video-less processors for the three configs (the builders call it)."""
    from transformers import (
        AutoProcessor,
        Qwen2_5_VLConfig,
        Qwen2_5_VLProcessor,
        Qwen2VLConfig,
        Qwen2VLProcessor,
        Qwen3VLConfig,
        Qwen3VLProcessor,
    )

    for config, base in (
        (Qwen2VLConfig, Qwen2VLProcessor),
        (Qwen2_5_VLConfig, Qwen2_5_VLProcessor),
        (Qwen3VLConfig, Qwen3VLProcessor),
    ):
        AutoProcessor.register(config, _processor_class(base), exist_ok=True)


def _text_config(tok, **kw) -> dict[str, Any]:
    return dict(
        vocab_size=len(tok),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=TINY_CONTEXT,
        # Weights 5× the default scale, so that attention depends on positions: at 0.02 a token one position off
        # moves a logit by 1e-3, at 0.1 by several units (and greedy tokens change).
        initializer_range=0.1,
        bos_token_id=None,  # Qwen's tokenizers have none (the config default is outside this vocabulary)
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        **kw,
    )


def _build(dir, model_type: str) -> Path:
    import torch
    import transformers
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    register_processors()
    qwen3 = model_type == "qwen3_vl"
    template = QWEN3_TEMPLATE if qwen3 else QWEN2_TEMPLATE
    tok = _tokenizer(_SPECIAL, _EXTRA, template)
    token_ids = {
        f"{key}_token_id": tok.convert_tokens_to_ids(f"<|{token}|>")
        for key, token in (("image", "image_pad"), ("video", "video_pad"), ("vision_start",) * 2, ("vision_end",) * 2)
    }
    rope = {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [2, 3, 3]}
    patch = 16 if qwen3 else 14
    if model_type == "qwen2_vl":
        name = "Qwen2VL"
        vision = dict(depth=2, embed_dim=32, hidden_size=64, mlp_ratio=2, num_heads=2, patch_size=patch)
        text = _text_config(tok, rope_parameters=rope)
    elif model_type == "qwen2_5_vl":
        name = "Qwen2_5_VL"
        # Windows of 56 px (2×2 merged tokens) inside ≤112 px images; block 1 attends to the whole image.
        vision = dict(
            depth=2,
            hidden_size=32,
            intermediate_size=64,
            num_heads=2,
            out_hidden_size=64,
            patch_size=patch,
            window_size=56,
            fullatt_block_indexes=[1],
        )
        text = _text_config(tok, rope_parameters=rope)
    else:
        name = "Qwen3VL"
        # DeepStack: vision block 0's features are added to the decoder's first layer; 8×8 learned position
        # embeddings, interpolated to each grid. Qwen3-VL interleaves the M-RoPE sections.
        vision = dict(
            depth=2,
            hidden_size=32,
            intermediate_size=64,
            num_heads=2,
            out_hidden_size=64,
            patch_size=patch,
            num_position_embeddings=64,
            deepstack_visual_indexes=[0],
        )
        text = _text_config(tok, head_dim=16, rope_parameters={**rope, "mrope_interleaved": True})
    config = getattr(transformers, f"{name}Config")(text_config=text, vision_config=vision, **token_ids)
    torch.manual_seed(_SEED)
    model = getattr(transformers, f"{name}ForConditionalGeneration")(config)
    image_processor = Qwen2VLImageProcessorPil(
        min_pixels=56 * 56, max_pixels=112 * 112, patch_size=patch, merge_size=2, temporal_patch_size=2
    )
    processor = _processor_class(getattr(transformers, f"{name}Processor"))(
        image_processor=image_processor, tokenizer=tok, chat_template=template
    )
    return _save(model, tok, processor, dir)


def build_tiny_qwen2_vl(dir) -> Path:
    return _build(dir, "qwen2_vl")


def build_tiny_qwen2_5_vl(dir) -> Path:
    return _build(dir, "qwen2_5_vl")


def build_tiny_qwen3_vl(dir) -> Path:
    return _build(dir, "qwen3_vl")


BUILDERS: dict[str, Callable[[Path], Path]] = {
    "qwen2_vl": build_tiny_qwen2_vl,
    "qwen2_5_vl": build_tiny_qwen2_5_vl,
    "qwen3_vl": build_tiny_qwen3_vl,
}
