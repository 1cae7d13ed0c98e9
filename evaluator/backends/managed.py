"""Servers vlmdesk starts, feeds and stops (issue 36, docs/adr/0053): ``vllm:<model>[?options]`` and
``sglang:<model>[?options]``.

Building such a backend starts the server as a child process in a process group of its own, on a free port of
127.0.0.1, with the documented command line (`Recipe`: how to build the argv, which URL means ready, how to ask the
version), waits until ``GET /v1/models`` answers (a wall-clock startup deadline; the child exiting first fails at
once with the last lines of its log), and hands every query to the openai: backend pointed at it (the engine's
stream). The server's output goes to a log file in ``BuildContext.log_dir`` (the workspace's ``<name>.servers/``
folder), kept bounded. ``close()`` stops it — SIGTERM to its process group, SIGKILL after STOP_GRACE_S — and so do
the interpreter's exit (atexit) and a SIGTERM to vlmdesk (raised as KeyboardInterrupt, which unwinds to the
close); on Linux the server also gets SIGTERM when vlmdesk dies without a word (PR_SET_PDEATHSIG).

A server that exits while a run asks it makes the run's stream raise ServersDown naming its log (the run ends
interrupted; running it again starts a fresh server and asks only what is missing). The run's identity is the model
and the settings that change answers (IDENTITY options, the openai: backend's sampling options), never the port,
the log or how the engine is spread over GPUs. vLLM and SGLang are the user's install; a missing one is a one-line
error naming what to install. A plugin (VLMDESK_PLUGINS) adds a server kind by declaring ``entry(Recipe(...))``.
"""

from __future__ import annotations

import atexit
import datetime
import json
import math
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode

from db import platform_io
from evaluator.registry import Field

from .base import Answer, BackendEntry, BackendError, BuildContext, Generation, Query, ServersDown, Stream

HOST = "127.0.0.1"
DEFAULT_STARTUP_S = 1800.0  # a big model's weights may download and load for many minutes
STOP_GRACE_S = 10.0  # SIGTERM, then SIGKILL: within the app's 15 s before it kills a run that ignores Cancel
VERSION_TIMEOUT_S = 120.0  # asking the version imports the engine (torch): seconds, not minutes
MAX_LOG_BYTES = 32 * 2**20  # a log is rotated past this (one older copy kept): 64 MiB per server at most
MAX_LOGS = 32  # server logs kept in a folder; the oldest are removed when a server starts
TAIL_BYTES = 8 * 1024  # of the output kept in memory, for the message of a server that exits
MAX_MODEL_CHARS = 1000
MAX_EXTRA_ARGS = 64
# Defaults of the openai: options for a server of our own: a continuous-batching engine wants many requests in
# flight, and a thinking model's 32k-token answer takes minutes (both operational, never part of the identity).
OPENAI_DEFAULTS = {"concurrency": "64", "timeout": "1800"}
# openai: options that never change an answer: left out of the run's identity.
OPERATIONAL_OPENAI = frozenset({"concurrency", "timeout", "retries", "backoff", "key_env"})
_WORD = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,79}$")
_OWNED_FLAGS = ("--host", "--port", "--api-key")  # ours (the address), or a secret that would be stored in the spec


@dataclass(frozen=True)
class Option:
    """A server option of a managed spec: its kind and bounds, whether it changes answers (part of the run's
    identity), and its help (the app's form)."""

    kind: str  # int, float, choice, flag, word, text, args, path
    identity: bool
    label: str
    help: str = ""
    low: float = 0
    high: float = 0
    choices: tuple[str, ...] = ()
    default: str | None = None  # a value equal to it is the option left out (identity and spec alike)


