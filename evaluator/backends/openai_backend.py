"""OpenAI-compatible chat-completions servers:
``openai:<model>[@<base url>[,<base url>…]][?key_env=…&concurrency=…&timeout=…&retries=…]``.

One chat completion per query, with the run's system prompt and chat template arguments (base.Chat), the generation
settings the spec sets (temperature, top_p, top_k, repetition_penalty, seed) and its image processor's (min_pixels,
max_pixels, max_tiles: vLLM's per-request mm_processor_kwargs); what each server accepts is sent (OpenAI's own API:
max_completion_tokens, and no temperature for its reasoning models). A thinking model's thought comes back apart
(``reasoning_content`` / ``reasoning``) or inline; the door splits it (reasoning.py).

The engine streams (docs/adr/0032): `open_stream()` keeps `concurrency` requests in flight per replica, each answer
taken as it comes; `generate()` is a call over the same stream. Several base URLs are replicas of one model: a
request goes to the replica with the fewest in flight for its concurrency; a replica that fails (connection refused,
5xx, 429, a timeout, a malformed body) is set aside for the back-off and its requests go to the others; after it,
one probe request must answer before it gets its full share again. ``timeout`` is a wall-clock deadline for each
attempt (not the gap between two bytes). Requests go through the openai SDK (one AsyncOpenAI client per replica on
one event loop, its low-level POST with our JSON and our parsing: docs/adr/0052; openai_stream.py), with the SDK's
own retries off: retries are ours, so they are told (``on_wait``) and testable: jittered exponential back-off, or
the server's ``Retry-After`` (capped at MAX_WAIT_S; the waits of one request at MAX_TOTAL_WAIT_S in all). Any other
4xx fails at once with a one-line message naming the server, the status and what the server said; a request out of
retries while no replica answers is ServersDown (the run stops as interrupted, resumable).

The API key is read from the environment variable the spec names (``key_env``, default ``OPENAI_API_KEY``); the
key itself never enters the spec or ``describe()``, and whatever a server says back (answers, error bodies) is
redacted at the door every backend is loaded through (backends/door.py). Local servers need no key: an unset
variable sends the dummy key ``EMPTY``. The SDK is imported lazily, so importing this module stays cheap.
"""

from __future__ import annotations

import base64
import json
import math
import os
import random
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import parse_qsl, urlencode, urlsplit

from evaluator.registry import Field
from evaluator.spec_settings import GENERATION
from evaluator.spec_settings import RANGES as SETTING_RANGES
from evaluator.spec_settings import WHOLE as WHOLE_SETTINGS

from .base import BackendEntry, BackendError, Generation, Query, RetryWait, Usage, log_wait

if TYPE_CHECKING:
    from .openai_stream import OpenAIStream


class _Response(Protocol):
    """An HTTP response (httpx2's), as error messages read it."""

    @property
    def text(self) -> str: ...

    @property
    def reason_phrase(self) -> str: ...


DEFAULT_KEY_ENV = "OPENAI_API_KEY"
DUMMY_KEY = "EMPTY"
CHUNK_PER_REQUEST = 4  # items per chunk of waves, per concurrent request
OFFICIAL_SERVER = "https://api.openai.com/v1"
MAX_WAIT_S = 60.0  # the longest one wait before a retry, whatever Retry-After asks (999999 s: a minute)
MAX_TOTAL_WAIT_S = 120.0  # the waits of one request's retries together: then it fails, saying so
_POLL_S = 0.1  # the longest the caller's thread waits on the answers' queue at once (a signal is handled between)
MAX_REPLICAS = 64  # base URLs of one spec
MAX_SERVERS_FILE = 64 * 1024  # bytes of a servers file
MAX_KEEPALIVE = 1024  # idle connections kept per replica (at most the concurrency are ever busy)
MAX_TOKENS = 2**40  # a usage count above this is not believed
MAX_STREAM_BYTES = 16 * 2**20  # a response body, streamed events in all (an answer of 256 tokens is a few kB)
_DEFAULTS = {
    "key_env": DEFAULT_KEY_ENV,
    "concurrency": 8,
    "timeout": 60.0,
    "retries": 4,
    "temperature": 0.0,
    "backoff": 1.0,
}
_SPEC_FORM = (
    "openai:<model>[@<base url>][?key_env=NAME&concurrency=8&timeout=60&retries=4&temperature=0&backoff=1"
    "&top_p=…&top_k=…&repetition_penalty=…&seed=…&min_pixels=…&max_pixels=…&max_tiles=…]"
)
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Spec options, bounded at the door (a huge concurrency would start that many threads).
_RANGES = {
    "concurrency": (1, 1024),
    "retries": (0, 100),
    "timeout": (0.001, 86_400.0),
    "temperature": (0.0, 2.0),
    "backoff": (0.0, 3_600.0),
    # Generation and processor settings (issue 36; evaluator/spec_settings.py): sent only when set, so a spec without
    # them asks as it always did and keeps its identity. top_k and repetition_penalty are vLLM's and SGLang's; the
    # pixel bounds and the tile count reach the server's image processor (vLLM's per-request mm_processor_kwargs).
    **SETTING_RANGES,
}
_WHOLE = {"concurrency", "retries", *WHOLE_SETTINGS}
SAMPLING = tuple(k for k in GENERATION if k != "temperature")  # the request's own fields
PROCESSOR = {"min_pixels": "min_pixels", "max_pixels": "max_pixels", "max_tiles": "max_dynamic_patch"}  # → vLLM's
_NOT_OPENAI = ("top_k", "repetition_penalty", *PROCESSOR)  # OpenAI's own API refuses them: refused at the door
# OpenAI's reasoning models (o1, o3, o4-mini, gpt-5…) take max_completion_tokens and no temperature or top_p.
_OPENAI_REASONING = re.compile(r"^(o\d|gpt-5)", re.IGNORECASE)


