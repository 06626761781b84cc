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
                if "remembered" not in state:
                    from .hook import secret_scrubber   # the hooks' read-only point lookups

                    state["remembered"] = secret_scrubber(home)
                remembered = state["remembered"]
                if remembered is None:
                    return WITHHELD
                text = remembered(text)  # type: ignore[operator]
            from reverie.redact.scanner import Scanner

            if Scanner.shared().triggered(text):
                if "redactor" not in state:
                    from reverie.redact.engine import Redactor

                    # detectors only: the remembered secrets are gone already, and the store is
                    # never opened read-write (a writer holding it must not stall a print)
                    state["redactor"] = Redactor(None, learn=False)
                text = state["redactor"].redact(text).text  # type: ignore[attr-defined]
            return text
        except Exception:  # noqa: BLE001 - never print what could not be checked
            log.warning("could not check a text for secrets before printing it; withheld")
            return WITHHELD

    return scrub
