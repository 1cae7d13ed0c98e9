"""OpenAI-compatible chat-completions servers:
``openai:<model>[@<base url>][?key_env=…&concurrency=…&timeout=…&retries=…]``.

One chat completion per query, sent from a bounded thread pool; answers come back in input order. Retries are
ours, not the client's (the client is built with ``max_retries=0``), so they are logged and testable:
429, 408, 5xx, timeouts, connection errors and malformed bodies are retried with exponential backoff and jitter
(a ``Retry-After`` header wins, capped); any other 4xx fails at once with a one-line message naming the server,
the status and what the server said.

The API key is read from the environment variable the spec names (``key_env``, default ``OPENAI_API_KEY``); the
key itself never enters the spec, ``describe()`` or a log line. Local servers need no key: an unset variable
sends the dummy key ``EMPTY``. ``openai`` is imported lazily, so importing this module stays cheap.
"""

from __future__ import annotations

import base64
import json
import logging
import math
import os
import random
import re
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any, Protocol
from urllib.parse import parse_qsl, urlencode, urlsplit

from evaluator.registry import Field

from .base import BackendEntry, BackendError, Query
from .secrets import redact


class _Response(Protocol):
    """An HTTP response of the openai client (its HTTP library changes between releases)."""

    @property
    def text(self) -> str: ...

    @property
    def reason_phrase(self) -> str: ...


log = logging.getLogger(__name__)

DEFAULT_KEY_ENV = "OPENAI_API_KEY"
DUMMY_KEY = "EMPTY"
CHUNK_PER_REQUEST = 4  # items per chunk of waves, per concurrent request
OFFICIAL_SERVER = "https://api.openai.com/v1"
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
            Field("timeout", "Timeout (s)", placeholder="60"),
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
        max_retry_after: float = 60.0,
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
        if backoff < 0 or max_backoff < 0 or max_retry_after < 0:
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
        self._secrets = (os.environ.get(key_env) or "",)  # what servers' messages must not carry on (redact)
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
        elsewhere stop waiting, and that query's BackendError is raised.
        """
        if not queries:
            return []
        bodies = [self._request_body(q, max_new_tokens) for q in queries]  # bad images fail before any request
        failed = threading.Event()

        def run(index: int, body: dict[str, Any]) -> str:
            try:
                return self._complete(index, body, failed)
            except BaseException:
                failed.set()  # set in the worker, before it can pick up the next query
                raise

        # Imported here: every --help imports this module (the backend registry); these cost more than all of it.
        from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait

        with ThreadPoolExecutor(
            max_workers=min(self.concurrency, len(bodies)), thread_name_prefix="openai-backend"
        ) as pool:
            futures = [pool.submit(run, i, body) for i, body in enumerate(bodies)]
            try:
                wait(futures, return_when=FIRST_EXCEPTION)
            except BaseException:  # e.g. Ctrl-C: stop the workers' retries too
                failed.set()
                raise
            finally:
                for f in futures:
                    f.cancel()  # only those not started yet can be cancelled
        errors = [e for f in futures if not f.cancelled() and (e := f.exception()) is not None]
        if errors:  # the first real failure in input order, not a query it stopped
            raise next((e for e in errors if not isinstance(e, _Stopped)), errors[0])
        return [f.result() for f in futures]

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

    def _complete(self, index: int, body: dict[str, Any], stop: threading.Event) -> str:
        openai = self._openai
        attempts = self.retries + 1
        last_error = ""
        for attempt in range(1, attempts + 1):
            if stop.is_set():
                raise _Stopped()
            retry_after: float | None = None
            try:
                raw = self._client.chat.completions.with_raw_response.create(**body)
                return _content_of(raw.http_response.text)
            except openai.APIStatusError as e:
                status = e.status_code
                detail = redact(_server_message(e.response), secrets=self._secrets)
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
            except openai.APITimeoutError:
                last_error = f"no answer within {self.timeout:g} s (timeout)"
            except openai.APIConnectionError as e:
                cause = e.__cause__ or e
                last_error = f"connection error: {_one_line(str(cause) or type(cause).__name__)}"
            except _Malformed as e:
                last_error = f"malformed response: {e}"
            last_error = redact(last_error, secrets=self._secrets)
            if attempt < attempts:
                delay = self._delay(attempt, retry_after)
                log.warning(
                    "openai: query %d, attempt %d/%d to %s failed (%s); retrying in %.2f s",
                    index,
                    attempt,
                    attempts,
                    self.server,
                    last_error,
                    delay,
                )
                self._pause(delay, stop)
        raise BackendError(
            f"openai: {self.server} failed for model {self.model!r} after {attempts} "
            f"attempt{'s' if attempts != 1 else ''}; last error: {last_error}"
        )

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
