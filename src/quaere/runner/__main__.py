"""``python -m quaere.runner CONFIG_JSON``: started by the judge, never by hand."""

import sys

from quaere.runner.serve import main

main(sys.argv)
