"""`reverie settings get|set`: typed values, validation that names the fix, secrets never echoed."""

from __future__ import annotations

import json

from click.testing import CliRunner

from reverie.consolidate.commands import build_cli
from reverie.consolidate.settings import load_settings


def run(home, *args):
    return CliRunner().invoke(build_cli(), ["--home", str(home), "settings", *args], catch_exceptions=False)


def test_set_and_get_typed_values(tmp_path):
    home = tmp_path / "h"
    assert run(home, "set", "index.tool_result_cap", "500").exit_code == 0
    assert run(home, "set", "agents.disabled", '["scratch"]').exit_code == 0
    assert run(home, "set", "agents.map", '{"/home/dev/mono": "mono"}').exit_code == 0
    assert run(home, "get", "index.tool_result_cap").output == "500\n"
    s = load_settings(home)
    assert (s["index"]["tool_result_cap"], s["agents"]["disabled"], s["agents"]["map"]) == (500, ["scratch"], {"/home/dev/mono": "mono"})
    assert json.loads((home / "settings.json").read_text()) == {
        "agents": {"disabled": ["scratch"], "map": {"/home/dev/mono": "mono"}}, "index": {"tool_result_cap": 500}}
    assert oct((home / "settings.json").stat().st_mode & 0o777) == "0o600"


def test_errors_name_the_fix(tmp_path):
    home = tmp_path / "h"
    r = run(home, "set", "index.tool_result_cap", "lots")
    assert r.exit_code == 1 and "index.tool_result_cap expects a whole number (default 8000)" in r.output and "reverie settings set index.tool_result_cap 8000" in r.output
    r = run(home, "set", "no.such.key", "1")
    assert r.exit_code == 1 and "Unknown setting 'no.such.key'" in r.output
    r = run(home, "set", "agents.map", '{"relative/dir": "x"}')
    assert r.exit_code == 1 and "absolute directory" in r.output
    r = run(home, "set", "agents.map", '{"/abs": "Bad Id"}')
    assert r.exit_code == 1 and "Invalid agent id" in r.output
    assert not (home / "settings.json").exists()


def test_api_key_is_never_echoed(tmp_path):
    home = tmp_path / "h"
    key = "sk-ant-api03-" + "Zx9" * 20
    r = run(home, "set", "anthropic.api_key", key)
    assert r.exit_code == 0 and key not in r.output and "(hidden)" in r.output
    assert run(home, "get", "anthropic.api_key").output == "(set)\n"
    everything = run(home, "get").output
    assert key not in everything and json.loads(everything)["anthropic"]["api_key"] == "(set)"


def test_half_life_days_falls_back_to_the_default_on_anything_but_a_positive_number():
    from reverie.consolidate.settings import half_life_days

    values = [30, 7.5, 0, -3, "60", True, None, [90]]
    assert [half_life_days({"feedback": {"half_life_days": v}}) for v in values] == [
        30.0, 7.5, 90.0, 90.0, 90.0, 90.0, 90.0, 90.0]
    assert half_life_days({}) == 90.0


def test_checked_set_parses_validates_and_writes_nothing_on_error(tmp_path):
    """The library behind `reverie settings set`: values parse as JSON or stay strings, secrets stay
    the string given, a wrong type or shape raises InvalidSetting naming the fix and leaves the file."""
    import pytest

    from reverie.consolidate import settings as st
    from reverie.consolidate.errors import InvalidSetting

    assert st.parse_value("consolidate.max_calls", "12") == 12
    assert st.parse_value("writer", "anthropic") == "anthropic"
    assert st.parse_value("anthropic.api_key", "123") == "123"
    assert st.default_for("feedback.half_life_days") == (True, 90.0)
    assert st.default_for("no.such.key") == (False, None)

    path, value = st.set_checked(tmp_path, "feedback.half_life_days", "30")
    assert value == 30 and json.loads(path.read_text()) == {"feedback": {"half_life_days": 30}}
    cases = {
        ("feedback.half_life_days", "true"): "feedback.half_life_days expects a number (default 90.0); got true. "
                                             "Example: reverie settings set feedback.half_life_days 90.0",
        ("consolidate.max_passages", "null"): "consolidate.max_passages cannot be null (default 1000). "
                                              "Example: reverie settings set consolidate.max_passages 1000",
        ("consolidate.keep_threshold", "7"): "consolidate.keep_threshold must be from 0 to 1; got 7. "
                                             "Example: reverie settings set consolidate.keep_threshold 0.5",
        ("consolidate", '{"max_calls": "x"}'): "consolidate.max_calls expects a whole number (default 10); got \"x\". "
                                               "Example: reverie settings set consolidate.max_calls 10",
        ("writer", "bogus"): "writer must be one of auto, offline, anthropic, claude-cli; got \"bogus\". "
                             "Example: reverie settings set writer \"auto\"",
        ("schedule.hour", "25"): "schedule.hour = 25 must be a whole number from 0 to 23.",
        ("recall.max_char", "2000"): "Unknown setting 'recall.max_char'. See all keys with `reverie settings get`.",
        ("consolidate.max_calls", '"ten"'): "consolidate.max_calls expects a whole number (default 10); got \"ten\". "
                                           "Example: reverie settings set consolidate.max_calls 10",
        ("consolidate.keep_threshold", "[1]"): "consolidate.keep_threshold expects a number (default 0.5); got [1]. "
                                               "Example: reverie settings set consolidate.keep_threshold 0.5",
        ("agents.map", '{"relative/dir": "api"}'): "agents.map is an object of absolute directory -> agent id, e.g. "
                                                   "reverie settings set agents.map '{\"/home/me/work/api\": \"api\"}'",
        ("agents.map", '{"/abs": "Bad Id"}'): "Invalid agent id(s) ['Bad Id']: use lowercase letters, digits, "
                                              "'.', '_' and '-'.",
        ("agents.disabled", '"scratch"'): "agents.disabled is a list of agent ids, e.g. "
                                          "reverie settings set agents.disabled '[\"scratch\"]'",
        ("nope", "1"): "Unknown setting 'nope'. See all keys with `reverie settings get`.",
    }
    for (key, raw), message in cases.items():
        with pytest.raises(InvalidSetting) as err:
            st.set_checked(tmp_path, key, raw)
        assert str(err.value) == message
    assert json.loads(path.read_text()) == {"feedback": {"half_life_days": 30}}
    assert st.masked("", {"anthropic": {"api_key": "k", "model": "m"}, "writer": "offline"}) == {
        "anthropic": {"api_key": "(set)", "model": "m"}, "writer": "offline"}


