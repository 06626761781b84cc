"""Our hooks inside the real Claude Code: `reverie hook install` into the real settings.json, the
SessionStart and UserPromptSubmit context found inside the model requests, each memory at most
once per session across --continue / --resume (a compaction starts over), fail-open with a
damaged home, and the hook times Claude Code saw."""

from __future__ import annotations

import json
import os
import statistics
from collections import Counter

from harness import ASK, MEMORY_MARKER, injected, memory_lines, our_hook_runs, read_jsonl, seed_memory, time_hooks

OTHER_HOOK = "echo OTHER-PLUGIN-CONTEXT-7f3a"
#: What the teaching session's standing card says (however the writer words the rest).
TAUGHT = "pnpm instead of npm in this repo because installs are faster"


def _main(requests):
    """The agent-loop requests of one step (compactions excluded)."""
    return [r for r in requests if r.tool_names and "<summary>" not in r.last_user_text()]


def test_hook_install_merges_into_the_real_settings_and_claude_runs_both(cc):
    before = {"cleanupPeriodDays": 45, "permissions": {"allow": ["Bash(ls:*)"]},
              "hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": OTHER_HOOK}]}]}}
    cc.settings_file.write_text(json.dumps(before))
    out = cc.reverie("hook", "install").stdout
    assert str(cc.settings_file) in out
    after = json.loads(cc.settings_file.read_text())
    assert (after["cleanupPeriodDays"], after["permissions"]) == (45, {"allow": ["Bash(ls:*)"]})
    reverie = cc.env["PATH"].split(os.pathsep)[0] + "/reverie"
    command = f"{reverie} --home {cc.reverie_home}"
    assert after["hooks"]["SessionStart"] == [
        {"hooks": [{"type": "command", "command": OTHER_HOOK}]},
        {"matcher": "startup|resume|clear|compact",
         "hooks": [{"type": "command", "command": f"{command} hook session-start", "timeout": 10}]}]
    assert after["hooks"]["UserPromptSubmit"] == [
        {"hooks": [{"type": "command", "command": f"{command} hook user-prompt-submit", "timeout": 5}]}]
    backups = sorted(p.name for p in cc.config_dir.iterdir() if p.name.startswith("settings.json.reverie-backup-"))
    assert len(backups) == 1
    cc.reverie("hook", "install")   # idempotent: nothing changes, no second backup
    assert json.loads(cc.settings_file.read_text()) == after
    assert len([p for p in cc.config_dir.iterdir() if p.name.startswith("settings.json.reverie-backup-")]) == 1

    log = time_hooks(cc)    # the same commands, run through a timer that records what they printed
    cc.claude("hello")
    runs = [(t["event"], t["rc"], t["stdout_bytes"], t["stderr_bytes"]) for t in read_jsonl(log)]
    # OTHER_HOOK and ours on SessionStart (no memory yet: ours ran and printed nothing), then ours on
    # the prompt. Claude Code runs an event's matching hooks in parallel, so the two SessionStart
    # runs finish in either order (a CI run saw ours first).
    assert sorted(runs[:2]) == sorted([("SessionStart", 0, len("OTHER-PLUGIN-CONTEXT-7f3a\n"), 0),
                                       ("SessionStart", 0, 0, 0)])
    assert runs[2:] == [("UserPromptSubmit", 0, 0, 0)]
    [request] = _main(cc.fake.messages())
    assert "OTHER-PLUGIN-CONTEXT-7f3a" in request.messages_text()   # the other hook still works
    assert MEMORY_MARKER not in request.raw


def test_session_start_context_reaches_the_model_request(corpus):
    """The corpus's "start" session: what our SessionStart hook printed is what Claude Code put in
    the model request, and it holds the memory taught in the "teach" session."""
    cc = corpus.cc
    lines = cc.lines(corpus.sessions["main"])
    ours = [a for a in our_hook_runs(lines) if a["hookEvent"] == "SessionStart"]
    startup = [a for a in ours if a["hookName"] == "SessionStart:startup"]
    assert len(startup) == 1 and startup[0]["exitCode"] == 0
    printed = json.loads(startup[0]["stdout"])["hookSpecificOutput"]
    assert printed["hookEventName"] == "SessionStart"
    context = printed["additionalContext"]
    assert context.startswith(MEMORY_MARKER)
    assert TAUGHT in context
    [request] = _main(corpus.requests["start"])
    assert context in request.messages_text()
    assert ASK in request.messages_text()


def test_prompt_context_reaches_the_model_request(cc):
    """UserPromptSubmit alone (SessionStart removed from the settings, so the prompt's recall is the
    first this session gets): its additionalContext is inside the model request."""
    seeded = seed_memory(cc)
    cc.reverie("hook", "install")
    settings = json.loads(cc.settings_file.read_text())
    del settings["hooks"]["SessionStart"]
    cc.settings_file.write_text(json.dumps(settings))
    cc.fake.reset()
    run = cc.claude(ASK)
    contexts = [c for c in injected(cc.lines(run.session_id)) if MEMORY_MARKER in c]
    assert len(contexts) == 1
    expected = cc.reverie("recall", "--agent", seeded["agent"], "--prompt", ASK, "--json").json["text"]
    assert contexts[0] == expected
    assert TAUGHT in expected
    [request] = _main(cc.fake.messages())
    body = request.messages_text()
    assert body.count(expected) == 1
    assert ASK in body


def _repeats(request) -> dict[str, int]:
    """Memory lines that occur more than once in what the model received."""
    return {ln: n for ln, n in Counter(memory_lines(request.messages_text())).items() if n > 1}


