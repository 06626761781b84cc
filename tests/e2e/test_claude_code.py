"""The real Claude Code CLI in print mode against the fake API: sessions, --continue, --resume,
/compact, a sub-agent and tool calls, then `reverie index` over what it wrote (the `corpus` fixture:
one sandbox, every step recorded)."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from harness import ASK, TEACH


@pytest.fixture(scope="module")
def fresh_index(corpus, tmp_path_factory):
    """(home, summary): everything the corpus's CLI wrote, indexed once into a new home."""
    home = tmp_path_factory.mktemp("fresh-index") / "home"
    return home, corpus.cc.reverie("--home", str(home), "index", "--json").json


def _messages(lines):
    return [ln for ln in lines if ln.get("type") in ("user", "assistant")]


def _user_texts(lines):
    out = []
    for ln in _messages(lines):
        if ln["type"] != "user":
            continue
        content = ln["message"]["content"]
        out.append(content if isinstance(content, str) else
                   "\n".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"))
    return out


def test_a_print_mode_session_sends_the_prompt_and_writes_its_transcript(corpus):
    cc = corpus.cc
    run = corpus.runs["teach"]
    result = run.json
    assert (result["type"], result["subtype"], result["is_error"], result["result"]) == ("result", "success", False, "OK, done.")
    main = [r for r in corpus.requests["teach"] if r.tool_names]
    assert len(main) == 1
    assert TEACH in main[0].messages_text()
    assert main[0].headers["x-api-key"] == "[set]"   # the log never holds the key
    files = [p for p in cc.transcripts() if p.stem == corpus.sessions["teach"]]
    assert len(files) == 1
    lines = cc.lines(corpus.sessions["teach"])
    assert {ln.get("sessionId") for ln in lines if "sessionId" in ln} == {corpus.sessions["teach"]}
    msgs = _messages(lines)
    assert [m["type"] for m in msgs] == ["user", "assistant"]
    assert msgs[0]["message"]["content"] == TEACH
    assert msgs[1]["message"]["content"] == [{"type": "text", "text": "OK, done."}]
    assert msgs[0]["cwd"] == str(cc.project)


def test_continue_and_resume_carry_on_the_same_session_with_its_history(corpus):
    main = corpus.sessions["main"]
    for step in ("continue", "resume", "after_compact"):
        assert corpus.runs[step].session_id == main, step
    # the resumed request carries the earlier turns
    resumed = [r for r in corpus.requests["resume"] if r.tool_names][-1].messages_text()
    for prompt in (ASK, "And should I use npm to add a dependency?", "Which command runs the unit tests with pnpm?"):
        assert prompt in resumed
    user = _user_texts(corpus.cc.lines(main))
    for prompt in (ASK, "And should I use npm to add a dependency?", "Which command runs the unit tests with pnpm?",
                   "Remind me how to run the unit tests with pnpm."):
        assert prompt in user


def test_compact_in_print_mode_writes_a_boundary_and_the_summary(corpus):
    """`claude -p "/compact" --resume ID` compacts in print mode: one compaction request to the
    model, a compact_boundary line, then the summary as an isCompactSummary user line."""
    result = corpus.runs["compact"].json
    assert (result["subtype"], result["is_error"]) == ("success", False)
    compactions = [r for r in corpus.requests["compact"] if "<summary>" in r.last_user_text()]
    assert len(compactions) == 1
    lines = corpus.cc.lines(corpus.sessions["main"])
    boundary = [ln for ln in lines if ln.get("type") == "system" and ln.get("subtype") == "compact_boundary"]
    assert len(boundary) == 1
    assert boundary[0]["compactMetadata"]["trigger"] == "manual"
    summaries = [ln for ln in lines if ln.get("isCompactSummary")]
    assert len(summaries) == 1
    assert corpus.cc.fake.COMPACT_SUMMARY in json.dumps(summaries[0]["message"]["content"])
    # after the compaction the model no longer gets the early turns, only the summary
    after = [r for r in corpus.requests["after_compact"] if r.tool_names][-1].messages_text()
    assert ASK not in after
    assert corpus.cc.fake.COMPACT_SUMMARY in after


def test_a_scripted_bash_and_read_call_run_and_are_recorded(corpus):
    cc = corpus.cc
    lines = cc.lines(corpus.sessions["bash"])
    msgs = _messages(lines)
    uses = [b for m in msgs if m["type"] == "assistant" for b in m["message"]["content"] if b.get("type") == "tool_use"]
    assert [(u["name"], u["input"]) for u in uses] == [
        ("Bash", {"command": "ls -a", "description": "List files"}),
        ("Read", {"file_path": str(cc.project / "README.md")})]
    results = {b["tool_use_id"]: b for m in msgs if m["type"] == "user" and isinstance(m["message"]["content"], list)
               for b in m["message"]["content"] if b.get("type") == "tool_result"}
    bash, read = results[uses[0]["id"]], results[uses[1]["id"]]
    assert not bash.get("is_error") and "README.md" in json.dumps(bash["content"])
    assert "The shop front end." in json.dumps(read["content"])
    # the model got both results back
    last = [r for r in corpus.requests["bash"] if r.tool_names][-1]
    assert last.has_tool_result(uses[0]["id"]) and last.has_tool_result(uses[1]["id"])


def test_a_scripted_agent_call_runs_a_sub_agent_with_its_own_transcript(corpus):
    cc = corpus.cc
    session = corpus.sessions["agent"]
    subs = [p for p in cc.transcripts() if p.parent.name == "subagents" and p.parent.parent.name == session]
    assert len(subs) == 1, [str(p) for p in cc.transcripts()]
    sub_lines = [json.loads(x) for x in subs[0].read_text().splitlines() if x.strip()]
    sub_msgs = _messages(sub_lines)
    assert sub_msgs and all(m["isSidechain"] is True and m["sessionId"] == session for m in sub_msgs)
    assert {m["agentId"] for m in sub_msgs} == {subs[0].stem.removeprefix("agent-")}
    assert sub_msgs[0]["message"]["content"] == "List the files of the project and say what it is."
    # the sub-agent's own model request
    assert any("List the files of the project and say what it is." in r.messages_text()
               for r in corpus.requests["agent"] if r.tool_names)


def _line_key(ln: dict) -> str:
    return str(ln.get("type"))


def test_index_accounts_for_every_line_and_knows_every_kind(corpus, fresh_index, record_measure):
    """A fresh index of everything the real CLI wrote: every line counted once under its type, no
    `unknown:*` kind (real format drift only), nothing rejected; a second run adds nothing."""
    cc = corpus.cc
    fresh, summary = fresh_index
    on_disk = Counter(_line_key(json.loads(x)) for p in cc.transcripts()
                      for x in p.read_text().splitlines() if x.strip())
    total = sum(on_disk.values())
    assert summary["files_seen"] == len(cc.transcripts())
    assert summary["lines_read"] == total
    assert summary["rejected"] == {}
    by_type = Counter()
    for key, outcomes in summary["lines"].items():
        by_type[key.split(":")[0]] += sum(outcomes.values())
    assert by_type == on_disk
    kinds = {k for outcomes in summary["lines"].values() for k in outcomes}
    unknown = sorted(k for k in kinds if k.startswith("unknown:"))
    record_measure("index_line_kinds", lines=total, unknown=unknown,
                   line_types=dict(sorted(on_disk.items())))
    assert unknown == []
    assert summary["messages_added"] > 0
    again = cc.reverie("--home", str(fresh), "index", "--json").json
    assert (again["messages_added"], again["lines_read"]) == (0, 0)


def test_the_index_keeps_the_sessions_the_sub_agent_and_the_compaction(corpus, fresh_index):
    cc = corpus.cc
    fresh, _ = fresh_index
    main = cc.reverie("--home", str(fresh), "show", "conversation", corpus.sessions["main"], "--json").json
    text = json.dumps(main)
    for prompt in (ASK, "And should I use npm to add a dependency?", "Remind me how to run the unit tests with pnpm."):
        assert prompt in text
    kinds = Counter(m["kind"] for m in main["messages"])
    assert kinds["compact_summary"] == 1
    agent = cc.reverie("--home", str(fresh), "show", "conversation", corpus.sessions["agent"], "--json").json
    subs = [p for p in cc.transcripts() if p.parent.name == "subagents" and p.parent.parent.name == corpus.sessions["agent"]]
    sub = [m for m in agent["messages"] if m["is_sidechain"]]
    assert sub and {m["subagent"] for m in sub} == {subs[0].stem.removeprefix("agent-")}, agent["messages"]
    assert "List the files of the project and say what it is." in json.dumps(sub)
