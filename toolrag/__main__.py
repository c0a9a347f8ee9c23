"""``python -m toolrag`` runs the command line."""

import sys

from toolrag.cli import main

sys.exit(main())
