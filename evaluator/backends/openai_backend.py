"""OpenAI-compatible chat-completions servers:
``openai:<model>[@<base url>][?key_env=…&concurrency=…&timeout=…&retries=…]``.

One chat completion per query, sent from a bounded set of daemon threads; answers come back in input order.
``timeout`` is a wall-clock deadline for the whole of one request (not the gap between two bytes). Retries are
ours, not the client's (the client is built with ``max_retries=0``), so they are told (``on_wait``) and testable:
429, 408, 5xx, timeouts, connection errors and malformed bodies are retried with exponential backoff and jitter
(a ``Retry-After`` header wins); each wait is capped at MAX_WAIT_S and the waits of one request at MAX_TOTAL_WAIT_S
in all. Any other 4xx fails at once with a one-line message naming the server, the status and what the server said.

The API key is read from the environment variable the spec names (``key_env``, default ``OPENAI_API_KEY``); the
key itself never enters the spec or ``describe()``, and whatever a server says back (answers, error bodies) is
redacted at the door every backend is loaded through (backends/door.py). Local servers need no key: an unset
variable sends the dummy key ``EMPTY``. ``openai`` is imported lazily, so importing this module stays cheap.
"""

from __future__ import annotations

import base64
import json
import math
import os
import queue
import random
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol
from urllib.parse import parse_qsl, urlencode, urlsplit

from evaluator.registry import Field

from .base import BackendEntry, BackendError, Query, RetryWait, log_wait


class _Response(Protocol):
    """An HTTP response of the openai client (its HTTP library changes between releases)."""

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
_STOP_POLL_S = 0.25  # how soon a worker waiting on its request notices that the batch has failed
_DEFAULTS = {
    "key_env": DEFAULT_KEY_ENV,
    "concurrency": 8,
    "timeout": 60.0,
    "retries": 4,
    "temperature": 0.0,
    "backoff": 1.0,
}
_SPEC_FORM = "openai:<model>[@<base url>][?key_env=NAME&concurrency=8&timeout=60&retries=4&temperature=0&backoff=1]"
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Spec options, bounded at the door (a huge concurrency would start that many threads).
_RANGES = {
    "concurrency": (1, 1024),
    "retries": (0, 100),
    "timeout": (0.001, 86_400.0),
    "temperature": (0.0, 2.0),
    "backoff": (0.0, 3_600.0),
}
_WHOLE = {"concurrency", "retries"}


def parse_openai_spec(rest: str) -> OpenAIBackend:
    """Build a backend from the part of a spec after ``openai:``.

    The base URL starts at the first ``@`` followed by ``http://`` or ``https://`` (so a model name may itself
    carry an ``@revision``); without one the official OpenAI endpoint is meant.
    """
    head, _, query = rest.partition("?")
    match = re.search(r"@(?=https?://)", head)
    if match:
        model, base_url = head[: match.start()], head[match.end() :]
    elif "@" in head and _looks_like_host(head.rpartition("@")[2]):
        raise BackendError(f"openai spec: the base URL must start with http:// or https://: {_SPEC_FORM}")
    else:
        model, base_url = head, None
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
        elif key in _RANGES:
            low, high = _RANGES[key]
            try:
                number = (
                    (int(value) if value.isdigit() and len(value) < 20 else None)
                    if key in _WHOLE
                    else float(value[:40])
                )
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
            kwargs[key] = number
        else:
            raise BackendError(
                f"openai spec: unknown option {key!r} (known: key_env, concurrency, timeout, retries, temperature, "
                "backoff)"
            )
    return OpenAIBackend(model, base_url, **kwargs)


