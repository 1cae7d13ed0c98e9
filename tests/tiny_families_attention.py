"""Tiny random-weight builders (see tests/tiny_families.py) for the families with attention of their own: Gemma 3
(sliding-window layers, bidirectional attention over each image's tokens), Llama 3.2 Vision (cross-attention to
the image states, cross_attention_mask, aspect-ratio tiles) and PaliGemma (prefix-LM: image and prompt attend to
each other bidirectionally; no chat template)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.tiny_models import _SEED, TINY_CONTEXT, _save, _tokenizer

# Gemma 3's sliding layers see this many tokens back; the tiny prompts are several times longer, so they slide.
GEMMA3_SLIDING_WINDOW = 8

_GEMMA3_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}"
    "{% if m['role'] == 'assistant' %}{% set role = 'model' %}{% else %}{% set role = m['role'] %}{% endif %}"
    "<start_of_turn>{{ role }}\n"
    "{% if m['content'] is string %}{{ m['content'] | trim }}{% else %}{% for p in m['content'] %}"
    "{% if p['type'] == 'image' %}<start_of_image>{% elif p['type'] == 'text' %}{{ p['text'] | trim }}{% endif %}"
    "{% endfor %}{% endif %}<end_of_turn>\n"
    "{% endfor %}{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
)
_MLLAMA_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<|start_header_id|>{{ m['role'] }}<|end_header_id|>\n\n"
    "{% if m['content'] is string %}{{ m['content'] | trim }}{% else %}{% for p in m['content'] %}"
    "{% if p['type'] == 'image' %}<|image|>{% elif p['type'] == 'text' %}{{ p['text'] | trim }}{% endif %}"
    "{% endfor %}{% endif %}<|eot_id|>"
    "{% endfor %}{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}"
)


def _named_tokenizer(special: dict[str, str], named: dict[str, str], extra: list[str], chat_template: str | None):
    """tests/tiny_models.py's byte-level BPE, with named special tokens (``tok.boi_token``, ``tok.image_token_id``)
    as the family's processor reads them."""
    from transformers import PreTrainedTokenizerFast

    base = _tokenizer(special, [*named.values(), *extra], chat_template or "")
    return PreTrainedTokenizerFast(
        tokenizer_object=base.backend_tokenizer,
        padding_side="left",  # given to the constructor, or it is not saved
        chat_template=chat_template,
        extra_special_tokens=named,
        **{f"{k}_token": v for k, v in special.items()},
    )


def build_tiny_gemma3(dir) -> Path:
    """Gemma 3: 64 px SigLIP (16 patches, pooled to 4 image tokens, bidirectional among themselves) + a 3-layer
    Gemma 3 text model whose sliding layers see GEMMA3_SLIDING_WINDOW tokens (sliding, full, sliding)."""
    import torch
    from transformers import (
        Gemma3Config,
        Gemma3ForConditionalGeneration,
        Gemma3Processor,
        Gemma3TextConfig,
        SiglipVisionConfig,
    )
    from transformers.models.gemma3.image_processing_pil_gemma3 import Gemma3ImageProcessorPil

    named = {"boi_token": "<start_of_image>", "eoi_token": "<end_of_image>", "image_token": "<image_soft_token>"}
    tok = _named_tokenizer(
        {"bos": "<bos>", "eos": "<end_of_turn>", "unk": "<unk>", "pad": "<pad>"},
        named,
        ["<start_of_turn>", "<eos>"],
        _GEMMA3_TEMPLATE,
    )
    text = Gemma3TextConfig(
        vocab_size=len(tok),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=3,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        query_pre_attn_scalar=16,
        max_position_embeddings=TINY_CONTEXT,
        sliding_window=GEMMA3_SLIDING_WINDOW,
        layer_types=["sliding_attention", "full_attention", "sliding_attention"],
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )
    vision = SiglipVisionConfig(
        hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2, image_size=64, patch_size=16
    )
    config = Gemma3Config(
        text_config=text,
        vision_config=vision,
        mm_tokens_per_image=4,  # 4×4 patches average-pooled 2×2
        boi_token_index=tok.boi_token_id,
        eoi_token_index=tok.convert_tokens_to_ids("<end_of_image>"),
        image_token_index=tok.image_token_id,
    )
    torch.manual_seed(_SEED)
    model = Gemma3ForConditionalGeneration(config)
    image_processor = Gemma3ImageProcessorPil(size={"height": 64, "width": 64})
    processor = Gemma3Processor(
        image_processor=image_processor, tokenizer=tok, image_seq_length=4, chat_template=_GEMMA3_TEMPLATE
    )
    return _save(model, tok, processor, dir)


