"""Scrubbing text before it is printed back or logged: what a user typed (search queries, error
messages) and what the scheduler logs and stores (run results, error messages).

Invariant: what `printable_scrubber(home)` returns never contains a remembered secret of the home,
nor a value the detectors find. It costs one remembered-secret lookup (stdlib) and one prefilter pass
(the RE2 Set, ~40 ms to build once per process); the full redactor (presidio, ~1 s to load) runs only
when that prefilter fires, and learns nothing (a typed query is not a transcript).
"""

from __future__ import annotations

import logging
import os
from typing import Callable

from .paths import SECRETS_DIR, in_home

log = logging.getLogger(__name__)

#: Printed instead of the text when the check itself fails: never the text unchecked.
WITHHELD = "[withheld: redaction unavailable]"


def printable_scrubber(home: str | os.PathLike | None) -> Callable[[str], str]:
    """`text -> text` safe to print (see the module invariant); with no home, the detectors only."""
    state: dict[str, object] = {}

    def scrub(text: str) -> str:
        if not text:
            return text
        try:
            if home is not None:
                if "memory" not in state:
                    from redact.memory import SecretMemory

                    state["memory"] = SecretMemory(in_home(home, SECRETS_DIR), point_lookups=True)
                text = state["memory"].scrub(text)[0]  # type: ignore[attr-defined]
            from redact.scanner import Scanner

            if Scanner.shared().triggered(text):
                if "redactor" not in state:
                    from redact.engine import Redactor

                    state["redactor"] = Redactor(in_home(home, SECRETS_DIR) if home is not None else None,
                                                 learn=False)
                text = state["redactor"].redact(text).text  # type: ignore[attr-defined]
            return text
        except Exception:  # noqa: BLE001 - never print what could not be checked
            log.warning("could not check a text for secrets before printing it; withheld")
            return WITHHELD

    return scrub
