"""The one small protocol every model backend implements."""

from __future__ import annotations

import io
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from PIL import Image
from pathlib import Path
from urllib.parse import urlencode

from db.errors import EnvironmentFault
from evaluator.registry import Field, resolve


@dataclass(frozen=True)
class Chat:
    """How a run's chat is set up, the same for each of its queries (issue 36): a system prompt sent before the
    question, keyword arguments for the model's chat template (a JSON object's text, e.g. '{"enable_thinking":
    true}'; a server gets them as ``chat_template_kwargs``, a local model's template as keywords) and the most
    tokens the thought may take where the backend can bound it apart (None: only the run's max_new_tokens)."""

    system: str | None = None
    template_kwargs: str | None = None
    thinking_budget: int | None = None

    def kwargs(self) -> dict[str, Any]:
        """The chat template's keyword arguments ({} when none); BackendError for a text that is not a JSON object
        (a run checks its own at the door: runner.canonical_template_kwargs)."""
        import json

        if not self.template_kwargs:
            return {}
        try:
            value = json.loads(self.template_kwargs)
        except ValueError:
            raise BackendError(f"chat template kwargs are not JSON: {self.template_kwargs[:60]!r}") from None
        if not isinstance(value, dict):
            raise BackendError(f"chat template kwargs must be a JSON object, got {self.template_kwargs[:60]!r}")
        return value


# Where a prompt places an image (issue 37): "<image 1>", "<image 2>"… (1-based), as MMMU's questions write them.
IMAGE_PLACEHOLDER = re.compile(r"<image ([1-9][0-9]{0,2})>")
# The most images one query sends: an item's images (the importers keep at most MAX_ITEM_IMAGES, the same 64, in
# evaluator/formats/importers/common.py) and a k-shot prompt's examples' images together.
MAX_QUERY_IMAGES = 64


def image_parts(prompt: str, images: int) -> list[str | int]:
    """A prompt of ``images`` images as a model gets it, in order: texts, and images by their index (0-based).

    The one rule every backend places images by: image N goes where the first ``<image N>`` of the prompt stands, the
    placeholder's text replaced by the image (VLMEvalKit's MMMUDataset.split_MMMU, vlmeval/dataset/image_mcq.py at
    e8e78f05: what API models and the classes without a prompt of their own get); images no placeholder names go
    first, in order (every item without placeholders, as before); a placeholder naming no image, or naming an image
    placed already, stays text (VLMEvalKit would send that image twice). Without placeholders the result is every
    image then the prompt, even an empty one; with them, empty texts between images are left out. BackendError for
    more than MAX_QUERY_IMAGES images."""
    if images > MAX_QUERY_IMAGES:
        raise BackendError(f"a query of {images} images: at most {MAX_QUERY_IMAGES} are sent")
    if images <= 0:
        return [prompt]
    cuts: list[tuple[int, int, int]] = []  # (start, end, image index) of each placing placeholder
    placed: set[int] = set()
    for m in IMAGE_PLACEHOLDER.finditer(prompt):
        index = int(m.group(1)) - 1
        if index < images and index not in placed:
            placed.add(index)
            cuts.append((m.start(), m.end(), index))
    if not cuts:
        return [*range(images), prompt]
    out: list[str | int] = [i for i in range(images) if i not in placed]
    at = 0
    for start, end, index in cuts:
        if start > at:
            out.append(prompt[at:start])
        out.append(index)
        at = end
    if at < len(prompt):
        out.append(prompt[at:])
    return out


def shift_placeholders(text: str, by: int) -> str:
    """The text with each ``<image N>`` renumbered ``<image N+by>`` (a k-shot prompt puts its examples' images
    before the item's)."""
    return IMAGE_PLACEHOLDER.sub(lambda m: f"<image {int(m.group(1)) + by}>", text) if by else text


@dataclass(frozen=True)
class Query:
    """One prompt to a model: the text, the images (encoded bytes, e.g. JPEG/PNG), the option letters offered, and
    the run's chat setup.

    ``images`` is empty when the run is text-only; in the item's order, placed by the prompt's ``<image N>``
    placeholders (``parts()``, image_parts' rule). ``letters`` lets reference baselines answer without a model.
    """

    prompt: str
    images: tuple[bytes, ...] = ()
    letters: tuple[str, ...] = ()
    chat: Chat = Chat()

    def parts(self) -> list[str | int]:
        """The prompt's texts and images (their index in ``images``) in the order the model gets them."""
        return image_parts(self.prompt, len(self.images))

    def pil_images(self) -> list[Image.Image]:
        from PIL import Image

        out = []
        for data in self.images:
            img = Image.open(io.BytesIO(data))
            out.append(img.convert("RGB"))
        return out


@runtime_checkable
class Backend(Protocol):
    """Answers a batch of queries with texts; optionally scores candidate continuations."""

    spec: str

    def generate(self, queries: Sequence[Query], max_new_tokens: int) -> Sequence[str | Generation]:
        """Answers, one per query, in order: texts, or Generations where the backend knows more (its thought, why it
        stopped, its tokens)."""
        ...

    def describe(self) -> dict[str, Any]:
        """What to store with a run (no secrets): resolved settings, library versions."""
        ...


