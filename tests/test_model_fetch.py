"""The default embedding model: a hub name fetched once by consolidation into the cache, through a
fake transport serving ../shared/models/ files (nothing here reaches the network); the offline
fallback and what doctor says; the hook never downloads."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
import urllib.error
from pathlib import Path

import pytest

from reverie.consolidate import settings as st
from reverie.consolidate.doctor import _embedding_check
from reverie.graph import model_cache, model_fetch
from reverie.graph.embed import LexicalEmbedder, Model2VecEmbedder, load_embedder
from reverie.graph.recall_embed import LexicalLite, LiteEmbedder, prompt_embedder

from locations import SHARED_MODEL

NAME = model_cache.DEFAULT_MODEL


class FakeHub:
    """Serves `<endpoint>/<name>/resolve/main/<file>` from a local model folder, recording each URL."""

    def __init__(self, folder: Path, *, truncate: str | None = None) -> None:
        self.folder = folder
        self.truncate = truncate
        self.urls: list[str] = []

    def __call__(self, url: str, timeout: float):
        self.urls.append(url)
        assert timeout == model_fetch.TIMEOUT_S
        filename = url.rsplit("/", 1)[1]
        data = (self.folder / filename).read_bytes()
        body = data[: len(data) // 2] if filename == self.truncate else data

        class Response(io.BytesIO):
            headers = {"Content-Length": str(len(data))}

        return Response(body)


@pytest.fixture
def hub(monkeypatch):
    if not (SHARED_MODEL / "model.safetensors").exists():
        pytest.skip("../shared/models/minilm-l6-m2v-256 not present")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    fake = FakeHub(SHARED_MODEL)
    monkeypatch.setattr(model_fetch, "_urlopen", fake)
    return fake


def test_default_setting_is_the_hub_model_and_null_switches_it_off(tmp_path):
    assert st.DEFAULTS["embedding_model"] == NAME == "minishlab/potion-base-8M"
    st.set_checked(tmp_path, "embedding_model", "null")   # as `reverie settings set embedding_model null`
    assert st.load_settings(tmp_path)["embedding_model"] is None
    assert load_embedder(None).describe() == {"kind": "lexical", "id": "lexical:hash-v1:1024", "dim": 1024,
                                              "fallback_reason": "no embedding_model configured"}


def test_cache_dir_is_the_platform_user_cache_dir(monkeypatch, tmp_path):
    import platformdirs

    monkeypatch.delenv(model_cache.ENV_CACHE)
    assert model_cache.cache_root() == platformdirs.user_cache_dir("reverie", appauthor=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert model_cache.cache_root() == platformdirs.user_cache_dir("reverie", appauthor=False)
    monkeypatch.setenv(model_cache.ENV_CACHE, str(tmp_path / "c"))
    assert model_cache.model_dir(NAME) == str(tmp_path / "c" / "models" / "minishlab--potion-base-8M")


def test_hub_names_and_folders():
    assert [model_cache.is_hub_name(s) for s in (NAME, "org/name.v2", "/abs/model", "./rel/m", "~/m", "a/b/c", "plain", "")] == [
        True, True, False, False, False, False, False, False]


def test_first_consolidation_fetches_once_with_progress_and_the_hook_reads_the_same_vectors(hub, tmp_path):
    seen: list[tuple[int, int, str]] = []
    emb = load_embedder(NAME, fetch=True, progress=lambda done, total, f: seen.append((done, total, f)))
    folder = Path(model_cache.model_dir(NAME))
    assert hub.urls == [f"https://huggingface.co/{NAME}/resolve/main/{f}" for f in model_cache.MODEL_FILES]
    assert sorted(p.name for p in folder.iterdir()) == sorted(model_cache.MODEL_FILES)
    assert [p.name for p in folder.parent.iterdir()] == [folder.name]   # no temporary folder left, no failure note
    for f in model_cache.MODEL_FILES:
        size = (SHARED_MODEL / f).stat().st_size
        assert (folder / f).read_bytes() == (SHARED_MODEL / f).read_bytes()
        assert seen[-1] == (size, size, f) if f == model_cache.MODEL_FILES[-1] else (size, size, f) in seen
    assert [s[0] for s in seen if s[2] == "model.safetensors"] == sorted(s[0] for s in seen if s[2] == "model.safetensors")
    assert (type(emb), emb.id, emb.fallback_reason) == (Model2VecEmbedder, f"model2vec:{NAME}:256", None)

    again = load_embedder(NAME, fetch=True)
    assert again.id == emb.id and len(hub.urls) == 3          # cached: never fetched twice

    lite = prompt_embedder(NAME, tmp_path / "hook-cache")
    assert isinstance(lite, LiteEmbedder) and lite.id == emb.id
    text = "deploy billing-api to prod-k8s with pnpm"
    assert lite.embed(text) == pytest.approx(emb.encode([text])[0].tolist(), abs=2e-4)   # F16 rows, summed in float64
    assert _embedding_check(NAME) == {"name": "embedding model", "ok": True, "optional": True,
                                      "detail": f"{NAME} (cached in {folder})", "fix": None}


def test_offline_falls_back_fast_once_per_process_and_doctor_says_why(monkeypatch):
    calls: list[str] = []

    def unreachable(url, timeout):
        calls.append(url)
        raise urllib.error.URLError(OSError(-2, "Name or service not known"))

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(model_fetch, "_urlopen", unreachable)
    started = time.monotonic()
    emb = load_embedder(NAME, fetch=True)
    reason = "URLError: [Errno -2] Name or service not known"
    assert (type(emb), emb.fallback_reason) == (
        LexicalEmbedder, f"embedding model {NAME!r} could not be fetched ({reason})")
    assert load_embedder(NAME, fetch=True).fallback_reason == emb.fallback_reason
    assert len(calls) == 1 and time.monotonic() - started < 2.0   # one attempt per process
    folder = model_cache.model_dir(NAME)
    assert not os.path.exists(folder)
    failed = model_cache.last_failure(NAME)
    assert (failed["reason"], failed["url"]) == (reason, f"https://huggingface.co/{NAME}/resolve/main/config.json")
    check = _embedding_check(NAME)
    assert (check["ok"], check["detail"]) == (False, f"setting embedding_model = {NAME}: the last download failed "
                                              f"({failed['at']}: {reason}); recall uses lexical matching until it is fetched")
    assert check["fix"].startswith("let `reverie consolidate --now` reach the model hub")
    assert isinstance(prompt_embedder(NAME, folder + "-hook"), LexicalLite)


def test_hf_hub_offline_refuses_without_trying(monkeypatch):
    # the suite-wide guard sets HF_HUB_OFFLINE=1; the refusing transport would fail the test if called
    assert os.environ["HF_HUB_OFFLINE"] == "1"
    emb = load_embedder(NAME, fetch=True)
    assert emb.fallback_reason == f"embedding model {NAME!r} could not be fetched (HF_HUB_OFFLINE is set)"
    assert not os.path.exists(model_cache.model_dir(NAME) + model_cache.FAILED_SUFFIX)


def test_truncated_download_leaves_nothing_behind(hub):
    hub.truncate = "model.safetensors"
    emb = load_embedder(NAME, fetch=True)
    size = (SHARED_MODEL / "model.safetensors").stat().st_size
    assert emb.fallback_reason == (f"embedding model {NAME!r} could not be fetched "
                                   f"(model.safetensors: got {size // 2} of {size} bytes)")
    assert [p.name for p in Path(model_cache.model_dir(NAME)).parent.iterdir()] == [
        "minishlab--potion-base-8M" + model_cache.FAILED_SUFFIX]


def test_without_fetch_nothing_is_downloaded(hub):
    emb = load_embedder(NAME)
    assert (emb.kind, emb.fallback_reason, hub.urls) == (
        "lexical", f"embedding model {NAME!r} is not downloaded yet (the next consolidation fetches it)", [])


def test_progress_bar_only_on_a_terminal(hub, capsys, monkeypatch):
    load_embedder(NAME, fetch=True)
    assert capsys.readouterr().err == ""              # not a terminal, no callback: silent

    class Tty(io.StringIO):
        def isatty(self):
            return True

    tty = Tty()
    monkeypatch.setattr(sys, "stderr", tty)
    monkeypatch.setenv(model_cache.ENV_CACHE, str(Path(model_cache.cache_root()) / "second"))
    load_embedder(NAME, fetch=True)
    lines = tty.getvalue().split("\n")
    total = (SHARED_MODEL / "model.safetensors").stat().st_size
    assert lines[-1] == "" and lines[-2].endswith(f"model.safetensors: [{'#' * 30}] {total / 1e6:5.1f}/{total / 1e6:.1f} MB")


def test_the_hook_path_never_downloads(tmp_path):
    """A separate interpreter, no HF_HUB_OFFLINE: the hook's embedder for the default hub model,
    not downloaded, is the lexical one and nothing that could download is even imported."""
    env = {k: v for k, v in os.environ.items() if k != "HF_HUB_OFFLINE"}
    code = ("import sys, json; from reverie.graph.recall_embed import prompt_embedder; "
            "e = prompt_embedder(sys.argv[1], sys.argv[2]); "
            "print(json.dumps([type(e).__name__] + sorted(m for m in ('reverie.graph.model_fetch', 'urllib.request', "
            "'socket', 'model2vec', 'huggingface_hub') if m in sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code, NAME, str(tmp_path / "c")], env=env, capture_output=True,
                         text=True, check=True, timeout=60)
    assert json.loads(out.stdout) == ["LexicalLite"]


def test_consolidation_downloads_the_default_model_and_prepares_the_hook(hub, reverie_home):
    """Default settings, hub reachable (the fake): the run fetches the model once, writes model2vec
    vectors, and builds the hook's vocabulary cache, so the next hook embeds with the same model."""
    import sqlite3

    from fakes import make_agent

    from reverie.consolidate.pipeline import consolidate_agent

    turns = [("user", "From now on, always use pnpm instead of npm in this repo."), ("assistant", "Understood.")]
    path = make_agent(reverie_home, "demo", {"c1": turns})
    summary = consolidate_agent(reverie_home, "demo", writer="offline")
    assert summary["cards_written"] == 1 and len(hub.urls) == 3
    assert summary["embedder"] == {"kind": "model2vec", "id": f"model2vec:{NAME}:256", "dim": 256, "fallback_reason": None}
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT value FROM graph_meta WHERE key = 'embedder'").fetchone() == (f"model2vec:{NAME}:256",)
    assert [len(v) for (v,) in conn.execute("SELECT vector FROM cards")] == [256 * 4]
    conn.close()
    assert len(list((reverie_home / "cache").glob("m2v-*.db"))) == 1          # the hook's cache, built by the run
    consolidate_agent(reverie_home, "demo", writer="offline")
    assert len(hub.urls) == 3
