from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
SHARED_FIXTURES = SHARED / "fixtures" / "claude-code"
SHARED_MODEL = SHARED / "models" / "minilm-l6-m2v-256"


@pytest.fixture(autouse=True)
def reverie_home(tmp_path, monkeypatch):
    """Every test gets its own REVERIE_HOME; nothing reads the user's real home or transcripts."""
    home = tmp_path / "reverie-home"
    monkeypatch.setenv("REVERIE_HOME", str(home))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude-config"))
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
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
