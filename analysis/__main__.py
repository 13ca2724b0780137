"""``python -m analysis``: the package's commands, one line each (:mod:`analysis._cli.listing`)."""
import sys

from analysis._cli.listing import main

if __name__ == "__main__":
    sys.exit(main())
