"""The offline card writer: self-contained statements (speaker labels, the user's first person),
entities, evidence, and one call per exchange."""

from __future__ import annotations

import pytest

from reverie.consolidate.classify import Judgement, classify
from reverie.consolidate.passages import Passage
from reverie.consolidate.pipeline import plan_conversation
from reverie.consolidate.writers.base import Candidate, WriteRequest
from reverie.consolidate.classify import speaker_label
from reverie.consolidate.writers.offline import (
    OfflineWriter,
    key_sentence,
    name_speaker,
    question_topic,
    self_contained,
    strip_address,
    user_point,
    with_question,
)


def _passage(key: str, text: str, *, kind: str = "user", message_id: int = 1, exchange: int = 1,
             context: str = "") -> Passage:
    return Passage(key=key, kind=kind, text=text, conversation="c", message_id=message_id,
                   timestamp="2026-01-10T10:00:00Z", context=context, exchange=exchange)


def _request(*passages: Passage) -> WriteRequest:
    return WriteRequest("c:0", "demo", "c", [Candidate(f"P{i + 1}", p, classify(p)) for i, p in enumerate(passages)])


@pytest.mark.parametrize("text, expected", [
    ("I went to a poetry reading last Fri.", "Ann went to a poetry reading last Fri."),
    ("I love horses and my kids love them too.", "Ann loves horses and their kids love them too."),
    ("I'm so glad we can always be there for each other.", "Ann is so glad they can always be there for each other."),
    ("I really enjoy painting; it helps me relax.", "Ann really enjoys painting; it helps them relax."),
    ("I am tired. I was out late and my dog woke me.", "Ann is tired. They were out late and their dog woke them."),
    ("We don't go often, usually once a year.", "Ann doesn't go often, usually once a year."),
    ("My sister and I try to go running.", "Ann's sister and they try to go running."),
    ("Last month I got hurt and had to stop.", "Last month Ann got hurt and had to stop."),
])
def test_a_speakers_first_person_becomes_their_name_then_they(text, expected):
    assert name_speaker(text, "Ann") == expected


def test_speaker_labels_are_names_not_headings():
    assert speaker_label("Caroline: I went to a support group.") == ("Caroline", "I went to a support group.")
    assert speaker_label("Mary Ann: I x") == ("Mary Ann", "I x")
    for text in ("Note: always run the linter.", "Context: we use pnpm.", "Update: the deploy is fixed.",
                 "TODO: add tests", "auth-service: runs on prod-k8s", "No colon here"):
        assert speaker_label(text) == (None, text)


@pytest.mark.parametrize("text, expected", [
    ("I prefer small, focused commits.", "Prefer small, focused commits."),
    ("We decided to use pnpm instead of npm because installs are faster.",
     "Use pnpm instead of npm because installs are faster."),
    ("we decided on remote state in acme-tfstate", "Decided on remote state in acme-tfstate."),
    ("we moved auth-service off mini-lola, it runs on prod-k8s now", "Moved auth-service off mini-lola, it runs on prod-k8s now."),
    ("I always run the tests before pushing.", "Always run the tests before pushing."),
    ("We're using uv for virtualenvs.", "Use uv for virtualenvs."),
])
def test_the_users_first_person_is_stated_as_the_point(text, expected):
    assert self_contained(text, speaker=None, correction=False, context_named=[], user=True) == expected
    assert "user" not in expected.lower()


def test_user_point_leaves_other_sentences_alone():
    assert user_point("This repo uses pnpm.") == "This repo uses pnpm."


def test_a_coding_turn_keeps_its_key_sentence_and_skips_requests_in_first_person():
    text = "Great. One more thing: I prefer small, focused commits, never one big commit at the end."
    assert key_sentence(text, {}) == "One more thing: I prefer small, focused commits, never one big commit at the end."
    # The next sentence joins only when it refers back or gives the reason.
    text = "We decided on remote state in acme-tfstate. Also: always tag resources with team=payments."
    assert key_sentence(text, {}) == "We decided on remote state in acme-tfstate."
    text = "The deploy uses blue-green. It keeps the old pods for ten minutes."
    assert key_sentence(text, {}) == "The deploy uses blue-green. It keeps the old pods for ten minutes."


