"""Downloading a catalog benchmark: resumable, bounded, verified, cached (`vlmdesk fetch NAME`).

A file is written as ``NAME.part`` beside its final name, with ``NAME.part.json`` holding the URL, the checksum
it must have and the server's validator (ETag, else Last-Modified). An interrupted download (a dropped connection,
a stall, the deadline, Ctrl+C, kill -9) keeps both; the next fetch asks for the rest (``Range: bytes=N-`` with
``If-Range``: the validator), so a file that changed on the server is sent whole (200) and the download starts over
instead of splicing two versions; a part without a validator cannot be resumed and starts over. The whole file is
checked against its checksum before it takes its final name (rename, after fsync); a mismatch removes it. The final
name is the cache: a second fetch checks the file that is there and moves no bytes.

Bounds: a size cap (the catalog's size + 10 %, else MAX_DOWNLOAD_BYTES), an idle timeout (no byte for
``idle_s``: stalled), a wall-clock deadline for the whole fetch, at most MAX_REDIRECTS redirects. Every failure is
one line naming the URL, what happened and where the file may be put by hand.

The mirror (``--mirror URL``, ``$VLMDESK_MIRROR``) replaces scheme://host of every URL, the path kept; hub files
also honour ``$HF_ENDPOINT`` (as huggingface_hub does) when no mirror is set.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from db.errors import EnvironmentFault, InvalidInput
from db.platform_io import exclusive_lock
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
_PROGRESS_EVERY_S = 0.25


class FetchFailed(EnvironmentFault):
    """A download that did not give the file: refused, not found, stalled, too big, or not the file the catalog
    names. One line: the URL, what happened, where to put the file by hand."""


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
        raise InvalidInput(f"{source}: {value[:80]!r} is not an http(s) URL (e.g. https://hf-mirror.com)")
    return value.rstrip("/")


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
    downloaded (resumed where a part was left). Raises FetchFailed with the one line to show."""
    mirror = mirror_setting(mirror)
    deadline = time.monotonic() + timeout_s
    emit = emit or (lambda event: None)
    dest = target_path(entry, to)
    if entry.layout == "vlmevalkit":
        assert entry.url is not None and entry.checksum is not None
        url = mirrored(entry.url, mirror)
        remote = RemoteFile(url, entry.checksum, entry.size, dest)
        hand = f"put the file there by hand: {dest} (then: vlmdesk import {entry.name})"
        if dest.is_file() and _matches(dest, remote.checksum):
            emit({"event": "fetch_start", "name": entry.name, "url": url, "path": str(dest), "cached": True})
            return FetchResult(entry.name, dest, 1, 0, True, False)
        with _client(idle_s) as client:
            moved, resumed = _download(client, remote, deadline, idle_s, entry.name, emit, hand)
        return FetchResult(entry.name, dest, 1, moved, False, resumed)
    return _fetch_hub(entry, dest, mirror, deadline, idle_s, emit)


def _fetch_hub(
    entry: CatalogEntry, folder: Path, mirror: str | None, deadline: float, idle_s: float, emit: Emit
) -> FetchResult:
    hand = f"put the split's .parquet shards in {folder} by hand and import that folder (vlmdesk import {folder})"
    cached = _cached_shards(folder)
    if cached is not None:
        emit({"event": "fetch_start", "name": entry.name, "url": None, "path": str(folder), "cached": True})
        return FetchResult(entry.name, folder, cached, 0, True, False)
    endpoint = hub_endpoint(mirror)
    with _client(idle_s, hub=True) as client:
        files = _hub_files(client, entry, endpoint, folder, deadline, idle_s, hand)
        folder.mkdir(parents=True, exist_ok=True)
        for stale in folder.glob("*.parquet"):  # shards of an older revision: the manifest says which are current
            if stale.name not in {f.dest.name for f in files}:
                stale.unlink()
        moved, resumed = 0, False
        for remote in files:
            if remote.dest.is_file() and _matches(remote.dest, remote.checksum):
                continue
            got, was_resumed = _download(client, remote, deadline, idle_s, entry.name, emit, hand)
            moved, resumed = moved + got, resumed or was_resumed
    manifest = {"shards": {f.dest.name: f.checksum for f in files}, "repo": entry.repo, "revision": entry.revision}
    tmp = folder / (MANIFEST + ".tmp")
    tmp.write_text(json.dumps(manifest), encoding="utf-8")
    os.replace(tmp, folder / MANIFEST)
    return FetchResult(entry.name, folder, len(files), moved, False, resumed)


