"""Prompt presets: the prompts a run asks with, named. `vlmdesk` (the default) is vlmdesk's own templates
(evaluator/engine/prompts.py); `vlmevalkit` is the prompt VLMEvalKit builds for MMBench-style multiple choice and POPE
with
the model class that serves the model's family, so a run can be compared with VLMEvalKit's leaderboard.

The VLMEvalKit texts below were written from the facts of VLMEvalKit's code at commit VLMEVALKIT_COMMIT
(docs/adr/0030-prompt-presets.md has the table of families, classes and files); tests/data/vlmevalkit_prompts.json
holds prompts that VLMEvalKit's own code built for real-looking rows, and tests/evaluator/test_prompt_presets.py
checks that a run stores exactly those. Beside the text, a preset carries the setup VLMEvalKit's class and config
entry give the family (SETUPS, `preset_setup`): its system prompt and the image processor's pixel bounds or tile
count (and a repetition penalty VLMEvalKit sets explicitly), added to the run's model spec and --system where the
user set none. The chat template and the image's place stay the model's processor's (docs/reproducing.md says where
VLMEvalKit differs there).

`--prompt vlmevalkit` resolves to `vlmevalkit:<model_type>` for an hf: model of a family below (its config.json's
model_type, read without loading weights), and to `vlmevalkit:default` — the dataset's own prompt, what VLMEvalKit
asks API models with — for openai: servers, baselines and unknown families.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qsl, urlencode

from db.errors import InvalidInput
from db.runs import Run
from evaluator.engine.prompts import PromptTemplate, default_template, load_template

VLMEVALKIT_COMMIT = "e8e78f05f3080fe28154f2130321f17951c3be94"
VLMDESK = "vlmdesk"
VLMEVALKIT = "vlmevalkit"
DEFAULT_FAMILY = "default"


@dataclass(frozen=True)
class Preset:
    """VLMEvalKit's prompts for one model class: multiple choice (MMBench-style), yes/no (POPE), open questions."""

    source: str  # the VLMEvalKit class and file whose prompt this is
    mcq: PromptTemplate
    yesno: PromptTemplate
    open: PromptTemplate

    def template(self, kind: str) -> PromptTemplate:
        return self.mcq if kind == "mcq" else self.open if kind == "open" else self.yesno


_QUESTION = PromptTemplate({"en": "{question}"})  # ImageBaseDataset.build_prompt: the question as it is

# ImageMCQDataset.build_prompt (vlmeval/dataset/image_mcq.py): English whatever the language, "Hint: " lines, and
# an instruction ending in a space and a newline. POPE (image_yorn.py, ImageBaseDataset): the question alone.
DATASET = Preset(
    "ImageMCQDataset.build_prompt (vlmeval/dataset/image_mcq.py), ImageYORNDataset (image_yorn.py)",
    PromptTemplate(
        {
            "en": "{hint}Question: {question}\nOptions:\n{options}\nPlease select the correct answer from the options "
            "above. \n"
        },
        hint_prefix="Hint: ",
    ),
    _QUESTION,
    _QUESTION,
)
# LLaVA.build_prompt and LLaVA_Next.build_prompt (vlmeval/vlm/llava/llava.py), InternVLChat through
# build_multi_choice_prompt (vlmeval/vlm/internvl/utils.py): the bare hint on its own line, the question, the
# option lines, then the instruction — Chinese when the texts hold Chinese. Yes/no: the dataset's prompt.
_LLAVA_MCQ = PromptTemplate(
    {
        "en": "{hint}{question}\n{options}\nAnswer with the option's letter from the given choices directly.",
        "zh": "{hint}{question}\n{options}\n请直接回答选项字母。",
    },
    hint_prefix="",
    language_from_text=True,
)
# Qwen2VLPromptMixin._build_mcq_prompt / _build_yorn_prompt (vlmeval/vlm/qwen2_vl/prompt.py), with the class's
# default use_custom_prompt=True (Qwen2-VL's entries in vlmeval/config.py).
_QWEN2_VL = Preset(
    "Qwen2VLChat (vlmeval/vlm/qwen2_vl/prompt.py, Qwen2VLPromptMixin)",
    PromptTemplate(
        {
            "en": "{hint}Question: {question}\nOptions:\n{options}\nPlease select the correct answer from the options "
            "above.",
            "zh": "{hint}Question: {question}\nOptions:\n{options}\n请直接回答选项字母。",
        },
        hint_prefix="Hint: ",
        language_from_text=True,
    ),
    PromptTemplate({"en": "{question} Please answer yes or no."}),
    _QUESTION,
)
# IDEFICS2.build_prompt_mmbench (vlmeval/vlm/idefics.py; config.py serves Idefics3 with it) and SmolVLM /
# SmolVLM2.build_prompt_mmbench (vlmeval/vlm/smolvlm.py): the dataset's prompt rewritten — question first, then the
# hint, "Choices:", "Answer with a letter." — for every language. POPE: the dataset's prompt (build_prompt_default).
_IDEFICS_MCQ = PromptTemplate(
    {"en": "Question: {question}\n{hint}Choices:\n{options}\nAnswer with a letter."}, hint_prefix="Hint: "
)


