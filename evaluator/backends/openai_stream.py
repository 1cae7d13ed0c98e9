"""How the openai backend keeps requests in flight over its replicas (base.Stream; docs/adr/0032): the scheduling
— which replica, each attempt's wall-clock deadline, retries and back-off, setting a failing replica aside — and the
transport that sends each attempt: the openai SDK, one `AsyncOpenAI` client per replica, every client of the process
on one event loop in a daemon thread (docs/adr/0052). The request bodies and what a response means are
openai_backend's."""

from __future__ import annotations

import asyncio
import functools
import itertools
import json
import os
import queue
import threading
import time
import weakref
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn

from .base import Answer, BackendError, Query, RetryWait, ServersDown
from .openai_backend import (
    _POLL_S,
    DUMMY_KEY,
    MAX_KEEPALIVE,
    MAX_STREAM_BYTES,
    OFFICIAL_SERVER,
    _completion_of,
    _delta_of,
    _Malformed,
    _one_line,
    _retry_after_seconds,
    _retryable_status,
    _server_message,
)

if TYPE_CHECKING:
    from .openai_backend import OpenAIBackend

MAX_ERROR_BYTES = 64 * 1024  # of a 4xx/5xx body (its message is a line; the SDK would read it whole)


@dataclass
class _Replica:
    """One server of a stream: its client, how many requests it takes at once, how many it holds, and until when it
    is set aside after failing (each failure in a row doubles its back-off; an answer ends it)."""

    url: str
    client: Any
    capacity: int
    in_flight: int = 0
    failures: int = 0
    aside_until: float = 0.0
    last_error: str = ""

    def room(self, now: float) -> int:
        """Requests it may be sent now: none while set aside; one (a probe) after failing, until it answers."""
        if now < self.aside_until:
            return 0
        return max(0, (1 if self.failures else self.capacity) - self.in_flight)


@dataclass
class _Request:
    key: int
    body: bytes  # the JSON body, encoded once
    sent: float  # when the engine sent it (an answer's latency counts its retries)
    attempts: int = 0
    waited: float = 0.0
    not_before: float = 0.0  # waiting to be retried until then
    last_error: str = ""


@dataclass
class _Attempt:
    request: _Request
    replica: _Replica
    deadline: float