def _cached_shards(folder: Path) -> int | None:
    """How many shards a complete earlier fetch left in `folder` (each checked against its SHA-256), or None."""
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
        shards = manifest["shards"]
        if not isinstance(shards, dict) or not shards:
            return None
        for name, checksum in shards.items():
            path = folder / name
            if not path.is_file() or not _matches(path, checksum):
                return None
        return len(shards)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _hub_files(
    client: Any, entry: CatalogEntry, endpoint: str, folder: Path, deadline: float, idle_s: float, hand: str
) -> list[RemoteFile]:
    """The split's shards, from the hub's tree API: each LFS file's SHA-256 (`lfs.oid`) and size."""
    import httpx2

    assert entry.repo and entry.config and entry.split
    url = f"{endpoint}/api/datasets/{entry.repo}/tree/{entry.revision}/{entry.config}"
    try:
        with client.stream("GET", url, timeout=_timeout(idle_s, deadline)) as response:
            if response.status_code != 200:
                raise FetchFailed(f"{url}: {_status(response)}; {hand}")
            body = bytearray()
            for chunk in response.iter_bytes():
                body += chunk
                if len(body) > MAX_TREE_BYTES:
                    raise FetchFailed(f"{url}: the file list is over {MAX_TREE_BYTES} bytes; {hand}")
                _check_deadline(url, deadline, hand)
    except httpx2.HTTPError as exc:
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
def _client(idle_s: float, *, hub: bool = False) -> Iterator[Any]:
    """A client that follows at most MAX_REDIRECTS redirects; for hub files, `$HF_TOKEN` as a bearer token (gated
    repositories), which httpx2 drops on a redirect to another host (the hub's file CDN)."""
    import httpx2

    headers = {"Accept-Encoding": "identity", "User-Agent": "vlmdesk-fetch"}
    token = os.environ.get(HF_TOKEN_ENV, "").strip()
    if hub and token:
        headers["Authorization"] = f"Bearer {token}"
    with httpx2.Client(
        follow_redirects=True,
        max_redirects=MAX_REDIRECTS,
        timeout=httpx2.Timeout(idle_s),
        headers=headers,
        trust_env=True,  # HTTPS_PROXY / NO_PROXY, as users behind a proxy set them
    ) as client:
        yield client


def _timeout(idle_s: float, deadline: float) -> Any:
    import httpx2

    left = max(0.05, deadline - time.monotonic())
    return httpx2.Timeout(min(idle_s, left))


def _download(
    client: Any, remote: RemoteFile, deadline: float, idle_s: float, name: str, emit: Emit, hand: str
) -> tuple[int, bool]:
    """Download `remote` to its dest through dest.part; returns (bytes moved, whether it resumed)."""
    url, dest = remote.url, remote.dest
    part = dest.with_name(dest.name + ".part")
    meta_path = dest.with_name(dest.name + ".part.json")
    cap = int(remote.size * SIZE_MARGIN) + 1 if remote.size else MAX_DOWNLOAD_BYTES
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise FetchFailed(f"{dest.parent}: cannot create the folder ({exc.strerror or exc})") from None
    with _only_fetch_of(dest, url):
        return _download_locked(client, remote, deadline, idle_s, name, emit, hand, part, meta_path, cap)


@contextlib.contextmanager
def _only_fetch_of(dest: Path, url: str) -> Iterator[None]:
    """Held while one process downloads `dest` (an exclusive lock on a hidden `.NAME.lock` beside it, left there): a
    second fetch of the same file at the same moment is told so instead of writing into the same part."""
    with exclusive_lock(dest.with_name(f".{dest.name}.lock")) as held:
        if not held:
            raise FetchFailed(f"{url}: another vlmdesk fetch is downloading {dest} now; wait for it to finish")
        yield