BACKENDS = (
    BackendEntry(
        name="openai",
        title="OpenAI-compatible server",
        syntax="openai:<model>@<base url>[?key_env=OPENAI_API_KEY&concurrency=8&timeout=60]",
        help="any OpenAI-compatible chat-completions server (vLLM, SGLang, Ollama, LM Studio, OpenAI); the key is read "
        "from the variable key_env names, never stored",
        build=lambda rest, context: parse_openai_spec(rest),
        validate=lambda rest: _validate(rest),
        fields=(
            Field("", "Model", required=True, placeholder="Qwen/Qwen2-VL-7B-Instruct"),
            Field("@", "Base URL", placeholder="http://localhost:8000/v1 (empty: OpenAI's own API)"),
            Field(
                "key_env",
                "Key variable",
                placeholder=DEFAULT_KEY_ENV,
                help="the environment variable holding the API key (the key itself is never stored)",
            ),
            Field("concurrency", "Concurrent requests", "int", placeholder="8"),
            Field(
                "timeout",
                "Timeout (s)",
                placeholder="60",
                help="the most one request may take in all, wall time (a server that drips its answer times out)",
            ),
        ),
        examples=("openai:gpt-4o-mini", "openai:Qwen2-VL-7B@http://localhost:8000/v1?concurrency=64"),
    ),
)


