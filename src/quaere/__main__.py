"""``python -m quaere`` runs the command line (useful where the package is on PYTHONPATH, not installed)."""

from quaere.cli import app

app()
