"""Local Hugging Face transformers models: ``hf:<local path or hub id>[?dtype=…&device=…&batch_size=…]``.

Vision-language models load through AutoProcessor + AutoModelForImageTextToText; a plain text LM falls back to
AutoTokenizer + AutoModelForCausalLM so text-only quality-control runs can use it. torch and transformers are
imported lazily: importing this module must stay cheap for the CLI and the GUI.

Throughput (docs/adr/0015-hf-prefix-sharing-and-overlap.md): the rotations of one item share everything before
their options (image, hint, question), so each prompt is split there into a *prefix*, prefilled once and kept as a
KV cache in a bounded LRU, and a *suffix*, prefilled per pass on top of a copy of that cache. A call's sub-batches
are prepared (image decoding, processor, tokenising) on a worker thread while the previous one runs. A query whose
candidates are single tokens is scored from one row, read at its last position.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import logging
import threading
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlencode

from db.errors import MissingExtra
from evaluator.backends.families import TEXT_SHARE_TYPES, family_of, unverified_note
from evaluator.registry import Field

from .base import BackendEntry, BackendError, Query

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


def parse_hf_spec(rest: str, *, default_batch_size: int | None = None) -> HFBackend:
    """Build a backend from the part of a spec after ``hf:``:
    ``path_or_id[?dtype=…&device=…&batch_size=…&trust_remote_code=1&share_prefix=0&overlap=0]``."""
    model, kwargs = hf_options(rest, default_batch_size=default_batch_size)
    return HFBackend(model, **kwargs)


def hf_options(rest: str, *, default_batch_size: int | None = None) -> tuple[str, dict[str, Any]]:
    """The model and the keyword arguments of HFBackend a spec names, read without loading anything."""
    model, _, query = rest.partition("?")
    if not model:
        raise BackendError("hf spec needs a model path or hub id: hf:<path or id>[?dtype=…&device=…&batch_size=…]")
    # The run's --batch-size applies unless the spec pins its own; none at all is chosen by the device.
    kwargs: dict[str, Any] = {"max_batch_size": default_batch_size} if default_batch_size else {}
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
        else:
            raise BackendError(
                f"hf spec: unknown option {key[:40]!r} (known: dtype, device, batch_size, {', '.join(_SWITCHES)})"
            )
    if kwargs.get("dtype") not in (None, *_DTYPES):
        raise BackendError(f"hf: unknown dtype {kwargs['dtype']!r} (one of {', '.join(_DTYPES)})")
    return model, kwargs


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
        "&share_prefix=0&overlap=0]",
        help="a local Hugging Face transformers model (image-text-to-text, or a text LM), batched greedy generation "
        f"and likelihood scoring; rotations share their prefix's KV cache; needs the hf extra ({INSTALL_HF})",
        build=lambda rest, context: parse_hf_spec(rest, default_batch_size=context.batch_size),
        validate=lambda rest: hf_options(rest) and None,
        fields=(
            Field("", "Model directory or hub id", "path", required=True, placeholder="llava-hf/llava-1.5-7b-hf"),
            Field("dtype", "dtype", "choice", choices=("", *_DTYPES), help="default: bfloat16 on CUDA, else float32"),
            Field("device", "Device", placeholder="cuda, cpu, auto"),
            Field("batch_size", "Batch size", "int", help="default: the run's --batch-size, else auto on CUDA"),
            Field("trust_remote_code", "Trust remote code", "flag", help="run the model repository's own code"),
        ),
        examples=("hf:llava-hf/llava-1.5-7b-hf", "hf:./my-vlm?dtype=bfloat16&batch_size=16"),
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


@dataclass
class _Prepared:
    """A sub-batch made ready on the CPU: its rows, the processed inputs of prefixes not cached yet (keys in the
    order of the batch's rows) and of the plain rows."""

    rows: list[_Row]
    new_keys: list[tuple[Any, ...]] = field(default_factory=list)
    new_enc: dict[str, Any] | None = None
    plain_enc: dict[str, Any] | None = None


class HFBackend:
    """Greedy generation and candidate log-likelihoods with a local transformers model."""

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
        query = urlencode({k: v for k, v in options.items() if v is not None})
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
        self._setup(loaded, processor, device, max_batch_size, share_prefix, overlap)

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
    ) -> HFBackend:
        """A backend over a model already in memory (bench/gpu_bench.py builds random-weight 7B models on the GPU
        without writing them to disk); everything after loading is the same code as a spec's."""
        self = cls.__new__(cls)
        self.spec = f"hf:{name}"
        self.model_name = name
        self.trust_remote_code = False
        self.is_vlm = _is_image_text_to_text(model.config)
        self._setup(model, processor, str(model.device), max_batch_size, share_prefix, overlap)
        return self

    def _setup(
        self, model: Any, processor: Any, device: str, max_batch_size: int | None, share_prefix: bool, overlap: bool
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
            "notes": list(self.notes),
            "transformers": transformers.__version__,
            "torch": torch.__version__,
        }

    def call_size(self, batch_size: int) -> int:
        """Queries the engine hands to one call (contract): several sub-batches, so the next one is prepared on a
        worker thread while one runs."""
        return self.max_batch_size * (SUB_BATCHES_PER_CALL if self.overlap else 1)

    def clear_cache(self) -> None:
        """Forget every cached prefix (benchmarks compare settings from the same cold start)."""
        self._prefixes.clear()
        self._prefix_bytes = 0

    # ---- generation -------------------------------------------------------------------------------------

    def generate(self, queries: Sequence[Query], max_new_tokens: int) -> list[str]:
        results: list[str] = [""] * len(queries)

        def work(rows: list[_Row], new_ids: list[list[int]], _logits: Any) -> None:
            with self._lock:
                texts = self.tokenizer.batch_decode(new_ids, skip_special_tokens=True)
            for row, text in zip(rows, texts):
                results[row.index] = text.strip()

        self._drive(queries, [1] * len(queries), max_new_tokens, False, work)
        return results

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
                    ids, first = self._continue(shared, max_new_tokens, logits)
                    work(shared, ids, first)
                if plain:
                    assert prepared.plain_enc is not None
                    ids, first = self._plain(prepared.plain_enc, max_new_tokens, logits)
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
        out = self.model.generate(
            input_ids=ids.to(device),
            attention_mask=mask.to(device),
            cache=DynamicCache(ddp_cache_data=layers),
            **self._generation_kwargs(max_new_tokens, logits),
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

    def _plain(self, enc: dict[str, Any], max_new_tokens: int, logits: bool) -> tuple[list[list[int]], Any]:
        enc = self._to_device(enc)
        self.stats["plain_rows"] += enc["input_ids"].shape[0]
        out = self.model.generate(**enc, **self._generation_kwargs(max_new_tokens, logits))
        # Left padding: every row's prompt ends at the same column, so the new tokens start there.
        return out.sequences[:, enc["input_ids"].shape[1] :].tolist(), out.logits[0] if logits else None

    def _generation_kwargs(self, max_new_tokens: int, logits: bool) -> dict[str, Any]:
        # Greedy; each row stops at EOS (finished rows are padded), the call when every row has stopped.
        return {
            "max_new_tokens": max_new_tokens,
            "do_sample": False,
            "pad_token_id": self.tokenizer.pad_token_id,
            "return_dict_in_generate": True,
            "output_logits": logits,
        }

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
        """The prompt text after the chat template, ending with the generation prompt."""
        if not self.is_vlm:
            if query.images:
                raise BackendError(f"hf: {self.model_name} is a text-only model and cannot take images")
            if self.tokenizer.chat_template is None:  # a base LM: the prompt as is
                return query.prompt
            conversation: list[dict[str, Any]] = [{"role": "user", "content": query.prompt}]
        else:
            if getattr(self.processor, "chat_template", None) is None and self.tokenizer.chat_template is None:
                if self._model_type in UNTEMPLATED_PREFIX:
                    return self._untemplated(query)
                raise BackendError(f"hf: {self.model_name} has no chat template; cannot place its images")
            content = [{"type": "image"} for _ in query.images] + [{"type": "text", "text": query.prompt}]
            conversation = [{"role": "user", "content": content}]
        with self._lock:
            prompt: str = self.processor.apply_chat_template(conversation, add_generation_prompt=True, tokenize=False)
        return prompt

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
            kwargs["images"] = [[self._fit_image(im) for im in q.pil_images()] for q in queries]
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


def _is_image_text_to_text(config: transformers.PretrainedConfig) -> bool:
    from transformers.models.auto.modeling_auto import MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES

    auto_map = getattr(config, "auto_map", None) or {}
    return config.model_type in MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES or any(
        k in auto_map for k in ("AutoModelForImageTextToText", "AutoModelForVision2Seq")
    )
