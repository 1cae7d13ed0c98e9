"""Tiny random-weight models saved to disk, so tests load them through the same Auto* code path as a 7B model.

Plain functions (no pytest): each builds a model, a byte-level BPE tokenizer trained here (no hub download) and,
for VLMs, a processor, then ``save_pretrained``s everything into ``dir`` and returns it. Weights come from a
fixed torch seed, so every build is identical.
"""

from __future__ import annotations

from pathlib import Path

# Sentences the tokenizer learns its merges from; they also make readable test prompts.
_CORPUS = [
    "What is shown in the image? Answer with the letter of the option.",
    "Is there a cat in the image? Please answer yes or no.",
    "A. a red car B. a blue boat C. a green tree D. a dog on the grass",
    "The answer is A. The answer is B. The answer is C. The answer is D.",
    "Question: how many people are standing near the table in this photo?",
    "Yes, there is a person. No, there is no bicycle in the picture.",
]
_VOCAB_SIZE = 400
_SEED = 0
# Every tiny model takes prompts this long: real chat templates (an LLM extractor's or judge's) run to 700 tokens
# of this tokenizer, and `transformers serve` (5.25 on) refuses a prompt longer than the model's context. The size
# of the rotary embedding's table costs no weights, so the models stay as small.
TINY_CONTEXT = 4096

# Chat templates render {"type": "image"} parts as the family's image placeholder; string content also works,
# which is what text-only chat models expect.
_LLAVA_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}"
    "{% if m['role'] == 'user' %}USER: {% else %}ASSISTANT: {% endif %}"
    "{% if m['content'] is string %}{{ m['content'] }}{% else %}{% for p in m['content'] %}"
    "{% if p['type'] == 'image' %}<image>\n{% elif p['type'] == 'text' %}{{ p['text'] }}{% endif %}"
    "{% endfor %}{% endif %}"
    "{% if m['role'] == 'user' %} {% else %}{{ eos_token }}{% endif %}"
    "{% endfor %}{% if add_generation_prompt %}ASSISTANT:{% endif %}"
)
_IDEFICS3_TEMPLATE = (
    "<|im_start|>{% for m in messages %}"
    "{{ m['role'] | capitalize }}:"
    "{% if m['content'] is string %}{{ m['content'] }}{% else %}{% for p in m['content'] %}"
    "{% if p['type'] == 'image' %}<image>{% elif p['type'] == 'text' %}{{ p['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<end_of_utterance>\n"
    "{% endfor %}{% if add_generation_prompt %}Assistant:{% endif %}"
)
_TEXT_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|>\n"
    "{% if m['content'] is string %}{{ m['content'] }}{% else %}{% for p in m['content'] %}"
    "{% if p['type'] == 'text' %}{{ p['text'] }}{% endif %}{% endfor %}{% endif %}{{ eos_token }}\n"
    "{% endfor %}{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)


