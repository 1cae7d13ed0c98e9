"""Local Hugging Face transformers models: ``hf:<local path or hub id>[?dtype=…&device=…&batch_size=…&temperature=…]``.

Vision-language models load through AutoProcessor + AutoModelForImageTextToText; a plain text LM falls back to
AutoTokenizer + AutoModelForCausalLM so text-only quality-control runs can use it. torch and transformers are
imported lazily: importing this module must stay cheap for the CLI and the GUI.

Throughput (docs/adr/0015-hf-prefix-sharing-and-overlap.md): the rotations of one item share everything before
their options (image, hint, question), so each prompt is split there into a *prefix*, prefilled once and kept as a
KV cache in a bounded LRU, and a *suffix*, prefilled per pass on top of a copy of that cache. A call's sub-batches
are prepared (image decoding, processor, tokenising) on a worker thread while the previous one runs. A query whose
candidates are single tokens is scored from one row, read at its last position.

Settings published figures depend on (issue 36, docs/adr/0054-hf-generation-and-processor-settings.md): generation
(``temperature``, ``top_p``, ``top_k``, ``repetition_penalty``, ``seed``) and the image processor's (``min_pixels``,
``max_pixels``, ``max_tiles``) are spec options, so part of the run's identity; the run's chat (a system prompt,
chat template keyword arguments, a thinking budget) reaches every prompt; an answer is a Generation: the raw text with
any thought tags kept (the door splits), why it stopped, and its tokens.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import inspect
import logging
import math
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlencode

from db.errors import MissingExtra
from evaluator.backends.families import TEXT_SHARE_TYPES, family_of, unverified_note
from evaluator.backends.reasoning import DEFAULT_TAGS
from evaluator.registry import Field
from evaluator.spec_settings import GENERATION as GENERATION_OPTIONS
from evaluator.spec_settings import PROCESSOR as PROCESSOR_OPTIONS
from evaluator.spec_settings import RANGES as _RANGES
from evaluator.spec_settings import WHOLE as _WHOLE

from .base import BackendEntry, BackendError, Chat, Generation, Query, Usage

if TYPE_CHECKING:
    import torch
    import transformers  # imported where a model loads: it costs seconds

_DTYPES = ("float32", "float16", "bfloat16", "auto")
_TRUE, _FALSE = {"1", "true", "yes", "on"}, {"0", "false", "no", "off"}
_SWITCHES = ("trust_remote_code", "share_prefix", "overlap")
CPU_BATCH_SIZE = 8  # the batch size when neither the spec nor the run gives one and there is no GPU (as before)
CPU_CHUNK_ITEMS = 64  # items whose prefixes stay cached on CPU (a few MB each for small models)
MAX_AUTO_BATCH = 64  # generate() gains little past this; bigger batches mostly pad
SUB_BATCHES_PER_CALL = 4  # call_size: sub-batch i+1 is prepared while sub-batch i runs
# A documented estimate for sizing on CUDA: the tokens of one item's prefix (LLaVA-1.5: 576 image tokens plus the
# template, hint and question) and of one row (prefix, options and the answer).
PREFIX_TOKENS_ESTIMATE = 700
ROW_TOKENS_ESTIMATE = 800
# Families whose checkpoints have no chat template: their processor lays out the prompt (images, BOS, the text, "\n")
# and the text starts with the task prefix the checkpoints were trained on (PaliGemma: "answer en <question>").
UNTEMPLATED_PREFIX = {"paligemma": "answer en "}


HF_EXTRA = ("torch", "transformers", "accelerate")  # pyproject's [hf] extra, by import name
INSTALL_HF = "pip install 'vlmdesk[hf]'"


def require_hf(what: str) -> None:
    """MissingExtra (one line, exit 2) when a package of the hf extra cannot be imported: the base install has none
    of them (docs/adr/0041). Imports them for real, so call it only where a model is about to load."""
    for name in HF_EXTRA:
        try:
            importlib.import_module(name)
        except ImportError as exc:  # exc.name: the module really missing (accelerate without torch names torch)
            raise MissingExtra(f"{what} needs the hf extra (no module {exc.name or name}): {INSTALL_HF}") from None


# Generation and image-processor settings of a spec (issue 36): the names the openai: backend takes too, with the
# same bounds. Unset, a setting is the checkpoint's (its generation_config.json, its preprocessor_config.json), as
# transformers and vLLM read them; greedy decoding stays the default.
_SAMPLING_ONLY = ("top_p", "top_k", "seed")  # no effect on greedy decoding: refused without temperature > 0
# What each processor setting is called by the image processors that take it (transformers 5): the Qwen-VL family's
# pixel bounds are its size's shortest_edge / longest_edge (min_pixels / max_pixels before 5.0); InternVL's tile count
# is GotOcr2ImageProcessor's max_patches (its crops, a thumbnail added when there are several).
_PROCESSOR_NAMES = {"min_pixels": "min_pixels", "max_pixels": "max_pixels", "max_tiles": "max_patches"}


@dataclass(frozen=True)
class Settings:
    """The generation and processor settings a spec sets (None: the checkpoint's own)."""

    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    repetition_penalty: float | None = None
    seed: int | None = None
    min_pixels: int | None = None
    max_pixels: int | None = None
    max_tiles: int | None = None

    @property
    def sampling(self) -> bool:
        return bool(self.temperature)

    def pairs(self) -> list[tuple[str, str]]:
        """The settings as spec options, in one order and one spelling (temperature=0, greedy as by default, left
        out): what the backend's spec and the run's identity hold."""
        out = []
        for name in (*GENERATION_OPTIONS, *PROCESSOR_OPTIONS):
            value = getattr(self, name)
            if value is None or (name == "temperature" and value == 0):
                continue
            out.append((name, str(int(value)) if name in _WHOLE else repr(float(value))))
        return out

    def problems(self) -> list[str]:
        """What is wrong with the settings together (each alone is checked when read)."""
        found = []
        if not self.sampling:
            found += [
                f"{name} applies only when sampling (temperature > 0); greedy decoding ignores it"
                for name in _SAMPLING_ONLY
                if getattr(self, name) is not None
            ]
        if self.min_pixels is not None and self.max_pixels is not None and self.min_pixels > self.max_pixels:
            found.append(f"min_pixels {self.min_pixels} is above max_pixels {self.max_pixels}")
        return found


def _setting(key: str, value: str) -> float | int:
    """One setting's value, read and bounded; BackendError in one line naming it and its range."""
    low, high = _RANGES[key]
    span = f"{low:g}..{high:g}" if key not in _WHOLE else f"{int(low)}..{int(high)}"
    kind = "a whole number" if key in _WHOLE else "a number"
    text = value.strip()
    try:
        number: float | int = int(text) if key in _WHOLE else float(text)
    except ValueError:
        number = math.nan
    if len(text) > 40 or not (isinstance(number, int) or math.isfinite(number)) or not low <= number <= high:
        raise BackendError(f"hf spec: {key} must be {kind} in {span}, got {value[:40]!r}")
    return number


def parse_hf_spec(rest: str, *, default_batch_size: int | None = None, seed: int = 0) -> HFBackend:
    """Build a backend from the part of a spec after ``hf:``:
    ``path_or_id[?dtype=…&device=…&batch_size=…&trust_remote_code=1&share_prefix=0&overlap=0&temperature=…]``.
    ``seed``: the run's, which sampling uses unless the spec sets its own."""
    model, kwargs = hf_options(rest, default_batch_size=default_batch_size)
    return HFBackend(model, **kwargs, run_seed=seed)


def hf_options(rest: str, *, default_batch_size: int | None = None) -> tuple[str, dict[str, Any]]:
    """The model and the keyword arguments of HFBackend a spec names, read without loading anything."""
    model, _, query = rest.partition("?")
    if not model:
        raise BackendError("hf spec needs a model path or hub id: hf:<path or id>[?dtype=…&device=…&batch_size=…]")
    # The run's --batch-size applies unless the spec pins its own; none at all is chosen by the device.
    kwargs: dict[str, Any] = {"max_batch_size": default_batch_size} if default_batch_size else {}
    settings: dict[str, float | int] = {}
    try:
        pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query))
    except ValueError:
        raise BackendError(f"hf spec: cannot read the options {query[:80]!r} (name=value&…)") from None
    for key, value in pairs:
        if key == "dtype":
            kwargs["dtype"] = value
        elif key == "device":
            kwargs["device"] = value
        elif key == "batch_size":
            if value == "auto":
                kwargs["max_batch_size"] = None
                continue
            if not value.isdigit() or not 1 <= int(value[:12]) <= 1_000_000 or len(value) > 12:
                raise BackendError(
                    f"hf spec: batch_size must be auto or a whole number in 1..1000000, got {value[:40]!r}"
                )
            kwargs["max_batch_size"] = int(value)
        elif key in _SWITCHES:
            if value.lower() not in _TRUE | _FALSE:
                raise BackendError(f"hf spec: {key} must be 1 or 0, got {value[:40]!r}")
            kwargs[key] = value.lower() in _TRUE
        elif key in _RANGES:
            if key in settings:
                raise BackendError(f"hf spec: {key} is given twice")
            settings[key] = _setting(key, value)
        else:
            known = ", ".join(("dtype", "device", "batch_size", *_SWITCHES, *GENERATION_OPTIONS, *PROCESSOR_OPTIONS))
            raise BackendError(f"hf spec: unknown option {key[:40]!r} (known: {known})")
    if kwargs.get("dtype") not in (None, *_DTYPES):
        raise BackendError(f"hf: unknown dtype {kwargs['dtype']!r} (one of {', '.join(_DTYPES)})")
    if settings:
        chosen = Settings(**settings)  # type: ignore[arg-type]
        if problems := chosen.problems():
            raise BackendError(f"hf spec: {problems[0]}")
        kwargs["settings"] = chosen
    return model, kwargs


