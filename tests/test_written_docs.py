"""What an agent writes into a documentation file (issue 13): the readers keep it with the call
(Claude Code Write/Edit/MultiEdit, Gemini write_file/replace, Codex apply_patch), never the content of
a code or config file; consolidation cuts it into a ``written`` passage that comes from the message
that made the call; the classifier and the offline writer read it like a sub-agent's report, and an
instruction file by its strongest rule."""

from __future__ import annotations

import random
import sqlite3

from secret_values import generators
from transcripts import line, write

from reverie.consolidate.classify import classify
from reverie.consolidate.index import index_all
from reverie.consolidate.passages import Msg, cut_passages, load_messages
from reverie.consolidate.paths import agent_db_path
from reverie.consolidate.writers.offline_coding import statement_for
from reverie.sources import codex, gemini
from reverie.sources.claude_code import render_tool_input
from reverie.sources.render import written_doc

RULES = "# Conventions\n\nNever edit files under gen/ by hand: proto generation rewrites them.\n| a | b |"


def test_claude_code_keeps_what_is_written_into_docs_only():
    assert render_tool_input("Write", {"file_path": "/r/CONVENTIONS.md", "content": RULES}) == (
        f"file_path: /r/CONVENTIONS.md\ncontent: {RULES}")
    assert render_tool_input("Edit", {"file_path": "/r/README.md", "old_string": "npm",
                                      "new_string": "Use pnpm, not npm."}) == (
        "file_path: /r/README.md\ncontent: Use pnpm, not npm.")
    assert render_tool_input("MultiEdit", {"file_path": "/r/docs/setup.rst", "edits": [
        {"old_string": "a", "new_string": "Run make proto first."}, {"old_string": "b", "new_string": "It needs Docker."},
        "not an edit"]}) == "file_path: /r/docs/setup.rst\ncontent: Run make proto first.\n\nIt needs Docker."
    # code, config and data files keep only their path, as before
    assert render_tool_input("Write", {"file_path": "/r/src/app.ts", "content": "export const x = 1;"}) == (
        "file_path: /r/src/app.ts")
    assert render_tool_input("Write", {"file_path": "/r/requirements.txt", "content": "pytest>=8"}) == (
        "file_path: /r/requirements.txt")
    assert render_tool_input("Read", {"file_path": "/r/README.md", "content": "x"}) == "file_path: /r/README.md"
    assert render_tool_input("Write", {"file_path": "/r/NOTES.md", "content": "  \n"}) == "file_path: /r/NOTES.md"
    assert written_doc(None, ["x"]) == "" and written_doc("/r/a.md", [None, 3]) == ""


def test_gemini_and_codex_keep_what_is_written_into_docs():
    assert gemini.tool_input("write_file", {"file_path": "/r/GEMINI.md", "content": "Prefer list over tree."}) == (
        "file_path: /r/GEMINI.md\ncontent: Prefer list over tree.")
    assert gemini.tool_input("replace", {"file_path": "/r/x.py", "new_string": "y = 2"}) == "file_path: /r/x.py"
    patch = ("*** Begin Patch\n*** Update File: README.md\n@@\n-old line\n+Proto generation needs Docker.\n"
             "*** Add File: src/b.py\n+print(1)\n*** Add File: docs/NOTES.md\n+Staging runs on fly.io.\n*** End Patch")
    assert codex._patch_files(patch) == (
        "update: README.md\nadd: src/b.py\nadd: docs/NOTES.md\nfile_path: README.md\n"
        "content: Proto generation needs Docker.\nfile_path: docs/NOTES.md\ncontent: Staging runs on fly.io.")
    assert codex._patch_files("*** Begin Patch\n*** Update File: src/a.py\n+x = 1\n*** End Patch") == "update: src/a.py"


def test_a_doc_write_becomes_a_written_passage_of_the_calling_message():
    given = f"file_path: /r/CONVENTIONS.md\ncontent: {RULES}"
    msgs = [
        Msg(1, "user", texts=["Write down the conventions of this repo."]),
        Msg(2, "user", kind="tool_result", has_tool_result=True, call_messages={0: 1, 1: 1, 2: 1},
            tool_results=[("Write", given, False, "File created successfully at: /r/CONVENTIONS.md"),
                          ("Write", given, False, "File created successfully"),            # the same text: once
                          ("Edit", "file_path: /r/README.md\ncontent: Use pnpm.", True, "old_string not found")]),
        Msg(3, "user", kind="tool_result", has_tool_result=True,
            tool_results=[("Write", "file_path: /r/src/app.ts", False, "File created")]),
    ]
    cut = cut_passages("c", msgs)
    assert [(p.key, p.kind, p.text, p.message_id, p.context, p.exchange) for p in cut.passages] == [
        ("user:1", "user", "Write down the conventions of this repo.", 1, "", 1),
        ("written:2.0", "written", f"/r/CONVENTIONS.md:\n{RULES}", 1, "/r/CONVENTIONS.md", 1),
    ]
    written = cut.passages[1]
    assert classify(written).keep >= 0.65
    assert statement_for(written) == (
        "CONVENTIONS.md: Never edit files under gen/ by hand: proto generation rewrites them.",
        "Never edit files under gen/ by hand: proto generation rewrites them.")