OPTIONS: dict[str, Option] = {
    "tp": Option("int", False, "Tensor parallel", "GPUs one copy of the model is split over", 1, 512),
    "dp": Option("int", False, "Data parallel", "copies of the model serving at once", 1, 512),
    "max_model_len": Option(
        "int", True, "Context length", "tokens of prompt and answer together (default: the model's)", 16, 10**7
    ),
    "reasoning_parser": Option(
        "word", True, "Reasoning parser", "the server splits a thinking model's thought apart (e.g. qwen3)"
    ),
    "gpu_memory_utilization": Option(
        "float", False, "GPU memory", "of each GPU's memory the server may take (0.05–1)", 0.05, 1.0
    ),
    "dtype": Option(
        "choice",
        True,
        "dtype",
        "weights and activations",
        choices=("auto", "half", "float16", "bfloat16", "float", "float32"),
        default="auto",
    ),
    "quantization": Option("word", True, "Quantization", "the server's quantization method (e.g. fp8, awq)"),
    "max_images": Option("int", False, "Images/prompt", "the most images one prompt may carry", 0, 256),
    "trust_remote_code": Option("flag", False, "Trust remote code", "run the model repository's own code"),
    "served_model_name": Option("word", False, "Served name", "the name requests use (default: the model)"),
    "extra_args": Option(
        "args", True, "Extra args", "more of the server's own command-line arguments, as a shell would split them"
    ),
    "startup_timeout": Option(
        "float", False, "Startup (s)", "the longest the server may take to answer", 1, 7 * 86_400
    ),
    "bin": Option("path", False, "Program", "the server's program (default: found on PATH)"),
}
COMMON = ("served_model_name", "extra_args", "startup_timeout", "bin")  # every recipe reads these


@dataclass(frozen=True)
class ServerSpec:
    """A managed spec, read: the model, the server options given (typed, checked) and the openai: options."""

    scheme: str
    model: str
    settings: Mapping[str, Any]
    openai: tuple[tuple[str, str], ...]

    @property
    def served_name(self) -> str:
        return str(self.settings.get("served_model_name") or self.model)

    @property
    def startup_s(self) -> float:
        return float(self.settings.get("startup_timeout", DEFAULT_STARTUP_S))

    def flag(self, name: str, flag: str) -> list[str]:
        """[flag, value] when the option is given, else []."""
        value = self.settings.get(name)
        if value is None or value is False:
            return []
        return [flag] if value is True else [flag, _text(value)]

    def openai_spec(self, port: int) -> str:
        """The openai: spec (after ``openai:``) that talks to the server on `port`."""
        given = dict(self.openai)
        options = [(k, v) for k, v in OPENAI_DEFAULTS.items() if k not in given] + list(self.openai)
        return f"{self.served_name}@http://{HOST}:{port}/v1" + (f"?{urlencode(options)}" if options else "")


@dataclass(frozen=True)
class Recipe:
    """How one kind of server is started: ``command(spec, program, port)`` is its argv, ``version(program)`` the
    argv of a command printing its version (also how a missing install is found before anything starts),
    ``ready_path`` the URL path that answers 200 once it serves. ``program`` is looked up on PATH (None: this
    Python); ``install`` says what to install when it is missing."""

    name: str
    title: str
    install: str
    command: Callable[[ServerSpec, str, int], list[str]]
    version: Callable[[str], list[str]]
    options: tuple[str, ...]
    program: str | None = None
    ready_path: str = "/v1/models"
    env: Mapping[str, str] = field(default_factory=dict)
    examples: tuple[str, ...] = ()


# ---- reading a spec -----------------------------------------------------------------------------------------------


def parse(recipe: Recipe, rest: str) -> ServerSpec:
    """The spec after ``<scheme>:``, checked: BackendError (one line) for anything wrong; nothing is started."""
    name = recipe.name
    head, _, query = rest.partition("?")
    model = head.strip()
    if not model:
        raise BackendError(f"{name}: a model is required: {syntax(recipe)}")
    if re.search(r"@(?=https?://)", model):
        raise BackendError(f"{name}: starts its own server; for a server already running use openai:MODEL@URL")
    if model.startswith("-") or len(model) > MAX_MODEL_CHARS or re.search(r"[\x00-\x1f\x7f]", model):
        raise BackendError(
            f"{name}: the model must be a hub name or a folder (not starting with '-'), got {model[:80]!r}"
        )
    try:
        pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query))
    except ValueError:
        raise BackendError(f"{name}: cannot read the options {query[:80]!r}: {syntax(recipe)}") from None
    settings: dict[str, Any] = {}
    openai: list[tuple[str, str]] = []
    takes = (*recipe.options, *COMMON)
    for key, value in pairs:
        if key in OPTIONS:
            if key not in takes:
                raise BackendError(f"{name}: option {key!r} is not one {name}: takes (its options: {', '.join(takes)})")
            if key in settings:
                raise BackendError(f"{name}: option {key!r} is given twice")
            typed = _typed(name, key, value)
            if typed is not None:
                settings[key] = typed
        else:
            openai.append((key, value))
    spec = ServerSpec(name, model, settings, tuple(openai))
    _check_openai(recipe, spec)
    return spec


