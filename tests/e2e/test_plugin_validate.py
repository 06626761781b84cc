"""`claude plugin validate` (the real CLI) accepts our plugin folder and the repository's
marketplace (`.claude-plugin/marketplace.json`, which lists `plugin/`)."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("target", ["plugin", "."], ids=["plugin", "marketplace"])
def test_claude_plugin_validate_passes(cc, target):
    run = cc.run([str(cc.claude_exe), "plugin", "validate", str(ROOT / target)], cwd=ROOT)
    out = run.stdout + run.stderr
    assert run.returncode == 0, out
    assert "Validation passed" in out and "\u2718" not in out, out     # no "✘" (an error) line
