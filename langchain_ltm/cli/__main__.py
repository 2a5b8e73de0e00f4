"""``python -m langchain_ltm.cli``: the ``ltm`` command."""

import sys

from langchain_ltm.cli import main

if __name__ == "__main__":
    sys.exit(main())