def _typed(scheme: str, key: str, value: str) -> Any:
    """The option's value, checked; None for a value that means the option left out."""
    option, value = OPTIONS[key], value.strip()
    where = f"{scheme}: {key}"
    if option.kind in ("int", "float"):
        try:
            number: float = int(value) if option.kind == "int" and len(value) < 20 else float(value[:40])
        except ValueError:
            number = math.nan
        if option.kind == "int" and (not value.isdigit() or not math.isfinite(number)):
            raise BackendError(f"{where} must be a whole number, got {value[:40]!r}")
        if not math.isfinite(number):
            raise BackendError(f"{where} must be a number, got {value[:40]!r}")
        if not option.low <= number <= option.high:
            raise BackendError(f"{where} must be in {option.low:g}..{option.high:g}, got {value[:40]}")
        return number
    if option.kind == "flag":
        if value not in ("", "0", "1", "true", "false"):
            raise BackendError(f"{where} is a switch: 1 or 0, got {value[:40]!r}")
        return True if value in ("", "1", "true") else None
    if option.kind == "choice":
        if value not in option.choices:
            raise BackendError(f"{where} must be one of {', '.join(option.choices)}, got {value[:40]!r}")
        return None if value == option.default else value
    if option.kind == "word":
        if not _WORD.match(value):
            raise BackendError(
                f"{where} must be a name of letters, digits and _ . : - (at most 80), got {value[:40]!r}"
            )
        return value
    if option.kind == "path":
        if not value or value.startswith("-") or len(value) > 1000 or re.search(r"[\x00-\x1f\x7f]", value):
            raise BackendError(f"{where} must be a program's name or path, got {value[:40]!r}")
        return value
    try:  # args
        args = shlex.split(value)
    except ValueError as exc:
        raise BackendError(f"{where}: cannot split {value[:60]!r} as a shell would ({exc})") from None
    if len(args) > MAX_EXTRA_ARGS or any(len(a) > 1000 for a in args):
        raise BackendError(f"{where}: at most {MAX_EXTRA_ARGS} arguments of at most 1000 characters")
    owned = next((a for a in args if a.split("=", 1)[0] in _OWNED_FLAGS), None)
    if owned is not None:
        raise BackendError(f"{where}: {owned.split('=', 1)[0]} is vlmdesk's to set (the server listens on {HOST})")
    return shlex.join(args) if args else None


def _check_openai(recipe: Recipe, spec: ServerSpec) -> None:
    """The openai: options, read by the openai: backend itself (one home for what they mean)."""
    from .openai_backend import parse_openai_spec

    try:
        parse_openai_spec(spec.openai_spec(1))
    except BackendError as exc:
        said = str(exc).removeprefix("openai spec: ").removeprefix("openai: ")
        raise BackendError(f"{recipe.name}: {said} (server options: {', '.join((*recipe.options, *COMMON))})") from None


def identity(recipe: Recipe, rest: str) -> str:
    """What of a managed spec names its run (runner.config_key): the model, the IDENTITY server options and the
    openai: options that change answers, in a fixed order — not the port, the log, the parallelism, the memory
    fraction, the startup deadline, the program, the concurrency or the timeouts."""
    spec = parse(recipe, rest)
    kept = sorted((k, _text(v)) for k, v in spec.settings.items() if OPTIONS[k].identity)
    kept += sorted((k, v) for k, v in spec.openai if k not in OPERATIONAL_OPENAI)
    return spec.model + (f"?{urlencode(kept)}" if kept else "")


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def syntax(recipe: Recipe) -> str:
    return f"{recipe.name}:<model>[?{'&'.join(f'{o}=…' for o in recipe.options[:4])}&…]"