def parse_openai_spec(rest: str) -> OpenAIBackend:
    """Build a backend from the part of a spec after ``openai:``.

    The base URL starts at the first ``@`` followed by ``http://`` or ``https://`` (so a model name may itself
    carry an ``@revision``); without one the official OpenAI endpoint is meant. Several replicas of one model are
    several base URLs, comma-separated (``@http://a:8000/v1,http://b:8000/v1``); ``concurrency`` is then each
    replica's (``concurrency=32``) or one per replica in the same order (``concurrency=32,16``).
    """
    head, _, query = rest.partition("?")
    match = re.search(r"@(?=https?://)", head)
    if match:
        model, urls = head[: match.start()], head[match.end() :]
        split = tuple(re.split(r",(?=https?://)", urls))
        if len(split) > MAX_REPLICAS:
            raise BackendError(f"openai spec: at most {MAX_REPLICAS} base URLs, got {len(split)}")
        base_urls: tuple[str, ...] | None = split
    elif "@" in head and _looks_like_host(head.rpartition("@")[2]):
        raise BackendError(f"openai spec: the base URL must start with http:// or https://: {_SPEC_FORM}")
    else:
        model, base_urls = head, None
    if not model:
        raise BackendError(f"openai spec needs a model name: {_SPEC_FORM}")
    kwargs: dict[str, Any] = {}
    try:
        pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query))
    except ValueError:
        raise BackendError(f"openai spec: cannot read the options {query!r}: {_SPEC_FORM}") from None
    for key, value in pairs:
        if key == "key_env":
            kwargs["key_env"] = value
        elif key == "concurrency":
            values = tuple(_option_number(key, v) for v in value.split(",")[: MAX_REPLICAS + 1])
            kwargs[key] = values[0] if len(values) == 1 else values
        elif key in SAMPLING or key in PROCESSOR:
            kwargs.setdefault("settings", {})[key] = _option_number(key, value)
        elif key in _RANGES:
            kwargs[key] = _option_number(key, value)
        else:
            raise BackendError(
                f"openai spec: unknown option {key[:40]!r} (known: key_env, concurrency, timeout, retries, "
                f"temperature, backoff, {', '.join((*SAMPLING, *PROCESSOR))})"
            )
    return OpenAIBackend(model, base_urls, **kwargs)


def _option_number(key: str, value: str) -> Any:
    low, high = _RANGES[key]
    try:
        number = (int(value) if value.isdigit() and len(value) < 20 else None) if key in _WHOLE else float(value[:40])
    except ValueError:
        number = None
    if number is None or not math.isfinite(number):
        raise BackendError(
            f"openai spec: {key} must be a {'whole ' if key in _WHOLE else ''}number, got {value[:40]!r}"
        )
    if not low <= number <= high:
        raise BackendError(
            f"openai spec: {key} must be at {'least' if number < low else 'most'} "
            f"{low if number < low else high:g}, got {value[:40]}"
        )
    return number


