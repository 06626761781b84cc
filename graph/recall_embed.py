"""A standard-library reader of model2vec static models, for embedding one prompt on the hook path.

model2vec is a static model: a sentence vector is the mean of the token rows of an embedding table
(optionally weighted), then L2-normalised. This module reproduces `StaticModel.encode` for the
common case (a BERT WordPiece `tokenizer.json`, a `model.safetensors` holding `embeddings` in F16 or
F32, optional `weights` and `mapping`) without numpy, tokenizers or safetensors:

- the vocabulary is copied once into a small SQLite cache (`<cache_dir>/m2v-<key>.db`), so a hook
  process looks up only the prompt's words and sub-words instead of parsing a 0.5 MB JSON file;
- the rows of the prompt's tokens are read from `model.safetensors` by offset (seek + read).

Invariants: standard library only; deterministic; any model this reader does not understand
raises `Unsupported` (callers then go without vectors, never with wrong ones); the cache is keyed by
the model files' size and mtime, rebuilt atomically when they change, and holds no user text.
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
import struct
import unicodedata
import zlib

from .db import connect_readonly

_DTYPES = {"F16": ("e", 2), "F32": ("f", 4), "F64": ("d", 8), "I32": ("i", 4), "I64": ("q", 8)}
#: Prompt characters embedded at most (a prompt is a question, not a document).
MAX_CHARS = 4000


class Unsupported(Exception):
    """The model folder is not a model2vec layout this reader reproduces exactly."""


def _is_punct(ch: str) -> bool:
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


def _is_cjk(cp: int) -> bool:
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF
            or 0x2A700 <= cp <= 0x2B73F or 0x2B740 <= cp <= 0x2B81F or 0x2B820 <= cp <= 0x2CEAF
            or 0xF900 <= cp <= 0xFAFF or 0x2F800 <= cp <= 0x2FA1F)


def bert_pre_tokens(text: str, *, lowercase: bool = True, strip_accents: bool = True,
                    chinese_chars: bool = True, clean_text: bool = True) -> list[str]:
    """HF `BertNormalizer` followed by `BertPreTokenizer`: words and single punctuation marks."""
    out_chars: list[str] = []
    for ch in text:
        cp = ord(ch)
        if clean_text:
            if cp == 0 or cp == 0xFFFD:
                continue
            cat = unicodedata.category(ch)
            if ch in "\t\n\r" or cat == "Zs" or ch == " ":
                out_chars.append(" ")
                continue
            if cat in ("Cc", "Cf"):
                continue
        if chinese_chars and _is_cjk(cp):
            out_chars.extend((" ", ch, " "))
        else:
            out_chars.append(ch)
    norm = "".join(out_chars)
    if strip_accents:
        norm = "".join(c for c in unicodedata.normalize("NFD", norm) if unicodedata.category(c) != "Mn")
    if lowercase:
        norm = norm.lower()
    words: list[str] = []
    for chunk in norm.split():
        start = 0
        for i, ch in enumerate(chunk):
            if _is_punct(ch):
                if i > start:
                    words.append(chunk[start:i])
                words.append(ch)
                start = i + 1
        if start < len(chunk):
            words.append(chunk[start:])
    return words


class LiteEmbedder:
    """Embeds short texts like `model2vec.StaticModel(path).encode(text)` (normalised), stdlib only.

    `dim` is the vector size; `id` is what `graph.embed.Model2VecEmbedder(source).id` would be
    ("model2vec:<folder name or hub name>:<dim>"). `embed(text)` returns a list of floats of unit
    length, or None when the text has no known token.
    """

    def __init__(self, model_dir: str | os.PathLike, cache_dir: str | os.PathLike, *,
                 source: str | None = None) -> None:
        self.model_dir = os.fspath(model_dir)   # strings, not pathlib: ~2.7 ms of the hook's import
        tok_path = os.path.join(self.model_dir, "tokenizer.json")
        st_path = os.path.join(self.model_dir, "model.safetensors")
        if not os.path.isfile(tok_path) or not os.path.isfile(st_path):
            raise Unsupported(f"no tokenizer.json / model.safetensors in {self.model_dir}")
        self._st_path = st_path
        header = self._read_header(st_path)
        emb = header.get("embeddings")
        if not emb or emb.get("dtype") not in ("F16", "F32", "F64") or len(emb.get("shape", ())) != 2:
            raise Unsupported("safetensors has no F16/F32 2-d 'embeddings' tensor")
        self._emb = emb
        self.dim = int(emb["shape"][1])
        self.id = f"model2vec:{source or os.path.basename(os.path.normpath(self.model_dir))}:{self.dim}"
        self._weights = header.get("weights")
        self._mapping = header.get("mapping")
        for extra in (self._weights, self._mapping):
            if extra is not None and extra.get("dtype") not in _DTYPES:
                raise Unsupported("unsupported weights/mapping dtype")
        stat_key = []
        for p in (tok_path, st_path, os.path.join(self.model_dir, "config.json")):
            name = os.path.basename(p)
            try:
                st = os.stat(p)
                stat_key.append(f"{name}:{st.st_size}:{int(st.st_mtime)}")
            except OSError:
                stat_key.append(f"{name}:-")
        key = "%08x" % zlib.crc32((os.path.realpath(self.model_dir) + "|" + "|".join(stat_key)).encode("utf-8", "surrogatepass"))
        self._cache_path = os.path.join(os.fspath(cache_dir), f"m2v-{key}.db")
        if not os.path.exists(self._cache_path):
            self._build_cache(tok_path)
        self._db = connect_readonly(self._cache_path, 0.5, check_same_thread=True)
        meta = dict(self._db.execute("SELECT key, value FROM meta"))
        self._cfg = json.loads(meta["config"])

    # -- safetensors -------------------------------------------------------------------------
    @staticmethod
    def _read_header(path: str) -> dict:
        with open(path, "rb") as fh:
            (n,) = struct.unpack("<Q", fh.read(8))
            if n > 10_000_000:
                raise Unsupported("implausible safetensors header")
            header = json.loads(fh.read(n))
        header["__data_start__"] = 8 + n
        out = {k: v for k, v in header.items() if isinstance(v, dict) and "data_offsets" in v}
        for v in out.values():
            v["__base__"] = 8 + n + int(v["data_offsets"][0])
        return out

    def _read_rows(self, fh, tensor: dict, ids: list[int], width: int) -> list[tuple]:
        fmt, size = _DTYPES[tensor["dtype"]]
        unpack = struct.Struct(f"<{width}{fmt}").unpack
        base = tensor["__base__"]
        rows = []
        for i in ids:
            fh.seek(base + i * width * size)
            rows.append(unpack(fh.read(width * size)))
        return rows

    # -- tokenizer cache -----------------------------------------------------------------------
    def _build_cache(self, tok_path: str) -> None:
        with open(tok_path, encoding="utf-8") as fh:
            spec = json.loads(fh.read())
        model = spec.get("model") or {}
        normalizer = spec.get("normalizer") or {}
        pre = spec.get("pre_tokenizer") or {}
        if model.get("type") != "WordPiece" or normalizer.get("type") != "BertNormalizer" \
                or pre.get("type") != "BertPreTokenizer":
            raise Unsupported("only BERT WordPiece tokenizers are reproduced")
        vocab: dict[str, int] = model["vocab"]
        lowercase = bool(normalizer.get("lowercase", True))
        strip = normalizer.get("strip_accents")
        lengths = sorted(len(t) for t in vocab)
        try:
            with open(os.path.join(self.model_dir, "config.json"), encoding="utf-8") as fh:
                config = json.loads(fh.read())
        except (OSError, ValueError):
            config = {}
        cfg = {
            "lowercase": lowercase,
            "strip_accents": lowercase if strip is None else bool(strip),
            "chinese_chars": bool(normalizer.get("handle_chinese_chars", True)),
            "clean_text": bool(normalizer.get("clean_text", True)),
            "prefix": model.get("continuing_subword_prefix", "##"),
            "max_word_chars": int(model.get("max_input_chars_per_word", 100)),
            "unk": model.get("unk_token", "[UNK]"),
            "median_token_length": lengths[len(lengths) // 2] if lengths else 1,
            "max_length": config.get("max_length", 512),
            "normalize": config.get("normalize", True),
        }
        os.makedirs(os.path.dirname(self._cache_path), exist_ok=True)
        tmp = f"{self._cache_path}.{os.getpid()}.tmp"
        try:
            db = sqlite3.connect(tmp)
            db.execute("CREATE TABLE vocab (token TEXT PRIMARY KEY, id INTEGER NOT NULL) WITHOUT ROWID")
            db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
            db.executemany("INSERT INTO vocab VALUES (?, ?)", vocab.items())
            db.execute("INSERT INTO meta VALUES ('config', ?)", (json.dumps(cfg),))
            db.commit()
            db.close()
            os.replace(tmp, self._cache_path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)

    def _lookup(self, tokens: set[str]) -> dict[str, int]:
        if not tokens:
            return {}
        return dict(self._db.execute(
            "SELECT token, id FROM vocab WHERE token IN (SELECT value FROM json_each(?))",
            (json.dumps(sorted(tokens)),),
        ))

    def token_ids(self, text: str) -> list[int]:
        """WordPiece ids of `text` without special tokens, unknown tokens dropped (model2vec's)."""
        cfg = self._cfg
        max_len = cfg.get("max_length")
        if max_len:
            text = text[: int(max_len) * int(cfg["median_token_length"])]
        text = text[:MAX_CHARS]
        words = bert_pre_tokens(text, lowercase=cfg["lowercase"], strip_accents=cfg["strip_accents"],
                                chinese_chars=cfg["chinese_chars"], clean_text=cfg["clean_text"])
        prefix = cfg["prefix"]
        known = self._lookup(set(words))
        # Words not in the vocabulary are split greedily (longest prefix first): fetch every
        # candidate piece of those words in one query, then run the greedy match locally.
        pieces: set[str] = set()
        for w in set(words):
            if w in known or len(w) > cfg["max_word_chars"]:
                continue
            for s in range(len(w)):
                for e in range(s + 1, len(w) + 1):
                    pieces.add(w[s:e] if s == 0 else prefix + w[s:e])
        known.update(self._lookup(pieces))
        ids: list[int] = []
        for w in words:
            if w in known:
                ids.append(known[w])
                continue
            if len(w) > cfg["max_word_chars"]:
                continue   # [UNK], which model2vec drops
            start, sub = 0, []
            while start < len(w):
                end, found = len(w), None
                while start < end:
                    piece = w[start:end] if start == 0 else prefix + w[start:end]
                    if piece in known:
                        found = known[piece]
                        break
                    end -= 1
                if found is None:
                    sub = []   # the whole word is [UNK]
                    break
                sub.append(found)
                start = end
            ids.extend(sub)
        unk = known.get(cfg["unk"])
        if unk is not None:
            ids = [i for i in ids if i != unk]
        if max_len:
            ids = ids[: int(max_len)]
        return ids

    def embed(self, text: str) -> list[float] | None:
        ids = self.token_ids(text)
        if not ids:
            return None
        dim = self.dim
        with open(self._st_path, "rb") as fh:
            rows_ids = ids
            if self._mapping is not None:
                rows_ids = [int(r[0]) for r in self._read_rows(fh, self._mapping, ids, 1)]
            rows = self._read_rows(fh, self._emb, rows_ids, dim)
            weights = None
            if self._weights is not None:
                weights = [float(r[0]) for r in self._read_rows(fh, self._weights, ids, 1)]
        acc = [0.0] * dim
        for k, row in enumerate(rows):
            w = weights[k] if weights is not None else 1.0
            for j in range(dim):
                acc[j] += row[j] * w
        n = len(rows)
        acc = [a / n for a in acc]
        if self._cfg.get("normalize", True):
            norm = math.sqrt(sum(a * a for a in acc)) or 1.0
            acc = [a / norm for a in acc]
        return acc

    def close(self) -> None:
        self._db.close()


class LexicalLite:
    """`graph.embed.LexicalEmbedder` without numpy, for the hook path: the same hashed features of
    stemmed words, bigrams and identifier pieces, returned sparse ({bucket: value}, unit length).
    tests/test_recall.py checks it agrees with `LexicalEmbedder.encode`."""

    def __init__(self, dim: int = 1024) -> None:
        self.dim = dim
        self.id = f"lexical:hash-v1:{dim}"

    def features(self, text: str) -> dict[str, float]:
        from .text import lexical_features

        return lexical_features(text)

    def embed(self, text: str) -> dict[int, float] | None:
        try:    # the builtin module: `hashlib` would also load OpenSSL's `_hashlib` (~0.5 ms a hook)
            from _blake2 import blake2b
        except ImportError:  # pragma: no cover - a Python built without it
            from hashlib import blake2b

        vec: dict[int, float] = {}
        for feat, weight in self.features(text).items():
            value = int.from_bytes(blake2b(feat.encode("utf-8"), digest_size=8).digest(), "little")
            idx, sign = value % self.dim, (1.0 if (value >> 63) & 1 else -1.0)
            vec[idx] = vec.get(idx, 0.0) + sign * weight
        norm = math.sqrt(sum(v * v for v in vec.values()))
        if not norm:
            return None
        return {i: v / norm for i, v in vec.items() if v}


def prompt_embedder(setting: str | None, cache_dir: str | os.PathLike) -> "LiteEmbedder | LexicalLite | None":
    """The stdlib embedder matching `graph.embed.load_embedder(setting)`'s vectors, or None when
    this reader cannot reproduce them (recall then ranks without vectors). Never raises."""
    try:
        if not setting:
            return LexicalLite()
        from . import model_cache

        source = str(setting)
        if model_cache.is_hub_name(source):
            # Only a model consolidation already downloaded: the hook never fetches anything.
            folder = model_cache.cached_model(source)
            if folder is not None:
                return LiteEmbedder(folder, cache_dir, source=source)
            return LexicalLite()   # load_embedder falls back to lexical when the model is missing
        path = os.path.expanduser(source)
        if os.path.isdir(path):
            return LiteEmbedder(path, cache_dir)
        return LexicalLite()   # load_embedder falls back to lexical when the model cannot load
    except Exception:  # noqa: BLE001  (unsupported or unreadable model: no vectors)
        return None