class OpenAIStream:
    """Requests kept in flight over one or more replicas (base.Stream; docs/adr/0032). Everything is decided in the
    caller's thread, in `answers()`: which replica a request goes to (the one with the fewest in flight for its
    concurrency, among those not set aside), each attempt's deadline (wall time: a server dripping bytes times out),
    retries with jittered exponential back-off or the server's Retry-After (capped), and setting a failing replica
    aside. Attempts are tasks on the transport's event loop (docs/adr/0052) that only put their outcomes in a queue;
    an attempt past its deadline, or still in flight at close(), is cancelled there and its late outcome dropped —
    nobody waits for it."""

    def __init__(self, backend: OpenAIBackend, max_new_tokens: int):
        self.backend, self.max_new_tokens = backend, max_new_tokens
        clients = backend._clients
        self.replicas = [
            _Replica(url or OFFICIAL_SERVER, clients[i], capacity)
            for i, (url, capacity) in enumerate(zip(backend.base_urls, backend.concurrencies))
        ]
        self.capacity = backend.concurrency
        self._ready: list[_Request] = []  # waiting for a replica (or for their retry time): oldest first
        self._flight: dict[int, _Attempt] = {}
        self._inbox: queue.SimpleQueue[tuple[int, Any]] = queue.SimpleQueue()
        self._loop = _event_loop()
        self._tasks: dict[int, asyncio.Task[None]] = {}  # the loop thread's alone: attempts it runs
        self._to_start: list[tuple[int, Any, bytes]] = []  # started in this turn of _dispatch: handed over at once
        self._ids = itertools.count()
        self._closed = False

    # -- base.Stream ------------------------------------------------------------------------------------------
    def send(self, key: int, query: Query) -> None:
        self.send_body(key, self.backend._request_body(query, self.max_new_tokens))

    def send_body(self, key: int, body: dict[str, Any]) -> None:
        self._ready.append(_Request(key, json.dumps(body).encode(), time.monotonic()))
        self._dispatch(time.monotonic())

    def load(self) -> int:
        return len(self._ready) + len(self._flight)

    def answers(self, timeout: float) -> list[Answer]:
        end = time.monotonic() + max(timeout, 0.0)
        out: list[Answer] = []
        while True:
            now = time.monotonic()
            self._dispatch(now)
            wait = min([end] + [a.deadline for a in self._flight.values()] + self._retry_times(now)) - now
            try:
                outcome = self._inbox.get(timeout=min(max(wait, 0.0), _POLL_S))
            except queue.Empty:
                outcome = None
            while outcome is not None:
                self._take(*outcome, out)
                try:
                    outcome = self._inbox.get_nowait()
                except queue.Empty:
                    outcome = None
            self._expire(time.monotonic())
            if out or time.monotonic() >= end:
                return out

    def close(self) -> None:
        """Abandon everything: requests not sent are not sent, those in flight are cancelled on the loop (their
        outcomes, if any come, go to a queue nobody reads). Never waits."""
        self._closed = True
        self._ready.clear()
        self._to_start.clear()
        dropped = list(self._flight)
        self._flight.clear()
        if dropped:
            self._call_soon(self._cancel, dropped)

    # -- inside ---------------------------------------------------------------------------------------------
    def _retry_times(self, now: float) -> list[float]:
        """When a request waiting now may go: its retry time, or a replica's end of being set aside."""
        if not self._ready:
            return []
        times = [r.not_before for r in self._ready] + [p.aside_until for p in self.replicas]
        return [t for t in times if t > now]

    def _dispatch(self, now: float) -> None:
        """Send every request that may go now to the least loaded replica that has room."""
        if self._closed or not self._ready:
            return
        waiting = []
        for request in self._ready:
            if request.not_before > now:
                waiting.append(request)
                continue
            open_ = [p for p in self.replicas if p.room(now) > 0]
            if not open_:
                waiting.append(request)
                continue
            replica = min(open_, key=lambda p: (p.in_flight / p.capacity, -p.room(now)))
            self._start(request, replica, now)
        self._ready = waiting
        if self._to_start:  # one wake-up of the loop for all of them
            self._call_soon(self._spawn, self._to_start)
            self._to_start = []

    def _start(self, request: _Request, replica: _Replica, now: float) -> None:
        request.attempts += 1
        replica.in_flight += 1
        attempt_id = next(self._ids)
        self._flight[attempt_id] = _Attempt(request, replica, now + self.backend.timeout)
        self._to_start.append((attempt_id, replica.client, request.body))

    def _call_soon(self, fn: Any, arg: Any) -> None:
        try:
            self._loop.call_soon_threadsafe(fn, arg)
        except RuntimeError:  # the loop is gone (interpreter shutting down): nothing to run or cancel
            pass

    # Run in the loop's thread.
    def _spawn(self, jobs: list[tuple[int, Any, bytes]]) -> None:
        for attempt_id, client, body in jobs:
            task = self._loop.create_task(_attempt(client, body, self._inbox, attempt_id))
            self._tasks[attempt_id] = task
            task.add_done_callback(functools.partial(self._forget, attempt_id))

    def _forget(self, attempt_id: int, _task: object) -> None:
        self._tasks.pop(attempt_id, None)

    def _cancel(self, attempt_ids: list[int]) -> None:
        for attempt_id in attempt_ids:
            task = self._tasks.pop(attempt_id, None)
            if task is not None:
                task.cancel()

    def _take(self, attempt_id: int, outcome: Any, out: list[Answer]) -> None:
        attempt = self._flight.pop(attempt_id, None)
        if attempt is None:
            return  # abandoned at its deadline, or the stream was closed
        attempt.replica.in_flight -= 1
        httpx2 = self.backend._httpx
        if isinstance(outcome, _Reply):
            status = outcome.status_code
            if 200 <= status < 300:
                try:
                    said = _completion_of(outcome.text)
                except _Malformed as exc:
                    self._failed(attempt, f"malformed response: {exc}", None)
                    return
                attempt.replica.failures, attempt.replica.aside_until = 0, 0.0
                latency = (time.monotonic() - attempt.request.sent) * 1000
                out.append(Answer.of(attempt.request.key, said, round(latency, 3)))
                return
            detail = _server_message(outcome)
            if not _retryable_status(status):
                raise BackendError(
                    f"openai: {attempt.replica.url} answered HTTP {status} for model {self.backend.model!r}: "
                    f"{detail}{self._key_hint(status)}"
                ) from None
            self._failed(attempt, f"HTTP {status}: {detail}", _retry_after_seconds(outcome.headers))
        elif isinstance(outcome, _TooBig):
            self._failed(attempt, str(outcome), None)
        elif _is_timeout(outcome, httpx2):
            self._failed(attempt, self._timeout_error(), None)
        elif _is_connection_error(outcome, httpx2):
            self._failed(attempt, f"connection error: {_connection_detail(outcome)}", None)
        elif isinstance(outcome, Exception):
            raise BackendError(
                f"openai: {attempt.replica.url}: {type(outcome).__name__}: {_one_line(str(outcome))[:300]}"
            ) from None
        else:
            raise outcome  # KeyboardInterrupt or SystemExit on the loop

    def _expire(self, now: float) -> None:
        """Abandon every attempt past its deadline: cancelled on the loop (its connection closed), a late answer
        dropped."""
        late = [i for i, a in self._flight.items() if a.deadline <= now]
        if late:
            self._call_soon(self._cancel, late)
        for attempt_id in late:
            attempt = self._flight.pop(attempt_id)
            attempt.replica.in_flight -= 1
            self._failed(attempt, self._timeout_error(), None)

    def _timeout_error(self) -> str:
        return f"no answer within {self.backend.timeout:g} s (timeout)"

    def _failed(self, attempt: _Attempt, error: str, retry_after: float | None) -> None:
        """A failed attempt: the replica set aside for the back-off (or what it asked for), the request retried —
        on another replica at once when one has room, else when the back-off ends — or given up on."""
        backend, request, replica = self.backend, attempt.request, attempt.replica
        now = time.monotonic()
        replica.failures += 1
        replica.last_error = request.last_error = error
        attempts = backend.retries + 1
        if request.attempts >= attempts:
            self._give_up(request, attempts, "")
        left = backend.max_total_wait - request.waited
        if left <= 0:
            self._give_up(
                request, attempts, f" (no more retries: one request waits {backend.max_total_wait:g} s in all at most)"
            )
        delay = min(backend._delay(request.attempts, retry_after), left)
        others = any(p is not replica and p.aside_until <= now for p in self.replicas)
        wait = 0.0 if others else delay  # what the request waits: nothing when another replica may take it
        backend._tell(RetryWait(replica.url, request.key, error, retry_after, wait, request.attempts + 1, attempts))
        request.waited += wait
        really = backend._wait_for(delay)  # the back-off as it is really waited (tests record and skip it)
        replica.aside_until = max(replica.aside_until, now + really)
        request.not_before = now if others else now + really
        self._ready.insert(0, request)  # retried before anything newer

    def _give_up(self, request: _Request, attempts: int, why: str) -> NoReturn:
        backend = self.backend
        tried = f"after {request.attempts} attempt{'s' if request.attempts != 1 else ''}{why}"
        if all(p.failures for p in self.replicas):  # every replica failed its last request (or is set aside)
            if len(self.replicas) == 1:
                raise ServersDown(
                    f"openai: {self.replicas[0].url} failed for model {backend.model!r} {tried}; "
                    f"last error: {request.last_error}"
                )
            down = "; ".join(f"{p.url}: {p.last_error or 'set aside'}" for p in self.replicas)
            raise ServersDown(f"openai: no server answers for model {backend.model!r} ({tried}): {down}")
        raise BackendError(
            f"openai: {backend.server} failed for model {backend.model!r} {tried}; last error: {request.last_error}"
        )

    def _key_hint(self, status: int) -> str:
        if status not in (401, 403):
            return ""
        backend = self.backend
        return (
            f" (key from ${backend.key_env})"
            if backend._key_is_set
            else f" (no API key: ${backend.key_env} is not set)"
        )