def identity_spec(rest: str) -> str:
    """What of an openai spec (after ``openai:``) names its run (runner.config_key): a spec naming several
    replicas is one run whatever replicas serve it and however many requests each takes (the same model served
    twice is the same run), so its base URLs and concurrency are left out. A spec naming one server is its own
    identity, as it always was (stored runs keep their keys)."""
    backend = parse_openai_spec(rest)
    if len(backend.base_urls) < 2:
        return rest
    options = [(k, v) for k, v in parse_qsl(backend.spec.partition("?")[2]) if k != "concurrency"]
    return f"{backend.model}@replicas" + (f"?{urlencode(options)}" if options else "")


def servers_file(path: str) -> tuple[tuple[str, ...], tuple[int | None, ...]]:
    """The replicas a servers file names: one base URL per line, optionally followed by its concurrency
    (``http://node1:8000/v1 32``); blank lines and lines starting with # are skipped. BackendError naming the
    file and line for anything else (the file is read up to 64 KiB)."""
    from evaluator.formats.importers.common import Refused, open_regular

    try:  # a regular file, never the open workspace (closing it would drop our locks) nor a FIFO that blocks
        with open_regular(Path(path), 2**62, "limit") as f:
            data = f.read(MAX_SERVERS_FILE + 1)  # the bound, also for a file that grows after the check
    except Refused as exc:
        raise BackendError(f"{path}: cannot read the servers file: {str(exc).removeprefix(f'{path} ')}") from None
    except OSError as exc:
        raise BackendError(f"{path}: cannot read the servers file: {exc.strerror or exc}") from None
    if len(data) > MAX_SERVERS_FILE:
        raise BackendError(f"{path}: a servers file is at most {MAX_SERVERS_FILE // 1024} KiB")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise BackendError(f"{path}: the servers file is not UTF-8 text") from None
    urls: list[str] = []
    concurrency: list[int | None] = []
    for n, line in enumerate(text.splitlines(), 1):
        words = line.split("#", 1)[0].split() if not line.lstrip().startswith("#") else []
        if not words:
            continue
        url = words[0]
        if not url.startswith(("http://", "https://")) or "," in url or len(url) > 2_000:
            raise BackendError(
                f"{path}:{n}: url: a base URL starting with http:// or https:// (no commas), got {url[:80]!r}"
            )
        if len(words) > 2:
            raise BackendError(f"{path}:{n}: expected a base URL and at most a concurrency, got {len(words)} fields")
        try:
            concurrency.append(_option_number("concurrency", words[1]) if len(words) == 2 else None)
        except BackendError as exc:
            raise BackendError(f"{path}:{n}: {str(exc).removeprefix('openai spec: ')}") from None
        urls.append(url.rstrip("/"))
        if len(urls) > MAX_REPLICAS:
            raise BackendError(f"{path}:{n}: at most {MAX_REPLICAS} servers")
    if not urls:
        raise BackendError(f"{path}: the servers file names no server (one base URL per line)")
    return tuple(urls), tuple(concurrency)


def with_servers(spec: str, path: str) -> str:
    """An openai spec served by the replicas a servers file names (their concurrency where a line gives one, else
    the spec's): what ``vlmdesk run --servers FILE`` runs."""
    if not spec.startswith("openai:"):
        raise BackendError(f"--servers needs an openai: model spec, got {spec.split(':', 1)[0][:40]}:")
    backend = parse_openai_spec(spec.removeprefix("openai:"))
    urls, given = servers_file(path)
    each = backend.concurrencies[0] if len(set(backend.concurrencies)) == 1 else None
    if each is None and any(c is None for c in given):
        raise BackendError(f"{path}: give every server its concurrency (the spec has one per replica)")
    concurrency = tuple(c if c is not None else each for c in given)
    return OpenAIBackend(
        backend.model,
        urls,
        key_env=backend.key_env,
        concurrency=concurrency if len(set(concurrency)) > 1 else concurrency[0],  # type: ignore[arg-type]
        timeout=backend.timeout,
        retries=backend.retries,
        temperature=backend.temperature,
        backoff=backend.backoff,
        settings=backend.settings,
    ).spec


