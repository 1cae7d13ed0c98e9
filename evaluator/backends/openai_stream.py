"""How the openai backend keeps requests in flight over its replicas (base.Stream; docs/adr/0032): the scheduling
— which replica, each attempt's wall-clock deadline, retries and back-off, setting a failing replica aside — and the
transport that sends each attempt. The request bodies and what a response means are openai_backend's."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import queue
import threading
import time
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
    aside. Attempts are sent by a pool of daemon threads that only put their outcomes in a queue (as many threads as
    attempts in flight, kept between attempts: a thread per attempt cost more CPU than the request); an attempt past
    its deadline is abandoned — its late outcome dropped, its thread replaced while it hangs."""

    def __init__(self, backend: OpenAIBackend, max_new_tokens: int):
        self.backend, self.max_new_tokens = backend, max_new_tokens
        self.replicas = [
            _Replica(url or OFFICIAL_SERVER, client, capacity)
            for url, client, capacity in zip(backend.base_urls, backend._clients, backend.concurrencies)
        ]
        self.capacity = backend.concurrency
        self._ready: list[_Request] = []  # waiting for a replica (or for their retry time): oldest first
        self._flight: dict[int, _Attempt] = {}
        self._inbox: queue.SimpleQueue[tuple[int, Any]] = queue.SimpleQueue()
        self._jobs: queue.SimpleQueue[tuple[int, Any, bytes] | None] = queue.SimpleQueue()
        self._workers = 0  # threads of the pool
        self._abandoned: set[int] = set()  # attempts given up on whose threads have not come back
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
        self._closed = True
        self._ready.clear()
        self._flight.clear()  # outcomes still to come go to a queue nobody reads
        with contextlib.suppress(queue.Empty):
            while True:
                self._jobs.get_nowait()  # never sent
        for _ in range(self._workers):
            self._jobs.put(None)

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

    def _start(self, request: _Request, replica: _Replica, now: float) -> None:
        request.attempts += 1
        replica.in_flight += 1
        attempt_id = next(self._ids)
        self._flight[attempt_id] = _Attempt(request, replica, now + self.backend.timeout)
        if self._workers - len(self._abandoned) < len(self._flight):  # every attempt in flight has a thread
            self._workers += 1
            threading.Thread(target=self._work, name="openai-request", daemon=True).start()
        self._jobs.put((attempt_id, replica.client, request.body))

    def _work(self) -> None:
        """A thread of the pool: POST each job's body, hand the response (or what went wrong) to the caller."""
        jobs, inbox = self._jobs, self._inbox
        while (job := jobs.get()) is not None:
            attempt_id, client, body = job
            try:
                outcome: Any = _post_bounded(client, body)
            except BaseException as exc:  # handed to the caller's thread
                outcome = exc
            inbox.put((attempt_id, outcome))

    def _take(self, attempt_id: int, outcome: Any, out: list[Answer]) -> None:
        attempt = self._flight.pop(attempt_id, None)
        if attempt is None:
            self._abandoned.discard(attempt_id)  # its thread is back in the pool
            return  # abandoned at its deadline, or the stream was closed
        attempt.replica.in_flight -= 1
        httpx2 = self.backend._httpx
        if isinstance(outcome, httpx2.Response):
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
        elif isinstance(outcome, httpx2.TimeoutException):
            self._failed(attempt, self._timeout_error(), None)
        elif isinstance(outcome, httpx2.RequestError):
            self._failed(attempt, f"connection error: {_one_line(str(outcome) or type(outcome).__name__)}", None)
        elif isinstance(outcome, Exception):
            raise BackendError(
                f"openai: {attempt.replica.url}: {type(outcome).__name__}: {_one_line(str(outcome))[:300]}"
            ) from None
        else:
            raise outcome  # KeyboardInterrupt or SystemExit in a request thread

    def _expire(self, now: float) -> None:
        """Abandon every attempt past its deadline (its thread is left behind; a late answer is dropped)."""
        for attempt_id in [i for i, a in self._flight.items() if a.deadline <= now]:
            attempt = self._flight.pop(attempt_id)
            self._abandoned.add(attempt_id)
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


class _TooBig(Exception):
    """A response body over MAX_STREAM_BYTES: a failed attempt, its body never read whole."""


