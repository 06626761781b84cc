import sqlite3

from reverie.consolidate import store
from reverie.graph import store as graph_store


def test_blank_db_gets_every_migration(tmp_path):
    from reverie.graph import trust_store

    db = store.open_db(tmp_path / "agent.db")
    sets = {m.name: [x.name for x in m._migrations] for m in (store.MIGRATIONS, graph_store.MIGRATIONS, trust_store.MIGRATIONS)}
    assert store.schema_versions(db) == sets
    assert sets["reverie.index"][0] == "m001_index"
    assert sets["reverie.graph"][0] == "m001_graph"
    assert sets["reverie.trust"][0] == "m001_trust"
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert {"messages", "blocks", "blocks_fts", "cards", "cards_fts", "relation_statements", "feedback"} <= set(db.table_names())


def test_upgrade_from_first_version_keeps_rows(tmp_path):
    import sqlite_utils

    path = tmp_path / "agent.db"
    conn = sqlite3.connect(path)
    db = sqlite_utils.Database(conn)
    store.MIGRATIONS.apply(db, stop_before=[m.name for m in store.MIGRATIONS._migrations[1:]])
    graph_store.MIGRATIONS.apply(db, stop_before=[m.name for m in graph_store.MIGRATIONS._migrations[1:]])
    from reverie.graph import trust_store

    trust_store.MIGRATIONS.apply(db, stop_before=[m.name for m in trust_store.MIGRATIONS._migrations[1:]])
    db["conversations"].insert({"id": "s1", "messages": 0})
    conn.close()
    db = store.open_db(path)
    assert db["conversations"].get("s1")["id"] == "s1"
    assert store.MIGRATIONS.pending(db) == [] and graph_store.MIGRATIONS.pending(db) == []
    assert trust_store.MIGRATIONS.pending(db) == []
