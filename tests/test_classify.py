"""The offline classifier: categories, correction flag, confidence by signal strength, chatter, and
user turns read sentence by sentence (personal facts kept, chit-chat dropped). The chat lines below
are written for these tests (none is taken from a benchmark)."""

from __future__ import annotations

import pytest

from reverie.consolidate.classify import classify, fact_in, named_things, read_statements, speaker_label, split_sentences
from reverie.consolidate.passages import Passage


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


@pytest.mark.parametrize("text,expected", [
    # durable personal facts: events, plans, activities, identity, favourites (kept, with a category)
    ("Priya: I adopted a beagle named Biscuit last March!", ("fact", 2, False, 0.5, True)),
    ("Sam: Thanks, Priya! We're moving to Lisbon in September for my new job.", ("fact", 2, False, 0.5, True)),
    ("Sam: I've been learning the cello for two years now.", ("fact", 2, False, 0.5, True)),
    ("Sam: Just got back from a hiking trip in the Alps with my brother.", ("fact", 2, False, 0.5, True)),
    ("Priya: I'm a nurse at a children's hospital, so weekends are rare for me.", ("fact", 2, False, 0.5, True)),
    ('Priya: My favorite book is "The Hobbit" and I reread it every winter.', ("preference", 3, False, 0.5, True)),
    ("I'm planning to run the Berlin marathon next year.", ("fact", 2, False, 0.5, True)),
    # chit-chat: reactions, compliments, thanks, generic remarks (dropped)
    ("Priya: Wow, that's so cool, Sam! What's next for you?", ("none", 0, False, 0.5, False)),
    ("Sam: You're amazing, keep it up!", ("none", 0, False, 0.5, False)),
    ("Sam: Thanks so much, that means a lot!", ("none", 0, False, 0.5, False)),
    ("Priya: Haha, totally agree. Life is all about balance.", ("none", 0, False, 0.5, False)),
    # "always" in a remark is not a rule; requests to the agent are not memory
    ("It's always inspiring to see people come together.", ("fact", 1, False, 0.5, False)),
    ("Add the retry test and run the suite.", ("none", 0, False, 0.5, False)),
    ("Before you deploy, check the staging logs.", ("none", 0, False, 0.5, False)),
    ("We usually deploy billing-api on Tuesdays after the standup.", ("pattern", 2, False, 0.5, True)),
])
def test_user_turns_facts_kept_chatter_dropped(text, expected):
    assert judge(text) == expected


def test_statements_of_a_mixed_turn():
    # a greeting, a first-person event with a time and a name, a question; the person addressed
    # ("Mel") is not a name in the statements
    st = read_statements("Hey Mel! Good to see you! I went to a pottery class yesterday with Anna. Can you believe it?")
    assert (st.sentences, st.facts, st.specifics, st.chatter, st.questions, st.content_words, st.names, st.likes) == \
        (4, 1, 2.0, 2, 1, 9, ("Anna",), 0)
    st = read_statements("Sam: Thanks, Priya! We're moving to Lisbon in September for my new job. How about you?")
    assert (st.sentences, st.facts, st.specifics, st.chatter, st.questions, st.content_words, st.names, st.likes) == \
        (3, 1, 2.0, 1, 1, 10, ("Lisbon",), 0)


def test_speaker_label_sentences_and_facts():
    assert speaker_label("Mary Ann: I moved to Oslo.") == ("Mary Ann", "I moved to Oslo.")
    assert speaker_label("I moved to Oslo: it was cold.") == (None, "I moved to Oslo: it was cold.")
    assert speaker_label("Note: the deploy runs at noon.") == (None, "Note: the deploy runs at noon.")
    assert split_sentences("Wow! I signed with a new team - so excited; season starts soon. :)") == [
        "Wow!", "I signed with a new team", "so excited", "season starts soon."]
    assert [bool(fact_in(s)) for s in (
        "I signed with a new team", "my sister got married in June", "I'm learning German", "Gonna repaint the shed",
        "I agree", "I appreciated that", "That's awesome", "I think so too", "I love that!")] == [
        True, True, True, True, False, False, False, False, False]


def test_an_answer_to_a_question_is_more_likely_kept():
    """The previous human turn (passage context) asking a question raises the answer's keep over the
    same turn after a statement that uses the same words (so novelty is equal)."""
    from reverie.consolidate.classify import answers_question

    text = "Caroline: It was great, the kids loved the lake."
    alone = Passage(key="user:2", kind="user", text=text, conversation="c", message_id=2, timestamp="")
    asked = Passage(key="user:2", kind="user", text=text, conversation="c", message_id=2, timestamp="",
                    context="Melanie: How was the camping trip?", context_id=1)
    told = Passage(key="user:2", kind="user", text=text, conversation="c", message_id=2, timestamp="",
                   context="Melanie: I went on a camping trip.", context_id=1)
    assert [answers_question(p) for p in (alone, asked, told)] == [False, True, False]
    a, b, c = classify(alone), classify(asked), classify(told)
    assert b.keep > c.keep
    assert (a.category, b.category, c.category) == ("fact", "fact", "fact")


def _user(text, context="", previous_reply=""):
    return Passage(key="user:2", kind="user", text=text, conversation="c", message_id=2, timestamp="",
                   context=context, context_id=1 if context else 0, previous_reply=previous_reply)