# ---- the transport ---------------------------------------------------------------------------------------------


class _TooBig(Exception):
    """A response body over MAX_STREAM_BYTES: a failed attempt, its body never read whole."""


@dataclass(frozen=True)
class _Reply:
    """A response read whole within its bound, as the caller's thread reads it (openai_backend._Response)."""

    status_code: int
    content: bytes
    headers: Any  # httpx2.Headers
    reason_phrase: str

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")


_LOOP: tuple[int, asyncio.AbstractEventLoop] | None = None
_LOOP_LOCK = threading.Lock()


def _event_loop() -> asyncio.AbstractEventLoop:
    """The event loop every openai client of this process runs on, in a daemon thread started when first needed
    (nobody ever waits for it: Cancel and SIGTERM are the caller's thread's, docs/adr/0024)."""
    global _LOOP
    with _LOOP_LOCK:
        if _LOOP is None or _LOOP[0] != os.getpid():  # a forked child has the object, not the thread
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="openai-loop", daemon=True).start()
            _LOOP = (os.getpid(), loop)
        return _LOOP[1]


async def _attempt(client: Any, body: bytes, inbox: queue.SimpleQueue[tuple[int, Any]], attempt_id: int) -> None:
    """One attempt, a task on the loop: its outcome (a _Reply, or what went wrong) handed to the caller's thread.
    A cancelled attempt (its deadline passed, or its stream closed) hands nothing."""
    try:
        outcome: Any = await _post_bounded(client, body)
    except asyncio.CancelledError:
        raise
    except BaseException as exc:  # handed to the caller's thread
        outcome = exc
    inbox.put((attempt_id, outcome))