BACKENDS = (
    BackendEntry(
        name="openai",
        title="OpenAI-compatible server",
        syntax="openai:<model>@<base url>[,<base url>…][?key_env=OPENAI_API_KEY&concurrency=8&timeout=60]",
        help="any OpenAI-compatible chat-completions server (vLLM, SGLang, Ollama, LM Studio, OpenAI), or several "
        "replicas of one model (comma-separated base URLs, concurrency per replica); the key is read from the "
        "variable key_env names, never stored; generation settings temperature, top_p, top_k, repetition_penalty, "
        "seed and image settings min_pixels, max_pixels, max_tiles are sent when set and name the run",
        build=lambda rest, context: parse_openai_spec(rest),
        validate=lambda rest: _validate(rest),
        identity=lambda rest: identity_spec(rest),
        fields=(
            Field("", "Model", required=True, placeholder="Qwen/Qwen2-VL-7B-Instruct"),
            Field(
                "@",
                "Base URL",
                placeholder="http://localhost:8000/v1 (empty: OpenAI's own API)",
                help="several replicas of the model: their base URLs, comma-separated (the least loaded is asked)",
            ),
            Field(
                "key_env",
                "Key variable",
                placeholder=DEFAULT_KEY_ENV,
                help="the environment variable holding the API key (the key itself is never stored)",
            ),
            Field("concurrency", "Concurrent requests", "int", placeholder="8", help="kept in flight, per replica"),
            Field(
                "timeout",
                "Timeout (s)",
                placeholder="60",
                help="the most one request may take in all, wall time (a server that drips its answer times out)",
            ),
            Field("temperature", "Temperature", placeholder="0", help="0: greedy (the default); above 0 samples"),
            Field("top_p", "Top-p", placeholder="1", help="nucleus sampling (with a temperature above 0)"),
            Field("seed", "Seed", "int", placeholder="none", help="the server's sampling seed, sent when set"),
            Field(
                "max_pixels",
                "Max pixels",
                "int",
                placeholder="the server's",
                help="the image processor's bound (Qwen-VL family: e.g. 1003520 = 1280×28×28); part of the run",
            ),
        ),
        examples=(
            "openai:gpt-4o-mini",
            "openai:Qwen2-VL-7B@http://localhost:8000/v1?concurrency=64",
            "openai:Qwen2-VL-7B@http://node1:8000/v1,http://node2:8000/v1?concurrency=64",
        ),
    ),
)


