"""Sentence embeddings for dedupe, entity candidates and recall.

Two implementations behind one interface:
- `Model2VecEmbedder(folder)`: a model2vec `StaticModel` (numpy only, no torch) loaded from a local
  folder (tests and benchmarks use ../shared/models/minilm-l6-m2v-256; a hub name such as the
  default "minishlab/potion-base-8M" is downloaded once into the cache by `graph.model_fetch`).
- `LexicalEmbedder()`: no model at all. A hashing-trick bag of stemmed words, word bigrams and
  identifier pieces, so cosine similarity still means "shares the same words".

Invariants: `encode` returns float32 rows of unit length (or all zeros for an empty text), shape
(n, dim); the same text always gets the same vector from the same embedder; `Embedder.id` changes
whenever vectors would not be comparable (other model, other dimension), and stored vectors are
re-computed when the stored id differs (see `graph.store.ensure_vectors`). numpy is imported here
and nowhere on the hook path.
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from .text import lexical_features

log = logging.getLogger(__name__)


class Embedder:
    """Interface: `id`, `kind` ("model2vec" | "lexical"), `dim`, `encode(texts)`, `describe()`."""

    kind: str = "abstract"
    dim: int = 0
    #: Why this embedder is in use when it is a fallback (None when it is what was asked for).
    fallback_reason: str | None = None

    @property
    def id(self) -> str:  # pragma: no cover - overridden
        raise NotImplementedError

    def encode(self, texts: Sequence[str]) -> np.ndarray:  # pragma: no cover - overridden
        raise NotImplementedError

    def encode_one(self, text: str) -> np.ndarray:
        return self.encode([text])[0]

    def describe(self) -> dict[str, Any]:
        """For `doctor` and the run record: which embedder, and why when it is the fallback."""
        return {"kind": self.kind, "id": self.id, "dim": self.dim, "fallback_reason": self.fallback_reason}


def _unit_rows(mat: np.ndarray) -> np.ndarray:
    mat = np.asarray(mat, dtype=np.float32)
    norms = np.linalg.norm(mat, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (mat / norms).astype(np.float32, copy=False)


class Model2VecEmbedder(Embedder):
    """model2vec StaticModel; `source` is a local folder or a hub name (online users only)."""

    kind = "model2vec"

    def __init__(self, source: str | Path, *, name: str | None = None) -> None:
        """`name`: the hub name a downloaded folder stands for (it is then the id's name, as the
        hook's `graph.recall_embed.LiteEmbedder(folder, source=name)` says it)."""
        from model2vec import StaticModel  # heavy-ish: imported only when a model is used

        self.source = str(source)
        self._model = StaticModel.from_pretrained(self.source)
        probe = self._model.encode(["probe"])
        self.dim = int(probe.shape[1])
        self._name = name or (Path(self.source).name if Path(self.source).exists() else self.source)

    @property
    def id(self) -> str:
        return f"model2vec:{self._name}:{self.dim}"

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return _unit_rows(self._model.encode(list(texts)))


class LexicalEmbedder(Embedder):
    """Hashing trick over stemmed content words (weight 1), word bigrams (0.5) and the pieces of
    identifiers ("prod-k8s" -> "prod", "k8s"; weight 0.5), signed buckets, unit length.

    No model needed: similarity is word overlap, so it finds restatements that share words and
    misses paraphrases that share none. Deterministic across processes (blake2b, not `hash`)."""

    kind = "lexical"

    def __init__(self, dim: int = 1024, fallback_reason: str | None = None) -> None:
        self.dim = dim
        self.fallback_reason = fallback_reason
        self._cache: dict[str, tuple[int, float]] = {}

    @property
    def id(self) -> str:
        return f"lexical:hash-v1:{self.dim}"

    def _bucket(self, feature: str) -> tuple[int, float]:
        hit = self._cache.get(feature)
        if hit is None:
            digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
            value = int.from_bytes(digest, "little")
            hit = (value % self.dim, 1.0 if (value >> 63) & 1 else -1.0)
            if len(self._cache) < 200_000:
                self._cache[feature] = hit
        return hit

    def features(self, text: str) -> dict[str, float]:
        return lexical_features(text)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for feat, weight in self.features(text).items():
                idx, sign = self._bucket(feat)
                out[i, idx] += sign * weight
        return _unit_rows(out)


def _split_identifier(word: str) -> list[str]:
    import re

    return [p for p in re.split(r"[-_./:@+#]+", word) if p]


def load_embedder(setting: str | Path | None, *, fetch: bool = False, progress: Any = None) -> Embedder:
    """The embedder for a `embedding_model` setting: a model2vec folder or hub name, else the
    lexical fallback. Never raises: a model that cannot be loaded gives the lexical embedder with
    `fallback_reason` saying why (report it in `doctor` and the run record).

    A hub name is looked up in the cache only (`graph.model_cache.cached_model`); with `fetch=True`
    (consolidation, and nothing else) a missing one is downloaded first (`graph.model_fetch.fetch`,
    `progress(done, total, file)` or a stderr bar on a terminal). Nothing here ever asks model2vec to
    reach the hub itself."""
    from . import model_cache

    if not setting:
        return LexicalEmbedder(fallback_reason="no embedding_model configured")
    source = str(setting)
    if model_cache.is_hub_name(source):
        folder = model_cache.cached_model(source)
        if folder is None and not fetch:
            return LexicalEmbedder(fallback_reason=f"embedding model {source!r} is not downloaded yet "
                                                   "(the next consolidation fetches it)")
        if folder is None:
            from .model_fetch import ModelUnavailable
            from .model_fetch import fetch as fetch_model

            try:
                folder = fetch_model(source, progress=progress)
            except ModelUnavailable as exc:
                return LexicalEmbedder(fallback_reason=f"embedding model {source!r} could not be fetched ({exc})")
        try:
            return Model2VecEmbedder(folder, name=source)
        except Exception as exc:  # a damaged download: say which folder to delete
            log.warning("embedding model %s could not be loaded (%s); using lexical similarity",
                        source, type(exc).__name__)
            return LexicalEmbedder(fallback_reason=f"embedding model {source!r} in {folder} could not be loaded "
                                                   f"({type(exc).__name__}); delete that folder to fetch it again")
    path = Path(source).expanduser()
    if not path.exists():
        return LexicalEmbedder(fallback_reason=f"embedding model folder not found: {path}")
    try:
        return Model2VecEmbedder(path)
    except Exception as exc:  # any load failure (corrupt files, not a model2vec folder) falls back
        log.warning("embedding model %s could not be loaded (%s); using lexical similarity",
                    source, type(exc).__name__)
        return LexicalEmbedder(fallback_reason=f"embedding model {source!r} could not be loaded: {type(exc).__name__}")


def to_blob(vec: np.ndarray) -> bytes:
    """A vector as stored in `cards.vector`: float32 little-endian bytes."""
    return np.asarray(vec, dtype="<f4").tobytes()


def from_blob(blob: bytes | None, dim: int | None = None) -> np.ndarray | None:
    """Inverse of `to_blob`; None for a missing blob or one of another dimension."""
    if not blob:
        return None
    vec = np.frombuffer(blob, dtype="<f4")
    if dim is not None and vec.shape[0] != dim:
        return None
    return vec
