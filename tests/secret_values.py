"""Credential-shaped test values generated at run time (no secret-looking literal sits in the
repository, so no scanner flags the test files)."""

from __future__ import annotations

import random
import string
from typing import Callable

ALNUM = string.ascii_letters + string.digits


def generators(rng: random.Random) -> tuple[Callable[..., str], Callable[[], str]]:
    """(rand, pw) drawing from `rng`: `rand(n, alphabet=ALNUM)` is a value of `n` characters with at
    least one letter and one digit when the alphabet has them (hex, base64; a value of an alphabet
    without digits has none); `pw()` a fresh credential-like password with no provider prefix
    (only context or memory can catch it)."""

    def rand(n: int, alphabet: str = ALNUM) -> str:
        want_digit = any(c.isdigit() for c in alphabet)
        want_alpha = any(c.isalpha() for c in alphabet)
        while True:
            v = "".join(rng.choice(alphabet) for _ in range(n))
            if (not want_digit or any(c.isdigit() for c in v)) and (not want_alpha or any(c.isalpha() for c in v)):
                return v

    def pw() -> str:
        return "Qz" + rand(14)

    return rand, pw
