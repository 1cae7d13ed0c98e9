"""Tiny random-weight builders (see tests/tiny_families.py): decoders with 1-D rotary positions whose image tokens
are spliced into the text — LLaVA-NeXT, LLaVA-OneVision, InternVL, Mistral 3 and SmolVLM.

Each builds the family's real model, config and processor classes over a byte-level BPE tokenizer trained here, with
a chat template of the family's real shape (who writes BOS, where the image placeholder goes), and saves them so
they load back through AutoProcessor / AutoModelForImageTextToText. Vision towers are 32 wide and 2 deep, text models
64 wide and 2 deep, images at most 64 px a side; the families that tile an image by its size (LLaVA-NeXT and
OneVision's any-res grid, InternVL's crops, SmolVLM's splitting) keep a tiling, on a small grid, so image token
counts still differ from image to image. OneVision, InternVL and SmolVLM processors want a video processor, which
needs torchvision (it does not load beside the CPU torch here): their fixture processors are subclasses of the real
class without the video slot, registered with AutoProcessor. Mistral 3's PixtralProcessor is the real class, imported
past the one torchvision-only import of its module (see _pixtral_processor).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.tiny_models import _SEED, TINY_CONTEXT, _llama_config, _save, _tokenizer

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
    "{% for p in m['content'] | selectattr('type', 'equalto', 'text') %}{{ '\\n' + p['text'] }}{% endfor %}"
    "{% endif %}"
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
        max_position_embeddings=TINY_CONTEXT,
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
        max_position_embeddings=TINY_CONTEXT,
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


def _no_video_processors() -> dict[str, type]:
    """model_type → a subclass of the family's real processor without the video slot (its video processor needs
    torchvision). Each __init__ takes the real one's parameters but ``video_processor`` (transformers saves and
    reloads exactly the parameters an __init__ names), sets what the real one sets and calls ProcessorMixin.__init__
    with the image processor and the tokenizer only. Registered with AutoProcessor for the family's config, so a
    saved model loads back through it."""
    if "smolvlm" in _FIXTURE_PROCESSORS:  # registered already
        return _FIXTURE_PROCESSORS
    import re

    from transformers import (
        AutoProcessor,
        InternVLConfig,
        InternVLProcessor,
        LlavaOnevisionConfig,
        LlavaOnevisionProcessor,
        ProcessorMixin,
        SmolVLMConfig,
        SmolVLMProcessor,
    )

    class LlavaOnevisionProcessorNoVideo(LlavaOnevisionProcessor):
        def __init__(
            self,
            image_processor=None,
            tokenizer=None,
            num_image_tokens=None,
            vision_feature_select_strategy=None,
            chat_template=None,
            image_token="<image>",
            video_token="<video>",
            vision_aspect_ratio="anyres_max_9",
            **kwargs,
        ):
            self.num_image_tokens = num_image_tokens
            self.vision_feature_select_strategy = vision_feature_select_strategy
            self.image_token, self.video_token = image_token, video_token
            self.image_token_id = tokenizer.convert_tokens_to_ids(image_token)
            self.video_token_id = tokenizer.convert_tokens_to_ids(video_token)
            self.vision_aspect_ratio = vision_aspect_ratio
            ProcessorMixin.__init__(self, image_processor, tokenizer, chat_template=chat_template)

    class InternVLProcessorNoVideo(InternVLProcessor):
        def __init__(self, image_processor=None, tokenizer=None, image_seq_length=256, chat_template=None, **kwargs):
            ProcessorMixin.__init__(self, image_processor, tokenizer, chat_template=chat_template)
            self.image_seq_length = image_seq_length
            self.start_image_token = tokenizer.start_image_token
            self.end_image_token = tokenizer.end_image_token
            self.start_image_token_id = tokenizer.start_image_token_id
            self.end_image_token_id = tokenizer.end_image_token_id
            self.image_token = tokenizer.context_image_token
            self.video_token = tokenizer.video_token
            self.image_token_id = tokenizer.context_image_token_id
            self.multimodal_pattern = re.compile(
                f"(?P<image>{re.escape(self.image_token)})|(?P<video>{re.escape(self.video_token)})"
            )

    class SmolVLMProcessorNoVideo(SmolVLMProcessor):
        # The real __init__ also insists on num2words, which only its video prompts use.
        def __init__(self, image_processor, tokenizer, image_seq_len=169, chat_template=None, **kwargs):
            self.fake_image_token = getattr(tokenizer, "fake_image_token", "<fake_token_around_image>")
            self.image_token = getattr(tokenizer, "image_token", "<image>")
            self.image_token_id = tokenizer.convert_tokens_to_ids(self.image_token)
            self.end_of_utterance_token = getattr(tokenizer, "end_of_utterance_token", "<end_of_utterance>")
            self.global_image_token = getattr(tokenizer, "global_image_token", "<global-img>")
            self.image_seq_len = image_seq_len
            self.video_token = getattr(tokenizer, "video_token", "<video>")
            ProcessorMixin.__init__(self, image_processor, tokenizer, chat_template=chat_template)

        def apply_chat_template(self, conversation, chat_template=None, **kwargs):
            # The real one only adds its video processor's frame defaults, then renders as every processor does.
            return ProcessorMixin.apply_chat_template(self, conversation, chat_template, **kwargs)

    for model_type, config, cls in (
        ("llava_onevision", LlavaOnevisionConfig, LlavaOnevisionProcessorNoVideo),
        ("internvl", InternVLConfig, InternVLProcessorNoVideo),
        ("smolvlm", SmolVLMConfig, SmolVLMProcessorNoVideo),
    ):
        AutoProcessor.register(config, cls, exist_ok=True)
        _FIXTURE_PROCESSORS[model_type] = cls
    return _FIXTURE_PROCESSORS


_FIXTURE_PROCESSORS: dict[str, type] = {}  # model_type → the fixture's processor class, registered once


def _pixtral_processor() -> type:
    """PixtralProcessor, the real class, as a subclass registered with AutoProcessor for Mistral 3.

    transformers 5.24's processing_pixtral imports one helper, get_resize_output_image_size (used only by
    _get_num_multimodal_tokens), from the torchvision image processor's module, whose first lines import
    torchvision; so without torchvision ``transformers.PixtralProcessor`` is a placeholder. The Pil image
    processor's module defines the same helper: the processor module is imported once with a stand-in for the
    torchvision module that holds just that helper, and the stand-in is removed again at once."""
    if "mistral3" in _FIXTURE_PROCESSORS:
        return _FIXTURE_PROCESSORS["mistral3"]
    import importlib
    import sys
    import types

    from transformers import AutoProcessor, Mistral3Config
    from transformers.models.pixtral import image_processing_pil_pixtral

    torchvision_module = "transformers.models.pixtral.image_processing_pixtral"
    stand_in = torchvision_module not in sys.modules
    if stand_in:
        module = types.ModuleType(torchvision_module)
        module.get_resize_output_image_size = image_processing_pil_pixtral.get_resize_output_image_size  # type: ignore[attr-defined]
        sys.modules[torchvision_module] = module
    try:
        real = importlib.import_module("transformers.models.pixtral.processing_pixtral").PixtralProcessor
    finally:
        if stand_in:
            del sys.modules[torchvision_module]
    cls = type("PixtralProcessorPil", (real,), {"__module__": __name__})
    AutoProcessor.register(Mistral3Config, cls, exist_ok=True)
    _FIXTURE_PROCESSORS["mistral3"] = cls
    return cls


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


def build_tiny_llava_onevision(dir) -> Path:
    """LLaVA-OneVision: SigLIP vision (32 px tiles, 16 px patches, all features) on an any-res grid of 32/64 px,
    image newlines, + 2-layer Qwen2."""
    import torch
    from transformers import LlavaOnevisionConfig, LlavaOnevisionForConditionalGeneration, SiglipVisionConfig
    from transformers.models.llava_onevision.image_processing_pil_llava_onevision import (
        LlavaOnevisionImageProcessorPil,
    )

    tok = _tokenizer(_QWEN_SPECIAL, ["<|im_start|>", "<image>", "<video>"], _ONEVISION_TEMPLATE)
    grid = [[32, 32], [32, 64], [64, 32], [64, 64]]
    config = LlavaOnevisionConfig(
        vision_config=SiglipVisionConfig(**_VISION, image_size=32, patch_size=16),
        text_config=_qwen2_config(tok),
        image_grid_pinpoints=grid,
        vision_feature_select_strategy="full",
        vision_feature_layer=-1,
        vision_aspect_ratio="anyres_max_9",
        image_token_index=tok.convert_tokens_to_ids("<image>"),
        video_token_index=tok.convert_tokens_to_ids("<video>"),
        pad_token_id=tok.pad_token_id,
    )
    torch.manual_seed(_SEED)
    model = LlavaOnevisionForConditionalGeneration(config)
    image_processor = LlavaOnevisionImageProcessorPil(size={"height": 32, "width": 32}, image_grid_pinpoints=grid)
    processor = _no_video_processors()["llava_onevision"](
        image_processor=image_processor,
        tokenizer=tok,
        num_image_tokens=4,
        vision_feature_select_strategy="full",
        vision_aspect_ratio="anyres_max_9",
        chat_template=_ONEVISION_TEMPLATE,
    )
    return _save(model, tok, processor, dir)


def build_tiny_internvl(dir) -> Path:
    """InternVL: InternViT-like vision (32 px crops, 8 px patches, pixel shuffle 0.5 → 4 tokens a crop), up to 4
    crops and a thumbnail per image, + 2-layer Qwen2."""
    import torch
    from transformers import InternVLConfig, InternVLForConditionalGeneration, InternVLVisionConfig
    from transformers.models.got_ocr2.image_processing_pil_got_ocr2 import GotOcr2ImageProcessorPil

    named = {"start_image": "<img>", "end_image": "</img>", "context_image": "<IMG_CONTEXT>", "video": "<video>"}
    tok = _tokenizer({**_QWEN_SPECIAL, **named}, ["<|im_start|>"], _INTERNVL_TEMPLATE)
    config = InternVLConfig(
        vision_config=InternVLVisionConfig(**_VISION, image_size=32, patch_size=8),
        text_config=_qwen2_config(tok),
        image_token_id=tok.convert_tokens_to_ids("<IMG_CONTEXT>"),
        image_seq_length=4,
        downsample_ratio=0.5,
        vision_feature_layer=-1,
        vision_feature_select_strategy="default",
        pad_token_id=tok.pad_token_id,
        tie_word_embeddings=False,  # tied, a 2-layer random model only repeats the prompt's last token
    )
    torch.manual_seed(_SEED)
    model = InternVLForConditionalGeneration(config)
    image_processor = GotOcr2ImageProcessorPil(
        size={"height": 32, "width": 32}, crop_to_patches=True, min_patches=1, max_patches=4
    )
    processor = _no_video_processors()["internvl"](
        image_processor=image_processor, tokenizer=tok, image_seq_length=4, chat_template=_INTERNVL_TEMPLATE
    )
    return _save(model, tok, processor, dir)


def build_tiny_mistral3(dir) -> Path:
    """Mistral 3: Pixtral vision (8 px patches, images up to 64 px at their own aspect ratio, 2×2 patch merge,
    [IMG_BREAK] after each row) + 2-layer Mistral; the template writes BOS, and so would the tokenizer."""
    import torch
    from transformers import Mistral3Config, Mistral3ForConditionalGeneration, PixtralVisionConfig
    from transformers.models.pixtral.image_processing_pil_pixtral import PixtralImageProcessorPil

    controls = ["[IMG]", "[IMG_BREAK]", "[IMG_END]", "[INST]", "[/INST]", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]"]
    tok = _bos_from_tokenizer(
        _tokenizer({"bos": "<s>", "eos": "</s>", "unk": "<unk>", "pad": "<pad>"}, controls, _MISTRAL3_TEMPLATE)
    )
    config = Mistral3Config(
        vision_config=PixtralVisionConfig(**_VISION, head_dim=16, image_size=64, patch_size=8),
        text_config=_mistral_config(tok),
        image_token_index=tok.convert_tokens_to_ids("[IMG]"),
        spatial_merge_size=2,
        vision_feature_layer=-1,
        pad_token_id=tok.pad_token_id,
        tie_word_embeddings=False,  # tied, a 2-layer random model only repeats the prompt's last token
    )
    torch.manual_seed(_SEED)
    model = Mistral3ForConditionalGeneration(config)
    image_processor = PixtralImageProcessorPil(size={"longest_edge": 64}, patch_size={"height": 8, "width": 8})
    processor = _pixtral_processor()(
        image_processor=image_processor,
        tokenizer=tok,
        patch_size=8,
        spatial_merge_size=2,
        chat_template=_MISTRAL3_TEMPLATE,
    )
    return _save(model, tok, processor, dir)


def build_tiny_smolvlm(dir) -> Path:
    """SmolVLM: SigLIP-like vision (32 px tiles, 8 px patches, pixel shuffle ×2 → 4 tokens a tile), images split
    into up to 2×2 tiles of 32 px plus a global one, + 2-layer Llama (SmolLM2)."""
    import torch
    from transformers import SmolVLMConfig, SmolVLMForConditionalGeneration
    from transformers.models.smolvlm.image_processing_pil_smolvlm import SmolVLMImageProcessorPil

    tiles = [f"<row_{r}_col_{c}>" for r in (1, 2) for c in (1, 2)]
    extra = ["<fake_token_around_image>", "<image>", "<global-img>", "<end_of_utterance>", *tiles]
    tok = _tokenizer(
        {"bos": "<|im_start|>", "eos": "<end_of_utterance>", "unk": "<unk>", "pad": "<pad>"}, extra, _SMOLVLM_TEMPLATE
    )
    config = SmolVLMConfig(
        vision_config=dict(**_VISION, image_size=32, patch_size=8),
        text_config=_llama_config(tok),
        scale_factor=2,
        image_token_id=tok.convert_tokens_to_ids("<image>"),
        pad_token_id=tok.pad_token_id,
    )
    torch.manual_seed(_SEED)
    model = SmolVLMForConditionalGeneration(config)
    image_processor = SmolVLMImageProcessorPil(
        do_image_splitting=True, size={"longest_edge": 64}, max_image_size={"longest_edge": 32}
    )
    processor = _no_video_processors()["smolvlm"](
        image_processor=image_processor, tokenizer=tok, image_seq_len=4, chat_template=_SMOLVLM_TEMPLATE
    )
    return _save(model, tok, processor, dir)


BUILDERS: dict[str, Callable[[Path], Path]] = {
    "llava_next": build_tiny_llava_next,
    "llava_onevision": build_tiny_llava_onevision,
    "internvl": build_tiny_internvl,
    "mistral3": build_tiny_mistral3,
    "smolvlm": build_tiny_smolvlm,
}
