"""Entry point: ``python -m flinkgo.worker``."""

import sys

from flinkgo.worker.server import main

if __name__ == "__main__":
    sys.exit(main())