# ---- the recipes --------------------------------------------------------------------------------------------------


def _vllm_command(spec: ServerSpec, program: str, port: int) -> list[str]:
    # docs.vllm.ai, "vllm serve" engine arguments; --limit-mm-per-prompt takes JSON since vLLM 0.10.
    images = spec.settings.get("max_images")
    return [
        program,
        "serve",
        spec.model,
        "--host",
        HOST,
        "--port",
        str(port),
        *spec.flag("served_model_name", "--served-model-name"),
        *spec.flag("tp", "--tensor-parallel-size"),
        *spec.flag("dp", "--data-parallel-size"),
        *spec.flag("max_model_len", "--max-model-len"),
        *spec.flag("reasoning_parser", "--reasoning-parser"),
        *spec.flag("gpu_memory_utilization", "--gpu-memory-utilization"),
        *spec.flag("dtype", "--dtype"),
        *spec.flag("quantization", "--quantization"),
        *(["--limit-mm-per-prompt", json.dumps({"image": images})] if images is not None else []),
        *spec.flag("trust_remote_code", "--trust-remote-code"),
        *shlex.split(spec.settings.get("extra_args", "")),
    ]


def _sglang_command(spec: ServerSpec, program: str, port: int) -> list[str]:
    # docs.sglang.io, server arguments (python -m sglang.launch_server --help): --tp-size and --dp-size are what
    # the documented --tp and --dp abbreviate; --context-length and --mem-fraction-static are SGLang's names.
    return [
        program,
        "-m",
        "sglang.launch_server",
        "--model-path",
        spec.model,
        "--host",
        HOST,
        "--port",
        str(port),
        *spec.flag("served_model_name", "--served-model-name"),
        *spec.flag("tp", "--tp-size"),
        *spec.flag("dp", "--dp-size"),
        *spec.flag("max_model_len", "--context-length"),
        *spec.flag("reasoning_parser", "--reasoning-parser"),
        *spec.flag("gpu_memory_utilization", "--mem-fraction-static"),
        *spec.flag("dtype", "--dtype"),
        *spec.flag("quantization", "--quantization"),
        *spec.flag("trust_remote_code", "--trust-remote-code"),
        *shlex.split(spec.settings.get("extra_args", "")),
    ]


def python_version_of(package: str) -> Callable[[str], list[str]]:
    """The argv asking a Python for a package's version (without importing the package)."""
    return lambda program: [program, "-c", f"import importlib.metadata as m; print(m.version({package!r}))"]


_SERVED = ("tp", "dp", "max_model_len", "reasoning_parser", "gpu_memory_utilization", "dtype", "quantization")
VLLM = Recipe(
    name="vllm",
    title="Start vLLM",
    install="pip install vllm",
    command=_vllm_command,
    version=lambda program: [program, "--version"],
    options=(*_SERVED, "max_images", "trust_remote_code"),
    program="vllm",
    examples=(
        "vllm:Qwen/Qwen2.5-VL-7B-Instruct",
        "vllm:Qwen/Qwen3-VL-8B-Instruct?tp=2&dp=2&max_model_len=32768&reasoning_parser=qwen3",
    ),
)
SGLANG = Recipe(
    name="sglang",
    title="Start SGLang",
    install='pip install "sglang[all]"',
    command=_sglang_command,
    version=python_version_of("sglang"),
    options=(*_SERVED, "trust_remote_code"),
    program=None,
    examples=("sglang:Qwen/Qwen2.5-VL-7B-Instruct?tp=2&max_model_len=32768",),
)