def test_content_words_and_novelty():
    from reverie.consolidate.classify import content_words, novelty

    assert content_words("Caroline went hiking; the hikes were long, and I loved this trail!") == {
        "caroline", "went", "hiking", "hike", "long", "loved", "trail"}
    words = content_words("We hiked the Dolomites and the trail was long.")
    assert words == {"hiked", "dolomite", "trail", "long"}
    assert novelty(words, "") == 1.0
    assert novelty(words, "How long was the trail?") == 0.5
    assert novelty(words, "The Dolomites trail was long, they hiked it.") == 0.0
    assert novelty(set(), "anything") == 0.0
    # Letters of any script are words; digits and underscores are not.
    assert content_words("Wir waren in München beim Töpferkurs, room_42 ready") == {
        "waren", "münchen", "beim", "töpferkur", "room", "ready"}


@pytest.mark.parametrize("text", [
    "Tick the box: change `[  ]` to `[x]` in TODO.md when done",
    "I always write `(  )` around it",
    "`   ` and `\t` are both blank",
])
def test_blank_backticked_names_are_no_names(text):
    """A backticked run of punctuation and spaces is no named thing (it once crashed the classifier
    and with it every consolidation of the agent)."""
    assert all(n.name.strip() for n in named_things(text))
    assert classify(_user(text)).keep >= 0.0


def test_opening_a_conversation():
    """A turn nothing was said before opens the conversation; one after another human turn or after the
    agent's reply does not. Opening raises keep, all else equal."""
    from reverie.consolidate.classify import opens_conversation, user_turn_features, USER_TERMS

    text = "Sam: I started a pottery class in Porto last week."
    first, after_turn, after_reply = _user(text), _user(text, context="Priya: Hi Sam!"), _user(text, previous_reply="Hi!")
    assert [opens_conversation(p) for p in (first, after_turn, after_reply)] == [True, False, False]
    assert [user_turn_features(p)[USER_TERMS.index("opens")] for p in (first, after_turn, after_reply)] == [1.0, 0.0, 0.0]
    assert classify(first).keep > classify(after_reply).keep
    assert classify(_user("ok", previous_reply="Done.")).category == "none"


def test_user_turn_features_whole_row():
    from reverie.consolidate.classify import USER_TERMS, USER_WEIGHTS, user_turn_features

    p = _user("Priya: I adopted a beagle named Biscuit last March! Do you have pets?",
              context="Sam: Anything new with you?")
    f = dict(zip(USER_TERMS, (round(v, 3) for v in user_turn_features(p))))
    assert f == {"bias": 1.0, "facts": 1.0, "specifics": 2.0, "log_words": 2.197, "chatter_share": 0.5,
                 "named": 0.0, "cues": 0.0, "correction": 0.0, "short": 0.0, "answers": 1.0, "opens": 0.0,
                 "novelty": 1.0, "asks_back": 1.0, "you_share": 0.083, "log_content": 2.079}
    assert len(USER_WEIGHTS) == len(USER_TERMS)


def test_hyphenated_english_compounds_are_not_entities():
    text = ("I felt so chilled-out and it was a real mood-booster, heart-warming too. auth-service runs on "
            "mini-lola and prod-k8s; billing-api writes to acme-invoices. The kafka-consumer reads from the "
            "order-events topic; docker-compose starts it.")
    assert [n.name for n in named_things(text)] == [
        "auth-service", "mini-lola", "prod-k8s", "billing-api", "acme-invoices", "kafka-consumer", "order-events",
        "docker-compose"]


def test_a_turn_addressed_to_the_agent_is_read_as_coding_work():
    """Issue 13: after an agent reply, approvals and one-off requests are no candidates, rules and
    statements about the project are; a turn among people keeps the conversation reading."""
    from reverie.consolidate.classify import agent_exchange

    def keep(text: str, previous: str = "Done: the branch is merged.") -> tuple[str, bool]:
        p = Passage(key="user:2", kind="user", text=text, conversation="c", message_id=2, timestamp="",
                    previous_reply=previous)
        j = classify(p)
        return j.category, j.keep >= 0.5 and j.category != "none"

    assert keep("yes") == ("none", False)
    assert keep("commit and move on") == ("none", False)
    assert keep("Never amend commits that are already pushed; add a new commit instead.") == ("preference", True)
    assert keep("We moved auth-service off mini-lola, it runs on prod-k8s now.")[1] is True
    chat = Passage(key="user:2", kind="user", text="Caroline: I went to the LGBTQ support group yesterday.",
                   conversation="c", message_id=2, timestamp="", context="Melanie: How are you?", context_id=1)
    assert not agent_exchange(chat) and agent_exchange(Passage(key="user:2", kind="user", text="ok", conversation="c",
                                                               message_id=2, timestamp="", previous_reply="Done."))


def test_a_turn_in_german_is_read_like_one_in_english():
    """The cue words of rules, lessons and approvals have their German forms: a rule and a lesson
    are candidates, an approval and a question are not, as in English."""
    def judged(text: str, kind: str = "user") -> tuple[str, bool]:
        p = Passage(key=f"{kind}:2", kind=kind, text=text, conversation="c", message_id=2, timestamp="",
                    previous_reply="Fertig: der Branch ist gemergt." if kind == "user" else None)
        j = classify(p)
        return j.category, j.keep >= 0.5 and j.category != "none"

    assert judged("Verwende immer pnpm statt npm in diesem Repo, sonst geht der Lockfile kaputt.")[1] is True
    assert judged("Ab jetzt keine manuellen Änderungen an generierten Dateien, die Generierung überschreibt sie.")[1] is True
    assert judged("ja") == ("none", False)
    assert judged("Kannst du mir die Datei zeigen?")[1] is False
    assert judged("Das Problem war, dass Port 8080 schon belegt ist; der Dienst läuft deshalb auf 3001.",
                  "assistant")[1] is True
