"""Secrets in a real Claude Code session (issue 14's end-to-end goal): pasted into a prompt and read
from a `.env` by a Bash and a Read tool call, then indexed, consolidated (offline, and by the
claude-cli writer against the fake API) and recalled by our hooks in a later session. Not one of
them may appear anywhere under the home (every file, WAL included), in what our hooks printed, in
the later model requests, or in what the claude-cli writer sent."""

from __future__ import annotations

import random
import shutil

from fake_api import tool_use
from harness import MEMORY_MARKER, home_files, injected, our_hook_runs
from secret_values import ALNUM, generators


def _secrets() -> dict[str, str]:
    rand, _ = generators(random.Random(1401))
    return {
        "pasted_password": "hunter2-Xq9-Mv77",            # word-built: the issue's own example
        "github": "ghp_" + rand(36),
        "aws_secret": rand(40, ALNUM + "/+"),
        "url_password": rand(20),
        "env_password": "correct-horse-battery",          # words only, in a secret-named key
        "postgres": rand(28),
        "anthropic": "sk-ant-api03-" + rand(93, ALNUM + "-_") + "AA",
        "stripe": "sk_live_" + rand(24),
    }


def _leaks(data: bytes | str, secrets: dict[str, str]) -> list[str]:
    raw = data.encode("utf-8", "replace") if isinstance(data, str) else data
    return sorted(name for name, value in secrets.items() if value.encode() in raw)


def test_no_secret_reaches_the_home_the_hooks_or_the_writer(cc, record_measure):
    s = _secrets()
    (cc.project / ".env").write_text(
        f"DB_PASSWORD={s['env_password']}\nPOSTGRES_PASSWORD={s['postgres']}\n"
        f"ANTHROPIC_API_KEY={s['anthropic']}\nSTRIPE_SECRET_KEY={s['stripe']}\n")
    prompt = (f"The deploy is failing. DB_PASSWORD={s['pasted_password']} and the connection string is "
              f"postgres://app:{s['url_password']}@db.internal:5432/shop; GITHUB_TOKEN={s['github']}; "
              f"AWS_SECRET_ACCESS_KEY={s['aws_secret']}. We decided to keep the deploy credentials in the .env file, "
              "never in the repo. Check the .env file too.")
    cc.reverie("hook", "install")
    cc.fake.script(tool_use("Bash", {"command": "cat .env", "description": "Show the env file"}),
                   tool_use("Read", {"file_path": str(cc.project / ".env")}))
    first = cc.claude(prompt, "--allowedTools", "Bash(cat:*)", "Read")
    lines = cc.lines(first.session_id)
    results = "\n".join(str(b.get("content")) for ln in lines if ln.get("type") == "user"
                        and isinstance(ln["message"]["content"], list) for b in ln["message"]["content"]
                        if b.get("type") == "tool_result")
    assert _leaks(results, s) == ["anthropic", "env_password", "postgres", "stripe"]   # the tools did read them
    cc.reverie("index", "--json")

    # the claude-cli writer on a copy of the home: what it sends to the model
    writer_home = cc.root / "writer-home"
    shutil.copytree(cc.reverie_home, writer_home)
    cc.reverie("--home", str(writer_home), "settings", "set", "claude_cli.pass_api_key", "true")
    cc.fake.reset()
    writer = cc.reverie("--home", str(writer_home), "consolidate", "--now", "--all", "--writer", "claude-cli", "--json")
    sent = cc.fake.messages()
    assert sent and writer.json[0]["errors"] == [], writer.json
    assert "deploy credentials" in "".join(r.raw for r in sent)    # the passages did go out...
    assert _leaks(cc.fake.all_raw(), s) == []                       # ...without a secret

    # offline consolidation, then a later session that our hooks feed
    cc.reverie("consolidate", "--now", "--all", "--writer", "offline", "--json")
    cc.fake.reset()
    later = cc.claude("Where do we keep the deploy credentials, and what is the DB password?")
    later_lines = cc.lines(later.session_id)
    contexts = [c for c in injected(later_lines) if MEMORY_MARKER in c]
    assert contexts, "the later session got no memory (nothing to check the hooks against)"
    printed = "\n".join(contexts + [str(a.get("stdout", "")) + str(a.get("stderr", "")) for a in our_hook_runs(later_lines)])
    assert _leaks(printed, s) == []
    later_requests = cc.fake.messages()
    assert any(MEMORY_MARKER in r.raw for r in later_requests)
    assert _leaks(cc.fake.all_raw(), s) == []
    cc.reverie("index", "--json")    # the later session too, then every byte of both homes

    files = home_files(cc.reverie_home) + home_files(writer_home)
    found = {str(p): _leaks(p.read_bytes(), s) for p in files}
    record_measure("secrets_scan", files=len(files), bytes=sum(p.stat().st_size for p in files),
                   wal_files=sum(1 for p in files if p.name.endswith("-wal")),
                   writer_requests=len(sent), secrets=len(s))
    assert {k: v for k, v in found.items() if v} == {}
    assert any(p.name == "agent.db" for p in files)
