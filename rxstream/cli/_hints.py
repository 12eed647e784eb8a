"""What the command says to install, in a form that works before rxstream is on a package index."""

from __future__ import annotations

__all__ = ["install_hint"]


def install_hint(extra: str) -> str:
    """How to install one of rxstream's extras: from a checkout, or from a package index.

    >>> install_hint("tokens")
    'pip install -e ".[tokens]" in a checkout of rxstream, or pip install "rxstream[tokens]"'
    """
    return (
        f'pip install -e ".[{extra}]" in a checkout of rxstream, or pip install "rxstream[{extra}]"'
    )
