"""The ``rlstream`` command line: every stage of the loop over files."""

from __future__ import annotations

import typer

app = typer.Typer(
    name="rlstream",
    help=(
        "Turn agents' production conversations into RL training data.\n\n"
        "Quick start:  rlstream demo   (generates sample logs and runs the whole pipeline)"
    ),
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
)


@app.callback()
def _root() -> None:
    """rlstream: conversations in, gated RL datasets and models out."""


def run() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    run()
