"""consolidate.agents: ids, collisions, the registry, mapping settings, the light lookup."""

from __future__ import annotations

import json
import subprocess
import sys

from reverie.consolidate import agents
from reverie.consolidate.settings import set_value


def test_slugify():
    assert [agents.slugify(x) for x in ("Billing API", "spotter-gqc", "__", "Ünïcode dir", "a" * 60)] == [
        "billing-api", "spotter-gqc", "root", "n-code-dir", "a" * 40]


def test_ids_are_stable_and_collisions_get_a_hash_suffix(reverie_home):
    a = agents.assign_agent(reverie_home, "/home/dev/acme/api")
    b = agents.assign_agent(reverie_home, "/srv/other/api")
    c = agents.assign_agent(reverie_home, "/home/dev/acme/api/")
    import hashlib

    assert (a, c) == ("api", "api")
    assert b == "api-" + hashlib.sha1(b"/srv/other/api").hexdigest()[:6]
    data = json.loads((reverie_home / "agents.json").read_text())
    assert {k: v["cwds"] for k, v in data["agents"].items()} == {"api": ["/home/dev/acme/api"], b: ["/srv/other/api"]}
    # Registry written atomically, private, and re-read identically.
    assert oct((reverie_home / "agents.json").stat().st_mode & 0o777) == "0o600"
    assert agents.assign_agent(reverie_home, "/srv/other/api") == b


def test_agent_for_cwd_reads_map_then_registry(reverie_home):
    agents.assign_agent(reverie_home, "/home/dev/shop")
    set_value(reverie_home, "agents.map", {"/home/dev/mono": "mono", "/home/dev/mono/legacy": "legacy"})
    got = {cwd: agents.agent_for_cwd(reverie_home, cwd) for cwd in (
        "/home/dev/shop", "/home/dev/shop/sub", "/home/dev/mono", "/home/dev/mono/web/src",
        "/home/dev/mono/legacy/x", "/home/dev/monolith", "")}
    assert got == {"/home/dev/shop": "shop", "/home/dev/shop/sub": "shop", "/home/dev/mono": "mono",
                   "/home/dev/mono/web/src": "mono", "/home/dev/mono/legacy/x": "legacy",
                   "/home/dev/monolith": None, "": None}


def test_disabled_agent_is_still_found_and_flagged(reverie_home):
    agents.assign_agent(reverie_home, "/home/dev/shop")
    set_value(reverie_home, "agents.disabled", ["shop"])
    assert agents.agent_for_cwd(reverie_home, "/home/dev/shop") == "shop"
    assert agents.is_disabled(reverie_home, "shop")
    (row,) = agents.list_agents(reverie_home)
    assert row == {"id": "shop", "cwd": "/home/dev/shop", "cwds": ["/home/dev/shop"], "conversations": 0,
                   "messages": 0, "first": None, "last": None, "transcripts_on_disk": 0, "harnesses": {},
                   "disabled": True, "db_bytes": 0}


def test_lookup_uses_the_standard_library_only(reverie_home):
    code = ("import sys; from reverie.consolidate.agents import agent_for_cwd; agent_for_cwd(sys.argv[1], '/x'); "
            "heavy = [m for m in ('sqlite_utils', 'click', 'presidio_analyzer', 'reverie.redact.engine', 'reverie.consolidate.index') "
            "if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code, str(reverie_home)], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_broken_registry_or_settings_fail_open(reverie_home):
    reverie_home.mkdir(parents=True, exist_ok=True)
    (reverie_home / "agents.json").write_text("{not json")
    (reverie_home / "settings.json").write_text("[1, 2]")
    assert agents.agent_for_cwd(reverie_home, "/home/dev/shop") is None
    assert agents.assign_agent(reverie_home, "/home/dev/shop") == "shop"


def test_a_folder_below_a_registered_directory_belongs_to_the_nearest_one(reverie_home, monkeypatch):
    monkeypatch.setenv("HOME", "/home/dev")
    registry = {"version": 1, "agents": {
        "dev": {"cwds": ["/home/dev"]}, "billing-api": {"cwds": ["/home/dev/acme/billing-api"]},
        "sdk": {"cwds": ["/home/dev/acme/billing-api/vendor/sdk"]}, "app": {"cwds": ["/opt/x", "/srv/app"]}}}
    got = {cwd: agents.resolve(cwd, {}, registry) for cwd in (
        "/home/dev/acme/billing-api/src", "/home/dev/acme/billing-api/src/a/b/c/", "/home/dev/acme/billing-api/vendor/sdk/x",
        "/home/dev/acme/billing-api/../billing-api/src", "/home/dev/acme/billing-apix/src", "/home/dev/acme",
        "/home/dev/newproj/src", "/home/dev", "/srv/app/web", "/srv/other", "/")}
    # The user's home and the root hold only themselves: new projects below them are not captured.
    assert got == {
        "/home/dev/acme/billing-api/src": "billing-api", "/home/dev/acme/billing-api/src/a/b/c/": "billing-api",
        "/home/dev/acme/billing-api/vendor/sdk/x": "sdk", "/home/dev/acme/billing-api/../billing-api/src": "billing-api",
        "/home/dev/acme/billing-apix/src": None, "/home/dev/acme": None, "/home/dev/newproj/src": None,
        "/home/dev": "dev", "/srv/app/web": "app", "/srv/other": None, "/": None}


def test_the_indexer_puts_a_session_started_in_a_subfolder_under_the_registered_agent(reverie_home, monkeypatch):
    monkeypatch.setenv("HOME", "/home/dev")
    assert agents.assign_agent(reverie_home, "/home/dev/acme/billing-api") == "billing-api"
    assert agents.assign_agent(reverie_home, "/home/dev/acme/billing-api/src") == "billing-api"
    assert agents.assign_agent(reverie_home, "/home/dev/acme/other/src") == "src"
    # The subfolder is not added to the registry (its agent's directory already holds it).
    data = json.loads((reverie_home / "agents.json").read_text())
    assert {k: v["cwds"] for k, v in data["agents"].items()} == {
        "billing-api": ["/home/dev/acme/billing-api"], "src": ["/home/dev/acme/other/src"]}
    assert agents.agent_for_cwd(reverie_home, "/home/dev/acme/billing-api/src/deep") == "billing-api"
