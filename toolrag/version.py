"""The installed toolrag's version, in one place below every layer: ``toolrag --version``, the MCP server's
``serverInfo`` and ``toolrag.__version__`` read it; pyproject.toml states the same (tests/test_cli.py checks)."""

__all__ = ["__version__"]

__version__ = "0.1.0"