def test_a_continued_or_resumed_session_gets_each_memory_once(corpus):
    """Claude Code replays earlier hook output on --continue / --resume, so a memory already
    injected in the session must not be injected again (graph.recall: every block, recent
    episodes included, once per session; a resume does not reset)."""
    for step in ("start", "continue", "resume"):
        request = _main(corpus.requests[step])[-1]
        assert memory_lines(request.messages_text()), step       # the memory is there...
        assert _repeats(request) == {}, step                    # ...once


def test_after_a_compaction_each_memory_is_injected_again_once(corpus):
    """/compact drops the replayed hook output; SessionStart(compact) resets the session's
    once-list, so the standing memory is back in the context, once."""
    cc = corpus.cc
    lines = cc.lines(corpus.sessions["main"])
    boundary = next(i for i, ln in enumerate(lines) if ln.get("subtype") == "compact_boundary")
    after = injected(lines[boundary:])
    assert any(TAUGHT in c for c in after if MEMORY_MARKER in c)
    request = _main(corpus.requests["after_compact"])[-1]
    cards = [ln for ln in memory_lines(request.messages_text()) if TAUGHT in ln and "[#" in ln]
    assert len(cards) == 1     # the standing card, once, though the summary came first
    assert _repeats(request) == {}


def test_hooks_fail_open_with_a_damaged_home(cc):
    """With memory in place the hooks inject (the baseline); with a corrupt agent.db, a settings
    file that is not JSON, or one that cannot be read, the session still works and our hooks
    print nothing, on stdout or stderr."""
    seeded = seed_memory(cc)
    cc.reverie("hook", "install")
    log = time_hooks(cc)
    db = cc.reverie_home / "agents" / seeded["agent"] / "agent.db"
    settings = cc.reverie_home / "settings.json"

    def session():
        cc.fake.reset()
        log.write_text("")
        run = cc.claude(ASK)
        assert run.json["result"] == "OK, done."
        runs = [(t["event"], t["rc"], t["stdout_bytes"], t["stderr_bytes"]) for t in read_jsonl(log)]
        return run, runs, _main(cc.fake.messages())

    run, runs, requests = session()
    assert MEMORY_MARKER in requests[0].messages_text()   # baseline: the hooks do inject
    assert runs[0][0] == "SessionStart" and runs[0][2] > 0

    def corrupt_db():
        for suffix in ("-wal", "-shm"):
            if os.path.exists(str(db) + suffix):
                os.remove(str(db) + suffix)
        with open(db, "r+b") as fh:
            fh.write(b"this is not an sqlite database" * 200)

    def settings_not_json():
        settings.write_text('{"recall": {"max_chars": ')

    def settings_unreadable():
        if settings.exists():
            settings.unlink()
        settings.mkdir()        # reading it fails (as root a chmod 000 file would still be read)

    for damage in (corrupt_db, settings_not_json, settings_unreadable):
        damage()
        run, runs, requests = session()
        assert runs == [("SessionStart", 0, 0, 0), ("UserPromptSubmit", 0, 0, 0)], damage.__name__
        assert all(MEMORY_MARKER not in r.raw for r in requests), damage.__name__
        assert MEMORY_MARKER not in run.stdout + run.stderr
        if settings.is_dir():
            settings.rmdir()
        elif settings.exists():
            settings.unlink()


def test_hook_times_inside_claude_code(corpus, record_measure):
    """Every hook run of the corpus, timed by the wrapper around our command (`harness.time_hooks`)
    and by Claude Code itself (hook_success durationMs, SessionStart only): all exit 0, each well
    inside its timeout. Each event also timed `python -c pass` beside ours (the floor of any Python
    hook on this machine at that moment). The figures are recorded (`record_measure`), not asserted
    against a goal (speed is measured, not tested: bench/)."""
    cc = corpus.cc
    times = read_jsonl(corpus.hook_log)
    by_event: dict[str, list[float]] = {}
    for t in times:
        assert t["rc"] == 0
        by_event.setdefault(t["event"], []).append(t["ns"] / 1e6)
    lines = [ln for p in cc.transcripts() for ln in cc.lines(p.stem)]
    cc_ms = [a["durationMs"] for a in our_hook_runs(lines) if a.get("type") == "hook_success" and "durationMs" in a]
    sessions = sum(1 for _ in corpus.sessions)
    assert len(by_event["SessionStart"]) >= sessions + 3    # startup per session, resumes, compact
    assert len(by_event["UserPromptSubmit"]) >= sessions + 3
    assert max(by_event["SessionStart"]) < 10_000 and max(by_event["UserPromptSubmit"]) < 5_000

    def summary(xs):
        xs = sorted(xs)
        return {"n": len(xs), "median_ms": round(statistics.median(xs), 1),
                "p95_ms": round(xs[min(len(xs) - 1, int(0.95 * len(xs)))], 1), "max_ms": round(xs[-1], 1)}

    assert len(by_event["baseline:SessionStart"]) == len(by_event["SessionStart"])
    figures = {ev: summary(xs) for ev, xs in sorted(by_event.items())}
    for ev in ("SessionStart", "UserPromptSubmit"):   # our hook over `python -c pass` run beside it
        figures[ev]["median_over_baseline"] = round(figures[ev]["median_ms"] / figures["baseline:" + ev]["median_ms"], 2)
    record_measure("hook_times_wrapper", **figures)
    if cc_ms:
        record_measure("hook_times_claude_code_durationMs", SessionStart=summary([float(x) for x in cc_ms]))
