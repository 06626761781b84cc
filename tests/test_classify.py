"""The offline classifier: categories, correction flag, confidence by signal strength, chatter."""

from __future__ import annotations

import pytest

from consolidate.classify import classify, named_things
from consolidate.passages import Passage


def judge(text, kind="user", previous_reply=""):
    j = classify(Passage(key="k", kind=kind, text=text, conversation="c", message_id=1, timestamp="",
                         previous_reply=previous_reply))
    return (j.category, j.importance, j.correction, j.confidence, j.keep >= 0.5)


@pytest.mark.parametrize("text,kind,prev,expected", [
    ("From now on, always use pnpm instead of npm in this repo.", "user", "", ("preference", 4, False, 1.0, True)),
    ("Remember that the staging db is read-only on weekends.", "user", "", ("preference", 4, False, 1.0, True)),
    ("I prefer small commits with conventional messages.", "user", "", ("preference", 3, False, 0.9, True)),
    ("Don't use mocks for the payment client in integration tests.", "user", "", ("preference", 3, False, 0.9, True)),
    ("No, the staging database is on db-2, not db-1.", "user", "I connected to db-1.", ("correction", 4, True, 0.9, True)),
    ("The root cause was a race in `conftest.py`: the server started before the port was bound; fixed, tests pass now.",
     "assistant", "", ("lesson", 3, False, 0.7, True)),
    ("billing-api depends on ledger-db and writes invoices to s3://acme-invoices.", "user", "", ("fact", 2, False, 0.5, True)),
    ("thanks!", "user", "", ("none", 0, False, 0.5, False)),
    ("Let me check the tests now and see what is failing in the suite.", "assistant", "", ("none", 0, False, 0.5, False)),
    ("Great, looks good to me?", "user", "", ("none", 0, False, 0.5, False)),
])
def test_judgements(text, kind, prev, expected):
    assert judge(text, kind, prev) == expected


def test_same_opening_without_previous_reply_is_no_correction():
    assert judge("No, the staging database is on db-2, not db-1.")[2] is False


def test_named_things_by_pattern():
    text = ("auth-service on mini-lola reads `settings.toml` from /etc/acme/app.yaml, pushes to "
            "github.com/acme/billing-api and s3://acme-invoices via 10.0.0.5 and api.acme.io with Redis")
    assert [(n.name, n.type) for n in named_things(text)] == [
        ("auth-service", "service"), ("mini-lola", "host"), ("settings.toml", "file"), ("/etc/acme/app.yaml", "file"),
        ("acme/billing-api", "repo"), ("acme-invoices", "other"), ("10.0.0.5", "host"), ("api.acme.io", "host"),
        ("Redis", "product")]
    assert [n.name for n in named_things("a follow-up on the built-in e-mail re-run")] == []
    assert [n.name for n in named_things("talk to ledgerd about it", {"ledgerd": "service"})] == ["ledgerd"]
