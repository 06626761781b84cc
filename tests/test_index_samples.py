"""The bundled sample transcripts: reproducible byte for byte, and the demo runs on them."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "fixtures" / "sample-projects"


def _mk():
    spec = importlib.util.spec_from_file_location("make_samples", ROOT / "fixtures" / "make_samples.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_generator_reproduces_the_committed_samples(tmp_path):
    _mk().write(tmp_path)
    made = {p.relative_to(tmp_path): p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    committed = {p.relative_to(SAMPLES): p.read_bytes() for p in SAMPLES.rglob("*") if p.is_file()}
    assert sorted(made) == sorted(committed)
    assert all(made[k] == committed[k] for k in made)


def test_demo_indexes_the_samples_and_shows_agents_and_a_conversation(tmp_path, capsys):
    from reverie.consolidate import demo

    assert demo.main(["--home", str(tmp_path / "demo-home")]) == 0
    out = capsys.readouterr().out
    assert "73 messages added" in out and "Second run (incremental): 0 files changed, 0 messages added." in out
    agents = [ln.split()[0] for ln in out.split("== 3.")[1].split("== 4.")[0].splitlines()[2:] if ln.strip()]
    assert agents == ["billing-api", "infra"]
    assert "AWS_ACCESS_KEY_ID=[REDACTED:" in out and ": 0 occurrences of the 2 planted values." in out
    for secret in _mk().PLANTED_SECRETS:
        assert secret not in out
    # A folder the demo did not make is never emptied.
    other = tmp_path / "mine"
    other.mkdir()
    (other / "keep.txt").write_text("x")
    with pytest.raises(SystemExit, match="was not created by the demo"):
        demo.main(["--home", str(other)])
    assert (other / "keep.txt").exists()
