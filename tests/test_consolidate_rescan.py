"""A secret remembered after indexing (by another process, `reverie redact --remember`, or the
consolidation's own redactor) is gone from every stored byte once a consolidation has run."""


from reverie.consolidate.index import index_all
from reverie.consolidate.paths import agent_db_path, secrets_dir
from reverie.consolidate.pipeline import consolidate_agent
from reverie.redact.memory import SecretMemory

from transcripts import db_bytes, line

VALUE = "Zq8vN3kP2xLm9Ta7wB4cQ"


def test_consolidation_rescans_when_a_secret_was_learned_since_indexing(tmp_path, reverie_home):
    proj = tmp_path / "projects" / "-home-dev-projects-payments"
    proj.mkdir(parents=True)
    (proj / "s1.jsonl").write_text(line(
        "user", "u-1", f"From now on, always tag payments-api builds with {VALUE} when deploying.",
        session="s1", cwd="/home/dev/projects/payments", ts="2026-11-20T09:00:00.000Z", version="2.1.40"))
    index_all(reverie_home, tmp_path / "projects")
    db_path = agent_db_path(reverie_home, "payments")
    assert VALUE.encode() in db_bytes(db_path)          # no context gave it away: stored as said
    mem = SecretMemory(secrets_dir(reverie_home))
    try:
        assert mem.remember([VALUE]) == 1
    finally:
        mem.close()

    summary = consolidate_agent(reverie_home, "payments", writer="offline")

    assert summary["errors"] == []
    assert VALUE.encode() not in db_bytes(db_path)
