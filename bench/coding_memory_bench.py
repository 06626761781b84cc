"""Memory from real coding sessions (issue 13): what consolidation keeps and what recall brings back,
scored against gold labels people wrote from the transcripts. Prints side-by-side tables; asserts nothing.

    python bench/coding_memory_bench.py [--split dev|heldout|all] [--work DIR] [--writer offline]
                                        [--only KEY ...] [--cards] [--misses] [--jobs N]

Gold: `bench/coding_gold/<key>.json` (one per real session in ../shared/fixtures; format in
bench/coding_gold/README.md): memories (a statement, 2-4 keywords, the transcript line uuids it
rests on) and probes (a later prompt and the memories it should bring up). Split "dev" is what the
passages, classifier and writer may be tuned on; "heldout" is never looked at while tuning.

Per session, in a fresh home (`--work`, default bench/out/coding): the session's transcript (and its
`<session>/subagents/` folder) is indexed with `reverie index` and consolidated with
`reverie consolidate --now --all --writer W`, as a user runs them. Then:

* coverage: the share of gold memories stated by some active card: one card holding every keyword
  of the memory (case-insensitive); "partial" next to it: one card holding at least min(2, k) of
  its k keywords (the match that keeps a card out of the noise);
* noise: the share of active cards that match no gold memory (a card matches a memory when it holds
  at least min(2, k) of its k keywords);
* candidates: the share of the transcript messages the gold memories rest on (uuid -> message
  through `message_lines`) that some candidate passage comes from, next to the share of passages
  that are candidates (the classifier's goal: >= 0.80 at <= 0.35), and the share of gold memories
  with at least one cited message among the candidates (what a model writer needs to see);
* probe recall at 1,000 and 4,000 characters: the share of (probe, expected memory) pairs whose
  memory is present (every keyword) in what recall injects for the probe's prompt (`graph.recall`
  with `Budgets().scaled(chars)`, the settings' embedding model), and the characters injected;
* the same probes answered by BM25 over the session's raw turns (user and assistant text, the
  index's redacted text; FTS5, prompt words OR-ed, best turns concatenated, the last one cut to fill
  the budget exactly);
* extractive ceiling: the share of gold memories some single sentence of the stored user and
  assistant text (or of any stored block, tool results included) holds every keyword of: what a
  writer that copies one sentence per card can reach at best; then the same for two adjacent
  sentences of one message, and for one whole user/assistant message (what a writer must condense
  into one card when no sentence holds the memory);
* oracle: the gold statements imported as cards with `reverie import --markdown` into a copy of the
  indexed home (no consolidation), then the same probes: recall alone.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
FIXTURES = SHARED / "fixtures"
GOLD = ROOT / "bench" / "coding_gold"
MODEL = SHARED / "models" / "minilm-l6-m2v-256"
BUDGETS = (1000, 4000)


# ------------------------------------------------------------------------------------------------
# gold

@dataclass
class Memory:
    id: str
    statement: str
    category: str
    keywords: list[str]
    uuids: list[str]


@dataclass
class Probe:
    prompt: str
    expects: list[str]


@dataclass
class Gold:
    key: str
    session: Path
    split: str
    memories: list[Memory]
    probes: list[Probe]


def load_gold(split: str, only: list[str] | None = None) -> list[Gold]:
    out = []
    for path in sorted(GOLD.glob("*.json")):
        d = json.loads(path.read_text())
        if split != "all" and d["split"] != split:
            continue
        if only and path.stem not in only:
            continue
        mems = [Memory(m["id"], m["statement"], m.get("category", "fact"),
                       [k.lower() for k in m["keywords"]], list(m.get("uuids", []))) for m in d["memories"]]
        probes = [Probe(p["prompt"], list(p["expects"])) for p in d.get("probes", [])]
        out.append(Gold(path.stem, FIXTURES / d["session"], d["split"], mems, probes))
    return out


def holds_all(text: str, keywords: list[str]) -> bool:
    t = text.lower()
    return all(k in t for k in keywords)


def matches(text: str, keywords: list[str]) -> bool:
    t = text.lower()
    return sum(k in t for k in keywords) >= min(2, len(keywords))


# ------------------------------------------------------------------------------------------------
# running reverie

def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "REVERIE_", "CLAUDE_"))}
    env.update(REVERIE_HOME=str(home), TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS="",
               CLAUDE_CONFIG_DIR=str(home / "no-claude"), PATH=os.path.dirname(sys.executable) + os.pathsep + "/usr/bin:/bin")
    return env


def reverie(home: Path, *args: str) -> dict:
    proc = subprocess.run([sys.executable, "-m", "reverie.consolidate", "--home", str(home), *args, "--json"],
                          capture_output=True, text=True, env=_env(home), timeout=1800)
    if proc.returncode != 0:
        raise RuntimeError(f"reverie {' '.join(args)} exited {proc.returncode}: {proc.stderr[-2000:]}")
    return json.loads(proc.stdout) if proc.stdout.strip() else {}


def stage_projects(gold: Gold, projects: Path) -> None:
    """The session file (and its `<session>/` folder of sub-agents) under projects/<project>/."""
    project = projects / gold.session.parent.name
    project.mkdir(parents=True, exist_ok=True)
    shutil.copy2(gold.session, project / gold.session.name)
    side = gold.session.with_suffix("")
    if side.is_dir():
        shutil.copytree(side, project / side.name, dirs_exist_ok=True)


def write_settings(home: Path) -> None:
    home.mkdir(parents=True, exist_ok=True)
    settings = {"embedding_model": str(MODEL)} if MODEL.exists() else {}
    (home / "settings.json").write_text(json.dumps(settings))


def agent_dbs(home: Path) -> dict[str, Path]:
    agents = home / "agents"
    return {p.name: p / "agent.db" for p in sorted(agents.iterdir()) if (p / "agent.db").exists()} if agents.exists() else {}


# ------------------------------------------------------------------------------------------------
# measures

def active_cards(db: Path) -> list[str]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return [r[0] for r in conn.execute("SELECT statement FROM cards WHERE status = 'active' ORDER BY id")]
    finally:
        conn.close()


def gold_message_ids(db: Path, gold: Gold) -> dict[str, set[int]]:
    """memory id -> the message ids its uuids resolve to (through message_lines)."""
    from reverie.consolidate.index_shape import line_key

    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        out: dict[str, set[int]] = {}
        for m in gold.memories:
            ids = set()
            for u in m.uuids:
                row = conn.execute("SELECT message_id FROM message_lines WHERE uuid = ?", (line_key(u),)).fetchone()
                if row:
                    ids.add(row[0])
            out[m.id] = ids
        return out
    finally:
        conn.close()


def candidate_stats(home: Path, db: Path, gold: Gold) -> dict:
    """Passages the pipeline cuts from every conversation of the db, which of them are candidates,
    and which gold-cited messages some candidate passage comes from."""
    from reverie.consolidate import settings as settings_mod
    from reverie.consolidate.classify import classify
    from reverie.consolidate.passages import cut_passages, load_messages
    from reverie.consolidate.pipeline import _is_candidate, _known
    from reverie.consolidate.store import open_db

    threshold = settings_mod.get(settings_mod.load_settings(home), "consolidate.keep_threshold")
    d = open_db(db)
    try:
        known = _known(d)
        convs = [r[0] for r in d.execute("SELECT id FROM conversations ORDER BY id").fetchall()]
        passages = cands = 0
        cand_msgs: set[int] = set()
        passage_msgs: set[int] = set()
        for conv in convs:
            msgs = load_messages(d, conv, after_id=0)
            cut = cut_passages(conv, msgs, after_id=0)
            for p in cut.passages:
                passages += 1
                passage_msgs.add(p.message_id)
                if _is_candidate(classify(p, known=known), threshold):
                    cands += 1
                    cand_msgs.add(p.message_id)
    finally:
        d.close()
    cited = gold_message_ids(db, gold)
    all_cited = set().union(*cited.values()) if cited else set()
    return {"passages": passages, "candidates": cands, "cited": len(all_cited),
            "cited_in_passages": len(all_cited & passage_msgs), "cited_candidates": len(all_cited & cand_msgs),
            "memories_with_candidate": {m for m, ids in cited.items() if ids & cand_msgs},
            "unresolved_uuids": sum(len(m.uuids) for m in gold.memories) - sum(len(v) for v in cited.values())}


def recall_text(home: Path, db: Path, prompt: str, chars: int) -> str:
    from reverie.consolidate import settings as settings_mod
    from reverie.consolidate.paths import CACHE_DIR, in_home
    from reverie.graph.recall import Budgets, recall
    from reverie.graph.recall_embed import prompt_embedder

    settings = settings_mod.load_settings(home)
    embedder = prompt_embedder(settings_mod.get(settings, "embedding_model"), in_home(home, CACHE_DIR))
    res = recall(db, prompt, kind="prompt", budgets=Budgets().scaled(chars), embedder=embedder, record=False)
    return res.get("text") or ""


_WORD = re.compile(r"\w+", re.UNICODE)


def raw_turns(db: Path) -> list[str]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = conn.execute(
            """SELECT m.id, group_concat(b.text, '\n') FROM messages m JOIN blocks b ON b.message_id = m.id
               WHERE m.role IN ('user', 'assistant') AND b.type = 'text' AND m.is_sidechain = 0
               GROUP BY m.id ORDER BY m.id""").fetchall()
    finally:
        conn.close()
    return [t for _, t in rows if t and t.strip()]


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


def stored_sentences(dbs) -> tuple[list[str], list[str], list[str], list[str]]:
    """Sentences of the stored user/assistant text blocks, and of every stored block; then the
    user/assistant text two adjacent sentences at a time, and one whole message at a time."""
    conv, every, pairs, messages = [], [], [], []
    for db in dbs:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            rows = conn.execute("SELECT m.id, m.role, b.type, b.text FROM blocks b JOIN messages m ON m.id = b.message_id "
                                "ORDER BY m.id, b.id").fetchall()
        finally:
            conn.close()
        by_message: dict[int, list[str]] = {}
        for mid, role, btype, text in rows:
            pieces = _SENTENCE_END.split(text or "")
            every.extend(pieces)
            if btype == "text" and role in ("user", "assistant"):
                conv.extend(pieces)
                by_message.setdefault(mid, []).append(text or "")
        for texts in by_message.values():
            whole = "\n".join(texts)
            messages.append(whole)
            sents = _SENTENCE_END.split(whole)
            pairs.extend(" ".join(sents[i:i + 2]) for i in range(len(sents)))
    return conv, every, pairs, messages


class BM25Turns:
    """FTS5 BM25 over raw turns; `answer(prompt, chars)` concatenates the best turns up to `chars`."""

    def __init__(self, turns: list[str]) -> None:
        self.turns = turns
        self.conn = sqlite3.connect(":memory:")
        self.conn.execute("CREATE VIRTUAL TABLE t USING fts5(text, tokenize='unicode61')")
        self.conn.executemany("INSERT INTO t (rowid, text) VALUES (?, ?)", enumerate(turns))

    def answer(self, prompt: str, chars: int) -> str:
        words = sorted({w.lower() for w in _WORD.findall(prompt) if len(w) > 2})
        if not words:
            return ""
        q = " OR ".join('"' + w.replace('"', '') + '"' for w in words)
        try:
            ids = [r[0] for r in self.conn.execute("SELECT rowid FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT 200", (q,))]
        except sqlite3.OperationalError:
            return ""
        out, used = [], 0
        for i in ids:
            text = self.turns[i]
            room = chars - used
            if room <= 0:
                break
            piece = text[:room]
            out.append(piece)
            used += len(piece) + 1
        return "\n".join(out)


def oracle_markdown(gold: Gold, directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    cats: dict[str, list[str]] = {}
    for m in gold.memories:
        cat = m.category if m.category in ("decision", "fact", "preference", "pattern", "lesson", "correction") else "fact"
        cats.setdefault(cat, []).append(m.statement)
    lines = ["# memory", ""]
    for cat, statements in cats.items():
        lines += [f"## {cat}", ""] + [f"- {s}" for s in statements] + [""]
    (directory / "semantic.md").write_text("\n".join(lines))


@dataclass
class Result:
    key: str
    split: str
    memories: int = 0
    covered: int = 0
    partial: int = 0
    ceiling_text: int = 0
    ceiling_any: int = 0
    ceiling_pair: int = 0
    ceiling_message: int = 0
    cards: int = 0
    noise_cards: int = 0
    cand: dict = field(default_factory=dict)
    probe_pairs: int = 0
    found: dict = field(default_factory=dict)        # (system, chars) -> pairs found
    injected: dict = field(default_factory=dict)     # (system, chars) -> chars injected in all
    seconds: float = 0.0
    card_texts: list = field(default_factory=list)
    missed: list = field(default_factory=list)
    error: str = ""
    crash: str = ""


def run_one(gold: Gold, work: Path, writer: str) -> Result:
    t0 = time.perf_counter()
    res = Result(gold.key, gold.split, memories=len(gold.memories))
    base = work / gold.key
    shutil.rmtree(base, ignore_errors=True)
    home, oracle_home, projects = base / "home", base / "oracle-home", base / "projects"
    try:
        stage_projects(gold, projects)
        write_settings(home)
        reverie(home, "index", "--projects-dir", str(projects))
        shutil.copytree(home, oracle_home)
        try:
            reverie(home, "consolidate", "--now", "--all", "--writer", writer)
        except RuntimeError as exc:   # a crash is a result (goal: none); what was committed is scored
            res.crash = str(exc)[:300]
        dbs = agent_dbs(home)
        cards = [c for db in dbs.values() for c in active_cards(db)]
        res.cards = len(cards)
        res.card_texts = cards
        res.covered = sum(any(holds_all(c, m.keywords) for c in cards) for m in gold.memories)
        res.partial = sum(any(matches(c, m.keywords) for c in cards) for m in gold.memories)
        res.missed = [m.statement for m in gold.memories if not any(holds_all(c, m.keywords) for c in cards)]
        res.noise_cards = sum(not any(matches(c, m.keywords) for m in gold.memories) for c in cards)
        cand = {"passages": 0, "candidates": 0, "cited": 0, "cited_in_passages": 0, "cited_candidates": 0,
                "unresolved_uuids": 0}
        with_candidate: set[str] = set()
        for db in dbs.values():
            for k, v in candidate_stats(home, db, gold).items():
                if k == "memories_with_candidate":
                    with_candidate |= v
                else:
                    cand[k] += v
        cand["memories_with_candidate"] = len(with_candidate)
        res.cand = cand
        # oracle: the gold statements imported into a copy of the indexed home
        odbs = agent_dbs(oracle_home)
        if gold.memories and odbs:
            agent = next(iter(odbs))
            md = base / "oracle-md"
            reverie(oracle_home, "export", "--markdown", str(md), "--agent", agent)
            oracle_markdown(gold, md)
            reverie(oracle_home, "import", "--markdown", str(md), "--agent", agent)
        conv_sents, all_sents, pairs, messages = stored_sentences(dbs.values())
        res.ceiling_text = sum(any(holds_all(x, m.keywords) for x in conv_sents) for m in gold.memories)
        res.ceiling_any = sum(any(holds_all(x, m.keywords) for x in all_sents) for m in gold.memories)
        res.ceiling_pair = sum(any(holds_all(x, m.keywords) for x in pairs) for m in gold.memories)
        res.ceiling_message = sum(any(holds_all(x, m.keywords) for x in messages) for m in gold.memories)
        mem = {m.id: m for m in gold.memories}
        turns = [t for db in dbs.values() for t in raw_turns(db)]
        bm25 = BM25Turns(turns)
        for probe in gold.probes:
            expected = [mem[e] for e in probe.expects if e in mem]
            res.probe_pairs += len(expected)
            for chars in BUDGETS:
                texts = {
                    "recall": "\n".join(recall_text(home, db, probe.prompt, chars) for db in dbs.values()),
                    "bm25 raw turns": bm25.answer(probe.prompt, chars),
                    "oracle": "\n".join(recall_text(oracle_home, db, probe.prompt, chars) for db in odbs.values()),
                }
                for system, text in texts.items():
                    k = f"{system}@{chars}"
                    res.found[k] = res.found.get(k, 0) + sum(holds_all(text, m.keywords) for m in expected)
                    res.injected[k] = res.injected.get(k, 0) + len(text)
    except Exception as exc:  # noqa: BLE001 - a bench row reports what failed
        res.error = f"{type(exc).__name__}: {exc}"[:500]
    res.seconds = time.perf_counter() - t0
    return res


# ------------------------------------------------------------------------------------------------
# report

def _ratio(a: float, b: float) -> str:
    return f"{a / b:.3f}" if b else "-"


def table(rows: list[list[str]], header: list[str]) -> str:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    fmt = lambda r: "  ".join(str(x).rjust(w) if i else str(x).ljust(w) for i, (x, w) in enumerate(zip(r, widths)))  # noqa: E731
    return "\n".join([fmt(header), fmt(["-" * w for w in widths]), *map(fmt, rows)])


def report(results: list[Result], show_cards: bool, show_misses: bool) -> None:
    header = ["session", "split", "crash", "mem", "covered", "cards", "noise", "cand.recall", "cand.share",
              "probes", "recall@1k", "chars@1k", "bm25@1k", "bm25@4k", "oracle@1k", "s"]
    rows = []
    for r in results:
        if r.error:
            rows.append([r.key, r.split, "", str(r.memories), "ERROR", r.error[:60], "", "", "", "", "", "", "", "", "", f"{r.seconds:.0f}"])
            continue
        n = max(1, len(_probes_of(r)))
        rows.append([r.key, r.split, "yes" if r.crash else "", str(r.memories), _ratio(r.covered, r.memories), str(r.cards),
                     _ratio(r.noise_cards, r.cards), _ratio(r.cand.get("cited_candidates", 0), r.cand.get("cited", 0)),
                     _ratio(r.cand.get("candidates", 0), r.cand.get("passages", 0)), str(r.probe_pairs),
                     _ratio(r.found.get("recall@1000", 0), r.probe_pairs),
                     str(r.injected.get("recall@1000", 0) // n),
                     _ratio(r.found.get("bm25 raw turns@1000", 0), r.probe_pairs),
                     _ratio(r.found.get("bm25 raw turns@4000", 0), r.probe_pairs),
                     _ratio(r.found.get("oracle@1000", 0), r.probe_pairs), f"{r.seconds:.0f}"])
    print(table(rows, header))
    print()
    for split in sorted({r.split for r in results}) + ["all"]:
        rs = [r for r in results if (split == "all" or r.split == split) and not r.error]
        if not rs:
            continue
        mem = sum(r.memories for r in rs)
        cards = sum(r.cards for r in rs)
        pairs = sum(r.probe_pairs for r in rs)
        nprobes = sum(len(_probes_of(r)) for r in rs) or 1
        cand = {k: sum(r.cand.get(k, 0) for r in rs)
                for k in ("passages", "candidates", "cited", "cited_in_passages", "cited_candidates",
                          "memories_with_candidate")}
        crashes = sum(1 for r in rs if r.crash)
        print(f"== {split}: {len(rs)} sessions, {mem} gold memories, {cards} cards, {pairs} probe pairs,"
              f" {crashes} consolidation crashes"
              f" ({sum(1 for r in results if r.error and (split == 'all' or r.split == split))} bench errors)")
        print(f"   coverage {_ratio(sum(r.covered for r in rs), mem)} (partial {_ratio(sum(r.partial for r in rs), mem)})  noise {_ratio(sum(r.noise_cards for r in rs), cards)}"
              f"  cards/session {cards / len(rs):.1f}")
        print(f"   extractive ceiling: {_ratio(sum(r.ceiling_text for r in rs), mem)} (one sentence of user/assistant"
              f" text), {_ratio(sum(r.ceiling_any for r in rs), mem)} (one sentence of any stored block);"
              f" {_ratio(sum(r.ceiling_pair for r in rs), mem)} (two adjacent sentences of one user/assistant message),"
              f" {_ratio(sum(r.ceiling_message for r in rs), mem)} (one whole user/assistant message)")
        print(f"   candidates: {_ratio(cand['cited_candidates'], cand['cited'])} of {cand['cited']} gold-cited messages"
              f" ({_ratio(cand['cited_in_passages'], cand['cited'])} in any passage) at"
              f" {_ratio(cand['candidates'], cand['passages'])} of {cand['passages']} passages;"
              f" {_ratio(cand['memories_with_candidate'], mem)} of the gold memories rest on some candidate")
        rows = []
        for system in ("recall", "bm25 raw turns", "oracle"):
            row = [system]
            for chars in BUDGETS:
                k = f"{system}@{chars}"
                row += [_ratio(sum(r.found.get(k, 0) for r in rs), pairs), str(sum(r.injected.get(k, 0) for r in rs) // nprobes)]
            rows.append(row)
        print(table(rows, ["probes answered by", "recall@1000", "avg chars", "recall@4000", "avg chars"]))
        print()
    if show_cards or show_misses:
        for r in results:
            if show_cards:
                print(f"--- cards of {r.key} ({r.cards})")
                for c in r.card_texts:
                    print("   *", c)
            if show_misses:
                print(f"--- gold memories of {r.key} no card states ({len(r.missed)})")
                for s in r.missed:
                    print("   -", s)


_PROBES: dict[str, list[Probe]] = {}


def _probes_of(r: Result) -> list[Probe]:
    return _PROBES.get(r.key, [])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--split", choices=("dev", "heldout", "all"), default="dev")
    ap.add_argument("--work", type=Path, default=ROOT / "bench" / "out" / "coding")
    ap.add_argument("--writer", default="offline")
    ap.add_argument("--only", nargs="*", help="gold keys to run")
    ap.add_argument("--cards", action="store_true", help="print every card")
    ap.add_argument("--misses", action="store_true", help="print the gold memories no card states")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args(argv)
    golds = load_gold(args.split, args.only)
    if not golds:
        print("no gold sessions selected", file=sys.stderr)
        return 2
    missing = [g.key for g in golds if not g.session.exists()]
    if missing:
        print(f"transcripts missing (../shared beside the checkout?): {missing}", file=sys.stderr)
        return 2
    for g in golds:
        _PROBES[g.key] = g.probes
    args.work.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = list(pool.map(run_one, golds, [args.work] * len(golds), [args.writer] * len(golds)))
    print(f"coding memory bench: split {args.split}, writer {args.writer}, {len(golds)} sessions, "
          f"{time.perf_counter() - t0:.0f} s\n")
    report(results, args.cards, args.misses)
    return 0


if __name__ == "__main__":
    sys.exit(main())
