"""Every relative link of the documentation points at a file or folder of the checkout (anchors aside).

The pages: README.md, docs/**/*.md, results/**/README.md, notebooks/README.md and the notebooks'
markdown cells. Links to other sites (``http:``, ``https:``, ``mailto:``) and anchors within a page
are not followed; code (fenced blocks and inline spans) is not read as links.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINK = re.compile(r"!?\[[^\]]*\]\(\s*([^)\s]+)(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
CODE_SPAN = re.compile(r"`[^`\n]*`")


def pages() -> list[Path]:
    found = [ROOT / "README.md", ROOT / "notebooks" / "README.md"]
    found += sorted((ROOT / "docs").rglob("*.md")) + sorted((ROOT / "results").rglob("README.md"))
    found += sorted((ROOT / "notebooks").glob("*.ipynb"))
    return [p for p in found if p.is_file()]


def text_of(page: Path) -> str:
    if page.suffix == ".ipynb":
        cells = json.loads(page.read_text())["cells"]
        return "\n\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    return page.read_text()


def relative_links(text: str) -> list[str]:
    """The link targets of Markdown ``text`` that name a path: no site, no bare anchor; the anchor
    of the rest cut off."""
    text = CODE_SPAN.sub("", FENCE.sub("", text))
    out = []
    for target in LINK.findall(text):
        if re.match(r"[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith("#"):
            continue
        out.append(target.split("#", 1)[0].split("?", 1)[0])
    return out


def test_relative_links_are_found_and_sites_and_code_are_not():
    text = (
        '[a](docs/x.md#anchor) ![fig](results-cpu/f.png) [c](y.md "title")\n'
        "[site](https://example.org/z) [mail](mailto:a@b.c) [here](#section) `[code](no.md)`\n"
        "```\n[fenced](no-either.md)\n```\n[[`results/`](../results/README.md)]\n"
    )
    assert relative_links(text) == ["docs/x.md", "results-cpu/f.png", "y.md", "../results/README.md"]


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page):
    broken = [t for t in relative_links(text_of(page)) if t and not (page.parent / t).exists()]
    assert not broken, f"{page.relative_to(ROOT)}: links to nothing: {broken}"
