"""The parser of ``toolrag`` and the one place where errors become exit statuses.

Exit status: 0 success, 1 a ``--fail-under`` gate failed, 2 a ``ToolragError`` (bad input: a one-line
message on stderr naming the value and the fix), 130 interrupted.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from toolrag.cli import audit, catalog, evaluate, report, search, serve
from toolrag.cli.common import catalog_options, query_options
from toolrag.config import configure_environment, utf8_output
from toolrag.errors import SettingsError, ToolragError
from toolrag.version import __version__

__all__ = ["main", "parser"]

_COMMANDS = (search, evaluate, catalog, report, audit, serve)


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="toolrag", description="Retrieval-augmented tool selection.")
    root.add_argument("--version", action="version", version=f"toolrag {__version__}")
    sub = root.add_subparsers(dest="command", required=True)
    common, query = catalog_options(), query_options()
    for module in _COMMANDS:
        module.register(sub, common, query)
    return root


def main(argv: Sequence[str] | None = None) -> int:
    utf8_output()
    args = parser().parse_args(argv)
    configure_environment()
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(message)s",
                        stream=sys.stderr)
    # Commands print a loaded catalog's report (counts and warnings) themselves.
    logging.getLogger("toolrag.catalog.loader").setLevel(logging.INFO if args.verbose else logging.ERROR)
    try:
        _refuse_blank(args)
        code: int = args.handler(args)
        return code
    except ToolragError as exc:
        print(f"toolrag: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


#: Options whose empty value would silently mean "not given": (attribute, flag, what to give instead).
_NOT_BLANK = (("role", "--role", "give a role of the catalog (e.g. --role employee), or leave --role out to search "
                                 "as a caller with no role"),
              ("index_name", "--index", "give the index's name (e.g. --index tools-prod), or leave --index out to "
                                        "build the catalog's own index"),
              ("index", "--index", "give the published index's name (e.g. --index tools-prod), or leave --index out"))


def _refuse_blank(args: argparse.Namespace) -> None:
    """An option given with an empty value is refused with the fix (not taken as the option left out)."""
    for attribute, flag, fix in _NOT_BLANK:
        value = getattr(args, attribute, None)
        if isinstance(value, str) and not value.strip():
            raise SettingsError(f"{flag} {value!r} is empty: {fix}")


if __name__ == "__main__":
    sys.exit(main())