def entry(recipe: Recipe) -> BackendEntry:
    """The registry entry of a recipe: the same reading, starting and stopping for every kind of server."""
    # A hub name mostly (a folder is typed): a text field keeps the width a long name needs. The form offers what a
    # benchmark run usually sets; quantization and served_model_name are typed into the spec.
    fields = [Field("", "Model", required=True, placeholder="Qwen/Qwen2.5-VL-7B-Instruct or a folder")]
    for key in (*(o for o in recipe.options if o != "quantization"), "startup_timeout", "extra_args"):
        option = OPTIONS[key]
        kind = {"int": "int", "flag": "flag", "choice": "choice"}.get(option.kind, "text")
        choices = ("", *option.choices) if option.kind == "choice" else ()
        fields.append(Field(key, option.label, kind, option.help, choices))  # type: ignore[arg-type]
    fields.append(Field("concurrency", "Concurrency", "int", "requests kept in flight (default 64)", placeholder="64"))
    return BackendEntry(
        name=recipe.name,
        title=recipe.title,
        syntax=syntax(recipe),
        help=f"vlmdesk starts `{recipe.name}` on {HOST} for the run and stops it after ({recipe.install}); "
        "tp, dp, max_model_len, reasoning_parser… are the server's, other options the openai: backend's",
        build=lambda rest, context: start(recipe, rest, context),
        validate=lambda rest: _validate(recipe, rest),
        identity=lambda rest: identity(recipe, rest),
        fields=tuple(fields),
        examples=recipe.examples,
    )


def _validate(recipe: Recipe, rest: str) -> None:
    parse(recipe, rest)


BACKENDS = (entry(VLLM), entry(SGLANG))


# ---- the process ----------------------------------------------------------------------------------------------------


class ServerLog:
    """The server's output, copied by a thread from its pipe into a log file (O_EXCL: never through a link, never
    over a file already there), rotated at MAX_LOG_BYTES (one older copy, ``.1``), its tail kept in memory."""

    def __init__(self, folder: Path, scheme: str):
        self.path = _new_log(folder, scheme)
        self.fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o644)
        self.written = 0
        self.tail: deque[bytes] = deque()
        self.tail_bytes = 0
        self.lock = threading.Lock()
        self.thread: threading.Thread | None = None

    def write(self, data: bytes) -> None:
        with self.lock:
            if self.fd < 0:
                return
            if self.written + len(data) > MAX_LOG_BYTES:
                self._rotate()
            try:
                os.write(self.fd, data)
                self.written += len(data)
            except OSError:
                pass  # a full disk: the server goes on, its tail is still kept in memory
            self.tail.append(data)
            self.tail_bytes += len(data)
            while self.tail_bytes > TAIL_BYTES and len(self.tail) > 1:
                self.tail_bytes -= len(self.tail.popleft())

    def _rotate(self) -> None:
        os.close(self.fd)
        older = self.path.with_name(self.path.name + ".1")
        try:
            os.replace(self.path, older)  # replaces a name, never follows one
        except OSError:
            pass
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
        try:
            self.fd = os.open(self.path, flags, 0o644)
        except OSError:
            self.fd = -1
        self.written = 0

    def follow(self, pipe: Any) -> None:
        """Copy `pipe` into the log from a daemon thread until the server closes it."""

        def copy() -> None:
            fd = pipe.fileno()
            while chunk := _read(fd):
                self.write(chunk)
            pipe.close()

        self.thread = threading.Thread(target=copy, name=f"server-log-{self.path.name}", daemon=True)
        self.thread.start()

    def last_lines(self, n: int = 3, limit: int = 300) -> str:
        """The server's last `n` non-blank lines, on one line (for a message)."""
        if self.thread is not None:
            self.thread.join(timeout=2)  # what the server wrote before exiting
        with self.lock:
            text = b"".join(self.tail).decode("utf-8", "replace")
        lines = [" ".join(line.split()) for line in text.splitlines() if line.strip()][-n:]
        said = " | ".join(lines)
        return said if len(said) <= limit else "…" + said[-limit:]

    def close(self) -> None:
        if self.thread is not None:
            self.thread.join(timeout=2)
        with self.lock:
            if self.fd >= 0:
                os.close(self.fd)
                self.fd = -1