def _like_dataset(source: str) -> Preset:
    return Preset(source, DATASET.mcq, DATASET.yesno, DATASET.open)


# model_type (transformers' config.model_type, as in evaluator/backends/families.py) → the preset of the VLMEvalKit
# class
# that serves the family. A class without use_custom_prompt (or configured with use_custom_prompt=False) asks the
# dataset's prompt.
VLMEVALKIT_PRESETS: dict[str, Preset] = {
    "llava": Preset("LLaVA (vlmeval/vlm/llava/llava.py)", _LLAVA_MCQ, _QUESTION, _QUESTION),
    "llava_next": Preset("LLaVA_Next (vlmeval/vlm/llava/llava.py)", _LLAVA_MCQ, _QUESTION, _QUESTION),
    "llava_onevision": _like_dataset("LLaVA_OneVision_HF (vlmeval/vlm/llava/llava.py): no custom prompt"),
    "qwen2_vl": _QWEN2_VL,
    "qwen2_5_vl": _like_dataset("Qwen2VLChat with use_custom_prompt=False (Qwen2.5-VL's entries in vlmeval/config.py)"),
    "qwen3_vl": _like_dataset("Qwen3VLChat with use_custom_prompt=False (Qwen3-VL's entries in vlmeval/config.py)"),
    "gemma3": _like_dataset("Gemma3 (vlmeval/vlm/gemma.py): no custom prompt"),
    "internvl": Preset(
        "InternVLChat (vlmeval/vlm/internvl/internvl_chat.py, utils.build_multi_choice_prompt)",
        _LLAVA_MCQ,
        _QUESTION,
        _QUESTION,
    ),
    "idefics3": Preset("IDEFICS2 (vlmeval/vlm/idefics.py), build_prompt_mmbench", _IDEFICS_MCQ, _QUESTION, _QUESTION),
    "smolvlm": Preset("SmolVLM2 (vlmeval/vlm/smolvlm.py), build_prompt_mmbench", _IDEFICS_MCQ, _QUESTION, _QUESTION),
    "mistral3": _like_dataset("no VLMEvalKit class for Mistral 3: the dataset's prompt, as API models get"),
    "mllama": _like_dataset("llama_vision (vlmeval/vlm/llama_vision.py): custom prompts only for AI2D, MMMU, …"),
    "paligemma": _like_dataset("PaliGemma (vlmeval/vlm/gemma.py): no custom prompt"),
}
# Model types outside the families table whose checkpoints VLMEvalKit serves with one of the classes above: the
# original InternVL repositories (trust_remote_code) and Idefics2.
_ALIASES = {"internvl_chat": "internvl", "idefics2": "idefics3"}


# Where VLMEvalKit's class puts an item's several images (issue 37; read at VLMEVALKIT_COMMIT). The dataset's prompt
# (MMMUDataset.build_prompt → split_MMMU, vlmeval/dataset/image_mcq.py) puts image N where `<image N>` stands, the
# placeholder's text replaced: vlmdesk's own rule (base.image_parts), so every family not named here gets it. These
# classes build their own prompt, every image first and the placeholders left in the text:
#   qwen2_vl — Qwen2VLPromptMixin._build_mmmu_prompt / _build_mcq_prompt (vlmeval/vlm/qwen2_vl/prompt.py): the images,
#       then the text;
#   llava, llava_next — LLaVA.build_prompt / LLaVA_Next.build_prompt (vlmeval/vlm/llava/llava.py): the images, then
#       the text;
#   internvl — InternVLChat.build_prompt (text, then the images) through reorganize_prompt
#       (vlmeval/vlm/internvl/utils.py): with more than one image, "Image-1: <image>\nImage-2: <image>\n…" then the
#       text; one image first, then the text.
IMAGES_FIRST = frozenset({"qwen2_vl", "llava", "llava_next"})
LABELLED_IMAGES_FIRST = frozenset({"internvl"})