def hf_identity(rest: str) -> str:
    """What of an hf: spec names its run (runner.config_key): the spec as written, its generation and processor
    settings in one order and spelling (temperature=0.70 and temperature=0.7 are one run; temperature=0 is greedy,
    the default). A spec without them is its own identity, as before they existed."""
    model, _, query = rest.partition("?")
    raw = [part for part in query.split("&") if part] if query else []
    if not any(part.partition("=")[0] in _RANGES for part in raw):
        return rest
    _, kwargs = hf_options(rest)
    kept = [part for part in raw if part.partition("=")[0] not in _RANGES]
    settings: Settings = kwargs.get("settings", Settings())
    tail = "&".join([*kept, *(f"{k}={v}" for k, v in settings.pairs())])
    return model + (f"?{tail}" if tail else "")


def without_prefix_sharing(spec: str) -> str:
    """The same hf: spec with prefix sharing switched off (`vlmdesk run --no-share-prefix`): another run, so the
    two can be compared. BackendError for a spec of another backend."""
    if not spec.startswith("hf:"):
        raise BackendError(f"--no-share-prefix applies to hf: models only, not {spec.partition(':')[0][:40]!r}")
    model, _, query = spec.removeprefix("hf:").partition("?")
    pairs = [(k, v) for k, v in parse_qsl(query, keep_blank_values=True) if k != "share_prefix"]
    return f"hf:{model}?{urlencode([*pairs, ('share_prefix', '0')])}"


BACKENDS = (
    BackendEntry(
        name="hf",
        title="Local or hub model",
        syntax="hf:<local path or hub id>[?dtype=bfloat16&device=cuda&batch_size=8&trust_remote_code=1"
        "&share_prefix=0&overlap=0&temperature=0&top_p=…&top_k=…&repetition_penalty=…&seed=…"
        "&min_pixels=…&max_pixels=…&max_tiles=…]",
        help="a local Hugging Face transformers model (image-text-to-text, or a text LM), batched generation (greedy "
        "unless temperature > 0) and likelihood scoring; rotations share their prefix's KV cache; needs the hf extra "
        f"({INSTALL_HF})",
        build=lambda rest, context: parse_hf_spec(rest, default_batch_size=context.batch_size, seed=context.seed),
        validate=lambda rest: hf_options(rest) and None,
        identity=hf_identity,
        fields=(
            Field("", "Model directory or hub id", "path", required=True, placeholder="llava-hf/llava-1.5-7b-hf"),
            Field("dtype", "dtype", "choice", choices=("", *_DTYPES), help="default: bfloat16 on CUDA, else float32"),
            Field("device", "Device", placeholder="cuda, cpu, auto"),
            Field("batch_size", "Batch size", "int", help="default: the run's --batch-size, else auto on CUDA"),
            Field("trust_remote_code", "Trust remote code", "flag", help="run the model repository's own code"),
            Field("temperature", "Temperature", placeholder="0", help="0 (default): greedy; above 0: sampling"),
            Field("top_p", "top_p", placeholder="checkpoint's", help="sampling only"),
            Field("top_k", "top_k", "int", help="sampling only; default: the checkpoint's"),
            Field("repetition_penalty", "Repetition penalty", placeholder="checkpoint's"),
            Field("seed", "Seed", "int", help="sampling only; default: the run's --seed"),
            Field("min_pixels", "min_pixels", "int", help="Qwen-VL image processors: fewest pixels of an image"),
            Field("max_pixels", "max_pixels", "int", help="Qwen-VL image processors: most pixels of an image"),
            Field("max_tiles", "Tiles", "int", help="InternVL: most tiles of an image (its processor's max_patches)"),
        ),
        examples=(
            "hf:llava-hf/llava-1.5-7b-hf",
            "hf:./my-vlm?dtype=bfloat16&batch_size=16",
            "hf:Qwen/Qwen2-VL-2B-Instruct?min_pixels=1003520&max_pixels=12845056",
        ),
    ),
)


@dataclass
class _Prefix:
    """One cached prefix: its token ids (images expanded) and, once prefilled, its KV per layer (batch 1)."""

    ids: list[int]
    kv: list[tuple[torch.Tensor, torch.Tensor]] = field(default_factory=list)
    nbytes: int = 0
    rope_delta: int = 0  # M-RoPE (Qwen-VL): position of the token after the prefix minus its length


@dataclass
class _Row:
    """One query of a sub-batch: shared (a prefix key and the suffix's token ids) or plain (key None)."""

    index: int
    key: tuple[Any, ...] | None = None
    suffix: list[int] = field(default_factory=list)
    prompt_tokens: int = 0  # the row's prompt, images' tokens included (set when it runs)


@dataclass
class _Prepared:
    """A sub-batch made ready on the CPU: its rows, the processed inputs of prefixes not cached yet (keys in the
    order of the batch's rows) and of the plain rows."""

    rows: list[_Row]
    new_keys: list[tuple[Any, ...]] = field(default_factory=list)
    new_enc: dict[str, Any] | None = None
    plain_enc: dict[str, Any] | None = None