class OpenAIBackend:
    """Greedy answers from an OpenAI-compatible ``/chat/completions`` endpoint (vLLM, transformers serve, OpenAI)."""

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        *,
        key_env: str = DEFAULT_KEY_ENV,
        concurrency: int = 8,
        timeout: float = 60.0,
        retries: int = 4,
        temperature: float = 0.0,
        backoff: float = 1.0,
        max_backoff: float = 30.0,
        max_retry_after: float = MAX_WAIT_S,
        max_total_wait: float = MAX_TOTAL_WAIT_S,
    ):
        if not model:
            raise BackendError("openai: a model name is required")
        if base_url is not None and not base_url.startswith(("http://", "https://")):
            raise BackendError(f"openai: base URL must start with http:// or https://, got {base_url!r}")
        if base_url is not None and urlsplit(base_url).password is not None:
            raise BackendError(
                "openai: the base URL must not carry a password (specs are stored); "
                "put the key in the environment variable named by key_env"
            )
        if not _ENV_NAME.match(key_env):
            raise BackendError(f"openai: key_env must name an environment variable, got {key_env!r}")
        if concurrency < 1:
            raise BackendError(f"openai: concurrency must be at least 1, got {concurrency}")
        if not timeout > 0:
            raise BackendError(f"openai: timeout must be positive (seconds), got {timeout}")
        if retries < 0:
            raise BackendError(f"openai: retries must be 0 or more, got {retries}")
        if backoff < 0 or max_backoff < 0 or max_retry_after < 0 or max_total_wait < 0:
            raise BackendError("openai: backoff delays must not be negative")
        self.model = model
        self.base_url = base_url.rstrip("/") if base_url else None
        self.key_env = key_env
        self.concurrency = concurrency
        self.timeout = float(timeout)
        self.retries = retries
        self.temperature = float(temperature)
        self.backoff = float(backoff)
        self.max_backoff = float(max_backoff)
        self.max_retry_after = float(max_retry_after)
        self.max_total_wait = float(max_total_wait)
        # Told of every wait before a retry, from the thread that called generate(); None: logged (base.log_wait).
        self.on_wait: Callable[[RetryWait], None] | None = None

        options = {
            "key_env": key_env,
            "concurrency": concurrency,
            "timeout": self.timeout,
            "retries": retries,
            "temperature": self.temperature,
            "backoff": self.backoff,
        }
        query = urlencode({k: _fmt(v) for k, v in options.items() if v != _DEFAULTS[k]})
        self.spec = f"openai:{model}" + (f"@{self.base_url}" if self.base_url else "") + (f"?{query}" if query else "")

        import openai

        self._openai = openai
        self._key_is_set = bool(os.environ.get(key_env))
        # max_retries=0: retrying is this class's job, so every attempt is visible in logs and tests.
        kwargs: dict[str, Any] = {
            "api_key": os.environ.get(key_env) or DUMMY_KEY,
            "timeout": self.timeout,
            "max_retries": 0,
        }
        if self.base_url is not None:
            kwargs["base_url"] = self.base_url
        self._client = openai.OpenAI(**kwargs)

    # Scheduling (base.py, docs/adr/0016): one call holds at least `concurrency` queries, so that many requests are
    # in flight whatever --batch-size is; the engine walks waves over chunks of CHUNK_PER_REQUEST × concurrency
    # items, so a server's prefix cache (vLLM keeps a few hundred image prompts) still holds an item's prompt when
    # its next rotation is asked.
    def call_size(self, batch_size: int) -> int:
        return max(batch_size, self.concurrency)

    @property
    def chunk_items(self) -> int:
        return CHUNK_PER_REQUEST * self.concurrency

    @property
    def server(self) -> str:
        """The endpoint, as messages name it."""
        return self.base_url or OFFICIAL_SERVER

    def describe(self) -> dict[str, Any]:
        return {
            "backend": "openai",
            "model": self.model,
            "base_url": self.base_url,
            "key_env": self.key_env,
            "concurrency": self.concurrency,
            "chunk_items": self.chunk_items,
            "timeout": self.timeout,
            "retries": self.retries,
            "temperature": self.temperature,
            "openai": getattr(self._openai, "__version__", None),
        }

    # ---- generation -------------------------------------------------------------------------------------

    def generate(self, queries: Sequence[Query], max_new_tokens: int) -> list[str]:
        """One chat completion per query, at most ``concurrency`` in flight; texts in input order.

        The first query that fails for good stops the batch: queries not yet sent are not sent, retries waiting
        elsewhere stop waiting, and that query's BackendError is raised. Workers are daemon threads and the caller's
        thread only waits on a queue, so an interruption (Ctrl-C, the app's Cancel) ends the process at once, whatever
        the requests are doing: nothing a worker holds is ever stored (docs/adr/0024). Retry waits are told to
        ``on_wait`` from the caller's thread.
        """
        if not queries:
            return []
        bodies = [self._request_body(q, max_new_tokens) for q in queries]  # bad images fail before any request
        failed = threading.Event()
        inbox: queue.SimpleQueue[tuple[str, int, Any]] = queue.SimpleQueue()
        todo = iter(range(len(bodies)))
        taking = threading.Lock()

        def work() -> None:
            try:
                while not failed.is_set():
                    with taking:
                        index = next(todo, None)
                    if index is None:
                        return
                    try:
                        text = self._complete(index, bodies[index], failed, lambda w: inbox.put(("wait", -1, w)))
                    except BaseException as exc:
                        failed.set()  # set in the worker, before it can pick up the next query
                        inbox.put(("error", index, exc))
                    else:
                        inbox.put(("text", index, text))
            finally:
                inbox.put(("exit", -1, None))

        workers = min(self.concurrency, len(bodies))
        for _ in range(workers):
            threading.Thread(target=work, name="openai-backend", daemon=True).start()
        texts: dict[int, str] = {}
        errors: dict[int, BaseException] = {}
        try:
            while workers:
                kind, index, value = inbox.get()
                if kind == "exit":
                    workers -= 1
                elif kind == "text":
                    texts[index] = value
                elif kind == "error":
                    errors[index] = value
                else:
                    self._tell(value)
        except BaseException:  # e.g. Ctrl-C or SIGTERM: the workers stop retrying; nobody waits for them
            failed.set()
            raise
        if errors:  # the first real failure in input order, not a query it stopped
            first = min(errors)
            raise next((errors[i] for i in sorted(errors) if not isinstance(errors[i], _Stopped)), errors[first])
        return [texts[i] for i in range(len(bodies))]

    def _tell(self, wait: RetryWait) -> None:
        if self.on_wait is None:
            log_wait(wait)
        else:
            self.on_wait(wait)

    def _request_body(self, query: Query, max_new_tokens: int) -> dict[str, Any]:
        if query.images:
            parts: list[dict[str, Any]] = [
                {"type": "image_url", "image_url": {"url": image_data_url(data)}} for data in query.images
            ]
            parts.append({"type": "text", "text": query.prompt})
            content: list[dict[str, Any]] | str = parts
        else:
            content = query.prompt  # plain string: what text-only chat servers accept everywhere
        return {
            "model": self.model,
            "messages": [{"role": "user", "content": content}],
            "max_tokens": int(max_new_tokens),
            "temperature": self.temperature,
        }

    def _complete(
        self, index: int, body: dict[str, Any], stop: threading.Event, tell: Callable[[RetryWait], None]
    ) -> str:
        openai = self._openai
        attempts = self.retries + 1
        last_error = ""
        waited = 0.0
        gave_up = ""
        for attempt in range(1, attempts + 1):
            if stop.is_set():
                raise _Stopped()
            retry_after: float | None = None
            try:
                return _content_of(self._send(body, stop))
            except openai.APIStatusError as e:
                status = e.status_code
                detail = _server_message(e.response)
                if not _retryable_status(status):
                    hint = ""
                    if status in (401, 403):
                        hint = (
                            f" (key from ${self.key_env})"
                            if self._key_is_set
                            else f" (no API key: ${self.key_env} is not set)"
                        )
                    raise BackendError(
                        f"openai: {self.server} answered HTTP {status} for model {self.model!r}: {detail}{hint}"
                    ) from None
                last_error = f"HTTP {status}: {detail}"
                retry_after = _retry_after_seconds(e.response.headers)
            except (openai.APITimeoutError, _Deadline):
                last_error = f"no answer within {self.timeout:g} s (timeout)"
            except openai.APIConnectionError as e:
                cause = e.__cause__ or e
                last_error = f"connection error: {_one_line(str(cause) or type(cause).__name__)}"
            except _Malformed as e:
                last_error = f"malformed response: {e}"
            if attempt < attempts:
                left = self.max_total_wait - waited
                if left <= 0:
                    gave_up = f" (no more retries: one request waits {self.max_total_wait:g} s in all at most)"
                    break
                delay = min(self._delay(attempt, retry_after), left)
                tell(RetryWait(self.server, index, last_error, retry_after, delay, attempt + 1, attempts))
                self._pause(delay, stop)
                waited += delay
        tried = attempt
        raise BackendError(
            f"openai: {self.server} failed for model {self.model!r} after {tried} "
            f"attempt{'s' if tried != 1 else ''}{gave_up}; last error: {last_error}"
        )

    def _send(self, body: dict[str, Any], stop: threading.Event) -> str:
        """One request's answer, within ``timeout`` seconds of wall time in all: connecting, sending, waiting, and every
        byte of the body (the client's own timeout is per read, so a server dripping a byte at a time could hold a
        request for ever). The request runs in a daemon thread that is left behind at the deadline, or when
        another query of the batch fails for good; its late answer is dropped (docs/adr/0024)."""
        done = threading.Event()
        outcome: list[str | BaseException] = []

        def send() -> None:
            try:
                outcome.append(self._client.chat.completions.with_raw_response.create(**body).http_response.text)
            except BaseException as exc:  # handed to the waiting worker
                outcome.append(exc)
            finally:
                done.set()

        threading.Thread(target=send, name="openai-request", daemon=True).start()
        deadline = time.monotonic() + self.timeout
        while not done.wait(min(_STOP_POLL_S, max(deadline - time.monotonic(), 0.0))):
            if stop.is_set():
                raise _Stopped()
            if time.monotonic() >= deadline:
                raise _Deadline()
        result = outcome[0]
        if isinstance(result, BaseException):
            raise result
        return result

    def _pause(self, seconds: float, stop: threading.Event) -> None:
        """Wait before a retry; returns early when another query of the batch has failed for good."""
        stop.wait(seconds)

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_retry_after)
        base = min(self.backoff * 2.0 ** (attempt - 1), self.max_backoff)
        return base * (1.0 + 0.25 * random.random())  # jitter: parallel workers do not retry in lockstep


# ---- helpers --------------------------------------------------------------------------------------------


class _Stopped(Exception):
    """A query not sent (or not retried) because another query of the same batch failed for good."""


class _Deadline(Exception):
    """A request that had no whole answer within the backend's timeout (wall time)."""


class _Malformed(Exception):
    """A 2xx answer that is not a chat completion with text."""


def _content_of(text: str) -> str:
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
    message = choices[0].get("message") if isinstance(choices[0], dict) else None
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, str):
        raise _Malformed("choice has no message content" if content is None else "message content is not text")
    return content


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