def _post_bounded(client: Any, body: bytes) -> Any:
    """POST a chat completion and read its response's body, at most MAX_STREAM_BYTES of it (a server answering 1 GB
    is cut off there); the response as httpx2 would give it, or _TooBig."""
    with client.stream("POST", "chat/completions", content=body) as response:
        chunks, read = [], 0
        for chunk in response.iter_bytes():  # decoded: the bound holds for a compressed body too
            read += len(chunk)
            if read > MAX_STREAM_BYTES:
                raise _TooBig(f"an answer of over {MAX_STREAM_BYTES // 2**20} MB")
            chunks.append(chunk)
    # The body is decoded already: a response built of it must not decode it again.
    headers = [(k, v) for k, v in response.headers.multi_items() if k.lower() != "content-encoding"]
    return type(response)(response.status_code, headers=headers, content=b"".join(chunks), request=response.request)


# ---- the transport ---------------------------------------------------------------------------------------------


def make_clients(backend: OpenAIBackend) -> tuple[Any, tuple[Any, ...]]:
    """The HTTP library and one client per replica of a backend."""
    import httpx2

    backend._httpx = httpx2
    return httpx2, tuple(client_for(backend, url) for url in backend.base_urls)


def client_for(backend: OpenAIBackend, url: str | None) -> Any:
    """One HTTP client per replica. The chat-completions POST is sent with httpx2 (the HTTP library the openai
    SDK is built on) rather than through the SDK: the SDK's request and response models cost ~3 ms of CPU a
    request here against ~1 ms, and at hundreds of requests a second the client's CPU, not the servers, would
    bound the run (docs/adr/0032). Its timeout is per read; our deadline is wall time (OpenAIStream)."""
    httpx2 = backend._httpx
    return httpx2.Client(
        base_url=(url or OFFICIAL_SERVER) + "/",
        headers={
            "Authorization": f"Bearer {os.environ.get(backend.key_env) or DUMMY_KEY}",
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": "vlmdesk",
        },
        timeout=httpx2.Timeout(backend.timeout),
        limits=httpx2.Limits(max_connections=None, max_keepalive_connections=MAX_KEEPALIVE),
        follow_redirects=False,
        trust_env=True,
    )


def stream_text(backend: OpenAIBackend, query: Query, max_new_tokens: int) -> Iterator[str]:
    """One chat completion asked with ``"stream": true`` (server-sent events): the text so far each time it
    grows — the live arena shows it as it comes (evaluator/engine/live.py). One attempt on the first replica within
    the
    wall-clock timeout and no retries: the person who asked sees a failure and asks again. A server that answers
    a plain completion instead of events gives its text once. Reads are bounded (MAX_STREAM_BYTES)."""
    body = {**backend._request_body(query, max_new_tokens), "stream": True}
    httpx2, url = backend._httpx, backend.server
    deadline = time.monotonic() + backend.timeout
    text, read, events = "", 0, False
    plain: list[str] = []
    try:
        with backend._clients[0].stream("POST", "chat/completions", content=json.dumps(body).encode()) as response:
            if not 200 <= response.status_code < 300:
                response.read()
                raise BackendError(
                    f"openai: {url} answered HTTP {response.status_code} for model {backend.model!r}: "
                    f"{_server_message(response)}"
                )
            for line in response.iter_lines():
                read += len(line) + 1
                if read > MAX_STREAM_BYTES or time.monotonic() > deadline:
                    why = "over 16 MB" if read > MAX_STREAM_BYTES else f"not done within {backend.timeout:g} s"
                    raise BackendError(f"openai: {url}: the streamed answer was {why}")
                if not line.startswith("data:"):
                    if plain or (not events and line.strip()):
                        plain.append(line)  # not events: a plain completion, read whole below
                    continue  # else a blank between events, or an event's other field (event:, id:, :comment)
                events = True
                data = line[5:].strip()
                if data == "[DONE]":
                    break
                piece = _delta_of(data)
                if piece:
                    text += piece
                    yield text
    except httpx2.TimeoutException:
        raise BackendError(f"openai: {url}: no answer within {backend.timeout:g} s (timeout)") from None
    except httpx2.RequestError as exc:
        raise BackendError(f"openai: {url}: connection error: {_one_line(str(exc))[:200]}") from None
    if plain and any(line.strip() for line in plain):
        try:
            text = _completion_of("\n".join(plain)).text
        except _Malformed as exc:
            raise BackendError(f"openai: {url}: malformed response: {exc}") from None
        yield text
    elif not text:
        yield ""
