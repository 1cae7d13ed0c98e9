"""Downloading a catalog benchmark: resumable, bounded, verified, cached (`vlmdesk fetch NAME`).

A file is written as ``NAME.part`` beside its final name, with ``NAME.part.json`` holding the URL, the checksum
it must have and the server's validator (ETag, else Last-Modified). An interrupted download (a dropped connection,
a stall, the deadline, Ctrl+C, kill -9) keeps both; the next fetch asks for the rest (``Range: bytes=N-`` with
``If-Range``: the validator), so a file that changed on the server is sent whole (200) and the download starts over
instead of splicing two versions; a part without a validator cannot be resumed and starts over. The whole file is
checked against its checksum before it takes its final name (rename, after fsync); a mismatch removes it. The final
name is the cache: a second fetch checks the file that is there and moves no bytes.

Bounds: a size cap (the catalog's size + 10 %, else MAX_DOWNLOAD_BYTES; a body past it is dropped), an idle
timeout (no byte for ``idle_s``: stalled), a wall-clock deadline for the whole fetch that holds while a read waits
(class Deadline), at most MAX_REDIRECTS redirects, the free room on the disk when the size is told. Every failure is
one line naming the URL, what happened and where the file may be put by hand.

The cache may be shared (a team folder), so its files are hostile: the part, its meta, the lock and the final name
are checked before the first byte is asked and opened without following a link; a link, folder or FIFO there is
refused (CacheRefused, exit 2), never written through.

The mirror (``--mirror URL``, ``$VLMDESK_MIRROR``) replaces scheme://host of every URL, the path kept; hub files
also honour ``$HF_ENDPOINT`` (as huggingface_hub does) when no mirror is set. A mirror's user and password are never
shown; ``$HF_TOKEN`` goes to https://huggingface.co only (docs/adr/0047).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import socket
import stat
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from db.errors import EnvironmentFault, InvalidInput, UserError
from db.platform_io import exclusive_lock, open_no_wait
from evaluator.formats.importers.catalog import CatalogEntry

CACHE_ENV = "VLMDESK_CACHE_DIR"
MIRROR_ENV = "VLMDESK_MIRROR"
HF_ENDPOINT_ENV = "HF_ENDPOINT"
HF_TOKEN_ENV = "HF_TOKEN"
HUB = "https://huggingface.co"
MAX_DOWNLOAD_BYTES = 32 * 2**30  # the importer's own cap on a benchmark file
SIZE_MARGIN = 1.10
MAX_REDIRECTS = 5
MAX_TREE_BYTES = 4 * 2**20
DEFAULT_IDLE_S = 60.0
DEFAULT_TIMEOUT_S = 6 * 3600.0
CHUNK = 1 << 16
MANIFEST = ".vlmdesk-fetch.json"  # in a folder of hub shards: the shards and the SHA-256 the hub gave for each
MAX_META_BYTES = 64 * 2**10  # a part's NAME.part.json, a folder's manifest: a few hundred bytes when vlmdesk wrote them
_PROGRESS_EVERY_S = 0.25


class FetchFailed(EnvironmentFault):
    """A download that did not give the file: refused, not found, stalled, too big, the disk full, or not the file
    the catalog names. One line: the URL (its user and password hidden), what happened, where to put the file by
    hand."""

    def __init__(self, message: str):
        super().__init__(hide_userinfo(message))


class CacheRefused(UserError):
    """A path of the cache (or of --to) that fetch will not write: a link, a folder, a FIFO… where its file goes, or
    a folder it cannot write in. `PATH: why`; said before anything is downloaded."""


@dataclass(frozen=True)
class RemoteFile:
    """One file to download: where from, the checksum it must have ("md5:HEX" / "sha256:HEX"), its size if known,
    and where it goes."""

    url: str
    checksum: str
    size: int | None
    dest: Path


@dataclass
class FetchResult:
    name: str
    path: Path  # the file (vlmevalkit) or the folder of shards (lmms-lab)
    files: int
    bytes_moved: int
    cached: bool
    resumed: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "event": "fetch_done",
            "name": self.name,
            "path": str(self.path),
            "files": self.files,
            "bytes_moved": self.bytes_moved,
            "cached": self.cached,
            "resumed": self.resumed,
        }


Emit = Callable[[dict[str, Any]], None]


# ------------------------------------------------------------------------------------------------ places


def cache_dir() -> Path:
    """`$VLMDESK_CACHE_DIR`, else the user's cache directory (e.g. ~/.cache/vlmdesk/benchmarks)."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env).expanduser()
    from platformdirs import user_cache_path

    return user_cache_path("vlmdesk", appauthor=False) / "benchmarks"