def place_images(preset: str | None, prompt: str, images: int) -> str:
    """The prompt of a pass of ``images`` images as the preset's VLMEvalKit class lays it out, in placeholders the
    backends read (base.image_parts): unchanged for vlmdesk's templates, template files and the families that get the
    dataset's prompt; for the classes above, `<image 1>…<image n>` (InternVL: labelled) before the text, so the
    question's own placeholders stay text. Unchanged where the result would be the same (no image placed by the
    question, and not InternVL's labels), so a run of one-image items asks what it always asked."""
    family = preset.removeprefix(f"{VLMEVALKIT}:") if preset and preset.startswith(f"{VLMEVALKIT}:") else None
    if images < 1 or family not in IMAGES_FIRST | LABELLED_IMAGES_FIRST:
        return prompt
    if family in LABELLED_IMAGES_FIRST and images > 1:
        return "".join(f"Image-{n}: <image {n}>\n" for n in range(1, images + 1)) + prompt
    from evaluator.backends.base import image_parts  # here: `vlmdesk runs` reads this module and no backend

    if image_parts(prompt, images) == [*range(images), prompt]:
        return prompt  # no placeholder places an image: every image goes first already
    return "".join(f"<image {n}>" for n in range(1, images + 1)) + prompt


@dataclass(frozen=True)
class Setup:
    """What VLMEvalKit sets up for a family beside the prompt's text: a system prompt and spec options (the image
    processor's pixel bounds / tile count, and generation settings it passes explicitly), with where each comes from.
    ``by_benchmark``: options that replace ``options`` for the benchmarks whose VLMEvalKit name matches."""

    source: str
    system: str | None = None
    options: tuple[tuple[str, int | float], ...] = ()
    by_benchmark: tuple[tuple[str, tuple[tuple[str, int | float], ...]], ...] = field(default=())

    def options_for(self, benchmark: str | None) -> dict[str, int | float]:
        chosen = dict(self.options)
        for pattern, options in self.by_benchmark:
            if benchmark is not None and re.search(pattern, benchmark):
                chosen |= dict(options)
                break
        return chosen


# Read from VLMEvalKit at VLMEVALKIT_COMMIT. Qwen2-VL / Qwen2.5-VL: vlmeval/config.py gives every Qwen2VLChat entry
# (Qwen2-VL-2B-Instruct, Qwen2.5-VL-3B-Instruct, …) min_pixels=1280*28*28 and max_pixels=16384*28*28;
# Qwen2VLChat._prepare_content (vlmeval/vlm/qwen2_vl/model.py) uses min_pixels=10*10*28*28 for OCRBench (max_pixels
# kept); its generate_kwargs pass repetition_penalty=1.0 (top_p=0.001, top_k=1, temperature=0.01: greedy in effect),
# where the checkpoints' generation_config.json may set another; system_prompt None (the template's default system
# message). The pixel bounds go to qwen_vl_utils' smart_resize, the same rule (factor 28) the processor applies.
_QWEN_PIXELS = (("min_pixels", 1280 * 28 * 28), ("max_pixels", 16384 * 28 * 28), ("repetition_penalty", 1.0))
_QWEN2_SETUP = Setup(
    "vlmeval/config.py Qwen2VLChat entries; Qwen2VLChat (vlmeval/vlm/qwen2_vl/model.py)",
    options=_QWEN_PIXELS,
    by_benchmark=((r"^OCRBench$", (("min_pixels", 10 * 10 * 28 * 28),)),),
)
# InternVLChat.set_max_num (vlmeval/vlm/internvl/internvl_chat.py): max_num tiles per image by dataset name (listinstr:
# a substring), 6 otherwise (MMBench, POPE, …); system_prompt None with cot_prompt_version v1 (the checkpoint's own).
# (Beside max_num, total_max_num 64 // images caps an item of more than ten images.)
_INTERNVL_SETUP = Setup(
    "InternVLChat.set_max_num (vlmeval/vlm/internvl/internvl_chat.py)",
    options=(("max_tiles", 6),),
    by_benchmark=(
        (r"ChartQA_TEST|MMMU_DEV_VAL|MMMU_TEST|MME-RealWorld|VCR_EN|VCR_ZH|OCRVQA|BMMR", (("max_tiles", 12),)),
        (r"DocVQA_VAL|DocVQA_TEST|DUDE|MMLongBench_DOC|SLIDEVQA", (("max_tiles", 18),)),
        (r"InfoVQA_VAL|InfoVQA_TEST|OCRBench|HRBench4K|HRBench8K", (("max_tiles", 24),)),
    ),
)
SETUPS: dict[str, Setup] = {
    # LLaVA.__init__ (vlmeval/vlm/llava/llava.py): the vicuna system prompt, written before "USER: ". Its trailing
    # space is left off: llava-hf's chat template writes a space after a system message's text itself.
    "llava": Setup(
        "LLaVA.system_prompt (vlmeval/vlm/llava/llava.py)",
        system="A chat between a curious human and an artificial intelligence assistant. The assistant gives "
        "helpful, detailed, and polite answers to the human's questions.",
    ),
    "qwen2_vl": _QWEN2_SETUP,
    "qwen2_5_vl": _QWEN2_SETUP,
    # Qwen3-VL's entries in config.py set no pixel bounds (the processor's own) and sample (temperature 0.7, top_p
    # 0.8, top_k 20, presence_penalty 1.5, through vLLM): not carried, docs/reproducing.md says why; repetition_penalty
    # 1.0 is. Qwen3VLChat uses min_pixels=10*10*32*32 for OCRBench.
    "qwen3_vl": Setup(
        "vlmeval/config.py Qwen3-VL entries; Qwen3VLChat (vlmeval/vlm/qwen3_vl/model.py)",
        options=(("repetition_penalty", 1.0),),
        by_benchmark=((r"^OCRBench$", (("min_pixels", 10 * 10 * 32 * 32),)),),
    ),
    # Gemma3.__init__ (vlmeval/vlm/gemma.py): system_prompt 'You are a helpful assistant. ' (trailing space kept: it
    # goes through the same chat template there).
    "gemma3": Setup("Gemma3.system_prompt (vlmeval/vlm/gemma.py)", system="You are a helpful assistant. "),
    "internvl": _INTERNVL_SETUP,
}