def _tokenizer(special: dict[str, str], extra: list[str], chat_template: str):
    """A byte-level BPE trained on _CORPUS; ``special`` maps bos/eos/unk/pad to tokens, ``extra`` are more."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    specials = list(dict.fromkeys([*special.values(), *extra]))
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=_VOCAB_SIZE,
        special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),  # every byte encodable: no unknown tokens
        show_progress=False,
    )
    tok.train_from_iterator(_CORPUS, trainer)
    # padding_side must go to the constructor: set afterwards it is not saved (see notes-tiny-vlms.md).
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        padding_side="left",
        chat_template=chat_template,
        extra_special_tokens=extra,
        **{f"{k}_token": v for k, v in special.items()},
    )


def _llama_config(tok, **kw):
    from transformers import LlamaConfig

    return LlamaConfig(
        vocab_size=len(tok),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=TINY_CONTEXT,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        **kw,
    )


def _save(model, tok, processor, dir) -> Path:
    import torch

    out = Path(dir)
    out.mkdir(parents=True, exist_ok=True)
    model.generation_config.eos_token_id = tok.eos_token_id
    model.generation_config.pad_token_id = tok.pad_token_id
    model.to(torch.float32).save_pretrained(out)
    (processor or tok).save_pretrained(out)
    return out


def build_tiny_llava(dir) -> Path:
    """LLaVA: CLIP vision tower (64 px, 16 px patches → 16 image tokens) + 2-layer Llama."""
    import torch
    from transformers import CLIPVisionConfig, LlavaConfig, LlavaForConditionalGeneration, LlavaProcessor
    from transformers.models.clip.image_processing_pil_clip import CLIPImageProcessorPil

    tok = _tokenizer({"bos": "<s>", "eos": "</s>", "unk": "<unk>", "pad": "<pad>"}, ["<image>"], _LLAVA_TEMPLATE)
    image_token_id = tok.convert_tokens_to_ids("<image>")
    config = LlavaConfig(
        vision_config=CLIPVisionConfig(
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=2,
            image_size=64,
            patch_size=16,
        ),
        text_config=_llama_config(tok),
        image_seq_length=16,
        vision_feature_select_strategy="default",
        vision_feature_layer=-1,
        image_token_index=image_token_id,
        pad_token_id=tok.pad_token_id,
    )
    torch.manual_seed(_SEED)
    model = LlavaForConditionalGeneration(config)
    # CLIPImageProcessorPil: the plain CLIPImageProcessor needs torchvision, which does not load here.
    image_processor = CLIPImageProcessorPil(size={"shortest_edge": 64}, crop_size={"height": 64, "width": 64})
    processor = LlavaProcessor(
        image_processor=image_processor,
        tokenizer=tok,
        patch_size=16,
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,
        chat_template=_LLAVA_TEMPLATE,
    )
    return _save(model, tok, processor, dir)


def build_tiny_idefics3(dir) -> Path:
    """Idefics3: 64 px SigLIP-like vision (16 patches, pixel shuffle ×2 → 4 image tokens) + 2-layer Llama."""
    import torch
    from transformers import Idefics3Config, Idefics3ForConditionalGeneration, Idefics3Processor
    from transformers.models.idefics3.image_processing_pil_idefics3 import Idefics3ImageProcessorPil

    extra = ["<fake_token_around_image>", "<image>", "<global-img>", "<end_of_utterance>"]
    tok = _tokenizer(
        {"bos": "<|im_start|>", "eos": "<end_of_utterance>", "unk": "<unk>", "pad": "<pad>"},
        extra,
        _IDEFICS3_TEMPLATE,
    )
    config = Idefics3Config(
        vision_config=dict(
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=2,
            image_size=64,
            patch_size=16,
        ),
        text_config=_llama_config(tok),
        scale_factor=2,
        image_token_id=tok.convert_tokens_to_ids("<image>"),
        pad_token_id=tok.pad_token_id,  # the config default (128002) is outside this vocabulary
    )
    torch.manual_seed(_SEED)
    model = Idefics3ForConditionalGeneration(config)
    # No splitting and a 64 px longest edge keep one 64×64-at-most image (4 tokens) per picture.
    image_processor = Idefics3ImageProcessorPil(
        do_image_splitting=False, size={"longest_edge": 64}, max_image_size={"longest_edge": 64}
    )
    processor = Idefics3Processor(
        image_processor=image_processor, tokenizer=tok, image_seq_len=4, chat_template=_IDEFICS3_TEMPLATE
    )
    return _save(model, tok, processor, dir)


def build_tiny_text_lm(dir) -> Path:
    """A 2-layer Llama causal LM with a chat template, for text-only runs (loads via AutoModelForCausalLM)."""
    import torch
    from transformers import LlamaForCausalLM

    tok = _tokenizer(
        {"bos": "<s>", "eos": "</s>", "unk": "<unk>", "pad": "<pad>"},
        ["<|user|>", "<|assistant|>"],
        _TEXT_TEMPLATE,
    )
    torch.manual_seed(_SEED)
    model = LlamaForCausalLM(_llama_config(tok))
    return _save(model, tok, None, dir)