async def _post_bounded(client: Any, body: bytes) -> _Reply:
    """POST a chat completion through the SDK and read its response's body, at most MAX_STREAM_BYTES of it (a
    server answering 1 GB is cut off there: _TooBig). The SDK's low-level `post` with `cast_to=httpx2.Response`:
    our body bytes sent as they are, the response never turned into the SDK's models (their CPU, ADR 0032)."""
    import httpx2
    import openai

    try:
        response = await client.post(
            "chat/completions", cast_to=httpx2.Response, content=body, stream=True, options=_request_options()
        )
    except openai.APIStatusError as exc:  # 4xx/5xx: its body read within MAX_ERROR_BYTES (_bound_error_body)
        r = exc.response
        return _Reply(r.status_code, r.content, r.headers, r.reason_phrase)
    try:
        chunks, read = [], 0
        async for chunk in response.aiter_bytes():  # decoded: the bound holds for a compressed body too
            read += len(chunk)
            if read > MAX_STREAM_BYTES:
                raise _TooBig(f"an answer of over {MAX_STREAM_BYTES // 2**20} MB")
            chunks.append(chunk)
    finally:
        await response.aclose()
    return _Reply(response.status_code, b"".join(chunks), response.headers, response.reason_phrase)


async def _bound_error_body(response: Any) -> None:
    """httpx2's response hook: a 4xx/5xx's body, which the SDK reads whole before raising, is read here instead —
    at most MAX_ERROR_BYTES, decoded within the same bound — and handed on as those bytes."""
    if response.status_code < 400:
        return
    import httpx2

    raw, size = [], 0
    try:
        async for chunk in response.stream:  # raw bytes, as they came
            raw.append(chunk)
            size += len(chunk)
            if size > MAX_ERROR_BYTES:
                break
    finally:
        await response.stream.aclose()
    data = b"".join(raw)[:MAX_ERROR_BYTES]
    encoding = response.headers.get("content-encoding", "").strip().lower()
    if encoding in ("gzip", "x-gzip", "deflate"):
        try:
            data = zlib.decompressobj(zlib.MAX_WBITS | 32).decompress(data, MAX_ERROR_BYTES)
        except zlib.error:
            data = b""
    elif encoding not in ("", "identity"):
        data = b""  # not decoded here (br, zstd): the status says enough
    if "content-encoding" in response.headers:
        del response.headers["content-encoding"]
    response.stream = httpx2.ByteStream(data)


_SDK_HEADERS = (  # the SDK's platform report: nothing a server needs, and CPU per request
    "X-Stainless-Lang",
    "X-Stainless-Package-Version",
    "X-Stainless-OS",
    "X-Stainless-Arch",
    "X-Stainless-Runtime",
    "X-Stainless-Runtime-Version",
    "X-Stainless-Async",
)
_OPTIONS: dict[str, Any] | None = None


