"""Where the kit's committed data lives, for a source checkout and for an installed package.

Looked up in order: ``$RSPO_DATA``; the ``data/`` folder of the source checkout (editable
installs, notebooks run from a clone); ``<sys.prefix>/share/rspo/data`` (where ``pip install``
puts the data files declared in ``pyproject.toml``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[2]  # the source checkout's root (this file is rspo/core/paths.py)
_CHECKOUT = CHECKOUT / "data"
_INSTALLED = Path(sys.prefix) / "share" / "rspo" / "data"


def data_dir(name: str) -> Path:
    """The folder of data set ``name`` (``"shop"``, ``"household"``); a clear error if none exists."""
    roots = ([Path(os.environ["RSPO_DATA"])] if os.environ.get("RSPO_DATA") else []) + [_CHECKOUT, _INSTALLED]
    for root in roots:
        if (root / name).is_dir():
            return root / name
    tried = ", ".join(str(r / name) for r in roots)
    raise FileNotFoundError(
        f"rspo data {name!r} not found (looked in {tried}); set RSPO_DATA to the kit's data/ folder"
    )
