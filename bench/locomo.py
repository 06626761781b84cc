"""LoCoMo -> Claude Code transcripts.

Reads `locomo10.json` (../shared/bench/locomo, CC BY-NC 4.0; see its README) and writes one Claude
Code project per LoCoMo conversation, in Claude Code's on-disk layout::

    <out>/-locomo-conv-26/<session-uuid>.jsonl      one file per LoCoMo session

Choices (documented so the recall bench can rely on them):

* Each LoCoMo conversation is one agent: every session's `cwd` is `/locomo/<sample_id>` (so the
  indexer makes one agent per conversation, id `conv-26` etc.).
* Each LoCoMo session is one transcript file / Claude Code session (sessionId = uuid5 of
  sample and session), its lines timestamped from `session_<n>_date_time` (parsed with
  `%I:%M %p on %d %B, %Y`, taken as UTC), one second apart per turn to keep order.
* Every turn is a **user** message whose text is prefixed with the speaker's name
  (`"Caroline: I went to ..."`): both speakers are people, neither is the agent, and the prefix is
  what lets a card writer state facts about the right person. Image turns append the photo's
  caption: `"... [shares a photo: <blip_caption>]"`.
* `dia_id` is recoverable from every stored message: the message uuid encodes it
  (`turn_uuid(sample, dia_id)`, parsed back by `dia_id_from_uuid`), e.g. sample conv-26, D12:7 ->
  `00000026-0012-0007-8000-<12 hex of a hash>`.

Library: `load(path)`, `iter_turns(sample)`, `convert(path, out_dir) -> dict`, `turn_uuid`,
`dia_id_from_uuid`, `session_id`, `evidence_ids(sample)`. CLI:
`python -m bench.locomo [--locomo FILE] OUT_DIR`.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import hashlib
import json
import re
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

DEFAULT_LOCOMO = Path(__file__).resolve().parent.parent.parent / "shared" / "bench" / "locomo" / "locomo10.json"
DATE_FORMAT = "%I:%M %p on %d %B, %Y"
VERSION = "2.1.39"
_NS = uuid.UUID("6f1f3c1e-7a53-4c55-9f5e-1c0c0a11c0c0")
_UUID_RE = re.compile(r"^(\d{8})-(\d{4})-(\d{4})-8000-[0-9a-f]{12}$")


@dataclass(frozen=True)
class Turn:
    sample_id: str
    session: int
    index: int                 # 1-based turn number within the session (from dia_id)
    dia_id: str
    speaker: str
    text: str                  # the message text as stored ("Speaker: ...")
    timestamp: str             # ISO-8601 UTC


def load(path: Path | str = DEFAULT_LOCOMO) -> list[dict]:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def sample_number(sample_id: str) -> int:
    m = re.search(r"(\d+)$", sample_id)
    return int(m.group(1)) if m else int(hashlib.sha1(sample_id.encode()).hexdigest()[:6], 16) % 10**8


def turn_uuid(sample_id: str, dia_id: str) -> str:
    """A valid UUID string that encodes (sample, session, turn) in decimal digits."""
    m = re.fullmatch(r"D(\d+):(\d+)", dia_id)
    if not m:
        raise ValueError(f"not a dia_id: {dia_id!r}")
    h = hashlib.sha1(f"{sample_id}/{dia_id}".encode()).hexdigest()[:12]
    return f"{sample_number(sample_id):08d}-{int(m.group(1)):04d}-{int(m.group(2)):04d}-8000-{h}"


def dia_id_from_uuid(value: str) -> str | None:
    """The dia_id encoded by `turn_uuid` ("D12:7"), or None for any other uuid."""
    m = _UUID_RE.match(value or "")
    if not m:
        return None
    return f"D{int(m.group(2))}:{int(m.group(3))}"


def session_id(sample_id: str, session: int) -> str:
    return str(uuid.uuid5(_NS, f"{sample_id}/session_{session}"))


def cwd_for(sample_id: str) -> str:
    return f"/locomo/{sample_id}"


def parse_date(text: str) -> _dt.datetime:
    return _dt.datetime.strptime(text.strip(), DATE_FORMAT).replace(tzinfo=_dt.timezone.utc)


def sessions(sample: dict) -> list[int]:
    conv = sample["conversation"]
    return sorted(int(k.split("_")[1]) for k, v in conv.items()
                  if re.fullmatch(r"session_\d+", k) and isinstance(v, list))


def turn_text(turn: dict) -> str:
    text = (turn.get("text") or "").strip()
    caption = (turn.get("blip_caption") or "").strip()
    if caption:
        text = f"{text} [shares a photo: {caption}]".strip()
    return f"{turn['speaker']}: {text}"


def iter_turns(sample: dict) -> Iterator[Turn]:
    conv = sample["conversation"]
    for n in sessions(sample):
        start = parse_date(conv[f"session_{n}_date_time"])
        for i, t in enumerate(conv[f"session_{n}"]):
            m = re.fullmatch(r"D(\d+):(\d+)", t.get("dia_id", ""))
            index = int(m.group(2)) if m else i + 1
            ts = (start + _dt.timedelta(seconds=i)).isoformat(timespec="milliseconds").replace("+00:00", "Z")
            yield Turn(sample["sample_id"], n, index, t["dia_id"], t["speaker"], turn_text(t), ts)


def evidence_ids(sample: dict, categories: tuple[int, ...] = (1, 2, 3, 4)) -> set[str]:
    """dia_ids cited as QA evidence (split on [;,\\s]+ as the README says; unresolvable ones kept out
    by the caller's lookup)."""
    out: set[str] = set()
    for qa in sample.get("qa", []):
        if qa.get("category") not in categories:
            continue
        for ev in qa.get("evidence") or []:
            for part in re.split(r"[;,\s]+", ev):
                if re.fullmatch(r"D\d+:\d+", part):
                    out.add(part)
    return out


def project_dir_name(cwd: str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "-", cwd)


def transcript_lines(sample: dict, session: int) -> list[dict]:
    sid = session_id(sample["sample_id"], session)
    lines, parent = [], None
    for t in iter_turns(sample):
        if t.session != session:
            continue
        u = turn_uuid(t.sample_id, t.dia_id)
        lines.append({
            "parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": cwd_for(t.sample_id),
            "sessionId": sid, "version": VERSION, "gitBranch": "", "type": "user",
            "message": {"role": "user", "content": t.text}, "uuid": u, "timestamp": t.timestamp,
        })
        parent = u
    return lines


def convert(path: Path | str, out_dir: Path | str, *, samples: list[str] | None = None) -> dict:
    """Write the transcripts; returns {"projects", "sessions", "turns", "files": [...]}."""
    out = Path(out_dir)
    data = load(path)
    stats = {"projects": 0, "sessions": 0, "turns": 0, "files": []}
    for sample in data:
        if samples and sample["sample_id"] not in samples:
            continue
        proj = out / project_dir_name(cwd_for(sample["sample_id"]))
        proj.mkdir(parents=True, exist_ok=True)
        stats["projects"] += 1
        for n in sessions(sample):
            lines = transcript_lines(sample, n)
            f = proj / f"{session_id(sample['sample_id'], n)}.jsonl"
            f.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
            stats["sessions"] += 1
            stats["turns"] += len(lines)
            stats["files"].append(str(f))
    return stats


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("--locomo", default=str(DEFAULT_LOCOMO))
    ap.add_argument("--sample", action="append", help="only these sample ids (repeatable)")
    args = ap.parse_args(argv)
    s = convert(args.locomo, args.out_dir, samples=args.sample)
    print(f"{s['projects']} projects, {s['sessions']} sessions, {s['turns']} turns -> {args.out_dir}")


if __name__ == "__main__":
    main()
