"""The hand-written corpora of the redaction bench: bench/secret_corpus/ (the own corpus) and
bench/secret_corpus_indep/ (the independent one, in rounds), in the format of
bench/secret_corpus/README.md. `load_corpus` gives each case with its random parts drawn from a
seeded generator per case (the same on every load); `indep_split` says which rounds are held out.
Read by bench/redact_bench.py and tests/test_redact_corpus.py."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CORPUS_DIR = ROOT / "bench" / "secret_corpus"
INDEP_DIR = ROOT / "bench" / "secret_corpus_indep"
_CLASSES = {
    "alnum": "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
    "hex": "0123456789abcdef", "HEX": "0123456789ABCDEF", "lower": "abcdefghijklmnopqrstuvwxyz0123456789",
    "upper": "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", "digits": "0123456789",
    "b64": "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
    "b64url": "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_",
}
_GEN = re.compile(r"\{(" + "|".join(_CLASSES) + r"):(\d+)\}")
_MARK = re.compile("\u27e6(.*?)\u27e7", re.S)


def _draw(rng, cls: str, n: int) -> str:
    """n characters of class `cls`; with a digit and a letter whenever the class has both (n >= 8)."""
    alphabet = _CLASSES[cls]
    for _ in range(100):
        v = "".join(rng.choice(alphabet) for _ in range(n))
        if n < 8 or alphabet.isdigit() or alphabet.isalpha() or (
                any(c.isdigit() for c in v) and any(c.isalpha() for c in v)):
            return v
    return v


def _pem(rng) -> tuple[str, list[str]]:
    body = [_draw(rng, "b64", 64) for _ in range(6)]
    return "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA" + "\n".join(body) + "\n-----END RSA PRIVATE KEY-----", body


def load_corpus(root: Path = CORPUS_DIR) -> list[dict]:
    """The own corpus: {file, family, label, text, values} per case (see bench/secret_corpus/README.md)."""
    import base64
    import random

    cases = []
    for path in sorted(root.glob("*.txt")):
        parts = re.split(r"(?m)^=== (secret|not_secret) ([\w\-]+)[ \t]*\n", path.read_text(encoding="utf-8"))
        for k in range(1, len(parts) - 2, 3):
            label, fam, raw = parts[k], parts[k + 1], parts[k + 2].rstrip("\n")
            rng = random.Random(f"{path.name}:{k // 3}")
            values: list[str] = []

            def mark(m):
                inner = m.group(1)
                if inner == "{pem}":
                    text, body = _pem(rng)
                    values.extend(body)
                    return text
                if inner == "{pem64}":
                    text = base64.b64encode((_pem(rng)[0] + "\n").encode()).decode()
                    values.append(text)
                    return text
                v = _GEN.sub(draw, inner)
                values.append(v)
                return v

            def draw(g, rng=rng):
                return _draw(rng, g.group(1), int(g.group(2)))

            text = _GEN.sub(draw, _MARK.sub(mark, raw))
            cases.append({"file": path.name, "family": fam, "label": label, "text": text,
                          "values": values if label == "secret" else []})
    return cases


#: The independent corpus' held-out rounds (bench/secret_corpus_indep/README.md): their misses are
#: never listed.
HELD_ROUNDS = ("b_", "e_", "h_", "k_", "m_", "o_", "q_", "s_", "u_", "w_", "y_", "za_", "ac_", "ae_", "ag_", "ai_",
               "ak_", "am_", "ao_", "aq_", "as_", "au_", "aw_", "ay_", "ba_")


def indep_split(case: dict) -> str:
    """The split of an independent-corpus case: `HELD_ROUNDS` files are held out, every other is dev."""
    return "held" if case["file"].startswith(HELD_ROUNDS) else "dev"
