"""Secret redaction bench: quality and speed of `redact/`, side by side with detect-secrets 1.5.

Run:  .venv/bin/python bench/redact_bench.py [--data DIR] [--fixtures DIR ...] [--corpus DIR] [--mb 20]
                                             [--no-ds] [--show-misses] [--show-flags] [--show-split dev|held|all]
                                             [--only quality|transcripts|speed]

Dev / held-out: each scanner corpus is split 50/50 by a hash of each row (`split_of`); every table
prints both columns. Rules are tuned looking at dev rows only (--show-misses/--show-flags list dev
rows by default); the held-out column is the figure to quote.

Datasets (read in place, gzip-compressed JSON Lines; never decompressed to disk):
  <data>/gitleaks_cases.jsonl.gz, <data>/detect_secrets_cases.jsonl.gz (see their README).

How the bench knows "the value" of a secret row (recall counts only when it is gone from the output):
  1. A PEM / PuTTY private key: the longest line of the key body (any line of it surviving is a leak).
  2. Otherwise the text is cut into tokens at whitespace, quotes, backticks, brackets, commas,
     semicolons, pipes and literal escapes (\\n, \\t, \\"); a token `key=value` / `key:value` whose
     left side is an identifier, or `scheme://user:pass@host`, contributes its value part; tokens
     that are URLs without credentials, paths, or XML tags are dropped.
  3. Names are never values: a token written right before an assignment operator (`KEY=`, `KEY:`,
     `"KEY" =>`, `KEY :=`) or as an XML tag name is a key; an all-caps environment-variable-like name
     (`BUNDLE_GEMS__CONTRIBSYS__COM`) scores like a word.
  4. The value is the token with the highest score = length x Shannon entropy, x1.5 when it has a
     digit, x0.5 when it reads like a word or camelCase identifier (shell variables like $HOME and
     lower-case dotted names like kubernetes.io/name or timestamps are never values): the secret in every row
     shape of these datasets (a random string dominates the surrounding keys and code). A generated
     row wraps one seeded sample in a template, and the rule picks exactly that sample.
  The row is recalled when that value no longer occurs in the redacted output, with the tools'
  replacement markers (`[REDACTED:password]`, `[REDACTED]`) taken out first, so that a value like
  `password` is not found inside the marker that replaced it.
  A not_secret row is "flagged" when the tool reports anything at all in it.

detect-secrets is measured the same way: each reported secret_value is replaced in the text, then the
value check above runs. "file" = scan_file on a temp file per row (default plugins and filters; temp
files live in a temporary directory outside the repo and are removed); "line" = scan_line per line.

Own corpus (bench/secret_corpus/, see its README): hand-written cases in real-world shapes (env,
compose, k8s, CI, shell history, tool output, stack traces, config files, code), each secret value
marked, so recall is exact: a secret case is recalled when every marked value is gone; a not_secret
case is flagged when anything is reported. Reported per family next to the two scanner corpora.

Transcript false positives: every string of every line of the shared transcripts (Claude Code
fixtures and the real published sessions, `--fixtures` repeatable) goes through
`Redactor.redact`; every finding is printed with its value masked (first 3 characters, class shape,
length, entropy) and its context, so a person can judge. Goal: <= 1 false finding per MB.

Throughput: the fixture lines repeated to --mb MB, one `redact()` call per line, on one core; the
same as text blocks (every JSON string, what the indexer redacts), one `redact()` per block and
`redact_many()` per batch of 500; also the secret corpus (every row a candidate: the cost of the
confirming stage), per row and via `redact_many()`; also with 100k remembered secrets in a
temporary secrets dir (lookup cost must not grow with the number of remembered secrets), and the
remembered-secret lookup alone over the fixture lines once with empty caches (text never seen). The first
pass over new text also builds the RE2 automaton's states (cached for the process), so the fixtures
repeated to 20 MB measure the warm, steady state of a long indexing run; text read once is measured
too (bench/redact_read_once.py), split by stage (`print_stages`).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from redact_read_once import MODES as READ_ONCE_MODES, print_stages, read_once_throughput  # noqa: E402
from redact_corpus import CORPUS_DIR, HELD_ROUNDS, INDEP_DIR, indep_split, load_corpus  # noqa: E402,F401
from redact_crafted import print_crafted  # noqa: E402
from redact_verdicts import (FALSE_VERDICTS, VERDICTS, finding_id, judged_false, load_verdicts, row_id,  # noqa: E402
                             verdict_of)

DEFAULT_DATA = ROOT.parent / "shared" / "bench" / "secrets"
DEFAULT_FIXTURES = ROOT.parent / "shared" / "fixtures" / "claude-code"
DEFAULT_REAL_SESSIONS = ROOT.parent / "shared" / "fixtures" / "real-sessions"


# --------------------------------------------------------------------------- the value of a row

_SPLIT = re.compile(r"""\\[nrt"']|[\s"'`<>()\[\]{},;|]+""")
_KEYED = re.compile(r"^([A-Za-z_$@.\-][\w.\-$@]{0,60}?)(?::=|=>|[:=])(.+)$")
_SHELLVAR = re.compile(r"^\$[A-Za-z_{(]|\$\{|\$\(|%\{")
# (a hump starts at an upper-case letter or a separator: with `[A-Z_\-]?[A-Za-z]` a lower-case run
# could be cut into humps in exponentially many ways, and a long one that fails hangs the bench)
_WORDLIKE = re.compile(r"^[A-Za-z]?[a-z]+(?:(?:[A-Z_\-][A-Za-z]|[A-Z])[a-z]+)*$")
_QUOTED = re.compile(r"\"([^\"\s]{6,})\"|'([^'\s]{6,})'|`([^`\s]{6,})`")
_NOT_VALUE = re.compile(r"^(?:[a-z]+(?:[./_\-][a-z]+)+|\d{4}-\d\d-\d\d[T ][\d:.Z+\-]*)$")
_QUERY = re.compile(r"[?&][^=&#]+=([^&#]+)")
_USERINFO = re.compile(r"^[A-Za-z][\w+.\-]*://[^:/@\s]*:([^@/\s]+)@")
_URL = re.compile(r"^[A-Za-z][\w+.\-]*://")
_PEM = re.compile(r"-----BEGIN[ A-Z0-9_-]*PRIVATE KEY(?: BLOCK)?-----(.*?)(?:-----END|$)", re.S)
# A name written before an assignment operator, and XML tag names: keys, not values.
# (`=` right after the name and before a quote, a space or the end is base64 padding, not an operator)
_KEY_BEFORE_OP = re.compile(
    r"""([A-Za-z_$@][\w.\-$@]*)(?:["'`\]][ \t]*|[ \t]+(?:string[ \t]+)?)?"""
    r"""(?::{1,3}=|\?=|=>|\.=|(?<=[\s"'`\]])=(?!=)|=(?![=\s"'`]|$)|=(?=["'`][^"'`\s,;)])|:(?![/\\]))"""
)
_XML_TAG = re.compile(r"</?([A-Za-z_][\w.\-]*)")
_ENVNAME = re.compile(r"^[A-Z][A-Z_]*[A-Z](?:[a-z]+)?$")
_MARKER = re.compile(r"\[REDACTED(?::[a-z_]+)?\]")


def secret_value(text: str) -> str:
    """The secret of a labelled row (see the module docstring)."""
    from reverie.redact.shapes import shannon

    m = _PEM.search(text)
    if m:
        lines = [ln.strip() for ln in re.split(r"\n|\\n", m.group(1)) if ln.strip()]
        if lines:
            return max(lines, key=len)
    best, score = "", -1.0
    keys = set(_KEY_BEFORE_OP.findall(text)) | set(_XML_TAG.findall(text))
    quoted = [next(g for g in m.groups() if g) for m in _QUOTED.finditer(text)]
    tokens = _SPLIT.split(text) + quoted
    tokens += [q for t in tokens if _URL.match(t) for q in _QUERY.findall(t)]
    # a URL's path segments, but not its words (`/services/` of a webhook URL is no secret)
    tokens += [seg for t in tokens if _URL.match(t) for seg in t.split("?")[0].split("/")[3:]
               if not seg.isalpha() or not seg.islower()]
    for tok in tokens:
        tok = tok.strip(".:=")
        if not tok:
            continue
        u = _USERINFO.match(tok)
        if u:
            tok = u.group(1)
        elif tok.startswith("/") and "=" in tok:
            tok = tok.rsplit("=", 1)[1]
        elif _URL.match(tok) or tok.startswith("/"):
            continue
        else:
            k = _KEYED.match(tok)
            if k and sum(ch.isdigit() for ch in k.group(1)) <= 2 and not k.group(2).startswith("//"):
                tok = k.group(2).strip("=:")
        if _NOT_VALUE.match(tok) or _SHELLVAR.search(tok) or tok in keys:
            continue
        if not tok:
            continue
        sc = len(tok) * shannon(tok)
        if any(ch.isdigit() for ch in tok):
            sc *= 1.5
        if _WORDLIKE.match(tok) or ("_" in tok and _ENVNAME.match(tok)):
            sc *= 0.5
        if sc > score:
            best, score = tok, sc
    return best


def recalled(value: str, output: str) -> bool:
    return bool(value) and value not in _MARKER.sub("", output)


# --------------------------------------------------------------------------- tools


class OurTool:
    name = "reverie"

    def __init__(self) -> None:
        from reverie.redact.engine import Redactor

        self.r = Redactor(None)

    def run(self, text: str) -> tuple[str, int]:
        red = self.r.redact(text)
        return red.text, red.count


class DetectSecretsFile:
    name = "detect-secrets(file)"

    def __init__(self) -> None:
        from detect_secrets.core.scan import scan_file  # noqa: F401  (bench-only dependency)

        self.tmp = tempfile.TemporaryDirectory(prefix="redact-bench-")
        self.i = 0

    def run(self, text: str) -> tuple[str, int]:
        from detect_secrets.core.scan import scan_file
        from detect_secrets.settings import default_settings

        self.i += 1
        path = os.path.join(self.tmp.name, f"case{self.i}.txt")
        with open(path, "w", encoding="utf-8", errors="surrogatepass") as fh:
            fh.write(text)
        try:
            with default_settings():
                values = [s.secret_value for s in scan_file(path) if s.secret_value]
        finally:
            os.unlink(path)
        return _replace_all(text, values), len(values)


class DetectSecretsLine:
    name = "detect-secrets(line)"

    def run(self, text: str) -> tuple[str, int]:
        from detect_secrets.core.scan import scan_line
        from detect_secrets.settings import default_settings

        values = []
        with default_settings():
            for line in text.splitlines() or [text]:
                values.extend(s.secret_value for s in scan_line(line) if s.secret_value)
        return _replace_all(text, values), len(values)


def _replace_all(text: str, values: list[str]) -> str:
    for v in sorted(set(values), key=len, reverse=True):
        text = text.replace(v, "[REDACTED]")
    return text


# --------------------------------------------------------------------------- quality


def load(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def family(rule: str) -> str:
    return rule.split("-")[0] if "-" in rule else rule


def split_of(row: dict) -> str:
    """"dev" or "held": a stable 50/50 split of a scanner corpus by a hash of the row (its rule, label
    and text; the rows carry no id). Rules are tuned on dev rows only; held-out figures are quoted."""
    return "dev" if int(row_id(row)[:2], 16) & 1 == 0 else "held"   # the first byte of its sha256


SPLITS = ("dev", "held")


def evaluate(tool, rows: list[dict]) -> dict:
    """Recall / flags overall, on literal rows, and per rule family: fam = [secret rows, recalled,
    literal secret rows, literal recalled, not_secret rows, flagged]; the same six counts per split
    (`split_of`) in by[split]."""
    stats = {"secret": 0, "hit": 0, "lit": 0, "lit_hit": 0, "neg": 0, "flag": 0, "seconds": 0.0,
             "fam": defaultdict(lambda: [0, 0, 0, 0, 0, 0]), "misses": [], "flags": [],
             "by": {sp: [0, 0, 0, 0, 0, 0] for sp in SPLITS},
             "flag_verdicts": {sp: [] for sp in SPLITS}}
    judged = load_verdicts()["rows"]
    values = [secret_value(row["text"]) if row["label"] == "secret" else "" for row in rows]
    outs = []
    t0 = time.perf_counter()  # the tool's time only
    for row in rows:
        outs.append(tool.run(row["text"]))
    stats["seconds"] = time.perf_counter() - t0
    for row, value, (out, n) in zip(rows, values, outs):
        fam = stats["fam"][family(row["rule"])]
        sp = split_of(row)
        by = stats["by"][sp]
        if row["label"] == "secret":
            # no value to look for (a placeholder such as `npm_xxxxxxxxxxx`, which `secret_value`
            # skips): the row is recalled when the tool redacted something in it
            ok = recalled(value, out) if value else n > 0
            stats["secret"] += 1
            stats["hit"] += ok
            fam[0] += 1
            fam[1] += ok
            by[0] += 1
            by[1] += ok
            if row.get("source") == "literal":
                stats["lit"] += 1
                stats["lit_hit"] += ok
                fam[2] += 1
                fam[3] += ok
                by[2] += 1
                by[3] += ok
            if not ok:
                stats["misses"].append(row)
        else:
            stats["neg"] += 1
            fam[4] += 1
            by[4] += 1
            if n:
                stats["flag"] += 1
                fam[5] += 1
                by[5] += 1
                stats["flags"].append(row)
                stats["flag_verdicts"][sp].append(verdict_of(judged, row_id(row)))
    return stats


def pct(a: int, b: int) -> str:
    return f"{100.0 * a / b:5.1f}%" if b else "   - "


def _masked_row(text: str, value: str, width: int = 150) -> str:
    """The row with its secret value masked (see `mask`), cut to `width` characters."""
    if value and value in text:
        text = text.replace(value, "<" + mask(value) + ">")
    return repr(text[:width])


def quality_table(name: str, rows: list[dict], tools: list, show_misses: bool, show_flags: bool,
                  show_split: str = "dev") -> dict:
    from reverie.redact.shapes import is_placeholder

    print(f"\n== {name}: {sum(r['label'] == 'secret' for r in rows)} secret rows "
          f"({sum(r['label'] == 'secret' and r.get('source') == 'literal' for r in rows)} literal), "
          f"{sum(r['label'] != 'secret' for r in rows)} not_secret rows")
    results = {}
    for tool in tools:
        results[tool.name] = evaluate(tool, rows)
    print(f"{'tool':24} {'recall':>8} {'literal':>8} {'flag rate':>10} {'seconds':>8}   "
          + "   ".join(f"{sp + ' recall':>11} {sp + ' literal':>12} {sp + ' flags':>10}" for sp in SPLITS))
    for tname, s in results.items():
        cells = "   ".join(f"{pct(b[1], b[0]):>11} {pct(b[3], b[2]):>12} {pct(b[5], b[4]):>10}"
                           for b in (s["by"][sp] for sp in SPLITS))
        print(f"{tname:24} {pct(s['hit'], s['secret']):>8} {pct(s['lit_hit'], s['lit']):>8} "
              f"{pct(s['flag'], s['neg']):>10} {s['seconds']:8.2f}   {cells}")
    ours = results["reverie"]
    held = sum(1 for r in ours["misses"] if is_placeholder(secret_value(r["text"])))
    print(f"reverie misses whose value is a placeholder (xxxx..., EXAMPLE, fake), left alone by design: "
          f"{held} of {len(ours['misses'])}")
    print("\nper rule family: recalled/secret rows, of them literal rows, flagged/not_secret rows")
    print(f"  {'family':28} " + "  ".join(f"{t[:26]:>26}" for t in results))
    print(f"  {'':28} " + "  ".join(f"{'all':>8} {'literal':>8} {'flags':>8}" for _ in results))
    for fam in sorted(ours["fam"]):
        cells = []
        for tname, s in results.items():
            n, h, ln, lh, neg, fl = s["fam"].get(fam, [0] * 6)
            cells.append(f"{f'{h}/{n}' if n else '-':>8} {f'{lh}/{ln}' if ln else '-':>8} "
                         f"{f'{fl}/{neg}' if neg else '-':>8}")
        print(f"  {fam:28} " + "  ".join(cells))
    if show_misses:
        print(f"\nmissed secret rows (reverie, {show_split} split), value masked:")
        for row in ours["misses"]:
            if show_split != "all" and split_of(row) != show_split:
                continue
            print(f"  [{row['rule']}/{row.get('source')}] {_masked_row(row['text'], secret_value(row['text']))}")
    if show_flags:
        tool = next(t for t in tools if t.name == "reverie")
        print(f"\nflagged not_secret rows (reverie, {show_split} split): rule and masked value of each finding")
        for row in ours["flags"]:
            if show_split != "all" and split_of(row) != show_split:
                continue
            found = [(f.rule, mask(row["text"][f.start:f.end])) for f in tool.r.redact(row["text"]).findings]
            judged = load_verdicts()["rows"].get(row_id(row), {})
            print(f"  [{row['rule']}/{row.get('source')}] {found}  judged: {judged.get('verdict', 'unjudged')}"
                  f"{' (' + judged['why'] + ')' if judged.get('why') else ''}")
    return results


# --------------------------------------------------------------------------- own corpus

def corpus_table(cases: list[dict], tools: list, show_misses: bool, title: str = "own corpus (bench/secret_corpus)",
                 split=None) -> dict:
    """Recall (every marked value gone) and flags per family, for each tool; with `split` (case ->
    "dev" | "held"), also per split, and misses and flags are listed for dev cases only."""
    print(f"\n== {title}: {sum(c['label'] == 'secret' for c in cases)} secret cases, "
          f"{sum(c['label'] != 'secret' for c in cases)} not_secret cases, {len({c['file'] for c in cases})} files")
    results = {}
    for tool in tools:
        st = {"secret": 0, "hit": 0, "neg": 0, "flag": 0, "fam": defaultdict(lambda: [0, 0, 0, 0]), "misses": [],
              "flags": []}
        for c in cases:
            out, n = tool.run(c["text"])
            fam = st["fam"][c["family"]]
            sp = split(c) if split else "dev"
            by = st.setdefault("split", {}).setdefault(sp, [0, 0, 0, 0])
            if c["label"] == "secret":
                ok = all(recalled(v, out) for v in c["values"])
                st["secret"] += 1
                st["hit"] += ok
                fam[0] += 1
                fam[1] += ok
                by[0] += 1
                by[1] += ok
                if not ok and sp == "dev":
                    st["misses"].append((c, out))
            else:
                st["neg"] += 1
                fam[2] += 1
                by[2] += 1
                if n:
                    st["flag"] += 1
                    fam[3] += 1
                    by[3] += 1
                    if sp == "dev":
                        st["flags"].append(c)
        results[tool.name] = st
    if split:
        print(f"{'tool':24} {'recall':>8} {'flag rate':>10}  {'dev recall':>10} {'dev flags':>10}  "
              f"{'held recall':>11} {'held flags':>10}")
    else:
        print(f"{'tool':24} {'recall':>8} {'flag rate':>10}")
    for tname, st in results.items():
        row = f"{tname:24} {pct(st['hit'], st['secret']):>8} {pct(st['flag'], st['neg']):>10}"
        if split:
            d, h = (st.get("split", {}).get(k, [0, 0, 0, 0]) for k in ("dev", "held"))
            row += f"  {pct(d[1], d[0]):>10} {pct(d[3], d[2]):>10}  {pct(h[1], h[0]):>11} {pct(h[3], h[2]):>10}"
        print(row)
    if split:
        # per round (the file name's letters before `_`): its split, recall and flag rate (reverie)
        rounds: dict[str, list] = {}
        for c in cases:
            rounds.setdefault(c["file"].split("_")[0], [split(c), 0, 0, 0, 0])
        ours_run = next(t for t in tools if t.name == "reverie")
        for c in cases:
            st = rounds[c["file"].split("_")[0]]
            red = ours_run.r.redact(c["text"])
            if c["label"] == "secret":
                st[1] += 1
                st[2] += all(recalled(v, red.text) for v in c["values"])
            else:
                st[3] += 1
                st[4] += bool(red.findings)
        print("\nper round (reverie): recall / flag rate")
        for sp in ("dev", "held"):
            print(f"  {sp:5} " + "  ".join(f"{k} {pct(st[2], st[1])}/{pct(st[4], st[3])}"
                                           for k, st in sorted(rounds.items(), key=lambda kv: (len(kv[0]), kv[0]))
                                           if st[0] == sp))
    # a held-out round's families are not listed (their counts would say which of them miss)
    held_fams = {c["family"] for c in cases if split is not None and split(c) == "held"}
    print("\nper family: recalled/secret cases, flagged/not_secret cases"
          + (f" ({len(held_fams)} families of held-out rounds not listed)" if held_fams else ""))
    print(f"  {'family':20} " + "  ".join(f"{t[:22]:>22}" for t in results))
    ours = results["reverie"]
    for fam in sorted(ours["fam"]):
        if fam in held_fams:
            continue
        cells = []
        for st in results.values():
            n, h, neg, fl = st["fam"].get(fam, [0] * 4)
            cells.append(f"{f'{h}/{n}' if n else '-':>10} {f'{fl}/{neg}' if neg else '-':>11}")
        print(f"  {fam:20} " + "  ".join(cells))
    if show_misses:
        print("\nmissed secret cases and flagged not_secret cases (reverie), values masked:")
        for c, out in ours["misses"]:
            left = [mask(v) for v in c["values"] if not recalled(v, out)]
            print(f"  miss [{c['file']}/{c['family']}] {left}")
        tool = next(t for t in tools if t.name == "reverie")
        for c in ours["flags"]:
            found = [(f.rule, mask(c["text"][f.start:f.end])) for f in tool.r.redact(c["text"]).findings]
            print(f"  flag [{c['file']}/{c['family']}] {found}")
    return results


# --------------------------------------------------------------------------- transcripts


def _strings(obj, out: list[str]) -> None:
    if isinstance(obj, str):
        out.append(obj)
    elif isinstance(obj, dict):
        for v in obj.values():
            _strings(v, out)
    elif isinstance(obj, list):
        for v in obj:
            _strings(v, out)


def fixture_texts(root: Path | list[Path]) -> tuple[list[str], list[str], int]:
    """(text blocks = every JSON string of every line, raw lines, total bytes of the files) of
    every transcript under `root` (a folder or a list of folders)."""
    texts: list[str] = []
    lines: list[str] = []
    total = 0
    roots = root if isinstance(root, list) else [root]
    for path in sorted(p for r in roots for p in r.rglob("*.jsonl")):
        raw = path.read_text(encoding="utf-8", errors="surrogateescape")
        total += len(raw.encode("utf-8", "surrogateescape"))
        for line in raw.splitlines():
            if not line.strip():
                continue
            lines.append(line)
            try:
                _strings(json.loads(line), texts)
            except ValueError:
                texts.append(line)
    return texts, lines, total


def mask(value: str) -> str:
    from reverie.redact.shapes import shannon

    shape = re.sub(r"[a-z]+", "a", re.sub(r"[A-Z]+", "A", re.sub(r"[0-9]+", "9", value)))[:24]
    return f"{value[:3]}… len={len(value)} H={shannon(value):.2f} shape={shape}"


def transcript_findings(texts: list[str], total_bytes: int, roots: list[Path] | None = None) -> dict:
    """Every finding on the transcripts, printed masked with a person's verdict (`VERDICTS`);
    {"findings": n, "false": findings judged false or not judged, "by_verdict": {verdict: n},
    "unjudged": the keys of the findings with no verdict}."""
    from reverie.redact.engine import Redactor

    r = Redactor(None)
    judged = load_verdicts()["transcripts"]
    by: dict[str, int] = defaultdict(int)
    unjudged: set[str] = set()
    n = 0
    where = ", ".join(str(p) for p in roots) if roots else "the Claude Code fixtures"
    print(f"\n== findings on the shared transcripts ({where}: {total_bytes / 1e6:.2f} MB of transcript "
          f"files, {len(texts)} strings); every finding, value masked, with a person's verdict "
          f"({VERDICTS.name}; none: counted false):")
    for t in texts:
        red = r.redact(t)
        for f in red.findings:
            n += 1
            value = t[f.start:f.end]
            key = finding_id(t, f.start, f.end, f.rule)
            verdict = verdict_of(judged, key)
            by[verdict] += 1
            if verdict == "unjudged":
                unjudged.add(key)
            ctx = t[max(0, f.start - 40):f.start].replace("\n", "\\n")
            print(f"  {f.type:14} {f.rule:22} …{ctx[-40:]!r} [{mask(value)}]  {verdict}")
    false = sum(by[v] for v in FALSE_VERDICTS)
    mb = total_bytes / 1e6
    print(f"findings: {n} ({n / mb:.2f} per MB); by verdict: "
          + ", ".join(f"{v} {k}" for v, k in sorted(by.items())) + f"; false: {false} ({false / mb:.2f} per MB)")
    return {"findings": n, "false": false, "by_verdict": dict(by), "unjudged": sorted(unjudged)}


# --------------------------------------------------------------------------- throughput


_TEXTS: tuple = ()


def throughput(lines: list[str], mb: float, rows: list[dict]) -> dict:
    from reverie.redact.engine import Redactor
    from reverie.redact.memory import SecretMemory

    target = int(mb * 1e6)
    corpus: list[str] = []
    size = 0
    while size < target:
        for ln in lines:
            corpus.append(ln)
            size += len(ln.encode("utf-8", "surrogateescape")) + 1
            if size >= target:
                break
    out = {}
    r = Redactor(None)

    def run(redactor, texts, label, batch: int = 0):
        nbytes = sum(len(t.encode("utf-8", "surrogateescape")) for t in texts)
        t0 = time.perf_counter()
        if batch:
            for k in range(0, len(texts), batch):
                redactor.redact_many(texts[k:k + batch])
        else:
            for t in texts:
                redactor.redact(t)
        dt = time.perf_counter() - t0
        out[label] = nbytes / 1e6 / dt
        print(f"  {label:58} {nbytes / 1e6:7.1f} MB  {dt:7.2f} s  {nbytes / 1e6 / dt:8.1f} MB/s")

    print("\n== throughput (one core; redact() per line / block / row, or redact_many() per batch)")
    run(r, corpus, "transcripts, no remembered secrets")
    run(r, corpus, "transcript lines via redact_many (batches of 500)", batch=500)
    blocks: list[str] = []
    size = 0
    texts, _, _ = fixture_texts(DEFAULT_FIXTURES) if not _TEXTS else _TEXTS
    while size < target:
        for t in texts:
            blocks.append(t)
            size += len(t.encode("utf-8", "surrogateescape"))
            if size >= target:
                break
    run(r, blocks, "transcript text blocks (each JSON string), no remembered")
    run(r, blocks, "transcript text blocks via redact_many (batches of 500)", batch=500)
    secret_texts = [row["text"] for row in rows]
    reps = max(1, -(-int(2e6) // max(1, sum(len(t.encode("utf-8", "surrogateescape")) for t in secret_texts))))
    secret_corpus = secret_texts * reps
    run(r, secret_corpus, "secret corpus (all rows, repeated to >= 2 MB)")
    run(r, secret_corpus, "secret corpus via redact_many (batches of 500)", batch=500)
    with tempfile.TemporaryDirectory(prefix="redact-bench-mem-") as tmp:
        mem = SecretMemory(Path(tmp) / "secrets")
        import secrets as pysecrets
        import string

        alphabet = string.ascii_letters + string.digits + "_-"
        from reverie.redact.shapes import credential_like

        values = ["".join(pysecrets.choice(alphabet) for _ in range(12 + i % 40)) for i in range(100_000)]
        values = [v for v in values if credential_like(v)]  # what remember() accepts
        t0 = time.perf_counter()
        added = mem.remember(values)
        print(f"  remembered {added} random secrets in {time.perf_counter() - t0:.2f} s")
        rm = Redactor(Path(tmp) / "secrets", learn=False)
        run(rm, corpus, "transcripts, 100k remembered secrets")
        run(rm, blocks, "text blocks via redact_many (500), 100k remembered", batch=500)
        # the lookup alone on text it has never seen (a fresh instance: empty caches), one pass
        # over the fixtures without repeats: the cost of new transcript text in an indexing run
        fresh = SecretMemory(Path(tmp) / "secrets")
        nbytes = sum(len(ln.encode("utf-8", "surrogateescape")) for ln in lines)
        t0 = time.perf_counter()
        for ln in lines:
            fresh.find(ln)
        dt = time.perf_counter() - t0
        out["remembered lookup alone, new text"] = nbytes / 1e6 / dt
        print(f"  {'remembered lookup alone (100k), fixture lines once, new text':58} {nbytes / 1e6:7.1f} MB  "
              f"{dt:7.2f} s  {nbytes / 1e6 / dt:8.1f} MB/s")
        fresh.close()
        probe = [f"psql -U app password {v} then user:{v}@host and \"{v}\"" for v in values[:2000]]
        t0 = time.perf_counter()
        found = sum(rm.memory.scrub(p)[1] for p in probe)
        dt = time.perf_counter() - t0
        print(f"  remembered lookups: {found}/{3 * len(probe)} planted occurrences found alone, "
              f"{len(probe) / dt:,.0f} texts/s")
        rm.memory.close()
        mem.close()
    out["floor"] = secret_corpus_floor(secret_texts, r)
    return out


#: The least any redactor must match on the secret corpus: a keyed value, or a long token-like run.
FLOOR_PATTERNS = (
    r"(?i)(?:key|secret|token|password|passwd|pwd|auth|credential)[\w.-]*\s*[:=]\s*[\"']?[\w+/=.\-]{8,}",
    r"[A-Za-z0-9_\-]{20,}",
)


def secret_corpus_floor(texts: list[str], redactor) -> dict:
    """How fast the secret corpus could go at best from Python, next to `redactor`: the rows joined into
    one text, two generic patterns (`FLOOR_PATTERNS`) matched in one pass, and per match nothing, then
    only the keyed hash every finding carries (HMAC-SHA256, one call). With google-re2 (finditer) and,
    when the `hyperscan` package is installed, hyperscan (one scan, a Python callback per match; a
    trailing delimiter makes it report each run once). No confirmation, no types, no placeholder
    checks: an upper bound. Returns {label: MB/s}; the budget per finding is printed."""
    import hashlib
    import hmac

    import re2

    text = "\n".join(texts)
    data = text.encode("utf-8", "surrogatepass")
    mb = len(data) / 1e6
    findings = sum(len(x.findings) for x in redactor.redact_many(texts))
    key = os.urandom(32)
    res: dict[str, float] = {}

    def best(fn) -> tuple[float, int]:
        times, n = [], 0
        for _ in range(3):
            t0 = time.perf_counter()
            n = fn()
            times.append(time.perf_counter() - t0)
        return min(times), n

    print(f"\n== secret corpus floor ({mb:.2f} MB joined, {findings} findings by reverie: "
          f"{len(data) / max(1, findings):.0f} bytes per finding; 50 MB/s leaves "
          f"{len(data) / max(1, findings) / 50:.2f} us per finding)")
    r2 = re2.compile("|".join(f"(?:{p})" for p in FLOOR_PATTERNS))

    def re2_only() -> int:
        return sum(1 for _ in r2.finditer(text))

    def re2_hash() -> int:
        n = 0
        for m in r2.finditer(text):
            hmac.digest(key, m.group().encode("utf-8", "surrogatepass"), hashlib.sha256)
            n += 1
        return n

    runs = [("google-re2 finditer, nothing per match", re2_only), ("google-re2 finditer + one HMAC per match", re2_hash)]
    try:
        import hyperscan
    except ImportError:
        hyperscan = None
        print("  (hyperscan not installed: pip install hyperscan for its rows)")
    if hyperscan is not None:
        db = hyperscan.Database()
        pats = [(p + r"[^\w+/=.\-]" if i == 0 else p + r"[^A-Za-z0-9_\-]").encode() for i, p in enumerate(FLOOR_PATTERNS)]
        db.compile(expressions=pats, ids=list(range(len(pats))), elements=len(pats),
                   flags=[hyperscan.HS_FLAG_SOM_LEFTMOST] * len(pats))

        def hs(per_match) -> int:
            hits: list[tuple[int, int]] = []
            db.scan(data, match_event_handler=lambda _i, a, b, _f, _c: hits.append((a, b)))
            if per_match:
                for a, b in hits:
                    hmac.digest(key, data[a:b], hashlib.sha256)
            return len(hits)

        runs += [("hyperscan scan + callback, nothing per match", lambda: hs(False)),
                 ("hyperscan scan + callback + one HMAC per match", lambda: hs(True))]
    for label, fn in runs:
        dt, n = best(fn)
        res[label] = mb / dt
        print(f"  {label:58} {n:7d} matches {dt * 1e3:7.1f} ms  {mb / dt:8.1f} MB/s  {dt / max(1, n) * 1e6:6.2f} us/match")
    return res


# --------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--fixtures", type=Path, action="append", default=None,
                    help="transcript folder (repeatable; default: the Claude Code fixtures and the real sessions)")
    ap.add_argument("--corpus", type=Path, default=CORPUS_DIR)
    ap.add_argument("--mb", type=float, default=20.0)
    ap.add_argument("--no-ds", action="store_true", help="skip detect-secrets (faster)")
    ap.add_argument("--show-misses", action="store_true")
    ap.add_argument("--show-flags", action="store_true")
    ap.add_argument("--show-split", choices=[*SPLITS, "all"], default="dev",
                    help="which split of the scanner corpora --show-misses/--show-flags list (default dev: "
                         "tune on dev only, quote held)")
    ap.add_argument("--only", choices=["quality", "transcripts", "speed"], default=None)
    args = ap.parse_args(argv)
    roots = args.fixtures or [DEFAULT_FIXTURES, DEFAULT_REAL_SESSIONS]

    gl = load(args.data / "gitleaks_cases.jsonl.gz")
    ds = load(args.data / "detect_secrets_cases.jsonl.gz")
    summary = {}
    if args.only in (None, "quality"):
        tools = [OurTool()]
        if not args.no_ds:
            tools += [DetectSecretsFile(), DetectSecretsLine()]
        g = quality_table("gitleaks cases", gl, tools, args.show_misses, args.show_flags, args.show_split)
        d = quality_table("detect-secrets cases", ds, tools, args.show_misses, args.show_flags, args.show_split)
        o = corpus_table(load_corpus(args.corpus), tools, args.show_misses)
        ind = corpus_table(load_corpus(INDEP_DIR), tools, args.show_misses,
                           "independent corpus (bench/secret_corpus_indep; "
                           + ", ".join(r + "*" for r in HELD_ROUNDS) + " held out)", indep_split)
        summary["gitleaks"] = g["reverie"]
        summary["detect_secrets"] = d["reverie"]
        summary["own"] = o["reverie"]
        summary["indep"] = ind["reverie"]
    global _TEXTS
    if args.only in (None, "transcripts"):
        texts, lines, total = fixture_texts(roots)
        summary["transcript_findings"] = transcript_findings(texts, total, roots)
        summary["transcript_mb"] = total / 1e6
    if args.only in (None, "speed"):
        # throughput on the first folder (the Claude Code fixtures by default), as before issue 14
        _TEXTS = fixture_texts(roots[0])
        summary["speed"] = throughput(_TEXTS[1], args.mb, gl + ds)
        for mode, label in READ_ONCE_MODES.items():
            mb_once, rate_once = read_once_throughput(roots, mode)
            summary["speed"]["read once " + mode] = rate_once
            print(f"  {label + ', read once (' + f'{mb_once:.1f} MB, CPU time)':60} {rate_once:8.1f} MB/s")
        print_stages(roots, summary["speed"]["read once blocks"])
        print_crafted()

    print("\n== goals")
    if "gitleaks" in summary:
        g, d, o = summary["gitleaks"], summary["detect_secrets"], summary["own"]
        neg = g["neg"] + d["neg"] + o["neg"]
        flags = g["flag"] + d["flag"] + o["flag"]
        print(f"  gitleaks recall         {pct(g['hit'], g['secret'])}")
        print(f"  gitleaks literal recall {pct(g['lit_hit'], g['lit'])}  (goal >= 99%)")
        print(f"  detect-secrets recall   {pct(d['hit'], d['secret'])}  (goal >= 95%)")
        print(f"  own corpus recall       {pct(o['hit'], o['secret'])}  (goal >= 97%)")
        ind = summary["indep"]
        d_, h_ = (ind["split"].get(k, [0, 0, 0, 0]) for k in ("dev", "held"))
        print(f"  independent corpus      recall {pct(ind['hit'], ind['secret'])} (dev {pct(d_[1], d_[0])}, "
              f"held {pct(h_[1], h_[0])}), flag rate {pct(ind['flag'], ind['neg'])} (dev {pct(d_[3], d_[2])}, "
              f"held {pct(h_[3], h_[2])}); not in the flag rate below")
        judged = [v for s_ in (g, d) for sp in SPLITS for v in s_["flag_verdicts"][sp]]
        false = judged_false(judged) + o["flag"]
        print(f"  not_secret flag rate    {pct(flags, neg)}  (gitleaks {pct(g['flag'], g['neg'])}, "
              f"detect-secrets {pct(d['flag'], d['neg'])}, own {pct(o['flag'], o['neg'])}; goal <= 5%)")
        print(f"    judged false flags    {pct(false, neg)}  ({false} of {flags} flags; the rest: "
              + ", ".join(f"{v} {judged.count(v)}" for v in sorted(set(judged)) if v not in ("false", "unjudged"))
              + f"; {judged.count('unjudged')} not judged, counted false)")
        for sp in SPLITS:
            gb, db = g["by"][sp], d["by"][sp]
            sf = judged_false(g["flag_verdicts"][sp] + d["flag_verdicts"][sp]) + o["flag"]
            print(f"  {sp:5} split: gitleaks literal {pct(gb[3], gb[2])}, detect-secrets {pct(db[1], db[0])}, "
                  f"flag rate {pct(gb[5] + db[5] + o['flag'], gb[4] + db[4] + o['neg'])} "
                  f"(gitleaks {pct(gb[5], gb[4])}, detect-secrets {pct(db[5], db[4])}, with the whole own corpus), "
                  f"judged false {pct(sf, gb[4] + db[4] + o['neg'])}")
    if "transcript_findings" in summary:
        tf, mb = summary["transcript_findings"], summary["transcript_mb"]
        print(f"  transcript findings     {tf['findings'] / mb:.2f} per MB, judged false {tf['false'] / mb:.2f} per MB "
              f"({tf['false']} of {tf['findings']}; goal <= 1 false finding per MB)")
    if "speed" in summary:
        print(f"  throughput              {summary['speed']['read once blocks']:.1f} MB/s on the stored blocks read once, "
              f"{summary['speed']['read once lines']:.1f} MB/s on every transcript line read once (CPU time) "
              f"(goal >= 50); {summary['speed']['transcripts, no remembered secrets']:.1f} MB/s (wall time) on the Claude Code "
              f"fixture lines repeated to {args.mb:g} MB (100k remembered: "
              f"{summary['speed']['transcripts, 100k remembered secrets']:.1f} MB/s)")
        sp = summary["speed"]
        print(f"  secret corpus           {sp['secret corpus (all rows, repeated to >= 2 MB)']:.1f} MB/s per row, "
              f"{sp['secret corpus via redact_many (batches of 500)']:.1f} MB/s via redact_many (goal withdrawn: its limit was measured)")
        fl = sp["floor"]
        print("  secret corpus floor     " + ", ".join(f"{v:.1f} MB/s {k}" for k, v in fl.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