def _request_options() -> dict[str, Any]:
    """What every request tells the SDK: only the bearer key is sent (not an admin key the SDK would read from
    $OPENAI_ADMIN_KEY and send to whatever server the spec names), without the SDK's per-request telemetry."""
    global _OPTIONS
    if _OPTIONS is None:
        from openai import Omit

        omit = {"x-stainless-retry-count": Omit(), "x-stainless-read-timeout": Omit()}
        _OPTIONS = {"headers": omit, "security": {"bearer_auth": True}, "max_retries": 0}
    return _OPTIONS


class _Clients:
    """A backend's clients, one per replica, made when first used (importing the SDK costs 0.4 s: a backend built
    only to check a spec never pays it). The key is read from the environment when the backend is built."""

    def __init__(self, backend: OpenAIBackend):
        self._backend = backend
        self._key = os.environ.get(backend.key_env) or DUMMY_KEY
        self._made: dict[int, Any] = {}

    def __len__(self) -> int:
        return len(self._backend.base_urls)

    def __getitem__(self, index: int) -> Any:
        client = self._made.get(index)
        if client is None:
            client = self._made[index] = client_for(self._backend, self._backend.base_urls[index], self._key)
            finalizer = weakref.finalize(self, _close_later, client)
            finalizer.atexit = False  # at exit the loop's thread is frozen: the process closes the sockets
        return client

    def __repr__(self) -> str:  # never the key
        return f"<openai clients of {len(self)} replicas>"


def _close_later(client: Any) -> None:
    """Closes a client no backend uses any more, on the loop, without waiting."""
    loop = _event_loop()
    try:
        loop.call_soon_threadsafe(lambda: loop.create_task(client.close()))
    except RuntimeError:
        pass


def make_clients(backend: OpenAIBackend) -> tuple[Any, Any]:
    """The HTTP library (httpx2, whose errors and version the backend reads) and the backend's clients, one per
    replica (made when first used)."""
    import httpx2

    backend._httpx = httpx2
    return httpx2, _Clients(backend)


def client_for(backend: OpenAIBackend, url: str | None, key: str | None = None) -> Any:
    """One `AsyncOpenAI` client per replica, used only on the transport's event loop. Its own retries are off
    (`max_retries=0`): retries are ours, so they are told through `on_wait`, capped, and move to another replica
    (OpenAIStream). Its timeout is per read; our deadline is wall time (OpenAIStream). Its httpx2 client bounds an
    error body (_bound_error_body) and keeps up to MAX_KEEPALIVE connections."""
    import httpx2
    import openai

    http = httpx2.AsyncClient(
        timeout=httpx2.Timeout(backend.timeout),
        limits=httpx2.Limits(max_connections=None, max_keepalive_connections=MAX_KEEPALIVE),
        follow_redirects=False,
        trust_env=True,
        event_hooks={"response": [_bound_error_body]},
    )
    headers: dict[str, Any] = {"User-Agent": "vlmdesk", **{h: openai.Omit() for h in _SDK_HEADERS}}
    return openai.AsyncOpenAI(
        api_key=key if key is not None else os.environ.get(backend.key_env) or DUMMY_KEY,
        base_url=url or OFFICIAL_SERVER,
        max_retries=0,
        timeout=httpx2.Timeout(backend.timeout),
        http_client=http,
        default_headers=headers,
    )


def sdk_version() -> str | None:
    """The installed openai SDK's version (for describe()), without importing it."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("openai")
    except PackageNotFoundError:
        return None


def _is_timeout(exc: object, httpx2: Any) -> bool:
    import openai

    return isinstance(exc, (openai.APITimeoutError, httpx2.TimeoutException))


def _is_connection_error(exc: object, httpx2: Any) -> bool:
    import openai

    return isinstance(exc, (openai.APIConnectionError, httpx2.RequestError, httpx2.StreamError))


def _connection_detail(exc: BaseException) -> str:
    """What went wrong on the wire, on one line: the SDK's "Connection error." says less than its cause."""
    cause = exc.__cause__ if exc.__cause__ is not None else exc
    return _one_line(str(cause) or type(cause).__name__)[:300]


_END = object()


