"""What the notebooks use: figures (plots), controls (widgets), self-checking exercises, Colab
setup. Imports :mod:`rspo.study` and :mod:`rspo.core`; nothing imports it but the notebooks
and the CLI."""