def test_a_speakers_turn_is_their_account_without_greetings_questions_or_vocatives():
    text = ("Wow, Mel! Thanks! I painted this after I visited a LGBTQ center. I wanted to capture everyone's unity "
            "and strength. How are the kids?")
    assert key_sentence(text, {}, speaker=True, people={"Mel"}) == (
        "I painted this after I visited a LGBTQ center. I wanted to capture everyone's unity and strength.")


def test_writer_names_the_speaker_links_them_and_cites_the_turn():
    writer = OfflineWriter()
    p = _passage("user:7", "Caroline: Thanks, Melanie! I went to a LGBTQ support group yesterday and it was so powerful.",
                 message_id=7, exchange=7)
    result = writer.write_one(_request(p))
    (card,) = result.cards
    assert card.statement == "Caroline went to a LGBTQ support group yesterday and it was so powerful."
    assert [(e.name, e.type) for e in card.entities] == [("Caroline", "person"), ("LGBTQ", "other")]
    assert card.evidence == ["P1"]


def test_a_speakers_statement_that_does_not_name_them_says_whose_account_it_is():
    writer = OfflineWriter()
    p = _passage("user:3", "Melanie: Those times are always special to spend together with the kids.", message_id=3)
    (card,) = writer.write_one(_request(p)).cards
    assert card.statement == "According to Melanie, those times are always special to spend together with the kids."
    assert card.entities[0].name == "Melanie"


def test_an_assistant_card_that_draws_on_the_request_cites_the_request_too():
    writer = OfflineWriter()
    user = _passage("user:1", "Remember that billing-api runs on prod-k8s because the GPU nodes are cheaper there.",
                    message_id=1, exchange=1)
    reply = _passage("assistant:2.0", "It depends on ledger-db and writes audit events to s3://acme-audit in eu-west-1.",
                     kind="assistant", message_id=2, exchange=1, context=user.text)
    req = _request(user, reply, _passage("user:3", "Never deploy billing-api on Fridays; the on-call rotation is thin.",
                                         message_id=3, exchange=3))
    assert req.max_cards == 1
    req.candidates = req.candidates[1:2]              # the reply alone: nothing to cite with it
    (card,) = writer.write_one(req).cards
    assert card.statement.startswith("billing-api depends on ledger-db")
    assert card.evidence == ["P2"]
    # With the request it answers among the candidates (a weak one here, so the reply gets the card),
    # the card cites both.
    weak = Judgement(keep=0.55, category="fact", importance=1, correction=False, confidence=0.5)
    both = WriteRequest("c:1", "demo", "c", [Candidate("P1", user, weak), Candidate("P2", reply, classify(reply))])
    (card,) = writer.write_one(both).cards
    assert card.statement.startswith("billing-api depends on ledger-db") and card.evidence == ["P2", "P1"]


def test_a_statement_that_opens_on_an_unresolved_pronoun_gives_no_card():
    """"Without it, X ..." with nothing to put for "it" is no memory; with the thing named by the
    request it answers, "it" becomes that name."""
    writer = OfflineWriter()
    alone = _passage("written:2.0", "/r/docs/GENERATE.md:\nWithout it, `DocGen` would need to re-analyze the whole "
                     "codebase on every run.", kind="written", message_id=2)
    assert classify(alone).keep >= 0.65
    assert writer.write_one(_request(alone)).cards == []
    reply = _passage("assistant:2.0", "It depends on ledger-db and writes audit events to s3://acme-audit in eu-west-1.",
                     kind="assistant", message_id=2, context="Where does billing-api keep its audit trail?")
    (card,) = writer.write_one(_request(reply)).cards
    assert card.statement.startswith("billing-api depends on ledger-db")


def test_requests_and_narration_in_i_and_you_give_no_card():
    writer = OfflineWriter()
    p = _passage("user:1", "I'm new on billing-api. Set up the dev environment and tell me how it fits together.")
    assert writer.write_one(_request(p)).cards == []


