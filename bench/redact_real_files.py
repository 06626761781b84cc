"""Findings on real files an agent reads: the Python standard library and the installed packages
(code, type stubs, docs, configs), which hold next to no secret, so nearly every finding there is
a false one (a few are test fixtures' and mock libraries' sample credentials). One false finding
also redacts every other place the same text holds that value (`same-text`), so a rule that takes
a type name (`token: Incomplete`) for a password can take hundreds of places in one stub.

Files are split by a hash of their path relative to their root: half dev (its findings may be
listed, masked, with --show), half held out (only counted). A run reads at most --mb MB of each
split, in a fixed order (the same files on the same install).

    python bench/redact_real_files.py [--mb 20] [--show] [ROOT ...]
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import sysconfig
import time
from collections import Counter
from pathlib import Path

SUFFIXES = frozenset(".py .pyi .md .rst .txt .json .yaml .yml .toml .cfg .ini .js .ts .html .xml .sh".split())
MAX_FILE = 300_000


def split_of(rel: str) -> str:
    return "held" if hashlib.sha256(rel.encode()).digest()[0] & 1 else "dev"


def files_by_split(roots: list[Path], mb: float) -> dict[str, list[tuple[Path, str]]]:
    """{split: [(path, text)]}: the roots' text files, in the order of their path's hash, up to `mb`
    MB per split."""
    found: list[tuple[str, Path]] = []
    for root in roots:
        for path in root.rglob("*"):
            if path.suffix in SUFFIXES and path.is_file():
                rel = str(path.relative_to(root))
                found.append((hashlib.sha256(rel.encode()).hexdigest(), path))
    out: dict[str, list[tuple[Path, str]]] = {"dev": [], "held": []}
    size = {"dev": 0, "held": 0}
    limit = mb * 1e6
    for _, path in sorted(found):
        rel = str(path.relative_to(next(r for r in roots if path.is_relative_to(r))))
        split = split_of(rel)
        if size[split] >= limit:
            continue
        try:
            if path.stat().st_size > MAX_FILE:
                continue
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        out[split].append((path, text))
        size[split] += len(text.encode("utf-8", "surrogatepass"))
    return out


def masked(value: str) -> str:
    return value[:2] + "*" * (len(value) - 4) + value[-2:] if len(value) > 6 else "*" * len(value)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("roots", nargs="*", type=Path)
    ap.add_argument("--mb", type=float, default=20.0, help="MB read per split")
    ap.add_argument("--show", action="store_true", help="list the dev split's findings, masked")
    args = ap.parse_args(argv)
    roots = args.roots or [Path(sysconfig.get_paths()["stdlib"]), Path(sysconfig.get_paths()["purelib"])]
    roots = [r.resolve() for r in roots if r.exists()]

    from reverie.redact.engine import Redactor

    redactor = Redactor(None)
    split_files = files_by_split(roots, args.mb)
    print("== real files: " + ", ".join(str(r) for r in roots))
    print(f"{'split':6} {'files':>6} {'MB':>7} {'findings':>9} {'per MB':>7} {'files hit':>9} {'CPU s':>6}")
    rows = {}
    for split, items in split_files.items():
        by_rule: Counter[str] = Counter()
        shown: list[str] = []
        hit = 0
        t0 = time.process_time()
        for path, text in items:
            findings = redactor.redact(text).findings
            hit += bool(findings)
            for f in findings:
                by_rule[f.rule] += 1
                if args.show and split == "dev":
                    # (a finding's offsets are the text's characters, not its UTF-8 bytes)
                    line_start = text.rfind("\n", 0, f.start) + 1
                    line_end = text.find("\n", f.end)
                    line = (text[line_start:f.start] + masked(text[f.start:f.end])
                            + text[f.end:line_end if line_end >= 0 else len(text)])
                    shown.append(f"  {f.rule:24} {path.name}: {line.strip()[:140]}")
        seconds = time.process_time() - t0
        mb = sum(len(t.encode("utf-8", "surrogatepass")) for _, t in items) / 1e6
        n = sum(by_rule.values())
        rows[split] = (n, mb)
        print(f"{split:6} {len(items):>6} {mb:>7.1f} {n:>9} {n / mb if mb else 0:>7.2f} {hit:>9} {seconds:>6.1f}")
        print("       by rule: " + ", ".join(f"{r} {c}" for r, c in by_rule.most_common(10)))
        for line in shown:
            print(line)
    print("\n== goals")
    print("  real files              " + ", ".join(f"{s} {n / mb if mb else 0:.2f} findings per MB" for s, (n, mb) in rows.items())
          + " (nearly all false: the goal for transcripts is <= 1 false finding per MB)")


if __name__ == "__main__":
    sys.exit(main())
