__version__ = "0.1.0"
"""The version of rxstream (`rs.__version__`), in one place: the package build reads it here."""