def test_recall_defaults_are_the_budgets_and_the_hook_deadline():
    from reverie.consolidate.hook import DEFAULT_DEADLINE_S
    from reverie.consolidate.settings import DEFAULTS
    from reverie.graph.recall import Budgets

    assert DEFAULTS["recall"] == {**Budgets.DEFAULTS, "hook_deadline_s": DEFAULT_DEADLINE_S}


def test_a_settings_file_that_does_not_parse_is_never_overwritten_and_is_reported(tmp_path):
    import pytest

    from reverie.consolidate import settings as st
    from reverie.consolidate.doctor import diagnose
    from reverie.consolidate.errors import InvalidSetting

    path = tmp_path / "settings.json"
    broken = '{"agents": {"disabled": ["spotter"]},}'
    path.write_text(broken)
    path.chmod(0o600)
    with pytest.raises(InvalidSetting) as err:
        st.set_checked(tmp_path, "writer", "offline")
    assert str(err.value).startswith(f"{path} is not valid JSON (") and str(err.value).endswith(
        "): fix or remove it first; nothing was changed.")
    assert path.read_text() == broken
    with pytest.raises(InvalidSetting, match="is not valid JSON"):
        st.checked_settings(tmp_path)
    check = next(c for c in diagnose(tmp_path)["checks"] if c["name"] == "settings file")
    assert (check["ok"], check["fix"]) == (False, f"fix or remove {path}")
    assert "every command runs on the defaults until it is fixed" in check["detail"]

    path.write_text(json.dumps({"consolidate": {"max_passages": None, "keep_threshold": 0.4}, "writer": "bogus"}))
    assert st.problems(st.user_settings(tmp_path)) == [
        "consolidate.max_passages cannot be null (default 1000). Example: reverie settings set consolidate.max_passages 1000",
        "writer must be one of auto, offline, anthropic, claude-cli; got \"bogus\". Example: reverie settings set writer \"auto\""]
    with pytest.raises(InvalidSetting) as err:
        st.checked_settings(tmp_path)
    assert str(err.value).startswith("Invalid settings: consolidate.max_passages cannot be null")
    check = next(c for c in diagnose(tmp_path)["checks"] if c["name"] == "settings values")
    assert check["ok"] is False and check["detail"].startswith("consolidate.max_passages cannot be null")
    path.write_text(json.dumps({"consolidate": {"keep_threshold": 0.4}}))
    assert st.checked_settings(tmp_path)["consolidate"]["keep_threshold"] == 0.4
    check = next(c for c in diagnose(tmp_path)["checks"] if c["name"] == "settings values")
    assert (check["ok"], check["detail"]) == (True, "every value is valid")


def test_non_finite_numbers_are_refused():
    """JSON's NaN/Infinity would pass every range check (comparisons with NaN are false) and switch
    the dollar cap or the hook deadline off."""
    import pytest

    from reverie.consolidate import settings as st
    from reverie.consolidate.errors import InvalidSetting

    for key, raw in (("consolidate.max_cost_usd", "NaN"), ("recall.hook_deadline_s", "Infinity"),
                     ("consolidate.keep_threshold", "-Infinity")):
        with pytest.raises(InvalidSetting, match=f"^{key} must be a finite number"):
            st.check_value(key, st.parse_value(key, raw))
    assert st.problems({"consolidate": {"max_cost_usd": float("nan")}})[0].startswith(
        "consolidate.max_cost_usd must be a finite number; got nan.")
