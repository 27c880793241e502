"""Run as `python tests/_model_server ...`: Python runs this directory's `__main__` with no
package around it, so the directory's parent goes on the path and the package is imported
by name (its modules import each other relatively)."""

import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _model_server.cli import main

main()
