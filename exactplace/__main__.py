"""``python -m exactplace`` runs the command line."""

from exactplace.cli.main import run

run()