def _read(fd: int) -> bytes:
    try:
        return os.read(fd, 65536)
    except OSError:
        return b""


_LOG_NAME = re.compile(r"^[a-z0-9_]+-\d{8}T\d{6}Z-\d+(-\d+)?\.log(\.1)?$")


def _new_log(folder: Path, scheme: str) -> Path:
    """A new log's path in `folder` (made if missing, refused when a link or not a folder); the oldest logs beyond
    MAX_LOGS are removed."""
    try:
        folder.mkdir(exist_ok=True)
        mode = os.lstat(folder).st_mode
    except OSError as exc:
        raise BackendError(f"{folder}: cannot make the folder of server logs ({exc.strerror or exc})") from None
    if not stat.S_ISDIR(mode):
        raise BackendError(f"{folder}: the folder of server logs is a link or not a folder; remove it")
    try:
        logs = sorted(p for p in os.listdir(folder) if _LOG_NAME.match(p))
    except OSError:
        logs = []
    for old in logs[: max(0, len(logs) - 2 * (MAX_LOGS - 1))]:
        try:
            os.unlink(folder / old)
        except OSError:
            pass
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")
    path, n = folder / f"{scheme}-{stamp}-{os.getpid()}.log", 1
    while os.path.lexists(path):
        n += 1
        path = folder / f"{scheme}-{stamp}-{os.getpid()}-{n}.log"
    return path


def free_port() -> int:
    """A port of 127.0.0.1 free now (the server binds it a moment later; one that lost the race exits, saying so)."""
    import socket

    with socket.socket() as s:
        s.bind((HOST, 0))
        port: int = s.getsockname()[1]
        return port


_LIVE: set[ManagedServer] = set()
_LIVE_LOCK = threading.Lock()
_HOOKED = {"atexit": False}
_OUR_SIGTERM: dict[str, Any] = {}


def _stop_all() -> None:
    with _LIVE_LOCK:
        servers = list(_LIVE)
    for server in servers:
        server.stop()


def _guard_exit() -> None:
    """Stop every live server at exit, and make a SIGTERM to this process (while it has the default action, which
    would end Python without atexit) a KeyboardInterrupt, as the cancel signals are inside a run (db.platform_io)."""
    if not _HOOKED["atexit"]:
        atexit.register(_stop_all)
        _HOOKED["atexit"] = True
    if platform_io.interrupt_on_terminate():
        _OUR_SIGTERM["installed"] = True


def _unguard() -> None:
    with _LIVE_LOCK:
        if _LIVE:
            return
    if _OUR_SIGTERM.pop("installed", False):
        platform_io.restore_terminate()


