"""``python -m demo``: the native demo (see demo.native)."""

import sys

from .native import main

sys.exit(main())
