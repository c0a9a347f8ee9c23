"""Maintenance commands of the repository (``python -m scripts.<name>``); no part of the toolrag package."""
