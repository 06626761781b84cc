"""Passages: noise stripped, one passage per exchange part, sizes as documented."""

from __future__ import annotations

from reverie.consolidate.passages import (CONTEXT_MAX, PARAGRAPH_MAX, USER_MAX, Msg, cut_passages, paragraphs,
                                  strip_noise)


def test_noise_tags_markers_and_code_are_stripped():
    text = ("<system-reminder>remember the todo list</system-reminder>Deploy to staging first."
            "<command-name>/mcp</command-name><local-command-stdout>ok</local-command-stdout>\n"
            "[Request interrupted by user]")
    assert strip_noise(text) == "Deploy to staging first."
    assert paragraphs("Intro paragraph here.\n\n```python\nx = 1\n```\n\n## Heading\n| a | b |\n\n- one\n- two") == [
        "Intro paragraph here.", "- one - two"]


def test_cut_passages_kinds_context_and_skips():
    long_para = "The billing-api stores invoices in acme-invoices because retention rules say so. " * 20
    msgs = [
        Msg(1, "user", texts=["<task-notification>job 3 done</task-notification>"]),
        Msg(2, "user", texts=["Why do exports fail for big invoices? " + "x" * 2000]),
        Msg(3, "assistant", texts=["Let me look.", ]),
        Msg(4, "user", kind="tool_result", has_tool_result=True),
        Msg(5, "assistant", texts=["Short.\n\nThe root cause is the nginx proxy_read_timeout of 30s on the gateway.\n\n"
                                   "```\nproxy_read_timeout 30s;\n```\n\n" + long_para]),
        Msg(6, "user", texts=["[reverie memory] standing decisions\n- use pnpm"]),
        Msg(7, "assistant", texts=["A sub-agent paragraph that is long enough to count as a passage here."], is_sidechain=True),
        Msg(8, "user", kind="compact_summary", texts=["Summary of the earlier work: we moved PDF rendering to the job queue for good."]),
        Msg(9, "user", kind="meta", texts=["Caveat: expansion"]),
    ]
    cut = cut_passages("c", msgs)
    assert [(p.key, p.kind, p.exchange) for p in cut.passages] == [
        ("user:2", "user", 2), ("assistant:5.1", "assistant", 2), ("assistant:5.2", "assistant", 2),
        ("report:7.0", "report", 2), ("summary:8.0", "summary", 2)]
    # A sub-agent's (sidechain) conclusions are report passages (issue 13); its prompts are not.
    user, a1, a2, side, summary = cut.passages
    assert user.clipped and len(user.text) <= USER_MAX + 1 and user.original_size > USER_MAX
    assert a1.text == "The root cause is the nginx proxy_read_timeout of 30s on the gateway."
    assert a1.context.startswith("Why do exports fail for big invoices?") and len(a1.context) <= CONTEXT_MAX + 1
    assert a2.clipped and len(a2.text) <= PARAGRAPH_MAX + 1
    assert "proxy_read_timeout 30s;" not in " ".join(p.text for p in cut.passages)
    assert cut.skipped == {"noise": 1, "tool_result": 1, "short_paragraph": 2, "injected": 1, "meta": 1}


def test_after_id_gives_context_without_repeating_passages():
    msgs = [Msg(1, "user", texts=["Set up the dev environment for billing-api please."]),
            Msg(2, "assistant", texts=["I connected to db-1 for the staging data as the README suggests."]),
            Msg(3, "user", texts=["No, the staging database is on db-2, not db-1."])]
    cut = cut_passages("c", msgs, after_id=2)
    assert [(p.key, p.previous_reply) for p in cut.passages] == [
        ("user:3", "I connected to db-1 for the staging data as the README suggests.")]


def test_a_human_turn_right_after_another_carries_it_as_context():
    """Pasted chats / dialogues: a turn that follows a human turn with no agent reply between gets
    that turn as context (tail-clipped, speaker label kept); after an agent reply it gets none."""
    long_q = "Melanie: " + "I spent the whole weekend painting the lake again. " * 10 + "How was the camping trip?"
    msgs = [
        Msg(1, "user", texts=[long_q]),
        Msg(2, "user", texts=["Caroline: Great, we saw the Perseids!"]),
        Msg(3, "assistant", texts=["Noted, that sounds like a good trip for the two of you, and a nice memory."]),
        Msg(4, "user", texts=["Deploy it to staging."]),
        Msg(5, "assistant", texts=[]),
        Msg(6, "user", kind="tool_result", has_tool_result=True),
        Msg(7, "user", texts=["Also bump the version."]),
    ]
    got = [(p.key, p.context, p.context_id, p.previous_reply) for p in cut_passages("c", msgs).passages]
    first = got[1][1]
    assert first.startswith("Melanie: …") and first.endswith("How was the camping trip?") and len(first) <= CONTEXT_MAX
    assert got == [
        ("user:1", "", 0, ""),
        ("user:2", first, 1, ""),
        ("assistant:3.0", "Caroline: Great, we saw the Perseids!", 0, ""),
        ("user:4", "", 0, "Noted, that sounds like a good trip for the two of you, and a nice memory."),
        ("user:7", "", 0, "Noted, that sounds like a good trip for the two of you, and a nice memory."),
    ]