def build_tiny_mllama(dir) -> Path:
    """Llama 3.2 Vision: a 32 px-tile vision encoder (up to 4 tiles by aspect ratio, 4 patches + CLS each) whose
    states a 3-layer Llama reaches through one cross-attention layer (layer 1); the prompt holds one <|image|>."""
    import torch
    from transformers import MllamaConfig, MllamaForConditionalGeneration, MllamaProcessor
    from transformers.models.mllama.configuration_mllama import MllamaTextConfig, MllamaVisionConfig
    from transformers.models.mllama.image_processing_pil_mllama import MllamaImageProcessorPil

    tok = _tokenizer(
        {"bos": "<|begin_of_text|>", "eos": "<|eot_id|>", "unk": "<unk>", "pad": "<|finetune_right_pad_id|>"},
        ["<|start_header_id|>", "<|end_header_id|>", "<|image|>", "<|python_tag|>", "<|end_of_text|>"],
        _MLLAMA_TEMPLATE,
    )
    vision = MllamaVisionConfig(
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_global_layers=1,
        attention_heads=2,
        image_size=32,
        patch_size=16,
        max_num_tiles=4,
        intermediate_layers_indices=[0, 1],
        vision_output_dim=32 * 3,  # the last state and the two intermediate ones, concatenated
    )
    text = MllamaTextConfig(
        vocab_size=len(tok),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=3,
        num_attention_heads=4,
        num_key_value_heads=2,
        cross_attention_layers=[1],
        max_position_embeddings=TINY_CONTEXT,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )
    config = MllamaConfig(
        vision_config=vision, text_config=text, image_token_index=tok.convert_tokens_to_ids("<|image|>")
    )
    torch.manual_seed(_SEED)
    model = MllamaForConditionalGeneration(config)
    image_processor = MllamaImageProcessorPil(size={"height": 32, "width": 32}, max_image_tiles=4)
    processor = MllamaProcessor(image_processor=image_processor, tokenizer=tok, chat_template=_MLLAMA_TEMPLATE)
    return _save(model, tok, processor, dir)


def build_tiny_paligemma(dir) -> Path:
    """PaliGemma 2 as its checkpoints are: no chat template (the processor lays out image tokens, BOS, the prompt and
    "\n"), 64 px SigLIP (16 image tokens), a 2-layer Gemma 2 with the prefix (image and prompt) attending to itself
    bidirectionally."""
    import torch
    from transformers import (
        Gemma2Config,
        PaliGemmaConfig,
        PaliGemmaForConditionalGeneration,
        PaliGemmaProcessor,
        SiglipVisionConfig,
    )
    from transformers.models.siglip.image_processing_pil_siglip import SiglipImageProcessorPil

    tok = _named_tokenizer(
        {"bos": "<bos>", "eos": "<eos>", "unk": "<unk>", "pad": "<pad>"}, {"image_token": "<image>"}, [], None
    )
    image_processor = SiglipImageProcessorPil(size={"height": 64, "width": 64})
    image_processor.image_seq_length = 16  # what PaliGemmaProcessor reads (preprocessor_config.json holds it)
    # The processor adds PaliGemma's <loc…> and <seg…> tokens to the tokenizer: the vocabulary is counted after.
    processor = PaliGemmaProcessor(image_processor=image_processor, tokenizer=tok)
    text = Gemma2Config(
        vocab_size=len(tok),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        query_pre_attn_scalar=16,
        max_position_embeddings=TINY_CONTEXT,
        sliding_window=512,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )
    vision = SiglipVisionConfig(
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        image_size=64,
        patch_size=16,
        vision_use_head=False,
    )
    config = PaliGemmaConfig(
        text_config=text,
        vision_config=vision,
        image_token_index=tok.image_token_id,
        projection_dim=64,
        hidden_size=64,
        vocab_size=len(tok),
    )
    torch.manual_seed(_SEED)
    model = PaliGemmaForConditionalGeneration(config)
    return _save(model, tok, processor, dir)


BUILDERS: dict[str, Callable[[Path], Path]] = {
    "gemma3": build_tiny_gemma3,
    "mllama": build_tiny_mllama,
    "paligemma": build_tiny_paligemma,
}
