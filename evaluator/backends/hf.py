"""Local Hugging Face transformers models: ``hf:<local path or hub id>[?dtype=…&device=…&batch_size=…]``.

Vision-language models load through AutoProcessor + AutoModelForImageTextToText; a plain text LM falls back to
AutoTokenizer + AutoModelForCausalLM so text-only quality-control runs can use it. torch and transformers are
imported lazily: importing this module must stay cheap for the CLI and the GUI.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlencode

from evaluator.registry import Field

from .base import BackendEntry, BackendError, Query

if TYPE_CHECKING:
    import transformers  # imported where a model loads: it costs seconds

_DTYPES = ("float32", "float16", "bfloat16", "auto")
_TRUE, _FALSE = {"1", "true", "yes", "on"}, {"0", "false", "no", "off"}


def parse_hf_spec(rest: str, *, default_batch_size: int | None = None) -> HFBackend:
    """Build a backend from the part of a spec after ``hf:``:
    ``path_or_id[?dtype=…&device=…&batch_size=…&trust_remote_code=1]``."""
    model, kwargs = hf_options(rest, default_batch_size=default_batch_size)
    return HFBackend(model, **kwargs)


def hf_options(rest: str, *, default_batch_size: int | None = None) -> tuple[str, dict[str, Any]]:
    """The model and the keyword arguments of HFBackend a spec names, read without loading anything."""
    model, _, query = rest.partition("?")
    if not model:
        raise BackendError("hf spec needs a model path or hub id: hf:<path or id>[?dtype=…&device=…&batch_size=…]")
    # The run's --batch-size applies unless the spec pins its own.
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
            if not value.isdigit() or not 1 <= int(value[:12]) <= 1_000_000 or len(value) > 12:
                raise BackendError(f"hf spec: batch_size must be a whole number in 1..1000000, got {value[:40]!r}")
            kwargs["max_batch_size"] = int(value)
        elif key == "trust_remote_code":
            if value.lower() not in _TRUE | _FALSE:
                raise BackendError(f"hf spec: trust_remote_code must be 1 or 0, got {value!r}")
            kwargs["trust_remote_code"] = value.lower() in _TRUE
        else:
            raise BackendError(f"hf spec: unknown option {key!r} (known: dtype, device, batch_size, trust_remote_code)")
    if kwargs.get("dtype") not in (None, *_DTYPES):
        raise BackendError(f"hf: unknown dtype {kwargs['dtype']!r} (one of {', '.join(_DTYPES)})")
    return model, kwargs


BACKENDS = (
    BackendEntry(
        name="hf",
        title="Local or hub model",
        syntax="hf:<local path or hub id>[?dtype=bfloat16&device=cuda&batch_size=8&trust_remote_code=1]",
        help="a local Hugging Face transformers model (image-text-to-text, or a text LM), batched greedy generation "
        "and likelihood scoring",
        build=lambda rest, context: parse_hf_spec(rest, default_batch_size=context.batch_size),
        validate=lambda rest: hf_options(rest) and None,
        fields=(
            Field("", "Model directory or hub id", "path", required=True, placeholder="llava-hf/llava-1.5-7b-hf"),
            Field("dtype", "dtype", "choice", choices=("", *_DTYPES), help="default: bfloat16 on CUDA, else float32"),
            Field("device", "Device", placeholder="cuda, cpu, auto"),
            Field("batch_size", "Batch size", "int", help="default: the run's --batch-size"),
            Field("trust_remote_code", "Trust remote code", "flag", help="run the model repository's own code"),
        ),
        examples=("hf:llava-hf/llava-1.5-7b-hf", "hf:./my-vlm?dtype=bfloat16&batch_size=16"),
    ),
)


class HFBackend:
    """Greedy generation and candidate log-likelihoods with a local transformers model."""

    def __init__(
        self,
        model: str,
        *,
        dtype: str | None = None,
        device: str | None = None,
        trust_remote_code: bool = False,
        max_batch_size: int = 8,
    ):
        import torch
        import transformers

        if dtype is not None and dtype not in _DTYPES:
            raise BackendError(f"hf: unknown dtype {dtype!r} (one of {', '.join(_DTYPES)})")
        if max_batch_size < 1:
            raise BackendError(f"hf: max_batch_size must be at least 1, got {max_batch_size}")
        # The spec as asked for (before defaults are resolved), in the form parse_hf_spec reads back.
        options = {
            "dtype": dtype,
            "device": device,
            "batch_size": max_batch_size if max_batch_size != 8 else None,
            "trust_remote_code": 1 if trust_remote_code else None,
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
            self.model = model_cls.from_pretrained(
                source,
                config=config,
                dtype=dtype if dtype == "auto" else getattr(torch, dtype),
                device_map=device,  # "auto" spreads over several GPUs; "cuda"/"cpu" load straight onto one device
                trust_remote_code=trust_remote_code,
            )
        except Exception as e:  # transformers raises OSError, ValueError, KeyError, … for unloadable models
            raise BackendError(f"hf: cannot load model {model!r}: {type(e).__name__}: {e}") from e

        self.model.eval()
        self.processor = processor
        self.tokenizer = getattr(processor, "tokenizer", processor)
        if self.tokenizer.pad_token is None:  # Llama-style tokenizers have none; batching needs one
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.model_name = model
        self.dtype = str(self.model.dtype).removeprefix("torch.")
        self.device = device
        self.trust_remote_code = trust_remote_code
        self.max_batch_size = max_batch_size
        self._accepts = set(inspect.signature(self.model.forward).parameters)

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
            "trust_remote_code": self.trust_remote_code,
            "transformers": transformers.__version__,
            "torch": torch.__version__,
        }

    # ---- generation -------------------------------------------------------------------------------------

    def generate(self, queries: Sequence[Query], max_new_tokens: int) -> list[str]:
        import torch

        results: list[str] = [""] * len(queries)
        with torch.inference_mode():
            for batch in self._batches(queries, [1] * len(queries)):
                enc = self._encode([queries[i] for i in batch])
                out = self.model.generate(
                    **enc, max_new_tokens=max_new_tokens, do_sample=False, pad_token_id=self.tokenizer.pad_token_id
                )
                # Left padding: every row's prompt ends at the same column, so the new tokens start there.
                texts = self.tokenizer.batch_decode(out[:, enc["input_ids"].shape[1] :], skip_special_tokens=True)
                for i, text in zip(batch, texts):
                    results[i] = text.strip()
        return results

    # ---- likelihood scoring -----------------------------------------------------------------------------

    def score(self, queries: Sequence[Query], candidates: Sequence[Sequence[str]]) -> list[list[float]]:
        """Sum of log-probs of each candidate's tokens right after the generation prompt.

        Each (query, candidate) pair is one row of a single forward pass per batch; the processor sees the query's
        images once per row, so image placeholders and pixel values stay consistent however rows are laid out.
        A query's candidates are never split across batches.
        """
        import torch

        if len(candidates) != len(queries):
            raise ValueError(f"score: {len(queries)} queries but {len(candidates)} candidate lists")
        # Candidates are tokenized alone (no special tokens) and appended as ids: that fixes exactly which tokens
        # are scored, instead of hoping that tokenizing prompt+candidate splits at the boundary.
        cand_ids = [[self.tokenizer(c, add_special_tokens=False)["input_ids"] for c in cs] for cs in candidates]
        results = [[0.0] * len(cs) for cs in candidates]
        with torch.inference_mode():
            for batch in self._batches(queries, [len(cs) for cs in candidates]):
                rows = [(i, j) for i in batch for j in range(len(candidates[i])) if cand_ids[i][j]]
                if not rows:  # only empty candidates: log-prob of nothing is 0
                    continue
                enc = self._encode([queries[i] for i, _ in rows], [cand_ids[i][j] for i, j in rows])
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
        return results

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
                raise BackendError(f"hf: {self.model_name} has no chat template; cannot place its images")
            content = [{"type": "image"} for _ in query.images] + [{"type": "text", "text": query.prompt}]
            conversation = [{"role": "user", "content": content}]
        prompt: str = self.processor.apply_chat_template(conversation, add_generation_prompt=True, tokenize=False)
        return prompt

    def _encode(self, queries: Sequence[Query], suffixes: Sequence[list[int]] | None = None) -> dict[str, Any]:
        """Model inputs for a batch, left-padded, on the model's device; ``suffixes`` are token ids to append."""
        import torch

        texts = [self._render(q) for q in queries]
        kwargs: dict[str, Any] = {"padding": True, "padding_side": "left", "return_tensors": "pt"}
        # Same rule as processor.apply_chat_template(tokenize=True): a template that writes BOS itself must not
        # get a second one from the tokenizer.
        bos = self.tokenizer.bos_token
        kwargs["add_special_tokens"] = not (bos and texts[0].startswith(bos))
        if any(q.images for q in queries):
            kwargs["images"] = [q.pil_images() for q in queries]
        enc = dict(self.processor(text=texts, **kwargs))
        if suffixes is not None:
            enc = self._append_tokens(enc, suffixes)
            if "position_ids" in self._accepts and hasattr(self.model, "_prepare_position_ids_for_generation"):
                # The positions generate() would use (left pads skipped; 3-D M-RoPE for Qwen-VL), so a score is
                # computed exactly as the model would see that answer while generating it.
                enc["position_ids"] = self.model._prepare_position_ids_for_generation(enc["input_ids"], enc)
        dev, dtype = self.model.device, self.model.dtype
        return {
            k: (v.to(dev, dtype) if v.is_floating_point() else v.to(dev)) if isinstance(v, torch.Tensor) else v
            for k, v in enc.items()
        }

    def _append_tokens(self, enc: dict[str, Any], suffixes: Sequence[list[int]]) -> dict[str, Any]:
        """Append ``suffixes[r]`` to row r of every per-token tensor, then left-pad the rows again.

        Per-token tensors (input_ids, attention_mask, and e.g. Qwen's mm_token_type_ids) are those shaped like
        input_ids; the appended tokens are text, so they get mask 1 and type 0. Image tensors stay as they are.
        """
        import torch

        ids, mask = enc["input_ids"], enc["attention_mask"].bool()
        per_token = [k for k, v in enc.items() if isinstance(v, torch.Tensor) and v.shape == ids.shape]
        lengths = [int(mask[r].sum()) + len(s) for r, s in enumerate(suffixes)]
        width = max(lengths)
        out = dict(enc)
        for key in per_token:
            fill = self.tokenizer.pad_token_id if key == "input_ids" else 0
            new = torch.full((len(suffixes), width), fill, dtype=enc[key].dtype)
            for r, suffix in enumerate(suffixes):
                extra = suffix if key == "input_ids" else [1 if key == "attention_mask" else 0] * len(suffix)
                row = torch.cat([enc[key][r][mask[r]], torch.tensor(extra, dtype=enc[key].dtype)])
                new[r, width - len(row) :] = row
            out[key] = new
        return out


def _is_image_text_to_text(config: transformers.PretrainedConfig) -> bool:
    from transformers.models.auto.modeling_auto import MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES

    auto_map = getattr(config, "auto_map", None) or {}
    return config.model_type in MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES or any(
        k in auto_map for k in ("AutoModelForImageTextToText", "AutoModelForVision2Seq")
    )
