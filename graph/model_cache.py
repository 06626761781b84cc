"""Where an embedding model from the model hub lives on this machine (read-only lookups, no network).

A hub name ("minishlab/potion-base-8M") is fetched once by consolidation (`graph.model_fetch`) into
`<cache root>/models/<org>--<name>/`; the cache root is `$REVERIE_CACHE_DIR`, else the platform's user
cache dir (the same folder as `platformdirs.user_cache_dir("reverie", appauthor=False)`; a test holds
them equal). A model already in the Hugging Face cache is used as it is.

Invariants: standard library only, and neither `typing` nor `pathlib` (the hook path imports this
module to find a downloaded model); nothing here opens a socket or writes a file. A folder counts as
a model only when every file model2vec needs is there (a download is renamed into place whole).
"""

from __future__ import annotations

import json
import os
import re
import sys

#: The default `embedding_model`: a small static (model2vec) model, ~30 MB, 256 dimensions.
DEFAULT_MODEL = "minishlab/potion-base-8M"
#: Overrides the cache root (tests point it at a tmp dir).
ENV_CACHE = "REVERIE_CACHE_DIR"
#: What model2vec's `StaticModel.from_pretrained(folder)` reads (and all that is downloaded).
MODEL_FILES = ("config.json", "tokenizer.json", "model.safetensors")
#: Written beside a model folder when its last fetch failed: {"at", "reason", "url"} (for doctor).
FAILED_SUFFIX = ".failed.json"

_HUB_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")


def platform_cache_dir() -> str:
    """The platform's user cache dir for reverie (what platformdirs returns, without importing it)."""
    user = os.path.expanduser("~")
    if sys.platform == "darwin":
        return os.path.join(user, "Library", "Caches", "reverie")
    if os.name == "nt":
        base = os.environ.get("LOCALAPPDATA") or os.path.join(user, "AppData", "Local")
        return os.path.join(base, "reverie", "Cache")
    return os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.join(user, ".cache"), "reverie")


def cache_root() -> str:
    """`$REVERIE_CACHE_DIR`, else `platform_cache_dir()`."""
    chosen = os.environ.get(ENV_CACHE)
    return os.path.abspath(os.path.expanduser(chosen)) if chosen else platform_cache_dir()


def is_hub_name(setting: str) -> bool:
    """True for "org/name" that is not a path on disk (a folder setting is used as it is)."""
    if not setting or setting.startswith((".", "~", "/")) or os.path.exists(setting):
        return False
    return bool(_HUB_NAME.match(setting))


def model_dir(name: str) -> str:
    """The folder a hub model is (or would be) downloaded to."""
    return os.path.join(cache_root(), "models", name.replace("/", "--"))


def is_complete(folder: str) -> bool:
    return all(os.path.isfile(os.path.join(folder, f)) for f in MODEL_FILES)


def hf_snapshot(name: str) -> str | None:
    """The folder of a hub model already in the Hugging Face cache (no network), or None."""
    if "/" not in name:
        return None
    base = os.environ.get("HF_HUB_CACHE") or os.path.join(
        os.environ.get("HF_HOME") or os.path.join(os.path.expanduser("~"), ".cache", "huggingface"), "hub")
    root = os.path.join(base, "models--" + name.replace("/", "--"))
    snapshots = os.path.join(root, "snapshots")
    try:
        with open(os.path.join(root, "refs", "main"), encoding="utf-8") as fh:
            snap = os.path.join(snapshots, fh.read().strip())
        if is_complete(snap):
            return snap
    except OSError:
        pass
    try:
        snaps = sorted((os.path.join(snapshots, n) for n in os.listdir(snapshots)
                        if is_complete(os.path.join(snapshots, n))),
                       key=os.path.getmtime, reverse=True)
        return snaps[0] if snaps else None
    except OSError:
        return None


def cached_model(name: str) -> str | None:
    """The local folder of hub model `name`: ours (`model_dir`), else the Hugging Face cache's; None
    when it has not been downloaded."""
    ours = model_dir(name)
    if is_complete(ours):
        return ours
    return hf_snapshot(name)


def last_failure(name: str) -> dict | None:
    """{"at", "reason", "url"} of the last failed fetch of `name`, or None (none, or fetched since)."""
    try:
        with open(model_dir(name) + FAILED_SUFFIX, encoding="utf-8") as fh:
            data = json.loads(fh.read())
        return data if isinstance(data, dict) else None
    except (OSError, ValueError):
        return None
