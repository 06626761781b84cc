"""Fit the user-turn weights of the offline classifier (consolidate/classify.py, `USER_WEIGHTS`).

The classifier scores a user turn as keep = logistic(sum(weight x term)) over the general terms of
`consolidate.classify.user_features` (first-person facts, specifics, length, chatter share, answers to a
question, opening a conversation, novelty against the previous turn, asking back, addressing the
listener, content words; and, held fixed, named technical things, cue phrases and corrections).
This script refits the free weights on the development split of LoCoMo (the first `DEV_SAMPLES`
conversations of ../shared/bench/locomo/locomo10.json; the label: the turn is cited as evidence by a
QA item of categories 1-4), with an L2-regularised logistic regression (Newton steps on standardised
terms, the bias unpenalised), then shifts the bias so that the settings threshold 0.5 keeps
`KEEP_TARGET` of the development turns (counting, as the pipeline does, only turns with a category).
The fixed terms (`FIXED_TERMS`) enter as an offset with their hand-set weights: a chat corpus has
almost no corrections or service names, and must not switch them off for coding transcripts.

It prints the weights next to the current ones, the figures of both (dev, held-out, all: evidence and
turns kept at 0.5, evidence in the top 40%, turns needed for 90% of the evidence), and with `--write`
rewrites the numbers of the `USER_WEIGHTS` table in consolidate/classify.py in place (comments kept).
The held-out conversations are never read by the fit; look at them only to report.

`--ceiling` asks how far any classifier that reads one turn can go on these labels: for each of the ten
conversations in turn, a logistic regression is fitted on the other nine (leave one conversation out)
over the turn's sentence embedding (the offline model2vec model in ../shared/models, 256 dimensions),
the classifier's terms and the log of its length, plus the embeddings and terms of the turns before and
after it; the held-out conversation is scored and the scores of all ten are ranked together. It is
trained on the evidence labels themselves, so it is an optimistic bound for a turn-level classifier
built without them; it prints the same figures as the shipped classifier's next to it.

    python bench/classifier_fit.py [--l2 1.0] [--target 0.38] [--write] [--ceiling]
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CLASSIFY = ROOT / "consolidate" / "classify.py"


def dataset() -> tuple[list[tuple[float, ...]], list[bool], list[int], list[bool]]:
    """(features, is_evidence, sample index, has a category) for every LoCoMo turn; a turn without a
    passage (too short to cut) gets all-zero features and no category."""
    from bench.consolidate_bench import locomo_passages
    from reverie.consolidate.classify import USER_TERMS, classify, user_turn_features

    feats, labels, groups, gated = [], [], [], []
    for n, _sid, is_ev, p in locomo_passages():
        if p is None:
            feats.append(tuple(0.0 for _ in USER_TERMS))
            gated.append(False)
        else:
            feats.append(user_turn_features(p))
            gated.append(classify(p).category != "none")
        labels.append(is_ev)
        groups.append(n)
    return feats, labels, groups, gated


def fit(X, y, offset, free: list[int], l2: float):
    """Free weights of a logistic regression with a fixed offset (numpy; standardised columns, the
    bias column 0 unpenalised). Returns the weights on the original scale, one per free column."""
    import numpy as np

    Z = X[:, free]
    sd = Z.std(axis=0)
    sd[sd == 0] = 1.0
    bias_col = [i for i, c in enumerate(free) if c == 0]
    sd[bias_col] = 1.0
    Z = Z / sd
    pen = np.full(len(free), l2)
    pen[bias_col] = 0.0
    w = np.zeros(len(free))
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-(Z @ w + offset)))
        grad = Z.T @ (p - y) + pen * w
        H = (Z.T * (p * (1.0 - p))) @ Z + np.diag(pen + 1e-9)
        step = np.linalg.solve(H, grad)
        w -= step
        if np.abs(step).max() < 1e-9:
            break
    return w / sd


def scores(X, weights, gated):
    import numpy as np

    z = X @ np.asarray(weights)
    keep = 1.0 / (1.0 + np.exp(-z))
    return np.where(gated, keep, 0.0)


def shift_bias(X, weights, gated, dev, target: float) -> float:
    """The bias that makes the share of development turns with keep >= 0.5 (and a category) closest
    to `target` without passing it (bisection on a monotone share)."""
    import numpy as np

    z = X[dev] @ np.asarray(weights) - weights[0]
    g = gated[dev]
    lo, hi = -20.0, 20.0
    for _ in range(80):
        mid = (lo + hi) / 2
        share = float(((z + mid >= 0.0) & g).mean())
        if share > target:
            hi = mid
        else:
            lo = mid
    return lo


def report(name: str, X, y, groups, gated, weights, dev_samples: int) -> None:
    from bench.consolidate_bench import _kept_share, _ranked

    s = scores(X, weights, gated)
    cols = {"dev": groups < dev_samples, "held-out": groups >= dev_samples, "all": groups >= 0}
    print(f"{name:<10}" + "".join(f"{c:>34}" for c in cols))
    rows = {k: (_kept_share(list(zip(y[m], s[m])), 0.5), _ranked(list(zip(y[m], s[m])))) for k, m in cols.items()}
    print(f"{'':<10}" + "".join(f"{'ev@0.5  all@0.5  top40%  need90%':>34}" for _ in cols))
    print(f"{'':<10}" + "".join(f"{a[0]:>10.3f}{a[1]:>9.3f}{r[0]:>8.3f}{r[1]:>9.3f}" for a, r in rows.values()))


def write_weights(weights: list[float], target: float) -> None:
    """Rewrite the numbers of the USER_WEIGHTS table in classify.py, one per line, comments kept,
    and `KEEP_TARGET` (the share of dev turns the bias was shifted to keep)."""
    src = CLASSIFY.read_text(encoding="utf-8")
    src, n = re.subn(r"^KEEP_TARGET = [0-9.]+$", f"KEEP_TARGET = {target:g}", src, count=1, flags=re.M)
    if n != 1:
        raise SystemExit("KEEP_TARGET not found in consolidate/classify.py")
    m = re.search(r"USER_WEIGHTS: tuple\[float, \.\.\.\] = \(\n(.*?)\n\)", src, re.S)
    if not m:
        raise SystemExit("USER_WEIGHTS table not found in consolidate/classify.py")
    lines = m.group(1).split("\n")
    if len(lines) != len(weights):
        raise SystemExit(f"USER_WEIGHTS has {len(lines)} lines, the fit {len(weights)} weights")
    out = []
    for line, w in zip(lines, weights):
        comment = line.split("#", 1)[1].strip() if "#" in line else ""
        out.append(f"    {f'{w:.3f},':<8} # {comment}".rstrip(" #"))
    CLASSIFY.write_text(src[:m.start(1)] + "\n".join(out) + src[m.end(1):], encoding="utf-8")


def _turns() -> list[tuple[str, str]]:
    """(session key, text) of every LoCoMo turn (speaker label and photo caption kept), in the order of
    `dataset()` (grouped by session as `locomo_passages` groups them)."""
    from bench import locomo
    from bench.consolidate_bench import LOCOMO

    out = []
    for sample in locomo.load(LOCOMO):
        sessions: dict[int, list] = {}
        for t in locomo.iter_turns(sample):
            sessions.setdefault(t.session, []).append(t)
        for session, turns in sessions.items():
            out.extend((f"{sample['sample_id']}/{session}", t.text) for t in turns)
    return out


def ceiling(X, y, groups, gated, current, l2: float) -> None:
    """Leave-one-conversation-out logistic regression on embeddings + terms of the turn and its two
    neighbours (see the module doc); prints its figures next to the shipped classifier's."""
    import numpy as np

    from bench.consolidate_bench import _ranked
    from reverie.graph.embed import load_embedder

    model = ROOT.parent / "shared" / "models" / "minilm-l6-m2v-256"
    if not model.exists():
        raise SystemExit(f"--ceiling needs the offline embedding model at {model}")
    turns = _turns()
    if len(turns) != len(y):
        raise SystemExit(f"{len(turns)} turn texts for {len(y)} labelled turns")
    texts = [t for _, t in turns]
    emb = load_embedder(str(model)).encode(texts).astype(float)
    length = np.log1p(np.asarray([len(t) for t in texts], dtype=float))[:, None]
    own = np.hstack([emb, X[:, 1:], length])
    keys = [k for k, _ in turns]
    first = np.asarray([i == 0 or keys[i] != keys[i - 1] for i in range(len(keys))])
    last = np.r_[first[1:], True]
    before = np.vstack([np.zeros((1, own.shape[1])), own[:-1]])
    before[first] = 0.0
    after = np.vstack([own[1:], np.zeros((1, own.shape[1]))])
    after[last] = 0.0
    ones = np.ones((len(y), 1))
    variants = {"the turn alone": np.hstack([ones, own]),
                "the turn and its two neighbours": np.hstack([ones, own, before, after])}
    print(f"\nceiling: leave-one-conversation-out logistic regression (L2 {l2} on standardised inputs) over "
          f"the embedding ({emb.shape[1]}), terms and length of a turn; all {len(y)} turns ranked together")
    print(f"{'':<56}{'top40%':>8}{'need90%':>9}")
    top, need = _ranked(list(zip(y, scores(X, current, gated))))
    print(f"{'shipped classifier (never sees the labels)':<56}{top:>8.3f}{need:>9.3f}")
    for name, Z in variants.items():
        s = np.zeros(len(y))
        for g in np.unique(groups):
            test = groups == g
            w = fit(Z[~test], y[~test].astype(float), np.zeros(int((~test).sum())), list(range(Z.shape[1])), l2)
            s[test] = Z[test] @ w
        top, need = _ranked(list(zip(y, s)))
        print(f"{'trained on the labels, ' + name:<56}{top:>8.3f}{need:>9.3f}")


