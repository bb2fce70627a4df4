"""``python -m rlstream.services.trainer``: see :mod:`rlstream.services.trainer.main`."""

import sys

from rlstream.services.trainer.main import main

sys.exit(main())
