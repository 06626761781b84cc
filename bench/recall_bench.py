"""Recall benchmarks (issue 6). Prints side-by-side tables; asserts nothing.

    python bench/recall_bench.py latency [--cards 100000 --entities 10000 --statements 300000]
    python bench/recall_bench.py locomo [--locomo ../shared/bench/locomo/locomo10.json]
    python bench/recall_bench.py misses [--split dev] [--tokens 500] [--category N] [--show 20]

latency: builds (once, cached under --work) a synthetic agent straight into the graph schema with
SQL: 100k cards with model2vec vectors, 10k entities (+aliases), 300k relation statements and the
`relations` state derived from them, and one evidence row per card (cards in id order fill
conversations of 200; a store cached without evidence gets it, and its migrations, on the next run)
so recall's conversation-neighbour lift reads real neighbours. Then: in-process `recall()` p50/p95 for prompts and primers,
and the wall time of whole `reverie hook user-prompt-submit` processes next to
`python3 -c "import sqlite3"` (and the venv's python) in the same run.

locomo: each LoCoMo conversation becomes one agent (bench/locomo.py converts it to Claude Code
transcripts), indexed and consolidated with the offline writer (settings `embedding_model` = the
shared model2vec model, so cards get its vectors); every question of categories 1-4 is a prompt.
Score = share of the question's evidence turns cited by the evidence of the cards recall injected,
at 500 and 2,000 tokens (chars / 4) of injected text, next to two raw-turn baselines cut at the same
budget: BM25 over turns, and BM25 fused with model2vec cosine by RRF (k = 60). Recall runs with the
bench budgets `Budgets().scaled(chars)` (item caps raised so the character budget binds) on:

* "recall": a copy of each agent db with the lifecycle's faded cards made active again (LoCoMo
  spans months, so by question time one-off memories older than 30 days have faded, by design);
* "recall, lifecycle as is": the db as consolidation left it (faded cards are not recalled);
* "recall, no vectors": the revived copy, lexical and entity ranking only.

Tables are printed for the dev split (the five conversations the recall and writer heuristics were
tuned on: DEV_SAMPLES), the held-out five, and all ten.

misses: on the agents `locomo` built (same --work; revived copies), why recall misses evidence, per
question of one split at one budget: every evidence turn recall did not inject is "no card" (no
card cites it: the writer's ceiling), "not a candidate" (no card citing it is among the ranked
candidates) or "rank R" (the best card citing it ranked R while N cards were injected: the
ranking or the budget). Prints the first --show questions with misses (question, answer, named
entities, the top of the ranking, each missed turn and the cards citing it) and the counts.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
SHARED = ROOT.parent / "shared"
MODEL = SHARED / "models" / "minilm-l6-m2v-256"
CATEGORIES = ("decision", "fact", "preference", "pattern", "lesson", "correction")
VERBS = ("uses", "depends_on", "runs_on", "hosts", "deploys_to", "stores_data_in", "reads_from",
         "writes_to", "calls", "part_of", "owns", "configures", "requires", "replaces", "fixes",
         "breaks", "affects", "prefers", "decided_on", "rejected")
TYPES = ("service", "host", "library", "tool", "repo", "file", "person", "concept", "product")
#: The conversations recall and the offline writer were tuned on; the other five are held out.
DEV_SAMPLES = ("conv-26", "conv-30", "conv-41", "conv-42", "conv-43")


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    if not values:
        return float("nan")
    k = max(0, min(len(values) - 1, math.ceil(p / 100 * len(values)) - 1))
    return values[k]


# ---------------------------------------------------------------------------------------------
# Synthetic agent


def _vocabulary() -> list[str]:
    spec = json.loads((MODEL / "tokenizer.json").read_text())
    return sorted(w for w in spec["model"]["vocab"] if w.isalpha() and w.isascii() and len(w) >= 4)


def build_synthetic(path: Path, *, cards: int, entities: int, statements: int, seed: int = 7) -> dict:
    """Write a synthetic agent db at `path` (graph schema via consolidate.store.open_db)."""
    from reverie.consolidate.store import open_db
    from reverie.graph.embed import Model2VecEmbedder, to_blob
    from reverie.graph.entities import normalize_entity

    rng = random.Random(seed)
    vocab = _vocabulary()
    rng.shuffle(vocab)
    zipf = [1.0 / (r + 1) ** 1.07 for r in range(len(vocab))]
    cum = list(__import__("itertools").accumulate(zipf))
    if path.exists():
        path.unlink()
    for suffix in ("-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    db = open_db(path)
    conn = db.conn
    t0 = time.perf_counter()
    # Entities: distinct names of 1-2 words, some with a digit suffix; 30% get an alias.
    names: list[str] = []
    seen: set[str] = set()
    while len(names) < entities:
        a = rng.choice(vocab)
        r = rng.random()
        name = a.capitalize() if r < 0.4 else (f"{a}-{rng.choice(vocab)}" if r < 0.8 else f"{a}{rng.randint(1, 99)}")
        norm = normalize_entity(name)
        if norm in seen or len(norm) < 3:
            continue
        seen.add(norm)
        names.append(name)
    ent_rows, alias_rows = [], []
    for i, name in enumerate(names, start=1):
        norm = normalize_entity(name)
        ent_rows.append((i, name, norm, rng.choice(TYPES), "2025-01-01T00:00:00Z"))
        alias_rows.append((norm, name, i, "name"))
        if rng.random() < 0.3:
            alias = f"{norm.split('-')[0]}-{rng.choice(['svc', 'app', 'prod', 'db', 'api'])}{i}"
            if alias not in seen:
                seen.add(alias)
                alias_rows.append((alias, alias, i, "synonym"))
    with conn:
        conn.executemany("INSERT INTO entities(id, name, norm, type, created_at) VALUES (?,?,?,?,?)", ent_rows)
        conn.executemany("INSERT INTO entity_aliases(norm, alias, entity_id, how) VALUES (?,?,?,?)", alias_rows)
    ent_zipf = list(__import__("itertools").accumulate(1.0 / (r + 1) ** 0.8 for r in range(entities)))
    # Cards.
    start = 1_700_000_000
    texts, card_rows, link_rows = [], [], []
    for cid in range(1, cards + 1):
        n = rng.randint(8, 28)
        toks = rng.choices(vocab, cum_weights=cum, k=n)
        linked = {rng.choices(range(1, entities + 1), cum_weights=ent_zipf)[0] for _ in range(rng.randint(0, 3))}
        for e in linked:
            toks.insert(rng.randint(0, len(toks)), names[e - 1])
            link_rows.append((cid, e))
        text = " ".join(toks).capitalize() + "."
        texts.append(text)
        said = start + rng.randint(0, 60_000_000)
        sessions = min(40, int(rng.expovariate(0.7)) + 1)
        status = "active" if rng.random() < 0.85 else ("faded" if rng.random() < 0.66 else "superseded")
        iso = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(said))
        last = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(said + rng.randint(0, 5_000_000)))
        card_rows.append((cid, text, text.lower(), rng.choices(CATEGORIES, weights=(3, 8, 2, 2, 2, 1))[0],
                          rng.randint(1, 3), 0.8, 0.8, status, sessions, int(rng.random() < 0.002),
                          "offline", iso, iso, last, iso))
    print(f"  generated {cards} cards in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    emb = Model2VecEmbedder(str(MODEL))
    vecs = emb.encode(texts)
    print(f"  embedded in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    with conn:
        conn.executemany(
            """INSERT INTO cards(id, statement, norm, category, importance, confidence, original_confidence,
               status, sessions, pinned, writer, created_at, said_at, last_seen_at, updated_at, vector)
               VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)""",
            [row + (to_blob(v),) for row, v in zip(card_rows, vecs)])
        conn.executemany("INSERT OR IGNORE INTO card_entities(card_id, entity_id) VALUES (?,?)", link_rows)
        conn.execute("INSERT INTO graph_meta(key, value) VALUES ('embedder', ?) "
                     "ON CONFLICT(key) DO UPDATE SET value = excluded.value", (emb.id,))
    print(f"  cards stored in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    add_synthetic_evidence(conn, seed=seed)
    # Relation statements: preferential attachment over entities.
    st_rows = []
    for sid in range(1, statements + 1):
        s = rng.choices(range(1, entities + 1), cum_weights=ent_zipf)[0]
        o = rng.randint(1, entities)
        if o == s:
            o = o % entities + 1
        said = start + rng.randint(0, 60_000_000)
        iso = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(said))
        st_rows.append((sid, s, rng.choice(VERBS), o, rng.randint(1, cards), f"s{rng.randint(1, 3000)}",
                        iso, iso, int(rng.random() < 0.85), 0))
    with conn:
        conn.executemany(
            """INSERT INTO relation_statements(id, subject_id, verb, object_id, card_id, session, said_at,
               learned_at, holds, implicit) VALUES (?,?,?,?,?,?,?,?,?,?)""", st_rows)
        # The materialized state, by the rules of graph.relations: latest statement by said_at
        # (explicit wins a tie), weight = distinct sessions of explicit statements whose card is
        # not faded.
        conn.execute(
            """INSERT INTO relations(subject_id, verb, object_id, holds, weight, first_said, last_said, since, updated_at)
               SELECT subject_id, verb, object_id,
                      (SELECT holds FROM relation_statements r2 WHERE r2.subject_id = g.subject_id
                         AND r2.verb = g.verb AND r2.object_id = g.object_id
                       ORDER BY said_at DESC, implicit ASC, id DESC LIMIT 1),
                      (SELECT count(DISTINCT r3.session) FROM relation_statements r3 JOIN cards c ON c.id = r3.card_id
                       WHERE r3.subject_id = g.subject_id AND r3.verb = g.verb AND r3.object_id = g.object_id
                         AND r3.implicit = 0 AND c.status != 'faded'),
                      min(said_at), max(said_at), max(said_at), max(said_at)
               FROM relation_statements g GROUP BY subject_id, verb, object_id""")
    conn.execute("ANALYZE")
    counts = {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
              for t in ("cards", "entities", "entity_aliases", "card_entities", "relation_statements", "relations")}
    db.conn.close()
    print(f"  built in {time.perf_counter() - t0:.1f}s: {counts}", file=sys.stderr)
    return counts


#: Synthetic evidence: cards in id order fill conversations of this many cards each.
SYNTH_CARDS_PER_CONVERSATION = 200


def add_synthetic_evidence(conn: sqlite3.Connection, *, seed: int = 7) -> int:
    """Give every card of a synthetic store one evidence row (two for 10% of them), unless the store
    has evidence already: cards in id order fill conversations of SYNTH_CARDS_PER_CONVERSATION
    cards, each citing the next message or two (so recall's conversation-neighbour lift has real
    neighbours to read). Returns the rows written."""
    if conn.execute("SELECT 1 FROM evidence LIMIT 1").fetchone():
        return 0
    rng = random.Random(seed + 1)
    rows = []
    for cid, said in conn.execute("SELECT id, said_at FROM cards ORDER BY id"):
        conv = f"synth-{(cid - 1) // SYNTH_CARDS_PER_CONVERSATION:05d}"
        msg = 2 * ((cid - 1) % SYNTH_CARDS_PER_CONVERSATION) + rng.randint(1, 2)
        rows.append((cid, conv, msg, msg, said, "synthetic passage"))
        if rng.random() < 0.1:
            rows.append((cid, conv, msg + 1, msg + 1, said, "synthetic passage"))
    with conn:
        conn.executemany("INSERT INTO evidence(card_id, conversation, message_from, message_to, said_at, passage) "
                         "VALUES (?,?,?,?,?,?)", rows)
    return len(rows)


def _prompts(db_path: Path, n: int, seed: int = 11) -> list[str]:
    """Prompts made of real card words, half of them naming one or two entities."""
    rng = random.Random(seed)
    conn = sqlite3.connect(db_path)
    max_id = conn.execute("SELECT max(id) FROM cards").fetchone()[0]
    names = [r[0] for r in conn.execute("SELECT name FROM entities ORDER BY random() LIMIT 500")]
    out = []
    for _ in range(n):
        text = conn.execute("SELECT statement FROM cards WHERE id = ?", (rng.randint(1, max_id),)).fetchone()[0]
        toks = text.rstrip(".").split()
        rng.shuffle(toks)
        prompt = "Can you check " + " ".join(toks[: rng.randint(3, 10)])
        if rng.random() < 0.5:
            prompt += " and how it affects " + " and ".join(rng.sample(names, rng.randint(1, 2)))
        out.append(prompt + "?")
    conn.close()
    return out


def _time_calls(fn, items) -> list[float]:
    out = []
    for item in items:
        t = time.perf_counter()
        fn(item)
        out.append((time.perf_counter() - t) * 1000)
    return out


def latency(args: argparse.Namespace) -> None:
    from reverie.graph.recall import recall
    from reverie.graph.recall_embed import LiteEmbedder

    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    db_path = work / f"synth-{args.cards}-{args.entities}-{args.statements}.db"
    if args.rebuild or not db_path.exists():
        print(f"building {db_path} ...", file=sys.stderr)
        build_synthetic(db_path, cards=args.cards, entities=args.entities, statements=args.statements)
    else:
        # A store cached by an earlier version: bring its schema up to date (migrations) and give it
        # evidence rows if it has none.
        from reverie.consolidate.store import open_db

        db = open_db(db_path)
        added = add_synthetic_evidence(db.conn)
        if added:
            db.conn.execute("ANALYZE")
            print(f"  added {added} synthetic evidence rows to {db_path}", file=sys.stderr)
        db.conn.close()
    prompts = _prompts(db_path, args.n)
    embedder = LiteEmbedder(MODEL, work / "cache")
    rows = []
    for label, emb in (("prompt, with vectors", embedder), ("prompt, lexical only", None)):
        recall(db_path, prompts[0], embedder=emb)   # warm the page cache
        sizes = []

        def one(p, emb=emb, sizes=sizes):
            sizes.append(len(recall(db_path, p, embedder=emb)["text"]))

        ms = _time_calls(one, prompts)
        rows.append((f"in-process recall, {label}", len(ms), statistics.median(ms), pct(ms, 95),
                     f"{sum(1 for s in sizes if s)}/{len(sizes)} injected, mean {statistics.mean(sizes):.0f} chars"))
    ms = _time_calls(lambda _: recall(db_path, "", kind="primer"), range(args.n // 4))
    rows.append(("in-process recall, primer", len(ms), statistics.median(ms), pct(ms, 95), ""))

    # Whole hook processes: a home whose agent db is the synthetic one.
    home = work / "home"
    shutil.rmtree(home, ignore_errors=True)
    agent_dir = home / "agents" / "synth"
    agent_dir.mkdir(parents=True)
    os.symlink(db_path, agent_dir / "agent.db")
    cwd = str(work / "project")
    (home / "agents.json").write_text(json.dumps({"version": 1, "agents": {"synth": {"cwds": [cwd]}}}))
    (home / "settings.json").write_text(json.dumps({"embedding_model": str(MODEL)}))
    reverie = shutil.which("reverie", path=str(Path(sys.executable).parent)) or "reverie"
    # As installed by pip: bytecode compiled ahead (PYTHONDONTWRITEBYTECODE, set on some machines,
    # would otherwise make every hook process compile our modules from source).
    import compileall

    for pkg in ("consolidate", "graph", "redact", "schedules"):
        compileall.compile_dir(str(ROOT / pkg), quiet=1)
    env = {k: v for k, v in os.environ.items() if k not in ("REVERIE_CHILD", "PYTHONDONTWRITEBYTECODE")}
    # The same home with `--secrets` remembered secrets (what a long-used home accumulates): the
    # hook scrubs every injection with them.
    home_s = work / "home-secrets"
    shutil.rmtree(home_s, ignore_errors=True)
    if args.secrets:
        shutil.copytree(home, home_s, symlinks=True)
        import secrets as pysecrets
        import string

        from reverie.redact.memory import SecretMemory

        alphabet = string.ascii_letters + string.digits + "_-"
        mem = SecretMemory(home_s / "secrets")
        mem.remember(["".join(pysecrets.choice(alphabet) for _ in range(12 + i % 40)) for i in range(args.secrets)])
        remembered = mem.count()
        mem.close()
    hook_ms, hook_s_ms, bare_ms, venv_ms, printed = [], [], [], [], 0
    hook_prompts = prompts[: args.processes]
    for i, prompt in enumerate(hook_prompts):
        payload = json.dumps({"session_id": f"bench-{i}", "cwd": cwd, "prompt": prompt,
                              "hook_event_name": "UserPromptSubmit"}).encode()
        t = time.perf_counter()
        out = subprocess.run([reverie, "--home", str(home), "hook", "user-prompt-submit"], input=payload,
                             capture_output=True, env=env)
        hook_ms.append((time.perf_counter() - t) * 1000)
        printed += bool(out.stdout.strip())
        if args.secrets:
            t = time.perf_counter()
            subprocess.run([reverie, "--home", str(home_s), "hook", "user-prompt-submit"], input=payload,
                           capture_output=True, env=env)
            hook_s_ms.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        subprocess.run(["python3", "-c", "import sqlite3"], capture_output=True, env=env)
        bare_ms.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import sqlite3"], capture_output=True, env=env)
        venv_ms.append((time.perf_counter() - t) * 1000)
    rows.append(("hook process (reverie hook user-prompt-submit)", len(hook_ms), statistics.median(hook_ms),
                 pct(hook_ms, 95), f"{printed}/{len(hook_ms)} printed an injection"))
    if hook_s_ms:
        rows.append((f"hook process, {remembered:,} remembered secrets", len(hook_s_ms),
                     statistics.median(hook_s_ms), pct(hook_s_ms, 95), ""))
    rows.append(('python3 -c "import sqlite3"', len(bare_ms), statistics.median(bare_ms), pct(bare_ms, 95),
                 shutil.which("python3") or ""))
    rows.append((f'{Path(sys.executable).name} (venv) -c "import sqlite3"', len(venv_ms), statistics.median(venv_ms),
                 pct(venv_ms, 95), sys.executable))
    print(f"\nSynthetic agent: {args.cards} cards, {args.entities} entities, {args.statements} relation statements")
    print(f"{'measure':<52} {'n':>5} {'p50 ms':>8} {'p95 ms':>8}  note")
    for label, n, p50, p95, note in rows:
        print(f"{label:<52} {n:>5} {p50:>8.1f} {p95:>8.1f}  {note}")
    print(f"\nhook p95 / the same interpreter's `-c 'import sqlite3'` p95 = {pct(hook_ms, 95) / pct(venv_ms, 95):.2f}x"
          f" (goal <= 3x); vs `python3` on PATH = {pct(hook_ms, 95) / pct(bare_ms, 95):.2f}x"
          " (here a pyenv shim, slower than the interpreter itself)")
    if hook_s_ms:
        print(f"with {remembered:,} remembered secrets: {pct(hook_s_ms, 95) / pct(venv_ms, 95):.2f}x (goal <= 3x)")


# ---------------------------------------------------------------------------------------------
# LoCoMo quality


def _build_locomo_home(home: Path, locomo_path: Path, samples: list[str] | None) -> list[str]:
    """Convert, index and consolidate (offline writer) every conversation; returns agent ids."""
    from bench import locomo
    from reverie.consolidate.index import index_all
    from reverie.consolidate.pipeline import consolidate_agent

    projects = home.parent / "projects"
    shutil.rmtree(projects, ignore_errors=True)
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    (home / "settings.json").write_text(json.dumps({"embedding_model": str(MODEL)}))
    stats = locomo.convert(locomo_path, projects, samples=samples)
    t0 = time.perf_counter()
    summary = index_all(home, projects)
    print(f"  converted {stats['turns']} turns / {stats['sessions']} sessions, indexed in "
          f"{time.perf_counter() - t0:.0f}s: {summary.get('messages_added')} messages", file=sys.stderr)
    agents = sorted(p.name for p in (home / "agents").iterdir() if (p / "agent.db").exists())
    last = {}
    for sample in locomo.load(locomo_path):
        n = locomo.sessions(sample)[-1]
        last[sample["sample_id"]] = locomo.parse_date(sample["conversation"][f"session_{n}_date_time"])
    for agent in agents:
        t = time.perf_counter()
        # Consolidated the day after the conversation's last session, as a nightly run would: with
        # today's date every card of 2023 would already have faded (seen once, older than 30 days).
        now = last[agent] + __import__("datetime").timedelta(days=1) if agent in last else None
        out = consolidate_agent(home, agent, writer="offline", now=now)
        print(f"  consolidated {agent}: {out.get('cards_written')} cards written, {out.get('cards_rejected')} "
              f"rejected, errors {out.get('errors')} in {time.perf_counter() - t:.0f}s", file=sys.stderr)
    return agents


def _card_turns(db_path: Path) -> tuple[dict[int, set[str]], dict[tuple, set[int]]]:
    """card id -> dia_ids its evidence cites; (subject, verb, object) names -> card ids behind it."""
    from bench import locomo

    conn = sqlite3.connect(db_path)
    dia = {mid: locomo.dia_id_from_uuid(uuid) for mid, uuid in conn.execute("SELECT id, uuid FROM messages")}
    cites: dict[int, set[str]] = {}
    for cid, conv, lo, hi in conn.execute("SELECT card_id, conversation, message_from, message_to FROM evidence"):
        ids = conn.execute("SELECT id FROM messages WHERE conversation = ? AND id BETWEEN ? AND ?",
                           (conv, lo, hi if hi is not None else lo)).fetchall()
        cites.setdefault(cid, set()).update(d for (m,) in ids if (d := dia.get(m)))
    behind: dict[tuple, set[int]] = {}
    for s, v, o, cid in conn.execute(
            """SELECT se.name, st.verb, oe.name, st.card_id FROM relation_statements st
               JOIN entities se ON se.id = st.subject_id JOIN entities oe ON oe.id = st.object_id
               WHERE st.implicit = 0 AND st.card_id IS NOT NULL"""):
        behind.setdefault((s, v, o), set()).add(cid)
    conn.close()
    return cites, behind


def _turn_rankings(turns: list, question: str, emb, turn_vecs) -> tuple[list[int], list[int]]:
    """Turn indices ranked by BM25 (FTS5, porter) and by BM25+cosine RRF (k=60)."""
    from reverie.graph.recall import _fts_terms, _phrase

    conn = _turn_rankings.conn
    terms = _fts_terms(question)
    bm25: list[int] = []
    if terms:
        bm25 = [r[0] - 1 for r in conn.execute(
            "SELECT rowid FROM t WHERE t MATCH ? ORDER BY bm25(t)", (" OR ".join(_phrase(x) for x in terms),))]
    qv = emb.encode([question])[0]
    cos = turn_vecs @ qv
    by_cos = list(reversed(cos.argsort()))
    fused: dict[int, float] = {}
    for rank, i in enumerate(bm25):
        fused[i] = fused.get(i, 0.0) + 1.0 / (60 + rank + 1)
    for rank, i in enumerate(by_cos):
        fused[int(i)] = fused.get(int(i), 0.0) + 1.0 / (60 + rank + 1)
    rrf = sorted(fused, key=lambda i: -fused[i])
    return bm25, rrf


def _cut(turns: list, order: list[int], budget: int) -> set[str]:
    """dia_ids of the turns taken in rank order while they fit `budget` characters (a turn that does
    not fit is skipped, as recall skips a line that does not fit)."""
    left, out = budget, set()
    for i in order:
        cost = len(turns[i].text) + 1
        if cost <= left:
            out.add(turns[i].dia_id)
            left -= cost
    return out


def _revived_copy(db: Path, copy: Path) -> Path:
    """A copy of an agent db with its faded cards active again (see the module doc)."""
    copy.parent.mkdir(parents=True, exist_ok=True)
    copy.unlink(missing_ok=True)
    src = sqlite3.connect(db)
    dst = sqlite3.connect(copy)
    src.backup(dst)
    src.close()
    dst.execute("UPDATE cards SET status = 'active' WHERE status = 'faded'")
    dst.commit()
    dst.close()
    return copy


def locomo_quality(args: argparse.Namespace) -> None:
    import re

    from bench import locomo
    from reverie.graph.embed import Model2VecEmbedder
    from reverie.graph.recall import recall
    from reverie.graph.recall_embed import LexicalLite, LiteEmbedder

    work = Path(args.work)
    home = work / "locomo-home"
    data = locomo.load(args.locomo)
    samples = args.sample or None
    if args.rebuild or not (home / "agents").exists():
        print("building the LoCoMo agents (convert, index, consolidate --writer offline) ...", file=sys.stderr)
        _build_locomo_home(home, Path(args.locomo), samples)
    emb = Model2VecEmbedder(str(MODEL))
    lite = LiteEmbedder(MODEL, work / "cache")
    budgets_tokens = (500, 2000)
    methods = ("bm25 turns", "bm25+m2v rrf turns", "recall", "recall, lifecycle as is", "recall, no vectors",
               "cited by any card")
    splits = {"dev": set(DEV_SAMPLES), "held-out": {s["sample_id"] for s in data} - set(DEV_SAMPLES),
              "all": {s["sample_id"] for s in data}}
    scores: dict[tuple, list[float]] = {}
    sizes: dict[tuple, list[int]] = {}
    counts = {name: [0, 0] for name in splits}       # cards, faded
    embedders = {}
    for sample in data:
        sid = sample["sample_id"]
        if samples and sid not in samples:
            continue
        agent = sid
        db = home / "agents" / agent / "agent.db"
        if not db.exists():
            print(f"  no agent db for {sid}: skipped", file=sys.stderr)
            continue
        in_splits = [name for name, members in splits.items() if sid in members]
        with sqlite3.connect(db) as conn:
            n_cards = conn.execute("SELECT count(*) FROM cards").fetchone()[0]
            n_faded = conn.execute("SELECT count(*) FROM cards WHERE status = 'faded'").fetchone()[0]
            stored = conn.execute("SELECT value FROM graph_meta WHERE key = 'embedder'").fetchone()
        for name in in_splits:
            counts[name][0] += n_cards
            counts[name][1] += n_faded
        embedders[stored[0] if stored else None] = embedders.get(stored[0] if stored else None, 0) + 1
        vec_embedder = lite if stored and stored[0] == lite.id else LexicalLite()
        revived = _revived_copy(db, work / "locomo-revived" / f"{agent}.db")
        cites, behind = _card_turns(revived)
        reachable = set().union(*cites.values()) if cites else set()
        turns = list(locomo.iter_turns(sample))
        known = {t.dia_id for t in turns}
        mem = sqlite3.connect(":memory:")
        mem.execute("CREATE VIRTUAL TABLE t USING fts5(text, tokenize='porter unicode61')")
        mem.executemany("INSERT INTO t(rowid, text) VALUES (?, ?)", [(i + 1, t.text) for i, t in enumerate(turns)])
        _turn_rankings.conn = mem
        turn_vecs = emb.encode([t.text for t in turns])

        def add(label: str, tokens: int, cat: int, share: float) -> None:
            for name in in_splits:
                scores.setdefault((name, label, tokens, cat), []).append(share)
                scores.setdefault((name, label, tokens, "all"), []).append(share)

        for qa in sample["qa"]:
            cat = qa.get("category")
            if cat not in (1, 2, 3, 4):
                continue
            gold = {p for ev in qa.get("evidence") or [] for p in re.split(r"[;,\s]+", ev)} & known
            if not gold:
                continue
            question = qa["question"]
            for tokens in budgets_tokens:
                add("cited by any card", tokens, cat, len(reachable & gold) / len(gold))
            bm25, rrf = _turn_rankings(turns, question, emb, turn_vecs)
            for tokens in budgets_tokens:
                chars = tokens * 4
                got = {"bm25 turns": _cut(turns, bm25, chars), "bm25+m2v rrf turns": _cut(turns, rrf, chars)}
                b = _budgets_for(tokens)
                for label, path, e in (("recall", revived, vec_embedder), ("recall, lifecycle as is", db, vec_embedder),
                                       ("recall, no vectors", revived, None)):
                    out = recall(path, question, budgets=b, embedder=e)
                    ids = [c["id"] for c in out["standing"]] + [c["id"] for c in out["notes"]]
                    for ent in out["entities"]:
                        for r in ent["relations"]:
                            ids.extend(behind.get((r["subject"], r["verb"], r["object"]), ()))
                    got[label] = set().union(*(cites.get(i, set()) for i in ids)) if ids else set()
                    for name in in_splits:
                        sizes.setdefault((name, label, tokens), []).append(len(out["text"]))
                for label, found in got.items():
                    add(label, tokens, cat, len(found & gold) / len(gold))
    names = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", "all": "overall"}
    print(f"\nLoCoMo, categories 1-4. Card vectors: {embedders}. Share of each question's evidence turns "
          "found, mean over questions; 'cited by any card' is the ceiling the cards allow at any budget; "
          "'recall' revives the cards the lifecycle faded, 'recall, lifecycle as is' does not.")
    for name in ("dev", "held-out", "all"):
        n_q = len(scores.get((name, "recall", 500, "all"), []))
        if not n_q:
            continue
        members = ", ".join(sorted(splits[name] & ({s for s in samples} if samples else splits[name])))
        print(f"\n=== {name}: {members}; {n_q} questions, {counts[name][0]} cards (offline writer), "
              f"{counts[name][1]} faded by the lifecycle at question time")
        for tokens in budgets_tokens:
            print(f"within {tokens} tokens ({tokens * 4} chars) of injected text")
            print(f"{'method':<26}" + "".join(f"{names[c]:>13}" for c in (1, 2, 3, 4, "all")) + f"{'mean chars':>12}")
            for m in methods:
                row = "".join(f"{statistics.mean(scores[(name, m, tokens, c)]):>13.3f}"
                              if scores.get((name, m, tokens, c)) else f"{'-':>13}" for c in (1, 2, 3, 4, "all"))
                size = (f"{statistics.mean(sizes[(name, m, tokens)]):>12.0f}" if (name, m, tokens) in sizes
                        else f"{'':>12}")
                print(f"{m:<26}{row}{size}")


def _budgets_for(tokens: int):
    """The bench budgets: `Budgets().scaled(chars)` with item caps raised so characters bind."""
    from reverie.graph.recall import Budgets

    b = Budgets().scaled(tokens * 4)
    return Budgets(**{**b.as_dict(), "standing_items": 50, "notes_items": 50, "entities": 8})


def locomo_misses(args: argparse.Namespace) -> None:
    import functools
    import re

    from reverie.redact.engine import Redactor

    redactor = functools.cache(lambda: Redactor(None))

    from bench import locomo
    from reverie.graph.recall import connect_readonly, match_entities, nearest_cards, recall
    from reverie.graph.recall_embed import LexicalLite, LiteEmbedder

    work = Path(args.work)
    if not (work / "locomo-home" / "agents").exists():
        sys.exit(f"no LoCoMo agents under {work}: run `recall_bench.py locomo --work {work}` first")
    lite = LiteEmbedder(MODEL, work / "cache")
    budgets = _budgets_for(args.tokens)
    counts = {"evidence turns": 0, "found": 0, "no card": 0, "not a candidate": 0, "ranked too low": 0}
    shares: list[float] = []
    shown = 0
    for sample in locomo.load(args.locomo):
        sid = sample["sample_id"]
        if (args.split == "dev") != (sid in DEV_SAMPLES) and args.split != "all":
            continue
        db = work / "locomo-home" / "agents" / sid / "agent.db"
        if not db.exists():
            continue
        revived = _revived_copy(db, work / "locomo-revived" / f"{sid}.db")
        cites, behind = _card_turns(revived)
        by_turn: dict[str, set[int]] = {}
        for cid, turns in cites.items():
            for t in turns:
                by_turn.setdefault(t, set()).add(cid)
        conn = connect_readonly(revived)
        stored = conn.execute("SELECT value FROM graph_meta WHERE key = 'embedder'").fetchone()
        emb = lite if stored and stored[0] == lite.id else LexicalLite()
        statements = dict(conn.execute("SELECT id, statement FROM cards"))
        text = {t.dia_id: t.text for t in locomo.iter_turns(sample)}
        for qa in sample["qa"]:
            cat = qa.get("category")
            if cat not in (1, 2, 3, 4) or (args.category and cat != args.category):
                continue
            gold = {p for ev in qa.get("evidence") or [] for p in re.split(r"[;,\s]+", ev)} & set(text)
            if not gold:
                continue
            question = qa["question"]
            out = recall(revived, question, budgets=budgets, embedder=emb)
            ids = [c["id"] for c in out["standing"]] + [c["id"] for c in out["notes"]]
            for ent in out["entities"]:
                for r in ent["relations"]:
                    ids.extend(behind.get((r["subject"], r["verb"], r["object"]), ()))
            got = set().union(*(cites.get(i, set()) for i in ids)) if ids else set()
            named = match_entities(conn, question)
            ranking = nearest_cards(conn, question, [e["id"] for e in named], embedder=emb, limit=10_000,
                                    min_relative=0.0)
            rank = {c["id"]: i for i, c in enumerate(ranking, start=1)}
            shares.append(len(got & gold) / len(gold))
            lines = []
            for turn in sorted(gold):
                counts["evidence turns"] += 1
                if turn in got:
                    counts["found"] += 1
                    continue
                citing = by_turn.get(turn, set())
                ranks = sorted(rank[c] for c in citing if c in rank)
                if not citing:
                    counts["no card"] += 1
                    why = "no card"
                elif not ranks:
                    counts["not a candidate"] += 1
                    why = "not a candidate"
                else:
                    counts["ranked too low"] += 1
                    why = f"rank {ranks[0]}, {len(ids)} cards injected"
                lines.append(f"    missed {turn} ({why}): {text[turn][:140]}")
                for cid in sorted(citing, key=lambda c: rank.get(c, 10**9))[:2]:
                    lines.append(f"      card #{cid} rank {rank.get(cid, '-')}: {statements[cid][:140]}")
            if lines and shown < args.show:
                shown += 1
                block = [f"\n[{sid}, category {cat}] {question} -> {qa.get('answer')!s}"
                         f"   named: {[e['name'] for e in named]}"]
                block += [f"    {i}. #{c['id']} {c['score']:.3f} {c['statement'][:130]}"
                          for i, c in enumerate(ranking[:5], start=1)]
                print(redactor().redact("\n".join(block + lines)).text)   # every printed text redacted
        conn.close()
    if not shares:
        print("no questions")
        return
    print(f"\n{args.split}, {args.tokens} tokens: {len(shares)} questions, evidence recall "
          f"{statistics.mean(shares):.3f}; evidence turns: " + ", ".join(f"{k} {v}" for k, v in counts.items()))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="what", required=True)
    lat = sub.add_parser("latency")
    lat.add_argument("--cards", type=int, default=100_000)
    lat.add_argument("--entities", type=int, default=10_000)
    lat.add_argument("--statements", type=int, default=300_000)
    lat.add_argument("--n", type=int, default=300, help="in-process prompts")
    lat.add_argument("--processes", type=int, default=60, help="hook processes")
    lat.add_argument("--secrets", type=int, default=100_000,
                     help="remembered secrets of the second hook home (0: no second home)")
    lat.add_argument("--work", default="/tmp/reverie-recall-bench")
    lat.add_argument("--rebuild", action="store_true")
    lat.set_defaults(fn=latency)
    loc = sub.add_parser("locomo")
    loc.add_argument("--locomo", default=str(SHARED / "bench" / "locomo" / "locomo10.json"))
    loc.add_argument("--sample", action="append", help="only these sample ids (repeatable)")
    loc.add_argument("--work", default="/tmp/reverie-recall-bench")
    loc.add_argument("--rebuild", action="store_true")
    loc.set_defaults(fn=locomo_quality)
    mis = sub.add_parser("misses", help="why recall misses evidence on LoCoMo (after `locomo`)")
    mis.add_argument("--locomo", default=str(SHARED / "bench" / "locomo" / "locomo10.json"))
    mis.add_argument("--work", default="/tmp/reverie-recall-bench")
    mis.add_argument("--split", choices=("dev", "held-out", "all"), default="dev")
    mis.add_argument("--tokens", type=int, default=500)
    mis.add_argument("--category", type=int, choices=(1, 2, 3, 4))
    mis.add_argument("--show", type=int, default=20, help="questions with misses to print")
    mis.set_defaults(fn=locomo_misses)
    args = ap.parse_args(argv)
    args.fn(args)


if __name__ == "__main__":
    main()
