"""The HTML side of the report (:mod:`rspo.study.report`): inline figures, the rendered notebooks, the page.

- :func:`figure_data` reads a figure that :func:`rspo.notebook.plots.save_figure` wrote as standalone HTML
  back into its data and layout; :func:`plot_div` draws it in a page that loaded plotly.js once.
- :func:`render_notebook` renders an executed notebook with nbconvert's lab template: its plotly
  outputs (a mime type nbconvert does not draw) become a div and a script, with ``plotly.min.js``
  beside the pages loaded once per page, and without require.js (with it, plotly.js registers as a
  module instead of ``window.Plotly``).
- :class:`Report` keeps the report as Markdown blocks, each with an optional HTML of its own;
  :func:`page` wraps the body in a styled, self-contained page.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

from rspo.core.atomic import atomic_write_text

PLOTLY_JS = "plotly.min.js"  # beside the rendered notebooks


def figure_data(path: Path) -> dict | None:
    """``{"data", "layout"}`` of a figure saved as standalone HTML by plotly (None if not one)."""
    text = path.read_text(errors="replace")
    at = text.find("Plotly.newPlot(")
    if at < 0:
        return None
    decoder, pos, values = json.JSONDecoder(), at + len("Plotly.newPlot("), []
    try:
        for _ in range(3):  # the div id, the data, the layout
            while text[pos] in " \t\r\n,":
                pos += 1
            value, pos = decoder.raw_decode(text, pos)
            values.append(value)
    except (ValueError, IndexError):
        return None
    return {"data": values[1], "layout": values[2]}


def flat_at_zero(figure: dict) -> list[str]:
    """The names of ``figure``'s drawn lines that are 0 at every point (more than one): on the axis, where
    a reader of the page may take them for a missing line. Bands (``fill="toself"``) and hidden traces
    are left out, as ``benchmarks/browser_check.py`` leaves them out."""
    return [
        trace.get("name") or "a trace"
        for trace in figure.get("data", [])
        if trace.get("visible", True) is not False
        and trace.get("mode") != "none"
        and trace.get("fill") != "toself"
        and isinstance(trace.get("y"), list)
        and len(trace["y"]) > 1
        and all(v == 0 for v in trace["y"])
    ]


def flat_note(names: list[str]) -> str:
    """A figure caption's sentence for the lines :func:`flat_at_zero` found ("" for none)."""
    if not names:
        return ""
    quoted = ", ".join(f"'{name}'" for name in names)
    lines = "its line lies" if len(names) == 1 else "their lines lie"
    return f" — {quoted}: 0 at every point ({lines} on the axis)"


def plot_div(figure: dict, div_id: str) -> str:
    """A div and the script that draws ``figure`` into it (plotly.js loaded before)."""
    # no "<", ">" or "&" left in the script: a string of the figure (a run name in a legend) can
    # neither close the script ("</script>") nor open a comment ("<!--") that swallows the page
    payload = json.dumps(figure, separators=(",", ":"))
    payload = payload.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return (
        f'<div id="{div_id}" class="plot"></div>\n<script>(function() {{ var f = {payload}; '
        f'Plotly.newPlot("{div_id}", f.data, f.layout, {{"responsive": true}}); }})();</script>'
    )


# $$display$$ or $inline$ TeX in Markdown, outside code (fenced blocks and `spans` are kept as they are)
_CODE_OR_MATH = re.compile(r"(```.*?```|`[^`\n]*`)|\$\$(.+?)\$\$|\$([^$\n]+)\$", re.S)


def math_to_mathml(markdown: str) -> str:
    """``markdown`` with its TeX equations as MathML, which browsers draw with nothing fetched: the
    rendered notebooks need no MathJax from a CDN, so their equations show offline."""
    from latex2mathml.converter import convert

    def one(m: re.Match) -> str:
        if m.group(1):
            return m.group(1)
        display = m.group(2) is not None
        return convert(
            (m.group(2) if display else m.group(3)).strip(), display="block" if display else "inline"
        )

    return _CODE_OR_MATH.sub(one, markdown)


def render_notebook(path: Path, plotly_src: str = PLOTLY_JS) -> Path:
    """``path`` (an executed notebook) as ``<stem>.html`` beside it, by nbconvert's lab template: the
    plotly outputs drawn from their data with ``plotly_src`` (loaded once, at the first figure), and
    no require.js (with it, plotly.js would register as a module instead of ``window.Plotly``)."""
    import jinja2
    import nbformat
    from nbconvert import HTMLExporter

    nb = nbformat.read(path, as_version=4)
    k = 0
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            fig = output.get("data", {}).get("application/vnd.plotly.v1+json")
            if fig is None:
                continue
            loader = f'<script src="{plotly_src}"></script>\n' if k == 0 else ""
            output["data"]["text/html"] = loader + plot_div(
                {"data": fig.get("data", []), "layout": fig.get("layout", {})}, f"plot-{k}"
            )
            k += 1
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = math_to_mathml(cell.source)
    views = "application/vnd.jupyter.widget-view+json"
    if not any(views in o.get("data", {}) for c in nb.cells for o in c.get("outputs", [])):
        nb.metadata.pop("widgets", None)  # no widget shown: no widget manager fetched from unpkg.com
    template = (
        "{%- extends 'index.html.j2' -%}\n{%- block html_head_js_requirejs -%}{%- endblock -%}\n"
        "{%- block html_head_js_mathjax -%}{%- endblock -%}\n"  # equations are MathML: nothing fetched
    )
    exporter = HTMLExporter(
        template_name="lab",
        extra_loaders=[jinja2.DictLoader({"rspo_notebook.html.j2": template})],
        template_file="rspo_notebook.html.j2",
    )
    body, _ = exporter.from_notebook_node(nb, resources={"metadata": {"name": path.stem}})
    out = path.with_suffix(".html")
    atomic_write_text(out, body)
    return out


