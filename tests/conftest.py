import socket
from pathlib import Path

import pytest

from locations import ROOT, SHARED, SHARED_FIXTURES, SHARED_MODEL  # noqa: F401  (also imported by tests)


@pytest.fixture(scope="session", autouse=True)
def no_model_downloads(tmp_path_factory):
    """For every process the suite starts (module fixtures build homes with the real CLI in
    subprocesses): no model hub download (HF_HUB_OFFLINE, which graph.model_fetch honours), and the
    default model resolves in an empty tmp cache, not the user's (so recall is lexical unless a
    test downloads through a fake)."""
    mp = pytest.MonkeyPatch()
    mp.setenv("HF_HUB_OFFLINE", "1")
    mp.setenv("REVERIE_CACHE_DIR", str(tmp_path_factory.mktemp("reverie-cache")))
    mp.setenv("HF_HOME", str(tmp_path_factory.mktemp("hf-home")))
    yield
    mp.undo()


_LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1", "", None}


@pytest.fixture(autouse=True)
def no_network(monkeypatch, tmp_path):
    """In the test process: the hub transport (graph.model_fetch._urlopen) is a fake that refuses,
    and a name lookup of any non-local host fails the test loudly at teardown (whatever caught
    the error on the way). Tests of the download path replace `_urlopen` with their own fake."""
    from reverie.graph import model_fetch

    attempts: list[str] = []

    def refuse(url, timeout):
        attempts.append(url)
        raise OSError(f"tests never reach the network: {url}")

    real_getaddrinfo = socket.getaddrinfo

    def guarded_getaddrinfo(host, *args, **kwargs):
        if host not in _LOCAL_HOSTS and not str(host).startswith("127."):
            attempts.append(f"getaddrinfo({host!r})")
            raise socket.gaierror(socket.EAI_NONAME, f"tests never reach the network ({host})")
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(model_fetch, "_urlopen", refuse)
    monkeypatch.setattr(model_fetch, "_FAILED", {})
    monkeypatch.setattr(socket, "getaddrinfo", guarded_getaddrinfo)
    monkeypatch.setenv("REVERIE_CACHE_DIR", str(tmp_path / "reverie-cache"))
    yield attempts
    if attempts:
        pytest.fail(f"a test tried to reach the network: {attempts}")


def _path_without_claude(path: str) -> str:
    """PATH minus every folder holding a `claude` executable (a real Claude Code install)."""
    import os

    return os.pathsep.join(d for d in path.split(os.pathsep)
                           if not (d and os.access(os.path.join(d, "claude"), os.X_OK)))


@pytest.fixture(scope="session", autouse=True)
def no_real_claude_or_key():
    """For the whole suite, subprocesses included: the default writer `auto` never finds a real
    `claude` (PATH without it) or a real key (ANTHROPIC_API_KEY / ANTHROPIC_AUTH_TOKEN unset), so it
    resolves to offline unless a test puts a fake `claude` or a key in place."""
    import os

    mp = pytest.MonkeyPatch()
    mp.setenv("PATH", _path_without_claude(os.environ.get("PATH", "")))
    mp.delenv("ANTHROPIC_API_KEY", raising=False)
    mp.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    yield
    mp.undo()


@pytest.fixture(autouse=True)
def reverie_home(tmp_path, monkeypatch):
    """Every test gets its own REVERIE_HOME; nothing reads the user's real home or transcripts."""
    home = tmp_path / "reverie-home"
    monkeypatch.setenv("REVERIE_HOME", str(home))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude-config"))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))      # `reverie index` reads every harness
    monkeypatch.setenv("GEMINI_CLI_HOME", str(tmp_path / "gemini-home"))
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    from reverie.consolidate.writers import select

    select.clear_cache()   # the `auto` writer choice is cached per process: each test chooses afresh
    monkeypatch.delenv("REVERIE_PAUSE", raising=False)
    monkeypatch.delenv("REVERIE_CHILD", raising=False)
    monkeypatch.setenv("TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS", "")
    return home


@pytest.fixture
def shared_fixtures():
    if not SHARED_FIXTURES.exists():
        pytest.skip("../shared/fixtures not present")
    return SHARED_FIXTURES


@pytest.fixture
def db(tmp_path):
    """A blank agent db with every migration applied (consolidate.store.open_db)."""
    from reverie.consolidate.store import open_db

    d = open_db(tmp_path / "agent.db")
    yield d
    d.close()


@pytest.fixture(scope="module")
def redactor():
    """A redactor with no remembered secrets on disk, one per test module (what a module's cases
    learn stays in it)."""
    from reverie.redact.engine import Redactor

    return Redactor(None)
