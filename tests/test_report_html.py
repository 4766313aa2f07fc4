"""rspo.study.report_html: the HTML side of the report. The HTML report as written by ``rspo reproduce``
(figures inline, plotly.js once, notebooks linked) is tested in tests/test_report.py."""

from __future__ import annotations

from rspo.study.report_html import figure_data


def test_figure_data_reads_what_plotly_writes(tmp_path):
    import plotly.graph_objects as go

    path = tmp_path / "f.html"
    go.Figure(go.Heatmap(z=[[1, 2], [3, 4]]), layout_title_text="t").write_html(path, include_plotlyjs=True)
    data = figure_data(path)
    assert data["data"][0]["z"] == [[1, 2], [3, 4]] and data["layout"]["title"]["text"] == "t"
    (tmp_path / "g.html").write_text("<html>no figure</html>")
    assert figure_data(tmp_path / "g.html") is None


def test_rendered_notebooks_show_equations_as_mathml_and_fetch_nothing(tmp_path):
    """The notebooks' TeX becomes MathML (drawn by the browser, offline); code keeps its dollars; the
    page loads no MathJax, and no script or stylesheet from the network."""
    import re

    import nbformat

    from rspo.study.report_html import math_to_mathml, render_notebook

    md = "Inline $w = \\min(\\pi_A / \\pi_B,\\ c)$, `echo $HOME $PATH`, and\n\n$$A_i = \\frac{R_i}{2}$$\n"
    converted = math_to_mathml(md)
    assert (
        converted.count("<math") == 2 and 'display="block"' in converted and 'display="inline"' in converted
    )
    assert "`echo $HOME $PATH`" in converted and "\\frac" not in converted
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(md), nbformat.v4.new_code_cell("x = 1")]
    path = tmp_path / "07_math.ipynb"
    nbformat.write(nb, path)
    page = render_notebook(path).read_text()
    assert "<math" in page and "mathjax" not in page.lower()
    fetched = re.findall(r'<(?:script|link|img)[^>]+(?:src|href)="(https?:)?//', page)
    assert not fetched, fetched


def test_a_line_at_zero_throughout_is_named_in_the_figures_caption(tmp_path):
    """The report shows a notebook's saved figure without the notebook's sentences: a drawn line that is 0
    at every point (on the axis, easy to take for a missing one) is named in its caption, in both files;
    bands, hidden traces, single points and lines that leave 0 are not."""
    import plotly.graph_objects as go

    from rspo.study.report_html import Report, figures_blocks, flat_at_zero, flat_note

    fig = go.Figure()
    fig.add_scatter(x=[0, 1, 2], y=[0, 0, 0], name="dense (3 seeds)")
    fig.add_scatter(x=[0, 1, 2], y=[0, 0.5, 0], name="outcome (3 seeds)")
    fig.add_scatter(x=[0, 1, 0], y=[0, 0, 0], name="band", fill="toself")
    fig.add_scatter(x=[0, 1], y=[0, 0], name="hidden", visible=False)
    fig.add_scatter(x=[0], y=[0], name="one point")
    fig.add_scatter(x=[0, 1], y=[0, 0])
    (tmp_path / "figures").mkdir()
    fig.write_html(tmp_path / "figures" / "05_curves.html", include_plotlyjs=True)
    data = figure_data(tmp_path / "figures" / "05_curves.html")
    assert flat_at_zero(data) == ["dense (3 seeds)", "a trace"]
    assert flat_note([]) == ""
    assert flat_note(["x"]) == " — 'x': 0 at every point (its line lies on the axis)"
    report = Report()
    assert figures_blocks(report, tmp_path) is True
    note = " — 'dense (3 seeds)', 'a trace': 0 at every point (their lines lie on the axis)"
    assert f"- [05_curves](figures/05_curves.html) (interactive HTML){note}" in report.markdown()
    assert f"<figcaption>05 · curves{note} (<a" in report.html_body().replace("&#x27;", "'")
