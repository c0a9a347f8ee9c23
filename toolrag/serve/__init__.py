"""toolrag over MCP: import a live server's tools as a catalog (``importer``), serve ``search_tools`` for a
catalog and, as a gateway, ``call_tool`` forwarded to upstream servers (``service``, ``gateway``, ``app``).

Nothing here imports the MCP SDK until it is used (``app`` is imported only when serving)."""
