"""consolidate.agents: ids, collisions, the registry, mapping settings, the light lookup."""

from __future__ import annotations

import json
import subprocess
import sys

from consolidate import agents
from consolidate.settings import set_value


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
    assert got == {"/home/dev/shop": "shop", "/home/dev/shop/sub": None, "/home/dev/mono": "mono",
                   "/home/dev/mono/web/src": "mono", "/home/dev/mono/legacy/x": "legacy",
                   "/home/dev/monolith": None, "": None}


def test_disabled_agent_is_still_found_and_flagged(reverie_home):
    agents.assign_agent(reverie_home, "/home/dev/shop")
    set_value(reverie_home, "agents.disabled", ["shop"])
    assert agents.agent_for_cwd(reverie_home, "/home/dev/shop") == "shop"
    assert agents.is_disabled(reverie_home, "shop")
    (row,) = agents.list_agents(reverie_home)
    assert row == {"id": "shop", "cwd": "/home/dev/shop", "cwds": ["/home/dev/shop"], "conversations": 0,
                   "messages": 0, "first": None, "last": None, "transcripts_on_disk": 0, "disabled": True,
                   "db_bytes": 0}


def test_lookup_uses_the_standard_library_only(reverie_home):
    code = ("import sys; from consolidate.agents import agent_for_cwd; agent_for_cwd(sys.argv[1], '/x'); "
            "heavy = [m for m in ('sqlite_utils', 'click', 'presidio_analyzer', 'redact.engine', 'consolidate.index') "
            "if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code, str(reverie_home)], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_broken_registry_or_settings_fail_open(reverie_home):
    reverie_home.mkdir(parents=True, exist_ok=True)
    (reverie_home / "agents.json").write_text("{not json")
    (reverie_home / "settings.json").write_text("[1, 2]")
    assert agents.agent_for_cwd(reverie_home, "/home/dev/shop") is None
    assert agents.assign_agent(reverie_home, "/home/dev/shop") == "shop"
