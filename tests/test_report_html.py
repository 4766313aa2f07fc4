"""rspo.report_html: the HTML side of the report. The HTML report as written by ``rspo reproduce``
(figures inline, plotly.js once, notebooks linked) is tested in tests/test_report.py."""

from __future__ import annotations

from rspo.report_html import figure_data


def test_figure_data_reads_what_plotly_writes(tmp_path):
    import plotly.graph_objects as go

    path = tmp_path / "f.html"
    go.Figure(go.Heatmap(z=[[1, 2], [3, 4]]), layout_title_text="t").write_html(path, include_plotlyjs=True)
    data = figure_data(path)
    assert data["data"][0]["z"] == [[1, 2], [3, 4]] and data["layout"]["title"]["text"] == "t"
    (tmp_path / "g.html").write_text("<html>no figure</html>")
    assert figure_data(tmp_path / "g.html") is None
