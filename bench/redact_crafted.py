"""Worst cases: texts crafted against one rule's matching (a backtracking window, repeated
anchors, repeated openings), each about 1 MB, timed next to ordinary transcript-like text of the
same size, so a rule whose cost grows faster than its input shows as a ratio far above 1.

Run on its own (`python bench/redact_crafted.py`) or as part of `redact_bench.py --only speed`.
"""

from __future__ import annotations

import base64
import random
import string
import time

_RNG = random.Random(20261202)


def _letters(n: int) -> str:
    return "".join(_RNG.choice(string.ascii_letters) for _ in range(n))


def crafted_texts() -> dict[str, str]:
    """name -> a text of about 1 MB built to cost one rule the most (module docstring)."""
    blob = base64.b64encode(_letters(48_000).encode()).decode()   # 64 KB of base64, no spaces inside
    return {
        "ordinary (a tool result's code, repeated)": ('def handler(event):\n    token = get_token(event)\n'
                                                       '    return {"status": 200, "body": token}\n') * 12_000,
        "key= then 64 KB base64 of letters (encoded text)": ("export STRIPE_KEY=" + blob + "\n") * 16,
        "Postmark host, then key x 680 per line": ("smtp.postmarkapp.com " + "key" * 680 + "\n") * 485,
        "az storage keys list, repeated": "az storage account keys list " * 30_000,
        "influx auth list, repeated": "influx auth list " * 60_000,
        "login(\" repeated (credential calls)": 'login("' * 140_000,
        "tokens { repeated (Consul blocks)": "tokens {\n" * 110_000,
        "(Pdb) p token, repeated": "(Pdb) p token\n" * 70_000,
        "« opened, never closed (prose)": "Passwort ist « " * 65_000,
    }


def crafted_table(redactor=None) -> list[tuple[str, float, float, float]]:
    """(name, MB, seconds, time per MB relative to the ordinary text) of redacting each crafted text
    once with `redactor` (a fresh `Redactor(None)` by default)."""
    if redactor is None:
        from reverie.redact.engine import Redactor

        redactor = Redactor(None)
        redactor.redact("warm")
    rows = []
    for name, text in crafted_texts().items():
        mb = len(text.encode()) / 1e6
        t0 = time.process_time()
        redactor.redact(text)
        rows.append((name, mb, time.process_time() - t0))
    base = rows[0][2] / rows[0][1]
    return [(n, mb, s, (s / mb) / base) for n, mb, s in rows]


def print_crafted(redactor=None) -> None:
    print("\n== crafted worst cases (one text each, CPU time; ratio: time per MB vs the ordinary text)")
    print(f"  {'text':52} {'MB':>6} {'seconds':>8} {'ratio':>7}")
    for name, mb, s, ratio in crafted_table(redactor):
        print(f"  {name:52} {mb:6.2f} {s:8.3f} {ratio:7.1f}")


if __name__ == "__main__":
    print_crafted()