def _download_locked(
    client: Any,
    remote: RemoteFile,
    deadline: float,
    idle_s: float,
    name: str,
    emit: Emit,
    hand: str,
    part: Path,
    meta_path: Path,
    cap: int,
) -> tuple[int, bool]:
    import httpx2

    url, dest = remote.url, remote.dest
    have, validator = _resumable(part, meta_path, remote, cap)
    headers = {"Range": f"bytes={have}-", "If-Range": validator} if have and validator else {}
    digest = _hasher(remote.checksum)
    moved = 0
    resumed = False
    try:
        with client.stream("GET", url, headers=headers, timeout=_timeout(idle_s, deadline)) as response:
            status = response.status_code
            if status == 416 and have:  # the part is not a prefix of what is there now
                _remove(part, meta_path)
                return _download_locked(client, remote, deadline, idle_s, name, emit, hand, part, meta_path, cap)
            if status not in (200, 206):
                raise FetchFailed(f"{url}: {_status(response)}; {hand}")
            total = _total(response, have if status == 206 else 0)
            if status == 206:
                start = _range_start(response)
                if start != have:
                    raise FetchFailed(f"{url}: asked for bytes from {have}, the server sent them from {start}; {hand}")
                resumed = True
                with open(part, "rb") as f:
                    for chunk in iter(lambda: f.read(1 << 20), b""):
                        digest.update(chunk)
            else:
                have = 0  # 200: the whole file (a changed file, or a server without ranges): start over
            if total is not None and total > cap:
                raise FetchFailed(f"{url}: {total} bytes; at most {cap} expected; {hand}")
            new_validator = response.headers.get("etag") or response.headers.get("last-modified")
            if new_validator and new_validator.startswith("W/"):  # a weak ETag cannot be an If-Range
                new_validator = response.headers.get("last-modified")
            meta_path.write_text(
                json.dumps({"url": url, "checksum": remote.checksum, "validator": new_validator}), encoding="utf-8"
            )
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
            with open(part, "r+b" if status == 206 else "wb") as f:
                f.seek(have)
                f.truncate()
                done = have
                for chunk in response.iter_raw():  # as it arrives (a chunk size would hold bytes back)
                    f.write(chunk)
                    digest.update(chunk)
                    done += len(chunk)
                    moved += len(chunk)
                    if done > cap:
                        raise FetchFailed(f"{url}: over {cap} bytes, more than expected; {hand}")
                    now = time.monotonic()
                    if now - last_emit >= _PROGRESS_EVERY_S:
                        last_emit = now
                        rate = moved / max(now - started, 1e-6)
                        emit(_progress(name, done, total, rate, moved))
                    _check_deadline(url, deadline, hand)
                f.flush()
                os.fsync(f.fileno())
            emit(_progress(name, done, total, moved / max(time.monotonic() - started, 1e-6), moved))
            if total is not None and done != total:
                raise FetchFailed(f"{url}: the connection closed at byte {done} of {total}; run the fetch again to "
                                  f"resume, or {hand}")  # fmt: skip
    except httpx2.HTTPError as exc:
        raise FetchFailed(
            f"{url}: {_transport_error(exc, idle_s)}; run the fetch again to resume, or {hand}"
            if part.exists() and part.stat().st_size
            else f"{url}: {_transport_error(exc, idle_s)}; {hand}"
        ) from None
    algorithm, expected = remote.checksum.split(":", 1)
    got = digest.hexdigest()
    if got != expected:
        _remove(part, meta_path)
        raise FetchFailed(
            f"{url}: checksum mismatch: expected {algorithm} {expected}, got {got}; the download was removed and "
            f"nothing imported (a changed file on the server, or a mirror serving another one); {hand}"
        )
    os.replace(part, dest)
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
        size = part.stat().st_size
    except OSError:
        return 0, None
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        ok = (
            isinstance(meta, dict)
            and meta.get("url") == remote.url
            and meta.get("checksum") == remote.checksum
            and isinstance(meta.get("validator"), str)
            and 0 < size <= cap
        )
    except (OSError, ValueError):
        ok = False
    if not ok:
        _remove(part, meta_path)
        return 0, None
    return size, str(meta["validator"])


def _remove(*paths: Path) -> None:
    for p in paths:
        with contextlib.suppress(FileNotFoundError):
            p.unlink()


def _hasher(checksum: str) -> Any:
    algorithm = checksum.split(":", 1)[0]
    return hashlib.md5(usedforsecurity=False) if algorithm == "md5" else hashlib.sha256()


def _matches(path: Path, checksum: str) -> bool:
    digest = _hasher(checksum)
    with open(path, "rb") as f:
        _hash_into(f, digest)
    return bool(digest.hexdigest() == checksum.split(":", 1)[1])


def _hash_into(f: BinaryIO, digest: Any) -> None:
    for chunk in iter(lambda: f.read(1 << 20), b""):
        digest.update(chunk)


def checksum_of(path: Path, algorithm: str = "md5") -> str:
    """`algorithm:HEX` of a file (for a catalog entry of one's own)."""
    digest = _hasher(f"{algorithm}:")
    with open(path, "rb") as f:
        _hash_into(f, digest)
    return f"{algorithm}:{digest.hexdigest()}"


def _check_deadline(url: str, deadline: float, hand: str) -> None:
    if time.monotonic() > deadline:
        raise FetchFailed(f"{url}: past the deadline (--timeout); run the fetch again to resume, or {hand}")


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
        " (a gated hub repository? set $HF_TOKEN)" if code in (401, 403) and "/datasets/" in str(response.url) else ""
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