def target_path(entry: CatalogEntry, to: Path | None = None) -> Path:
    """Where the entry's file (or folder of shards) goes: DIR/file name (`--to DIR`), else the cache."""
    return (to if to is not None else cache_dir()) / entry.file_name


def mirror_setting(mirror: str | None = None) -> str | None:
    """The mirror in force: --mirror, else $VLMDESK_MIRROR; checked to be scheme://host[:port][/prefix]."""
    value = mirror if mirror is not None else os.environ.get(MIRROR_ENV) or None
    if value is None:
        return None
    if not re.match(r"^https?://[^/\s?#]+(/[^\s?#]*)?$", value):
        source = "--mirror" if mirror is not None else f"${MIRROR_ENV}"
        raise InvalidInput(
            f"{source}: {hide_userinfo(value)[:80]!r} is not an http(s) URL (e.g. https://hf-mirror.com)"
        )
    return value.rstrip("/")


def hide_userinfo(text: str) -> str:
    """`text` with the user and password of every URL in it (`http://user:PASS@host`, a mirror's) shown as `***`:
    httpx2 sends them as Basic auth; no event, error line or log repeats them."""
    return re.sub(r"(https?://)[^/?#\s]*@", r"\1***@", text)


def mirrored(url: str, mirror: str | None) -> str:
    """`url` with its scheme://host replaced by the mirror's (the mirror's path, if any, put before the path)."""
    if not mirror:
        return url
    match = re.match(r"^https?://[^/]+(?P<path>/.*)?$", url)
    return mirror + (match.group("path") or "/" if match else url)


def hub_endpoint(mirror: str | None) -> str:
    if mirror:
        return mirror
    env = os.environ.get(HF_ENDPOINT_ENV)
    return env.rstrip("/") if env else HUB


def hub_token_headers(endpoint: str) -> dict[str, str]:
    """`$HF_TOKEN` as a bearer token for `endpoint` when it is the hub itself (https://huggingface.co), else nothing:
    a mirror or an $HF_ENDPOINT is another party (hf-mirror.com is commonly set through HF_ENDPOINT), and a hub token
    stands for the user's whole account. httpx2 drops it on a redirect to another host (the hub's file CDN)."""
    token = os.environ.get(HF_TOKEN_ENV, "").strip()
    return {"Authorization": f"Bearer {token}"} if token and endpoint == HUB else {}


# ------------------------------------------------------------------------------------------------ the cache's files


def _cache_stat(path: Path) -> os.stat_result | None:
    """What is at a cache path, the link itself when it is one (lstat); None when nothing is there."""
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise CacheRefused(f"{path}: {exc.strerror or exc}") from None


def _refuse_odd(path: Path) -> None:
    """Refuse (before anything is downloaded) a cache path that is there but not a regular file: a link (a shared
    cache lets anyone plant one to a workspace), a folder, a FIFO, a device. A missing path is fine."""
    st = _cache_stat(path)
    if st is not None and not stat.S_ISREG(st.st_mode):
        what = (
            "a symbolic link"
            if stat.S_ISLNK(st.st_mode)
            else "a directory"
            if stat.S_ISDIR(st.st_mode)
            else "not a regular file"
        )
        raise CacheRefused(f"{path}: is {what}; fetch writes no file there (remove it, or fetch --to another folder)")


def _open_cache_file(path: Path, flags: int) -> int:
    """A descriptor on a file of the cache, never through a link (O_NOFOLLOW) nor on anything but a regular file,
    whatever was swapped in after _refuse_odd looked."""
    no_follow = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags | no_follow, 0o666)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENXIO, errno.EISDIR):  # a link; a FIFO without a reader; a folder
            _refuse_odd(path)
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        _refuse_odd(path)
        raise CacheRefused(f"{path}: not a regular file; fetch writes no file there")
    return fd