def _judged(kind: str, keep: float) -> Judgement:
    return Judgement(keep=keep, category="fact" if keep else "none", importance=2, correction=False, confidence=0.5)


def test_per_exchange_plan_closes_a_stretch_with_a_candidate_at_the_next_user_turn():
    ps = [_passage("user:1", "a", message_id=1), _passage("assistant:2.0", "b", kind="assistant", message_id=2),
          _passage("user:3", "c", message_id=3), _passage("user:4", "d", message_id=4),
          _passage("assistant:5.0", "e", kind="assistant", message_id=5)]
    js = [_judged("user", 0.9), _judged("assistant", 0.0), _judged("user", 0.0), _judged("user", 0.9),
          _judged("assistant", 0.9)]
    per = plan_conversation("c", ps, js, 6, 0.5, per_exchange=True)
    assert [([p.key for p in s.passages], s.end_id) for s in per] == [
        (["user:1", "assistant:2.0"], 2), (["user:3", "user:4", "assistant:5.0"], 6)]
    assert [([p.key for p in s.passages], s.end_id) for s in plan_conversation("c", ps, js, 6, 0.5)] == [
        (["user:1", "assistant:2.0", "user:3", "user:4", "assistant:5.0"], 6)]
    assert OfflineWriter.call_per_exchange is True


def test_a_list_of_findings_becomes_one_fact_card_with_its_relations():
    text = ("- **Storage**: billing-api stores invoice PDFs in the S3 bucket `acme-invoices` (src/storage/invoices.ts). "
            "- **Auth**: billing-api depends on auth-service; every request's token is validated against AUTH_URL. "
            "- Dependencies are installed with pnpm; `pnpm dev` starts the server.")
    p = _passage("assistant:5.1", text, kind="assistant", message_id=5, exchange=4, context="How does it fit together?")
    req = WriteRequest(id="r", agent="a", conversation="c", candidates=[Candidate("P1", p, classify(p))],
                       known_entities={})
    res = OfflineWriter().write_one(req)
    assert [(c.statement, c.category, c.evidence, [(r.subject, r.verb, r.object, r.holds) for r in c.relations],
             [e.name for e in c.entities]) for c in res.cards] == [(
        "billing-api stores invoice PDFs in the S3 bucket `acme-invoices`; billing-api depends on auth-service.",
        "fact", ["P1"],
        [("billing-api", "stores_data_in", "acme-invoices", True), ("billing-api", "depends_on", "auth-service", True)],
        ["billing-api", "PDFs", "S3", "acme-invoices", "auth-service"])]


def test_an_answer_states_the_question_it_answers_and_cites_it_when_a_candidate():
    q = Passage(key="user:1", kind="user", text="Melanie: I painted the lake on Sunday. How was the camping trip?",
                conversation="c", message_id=1, timestamp="2026-01-10T10:00:00Z", exchange=1)
    a = Passage(key="user:2", kind="user", text="Caroline: Great, we saw the Perseids at Lake Tahoe last weekend.",
                conversation="c", message_id=2, timestamp="2026-01-10T10:00:01Z", exchange=2,
                context=q.text, context_id=1)
    req = WriteRequest(id="r", agent="a", conversation="c",
                       candidates=[Candidate("P1", q, classify(q)), Candidate("P2", a, classify(a))],
                       known_entities={})
    cards = OfflineWriter().write_one(req).cards
    assert [(c.statement, c.evidence) for c in cards] == [
        ('Caroline saw the Perseids at Lake Tahoe last weekend (asked by Melanie: "How was the camping trip?").',
         ["P1", "P2"])]