def test_a_plan_written_by_the_agent_gives_its_best_sentence_or_nothing():
    plan = Msg(2, "user", kind="tool_result", has_tool_result=True, tool_results=[(
        "Write", "file_path: /r/.planning/STATE.md\ncontent: # State\n\n| Phase | Status |\n"
        "The billing-api reads its config from `config/prod.toml` at start, because the env is not set in CI.\n"
        "Phase 2 complete.", False, "ok")])
    status = Msg(3, "user", kind="tool_result", has_tool_result=True, tool_results=[(
        "Write", "file_path: /r/.planning/NEXT.md\ncontent: # Next\n\nPhase 3 is in progress.\nAll green.", False, "ok")])
    cut = cut_passages("c", [plan, status])
    assert [p.message_id for p in cut.passages] == [2, 3]   # no call loaded: the result's message
    got = statement_for(cut.passages[0])
    assert got is not None and got[0].startswith("The billing-api reads its config from `config/prod.toml`")
    assert statement_for(cut.passages[1]) is None


def test_load_messages_pairs_a_result_with_the_message_of_its_call(tmp_path):
    conn = sqlite3.connect(tmp_path / "x.db")
    conn.executescript(
        "CREATE TABLE messages (id INTEGER PRIMARY KEY, conversation TEXT, role TEXT, kind TEXT, timestamp TEXT,"
        " is_sidechain INTEGER, uuid TEXT);"
        "CREATE TABLE blocks (message_id INTEGER, idx INTEGER, type TEXT, text TEXT, tool_name TEXT,"
        " tool_use_id TEXT, is_error INTEGER);")
    conn.executemany("INSERT INTO messages VALUES (?, 'c', ?, ?, '', 0, ?)",
                     [(1, "assistant", "message", "u1"), (2, "user", "tool_result", "u2")])
    conn.executemany("INSERT INTO blocks VALUES (?, ?, ?, ?, ?, ?, ?)", [
        (1, 0, "tool_use", "file_path: /r/README.md\ncontent: Use pnpm, not npm.", "Edit", "t1", 0),
        (2, 0, "tool_result", "ok", "Edit", "t1", 0)])
    msgs = load_messages(conn, "c")
    assert (msgs[1].tool_results, msgs[1].call_messages) == (
        [("Edit", "file_path: /r/README.md\ncontent: Use pnpm, not npm.", False, "ok")], {0: 1})


def test_what_is_written_into_a_doc_is_indexed_redacted(tmp_path, reverie_home):
    """The kept content goes through `redact/` like every other block: a password written into
    NOTES.md reaches no byte under the home, and the rest of the note is stored."""
    _, pw = generators(random.Random(1313))
    secret = pw()
    note = f"Staging database: DB_PASSWORD={secret}\nProto generation needs Docker."
    projects = tmp_path / "projects"
    write(projects / "-home-dev-shop" / "s-1.jsonl",
          line("user", "u1", "write the setup notes"),
          line("assistant", "a1", [{"type": "tool_use", "id": "t1", "name": "Write",
                                    "input": {"file_path": "/home/dev/shop/NOTES.md", "content": note}}], parent="u1"),
          line("user", "r1", [{"type": "tool_result", "tool_use_id": "t1", "content": "File created"}], parent="a1"))
    index_all(reverie_home, projects)
    for path in reverie_home.rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path
    conn = sqlite3.connect(agent_db_path(reverie_home, "shop"))
    assert conn.execute("SELECT text FROM blocks WHERE type = 'tool_use'").fetchall() == [
        ("file_path: /home/dev/shop/NOTES.md\ncontent: Staging database: DB_PASSWORD=[REDACTED:password]\n"
         "Proto generation needs Docker.",)]


def test_a_gemini_message_with_a_doc_write_keeps_its_own_paragraphs():
    """Gemini CLI keeps a call's result in the assistant message that made it: the write gives a
    `written` passage and the message's own text its paragraphs; `absolute_path` names the file."""
    fact = "The billing-api reads its config from `config/prod.toml` at start, because CI sets no env."
    msg = Msg(2, "assistant", texts=[fact], tool_results=[
        ("write_file", "absolute_path: /r/NOTES.md\ncontent: Proto generation needs Docker running.", False, "ok")])
    cut = cut_passages("c", [Msg(1, "user", texts=["Write down what you found."]), msg])
    assert [(p.key, p.kind, p.text, p.message_id, p.read_at) for p in cut.passages] == [
        ("user:1", "user", "Write down what you found.", 1, 0),
        ("written:2.0", "written", "/r/NOTES.md:\nProto generation needs Docker running.", 2, 2),
        ("assistant:2.0", "assistant", fact, 2, 0)]


