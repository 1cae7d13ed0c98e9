"""Tiny random-weight builders (see tests/tiny_families.py): decoders with 1-D rotary positions whose image tokens
are spliced into the text — LLaVA-NeXT, LLaVA-OneVision, InternVL, Mistral 3 and SmolVLM.

Each builds the family's real model, config and processor classes over a byte-level BPE tokenizer trained here, with
a chat template of the family's real shape (who writes BOS, where the image placeholder goes), and saves them so
they load back through AutoProcessor / AutoModelForImageTextToText. Vision towers are 32 wide and 2 deep, text models
64 wide and 2 deep, images at most 64 px a side; the families that tile an image by its size (LLaVA-NeXT and
OneVision's any-res grid, InternVL's crops, SmolVLM's splitting) keep a tiling, on a small grid, so image token
counts still differ from image to image. OneVision, InternVL and SmolVLM processors want a video processor, which
needs torchvision (it does not load beside the CPU torch here): their fixture processors are subclasses of the real
class without the video slot, registered with AutoProcessor.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.tiny_models import _SEED, _save, _tokenizer

# LLaVA-NeXT (llava-v1.6-mistral): "[INST] <image>\n… [/INST]"; BOS comes from the tokenizer.
_LLAVA_NEXT_TEMPLATE = (
    "{% for m in messages %}{% if m['role'] == 'user' %}[INST] "
    "{% if m['content'] is string %}{{ m['content'] }}{% else %}"
    "{% for p in m['content'] | selectattr('type', 'equalto', 'image') %}<image>\n{% endfor %}"
    "{% for p in m['content'] | selectattr('type', 'equalto', 'text') %}{{ p['text'] }}{% endfor %}{% endif %}"
    " [/INST]{% else %}{% if m['content'] is string %}{{ m['content'] }}{% else %}"
    "{% for p in m['content'] %}{{ p['text'] }}{% endfor %}{% endif %}{{ eos_token }}{% endif %}{% endfor %}"
)
# LLaVA-OneVision (Qwen2 ChatML): "<|im_start|>user <image>\n…<|im_end|>\n<|im_start|>assistant\n"; no BOS.
_ONEVISION_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }} "
    "{% if m['content'] is string %}{{ m['content'] }}{% else %}"
    "{% for p in m['content'] | selectattr('type', 'equalto', 'image') %}<image>{% endfor %}"
    "{% for p in m['content'] | selectattr('type', 'equalto', 'text') %}\n{{ p['text'] }}{% endfor %}{% endif %}"
    "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
# InternVL3-hf (Qwen2 ChatML): the image is "<IMG_CONTEXT>\n", which the processor wraps in <img>…</img>; no BOS.
_INTERNVL_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n"
    "{% if m['content'] is string %}{{ m['content'] }}{% else %}{% for p in m['content'] %}"
    "{% if p['type'] == 'image' %}<IMG_CONTEXT>\n{% elif p['type'] == 'text' %}{{ p['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
# Mistral Small 3.1: the template writes BOS and a system prompt itself; "[INST][IMG]…[/INST]", no generation prompt.
_MISTRAL3_TEMPLATE = (
    "{{ bos_token }}[SYSTEM_PROMPT]Answer briefly.[/SYSTEM_PROMPT]{% for m in messages %}"
    "{% if m['role'] == 'user' %}[INST]{% if m['content'] is string %}{{ m['content'] }}{% else %}"
    "{% for p in m['content'] %}{% if p['type'] == 'image' %}[IMG]{% elif p['type'] == 'text' %}{{ p['text'] }}"
    "{% endif %}{% endfor %}{% endif %}[/INST]"
    "{% else %}{% if m['content'] is string %}{{ m['content'] }}{% else %}"
    "{% for p in m['content'] %}{{ p['text'] }}{% endfor %}{% endif %}{{ eos_token }}{% endif %}{% endfor %}"
)
# SmolVLM-Instruct: "<|im_start|>User:<image>…<end_of_utterance>\nAssistant:"; <|im_start|> is its BOS.
_SMOLVLM_TEMPLATE = (
    "<|im_start|>{% for m in messages %}{{ m['role'] | capitalize }}"
    "{% if m['content'] is string %}: {{ m['content'] }}{% else %}"
    "{% if m['content'][0]['type'] == 'image' %}:{% else %}: {% endif %}{% for p in m['content'] %}"
    "{% if p['type'] == 'image' %}<image>{% elif p['type'] == 'text' %}{{ p['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<end_of_utterance>\n"
    "{% endfor %}{% if add_generation_prompt %}Assistant:{% endif %}"
)

# Vision towers: 32 wide, 2 layers.
_VISION = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2)
_QWEN_SPECIAL = {"eos": "<|im_end|>", "unk": "<unk>", "pad": "<|endoftext|>"}


def _qwen2_config(tok):
    from transformers import Qwen2Config

    return Qwen2Config(
        vocab_size=len(tok),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=512,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        tie_word_embeddings=False,
    )


def _mistral_config(tok):
    from transformers import MistralConfig

    return MistralConfig(
        vocab_size=len(tok),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        max_position_embeddings=512,
        sliding_window=None,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )


def _bos_from_tokenizer(tok):
    """The tokenizer itself puts BOS before every text (as Llama/Mistral tokenizers do), for templates that do not."""
    from tokenizers import processors

    bos = tok.bos_token
    tok._tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A", pair=f"{bos} $A {bos} $B", special_tokens=[(bos, tok.bos_token_id)]
    )
    return tok


def build_tiny_llava_next(dir) -> Path:
    """LLaVA-NeXT: CLIP vision (32 px tiles, 16 px patches) on an any-res grid of 32/64 px + 2-layer Mistral."""
    import torch
    from transformers import (
        CLIPVisionConfig,
        LlavaNextConfig,
        LlavaNextForConditionalGeneration,
        LlavaNextProcessor,
    )
    from transformers.models.llava_next.image_processing_pil_llava_next import LlavaNextImageProcessorPil

    tok = _bos_from_tokenizer(
        _tokenizer({"bos": "<s>", "eos": "</s>", "unk": "<unk>", "pad": "<pad>"}, ["<image>"], _LLAVA_NEXT_TEMPLATE)
    )
    grid = [[32, 32], [32, 64], [64, 32], [64, 64]]
    config = LlavaNextConfig(
        vision_config=CLIPVisionConfig(**_VISION, image_size=32, patch_size=16),
        text_config=_mistral_config(tok),
        image_grid_pinpoints=grid,
        vision_feature_select_strategy="default",
        vision_feature_layer=-1,
        image_token_index=tok.convert_tokens_to_ids("<image>"),
        pad_token_id=tok.pad_token_id,
    )
    torch.manual_seed(_SEED)
    model = LlavaNextForConditionalGeneration(config)
    image_processor = LlavaNextImageProcessorPil(
        size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32}, image_grid_pinpoints=grid
    )
    processor = LlavaNextProcessor(
        image_processor=image_processor,
        tokenizer=tok,
        patch_size=16,
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,
        chat_template=_LLAVA_NEXT_TEMPLATE,
    )
    return _save(model, tok, processor, dir)


BUILDERS: dict[str, Callable[[Path], Path]] = {
    "llava_next": build_tiny_llava_next,
}
