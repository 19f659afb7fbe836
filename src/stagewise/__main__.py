"""``python -m stagewise`` runs the command line."""

from stagewise.cli import main

main()
