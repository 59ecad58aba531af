"""``python -m hayhooks_app.cli ...``: the ``sourcebound`` command line."""

import sys

from hayhooks_app.cli import main

sys.exit(main())
