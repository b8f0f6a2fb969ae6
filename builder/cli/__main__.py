"""``python -m builder.cli``: the same as the ``notes-portal`` command."""

import sys

from builder.cli import main

sys.exit(main())
