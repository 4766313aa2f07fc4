"""rspo.core.metrics: the metrics log - truncation never empties the file, damaged lines are skipped and
named (issue 20, docs/reliability.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import rspo.core.atomic
from rspo.core.metrics import MetricsLog


def test_truncating_the_metrics_never_empties_the_file(tmp_path, monkeypatch):
    log = MetricsLog(tmp_path / "metrics.jsonl")
    for i in range(4):
        log.write({"iteration": i, "x": i / 3})
    before = log.path.read_text()
    seen = []

    def killed_at_rename(src, dst):
        seen.append(Path(dst).read_text())
        raise KeyboardInterrupt

    monkeypatch.setattr(rspo.core.atomic.os, "replace", killed_at_rename)
    with pytest.raises(KeyboardInterrupt):
        log.truncate(1)
    assert seen == [before] and log.path.read_text() == before
    monkeypatch.undo()
    log.truncate(1)
    assert [r["iteration"] for r in log.read()] == [0, 1]


def test_reading_the_metrics_skips_a_damaged_line_and_names_it(tmp_path):
    path = tmp_path / "metrics.jsonl"
    rows = [{"iteration": i, "x": 0.5 * i} for i in range(4)]
    lines = [json.dumps(r) for r in rows]
    lines[1] = lines[1][:9] + "\x00\x00garbage"  # damaged in the middle
    path.write_text("\n".join(lines) + '\n{"iteration": 4, "x"')  # and a last line cut by a kill
    with pytest.warns(UserWarning) as caught:
        read = MetricsLog(path).read()
    assert read == [rows[0], rows[2], rows[3]]  # the rows after the damaged line are kept
    messages = [str(w.message) for w in caught]
    assert len(messages) == 2 and "damaged line 2" in messages[0] and "damaged line 5" in messages[1]


def test_a_row_written_after_a_cut_line_starts_its_own_line(tmp_path):
    log = MetricsLog(tmp_path / "metrics.jsonl")
    log.write({"iteration": 1})
    with log.path.open("a") as f:
        f.write('{"iteration": 2, "x": 0.')
    log.write({"iteration": 3})
    with pytest.warns(UserWarning, match="damaged line 2"):
        assert log.read() == [{"iteration": 1}, {"iteration": 3}]
