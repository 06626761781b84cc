"""A detection rule: a name, the label its findings carry, an RE2 pattern and the kind of handler
that turns a match into spans (`redact.handlers.HANDLERS`); see `redact.rules` for the kinds."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Rule:
    name: str
    label: str
    pattern: str
    kind: str = "token"
    min_entropy: float = 0.0
    options: dict = field(default_factory=dict, hash=False, compare=False)


def token_rule(name: str, label: str, pattern: str, min_entropy: float = 0.0, **options) -> Rule:
    """A rule of kind `token`: group 1 (or the whole match) is the secret (`handlers._h_token`)."""
    return Rule(name, label, pattern, "token", min_entropy, options)
