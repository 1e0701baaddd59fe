"""``python -m rankbridge`` runs the command line."""

import sys

from rankbridge.cli import main

sys.exit(main())
