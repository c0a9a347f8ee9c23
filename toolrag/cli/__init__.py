"""The ``toolrag`` command line: one module per group of commands, each a thin caller of the library.

Every command parses its arguments, calls one library function and prints its result. Every
:class:`toolrag.errors.ToolragError` becomes a one-line message on stderr and exit status 2.
"""

from toolrag.cli.main import main

__all__ = ["main"]