def test_a_long_question_is_carried_by_its_content_words_and_cited_when_a_candidate():
    q_text = ("Melanie: That bowl is awesome, Caroline! What gave you the idea for all the colors and patterns "
              "on the bowl you made?")
    a = Passage(key="user:2", kind="user",
                text=("Caroline: Thanks, Mel! I'm obsessed with those, so I made something to catch the eye and make "
                      "people smile."),
                conversation="c", message_id=2, timestamp="2026-01-10T10:00:01Z", exchange=2,
                context=q_text, context_id=1)
    q = Passage(key="user:1", kind="user", text=q_text, conversation="c", message_id=1,
                timestamp="2026-01-10T10:00:00Z", exchange=1)
    alone = WriteRequest(id="r", agent="a", conversation="c", candidates=[Candidate("P1", a, classify(a))],
                         known_entities={})
    both = WriteRequest(id="r", agent="a", conversation="c",
                        candidates=[Candidate("P1", q, classify(q)), Candidate("P2", a, classify(a))], known_entities={})
    statement = ("Caroline is obsessed with those, so they made something to catch the eye and make people smile "
                 "(asked by Melanie about gave, idea, colors, patterns, bowl).")
    assert [(c.statement, c.evidence) for c in OfflineWriter().write_one(alone).cards] == [(statement, ["P1"])]
    assert [(c.statement, c.evidence) for c in OfflineWriter().write_one(both).cards] == [(statement, ["P1", "P2"])]


@pytest.mark.parametrize("question, topic", [
    ("What kind of books you got in your library?", ["books", "library"]),
    ("Hey Mel, how did it feel being part of that community?", ["feel", "part", "community"]),
    ("Did you?", []),
])
def test_question_topic_keeps_the_content_words_of_a_question(question, topic):
    assert question_topic(question, {"Mel", "Caroline"}) == topic


def test_with_question_gives_the_whole_question_when_it_fits_else_its_content_words_else_nothing():
    short = "Caroline has lots of kids' books."
    long = " ".join(["word"] * 29) + "."
    longest = " ".join(["word"] * 33) + "."
    ctx = "Melanie: Wow. What kind of books you got in your library, and which ones do the kids read the most?"
    assert with_question(short, "Melanie: What kind of books you got in your library?", set()) == (
        'Caroline has lots of kids\' books (asked by Melanie: "What kind of books you got in your library?").')
    assert with_question(short, ctx, set()) == (
        "Caroline has lots of kids' books (asked by Melanie about books, library, ones, kids, read).")
    assert with_question(long, ctx, set()) == " ".join(["word"] * 29) + " (asked by Melanie about books, library)."
    assert with_question(longest, ctx, set()) == longest
    assert with_question(short, "Melanie: I painted the lake.", set()) == short


def test_a_short_first_person_exclamation_is_part_of_the_account_and_a_spaced_dash_is_an_aside():
    assert key_sentence("Yeah, I play clarinet! Started when I was young. That's so cool!", {}, speaker=True,
                        people=set()) == "I play clarinet! Started when I was young."
    assert key_sentence("So I'm carving out some me-time each day - running, reading, or playing my violin - "
                        "which refreshes me.", {}, speaker=True, people=set()) == (
        "So I'm carving out some me-time each day \u2013 running, reading, or playing my violin \u2013 which "
        "refreshes me.")


def test_vocatives_include_the_short_forms_of_a_speakers_name():
    assert strip_address("Caroline is always here for you, Mel!", {"Melanie", "Caroline"}) == \
        "Caroline is always here for you!"
    assert strip_address("Mela, that looks great.", {"Melanie"}) == "That looks great."
    assert strip_address("Melody is nice.", {"Melanie"}) == "Melody is nice."


def test_an_answer_to_a_question_asked_before_the_askers_last_sentence_carries_it_too():
    q_text = "Melanie: Wow, that's a lovely photo! What did you paint last week? I'd love to see it!"
    a = Passage(key="user:2", kind="user", text="Caroline: I painted a sunset over the lake with bright oranges.",
                conversation="c", message_id=2, timestamp="2026-01-10T10:00:01Z", exchange=2,
                context=q_text, context_id=1)
    far = Passage(key="user:4", kind="user", text="Caroline: I painted a sunset over the lake with bright oranges.",
                  conversation="c", message_id=4, timestamp="2026-01-10T10:00:01Z", exchange=4,
                  context="Melanie: What did you paint? I went to the lake. It was cold. I'd love to go back!",
                  context_id=3)
    cards = [OfflineWriter().write_one(WriteRequest(id="r", agent="a", conversation="c",
                                                    candidates=[Candidate("P1", p, classify(p))])).cards
             for p in (a, far)]
    assert [[(c.statement, c.evidence) for c in cs] for cs in cards] == [
        [('Caroline painted a sunset over the lake with bright oranges (asked by Melanie: "What did you paint '
          'last week?").', ["P1"])],
        [("Caroline painted a sunset over the lake with bright oranges.", ["P1"])]]