class ManagedServer:
    """One server process: started in a process group of its own, its output in a ServerLog, stopped once."""

    def __init__(self, recipe: Recipe, argv: list[str], log: ServerLog, port: int):
        self.recipe, self.argv, self.log, self.port = recipe, argv, log, port
        self.url = f"http://{HOST}:{port}"
        self._stopped = False
        self._lock = threading.Lock()
        head = f"# {datetime.datetime.now(datetime.UTC).isoformat(timespec='seconds')} vlmdesk: {shlex.join(argv)}\n"
        log.write(head.encode())
        env = {**os.environ, **recipe.env}
        _guard_exit()
        try:
            self.proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,  # its own process group: stopped whole, and Ctrl-C reaches vlmdesk only
                preexec_fn=platform_io.dies_with_this_thread(),
            )
        except OSError as exc:
            log.close()
            _unguard()
            raise BackendError(
                f"{recipe.name}: cannot start {argv[0]!r} ({exc.strerror or exc}); install it: {recipe.install}"
            ) from None
        with _LIVE_LOCK:
            _LIVE.add(self)
        assert self.proc.stdout is not None
        log.follow(self.proc.stdout)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def exited(self) -> int | None:
        """The exit status when the server has ended (negative: killed by that signal), else None."""
        return self.proc.poll()

    def gone(self, what: str) -> str:
        """One line: the server ended (how), and where its log is."""
        status = self.proc.returncode
        how = f"was killed by signal {-status}" if status is not None and status < 0 else f"exited with status {status}"
        return f"{self.recipe.name} server (pid {self.pid}) {how} {what}; its log: {self.log.path}"

    def wait_ready(self, deadline_s: float) -> None:
        """Until GET <ready_path> answers 200; BackendError (the server stopped) when the server exits first or the
        deadline passes. A KeyboardInterrupt (Ctrl-C, SIGTERM) stops the server and goes on."""
        import urllib.error
        import urllib.request

        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never through a proxy to ourselves
        url = self.url + self.recipe.ready_path
        end = time.monotonic() + deadline_s
        try:
            while True:
                if self.exited() is not None:
                    raise BackendError(f"{self.gone('before it answered')}: {self.log.last_lines()}")
                try:
                    with opener.open(url, timeout=2) as response:
                        response.read(65536)
                        if response.status == 200:
                            return
                except (OSError, urllib.error.URLError, ValueError):
                    pass
                if time.monotonic() > end:
                    raise BackendError(
                        f"{self.recipe.name} server did not answer GET {self.recipe.ready_path} within "
                        f"{deadline_s:g} s (startup_timeout=…); its log: {self.log.path}"
                    )
                time.sleep(0.5)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """SIGTERM to the server's process group, SIGKILL to what is left after STOP_GRACE_S; idempotent."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
        try:
            platform_io.signal_group(self.pid)
            try:
                self.proc.wait(timeout=STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                pass
            end = time.monotonic() + (STOP_GRACE_S if self.proc.returncode is not None else 0)
            while platform_io.group_alive(self.pid) and time.monotonic() < end:  # its workers, after the leader
                time.sleep(0.1)
            if platform_io.group_alive(self.pid) or self.proc.returncode is None:
                platform_io.signal_group(self.pid, kill=True)
                self.proc.wait()
        finally:
            self.log.close()
            with _LIVE_LOCK:
                _LIVE.discard(self)
            _unguard()


def _program(recipe: Recipe, spec: ServerSpec) -> str:
    """The server's program, found: BackendError naming what to install when it is not."""
    given = spec.settings.get("bin")
    wanted = given or recipe.program
    if wanted is None:
        return sys.executable
    found = shutil.which(wanted)
    if found is None:
        where = f"{wanted!r} is not a program" if given else f"the {wanted!r} command is not on PATH"
        raise BackendError(f"{recipe.name}: {where}; install it ({recipe.install}) or give its path: bin=PATH")
    return found


def server_version(recipe: Recipe, program: str) -> str:
    """The first line the recipe's version command prints; BackendError naming what to install when it fails."""
    argv = recipe.version(program)
    try:
        done = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=VERSION_TIMEOUT_S,
            env={**os.environ, **recipe.env},
        )
    except subprocess.TimeoutExpired:
        raise BackendError(
            f"{recipe.name}: `{shlex.join(argv)[:200]}` did not answer in {VERSION_TIMEOUT_S:g} s"
        ) from None
    except OSError as exc:
        raise BackendError(f"{recipe.name}: cannot run {program!r} ({exc.strerror or exc}); {recipe.install}") from None
    said = done.stdout[:4096].decode("utf-8", "replace").strip().splitlines()
    if done.returncode != 0 or not said:
        why = " ".join(done.stderr[-2000:].decode("utf-8", "replace").split())[-200:]
        raise BackendError(
            f"{recipe.name}: {program} cannot tell its version, so it is not installed there ({recipe.install}): {why}"
        )
    return said[-1].strip()[:200]


# ---- the backend ----------------------------------------------------------------------------------------------------


