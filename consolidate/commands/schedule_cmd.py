"""Placeholder until its owner fills it in."""

import click


def register(cli: click.Group) -> None:
    return None
