"""graph.embed: the lexical fallback on its own, the model2vec embedder, load_embedder, stored vectors."""

import numpy as np
import pytest

from reverie.consolidate.store import open_db
from reverie.graph.embed import LexicalEmbedder, Model2VecEmbedder, from_blob, load_embedder, to_blob
from reverie.graph.store import ensure_vectors

from locations import SHARED_MODEL


def cos(e, a, b):
    v = e.encode([a, b])
    return float(v[0] @ v[1])


def test_lexical_embedder_alone():
    e = LexicalEmbedder()
    v = e.encode(["Deploys go through the release workflow.", "", "deploys go through the release workflow"])
    assert (v.dtype, v.shape) == (np.float32, (3, 1024))
    assert np.allclose(np.linalg.norm(v, axis=1), [1.0, 0.0, 1.0], atol=1e-6)
    assert np.allclose(v[0], v[2])                        # case and punctuation do not matter
    assert np.array_equal(LexicalEmbedder().encode(["same text"]), e.encode(["same text"]))  # deterministic
    related = cos(e, "auth-service runs on prod-k8s", "the auth service is running on prod-k8s now")
    unrelated = cos(e, "auth-service runs on prod-k8s", "emails are sent through SendGrid")
    assert related > 0.5 > 0.1 > unrelated
    assert e.describe() == {"kind": "lexical", "id": "lexical:hash-v1:1024", "dim": 1024, "fallback_reason": None}


def test_load_embedder_falls_back_and_says_why(tmp_path):
    none = load_embedder(None)
    missing = load_embedder(str(tmp_path / "no-model"))
    broken_dir = tmp_path / "broken"
    broken_dir.mkdir()
    broken = load_embedder(str(broken_dir))
    assert (none.kind, none.fallback_reason) == ("lexical", "no embedding_model configured")
    assert (missing.kind, missing.fallback_reason) == ("lexical", f"embedding model folder not found: {tmp_path / 'no-model'}")
    assert broken.kind == "lexical" and broken.fallback_reason.startswith(f"embedding model {str(broken_dir)!r} could not be loaded")


def test_model2vec_embedder():
    if not SHARED_MODEL.exists():
        pytest.skip("../shared/models/minilm-l6-m2v-256 not present")
    e = load_embedder(str(SHARED_MODEL))
    assert (type(e), e.kind, e.dim, e.id, e.fallback_reason) == (
        Model2VecEmbedder, "model2vec", 256, "model2vec:minilm-l6-m2v-256:256", None)
    v = e.encode(["use pnpm instead of npm", "never use pnpm, use npm"])
    assert v.dtype == np.float32 and np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert round(float(v[0] @ v[1]), 2) == 0.93          # why the judgement cannot be embeddings alone


def test_blob_round_trip():
    vec = np.arange(8, dtype=np.float32) / 7
    assert np.array_equal(from_blob(to_blob(vec)), vec)
    assert from_blob(to_blob(vec), dim=4) is None and from_blob(None) is None


def test_vectors_are_recomputed_when_the_embedder_changes(tmp_path):
    db = open_db(tmp_path / "agent.db")
    for i, text in enumerate(["alpha beta", "gamma delta", "epsilon"], 1):
        db.conn.execute("""INSERT INTO cards(id, statement, norm, category, confidence, original_confidence,
                           created_at, said_at, last_seen_at, updated_at) VALUES (?, ?, ?, 'fact', 1, 1, 't', 't', 't', 't')""",
                        (i, text, text))
    db.conn.commit()
    small, big = LexicalEmbedder(dim=64), LexicalEmbedder(dim=128)
    assert ensure_vectors(db, small) == 3
    assert ensure_vectors(db, small) == 0
    db.conn.execute("UPDATE cards SET vector = NULL WHERE id = 2")
    db.conn.commit()
    assert ensure_vectors(db, small) == 1
    assert ensure_vectors(db, big) == 3
    lengths = [len(b) for (b,) in db.conn.execute("SELECT vector FROM cards ORDER BY id")]
    assert lengths == [128 * 4] * 3
    assert db.conn.execute("SELECT value FROM graph_meta WHERE key = 'embedder'").fetchone() == ("lexical:hash-v1:128",)
    db.close()