def _read_small(path: Path) -> bytes | None:
    """A part's meta or a folder's manifest (at most MAX_META_BYTES, a regular file not reached through a link), or
    None when it is missing, odd or too big: then there is nothing to resume or no complete fetch."""
    try:
        fd = _open_cache_file(path, os.O_RDONLY)
    except (OSError, CacheRefused):
        return None
    with os.fdopen(fd, "rb") as f:
        data = f.read(MAX_META_BYTES + 1)
    return data if len(data) <= MAX_META_BYTES else None


def _write_small(path: Path, data: bytes) -> None:
    fd = _open_cache_file(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


_FULL = {errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)}


def _cannot_write(path: Path, exc: OSError, hand: str) -> Exception:
    """The one line for a cache file that could not be written: a full disk (or quota) said as one, as the
    workspace's writers say it (db.workspace.database_error); else what the system said."""
    if exc.errno in _FULL:
        return FetchFailed(
            f"{path}: the disk is full ({exc.strerror}); free some space and run the fetch again, or {hand}"
        )
    return FetchFailed(f"{path}: cannot write ({exc.strerror or exc}); {hand}")


def _room_for(folder: Path, need: int, hand: str) -> None:
    """Refuse a download the disk in `folder` has no room for, before a byte of it is written."""
    import shutil

    with contextlib.suppress(OSError):
        free = shutil.disk_usage(folder).free
        if need > free:
            raise FetchFailed(f"{folder}: the disk is full for this file ({need} bytes to download, {free} free); "
                              f"free some space and run the fetch again, or {hand}")  # fmt: skip


# ------------------------------------------------------------------------------------------------ the deadline


class Deadline:
    """A fetch's wall-clock deadline, from the first byte asked to the last received. A per-read timeout cannot keep
    it (a server dripping its headers sends each byte in time), so a timer shuts every socket the fetch opened when
    it passes (httpcore's `trace` extension names each new connection): the read waiting on it fails at once, and
    `passed` says why."""

    def __init__(self, timeout_s: float):
        self.at = time.monotonic() + timeout_s
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._cut = False
        self._timer = threading.Timer(timeout_s, self._cut_all)
        self._timer.daemon = True
        self.extensions = {"trace": self._trace}

    def __enter__(self) -> Deadline:
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()

    def passed(self) -> bool:
        return time.monotonic() >= self.at

    def timeout(self, idle_s: float) -> Any:
        """The per-read timeout: the idle bound, or less when the deadline is nearer."""
        import httpx2

        return httpx2.Timeout(min(idle_s, max(0.05, self.at - time.monotonic())))

    def check(self, url: str, hand: str) -> None:
        if self.passed():
            raise FetchFailed(f"{url}: past the deadline (--timeout); run the fetch again to resume, or {hand}")

    def _trace(self, event: str, info: dict[str, Any]) -> None:
        if event.endswith("connect_tcp.complete"):
            sock = info["return_value"].get_extra_info("socket")
            with self._lock:
                self._sockets.append(sock)
                cut = self._cut
            if cut:
                _shut(sock)

    def _cut_all(self) -> None:
        with self._lock:
            self._cut = True
            sockets = list(self._sockets)
        for sock in sockets:
            _shut(sock)


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


# ------------------------------------------------------------------------------------------------ fetching


def fetch(
    entry: CatalogEntry,
    *,
    to: Path | None = None,
    mirror: str | None = None,
    idle_s: float = DEFAULT_IDLE_S,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    emit: Emit | None = None,
) -> FetchResult:
    """The entry's file (or shards) at its target path: the cached copy when it is there and checks, else
    downloaded (resumed where a part was left). Raises FetchFailed with the one line to show, CacheRefused (before
    downloading) for a target path fetch will not write."""
    mirror = mirror_setting(mirror)
    emit = _hiding(emit or (lambda event: None))
    dest = target_path(entry, to)
    with Deadline(timeout_s) as deadline:
        if entry.layout == "vlmevalkit":
            assert entry.url is not None and entry.checksum is not None
            url = mirrored(entry.url, mirror)
            remote = RemoteFile(url, entry.checksum, entry.size, dest)
            hand = f"put the file there by hand: {dest} (then: vlmdesk import {entry.name})"
            if _matches(dest, remote.checksum, _cap(remote)):
                emit({"event": "fetch_start", "name": entry.name, "url": url, "path": str(dest), "cached": True})
                return FetchResult(entry.name, dest, 1, 0, True, False)
            with _client(idle_s) as client:
                moved, resumed = _download(client, remote, deadline, idle_s, entry.name, emit, hand)
            return FetchResult(entry.name, dest, 1, moved, False, resumed)
        return _fetch_hub(entry, dest, mirror, deadline, idle_s, emit)