def main(argv: list[str] | None = None) -> None:
    import numpy as np

    from bench.consolidate_bench import DEV_SAMPLES
    from reverie.consolidate import classify as C

    ap = argparse.ArgumentParser()
    ap.add_argument("--l2", type=float, default=1.0, help="L2 penalty on the standardised free weights")
    ap.add_argument("--target", type=float, default=C.KEEP_TARGET,
                    help="share of dev turns the threshold 0.5 keeps after the bias shift")
    ap.add_argument("--write", action="store_true", help="write the fitted weights into consolidate/classify.py")
    ap.add_argument("--ceiling", action="store_true",
                    help="also fit the leave-one-conversation-out bound for a turn-level classifier")
    ap.add_argument("--ceiling-l2", type=float, default=1000.0, help="L2 penalty of the --ceiling model")
    args = ap.parse_args(argv)

    feats, labels, groups, gated = dataset()
    X = np.asarray(feats, dtype=float)
    y = np.asarray(labels, dtype=bool)
    g = np.asarray(groups)
    gate = np.asarray(gated, dtype=bool)
    dev = g < DEV_SAMPLES
    terms = list(C.USER_TERMS)
    fixed = [i for i, t in enumerate(terms) if t in C.FIXED_TERMS]
    free = [i for i in range(len(terms)) if i not in fixed]
    current = list(C.USER_WEIGHTS)
    offset = X[dev][:, fixed] @ np.asarray([current[i] for i in fixed]) if fixed else np.zeros(int(dev.sum()))
    wf = fit(X[dev], y[dev].astype(float), offset, free, args.l2)
    new = list(current)
    for i, w in zip(free, wf):
        new[i] = float(w)
    new[0] = shift_bias(X, new, gate, dev, args.target)

    print(f"LoCoMo turns: dev {int(dev.sum())} ({int(y[dev].sum())} evidence), held-out {int((~dev).sum())} "
          f"({int(y[~dev].sum())} evidence); L2 {args.l2}; bias shifted to keep {args.target:.2f} of dev turns")
    print(f"{'term':<16}{'current':>10}{'fitted':>10}")
    for t, a, b in zip(terms, current, new):
        print(f"{t:<16}{a:>10.3f}{b:>10.3f}{'  (fixed)' if t in C.FIXED_TERMS else ''}")
    print()
    report("current", X, y, g, gate, current, DEV_SAMPLES)
    report("fitted", X, y, g, gate, new, DEV_SAMPLES)
    if args.ceiling:
        ceiling(X, y, g, gate, current, args.ceiling_l2)
    if args.write:
        write_weights([round(w, 3) for w in new], args.target)
        print(f"\nwrote {CLASSIFY.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