def start(recipe: Recipe, rest: str, context: BuildContext) -> ManagedBackend:
    """Start the server a spec names and wait until it serves: the backend that asks it and stops it on close()."""
    from .openai_backend import parse_openai_spec

    spec = parse(recipe, rest)
    program = _program(recipe, spec)
    version = server_version(recipe, program)
    folder = context.log_dir or Path(tempfile.mkdtemp(prefix="vlmdesk-servers-"))
    log = ServerLog(Path(folder), recipe.name)
    port = free_port()
    argv = recipe.command(spec, program, port)
    server = ManagedServer(recipe, argv, log, port)
    server.wait_ready(spec.startup_s)
    try:
        inner = parse_openai_spec(spec.openai_spec(port))
    except BaseException:
        server.stop()
        raise
    return ManagedBackend(recipe, rest, spec, server, inner, version)


class ManagedBackend:
    """The openai: backend of a server vlmdesk started, which it stops on close(); a server that exits while asked
    is ServersDown naming its log."""

    def __init__(
        self, recipe: Recipe, rest: str, spec: ServerSpec, server: ManagedServer, inner: Any, version: str
    ) -> None:
        self.recipe, self.server_spec, self.server, self.inner, self.version = recipe, spec, server, inner, version
        self.spec = f"{recipe.name}:{rest}"

    # What the engine and the door read of a server backend: the openai: backend's.
    @property
    def on_wait(self) -> Any:
        return self.inner.on_wait

    @on_wait.setter
    def on_wait(self, listener: Any) -> None:
        self.inner.on_wait = listener

    def call_size(self, batch_size: int) -> int:
        size: int = self.inner.call_size(batch_size)
        return size

    @property
    def chunk_items(self) -> int | None:
        items: int | None = self.inner.chunk_items
        return items

    def open_stream(self, max_new_tokens: int, *args: Any, **kwargs: Any) -> Stream:
        self._check()
        return _WatchedStream(self.inner.open_stream(max_new_tokens, *args, **kwargs), self)

    def generate(self, queries: Sequence[Query], max_new_tokens: int) -> Sequence[str | Generation]:
        self._check()
        try:
            answers: Sequence[str | Generation] = self.inner.generate(queries, max_new_tokens)
        except BackendError as exc:
            raise self._down(exc) from None
        return answers

    def stream_text(self, query: Query, max_new_tokens: int) -> Iterator[str]:
        self._check()
        try:
            yield from self.inner.stream_text(query, max_new_tokens)
        except BackendError as exc:
            raise self._down(exc) from None

    def describe(self) -> dict[str, Any]:
        return {
            "backend": self.recipe.name,
            "model": self.server_spec.model,
            "server": {
                "version": self.version,
                "pid": self.server.pid,
                "argv": self.server.argv,
                "settings": {k: _text(v) for k, v in self.server_spec.settings.items()},
                "log": str(self.server.log.path),
            },
            "openai": self.inner.describe(),
        }

    def close(self) -> None:
        """Stop the server (idempotent)."""
        self.server.stop()

    def _check(self) -> None:
        if self.server.exited() is not None:
            raise ServersDown(self.server.gone("while the run was asking it"))

    def _down(self, exc: BackendError) -> BackendError:
        """A failure of the inner backend, said with the server's fate and log."""
        if self.server.exited() is not None:
            return ServersDown(self.server.gone("while the run was asking it"))
        message = f"{exc}; {self.recipe.name} server log: {self.server.log.path}"
        return ServersDown(message) if isinstance(exc, ServersDown) else BackendError(message)


class _WatchedStream:
    """The openai: stream, watched: once the server has exited, the next answers() raises ServersDown naming the
    log at once, rather than after the retries' back-off."""

    def __init__(self, stream: Stream, backend: ManagedBackend):
        self.stream, self.backend, self.capacity = stream, backend, stream.capacity

    def send(self, key: int, query: Query) -> None:
        self.stream.send(key, query)

    def load(self) -> int:
        return self.stream.load()

    def answers(self, timeout: float) -> list[Answer]:
        self.backend._check()
        try:
            return self.stream.answers(timeout)
        except BackendError as exc:
            raise self.backend._down(exc) from None

    def close(self) -> None:
        self.stream.close()

    def __getattr__(self, name: str) -> Any:  # e.g. send_body, for generate()'s path
        if name == "stream":
            raise AttributeError(name)
        return getattr(self.stream, name)