class OpenAIBackend:
    """Greedy answers from OpenAI-compatible ``/chat/completions`` endpoints (vLLM, SGLang, transformers serve,
    OpenAI): one server, or several replicas of one model."""

    def __init__(
        self,
        model: str,
        base_url: str | Sequence[str] | None = None,
        *,
        key_env: str = DEFAULT_KEY_ENV,
        concurrency: int | Sequence[int] = 8,
        timeout: float = 60.0,
        retries: int = 4,
        temperature: float = 0.0,
        backoff: float = 1.0,
        settings: Mapping[str, float] | None = None,
        max_backoff: float = 30.0,
        max_retry_after: float = MAX_WAIT_S,
        max_total_wait: float = MAX_TOTAL_WAIT_S,
    ):
        if not model:
            raise BackendError("openai: a model name is required")
        urls = (base_url,) if isinstance(base_url, str) else tuple(base_url) if base_url is not None else (None,)
        if not urls or len(urls) > MAX_REPLICAS:
            raise BackendError(f"openai: between 1 and {MAX_REPLICAS} base URLs, got {len(urls)}")
        for url in urls:
            if url is not None and not url.startswith(("http://", "https://")):
                raise BackendError(f"openai: base URL must start with http:// or https://, got {url[:200]!r}")
            if url is not None and urlsplit(url).password is not None:
                raise BackendError(
                    "openai: the base URL must not carry a password (specs are stored); "
                    "put the key in the environment variable named by key_env"
                )
        if len(set(urls)) != len(urls):
            raise BackendError("openai: a base URL is named twice")
        if not _ENV_NAME.match(key_env):
            raise BackendError(f"openai: key_env must name an environment variable, got {key_env!r}")
        each = (concurrency,) * len(urls) if isinstance(concurrency, int) else tuple(concurrency)
        if len(each) != len(urls):
            raise BackendError(
                f"openai: concurrency names {len(each)} values for {len(urls)} base URLs (one, or one per replica)"
            )
        if any(not isinstance(c, int) or isinstance(c, bool) or c < 1 for c in each):
            raise BackendError(f"openai: concurrency must be at least 1, got {concurrency}")
        if not timeout > 0:
            raise BackendError(f"openai: timeout must be positive (seconds), got {timeout}")
        if retries < 0:
            raise BackendError(f"openai: retries must be 0 or more, got {retries}")
        if backoff < 0 or max_backoff < 0 or max_retry_after < 0 or max_total_wait < 0:
            raise BackendError("openai: backoff delays must not be negative")
        settings = dict(settings or {})
        official = all(_is_official(u) for u in urls)
        if unknown := sorted(set(settings) - set(SAMPLING) - set(PROCESSOR)):
            raise BackendError(f"openai: unknown setting {unknown[0][:40]!r}")
        if official and (refused := [k for k in _NOT_OPENAI if k in settings]):
            raise BackendError(f"openai: {refused[0]} is not a setting of OpenAI's own API (vLLM's and SGLang's)")
        if settings.get("min_pixels", 0) > settings.get("max_pixels", math.inf):
            raise BackendError("openai: min_pixels must not be above max_pixels")
        self.model = model
        self.base_urls: tuple[str | None, ...] = tuple(u.rstrip("/") if u else None for u in urls)
        self.base_url = self.base_urls[0]
        self.key_env = key_env
        self.concurrencies = each
        self.concurrency = sum(each)  # requests in flight in all, over every replica
        self.timeout = float(timeout)
        self.retries = retries
        self.temperature = float(temperature)
        self.backoff = float(backoff)
        self.max_backoff = float(max_backoff)
        self.max_retry_after = float(max_retry_after)
        self.max_total_wait = float(max_total_wait)
        self.settings = settings
        self.official = official  # OpenAI's own API: max_completion_tokens, no server-only fields
        self.reasoning_model = official and bool(_OPENAI_REASONING.match(model))
        self.takes_thinking_budget = not official  # vLLM's thinking_token_budget; OpenAI's API has no such field
        # Told of every wait before a retry, from the thread that called generate(); None: logged (base.log_wait).
        self.on_wait: Callable[[RetryWait], None] | None = None

        options = {
            "key_env": key_env,
            "concurrency": each[0] if len(set(each)) == 1 else ",".join(map(str, each)),
            "timeout": self.timeout,
            "retries": retries,
            "temperature": self.temperature,
            "backoff": self.backoff,
        }
        options = {k: v for k, v in options.items() if v != _DEFAULTS[k]}
        options.update((k, settings[k]) for k in (*SAMPLING, *PROCESSOR) if k in settings)
        query = urlencode({k: _fmt(v) for k, v in options.items()}, safe=",")
        at = ",".join(u for u in self.base_urls if u)
        self.spec = f"openai:{model}" + (f"@{at}" if at else "") + (f"?{query}" if query else "")

        from .openai_stream import make_clients

        self._key_is_set = bool(os.environ.get(key_env))
        self._httpx, self._clients = make_clients(self)

    # Scheduling (docs/adr/0032): the engine streams through open_stream(); call_size and chunk_items are what the
    # wave engine reads when it cannot stream (a multi-turn run): one call holds at least `concurrency` queries, and
    # waves walk chunks of CHUNK_PER_REQUEST × concurrency items, within a server's prefix cache (docs/adr/0016).
    def call_size(self, batch_size: int) -> int:
        return max(batch_size, self.concurrency)

    @property
    def chunk_items(self) -> int:
        return CHUNK_PER_REQUEST * self.concurrency

    def open_stream(self, max_new_tokens: int) -> OpenAIStream:
        from .openai_stream import OpenAIStream

        return OpenAIStream(self, max_new_tokens)

    @property
    def server(self) -> str:
        """The endpoint, as messages name it (the first replica's: each replica's own messages name it)."""
        return self.base_url or OFFICIAL_SERVER

    def describe(self) -> dict[str, Any]:
        from .openai_stream import sdk_version

        info = {
            "backend": "openai",
            "model": self.model,
            "base_url": self.base_url,
            "key_env": self.key_env,
            "concurrency": self.concurrency,
            "chunk_items": self.chunk_items,
            "timeout": self.timeout,
            "retries": self.retries,
            "temperature": self.temperature,
            **self.settings,
            "openai": sdk_version(),
            "httpx2": getattr(self._httpx, "__version__", None),
        }
        if len(self.base_urls) > 1:
            info["replicas"] = [{"base_url": u, "concurrency": c} for u, c in zip(self.base_urls, self.concurrencies)]
        return info

    # ---- generation -------------------------------------------------------------------------------------

    def generate(self, queries: Sequence[Query], max_new_tokens: int) -> list[Generation]:
        """One chat completion per query, through a stream kept `concurrency` requests full; in input order, each
        with the server's thought, finish reason and usage when it gave them.

        Every query's body is built before anything is sent (a bad image fails the call at once). The first query
        that fails for good stops the call: queries not yet sent are not sent, and the requests in flight are
        abandoned (their threads are daemons; nothing they hold is stored: docs/adr/0024). The caller's thread only
        waits on a queue with a short timeout, so Ctrl-C and SIGTERM end it at once."""
        if not queries:
            return []
        bodies = [self._request_body(q, max_new_tokens) for q in queries]
        stream = self.open_stream(max_new_tokens)
        said: dict[int, Generation] = {}
        todo = iter(range(len(bodies)))
        try:
            while len(said) < len(bodies):
                while stream.load() < stream.capacity and (index := next(todo, None)) is not None:
                    stream.send_body(index, bodies[index])
                for answer in stream.answers(_POLL_S):
                    said[answer.key] = answer.generation()
        finally:
            stream.close()
        return [said[i] for i in range(len(bodies))]

    def stream_text(self, query: Query, max_new_tokens: int) -> Iterator[str]:
        """One chat completion asked with ``"stream": true``: the text so far each time it grows (the live arena;
        openai_stream.stream_text)."""
        from .openai_stream import stream_text

        return stream_text(self, query, max_new_tokens)

    def _tell(self, wait: RetryWait) -> None:
        if self.on_wait is None:
            log_wait(wait)
        else:
            self.on_wait(wait)

    def _request_body(self, query: Query, max_new_tokens: int) -> dict[str, Any]:
        if query.images:
            # Texts and images interleaved where the prompt's <image N> places them (base.image_parts).
            content: list[dict[str, Any]] | str = [
                {"type": "text", "text": part}
                if isinstance(part, str)
                else {"type": "image_url", "image_url": {"url": image_data_url(query.images[part])}}
                for part in query.parts()
            ]
        else:
            content = query.prompt  # plain string: what text-only chat servers accept everywhere
        chat = query.chat
        messages = [{"role": "system", "content": chat.system}] if chat.system else []
        body: dict[str, Any] = {"model": self.model, "messages": [*messages, {"role": "user", "content": content}]}
        # What each server accepts (issue 36): OpenAI's own API takes max_completion_tokens (max_tokens is deprecated
        # there and refused by its reasoning models, which also refuse temperature and top_p); every other server
        # takes max_tokens, which is what vLLM, SGLang and transformers serve have always read.
        body["max_completion_tokens" if self.official else "max_tokens"] = int(max_new_tokens)
        if not self.reasoning_model:
            body["temperature"] = self.temperature
        body.update(
            (k, v) for k, v in self.settings.items() if k in SAMPLING and not (self.reasoning_model and k == "top_p")
        )
        if processor := {PROCESSOR[k]: v for k, v in self.settings.items() if k in PROCESSOR}:
            body["mm_processor_kwargs"] = processor
        if chat.template_kwargs:
            body["chat_template_kwargs"] = chat.kwargs()
        if chat.thinking_budget is not None:
            body["thinking_token_budget"] = chat.thinking_budget  # vLLM's per-request cap on the thought
        return body

    def _wait_for(self, seconds: float) -> float:
        """The seconds a retry really waits once `seconds` was decided and told (tests record and skip them)."""
        return seconds

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_retry_after)
        base = min(self.backoff * 2.0 ** (attempt - 1), self.max_backoff)
        return base * (1.0 + 0.25 * random.random())  # jitter: parallel requests do not retry in lockstep