# Optional scheduling hints a backend may declare (read through chunk_items() and call_size(); docs/adr/0016):
#   chunk_items: int | None — the engine asks every wave of items[0:C] before items[C:2C]…, so a prefix cache (a
#       local KV cache, a server's) keeps an item's prompt while the item is alive; None: one chunk, all items.
#   call_size(batch_size) -> int — how many queries one generate()/score() call gets (default: the batch size),
#       e.g. enough for a server backend to keep all its concurrent requests in flight.
# Neither may change an answer: a query's answer depends on the query only.


def chunk_items(backend: object) -> int | None:
    """The backend's chunk size in items, or None (one chunk). BackendError when it declares a bad one."""
    value = getattr(backend, "chunk_items", None)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise BackendError(f"{_spec_of(backend)}: chunk_items must be a whole number ≥ 1 or None, got {value!r}")
    return value


def call_size(backend: object, batch_size: int) -> int:
    """How many queries the engine hands the backend at once (its call_size(batch_size), default batch_size)."""
    method = getattr(backend, "call_size", None)
    value = batch_size if method is None else method(batch_size)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise BackendError(f"{_spec_of(backend)}: call_size({batch_size}) must be a whole number ≥ 1, got {value!r}")
    return value


def _spec_of(backend: object) -> str:
    return str(getattr(backend, "spec", type(backend).__name__))[:200]


@dataclass(frozen=True)
class Usage:
    """What a server says one answer cost, in tokens (None: not said). Checked at the door: whole numbers ≥ 0.
    ``reasoning_tokens`` are the part of the completion's tokens spent thinking (usage.completion_tokens_details)."""

    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    reasoning_tokens: int | None = None


@dataclass(frozen=True)
class Generation:
    """What a model said for one query, as a backend gives it: the text, the thought when the backend got it apart
    (a server's ``reasoning_content``; None otherwise — a thought inline in the text is split by the engine,
    evaluator/engine/reasoning.py), why generation stopped (``finish_reason``: "stop", "length" when the token
    budget ended it, None when not said) and what it cost. A backend's ``generate`` may give plain strings."""

    text: str
    thought: str | None = None
    finish_reason: str | None = None
    usage: Usage | None = None


def texts_of(answers: Sequence[str | Generation]) -> list[str]:
    """The texts of a backend's answers (a backend loaded through the door has split any thought off already)."""
    return [a if isinstance(a, str) else a.text for a in answers]


def as_generation(value: str | Generation) -> Generation:
    """A backend's answer as a Generation (a plain string is a text and nothing else said)."""
    return value if isinstance(value, Generation) else Generation(value)


@dataclass(frozen=True)
class Answer:
    """One answer of a stream: the key it was sent with, its text, the wall time from send to answer (retries
    included), the tokens it cost when the server said so, and the thought and finish reason as a Generation."""

    key: int
    text: str
    latency_ms: float
    usage: Usage | None = None
    thought: str | None = None
    finish_reason: str | None = None

    @classmethod
    def of(cls, key: int, said: Generation, latency_ms: float) -> Answer:
        return cls(key, said.text, latency_ms, said.usage, said.thought, said.finish_reason)

    def generation(self) -> Generation:
        return Generation(self.text, self.thought, self.finish_reason, self.usage)


class Stream(Protocol):
    """Requests kept in flight by a server backend (docs/adr/0032): the engine sends a query whenever `load()` is
    below `capacity` and takes the answers as they come, in any order. Retries, back-off and replicas are the
    stream's; a request that fails for good raises BackendError from `answers()` (ServersDown when no server
    answers). `close()` abandons whatever is in flight: nothing a request thread holds is ever stored."""

    capacity: int

    def send(self, key: int, query: Query) -> None: ...

    def load(self) -> int:
        """Requests sent and not yet answered (in flight, or waiting to be retried)."""
        ...

    def answers(self, timeout: float) -> list[Answer]:
        """Every answer ready, waiting at most `timeout` seconds (wall time) for the first one; [] when none came."""
        ...

    def close(self) -> None: ...


def open_stream(backend: object, max_new_tokens: int) -> Stream | None:
    """The backend's stream (its `open_stream(max_new_tokens)`), or None: a backend without one is asked in
    waves of calls (a local model wants batches, not a stream)."""
    method = getattr(backend, "open_stream", None)
    if not callable(method):
        return None
    stream: Stream | None = method(max_new_tokens)
    if stream is None:
        return None
    if not isinstance(stream.capacity, int) or isinstance(stream.capacity, bool) or stream.capacity < 1:
        raise BackendError(f"{_spec_of(backend)}: a stream's capacity must be a whole number ≥ 1")
    return stream