def test_stretches_close_where_passages_were_cut_not_at_the_call_they_name():
    """A write's passage names the call's message but is cut at its result, after later calls'
    results: a stretch that closes before it still covers every message its passages were cut at,
    so a resumed run never cuts them again."""
    from reverie.consolidate.classify import Judgement
    from reverie.consolidate.passages import Passage
    from reverie.consolidate.pipeline import SEGMENT_HARD_CANDIDATES, plan_conversation

    def p(key, kind, mid, read_at=0):
        return Passage(key=key, kind=kind, text="x", conversation="c", message_id=mid, timestamp="",
                       exchange=1, read_at=read_at)

    kept = Judgement(keep=0.9, category="fact", importance=2, correction=False, confidence=0.5)
    passages = [p("user:1", "user", 1)] + [p(f"file:13.{i}", "file", 13) for i in range(SEGMENT_HARD_CANDIDATES - 1)]
    passages += [p("written:14.0", "written", 12, read_at=14), p("user:15", "user", 15)]
    segments = plan_conversation("c", passages, [kept] * len(passages), 15, 0.5)
    assert [(s.end_id, [x.key for x in s.passages][-1]) for s in segments] == [
        (13, f"file:13.{SEGMENT_HARD_CANDIDATES - 2}"), (15, "user:15")]


def test_the_model_prompt_names_a_write_by_its_file_not_as_the_users_turn():
    from reverie.consolidate.writers.base import Candidate, WriteRequest
    from reverie.consolidate.writers.prompts import passages_block

    written = cut_passages("c", [Msg(2, "user", kind="tool_result", has_tool_result=True, call_messages={0: 1},
                                     tool_results=[("Write", f"file_path: /r/CONVENTIONS.md\ncontent: {RULES}",
                                                    False, "ok")])]).passages[0]
    written.exchange = 1
    req = WriteRequest("c:0", "demo", "c", [Candidate("P1", written, classify(written))])
    assert passages_block(req) == (
        "[P1] written\n  (what the agent wrote into /r/CONVENTIONS.md)\n  /r/CONVENTIONS.md:\n  "
        + RULES.replace("\n", "\n  "))


def test_a_codex_patch_into_two_docs_gives_a_written_passage_per_doc():
    patch = ("*** Begin Patch\n*** Update File: README.md\n@@\n+Proto generation needs Docker.\n"
             "*** Add File: src/b.py\n+print(1)\n*** Add File: docs/NOTES.md\n+Staging runs on fly.io.\n"
             "*** Update File: README.md\n@@\n+Run make proto before make test.\n*** End Patch")
    given = codex._patch_files(patch)
    assert given == ("update: README.md\nadd: src/b.py\nadd: docs/NOTES.md\nupdate: README.md\n"
                     "file_path: README.md\ncontent: Proto generation needs Docker.\n\nRun make proto before make test.\n"
                     "file_path: docs/NOTES.md\ncontent: Staging runs on fly.io.")
    msgs = [Msg(1, "user", texts=["Write the setup notes down."]),
            Msg(2, "user", kind="tool_result", has_tool_result=True, call_messages={0: 1},
                tool_results=[("apply_patch", given, False, "")])]     # a write's result may be empty
    cut = cut_passages("c", msgs)
    assert [(p.key, p.kind, p.text, p.message_id, p.context) for p in cut.passages] == [
        ("user:1", "user", "Write the setup notes down.", 1, ""),
        ("written:2.0", "written", "README.md:\nProto generation needs Docker.\n\nRun make proto before make test.", 1,
         "README.md"),
        ("written:2.0.1", "written", "docs/NOTES.md:\nStaging runs on fly.io.", 1, "docs/NOTES.md"),
    ]


def test_a_path_line_inside_written_text_is_text_and_an_interrupted_write_is_none():
    body = "Hook input looks like this:\nfile_path: /x/y.md\ncontent: example"
    msgs = [Msg(1, "user", texts=["Document the hook input."]),
            Msg(2, "user", kind="tool_result", has_tool_result=True, call_messages={0: 1, 1: 1},
                tool_results=[("Write", f"file_path: /r/HOOKS.md\ncontent: {body}", False, "File created"),
                              ("Write", "file_path: /r/NOTES.md\ncontent: Staging runs on fly.io.", False,
                               "[Request interrupted by user for tool use]")])]
    assert [(p.key, p.text) for p in cut_passages("c", msgs).passages] == [
        ("user:1", "Document the hook input."), ("written:2.0", f"/r/HOOKS.md:\n{body}")]