# ---- helpers ---------------------------------------------------------------------------------------------


class _Malformed(Exception):
    """A 2xx answer that is not a chat completion with text."""


def _completion_of(text: str) -> Generation:
    try:
        data = json.loads(text)
    except ValueError:
        raise _Malformed(f"not JSON: {_one_line(text)[:120]!r}") from None
    if not isinstance(data, dict):
        raise _Malformed(f"expected a JSON object, got {type(data).__name__}")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        extra = f" (error: {_one_line(str(data['error']))[:200]})" if data.get("error") else ""
        raise _Malformed(f"no choices{extra}")
    choice = choices[0] if isinstance(choices[0], dict) else {}
    message = choice.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    # A thinking model's thought, where the server parsed it apart (vLLM and SGLang with a reasoning parser):
    # `reasoning_content`, or `reasoning` as newer vLLM releases and other servers name it.
    thought = None
    if isinstance(message, dict):
        thought = next((v for k in ("reasoning_content", "reasoning") if isinstance(v := message.get(k), str)), None)
    finish = choice.get("finish_reason")
    finish = finish if isinstance(finish, str) and 0 < len(finish) <= 40 else None
    if content is None and (thought is not None or finish == "length"):
        content = ""  # the budget ended the answer inside the thought, or before a word of it
    if not isinstance(content, str):
        raise _Malformed("choice has no message content" if content is None else "message content is not text")
    return Generation(content, thought, finish, _usage_of(data.get("usage")))