def _hiding(emit: Emit) -> Emit:
    """Events as they may be shown: a URL's user and password hidden."""

    def hidden(event: dict[str, Any]) -> None:
        if isinstance(event.get("url"), str):
            event = {**event, "url": hide_userinfo(event["url"])}
        emit(event)

    return hidden


def _fetch_hub(
    entry: CatalogEntry, folder: Path, mirror: str | None, deadline: Deadline, idle_s: float, emit: Emit
) -> FetchResult:
    hand = f"put the split's .parquet shards in {folder} by hand and import that folder (vlmdesk import {folder})"
    st = _cache_stat(folder)
    if st is not None and not stat.S_ISDIR(st.st_mode):  # a link too: stale shards are removed from this folder
        raise CacheRefused(f"{folder}: is not a folder of shards (a link or a file); fetch writes nothing there "
                           "(remove it, or fetch --to another folder)")  # fmt: skip
    cached = _cached_shards(folder)
    if cached is not None:
        emit({"event": "fetch_start", "name": entry.name, "url": None, "path": str(folder), "cached": True})
        return FetchResult(entry.name, folder, cached, 0, True, False)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CacheRefused(f"{folder}: cannot create the folder ({exc.strerror or exc})") from None
    _refuse_odd(folder / (MANIFEST + ".tmp"))
    endpoint = hub_endpoint(mirror)
    with _client(idle_s, hub_token_headers(endpoint)) as client:
        files = _hub_files(client, entry, endpoint, folder, deadline, idle_s, hand)
        current = {f.dest.name for f in files}
        for stale in folder.glob("*.parquet"):  # shards of an older revision: the manifest says which are current
            if stale.name not in current and not stale.is_dir():
                stale.unlink()
        moved, resumed = 0, False
        for remote in files:
            if _matches(remote.dest, remote.checksum, _cap(remote)):
                continue
            got, was_resumed = _download(client, remote, deadline, idle_s, entry.name, emit, hand)
            moved, resumed = moved + got, resumed or was_resumed
    manifest = {"shards": {f.dest.name: f.checksum for f in files}, "repo": entry.repo, "revision": entry.revision}
    tmp = folder / (MANIFEST + ".tmp")
    try:
        _write_small(tmp, json.dumps(manifest).encode())
        os.replace(tmp, folder / MANIFEST)
    except OSError as exc:
        raise _cannot_write(tmp, exc, hand) from None
    return FetchResult(entry.name, folder, len(files), moved, False, resumed)


def _cached_shards(folder: Path) -> int | None:
    """How many shards a complete earlier fetch left in `folder` (each checked against its SHA-256), or None."""
    raw = _read_small(folder / MANIFEST)
    if raw is None:
        return None
    try:
        manifest = json.loads(raw)
        shards = manifest["shards"]
        if not isinstance(shards, dict) or not shards:
            return None
        for name, checksum in shards.items():
            if not _matches(folder / name, checksum, MAX_DOWNLOAD_BYTES):
                return None
        return len(shards)
    except (ValueError, KeyError, TypeError):
        return None