def test_coding_statements_are_memory_not_transcript():
    """Issue 13: narration, questions, transient states, fragments, code and one-off requests give
    no card; rules, facts with a named thing and corrections do; the outdated half is dropped."""
    from reverie.consolidate.passages import Passage as P
    from reverie.consolidate.writers.offline_coding import statement_for

    def said(text: str, kind: str = "assistant") -> str | None:
        got = statement_for(P(key=f"{kind}:1", kind=kind, text=text, conversation="c", message_id=1, timestamp="",
                              previous_reply="Done." if kind == "user" else ""))
        return got[0] if got else None

    assert said("Now let me update the `Producer` interface.") is None
    assert said("Should I also update `config.ts`?") is None
    assert said("The DNS is configured correctly.") is None
    assert said("2. Add a new gRPC client") is None
    assert said("`const port = env.PORT ?? 8787;`") is None
    assert said("Lets look at making changes in the public graphql resolver layer", "user") is None
    assert said("Good catch. `mix ash.codegen` migrations are not SQLite-safe because SQLite lacks ALTER COLUMN. "
                "Let me rewrite it.") == "`mix ash.codegen` migrations are not SQLite-safe because SQLite lacks ALTER COLUMN."
    assert said("Never make manual changes to generated files under gen/.", "user") == \
        "Never make manual changes to generated files under gen/."
    assert said("From now on, use pnpm instead of npm in this repo.", "user") == "Use pnpm instead of npm in this repo."
    assert said("The server used port 8787 before, now it listens on port 8080 in the container.") == \
        "The server now listens on port 8080 in the container."
    assert said('"Which mode?"="Interactive (confirm each step)"', "answer") == \
        'The user chose "Interactive (confirm each step)" for: Which mode.'
    # a sentence cut short is a fragment; a number that ends a sentence stays unless it is the next
    # list item's
    assert said("The stats tables `trading_stats_5m` and `trading_stats_1h` all have.") is None
    assert said("The `billing-api` deploy in `deploy.sh` must use Plan A.") == \
        "The `billing-api` deploy in `deploy.sh` must use Plan A."          # "A" is a name, not "a"
    assert said("The heavy LLM work in `tg-ripper` is deferred to Phase 2.") == \
        "The heavy LLM work in `tg-ripper` is deferred to Phase 2."
    assert said("The `ledger-db` service requires Node 18.") == "The `ledger-db` service requires Node 18."
    assert said("The `ledger-db` service requires `pgbouncer` for pooling. 2.") == \
        "The `ledger-db` service requires `pgbouncer` for pooling."


@pytest.mark.parametrize("sentence, verdict", [
    # a fix said in so many words, subject first, is knowledge; "Done, fixed by ..." is narration
    ("Upstream @upstash/redis TypeScript errors resolved with --skipLibCheck.", None),
    ("Okay, fixed by bumping the version of the parser.", "narration"),
    # a participle with its agent is a verb; as an adjective it is not
    ("Phase 19 of the roadmap superseded by Phase 22 in ROADMAP.md.", None),
    ("The required environment variables for the billing service.", "fragment"),
    # a condition, then the main clause, is a rule; a question stays a question
    ("When the schema in schema.prisma changes, the migration must be regenerated.", None),
    ("When does the cache expire, and who owns the job.", "question"),
])
def test_coding_sentences_read_as_memory_or_not(sentence, verdict):
    from reverie.consolidate.writers import offline_coding

    assert offline_coding.acceptable(offline_coding.clean(sentence)) == verdict


