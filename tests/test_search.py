"""`reverie search`: cards first, then raw history with dates and conversation ids."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from reverie.consolidate.commands import build_cli
from reverie.consolidate.paths import secrets_dir
from reverie.graph.recall import MARKER
from reverie.redact.memory import SecretMemory
from test_recall import Store


@pytest.fixture
def store(reverie_home):
    s = Store(reverie_home)
    s.active = s.card("The billing webhooks retry three times with backoff.", sessions=2,
                      said_at="2026-01-12T09:00:00Z")
    s.faded = s.card("Billing webhooks once retried forever.", status="faded", said_at="2025-10-01T09:00:00Z")
    s.card("Unrelated: the logo is teal.")
    with s.conn:
        s.conn.execute("INSERT INTO conversations(id, title, cwd, first_at, last_at, messages) VALUES "
                       "('conv-a', 'webhooks', ?, '2026-01-12T08:00:00Z', '2026-01-12T09:30:00Z', 3)", (s.cwd,))
        rows = [
            (1, "u1", "user", "2026-01-12T08:59:00Z", "text", "Why do billing webhooks retry so often?"),
            (2, "a1", "assistant", "2026-01-12T09:00:00Z", "text", "Billing webhooks retry three times with backoff."),
            (3, "u2", "user", "2026-01-12T09:01:00Z", "text",
             f"{MARKER} Your notes nearest this prompt:\n- billing webhooks retry"),
        ]
        # a Codex session in the same folder (one agent per directory, across harnesses)
        s.conn.execute("INSERT INTO conversations(id, title, cwd, first_at, last_at, messages, harness) VALUES "
                       "('conv-x', 'retries', ?, '2026-01-13T08:00:00Z', '2026-01-13T09:30:00Z', 1, 'codex')", (s.cwd,))
        s.conn.execute("INSERT INTO evidence(card_id, conversation, message_from, message_to) VALUES "
                       "(?, 'conv-a', 2, 2), (?, 'conv-x', 4, 4)", (s.active, s.active))
        for mid, uuid, role, ts, btype, text in rows:
            s.conn.execute("INSERT INTO messages(id, conversation, uuid, role, kind, timestamp) "
                           "VALUES (?, 'conv-a', ?, ?, 'message', ?)", (mid, uuid, role, ts))
            s.conn.execute("INSERT INTO blocks(message_id, idx, type, text) VALUES (?, 0, ?, ?)", (mid, btype, text))
        s.conn.execute("INSERT INTO messages(id, conversation, uuid, role, kind, timestamp) "
                       "VALUES (4, 'conv-x', 'x1', 'user', 'message', '2026-01-13T08:01:00Z')")
        s.conn.execute("INSERT INTO blocks(message_id, idx, type, text) VALUES (4, 0, 'text', 'Codex: check the ledger export')")
    yield s
    s.close()


def test_search_json_lists_cards_then_history(store):
    res = CliRunner().invoke(build_cli(), ["search", "billing", "webhooks", "retry", "--agent", store.agent, "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert list(data) == ["agent", "query", "cards", "history"]
    assert data["agent"] == store.agent and data["query"] == "billing webhooks retry"
    assert [(c["id"], c["status"]) for c in data["cards"]] == [(store.active, "active"), (store.faded, "faded")]
    first = {k: v for k, v in data["cards"][0].items() if k != "score"}
    assert first == {"id": store.active, "statement": "The billing webhooks retry three times with backoff.",
                     "category": "fact", "status": "active", "superseded_by": None, "sessions": 2,
                     "date": "2026-01-12", "last_seen": "2026-01-12", "harnesses": ["claude-code", "codex"]}
    assert data["cards"][1]["harnesses"] == []          # no evidence stored for it
    assert [(h["conversation"], h["harness"], h["message_id"], h["at"], h["role"]) for h in data["history"]] == [
        ("conv-a", "claude-code", 1, "2026-01-12T08:59:00Z", "user"),
        ("conv-a", "claude-code", 2, "2026-01-12T09:00:00Z", "assistant")]
    assert data["history"][1]["snippet"] == "[Billing] [webhooks] [retry] three times with backoff."


def test_search_text_output_and_secret_scrub(store, reverie_home):
    secret = "tok-9QmX2vB7LpR4"
    SecretMemory(secrets_dir(reverie_home)).remember([secret])
    store.card(f"Billing webhooks sign requests with {secret}.")

    res = CliRunner().invoke(build_cli(), ["search", "billing webhooks", "--agent", store.agent])

    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert lines[0] == f"Memory of {store.agent} for 'billing webhooks':"
    assert lines[1] == "Cards:"
    assert lines.index("History:") > 3
    assert f"  #{store.faded} [fact, 2025-10-01, faded] Billing webhooks once retried forever." in lines
    assert (f"  #{store.active} [fact, 2026-01-12, 2 sessions, from claude-code+codex] "
            "The billing webhooks retry three times with backoff.") in lines
    assert "  2026-01-12 09:00  conv-a (claude-code)  assistant: [Billing] [webhooks] retry three times with backoff." in lines
    assert secret not in res.output and "sign requests with" in res.output


def test_search_without_agent_uses_the_current_directory_or_names_the_fix(store, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(build_cli(), ["search", "billing"])
    assert res.exit_code == 1 and "pass --agent ID" in res.output


def test_search_with_no_match_says_none(store):
    res = CliRunner().invoke(build_cli(), ["search", "kubernetes", "--agent", store.agent])
    assert res.exit_code == 0
    assert res.output.splitlines()[1:] == ["Cards: none", "History: none"]


def test_a_block_with_injected_memory_matches_by_its_own_words_as_fts_does(store):
    """The user's own words beside an injected memory are matched the way FTS matches them (stems,
    whole tokens): "deploying" finds "deployed"; "db" inside the injected memory finds nothing, even
    though "mongodb" in the user's words contains those letters."""
    from reverie.consolidate.search import search_history

    with store.conn:
        store.conn.execute("INSERT INTO messages(id, conversation, uuid, role, kind, timestamp) "
                           "VALUES (9, 'conv-a', 'u9', 'user', 'message', '2026-01-12T10:00:00Z')")
        store.conn.execute(
            "INSERT INTO blocks(message_id, idx, type, text) VALUES (9, 0, 'text', ?)",
            (f"I deployed the ledger service to mongodb hosts\n<system-reminder>{MARKER} db password "
             "rotation is monthly</system-reminder>",))
    assert [(h["message_id"], h["snippet"]) for h in search_history(store.conn, "deploying ledger")] == [
        (9, "I [deployed] the [ledger] service to mongodb hosts")]
    assert search_history(store.conn, "db") == []
    assert search_history(store.conn, "rotation") == []