def _hub_files(
    client: Any, entry: CatalogEntry, endpoint: str, folder: Path, deadline: Deadline, idle_s: float, hand: str
) -> list[RemoteFile]:
    """The split's shards, from the hub's tree API: each LFS file's SHA-256 (`lfs.oid`) and size."""
    import httpx2

    assert entry.repo and entry.config and entry.split
    url = f"{endpoint}/api/datasets/{entry.repo}/tree/{entry.revision}/{entry.config}"
    try:
        with client.stream("GET", url, timeout=deadline.timeout(idle_s), extensions=deadline.extensions) as response:
            if response.status_code != 200:
                raise FetchFailed(f"{url}: {_status(response)}; {hand}")
            body = bytearray()
            for chunk in response.iter_bytes():
                body += chunk
                if len(body) > MAX_TREE_BYTES:
                    raise FetchFailed(f"{url}: the file list is over {MAX_TREE_BYTES} bytes; {hand}")
                deadline.check(url, hand)
    except httpx2.HTTPError as exc:
        deadline.check(url, hand)
        raise FetchFailed(f"{url}: {_transport_error(exc, idle_s)}; {hand}") from None
    try:
        listing = json.loads(bytes(body))
    except ValueError:
        raise FetchFailed(f"{url}: the answer is not JSON; {hand}") from None
    prefix = f"{entry.config}/{entry.split}-"
    found: list[tuple[str, str, int | None]] = []
    for item in listing if isinstance(listing, list) else []:
        if not isinstance(item, dict) or item.get("type") != "file":
            continue
        path, lfs = item.get("path"), item.get("lfs")
        if not isinstance(path, str) or not path.startswith(prefix) or not path.endswith(".parquet"):
            continue
        oid = lfs.get("oid") if isinstance(lfs, dict) else None
        size = lfs.get("size") if isinstance(lfs, dict) else item.get("size")
        if not isinstance(oid, str) or not re.fullmatch(r"[0-9a-f]{64}", oid):
            raise FetchFailed(f"{url}: {path} has no SHA-256 in the file list (not an LFS file); {hand}")
        found.append((path, oid, size if isinstance(size, int) and size > 0 else None))
    if not found:
        raise FetchFailed(f"{url}: no {prefix}*.parquet file in {entry.repo}@{entry.revision}; {hand}")
    found.sort()
    n = len(found)
    return [
        RemoteFile(
            f"{endpoint}/datasets/{entry.repo}/resolve/{entry.revision}/{path}",
            f"sha256:{oid}",
            size,
            folder / f"{entry.split}-{i:05d}-of-{n:05d}.parquet",  # the importer's shard names, whatever the hub's
        )
        for i, (path, oid, size) in enumerate(found)
    ]


@contextlib.contextmanager
def _client(idle_s: float, auth: dict[str, str] | None = None) -> Iterator[Any]:
    """A client that follows at most MAX_REDIRECTS redirects, with `auth` headers (hub_token_headers) if any."""
    import httpx2

    with httpx2.Client(
        follow_redirects=True,
        max_redirects=MAX_REDIRECTS,
        timeout=httpx2.Timeout(idle_s),
        headers={"Accept-Encoding": "identity", "User-Agent": "vlmdesk-fetch", **(auth or {})},
        trust_env=True,  # HTTPS_PROXY / NO_PROXY, as users behind a proxy set them
    ) as client:
        yield client


def _cap(remote: RemoteFile) -> int:
    """The most bytes the file may have: the catalog's size + 10 % where it is known, else MAX_DOWNLOAD_BYTES."""
    return int(remote.size * SIZE_MARGIN) + 1 if remote.size else MAX_DOWNLOAD_BYTES


def _download(
    client: Any, remote: RemoteFile, deadline: Deadline, idle_s: float, name: str, emit: Emit, hand: str
) -> tuple[int, bool]:
    """Download `remote` to its dest through dest.part; returns (bytes moved, whether it resumed). Every path it
    writes is checked before the first byte is asked."""
    dest = remote.dest
    part = dest.with_name(dest.name + ".part")
    meta_path = dest.with_name(dest.name + ".part.json")
    lock = dest.with_name(f".{dest.name}.lock")
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CacheRefused(f"{dest.parent}: cannot create the folder ({exc.strerror or exc})") from None
    for path in (dest, part, meta_path, lock):
        _refuse_odd(path)
    with contextlib.ExitStack() as stack:
        try:
            held = stack.enter_context(exclusive_lock(lock))
        except OSError as exc:
            if exc.errno in _FULL:
                raise _cannot_write(lock, exc, hand) from None
            raise CacheRefused(f"{dest.parent}: cannot write there ({exc.strerror or exc})") from None
        if not held:
            raise FetchFailed(f"{remote.url}: another vlmdesk fetch is downloading {dest} now; wait for it to finish")
        return _download_locked(client, remote, deadline, idle_s, name, emit, hand, part, meta_path)