def _delta_of(data: str) -> str:
    """The text one server-sent event adds (choices[0].delta.content); "" for an event without text. BackendError
    for an event that is not JSON, or an error the server streams."""
    try:
        event = json.loads(data)
    except ValueError:
        raise BackendError(f"openai: a streamed event is not JSON: {_one_line(data)[:120]!r}") from None
    if isinstance(event, dict) and event.get("error"):
        raise BackendError(f"openai: the server streamed an error: {_one_line(str(event['error']))[:200]}")
    choices = event.get("choices") if isinstance(event, dict) else None
    first = choices[0] if isinstance(choices, list) and choices else None
    delta = first.get("delta") if isinstance(first, dict) else None
    content = delta.get("content") if isinstance(delta, dict) else None
    return content if isinstance(content, str) else ""


def _usage_of(value: object) -> Usage | None:
    """The tokens a server says an answer cost, checked at the door: whole numbers 0..2^40, else not said."""
    if not isinstance(value, dict):
        return None
    details = value.get("completion_tokens_details")
    reasoning = details.get("reasoning_tokens") if isinstance(details, dict) else None
    counts = [value.get("prompt_tokens"), value.get("completion_tokens"), reasoning]
    kept = [c if isinstance(c, int) and not isinstance(c, bool) and 0 <= c <= MAX_TOKENS else None for c in counts]
    return None if kept == [None, None, None] else Usage(*kept)


def _validate(rest: str) -> None:
    parse_openai_spec(rest)  # BackendError when the spec cannot be read


def _retryable_status(status: int) -> bool:
    return status in (408, 429) or status >= 500


def _retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """Seconds from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date); None when absent or unreadable."""
    value = headers.get("retry-after-ms")
    if value is not None:
        try:
            return float(value) / 1000.0
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        import email.utils

        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _server_message(response: _Response) -> str:
    """What the server said about an error, on one line: OpenAI ``error.message``, FastAPI ``detail``, or the text."""
    try:
        text = response.text
    except Exception:  # a body that cannot be decoded
        return "(unreadable body)"
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    message = None
    if isinstance(data, dict):
        error = data.get("error")
        if isinstance(error, dict):
            message = error.get("message") or json.dumps(error)
        elif error:
            message = str(error)
        elif data.get("detail"):
            detail = data["detail"]
            message = detail if isinstance(detail, str) else json.dumps(detail)
        elif data.get("message"):
            message = str(data["message"])
    if message is None:
        message = text or response.reason_phrase or "(empty body)"
    return _one_line(message)[:300]


def _is_official(url: str | None) -> bool:
    """OpenAI's own API: no base URL, or one on api.openai.com."""
    return url is None or (urlsplit(url).hostname or "").lower() == "api.openai.com"


def _looks_like_host(text: str) -> bool:
    """``localhost:8000/v1`` or ``10.0.0.2`` after an ``@``: a base URL without its scheme, not a revision."""
    return ":" in text or "/" in text or text.startswith("localhost") or bool(re.match(r"^\d+\.\d+\.\d+\.\d+", text))


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _fmt(value: object) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"BM", "image/bmp"),
    (b"II*\x00", "image/tiff"),
    (b"MM\x00*", "image/tiff"),
)


def image_mime(data: bytes) -> str:
    """The MIME type of encoded image bytes, from their magic number."""
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    for magic, mime in _MAGIC:
        if data.startswith(magic):
            return mime
    raise BackendError(
        f"openai: unknown image format (first bytes {data[:8]!r}); expected PNG, JPEG, GIF, WebP, BMP or TIFF"
    )


def image_data_url(data: bytes) -> str:
    return f"data:{image_mime(data)};base64,{base64.b64encode(data).decode('ascii')}"
