"""`reverie redact [--json]`: stdin to stdout through `redact.engine.Redactor`.

Remembered secrets of the home apply when the home's secrets exist; nothing is learned unless
`--remember` is given. `--json` prints findings (type, span, rule, hash prefix), never values.
`--forget-secret` reads ONE value from stdin (a trailing newline is dropped) and removes it from the
home's remembered secrets: the fix for a value remembered by mistake. The value is never printed.
"""

from __future__ import annotations

import sys

import click

from . import emit_json, pass_app


def _usage_error(message: str, as_json: bool) -> None:
    """A usage error, as JSON with --json (exit code 2 either way)."""
    if as_json:
        emit_json({"ok": False, "error": message})
        sys.exit(2)
    raise click.UsageError(message)


def _forget(app, as_json: bool) -> None:
    from reverie.redact.memory import SecretMemory

    from ..paths import secrets_dir

    raw = sys.stdin.buffer.read().decode("utf-8", "surrogateescape")
    value = raw[:-1] if raw.endswith("\n") else raw
    value = value[:-1] if value.endswith("\r") else value
    if not value:
        _usage_error("no value on stdin: pipe the remembered value in (`reverie redact --forget-secret < FILE`)",
                     as_json)
    mem = SecretMemory(secrets_dir(app.home))
    try:
        removed = mem.forget([value])
        left = mem.count() if mem.exists() else 0
    finally:
        mem.close()
    if as_json:
        emit_json({"ok": True, "forgotten": removed, "remembered_secrets": left})
    else:
        click.echo("forgotten: the value is no longer remembered" if removed
                   else "not remembered: nothing to forget")
        click.echo(f"remembered secrets left: {left}")


def register(cli: click.Group) -> None:
    @cli.command("redact")
    @click.option("--json", "as_json", is_flag=True, help="Print the redacted text and findings as JSON.")
    @click.option("--remember/--no-remember", default=False,
                  help="Also remember detected credentials in this home (default: only apply remembered ones).")
    @click.option("--forget-secret", is_flag=True,
                  help="Read one remembered value from stdin and forget it (a value remembered by mistake).")
    @pass_app
    def redact_command(app, as_json: bool, remember: bool, forget_secret: bool) -> None:
        """Redact secrets from stdin and write the result to stdout."""
        if forget_secret:
            if remember:
                _usage_error("--forget-secret and --remember cannot be combined", as_json)
            _forget(app, as_json)
            return
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
