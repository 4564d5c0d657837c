"""A Sphinx directive that shows ``zarrflow <command> --help`` as the installed CLI prints it,
so the command-line reference is generated like the API reference:

    .. zarrflow-help:: rechunk
"""

from __future__ import annotations

import contextlib
import io
import os

from docutils import nodes
from docutils.parsers.rst import Directive


def cli_help(command: str) -> str:
    """What ``zarrflow COMMAND --help`` prints ("" for the top-level command)."""
    from zarrflow.tools.cli import main

    out = io.StringIO()
    columns = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100"  # argparse wraps to the terminal: the same page everywhere
    try:
        with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
            main([*command.split(), "--help"])
    finally:
        if columns is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = columns
    return out.getvalue()


class ZarrflowHelp(Directive):
    optional_arguments = 1

    def run(self) -> list[nodes.Node]:
        command = self.arguments[0] if self.arguments else ""
        text = cli_help(command)
        if not text:
            raise self.error(f"zarrflow {command} --help printed nothing")
        block = nodes.literal_block(text, text)
        block["language"] = "text"
        return [block]


def setup(app) -> dict:
    app.add_directive("zarrflow-help", ZarrflowHelp)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
