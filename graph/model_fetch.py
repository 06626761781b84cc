"""Download a hub embedding model once into the cache (`graph.model_cache.model_dir`).

Only consolidation calls this (through `graph.embed.load_embedder(..., fetch=True)`); the hooks,
recall, search and doctor never do. The files model2vec needs (`model_cache.MODEL_FILES`) are read
from `$HF_ENDPOINT` (default https://huggingface.co) `/<name>/resolve/<revision>/<file>` with a short
socket timeout, so an unreachable hub costs one failed DNS lookup or at most `TIMEOUT_S` per attempt,
never a hang.

Invariants: a model folder appears whole or not at all (files go to a temporary folder beside it,
each checked against its Content-Length, then the folder is renamed into place); a failure raises
`ModelUnavailable` (its reason names the cause, never a credential), is written to
`<model dir>.failed.json` for doctor and is remembered for the rest of the process (one attempt per
process, whatever the number of agents); `HF_HUB_OFFLINE=1` refuses without trying. Progress goes to
`progress(done_bytes, total_bytes, file)` when given, else to a bar on stderr when stderr is a
terminal, else nowhere.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import sys
import time
from typing import Any, Callable

from . import model_cache

log = logging.getLogger(__name__)

#: Seconds a connection attempt or a single read may take before the fetch gives up.
TIMEOUT_S = 5.0
REVISION = "main"
CHUNK = 1 << 16

Progress = Callable[[int, int, str], None]


class ModelUnavailable(Exception):
    """The model could not be fetched; str(exc) says why."""


#: Reasons of fetches that failed in this process (name -> reason): not retried until it restarts.
_FAILED: dict[str, str] = {}


def _urlopen(url: str, timeout: float) -> Any:
    """The transport (tests replace it with a fake): a response with `.headers` and `.read(n)`."""
    import urllib.request

    from importlib.metadata import PackageNotFoundError, version

    try:
        agent = f"reverie/{version('reverie')}"
    except PackageNotFoundError:
        agent = "reverie"
    return urllib.request.urlopen(urllib.request.Request(url, headers={"User-Agent": agent}), timeout=timeout)


def file_url(name: str, filename: str, revision: str = REVISION) -> str:
    endpoint = (os.environ.get("HF_ENDPOINT") or "https://huggingface.co").rstrip("/")
    return f"{endpoint}/{name}/resolve/{revision}/{filename}"


class _StderrBar:
    """A one-line byte counter on stderr (only used when stderr is a terminal)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.last = 0.0

    def __call__(self, done: int, total: int, filename: str) -> None:
        now = time.monotonic()
        if now - self.last < 0.1 and done < total:
            return
        self.last = now
        width = 30
        frac = done / total if total else 0.0
        bar = "#" * int(frac * width)
        sys.stderr.write(f"\rdownloading {self.name} {filename}: [{bar:<{width}}] "
                         f"{done / 1e6:5.1f}/{total / 1e6:.1f} MB")
        if total and done >= total:
            sys.stderr.write("\n")
        sys.stderr.flush()


def _default_progress(name: str) -> Progress | None:
    try:
        return _StderrBar(name) if sys.stderr is not None and sys.stderr.isatty() else None
    except (AttributeError, ValueError):
        return None


def _download(url: str, dest: str, filename: str, timeout: float, progress: Progress | None) -> int:
    with _urlopen(url, timeout) as resp:
        length = resp.headers.get("Content-Length")
        total = int(length) if length and str(length).isdigit() else 0
        done = 0
        with open(dest, "wb") as out:
            while True:
                chunk = resp.read(CHUNK)
                if not chunk:
                    break
                out.write(chunk)
                done += len(chunk)
                if progress is not None:
                    progress(done, total or done, filename)
    if total and done != total:
        raise ModelUnavailable(f"{filename}: got {done} of {total} bytes")
    if progress is not None and not total:
        progress(done, done, filename)
    return done


def _record_failure(name: str, reason: str, url: str) -> None:
    path = model_cache.model_dir(name) + model_cache.FAILED_SUFFIX
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            json.dump({"at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "reason": reason, "url": url}, fh)
    except OSError:
        pass


def _reason(exc: BaseException) -> str:
    inner = getattr(exc, "reason", None)   # urllib.error.URLError wraps the socket error
    detail = str(inner if inner is not None else exc) or type(exc).__name__
    return f"{type(exc).__name__}: {detail}"[:300]


def fetch(name: str, *, progress: Progress | None = None, timeout: float = TIMEOUT_S) -> str:
    """The local folder of hub model `name`, downloading it first when it is not cached. Raises
    `ModelUnavailable` (see the module invariants)."""
    cached = model_cache.cached_model(name)
    if cached is not None:
        return cached
    if name in _FAILED:
        raise ModelUnavailable(_FAILED[name])
    url = file_url(name, model_cache.MODEL_FILES[0])
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on"):
        reason = "HF_HUB_OFFLINE is set"
        _FAILED[name] = reason
        raise ModelUnavailable(reason)
    final = model_cache.model_dir(name)
    parent = os.path.dirname(final)
    tmp = os.path.join(parent, f".{os.path.basename(final)}.{os.getpid()}.tmp")
    started = time.monotonic()
    try:
        os.makedirs(parent, exist_ok=True)
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(tmp)
        bar = progress if progress is not None else _default_progress(name)
        size = 0
        for filename in model_cache.MODEL_FILES:
            url = file_url(name, filename)
            size += _download(url, os.path.join(tmp, filename), filename, timeout, bar)
        try:
            os.replace(tmp, final)
        except OSError:
            if not model_cache.is_complete(final):   # another process did not finish it either
                raise
    except Exception as exc:  # noqa: BLE001  (network, disk, HTTP errors: all mean "not available")
        reason = exc.args[0] if isinstance(exc, ModelUnavailable) else _reason(exc)
        _FAILED[name] = reason
        _record_failure(name, reason, url)
        log.info("embedding model %s could not be fetched after %.2f s (%s)", name,
                    time.monotonic() - started, reason)
        raise ModelUnavailable(reason) from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    try:
        os.unlink(final + model_cache.FAILED_SUFFIX)
    except OSError:
        pass
    log.info("embedding model %s fetched into %s (%d bytes, %.1f s)", name, final, size, time.monotonic() - started)
    return final