@pytest.mark.parametrize("sentence, expected", [
    ("- **ISS-001**: Turbo scanner state tracking bugs", "ISS-001: Turbo scanner state tracking bugs."),
    ("MAX_RETRIES: five attempts is the default", "MAX_RETRIES: five attempts is the default."),
    ("P0: the scanner drops users at chunk boundaries", "The scanner drops users at chunk boundaries."),
    ("**Note:** the port is 1100", "The port is 1100."),
])
def test_a_label_goes_but_a_name_as_the_label_stays(sentence, expected):
    from reverie.consolidate.writers import offline_coding

    assert offline_coding.clean(sentence) == expected


@pytest.mark.parametrize("sentence, verdict", [
    # inline code in backticks is quoted, not pasted: the sentence around it is judged
    ("Under strict mode kv.hset needs the cast `as unknown as Record<string, unknown>` first.", None),
    ("<div class=\"row\"> holds the list of todos in the page.", "code"),
])
def test_quoted_code_is_prose_and_markup_is_code(sentence, verdict):
    from reverie.consolidate.writers import offline_coding

    assert offline_coding.acceptable(offline_coding.clean(sentence)) == verdict


@pytest.mark.parametrize("sentence, gap", [
    # a gap the agent found today: the same session usually closes it
    ("The test config in config/test.exs is missing `secret_key_base`.", True),
    ("The `AnnotationMessageRef` module doesn't exist yet.", True),
    ("The `/export` endpoint of billing-api is not implemented yet.", True),
    ("The `/export` endpoint of billing-api is not yet live.", True),
    # within a condition or a rule, or without "yet", it is lasting knowledge
    ("The build fails when `DATABASE_URL` is missing from the environment.", False),
    ("If `.env` is missing, the app falls back to `config/defaults.toml`.", False),
    ("Never merge a PR whose CI is not yet finished.", False),
    ("Logs of billing-api are not written to disk in production.", False),
    ("The `staging-eu` bucket doesn't exist; deploys go to `stage-eu`.", False),
])
def test_a_gap_found_today_is_transient_but_a_rule_about_one_is_not(sentence, gap):
    from reverie.consolidate.writers import offline_coding

    assert offline_coding.gap_found(sentence) is gap


@pytest.mark.parametrize("sentence, expected", [
    ("Established that this project uses table-rewrite migrations for SQLite.",
     "This project uses table-rewrite migrations for SQLite."),
    ("- SQLite: Confirmed that the port in config/dev.exs is 1100.", "The port in config/dev.exs is 1100."),
    ("I confirmed yes, Claude Code has built-in git automation.", "Claude Code has built-in git automation."),
    ("Good, found that the cache needs redis.", "The cache needs redis."),
    ("Foundation models are slow.", "Foundation models are slow."),
])
def test_how_a_finding_was_reached_goes_the_finding_stays(sentence, expected):
    from reverie.consolidate.writers.offline_coding import clean

    assert clean(sentence) == expected