def preset_setup(preset: str | None, spec: str, *, benchmark: str | None = None) -> tuple[str, str | None]:
    """(the model spec with the preset's options added where the spec sets none, the preset's system prompt or
    None): what `vlmdesk run --prompt vlmevalkit…` and the app's run launcher ask with, so that a run is VLMEvalKit's
    setup and not only its text. ``benchmark``: the benchmark's VLMEvalKit name (e.g. OCRBench), for the settings
    VLMEvalKit chooses by dataset. Options go to hf: specs and openai: specs naming a server (OpenAI's own API takes
    none of them); a --system of the user's wins over the system prompt returned (the caller's choice)."""
    if preset is None or not preset.startswith(f"{VLMEVALKIT}:"):
        return spec, None
    vlmevalkit_preset(preset)  # InvalidInput for a name that is not a preset
    setup = SETUPS.get(preset.removeprefix(f"{VLMEVALKIT}:"))
    if setup is None:
        return spec, None
    return _with_options(spec, setup.options_for(benchmark)), setup.system


def _with_options(spec: str, options: dict[str, int | float]) -> str:
    scheme, _, rest = spec.partition(":")
    head, _, query = rest.partition("?")
    server = scheme == "openai" and re.search(r"@https?://", head) is not None
    if not options or not (scheme == "hf" or server):
        return spec
    present = {key for key, _ in parse_qsl(query, keep_blank_values=True)}
    added = [(k, str(v)) for k, v in options.items() if k not in present]
    if not added:
        return spec
    return f"{spec}{'&' if query else '?'}{urlencode(added)}"


def preset_names() -> tuple[str, ...]:
    """Every name `--prompt` takes besides a file: vlmdesk, vlmevalkit, vlmevalkit:default, vlmevalkit:<type>."""
    return (VLMDESK, VLMEVALKIT, f"{VLMEVALKIT}:{DEFAULT_FAMILY}", *(f"{VLMEVALKIT}:{t}" for t in VLMEVALKIT_PRESETS))


def vlmevalkit_preset(name: str) -> Preset:
    """The preset a resolved name ("vlmevalkit:qwen2_vl", "vlmevalkit:default") stands for; InvalidInput else."""
    family = name.removeprefix(f"{VLMEVALKIT}:") if name.startswith(f"{VLMEVALKIT}:") else None
    if family == DEFAULT_FAMILY:
        return DATASET
    if family is None or family not in VLMEVALKIT_PRESETS:
        raise InvalidInput(
            f"prompt preset {name[:60]!r} is not one of {VLMEVALKIT}:{DEFAULT_FAMILY}, "
            + ", ".join(f"{VLMEVALKIT}:{t}" for t in VLMEVALKIT_PRESETS)
        )
    return VLMEVALKIT_PRESETS[family]


