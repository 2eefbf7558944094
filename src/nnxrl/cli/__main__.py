"""``python -m nnxrl.cli``: the ``nnxrl`` command."""

import sys

from nnxrl.cli import main

sys.exit(main())