def test_a_summary_paragraph_gives_its_best_two_points_and_other_passages_one():
    """A compaction summary's paragraph often holds several points; each passes the same checks."""
    from reverie.consolidate.passages import Passage as P
    from reverie.consolidate.writers.offline_coding import statement_for, statements_for

    text = ("5. Problem Solving: - SQLite migration patterns: Established that this project uses table-rewrite "
            "migrations for any column modification SQLite doesn't support natively. Auto-generated migrations "
            "from `mix ash.codegen` should always be reviewed and rewritten for SQLite compatibility. "
            "Now let me run the tests. The `Spotter.Repo` uses SQLite.")

    def passage(kind: str) -> P:
        return P(key=f"{kind}:1", kind=kind, text=text, conversation="c", message_id=1, timestamp="")

    # equally strong: in the order they were said
    both = [("This project uses table-rewrite migrations for any column modification SQLite doesn't support "
             "natively.", "SQLite migration patterns: Established that this project uses table-rewrite "
             "migrations for any column modification SQLite doesn't support natively."),
            ("Auto-generated migrations from `mix ash.codegen` should always be reviewed and rewritten for SQLite "
             "compatibility.", "Auto-generated migrations from `mix ash.codegen` should always be reviewed and "
             "rewritten for SQLite compatibility.")]
    assert statements_for(passage("summary")) == both
    assert statements_for(passage("assistant")) == both[:1]
    assert statement_for(passage("summary")) == both[0]
    assert statements_for(passage("summary"), limit=0) == []

    # the writer turns both into cards citing the passage, within the exchange's cap (one card
    # for up to three candidates, two for four)
    cand = Candidate("P1", passage("summary"), classify(passage("summary")))
    quiet = [P(key=f"assistant:{i}", kind="assistant", text="Now let me run the whole test suite again.",
               conversation="c", message_id=i, timestamp="") for i in (2, 3, 4)]
    others = [Candidate(f"P{p.message_id}", p, classify(p)) for p in quiet]

    def cards(cands: list) -> list:
        got = OfflineWriter().write_one(WriteRequest(id="r", agent="a", conversation="c", candidates=cands)).cards
        return [(c.statement, c.evidence) for c in got]

    assert cards([cand]) == [(both[0][0], ["P1"])]
    assert cards([cand, *others]) == [(s, ["P1"]) for s, _ in both]


def test_a_gap_gives_no_agent_card_while_a_users_rule_about_one_stays():
    from reverie.consolidate.passages import Passage as P
    from reverie.consolidate.writers.offline_coding import statement_for, user_card_ok

    def said(text: str, kind: str) -> str | None:
        got = statement_for(P(key=f"{kind}:1", kind=kind, text=text, conversation="c", message_id=1, timestamp="",
                              previous_reply="Done." if kind == "user" else ""))
        return got[0] if got else None

    assert said("The `staging-eu` bucket doesn't exist yet in the `acme` account.", "assistant") is None
    assert said("The `staging-eu` bucket doesn't exist; deploys go to `stage-eu`.", "assistant") == \
        "The `staging-eu` bucket doesn't exist; deploys go to `stage-eu`."
    assert said("Always fail the build if `LICENSE` is missing.", "user") == "Always fail the build if `LICENSE` is missing."
    assert user_card_ok("Always fail the build if `LICENSE` is missing.", correction=True)


@pytest.mark.parametrize("question, answer, statement", [
    ("What's explicitly NOT in v1?", "Playwright integration",
     "The user chose \"Playwright integration\" for: What's explicitly NOT in v1."),
    ("How do you imagine Topic Mode working?", "Hybrid approach",
     'The user chose "Hybrid approach" for: How do you imagine Topic Mode working.'),
    # how to go on now steers this session, not the project
    ("I detected existing code in this directory. Would you like to map the codebase first?",
     "Map codebase first (Recommended)", None),
    ("How thorough should planning be?", "Standard (Recommended)", None),
    ("Ready to create the roadmap with 8 phases?", "Ask more questions", None),
])
def test_an_answer_is_a_decision_unless_it_only_says_how_to_go_on_now(question, answer, statement):
    from reverie.consolidate.passages import Passage as P
    from reverie.consolidate.writers.offline_coding import statement_for

    got = statement_for(P(key="answer:1", kind="answer", text=f'"{question}"="{answer}"', conversation="c",
                          message_id=1, timestamp=""))
    assert (got[0] if got else None) == statement


def test_a_reports_verdict_on_the_code_is_no_fact_but_its_finding_is():
    from reverie.consolidate.passages import Passage as P
    from reverie.consolidate.writers.offline_coding import statement_for

    def said(text: str, kind: str) -> str | None:
        got = statement_for(P(key=f"{kind}:1", kind=kind, text=text, conversation="c", message_id=1, timestamp=""))
        return got[0] if got else None

    verdict = "The `load-core-context.ts` hook has proper error handling and uses `settings.json` for its paths."
    assert said(verdict, "report") is None
    assert said(verdict, "assistant") == verdict
    finding = "The `capture-judge-verdict.ts` hook stores verdicts in `analytics.db` because the dashboard reads them."
    assert said(finding, "report") == finding
