"""`python -m verl_qwen35 ...` is the `verl-qwen35` command."""

import sys

from verl_qwen35.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