class HFBackend:
    """Generation (greedy unless the spec's temperature is above 0) and candidate log-likelihoods with a local
    transformers model."""

    def __init__(
        self,
        model: str,
        *,
        dtype: str | None = None,
        device: str | None = None,
        trust_remote_code: bool = False,
        max_batch_size: int | None = None,
        share_prefix: bool = True,
        overlap: bool = True,
        settings: Settings | None = None,
        run_seed: int = 0,
    ):
        require_hf(f"hf:{model[:200]}")
        import torch
        import transformers

        if dtype is not None and dtype not in _DTYPES:
            raise BackendError(f"hf: unknown dtype {dtype!r} (one of {', '.join(_DTYPES)})")
        if max_batch_size is not None and max_batch_size < 1:
            raise BackendError(f"hf: max_batch_size must be at least 1, got {max_batch_size}")
        # The spec as asked for (before defaults are resolved), in the form parse_hf_spec reads back.
        options = {
            "dtype": dtype,
            "device": device,
            "batch_size": max_batch_size if max_batch_size not in (None, CPU_BATCH_SIZE) else None,
            "trust_remote_code": 1 if trust_remote_code else None,
            "share_prefix": None if share_prefix else 0,
            "overlap": None if overlap else 0,
        }
        settings = settings or Settings()
        if problems := settings.problems():
            raise BackendError(f"hf: {problems[0]}")
        query = urlencode([*((k, v) for k, v in options.items() if v is not None), *settings.pairs()])
        self.spec = f"hf:{model}" + (f"?{query}" if query else "")
        # A hub id is "name" or "org/name"; anything else that does not exist is a mistyped local path, which
        # deserves a plain message instead of a hub lookup error.
        path = Path(model).expanduser()
        looks_local = model.startswith(("/", ".", "~")) or "\\" in model or model.count("/") > 1
        if looks_local and not path.is_dir():
            raise BackendError(f"hf: model directory not found: {model}")
        source = str(path) if path.is_dir() else model

        cuda = torch.cuda.is_available()
        if device is None:
            device = "auto" if cuda and torch.cuda.device_count() > 1 else ("cuda" if cuda else "cpu")
        if dtype is None:
            dtype = "bfloat16" if cuda and not device.startswith("cpu") else "float32"

        try:
            config = transformers.AutoConfig.from_pretrained(source, trust_remote_code=trust_remote_code)
            self.is_vlm = _is_image_text_to_text(config)
            model_cls: type[transformers.AutoModelForImageTextToText] | type[transformers.AutoModelForCausalLM]
            if self.is_vlm:
                processor = transformers.AutoProcessor.from_pretrained(source, trust_remote_code=trust_remote_code)
                model_cls = transformers.AutoModelForImageTextToText
            else:
                processor = transformers.AutoTokenizer.from_pretrained(source, trust_remote_code=trust_remote_code)
                model_cls = transformers.AutoModelForCausalLM
            loaded = model_cls.from_pretrained(
                source,
                config=config,
                dtype=dtype if dtype == "auto" else getattr(torch, dtype),
                device_map=device,  # "auto" spreads over several GPUs; "cuda"/"cpu" load straight onto one device
                trust_remote_code=trust_remote_code,
            )
        except Exception as e:  # transformers raises OSError, ValueError, KeyError, … for unloadable models
            if "requires the Torchvision library" in str(e):  # video processors (Qwen-VL, OneVision, InternVL, …)
                raise BackendError(
                    f"hf: cannot load model {model!r}: its processor needs torchvision; install the torchvision "
                    "build that matches your torch (pip install torchvision)"
                ) from e
            raise BackendError(f"hf: cannot load model {model!r}: {type(e).__name__}: {e}") from e
        self.model_name = model
        self.trust_remote_code = trust_remote_code
        self._setup(loaded, processor, device, max_batch_size, share_prefix, overlap, settings, run_seed)

    @classmethod
    def from_loaded(
        cls,
        model: Any,
        processor: Any,
        *,
        name: str,
        max_batch_size: int | None = None,
        share_prefix: bool = True,
        overlap: bool = True,
        settings: Settings | None = None,
        run_seed: int = 0,
    ) -> HFBackend:
        """A backend over a model already in memory (bench/gpu_bench.py builds random-weight 7B models on the GPU
        without writing them to disk); everything after loading is the same code as a spec's."""
        self = cls.__new__(cls)
        settings = settings or Settings()
        if problems := settings.problems():
            raise BackendError(f"hf: {problems[0]}")
        self.spec = f"hf:{name}" + (f"?{urlencode(settings.pairs())}" if settings.pairs() else "")
        self.model_name = name
        self.trust_remote_code = False
        self.is_vlm = _is_image_text_to_text(model.config)
        self._setup(model, processor, str(model.device), max_batch_size, share_prefix, overlap, settings, run_seed)
        return self

    def _setup(
        self,
        model: Any,
        processor: Any,
        device: str,
        max_batch_size: int | None,
        share_prefix: bool,
        overlap: bool,
        settings: Settings,
        run_seed: int,
    ) -> None:
        self.model = model
        self.model.eval()
        self.processor = processor
        self.tokenizer = getattr(processor, "tokenizer", processor)
        if self.tokenizer.pad_token is None:  # Llama-style tokenizers have none; batching needs one
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.dtype = str(self.model.dtype).removeprefix("torch.")
        self.device = device
        self._accepts = set(inspect.signature(self.model.forward).parameters)
        self.notes: list[str] = []
        self.stats = {"prefix_hits": 0, "prefix_misses": 0, "plain_rows": 0, "oom_backoffs": 0}
        on_cuda = self.model.device.type == "cuda"
        self.batch_size_auto = max_batch_size is None and on_cuda
        free = self._free_device_bytes() if on_cuda else 0
        per_token = self._kv_bytes_per_token()
        if max_batch_size is not None:
            self.max_batch_size = max_batch_size
        elif on_cuda:
            # Half of the free memory for the rows of one sub-batch (their KV plus as much again for activations);
            # an out-of-memory error halves it (see _run_sub_batch).
            self.max_batch_size = max(1, min(MAX_AUTO_BATCH, free // 2 // (2 * per_token * ROW_TOKENS_ESTIMATE)))
        else:
            self.max_batch_size = CPU_BATCH_SIZE
        # Cached prefixes: about a third of the free GPU memory (a fixed moderate number on CPU).
        budget = free // 3 if on_cuda else min(4 << 30, CPU_CHUNK_ITEMS * per_token * PREFIX_TOKENS_ESTIMATE)
        self.prefix_cache_bytes = max(budget, per_token * PREFIX_TOKENS_ESTIMATE)
        # Items the engine keeps alive together (contract: chunk_items) so their prefixes stay cached.
        self.chunk_items: int | None = max(
            8, min(1024, self.prefix_cache_bytes // (per_token * PREFIX_TOKENS_ESTIMATE))
        )
        # Prefix sharing only where a family's cache is proven to continue exactly (evaluator/backends/families.py);
        # other
        # families fall back to plain generate and say why.
        model_type = str(getattr(self.model.config, "model_type", ""))
        family = family_of(model_type)
        exact = family.share_prefix if family else model_type in TEXT_SHARE_TYPES
        self.share_prefix = share_prefix and exact
        self.share_prefix_note = (
            "on"
            if self.share_prefix
            else "off (share_prefix=0)"
            if not share_prefix
            else f"off: {family.share_off}"
            if family and family.share_off
            else f"off: continuing a cached prefix is not verified exact for model type {model_type[:60]!r}"
        )
        if self.is_vlm and family is None:  # said once per load (stderr) and stored with the run (describe)
            self.notes.append(unverified_note(model_type))
            logging.getLogger("evaluator.backends").warning("hf: %s", self.notes[-1])
        self.overlap = overlap
        self.single_row_likelihood = True  # bench/gpu_bench.py compares it with one row per candidate
        self._prefixes: OrderedDict[tuple[Any, ...], _Prefix] = OrderedDict()
        self._prefix_bytes = 0
        self._lock = threading.Lock()  # a fast tokenizer must not be used by two threads at once
        self._pool: ThreadPoolExecutor | None = None
        self._image_token = getattr(self.processor, "image_token", None) if self.is_vlm else None
        # Pixtral (Mistral 3) merges patch_size × spatial_merge_size squares; an image no bigger than one on both
        # sides makes transformers' feature split fail, so such an image is enlarged to two (aspect kept).
        patch, merge = getattr(self.processor, "patch_size", None), getattr(self.processor, "spatial_merge_size", None)
        self._min_image_side = 2 * patch * merge if isinstance(patch, int) and isinstance(merge, int) else 0
        self._model_type = model_type
        # Sliding-window attention layers (Gemma 3's local layers): their window, which prefix sharing must keep whole.
        text = self.model.config.get_text_config(decoder=True)
        kinds = getattr(text, "layer_types", None) or ["sliding_attention"]
        self._sliding_window = getattr(text, "sliding_window", None) if "sliding_attention" in kinds else None
        self.settings = settings
        # Sampling without a seed of the spec's draws from the run's (--seed), which names the run already.
        self.seed = settings.seed if settings.seed is not None else run_seed
        self._image_kwargs = self._processor_settings(settings)
        # Thought tags as single tokens: kept when decoding, and what a thinking budget closes a thought with.
        self._tag_ids = tuple(self._single_token(tag) for tag in DEFAULT_TAGS)
        self.takes_thinking_budget = None not in self._tag_ids  # read by the engine (runner) before --thinking-budget
        specials = set(self.tokenizer.all_special_ids)
        specials |= {i for i, t in getattr(self.tokenizer, "added_tokens_decoder", {}).items() if t.special}
        self._dropped_ids = specials - {i for i in self._tag_ids if i is not None}
        eos = self.model.generation_config.eos_token_id
        eos = [eos] if isinstance(eos, int) else list(eos or [])
        self._eos_ids = set(eos) or {self.tokenizer.eos_token_id}
        self._budget_of: list[int | None] | None = None  # each query's thinking budget, during generate()

    def _single_token(self, text: str) -> int | None:
        """The id of ``text`` where the tokenizer has it as one token (an added token, e.g. Qwen3's "</think>")."""
        ids = self.tokenizer.convert_tokens_to_ids([text])
        unk = self.tokenizer.unk_token_id
        return ids[0] if ids and isinstance(ids[0], int) and ids[0] != unk else None

    def _processor_settings(self, settings: Settings) -> dict[str, Any]:
        """The image processor's call keywords for the spec's processor settings; BackendError naming a setting this
        model's processor cannot take (one it would silently ignore would make another run look like this one)."""
        asked = {name: getattr(settings, name) for name in PROCESSOR_OPTIONS if getattr(settings, name) is not None}
        if not asked:
            return {}
        image_processor = getattr(self.processor, "image_processor", None) if self.is_vlm else None
        valid = getattr(image_processor, "valid_kwargs", None)
        takes = set(getattr(valid, "__annotations__", {}))
        what = type(image_processor).__name__ if image_processor is not None else "no image processor"
        for name in asked:
            if _PROCESSOR_NAMES[name] not in takes:
                family = "the Qwen-VL family's" if name != "max_tiles" else "InternVL's (max_patches)"
                raise BackendError(
                    f"hf: {name} is {family} image processor setting; {self.model_name[:100]} has {what}, which "
                    "does not take it"
                )
        out: dict[str, Any] = {}
        if "max_tiles" in asked:
            if not getattr(image_processor, "crop_to_patches", False):
                raise BackendError(f"hf: max_tiles: {what} of {self.model_name[:100]} does not cut images into tiles")
            out["max_patches"] = asked["max_tiles"]
        if "min_pixels" in asked or "max_pixels" in asked:
            size = getattr(image_processor, "size", None)
            own = {
                k: size.get(k) if isinstance(size, dict) else getattr(size, k, None)
                for k in ("shortest_edge", "longest_edge")
            }
            low = asked.get("min_pixels", own["shortest_edge"])
            high = asked.get("max_pixels", own["longest_edge"])
            if not isinstance(low, int) or not isinstance(high, int) or low > high:
                raise BackendError(
                    f"hf: the image's pixel bounds would be {low}..{high} (the processor's own: "
                    f"{own['shortest_edge']}..{own['longest_edge']}): min_pixels must not exceed max_pixels"
                )
            out["size"] = {"shortest_edge": low, "longest_edge": high}
        return out

    def describe(self) -> dict[str, Any]:
        import torch
        import transformers

        return {
            "backend": "hf",
            "model": self.model_name,
            "model_class": type(self.model).__name__,
            "kind": "image-text-to-text" if self.is_vlm else "causal-lm",
            "dtype": self.dtype,
            "device": self.device,
            "input_device": str(self.model.device),
            "max_batch_size": self.max_batch_size,
            "batch_size_auto": self.batch_size_auto,
            "share_prefix": self.share_prefix_note,
            "overlap": self.overlap,
            "chunk_items": self.chunk_items,
            "trust_remote_code": self.trust_remote_code,
            "generation": self._generation_described(),
            "processor": {name: getattr(self.settings, name) for name in PROCESSOR_OPTIONS}
            | {"call": self._image_kwargs},
            "thinking_budget": "takes it (closes the thought with </think>)"
            if self.takes_thinking_budget
            else "no: the tokenizer has no single </think> token",
            "notes": list(self.notes),
            "transformers": transformers.__version__,
            "torch": torch.__version__,
        }

    def _generation_described(self) -> dict[str, Any]:
        """The decoding a run's answers came from: the spec's settings, else the checkpoint's generation_config
        (a checkpoint's repetition_penalty applies to greedy decoding too)."""
        config = self.model.generation_config
        described: dict[str, Any] = {"do_sample": self.settings.sampling}
        for name in ("temperature", "top_p", "top_k", "repetition_penalty"):
            if not self.settings.sampling and name != "repetition_penalty":
                continue
            value = getattr(self.settings, name)
            described[name] = value if value is not None else getattr(config, name, None)
        if self.settings.sampling:
            described["seed"] = self.seed
            described["seed_from"] = "spec" if self.settings.seed is not None else "the run's --seed"
        return described

    def call_size(self, batch_size: int) -> int:
        """Queries the engine hands to one call (contract): several sub-batches, so the next one is prepared on a
        worker thread while one runs."""
        return self.max_batch_size * (SUB_BATCHES_PER_CALL if self.overlap else 1)

    def clear_cache(self) -> None:
        """Forget every cached prefix (benchmarks compare settings from the same cold start)."""
        self._prefixes.clear()
        self._prefix_bytes = 0

    # ---- generation -------------------------------------------------------------------------------------

    def generate(self, queries: Sequence[Query], max_new_tokens: int) -> list[Generation]:
        """One Generation per query: the text of the model's turn with any thought tags kept (the door splits it;
        a ``<think>`` the chat template opened in the prompt is put back in front, so a thought the budget cut
        off is still a thought), finish_reason "length" where max_new_tokens ended it before EOS, else "stop", and
        its tokens (prompt: images' included; completion: EOS included; reasoning: through ``</think>``)."""
        budgets = [q.chat.thinking_budget for q in queries]
        if any(b is not None for b in budgets) and not self.takes_thinking_budget:
            raise BackendError(f"{self.spec[:200]}: the tokenizer has no single </think> token: no thinking budget")
        opened = [self._render(q).rstrip().endswith(DEFAULT_TAGS[0]) for q in queries]
        results: list[Generation] = [Generation("")] * len(queries)

        def work(rows: list[_Row], new_ids: list[list[int]], _logits: Any) -> None:
            for row, ids in zip(rows, new_ids):
                results[row.index] = self._generation(ids, row.prompt_tokens, opened[row.index])

        self._budget_of = budgets
        try:
            self._drive(queries, [1] * len(queries), max_new_tokens, False, work)
        finally:
            self._budget_of = None
        return results

    def _generation(self, ids: list[int], prompt_tokens: int, opened: bool) -> Generation:
        """A row's new token ids as a Generation: cut at its first EOS (finished rows are padded after it)."""
        end = next((i for i, t in enumerate(ids) if t in self._eos_ids), None)
        kept = ids if end is None else ids[:end]
        completion = len(ids) if end is None else end + 1
        with self._lock:  # special tokens dropped as skip_special_tokens would, thought tags kept
            text = self.tokenizer.decode([t for t in kept if t not in self._dropped_ids]).strip()
        opening, closing = self._tag_ids
        reasoning = None
        if closing is not None and closing in kept:
            reasoning = len(kept) - kept[::-1].index(closing)
        elif opened or (kept and kept[0] == opening):
            reasoning = completion
        if opened:
            text = f"{DEFAULT_TAGS[0]}\n{text}"
        usage = Usage(prompt_tokens, completion, reasoning)
        return Generation(text, finish_reason="stop" if end is not None else "length", usage=usage)

    # ---- likelihood scoring -----------------------------------------------------------------------------

    def score(
        self,
        queries: Sequence[Query],
        candidates: Sequence[Sequence[str]],
        *,
        first_token: bool = False,
        lead: Sequence[str] | None = None,
        mean: bool = False,
    ) -> list[list[float]]:
        """Sum of log-probs of each candidate's tokens right after the generation prompt (``first_token``: the
        log-prob of its first token only, as a continuation of the prompt's text — LVLM-eHub's prefix score).

        ``lead``: per query, text of the model's own turn that comes before its candidates, read but not scored
        (ChEF's chain of thought and answer sentence); the candidate's tokens are then those that the whole text
        splits into after the lead. ``mean``: the mean over a candidate's tokens instead of the sum (ChEF's score).

        A query whose candidates are each one token (and no lead) is one row, read at its last position (with its
        prefix shared like a generation's). Otherwise each (query, candidate) pair is one row of a single forward
        pass per batch, never shared; the processor sees the query's images once per row. A query's candidates are
        never split across batches.
        """
        if len(candidates) != len(queries):
            raise ValueError(f"score: {len(queries)} queries but {len(candidates)} candidate lists")
        if lead is not None and (first_token or len(lead) != len(queries)):
            raise ValueError("score: a lead is one text per query, and not with first_token")
        results = [[0.0] * len(cs) for cs in candidates]
        contexts: list[list[list[int]]] | None = None
        if lead is not None:
            split = [[self._after_lead(q, t, c) for c in cs] for q, t, cs in zip(queries, lead, candidates)]
            contexts = [[ctx for ctx, _ in row] for row in split]
            cand_ids = [[ids for _, ids in row] for row in split]
        elif first_token:
            firsts = [self._first_tokens(q, cs) for q, cs in zip(queries, candidates)]
            cand_ids = [[[t] for t in f] for f in firsts]
        else:
            # Candidates are tokenized alone (no special tokens) and appended as ids: that fixes exactly which
            # tokens are scored, instead of hoping that tokenizing prompt+candidate splits at the boundary.
            with self._lock:
                cand_ids = [[self.tokenizer(c, add_special_tokens=False)["input_ids"] for c in cs] for cs in candidates]
        single = [
            i
            for i, ids in enumerate(cand_ids)
            if self.single_row_likelihood and contexts is None and ids and all(len(t) == 1 for t in ids)
        ]
        if single:
            self._score_single_rows([queries[i] for i in single], [cand_ids[i] for i in single], results, single)
        several = [i for i in range(len(queries)) if i not in set(single)]
        if several:
            self._score_rows(queries, candidates, cand_ids, results, several, contexts=contexts)
        if mean:  # a one-token candidate's mean is its sum; an empty one keeps 0
            results = [[s / max(1, len(ids)) for s, ids in zip(row, idss)] for row, idss in zip(results, cand_ids)]
        return results

    def _after_lead(self, query: Query, lead: str, candidate: str) -> tuple[list[int], list[int]]:
        """(the lead's token ids, the candidate's) as the prompt followed by the lead and the candidate splits into
        tokens, tokenized whole as ChEF tokenizes its prompt; where a boundary merges tokens, each tokenized alone."""
        text = self._render(query)
        special = self._add_special(text)
        with self._lock:
            base = self.tokenizer(text, add_special_tokens=special)["input_ids"]
            head = self.tokenizer(text + lead, add_special_tokens=special)["input_ids"]
            full = self.tokenizer(text + lead + candidate, add_special_tokens=special)["input_ids"]
            if head[: len(base)] == base and full[: len(head)] == head:
                return head[len(base) :], full[len(head) :]
            alone = [self.tokenizer(t, add_special_tokens=False)["input_ids"] for t in (lead, candidate)]
        return alone[0], alone[1]

    def _first_tokens(self, query: Query, cands: Sequence[str]) -> list[int]:
        """Each candidate's first token as the tokenizer splits the prompt followed by it (a candidate that merges
        with the prompt's last token is tokenized alone instead)."""
        text = self._render(query)
        special = self._add_special(text)
        with self._lock:
            base = self.tokenizer(text, add_special_tokens=special)["input_ids"]
            out = []
            for c in cands:
                ids = self.tokenizer(text + c, add_special_tokens=special)["input_ids"]
                if ids[: len(base)] == base and len(ids) > len(base):
                    out.append(ids[len(base)])
                else:
                    alone = self.tokenizer(c, add_special_tokens=False)["input_ids"] or [self.tokenizer.pad_token_id]
                    out.append(alone[0])
        return out

    def _score_single_rows(
        self, queries: list[Query], cand_ids: list[list[list[int]]], results: list[list[float]], where: list[int]
    ) -> None:
        def work(rows: list[_Row], _new: list[list[int]], logits: Any) -> None:
            logprobs = logits.float().log_softmax(-1)
            for r, row in enumerate(rows):
                ids = [t[0] for t in cand_ids[row.index]]
                results[where[row.index]] = logprobs[r, ids].tolist()

        self._drive(queries, [1] * len(queries), 1, True, work)

    def _score_rows(
        self,
        queries: Sequence[Query],
        candidates: Sequence[Sequence[str]],
        cand_ids: list[list[list[int]]],
        results: list[list[float]],
        where: list[int],
        *,
        contexts: list[list[list[int]]] | None = None,
    ) -> None:
        """One row per (query, candidate): candidates of several tokens; ``contexts[i][j]``, token ids read between
        the prompt and candidate j of query i (a lead)."""
        import torch

        sub = [queries[i] for i in where]
        with torch.inference_mode():
            for batch in self._batches(sub, [len(candidates[i]) for i in where]):
                rows = [(where[b], j) for b in batch for j in range(len(candidates[where[b]])) if cand_ids[where[b]][j]]
                if not rows:  # only empty candidates: log-prob of nothing is 0
                    continue
                tails = [(contexts[i][j] if contexts else []) + cand_ids[i][j] for i, j in rows]
                enc = self._encode([queries[i] for i, _ in rows], tails)
                keep = max(len(cand_ids[i][j]) for i, j in rows) + 1
                if "logits_to_keep" in self._accepts:  # only the last positions: full logits are L × vocab per row
                    enc["logits_to_keep"] = keep
                logits = self.model(**enc).logits[:, -keep:].float()
                logprobs = logits.log_softmax(-1)
                for r, (i, j) in enumerate(rows):
                    ids = cand_ids[i][j]
                    # Token t of the candidate is predicted by the position just before it.
                    lp = logprobs[r, keep - 1 - len(ids) : keep - 1]
                    target = torch.tensor(ids, device=lp.device)[:, None]
                    results[i][j] = lp.gather(-1, target).sum().item()

    # ---- one call: sub-batches prepared on a worker thread, run on the device -----------------------------

    def _drive(
        self, queries: Sequence[Query], weights: list[int], max_new_tokens: int, logits: bool, work: Any
    ) -> None:
        """Run ``work(rows, new token ids, first-step logits)`` over every sub-batch of the queries. With overlap,
        sub-batch i+1 is prepared (images decoded, processor, tokenizer) on a worker thread while i runs."""
        batches = self._batches(queries, weights)
        if not self.overlap or len(batches) < 2:
            for batch in batches:
                self._run_sub_batch(queries, self._prepare(queries, batch), max_new_tokens, logits, work)
            return
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hf-prepare")
        ahead: Future[_Prepared] = self._pool.submit(self._prepare, queries, batches[0])
        for n in range(len(batches)):
            prepared = ahead.result()
            if n + 1 < len(batches):
                ahead = self._pool.submit(self._prepare, queries, batches[n + 1])
            self._run_sub_batch(queries, prepared, max_new_tokens, logits, work)

    def _run_sub_batch(
        self, queries: Sequence[Query], prepared: _Prepared, max_new_tokens: int, logits: bool, work: Any
    ) -> None:
        """Prefill new prefixes, then continue every row; on a CUDA out-of-memory error halve the sub-batch (and
        the batch size from then on) and try again."""
        import torch

        try:
            with torch.inference_mode():
                if any(
                    r.key is not None and r.key not in self._prefixes and r.key not in prepared.new_keys
                    for r in prepared.rows
                ):
                    # A prefix evicted since this sub-batch was prepared: prepare it again, now as a new one.
                    prepared = self._prepare(queries, [r.index for r in prepared.rows])
                self._prefill(prepared)
                shared = [r for r in prepared.rows if r.key is not None]
                plain = [r for r in prepared.rows if r.key is None]
                if shared:
                    for row in shared:
                        assert row.key is not None
                        row.prompt_tokens = len(self._prefixes[row.key].ids) + len(row.suffix)
                    ids, first = self._continue(shared, max_new_tokens, logits)
                    work(shared, ids, first)
                if plain:
                    assert prepared.plain_enc is not None
                    for row, n in zip(plain, prepared.plain_enc["attention_mask"].sum(-1).tolist()):
                        row.prompt_tokens = int(n)
                    ids, first = self._plain(prepared.plain_enc, max_new_tokens, logits, plain)
                    work(plain, ids, first)
        except torch.cuda.OutOfMemoryError:
            if len(prepared.rows) < 2:
                raise
            half = len(prepared.rows) // 2
            self.max_batch_size = max(1, min(self.max_batch_size, half))
            self.stats["oom_backoffs"] += 1
            note = f"out of GPU memory at {len(prepared.rows)} rows: batch size lowered to {self.max_batch_size}"
            if note not in self.notes:
                self.notes.append(note)
            torch.cuda.empty_cache()
            indices = [r.index for r in prepared.rows]
            for part in (indices[:half], indices[half:]):
                self._run_sub_batch(queries, self._prepare(queries, part), max_new_tokens, logits, work)

    def _prepare(self, queries: Sequence[Query], batch: list[int]) -> _Prepared:
        """The CPU side of a sub-batch: render, split each prompt into a prefix and a suffix, and process the
        prefixes not cached yet (images included) and the rows that cannot share."""
        rows: list[_Row] = []
        new: dict[tuple[Any, ...], tuple[str, Query]] = {}
        plain: list[tuple[str, Query]] = []
        for i in batch:
            query = queries[i]
            text = self._render(query)
            row = _Row(i)
            split = self._split(text, query) if self.share_prefix else None
            if split is not None:
                prefix, row.suffix = split
                row.key = (tuple(hashlib.blake2b(b, digest_size=16).digest() for b in query.images), prefix)
                if row.key not in self._prefixes and row.key not in new:
                    new[row.key] = (prefix, query)
            else:
                plain.append((text, query))
            rows.append(row)
        prepared = _Prepared(rows)
        if new:
            prepared.new_keys = list(new)
            prepared.new_enc = self._process([t for t, _ in new.values()], [q for _, q in new.values()])
        if plain:
            prepared.plain_enc = self._process([t for t, _ in plain], [q for _, q in plain])
        return prepared

    def _split(self, text: str, query: Query) -> tuple[str, list[int]] | None:
        """(prefix text, suffix token ids) where the prompt's tokens are exactly the prefix's followed by the
        suffix's: cut before the options (a line starting "A. "), else right after the last image; None when
        neither cut splits the tokens cleanly."""
        cuts = []
        if query.letters and len(query.letters[0]) == 1:  # option letters (yes/no candidates are words)
            at = text.find(f"\n{query.letters[0]}. ")
            if at >= 0:
                cuts.append(at + 1)
        if query.images and self._image_token and (at := text.rfind(self._image_token)) >= 0:
            cuts.append(at + len(self._image_token))
        if not cuts:
            return None
        special = self._add_special(text)
        with self._lock:
            full = self.tokenizer(text, add_special_tokens=special)["input_ids"]
            for cut in cuts:
                if self._image_token and self._image_token in text[cut:]:
                    continue  # pixel values go with the prefix only: every image must be in it
                head = self.tokenizer(text[:cut], add_special_tokens=special)["input_ids"]
                if len(head) < len(full) and full[: len(head)] == head:
                    return text[:cut], full[len(head) :]
        return None

    def _prefill(self, prepared: _Prepared) -> None:
        """Run the new prefixes once (images included) and keep each one's KV cache, unpadded."""
        if not prepared.new_keys:
            return
        assert prepared.new_enc is not None
        enc = self._to_device(prepared.new_enc)
        mask = enc["attention_mask"]
        extra: dict[str, Any] = {"use_cache": True}
        if self._sliding_window:
            # A plain cache keeps every prefix token: the model's own keeps only the last window of a sliding layer,
            # and a suffix's window reaches back into its prefix.
            from transformers import DynamicCache

            extra["cache" if "cache" in self._accepts else "past_key_values"] = DynamicCache()
        if "position_ids" in self._accepts:  # left pads skipped, as generate() counts positions
            extra["position_ids"] = (mask.long().cumsum(-1) - 1).clamp(min=0)
        deltas = self._mrope_prefill(enc, extra)
        if "logits_to_keep" in self._accepts:
            extra["logits_to_keep"] = 1
        out = self.model(**enc, **extra)
        cache = out.cache if hasattr(out, "cache") else out.past_key_values
        width = mask.shape[1]
        pinned = {r.key for r in prepared.rows}
        for r, key in enumerate(prepared.new_keys):
            start = width - int(mask[r].sum())
            kv = [
                (layer.keys[r : r + 1, :, start:].clone(), layer.values[r : r + 1, :, start:].clone())
                for layer in cache.layers
            ]
            entry = _Prefix(enc["input_ids"][r, start:].tolist(), kv, sum(k.nbytes + v.nbytes for k, v in kv))
            entry.rope_delta = int(deltas[r]) if deltas is not None else 0
            self._prefixes[key] = entry
            self._prefix_bytes += entry.nbytes
            self.stats["prefix_misses"] += 1
        # Least recently used first; never a prefix this sub-batch is about to use.
        for key in list(self._prefixes):
            if self._prefix_bytes <= self.prefix_cache_bytes and len(self._prefixes) <= 2 * (self.chunk_items or 1):
                break
            if key not in pinned:
                self._prefix_bytes -= self._prefixes.pop(key).nbytes

    def _continue(self, rows: list[_Row], max_new_tokens: int, logits: bool) -> tuple[list[list[int]], Any]:
        """Generate for rows whose prefixes are cached: each row's prefix KV is copied into one left-padded cache
        and only the suffixes are prefilled. Pads between a prefix and its suffix are masked, and positions come
        from the mask, so every row sees exactly the tokens and positions of its plain prompt."""
        import torch
        from transformers import DynamicCache

        if groups := self._window_groups(rows, max_new_tokens):
            return self._continue_groups(rows, groups, max_new_tokens, logits)
        entries = []
        for row in rows:
            assert row.key is not None
            self._prefixes.move_to_end(row.key)
            entries.append(self._prefixes[row.key])
        self.stats["prefix_hits"] += len(rows)
        n, lc, ls = len(rows), max(len(e.ids) for e in entries), max(len(r.suffix) for r in rows)
        ids = torch.full((n, lc + ls), self.tokenizer.pad_token_id, dtype=torch.long)
        mask = torch.zeros((n, lc + ls), dtype=torch.long)
        for r, (row, entry) in enumerate(zip(rows, entries)):
            p, s = len(entry.ids), len(row.suffix)
            ids[r, lc - p : lc] = torch.tensor(entry.ids)
            ids[r, lc + ls - s :] = torch.tensor(row.suffix)
            mask[r, lc - p : lc] = 1
            mask[r, lc + ls - s :] = 1
        layers = []
        for layer in range(len(entries[0].kv)):
            k0, v0 = entries[0].kv[layer]
            keys = k0.new_zeros((n, k0.shape[1], lc, k0.shape[3]))
            values = v0.new_zeros((n, v0.shape[1], lc, v0.shape[3]))
            for r, entry in enumerate(entries):
                k, v = entry.kv[layer]
                keys[r, :, lc - k.shape[2] :] = k[0]
                values[r, :, lc - v.shape[2] :] = v[0]
            layers.append((keys, values))
        device = self.model.device
        if (holder := self._mrope_holder()) is not None:
            # M-RoPE: generate() continues a cache at the mask's positions plus the model's stored rope_deltas, left
            # by whatever ran last; each row's must be its own prefix's.
            holder.rope_deltas = torch.tensor([[e.rope_delta] for e in entries], device=device)
        with self._seeded():
            out = self.model.generate(
                input_ids=ids.to(device),
                attention_mask=mask.to(device),
                cache=DynamicCache(ddp_cache_data=layers),
                **self._generation_kwargs(max_new_tokens, logits, rows),
            )
        return out.sequences[:, lc + ls :].tolist(), out.logits[0] if logits else None

    def _window_groups(self, rows: list[_Row], max_new_tokens: int) -> list[list[int]] | None:
        """Sliding-window layers mask by cache column, not by position, so the pads _continue puts between a
        prefix and a suffix shorter than the longest would shorten that row's window. Where a row is long enough
        for that to matter (prefix + longest suffix + new tokens past the window), the rows go in groups of one
        suffix length, which need no such pads (indices into ``rows``); else None."""
        window = self._sliding_window
        if not window or len(rows) < 2:
            return None
        longest = max(len(r.suffix) for r in rows)
        if all(
            len(r.suffix) == longest or len(self._prefixes[r.key].ids) + longest + max_new_tokens <= window
            for r in rows
            if r.key is not None
        ):
            return None
        groups: dict[int, list[int]] = {}
        for i, r in enumerate(rows):
            groups.setdefault(len(r.suffix), []).append(i)
        return list(groups.values())

    def _continue_groups(
        self, rows: list[_Row], groups: list[list[int]], max_new_tokens: int, logits: bool
    ) -> tuple[list[list[int]], Any]:
        """_continue per group of rows, put back in the rows' order; finished rows padded to the longest, as one
        generate() pads them."""
        import torch

        ids: list[list[int]] = [[] for _ in rows]
        firsts: list[Any] = [None] * len(rows)
        for group in groups:
            out, first = self._continue([rows[i] for i in group], max_new_tokens, logits)
            for j, i in enumerate(group):
                ids[i] = out[j]
                firsts[i] = first[j] if logits else None
        width = max(map(len, ids))
        pad = self.tokenizer.pad_token_id
        return [s + [pad] * (width - len(s)) for s in ids], torch.stack(firsts) if logits else None

    def _mrope_holder(self) -> Any:
        """The module holding ``rope_deltas`` in a model with 3-D rotary positions (M-RoPE: Qwen-VL), else None."""
        inner = getattr(self.model, "model", None)
        return inner if hasattr(inner, "rope_deltas") and hasattr(inner, "get_rope_index") else None

    def _mrope_prefill(self, enc: dict[str, Any], extra: dict[str, Any]) -> Any:
        """For M-RoPE models, the prefixes' positions as generate() computes a prompt's (each image's grid: temporal,
        height, width; text after it shifted by the row's rope delta) put into ``extra``; returns the deltas."""
        holder = self._mrope_holder()
        if holder is None or "position_ids" not in self._accepts:
            return None
        extra["position_ids"] = self.model._prepare_position_ids_for_generation(enc["input_ids"], enc)
        return holder.rope_deltas.reshape(-1).tolist()

    def _plain(
        self, enc: dict[str, Any], max_new_tokens: int, logits: bool, rows: list[_Row] | None = None
    ) -> tuple[list[list[int]], Any]:
        enc = self._to_device(enc)
        self.stats["plain_rows"] += enc["input_ids"].shape[0]
        with self._seeded():
            out = self.model.generate(**enc, **self._generation_kwargs(max_new_tokens, logits, rows))
        # Left padding: every row's prompt ends at the same column, so the new tokens start there.
        return out.sequences[:, enc["input_ids"].shape[1] :].tolist(), out.logits[0] if logits else None

    def _generation_kwargs(self, max_new_tokens: int, logits: bool, rows: list[_Row] | None = None) -> dict[str, Any]:
        # Greedy unless the spec samples; each row stops at EOS (finished rows are padded), the call when every row
        # has stopped. A setting the spec leaves unset is the checkpoint's generation_config's.
        settings = self.settings
        kwargs: dict[str, Any] = {
            "max_new_tokens": max_new_tokens,
            "do_sample": settings.sampling,
            "pad_token_id": self.tokenizer.pad_token_id,
            "return_dict_in_generate": True,
            "output_logits": logits,
        }
        if settings.sampling:
            kwargs["temperature"] = settings.temperature
            kwargs |= {k: getattr(settings, k) for k in ("top_p", "top_k") if getattr(settings, k) is not None}
        if settings.repetition_penalty is not None:
            kwargs["repetition_penalty"] = settings.repetition_penalty
        budgets = [self._budget_of[r.index] for r in rows] if self._budget_of is not None and rows else []
        if any(b is not None for b in budgets):
            opening, closing = self._tag_ids
            assert opening is not None and closing is not None  # generate() refused a budget without them
            kwargs["logits_processor"] = _thought_budget(budgets, opening, closing)
        return kwargs

    @contextlib.contextmanager
    def _seeded(self) -> Iterator[None]:
        """Sampling: every generate() call starts from the seed, in a forked random state (the process's own is left
        as it was). A row's draws then depend on its sub-batch (docs/adr/0054): the same spec, batch size and items
        give the same answers; another batch size draws others from the same distribution."""
        if not self.settings.sampling:
            yield
            return
        import torch

        devices = list(range(torch.cuda.device_count())) if self.model.device.type == "cuda" else []
        with torch.random.fork_rng(devices=devices):
            torch.manual_seed(self.seed)
            yield

    # ---- shared plumbing --------------------------------------------------------------------------------

    def _batches(self, queries: Sequence[Query], weights: list[int]) -> list[list[int]]:
        """Index batches of at most max_batch_size rows (a query weighs its number of rows).

        Queries are grouped by image count (processors handle a batch more reliably when every row has the same
        number of images, and text-only rows then need no image argument at all) and sorted by prompt length,
        so similar lengths share a batch and padding stays small.
        """
        order = sorted(range(len(queries)), key=lambda i: (len(queries[i].images), len(queries[i].prompt)))
        batches: list[list[int]] = []
        rows = 0
        for i in order:
            new_group = batches and len(queries[batches[-1][0]].images) != len(queries[i].images)
            if not batches or new_group or rows + weights[i] > self.max_batch_size:
                batches.append([])
                rows = 0
            batches[-1].append(i)
            rows += weights[i]
        return batches

    def _render(self, query: Query) -> str:
        """The prompt text after the chat template, ending with the generation prompt: the run's system prompt as a
        system message, its chat template keyword arguments (e.g. enable_thinking) passed to the template."""
        chat = query.chat
        template_kwargs = _template_kwargs(chat)
        conversation: list[dict[str, Any]] = []
        if not self.is_vlm:
            if query.images:
                raise BackendError(f"hf: {self.model_name} is a text-only model and cannot take images")
            if self.tokenizer.chat_template is None:  # a base LM: the prompt as is
                self._refuse_chat(chat.system, template_kwargs)
                return query.prompt
            if chat.system is not None:
                conversation.append({"role": "system", "content": chat.system})
            conversation.append({"role": "user", "content": query.prompt})
        else:
            if getattr(self.processor, "chat_template", None) is None and self.tokenizer.chat_template is None:
                if self._model_type in UNTEMPLATED_PREFIX:
                    self._refuse_chat(chat.system, template_kwargs)
                    return self._untemplated(query)
                raise BackendError(f"hf: {self.model_name} has no chat template; cannot place its images")
            if chat.system is not None:  # processors' templates take a message's content as parts
                conversation.append({"role": "system", "content": [{"type": "text", "text": chat.system}]})
            # Images where the prompt's <image N> places them (base.image_parts); _process hands them in that order.
            content = [{"type": "text", "text": p} if isinstance(p, str) else {"type": "image"} for p in query.parts()]
            conversation.append({"role": "user", "content": content})
        with self._lock:
            prompt: str = self.processor.apply_chat_template(
                conversation, add_generation_prompt=True, tokenize=False, **template_kwargs
            )
        return prompt

    def _refuse_chat(self, system: str | None, template_kwargs: dict[str, Any]) -> None:
        """A model without a chat template has no place for a system prompt or template keywords: said, not dropped."""
        if system is not None:
            raise BackendError(
                f"hf: {self.model_name[:100]} has no chat template: a system prompt has no place; drop it"
            )
        if template_kwargs:
            raise BackendError(f"hf: {self.model_name[:100]} has no chat template to pass {sorted(template_kwargs)} to")

    def _untemplated(self, query: Query) -> str:
        """The prompt of a family without a chat template exactly as its processor lays it out (PaliGemma: each
        image's token, BOS, the task prefix and the prompt, "\n"), so that every tokenizer-only reading of the
        rendered text (_first_tokens) sees what the model sees."""
        bos = self.tokenizer.bos_token or ""
        images = (self._image_token or "") * len(query.images)
        return f"{images}{bos}{UNTEMPLATED_PREFIX[self._model_type]}{query.prompt}\n"

    def _add_special(self, text: str) -> bool:
        # Same rule as processor.apply_chat_template(tokenize=True): a template that writes BOS itself must not
        # get a second one from the tokenizer.
        bos = self.tokenizer.bos_token
        return not (bos and text.startswith(bos))

    def _process(self, texts: list[str], queries: Sequence[Query]) -> dict[str, Any]:
        """Processor outputs (CPU tensors) for rendered texts, left-padded; images decoded outside the lock."""
        kwargs: dict[str, Any] = {"padding": True, "padding_side": "left", "return_tensors": "pt"}
        kwargs["add_special_tokens"] = self._add_special(texts[0])
        if self._model_type in UNTEMPLATED_PREFIX and self.is_vlm:
            return self._process_untemplated(texts, queries, kwargs)
        if any(q.images for q in queries):
            kwargs["images"] = [[self._fit_image(im) for im in _placed(q)] for q in queries]
            kwargs |= self._image_kwargs  # the spec's pixel bounds / tile count
        with self._lock:
            return dict(self.processor(text=texts, **kwargs))

    def _fit_image(self, image: Any) -> Any:
        side = self._min_image_side
        if not side or max(image.size) * 2 > side:
            return image
        scale = side / max(image.size)
        return image.resize((max(1, round(image.width * scale)), max(1, round(image.height * scale))))

    def _process_untemplated(
        self, texts: list[str], queries: Sequence[Query], kwargs: dict[str, Any]
    ) -> dict[str, Any]:
        """PaliGemma: its processor inserts BOS after the images and appends "\n" itself, so it gets the rendered
        text without them; it needs images, so a text-only batch is tokenized as rendered (every token in the
        bidirectional prefix, token type 0, as the processor marks a prompt). ``labels`` (for training) are dropped."""
        bos = self.tokenizer.bos_token or ""
        if not any(q.images for q in queries):
            with self._lock:
                return dict(self.tokenizer(texts, return_token_type_ids=True, **kwargs))
        kwargs["images"] = [q.pil_images() for q in queries]
        texts = [t.replace(bos, "", 1).removesuffix("\n") for t in texts]
        with self._lock:
            enc = dict(self.processor(text=texts, **kwargs))
        enc.pop("labels", None)
        return enc

    def _to_device(self, enc: dict[str, Any]) -> dict[str, Any]:
        import torch

        dev, dtype = self.model.device, self.model.dtype
        return {
            k: (v.to(dev, dtype) if v.is_floating_point() else v.to(dev)) if isinstance(v, torch.Tensor) else v
            for k, v in enc.items()
        }

    def _encode(self, queries: Sequence[Query], suffixes: Sequence[list[int]] | None = None) -> dict[str, Any]:
        """Model inputs for a batch, left-padded, on the model's device; ``suffixes`` are token ids to append."""
        enc = self._process([self._render(q) for q in queries], queries)
        if suffixes is not None:
            enc = self._append_tokens(enc, suffixes)
            if "position_ids" in self._accepts and hasattr(self.model, "_prepare_position_ids_for_generation"):
                # The positions generate() would use (left pads skipped; 3-D M-RoPE for Qwen-VL), so a score is
                # computed exactly as the model would see that answer while generating it.
                enc["position_ids"] = self.model._prepare_position_ids_for_generation(enc["input_ids"], enc)
        return self._to_device(enc)

    def _kv_bytes_per_token(self) -> int:
        """Bytes of KV cache one token takes (keys and values, every layer), from the text model's config."""
        cfg = self.model.config.get_text_config(decoder=True)
        heads = getattr(cfg, "num_key_value_heads", None) or cfg.num_attention_heads
        head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
        return int(2 * cfg.num_hidden_layers * heads * head_dim * self.model.dtype.itemsize)

    def _free_device_bytes(self) -> int:
        import torch

        free, _total = torch.cuda.mem_get_info(self.model.device)
        return int(free)

    def _append_tokens(self, enc: dict[str, Any], suffixes: Sequence[list[int]]) -> dict[str, Any]:
        """Append ``suffixes[r]`` to row r of every per-token tensor, then left-pad the rows again.

        Per-token tensors (input_ids, attention_mask, and e.g. Qwen's mm_token_type_ids) are those shaped like
        input_ids; the appended tokens are text, so they get mask 1 and type 0 (PaliGemma: type 1, the causal
        suffix, as its generate() marks new tokens). A per-token tensor with more dimensions (Mllama's
        cross_attention_mask) repeats its last row for each new token, as generate() extends it. Image tensors stay
        as they are.
        """
        import torch

        ids, mask = enc["input_ids"], enc["attention_mask"].bool()
        per_token = [k for k, v in enc.items() if isinstance(v, torch.Tensor) and v.shape[:2] == ids.shape]
        lengths = [int(mask[r].sum()) + len(s) for r, s in enumerate(suffixes)]
        width = max(lengths)
        out = dict(enc)
        for key in per_token:
            fill = self.tokenizer.pad_token_id if key == "input_ids" else 0
            new = torch.full((len(suffixes), width, *enc[key].shape[2:]), fill, dtype=enc[key].dtype)
            for r, suffix in enumerate(suffixes):
                kept = enc[key][r][mask[r]]
                if key == "input_ids":
                    extra = torch.tensor(suffix, dtype=kept.dtype)
                elif kept.dim() > 1:
                    extra = kept[-1:].expand(len(suffix), *kept.shape[1:])
                else:
                    value = key == "attention_mask" or (key == "token_type_ids" and self._model_type == "paligemma")
                    extra = torch.full((len(suffix),), int(value), dtype=kept.dtype)
                row = torch.cat([kept, extra])
                new[r, width - len(row) :] = row
            out[key] = new
        return out


# apply_chat_template's own parameters: a run's template keywords must not set how vlmdesk renders (tokenize, the
# generation prompt) or swap the template itself.
_RESERVED_TEMPLATE_KWARGS = frozenset(
    (
        "conversation",
        "tokenize",
        "add_generation_prompt",
        "continue_final_message",
        "return_dict",
        "return_tensors",
        "chat_template",
        "padding",
        "truncation",
        "max_length",
        "tools",
        "documents",
        "return_assistant_tokens_mask",
        "processor_kwargs",
        "tokenizer_kwargs",
        "messages",
    )
)


def _template_kwargs(chat: Chat) -> dict[str, Any]:
    """A run's chat template keyword arguments as keywords (Chat.kwargs); BackendError for one that would change how
    vlmdesk renders."""
    value = chat.kwargs()
    if reserved := sorted(_RESERVED_TEMPLATE_KWARGS & value.keys()):
        raise BackendError(f"hf: chat template kwargs may not set {', '.join(reserved)} (vlmdesk renders with them)")
    return value


def _thought_budget(budgets: list[int | None], opening: int, closing: int) -> Any:
    """A logits processor bounding each row's thought: once a row has generated ``budgets[r]`` tokens inside a
    thought (after its last ``<think>``, which the prompt may have opened, and no ``</think>`` since), its next token
    is ``</think>``, and the model goes on to answer within max_new_tokens — what vLLM's thinking_token_budget does
    on a server. Rows without a budget (None) are left alone."""
    import torch
    from transformers import LogitsProcessor, LogitsProcessorList

    class ThoughtBudget(LogitsProcessor):
        def __init__(self) -> None:
            self.prompt_width: int | None = None

        def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
            width = input_ids.shape[1]
            if self.prompt_width is None:  # the first step sees the (padded) prompts alone
                self.prompt_width = width
            at = torch.arange(width, device=input_ids.device)
            last_open = torch.where(input_ids == opening, at, -1).max(-1).values
            last_close = torch.where(input_ids == closing, at, -1).max(-1).values
            thought_from = torch.clamp(last_open + 1, min=self.prompt_width)  # generated tokens only
            limit = torch.tensor([2**62 if b is None else b for b in budgets], device=input_ids.device)
            over = (last_open > last_close) & (width - thought_from >= limit)
            if bool(over.any()):
                scores[over] = -math.inf
                scores[over, closing] = 0.0
            return scores

    return LogitsProcessorList([ThoughtBudget()])


def _placed(query: Query) -> list[Any]:
    """A query's images decoded, in the order its rendered prompt places them (the processor pairs them with the image
    tokens in that order)."""
    images = query.pil_images()
    return [images[p] for p in query.parts() if isinstance(p, int)]


def _is_image_text_to_text(config: transformers.PretrainedConfig) -> bool:
    from transformers.models.auto.modeling_auto import MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES

    auto_map = getattr(config, "auto_map", None) or {}
    return config.model_type in MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES or any(
        k in auto_map for k in ("AutoModelForImageTextToText", "AutoModelForVision2Seq")
    )