def _download_locked(
    client: Any,
    remote: RemoteFile,
    deadline: Deadline,
    idle_s: float,
    name: str,
    emit: Emit,
    hand: str,
    part: Path,
    meta_path: Path,
) -> tuple[int, bool]:
    import httpx2

    url, dest, cap = remote.url, remote.dest, _cap(remote)
    have, validator = _resumable(part, meta_path, remote, cap)
    headers = {"Range": f"bytes={have}-", "If-Range": validator} if have and validator else {}
    digest = _hasher(remote.checksum)
    moved = 0
    resumed = False
    try:
        with client.stream(
            "GET", url, headers=headers, timeout=deadline.timeout(idle_s), extensions=deadline.extensions
        ) as response:
            status = response.status_code
            if status == 416 and have:  # the part is not a prefix of what is there now
                _remove(part, meta_path)
                return _download_locked(client, remote, deadline, idle_s, name, emit, hand, part, meta_path)
            if status not in (200, 206):
                raise FetchFailed(f"{url}: {_status(response)}; {hand}")
            total = _total(response, have if status == 206 else 0)
            if status == 206:
                start = _range_start(response)
                if start != have:
                    raise FetchFailed(f"{url}: asked for bytes from {have}, the server sent them from {start}; {hand}")
                resumed = True
            else:
                have = 0  # 200: the whole file (a changed file, or a server without ranges): start over
            if total is not None and total > cap:
                _remove(part, meta_path)
                raise FetchFailed(f"{url}: {total} bytes; at most {cap} expected; {hand}")
            if total is not None:
                _room_for(part.parent, total - have, hand)
            new_validator = response.headers.get("etag") or response.headers.get("last-modified")
            if new_validator and new_validator.startswith("W/"):  # a weak ETag cannot be an If-Range
                new_validator = response.headers.get("last-modified")
            try:
                meta = {"url": url, "checksum": remote.checksum, "validator": new_validator}
                _write_small(meta_path, json.dumps(meta).encode())
                fd = _open_cache_file(part, os.O_RDWR | os.O_CREAT)
            except OSError as exc:
                raise _cannot_write(meta_path, exc, hand) from None
            emit(
                {
                    "event": "fetch_start",
                    "name": name,
                    "url": url,
                    "path": str(dest),
                    "cached": False,
                    "bytes_total": total,
                    "resume_from": have,
                }
            )
            started, last_emit = time.monotonic(), 0.0
            try:
                with os.fdopen(fd, "r+b") as f:
                    if resumed:
                        _hash_into(f, digest, have)
                    f.seek(have)
                    f.truncate()
                    done = have
                    for chunk in response.iter_raw():  # as it arrives (a chunk size would hold bytes back)
                        f.write(chunk)
                        digest.update(chunk)
                        done += len(chunk)
                        moved += len(chunk)
                        if done > cap:  # an endless body: the part is of no use
                            _remove(part, meta_path)
                            raise FetchFailed(f"{url}: over {cap} bytes, more than expected; the download was "
                                              f"removed; {hand}")  # fmt: skip
                        now = time.monotonic()
                        if now - last_emit >= _PROGRESS_EVERY_S:
                            last_emit = now
                            rate = moved / max(now - started, 1e-6)
                            emit(_progress(name, done, total, rate, moved))
                        deadline.check(url, hand)
                    f.flush()
                    os.fsync(f.fileno())
            except OSError as exc:  # the part's disk (a full one above all); what is there is not worth keeping
                _remove(part, meta_path)
                raise _cannot_write(part, exc, hand) from None
            emit(_progress(name, done, total, moved / max(time.monotonic() - started, 1e-6), moved))
            if total is not None and done != total:
                raise FetchFailed(f"{url}: the connection closed at byte {done} of {total}; run the fetch again to "
                                  f"resume, or {hand}")  # fmt: skip
    except httpx2.HTTPError as exc:
        what = "past the deadline (--timeout)" if deadline.passed() else _transport_error(exc, idle_s)
        with contextlib.suppress(OSError):
            if os.lstat(part).st_size:
                raise FetchFailed(f"{url}: {what}; run the fetch again to resume, or {hand}") from None
        raise FetchFailed(f"{url}: {what}; {hand}") from None
    algorithm, expected = remote.checksum.split(":", 1)
    got = digest.hexdigest()
    if got != expected:
        _remove(part, meta_path)
        raise FetchFailed(
            f"{url}: checksum mismatch: expected {algorithm} {expected}, got {got}; the download was removed and "
            f"nothing imported (a changed file on the server, or a mirror serving another one); {hand}"
        )
    try:
        _refuse_odd(dest)  # nothing was put there while it downloaded
        os.replace(part, dest)
    except OSError as exc:
        raise _cannot_write(dest, exc, hand) from None
    with contextlib.suppress(OSError):
        meta_path.unlink()
    return moved, resumed