async def _stream_chunks(client: Any, body: bytes, out: queue.SimpleQueue[Any]) -> None:
    """The live arena's request on the loop: each chunk of the body as it comes, then _END; or a _Reply (an error
    status), _TooBig or what went wrong. At most MAX_STREAM_BYTES are read, however slowly they are taken."""
    import httpx2
    import openai

    try:
        try:
            response = await client.post(
                "chat/completions", cast_to=httpx2.Response, content=body, stream=True, options=_request_options()
            )
        except openai.APIStatusError as exc:
            r = exc.response
            out.put(_Reply(r.status_code, r.content, r.headers, r.reason_phrase))
            return
        try:
            if not 200 <= response.status_code < 300:  # a redirect (not followed)
                out.put(_Reply(response.status_code, b"", response.headers, response.reason_phrase))
                return
            read = 0
            async for chunk in response.aiter_bytes():
                read += len(chunk)
                if read > MAX_STREAM_BYTES:
                    out.put(_TooBig())
                    return
                out.put(chunk)
        finally:
            await response.aclose()
        out.put(_END)
    except asyncio.CancelledError:
        raise
    except BaseException as exc:
        out.put(exc)


def stream_text(backend: OpenAIBackend, query: Query, max_new_tokens: int) -> Iterator[str]:
    """One chat completion asked with ``"stream": true`` (server-sent events): the text so far each time it
    grows — the live arena shows it as it comes (evaluator/engine/live.py). One attempt on the first replica within
    the wall-clock timeout and no retries: the person who asked sees a failure and asks again. A server that answers
    a plain completion instead of events gives its text once. Reads are bounded (MAX_STREAM_BYTES). The request is
    a task on the transport's loop; this generator only waits on its queue (at most _POLL_S at a time, so a signal
    is handled), and closing it cancels the request."""
    body = {**backend._request_body(query, max_new_tokens), "stream": True}
    httpx2, url = backend._httpx, backend.server
    deadline = time.monotonic() + backend.timeout
    chunks: queue.SimpleQueue[Any] = queue.SimpleQueue()
    future = asyncio.run_coroutine_threadsafe(
        _stream_chunks(backend._clients[0], json.dumps(body).encode(), chunks), _event_loop()
    )
    text, events, pending = "", False, b""
    plain: list[str] = []
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BackendError(f"openai: {url}: the streamed answer was not done within {backend.timeout:g} s")
            try:
                item = chunks.get(timeout=min(left, _POLL_S))
            except queue.Empty:
                continue
            if item is _END:
                lines, pending = [pending], b""
            elif isinstance(item, bytes):
                pending += item
                *lines, pending = pending.split(b"\n")
            elif isinstance(item, _Reply):
                raise BackendError(
                    f"openai: {url} answered HTTP {item.status_code} for model {backend.model!r}: "
                    f"{_server_message(item)}"
                )
            elif isinstance(item, _TooBig):
                raise BackendError(f"openai: {url}: the streamed answer was over {MAX_STREAM_BYTES // 2**20} MB")
            elif _is_timeout(item, httpx2):
                raise BackendError(f"openai: {url}: no answer within {backend.timeout:g} s (timeout)")
            elif _is_connection_error(item, httpx2):
                raise BackendError(f"openai: {url}: connection error: {_connection_detail(item)[:200]}")
            elif isinstance(item, Exception):
                raise BackendError(f"openai: {url}: {type(item).__name__}: {_one_line(str(item))[:300]}")
            else:
                raise item
            done = False
            for raw in lines:
                line = raw.decode("utf-8", "replace").removesuffix("\r")
                if not line.startswith("data:"):
                    if plain or (not events and line.strip()):
                        plain.append(line)  # not events: a plain completion, read whole below
                    continue  # else a blank between events, or an event's other field (event:, id:, :comment)
                events = True
                data = line[5:].strip()
                if data == "[DONE]":
                    done = True
                    break
                piece = _delta_of(data)
                if piece:
                    text += piece
                    yield text
            if done or item is _END:
                break
    finally:
        future.cancel()  # the request ends with the answer, a failure, or whoever stopped reading
    if plain and any(line.strip() for line in plain):
        try:
            text = _completion_of("\n".join(plain)).text
        except _Malformed as exc:
            raise BackendError(f"openai: {url}: malformed response: {exc}") from None
        yield text
    elif not text:
        yield ""