def render_notebooks(out: Path, runs: list) -> dict[str, Path]:
    """Every executed notebook of ``runs`` rendered (:func:`render_notebook`), ``plotly.min.js``
    written once beside them; a notebook that cannot be rendered is left out (linked as .ipynb)."""
    import plotly.offline

    atomic_write_text(out / PLOTLY_JS, plotly.offline.get_plotlyjs())
    rendered = {}
    for run in runs:
        try:
            rendered[run.name] = render_notebook(run.output)
        except Exception as err:  # a report without one rendered notebook beats no report
            print(f"report: {run.output.name} not rendered to HTML ({type(err).__name__}: {err})")
    return rendered


class Report:
    """Blocks of Markdown, each with an optional HTML of its own (inline figures) for report.html."""

    def __init__(self):
        self.blocks: list[tuple[str, str | None]] = []

    def md(self, *lines: str) -> None:
        self.blocks.append(("\n".join(lines), None))

    def both(self, md: str, html_text: str) -> None:
        self.blocks.append((md, html_text))

    def markdown(self) -> str:
        return "\n".join(md for md, _ in self.blocks).rstrip() + "\n"

    def html_body(self) -> str:
        """The blocks as HTML: Markdown rendered with HTML escaped (a ``<script>`` in a run name, a note,
        a claims cell or the status line is text on the page, never markup; before, mistune's
        ``escape=False`` default let it run) and links to ``javascript:`` refused; a block's own HTML
        as it is (its caller escapes what it puts in: :func:`figures_blocks`)."""
        import mistune

        render = mistune.create_markdown(escape=True, plugins=["strikethrough", "footnotes", "table"])
        return "\n".join(h if h is not None else render(md) for md, h in self.blocks)


CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
  line-height: 1.55; color: #1f2328; max-width: 1100px; margin: 0 auto; padding: 1.5rem 2rem 4rem; }
h1 { font-size: 1.9rem; margin-bottom: .2rem; } h2 { border-bottom: 1px solid #d0d7de; padding-bottom: .3rem;
  margin-top: 2.2rem; } code { background: #f3f4f6; padding: .1em .3em; border-radius: 4px; font-size: .92em; }
header.report-header { border-bottom: 2px solid #2f6fb0; margin-bottom: 1.5rem; padding-bottom: .8rem; }
header.report-header dl { display: grid; grid-template-columns: max-content auto; gap: .2rem 1rem; margin: .6rem 0 0; }
header.report-header dt { font-weight: 600; color: #57606a; } header.report-header dd { margin: 0; }
table { border-collapse: collapse; margin: .8rem 0 1.2rem; font-size: .9rem; display: block; overflow-x: auto; }
th, td { border: 1px solid #b6bec8; padding: .35rem .6rem; text-align: left; vertical-align: top; }
th { background: #eef2f7; } tr:nth-child(even) td { background: #f8f9fb; }
blockquote { border-left: 4px solid #d29922; background: #fff8e6; margin: 1rem 0; padding: .4rem 1rem; }
figure { margin: 1.2rem 0 2rem; } figcaption { color: #57606a; font-size: .9rem; margin-top: .3rem; }
figure img { max-width: 100%; border: 1px solid #d0d7de; } .plot { width: 100%; min-height: 450px; }
"""


def page(title: str, header: str, body: str, with_plotly: bool) -> str:
    head = "<meta charset='utf-8'><meta name='viewport' content='width=device-width, initial-scale=1'>"
    head += f"<title>{html.escape(title)}</title><style>{CSS}</style>"
    if with_plotly:
        import plotly.offline

        head += f'<script id="plotlyjs">{plotly.offline.get_plotlyjs()}</script>'
    return f"<!doctype html>\n<html lang='en'><head>{head}</head><body>\n{header}\n{body}\n</body></html>\n"


def figures_blocks(report: Report, out: Path) -> bool:
    """The figures under ``out/figures`` (PNG as images, plotly HTML redrawn inline); True when a
    plotly figure needs plotly.js in the page."""
    figures = sorted((out / "figures").glob("*")) if (out / "figures").is_dir() else []
    figures = [f for f in figures if f.suffix in (".png", ".html")]
    if not figures:
        report.md("(no figures)", "")
        return False
    interactive = False
    for k, fig in enumerate(figures):
        rel = fig.relative_to(out).as_posix()
        caption = f"{fig.stem[:2]} · {fig.stem[3:].replace('_', ' ')}" if fig.stem[:2].isdigit() else fig.stem
        if fig.suffix == ".png":
            md = f"![{fig.stem}]({rel})"
            inner = f'<img src="{html.escape(rel)}" alt="{html.escape(fig.stem)}">'
        else:
            md = f"- [{fig.stem}]({rel}) (interactive HTML)"
            data = figure_data(fig)
            if data is None:
                report.md(md)
                continue
            inner, interactive = plot_div(data, f"figure-{k}"), True
            note = flat_note(flat_at_zero(data))  # the notebook's sentence beside it is not in the report
            md, caption = md + note, caption + note
        link = f' (<a href="{html.escape(rel)}">{html.escape(fig.name)}</a>)'
        report.both(md, f"<figure>{inner}<figcaption>{html.escape(caption)}{link}</figcaption></figure>")
    report.md("")
    return interactive
