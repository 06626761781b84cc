import sqlite3

from consolidate import store
from graph import store as graph_store


def test_blank_db_gets_every_migration(tmp_path):
    db = store.open_db(tmp_path / "agent.db")
    versions = store.schema_versions(db)
    assert versions == {
        "reverie.index": [m.name for m in store.MIGRATIONS.pending(db)] + list(versions["reverie.index"]),
        "reverie.graph": [m.name for m in graph_store.MIGRATIONS.pending(db)] + list(versions["reverie.graph"]),
    }
    assert versions["reverie.index"][0] == "m001_index"
    assert versions["reverie.graph"][0] == "m001_graph"
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert {"messages", "blocks", "blocks_fts", "cards", "cards_fts", "relation_statements"} <= set(db.table_names())


def test_upgrade_from_first_version_keeps_rows(tmp_path):
    import sqlite_utils

    path = tmp_path / "agent.db"
    conn = sqlite3.connect(path)
    db = sqlite_utils.Database(conn)
    store.MIGRATIONS.apply(db, stop_before=[m.name for m in store.MIGRATIONS._migrations[1:]])
    graph_store.MIGRATIONS.apply(db, stop_before=[m.name for m in graph_store.MIGRATIONS._migrations[1:]])
    db["conversations"].insert({"id": "s1", "messages": 0})
    conn.close()
    db = store.open_db(path)
    assert db["conversations"].get("s1")["id"] == "s1"
    assert store.MIGRATIONS.pending(db) == [] and graph_store.MIGRATIONS.pending(db) == []