@dataclass(frozen=True)
class RetryWait:
    """A backend waiting before it asks a server again, as a backend with an ``on_wait`` attribute tells it (from the
    thread that called generate): the server, the query (its index in the call), why the last try failed, what the
    server asked for (Retry-After, seconds) if it did, what is waited (capped), and the try that follows."""

    server: str
    query: int
    error: str
    retry_after_s: float | None
    wait_s: float
    attempt: int
    attempts: int

    def line(self) -> str:
        """What a progress line says: "server asked to retry after 999999 s; waiting 60 s (try 2 of 5)"."""
        why = (
            f"server asked to retry after {_seconds(self.retry_after_s)} s"
            if self.retry_after_s is not None
            else self.error
        )
        return f"{why}; waiting {_seconds(self.wait_s)} s (try {self.attempt} of {self.attempts})"


def _seconds(value: float) -> str:
    return f"{value:.0f}" if value >= 10 or value == int(value) else f"{value:.1f}"


def reseed(backend: Backend, seed: int) -> None:
    """Give a loaded backend another run's sampling seed (the next sample of a sample group, docs/adr/0057). A backend
    that samples with the run's seed keeps it as an int `seed` (hf:, baseline:); one that sends none of its own
    (openai:, whose spec may not fix one for samples) has nothing to change."""
    found: object = backend
    for _ in range(4):  # through the wrappers that hold it (the door, a started server's): each keeps `backend`
        own = getattr(found, "__dict__", {})
        if isinstance(own.get("seed"), int):
            found.seed = seed  # type: ignore[attr-defined]
            return
        found = own.get("backend")


def close_backend(backend: object) -> None:
    """Stop what a backend started (a server of vllm: or sglang:), through its ``close()`` where it has one; a
    backend without one holds nothing to stop. Whoever loads a backend closes it when done with it."""
    method = getattr(backend, "close", None)
    if callable(method):
        method()


def log_wait(wait: RetryWait) -> None:
    """Where a wait goes when nobody listens: a warning on the log (stderr)."""
    logging.getLogger("evaluator.backends").warning("%s: query %d: %s", wait.server, wait.query, wait.line())


class ScoringBackend(Backend, Protocol):
    def score(self, queries: Sequence[Query], candidates: Sequence[Sequence[str]]) -> list[list[float]]:
        """Sum of token log-probabilities of each candidate continuation given its query's prompt."""
        ...


class BackendError(EnvironmentFault, RuntimeError):
    """A backend failed in a way the user should read (bad spec, unreachable server, model load error). Commands
    that can tell a bad spec from a failing model catch it and say which; elsewhere it is one line, exit 1."""


class ServersDown(BackendError):
    """No server of a run answers any more (every replica refused, failed or timed out until its request ran out of
    retries): the run stops as interrupted, not failed — nothing is wrong with it, and running it again resumes."""


@dataclass(frozen=True)
class BuildContext:
    """What a run knows that a backend may use: the run's seed, the benchmark's most frequent answer (for
    `baseline:frequent`), the run's batch size (a local model's default) and where a started server's log goes."""

    seed: int = 0
    frequent_answer: str | None = None
    batch_size: int | None = None
    # Where a backend that starts a server (vllm:, sglang:) keeps its log: the workspace's folder of server logs;
    # None outside a workspace (a temporary folder is used).
    log_dir: Path | None = None


@dataclass(frozen=True)
class BackendEntry:
    """A model backend as the registry knows it: the scheme a spec starts with (``name``), its syntax and help,
    the fields of the app's form, and two functions taking the part of the spec after ``name:`` —
    ``validate`` checks it without loading anything (no model, no network; raises BackendError), ``build``
    makes the backend (``build(rest, BuildContext)``). Either may be "module:function", imported when used."""

    name: str
    syntax: str
    help: str
    build: Callable[[str, BuildContext], Backend] | str
    validate: Callable[[str], None] | str | None = None
    fields: tuple[Field, ...] = ()
    examples: tuple[str, ...] = ()
    title: str = ""  # what the app's menus call it (default: the scheme)
    # A reference point needing no model: the app offers its examples as they are, never as an extractor's model.
    reference: bool = False
    # What of `rest` names a run (runner.config_key), e.g. openai's replicas left out; None: all of it.
    identity: Callable[[str], str] | str | None = None

    def check(self, rest: str) -> None:
        """BackendError when ``rest`` cannot be read (an entry without ``validate`` is checked by building it)."""
        if self.validate is not None:
            resolve(self.validate)(rest)
        else:
            self.make(rest, BuildContext())

    def make(self, rest: str, context: BuildContext) -> Backend:
        backend: Backend = resolve(self.build)(rest, context)
        return backend

    def compose(self, values: Mapping[str, str | bool | None]) -> str:
        """The spec a filled form stands for: the field named "" right after the scheme, "@" after an @, the
        other fields as query options (empty ones and a flag left off are omitted)."""
        target = str(values.get("") or "").strip()
        at = str(values.get("@") or "").strip()
        options = {}
        for f in self.fields:
            value = values.get(f.name)
            if f.name in ("", "@") or value in (None, "", False):
                continue
            options[f.name] = "1" if value is True else str(value).strip()
        return f"{self.name}:{target}" + (f"@{at}" if at else "") + (f"?{urlencode(options)}" if options else "")