def _progress(name: str, done: int, total: int | None, rate: float, moved: int) -> dict[str, Any]:
    return {
        "event": "fetch_progress",
        "name": name,
        "bytes_done": done,
        "bytes_total": total,
        "bytes_moved": moved,
        "bytes_per_s": round(rate, 1),
    }


def _resumable(part: Path, meta_path: Path, remote: RemoteFile, cap: int) -> tuple[int, str | None]:
    """(bytes already there, the validator to send) for a part left by an earlier fetch of this file; (0, None)
    — and the part removed — when it cannot be resumed (another URL or checksum, no validator, too big)."""
    try:
        size = os.lstat(part).st_size  # a regular file: _download refused anything else
    except OSError:
        return 0, None
    raw = _read_small(meta_path)
    try:
        meta = json.loads(raw) if raw is not None else None
        ok = (
            isinstance(meta, dict)
            and meta.get("url") == remote.url
            and meta.get("checksum") == remote.checksum
            and isinstance(meta.get("validator"), str)
            and 0 < size <= cap
        )
    except ValueError:
        ok = False
    if not ok:
        _remove(part, meta_path)
        return 0, None
    return size, str(meta["validator"])  # type: ignore[index]


def _remove(*paths: Path) -> None:
    for p in paths:
        with contextlib.suppress(FileNotFoundError):
            p.unlink()


def _hasher(checksum: str) -> Any:
    algorithm = checksum.split(":", 1)[0]
    return hashlib.md5(usedforsecurity=False) if algorithm == "md5" else hashlib.sha256()


def _matches(path: Path, checksum: str, cap: int) -> bool:
    """Whether `path` is a regular file of at most `cap` bytes with that checksum. A link is followed (a file put
    there by hand may be one) but only to a regular file, opened without waiting: a FIFO or a device is no file."""
    try:
        fd = open_no_wait(path)
    except OSError:
        return False
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_size > cap:
        os.close(fd)
        return False
    with os.fdopen(fd, "rb") as f:
        digest = _hasher(checksum)
        _hash_into(f, digest)
    return bool(digest.hexdigest() == checksum.split(":", 1)[1])


def _hash_into(f: BinaryIO, digest: Any, limit: int | None = None) -> None:
    """Hash `f` from where it is to its end, or its next `limit` bytes."""
    left = limit
    while left is None or left > 0:
        chunk = f.read(1 << 20 if left is None else min(1 << 20, left))
        if not chunk:
            return
        digest.update(chunk)
        if left is not None:
            left -= len(chunk)


def _total(response: Any, offset: int) -> int | None:
    """The whole file's size: Content-Range's total (206), else offset + Content-Length."""
    content_range = response.headers.get("content-range", "")
    match = re.match(r"^bytes \d+-\d+/(\d+)$", content_range.strip())
    if match:
        return int(match.group(1))
    length = response.headers.get("content-length")
    return offset + int(length) if length and length.isdigit() else None


def _range_start(response: Any) -> int | None:
    match = re.match(r"^bytes (\d+)-", response.headers.get("content-range", "").strip())
    return int(match.group(1)) if match else None


def _status(response: Any) -> str:
    reason = {401: "not authorised", 403: "refused", 404: "not found", 410: "gone", 429: "too many requests"}
    code = response.status_code
    gated = (
        " (a gated hub repository? set $HF_TOKEN: it is sent to https://huggingface.co only)"
        if code in (401, 403) and "/datasets/" in str(response.url)
        else ""
    )
    return f"HTTP {code} {reason.get(code) or response.reason_phrase or ''}".rstrip() + gated


def _transport_error(exc: Exception, idle_s: float) -> str:
    import httpx2

    if isinstance(exc, httpx2.TimeoutException):
        return f"stalled (no data for {idle_s:g} s)"
    if isinstance(exc, httpx2.ConnectError):
        return f"cannot connect (offline, or refused: {str(exc)[:120] or type(exc).__name__})"
    if isinstance(exc, httpx2.TooManyRedirects):
        return f"more than {MAX_REDIRECTS} redirects"
    return f"{type(exc).__name__}: {str(exc)[:160]}"