def family_preset_name(model_type: str | None) -> str:
    """`vlmevalkit:<model_type>` for a family with a preset, else `vlmevalkit:default`."""
    found = _ALIASES.get(model_type or "", model_type)
    return f"{VLMEVALKIT}:{found if found in VLMEVALKIT_PRESETS else DEFAULT_FAMILY}"


@dataclass(frozen=True)
class ChosenPrompt:
    """What `--prompt` resolved to: the preset's name for the run's settings (None for vlmdesk's templates and
    template files, whose runs keep the identity they always had) and the template to store."""

    preset: str | None
    template: PromptTemplate
    note: str | None = None  # said once on the terminal (an unknown family asks the dataset's prompt)


def choose_prompt(choice: str | None, kind: str, model_spec: str) -> ChosenPrompt:
    """`--prompt`: vlmdesk (default), vlmevalkit (the model's family, read from an hf: model's config.json),
    vlmevalkit:<model_type> or vlmevalkit:default, or a template file. InvalidInput naming the problem."""
    if choice in (None, "", VLMDESK):
        return ChosenPrompt(None, default_template(kind))
    assert choice is not None
    if choice == VLMEVALKIT:
        model_type = model_type_of(model_spec)
        name = family_preset_name(model_type)
        note = None
        if model_spec.startswith("hf:") and name.endswith(f":{DEFAULT_FAMILY}"):
            note = (
                f"model type {str(model_type)[:60]!r} has no VLMEvalKit preset: the dataset's own prompt "
                f"({VLMEVALKIT}:{DEFAULT_FAMILY})"
            )
        return ChosenPrompt(name, vlmevalkit_preset(name).template(kind), note)
    if choice.startswith(f"{VLMEVALKIT}:"):
        return ChosenPrompt(choice, vlmevalkit_preset(choice).template(kind))
    return ChosenPrompt(None, load_template(choice, kind))


MAX_CONFIG_BYTES = 2**20  # a model's config.json holds a few KB


def model_type_of(model_spec: str) -> str | None:
    """The transformers model_type of an hf: spec's model, from its config.json (a local directory, or the hub
    cache — fetched like `from_pretrained` would when not there), never loading weights; None for other backends.
    The file is read through the importers' bounded door (a regular file of at most MAX_CONFIG_BYTES, JSON of bounded
    depth). InvalidInput when the config cannot be read."""
    if not model_spec.startswith("hf:"):
        return None
    from evaluator.backends.base import BackendError
    from evaluator.backends.hf import hf_options, require_hf
    from evaluator.formats.importers.common import Refused, json_loads, read_regular

    try:
        model, _ = hf_options(model_spec.removeprefix("hf:"))
    except BackendError as exc:
        raise InvalidInput(str(exc)) from None
    path = Path(model).expanduser()
    if not path.is_dir():  # the hub's client comes with transformers; the model would need it anyway
        require_hf(f"hf:{model[:200]}")
    try:
        if path.is_dir():
            config = path / "config.json"
        else:
            from huggingface_hub import hf_hub_download

            config = Path(hf_hub_download(model, "config.json"))
        loaded = json_loads(read_regular(config, MAX_CONFIG_BYTES, "limit for a config.json").decode("utf-8"))
    except Refused as exc:  # a FIFO, a device, a link to one, a file of gigabytes: said as it is
        raise InvalidInput(f"--prompt {VLMEVALKIT}: cannot read the model type of {model[:100]!r}: {exc}") from None
    except Exception as exc:  # OSError, the hub's errors (offline, not found), bad JSON
        raise InvalidInput(
            f"--prompt {VLMEVALKIT}: cannot read the model type of {model[:100]!r} (config.json: "
            f"{type(exc).__name__}); name the family instead: --prompt {VLMEVALKIT}:<model_type>"
        ) from None
    model_type = loaded.get("model_type") if isinstance(loaded, dict) else None
    return model_type if isinstance(model_type, str) else None


def describe_prompt(run: Run) -> str:
    """A run's prompt in a word for lists and reports: its preset's name, `vlmdesk` for vlmdesk's templates,
    `template file` for any other stored template, `imported` for a run made elsewhere (its prompts are not ours)."""
    from evaluator.engine.run_words import origin_of

    preset = run.config.get("prompt_preset")
    if isinstance(preset, str):
        return preset
    if origin_of(run) is not None:
        return "imported"
    kind = {"pope": "yesno", "open": "open"}.get(run.strategy, "mcq")
    return VLMDESK if run.prompt_template == default_template(kind).to_json() else "template file"
