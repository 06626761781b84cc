"""`reverie redact [--json]`: stdin to stdout through `redact.engine.Redactor`.

Remembered secrets of the home apply when the home's secrets exist; nothing is learned unless
`--remember` is given. `--json` prints findings (type, span, rule, hash prefix), never values.
"""

from __future__ import annotations

import sys

import click

from . import emit_json, pass_app


def register(cli: click.Group) -> None:
    @cli.command("redact")
    @click.option("--json", "as_json", is_flag=True, help="Print the redacted text and findings as JSON.")
    @click.option("--remember/--no-remember", default=False,
                  help="Also remember detected credentials in this home (default: only apply remembered ones).")
    @pass_app
    def redact_command(app, as_json: bool, remember: bool) -> None:
        """Redact secrets from stdin and write the result to stdout."""
        from reverie.redact.engine import Redactor
        from reverie.redact.memory import SecretMemory

        from ..paths import secrets_dir

        sdir = secrets_dir(app.home)
        use_memory = remember or SecretMemory(sdir).exists()
        redactor = Redactor(sdir if use_memory else None, learn=remember)
        raw = sys.stdin.buffer.read()
        text = raw.decode("utf-8", "surrogateescape")
        result = redactor.redact(text)
        if as_json:
            emit_json({
                "text": result.text.encode("utf-8", "surrogateescape").decode("utf-8", "replace"),
                **result.to_dict(),  # findings, count, learned
                "remembered_secrets_applied": use_memory,
            })
        else:
            sys.stdout.buffer.write(result.text.encode("utf-8", "surrogateescape"))
            sys.stdout.buffer.flush()