def test_tool_results_that_carry_knowledge_become_passages_once():
    """Issue 13: the user's answers, docs/config files the agent read (whole, line numbers off, once),
    a sub-agent's report and a failed command reach the classifier; other tool output does not."""
    from reverie.consolidate.passages import is_narration

    read_claude = ("Read", "file_path: /repo/CLAUDE.md", False, "     1\u2192# Rules\n     2\u2192Never edit files under gen/.")
    msgs = [
        Msg(1, "user", texts=["Set up the release job for billing-api."]),
        Msg(2, "user", kind="tool_result", has_tool_result=True, tool_results=[
            ("AskUserQuestion", "", False, 'User has answered your questions: "Which registry?"="GitHub Packages". '
                                           "You can now continue with the user's answers in mind."),
            read_claude,
            ("Read", "file_path: /repo/src/app.ts", False, "     1\u2192export const x = 1;"),
            ("Bash", "command: git push origin main", True, "remote: error: GH013: Changes must be made through a pull request."),
            ("Bash", "command: ls", False, "a b c"),
        ]),
        Msg(3, "user", kind="tool_result", has_tool_result=True, tool_results=[
            read_claude,
            ("Task", "description: survey", False, "The billing-api reads its config from config/prod.toml at start."),
        ]),
    ]
    cut = cut_passages("c", msgs)
    assert [(p.key, p.kind, p.text, p.context) for p in cut.passages] == [
        ("user:1", "user", "Set up the release job for billing-api.", ""),
        ("answer:2.0", "answer", '"Which registry?"="GitHub Packages".', ""),
        ("file:2.1", "file", "/repo/CLAUDE.md:\n# Rules\nNever edit files under gen/.", "/repo/CLAUDE.md"),
        ("error:2.3", "error", "$ git push origin main remote: error: GH013: Changes must be made through a pull request.",
         "git push origin main"),
        ("report:3.1.0", "report", "The billing-api reads its config from config/prod.toml at start.", "")]
    assert is_narration("Let me check the config first.") and is_narration("Want me to delete the branch?")
    assert not is_narration("Let me note: the build requires Docker because proto generation runs in a container.")


def test_final_answers_give_each_exchange_its_last_reply_when_no_candidate_holds_it():
    from reverie.consolidate.passages import FINAL_ANSWER_MAX, Passage, final_answers

    def para(key, mid, exchange, text, kind="assistant"):
        return Passage(key=key, kind=kind, text=text, conversation="c", message_id=mid, timestamp="",
                       exchange=exchange)

    passages = [para("user:1", 1, 1, "Set up the deploy job.", kind="user"),
                para("assistant:2.0", 2, 1, "First reply."),
                para("assistant:4.0", 4, 1, "The deploy job runs on the blue runners."),
                para("assistant:4.1", 4, 1, "It needs the DEPLOY_ENV variable."),
                para("user:5", 5, 5, "Now the docs.", kind="user"),
                para("assistant:6.0", 6, 5, "The docs build with mkdocs."),
                para("user:7", 7, 7, "And the release.", kind="user"),
                para("assistant:8.0", 8, 7, "x" * 2000)]
    assert final_answers(passages, {"user:1", "assistant:6.0", "user:7"}, {1, 5, 7}) == {
        1: "The deploy job runs on the blue runners.\n\nIt needs the DEPLOY_ENV variable.",
        7: "x" * FINAL_ANSWER_MAX + "\u2026"}
    assert final_answers(passages, set(), {5}) == {5: "The docs build with mkdocs."}
    many = [para(f"assistant:{i}.0", i, i, "abcdef"[i - 10] * 790) for i in range(10, 16)]
    assert sorted(final_answers(many, set(), set(range(10, 16)))) == [10, 11, 12, 13, 14]   # 5 x 790 <= 4000


def test_the_model_prompt_gives_an_exchanges_final_answer_after_its_passages():
    from reverie.consolidate.classify import Judgement
    from reverie.consolidate.passages import Passage
    from reverie.consolidate.writers.base import Candidate, WriteRequest
    from reverie.consolidate.writers.prompts import passages_block

    j = Judgement(keep=0.9, category="preference", importance=3, correction=False, confidence=0.8)
    user = Passage(key="user:1", kind="user", text="From now on use pnpm, not npm.", conversation="c",
                   message_id=1, timestamp="", exchange=1)
    other = Passage(key="user:5", kind="user", text="Never push to main.", conversation="c", message_id=5,
                    timestamp="", exchange=5)
    req = WriteRequest("c:0", "demo", "c", [Candidate("P1", user, j), Candidate("P2", other, j)],
                       answers={1: "Switched the lockfile: pnpm-lock.yaml replaces package-lock.json."})
    assert passages_block(req) == (
        "[P1] user\n  From now on use pnpm, not npm.\n"
        "(the agent's final answer in this exchange, context only, not a passage to cite:)\n"
        "  Switched the lockfile: pnpm-lock.yaml replaces package-lock.json.\n"
        "[P2] user\n  Never push to main.")


def test_a_long_answer_is_kept_to_its_own_limit_not_a_final_answers():
    """The user's answers are clipped at `ANSWER_MAX`; `FINAL_ANSWER_MAX` (the writers' view of an
    agent's final answer) is a limit of its own."""
    from reverie.consolidate.passages import ANSWER_MAX, FINAL_ANSWER_MAX

    answer = '"Which conventions?"="' + "keep every migration reversible; " * 40 + '"'
    msgs = [Msg(1, "user", texts=["Set up the migrations."]),
            Msg(2, "user", kind="tool_result", has_tool_result=True, tool_results=[
                ("AskUserQuestion", "", False, "User has answered your questions: " + answer)])]
    [_, got] = cut_passages("c", msgs).passages
    assert FINAL_ANSWER_MAX < len(answer) <= ANSWER_MAX and (got.kind, got.text) == ("answer", answer)
