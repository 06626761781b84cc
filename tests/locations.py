"""Where the tests find the repository and ../shared (a plain module: test files import these from
here, never from a conftest, because tests/ and tests/e2e/ each have a conftest.py)."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
SHARED_FIXTURES = SHARED / "fixtures" / "claude-code"
SHARED_MODEL = SHARED / "models" / "minilm-l6-m2v-256"
