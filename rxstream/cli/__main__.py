"""`python -m rxstream.cli`: the same as the `rxstream` command."""

import sys

from ._app import main

sys.exit(main())
