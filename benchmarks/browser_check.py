"""Open what ``rspo reproduce`` wrote in a real browser (Chromium headless, driven by Playwright).

    python benchmarks/browser_check.py [OUT] [--smoke] [--shots runs/browser-check]

OUT is a ``rspo reproduce`` output folder (default ``runs/reproduce-smoke``; ``--smoke`` first runs
``rspo reproduce --profile smoke --out OUT``). The check:

1. starts JupyterLab on OUT (``--allow-root``, headless, no token, a free port, settings in a
   temporary folder) and opens every executed notebook ``NN_*.ipynb``: each plotly output must draw
   a figure with data in it, no "Error displaying widget" or "No renderer could be found" may show;
2. runs ``notebooks/02_credit_assignment.ipynb`` in a live kernel there (its sliders appear when a
   person is there) and moves the ω slider and the normalisation dropdown: the figure must redraw;
3. opens ``report.html`` and the rendered notebooks ``NN_*.html`` as files: every figure drawn, with
   data, plotly.js present.

4. checks what a reader of those pages would notice: every equation of a rendered notebook drawn (MathML
   of non-zero size), and a curve that is 0 at every point only with a line under its figure that
   says why (a number that reads 0 or a "never"/"nothing");
5. builds a report whose every string field holds planted markup (``<script>``, ``<img onerror>``) and
   opens it: nothing planted may run.

It fails on a blank figure, a widget error, a console error or an uncaught page error, and on a
widget whose figure does not change when it is moved. The network is blocked: a request to another
host never leaves the machine (it is answered empty), and a static page (the report, a rendered notebook) that makes one fails - they must
show everything offline; JupyterLab's own requests (it asks for news and extension listings) are
listed as notes. Screenshots go to ``--shots`` (a page each, and each figure of the JupyterLab
views). Exit status 0 when every check passed, 1 otherwise.

Chromium: ``apt-get install chromium`` (Playwright's own browser download is not needed:
``--chromium`` names the executable, default ``/usr/bin/chromium``); Playwright: ``pip install -e
".[browser]"``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# --smoke: every curve of 2 iterations may be 0, and the report says none of its numbers is a result;
# on any other profile's output a curve at 0 throughout needs a line beside it that says why
ZERO_IS_EXPECTED = False
CHROMIUM = "/usr/bin/chromium"
PANEL = ".jp-NotebookPanel:not(.lm-mod-hidden)"  # the notebook in view in JupyterLab
WIDGET_ERRORS = ("Error displaying widget", "No renderer could be found", "Javascript Error")

# every plotly figure on the page: drawn (an SVG of non-zero size), with data points and drawn marks
PLOTS_JS = """(root) => Array.from(document.querySelectorAll(root + ' .js-plotly-plot')).map((gd, i) => {
  const r = gd.getBoundingClientRect();
  const data = gd._fullData || gd.data || [];
  let points = 0;
  for (const t of data) {
    if (t.visible === false) continue;
    for (const k of ['x', 'y', 'z', 'values']) { if (t[k] && t[k].length) { points += t[k].length; break; } }
  }
  const layers = ['scatter', 'bar', 'box', 'heatmap', 'contour', 'violin', 'image', 'pie', 'funnel', 'waterfall'];
  const marks = Array.from(gd.querySelectorAll(layers.map(l => `.${l}layer path, .${l}layer image`).join(', ')))
    .filter(e => e.tagName === 'image' || ((e.getAttribute('d') || '').length > 4)).length;
  const zero = data.filter(t => t.visible !== false && t.y && t.y.length > 1 && t.mode !== 'none' &&
    t.fill !== 'toself' && Array.from(t.y).every(v => v === 0)).map(t => t.name || 'a trace');
  const title = gd.layout && gd.layout.title ? (gd.layout.title.text || '') : '';
  const notes = ((gd.layout && gd.layout.annotations) || []).map(a => a.text).join(' | ');
  return {i, width: Math.round(r.width), height: Math.round(r.height), svg: !!gd.querySelector('svg.main-svg'),
          traces: data.length, points, marks, title, notes, zero,
          after: ((gd.closest('.jp-Cell') || {}).innerText || '') + ' ' +
                 (((gd.closest('.jp-Cell') || {}).nextElementSibling || {}).innerText || '') + ' ' +
                 (gd.closest('figure')?.querySelector('figcaption')?.innerText || '')};
})"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Result:
    """What the check found: failures (the exit status) and notes (printed, not failing)."""

    def __init__(self):
        self.failures: list[str] = []
        self.notes: list[str] = []
        self.checked: list[str] = []

    def fail(self, where: str, what: str) -> None:
        self.failures.append(f"{where}: {what}")
        print(f"  FAIL {what}", flush=True)

    def ok(self, where: str, what: str) -> None:
        self.checked.append(where)
        print(f"  ok   {what}", flush=True)


def plotly_outputs(path: Path) -> int:
    """How many plotly figures the executed notebook ``path`` holds in its outputs."""
    nb = json.loads(path.read_text())
    return sum(
        "application/vnd.plotly.v1+json" in o.get("data", {})
        for c in nb["cells"]
        for o in c.get("outputs", [])
    )


ZERO_WORDS = re.compile(r"\b0(\.0)?%|\b0 at every\b|\bnever\b|\bnothing\b")


def says_why(name: str, text: str) -> bool:
    """Whether a sentence of ``text`` (the cell, the next cell, a report figure's caption) speaks of the
    line ``name`` (its first word: a setting, a method) and says it is 0, never moves or wins nothing."""
    head = (name.split() or [name])[0]
    sentences = re.split(r"\n|(?<=[.!?])\s", text)
    return any(head in s and ZERO_WORDS.search(s) for s in sentences)


def check_plots(
    page, where: str, expected: int | None, result: Result, shots: Path | None = None, root: str = "body"
) -> list:
    plots = page.evaluate(PLOTS_JS, root)
    if expected is not None and len(plots) != expected:
        result.fail(where, f"{len(plots)} figures drawn, {expected} expected")
    for p in plots:
        label = f"figure {p['i'] + 1} ({p['title'][:60] or 'untitled'})"
        if not p["svg"] or p["width"] * p["height"] == 0:
            result.fail(where, f"{label} is not drawn (size {p['width']}x{p['height']})")
        elif p["points"] == 0 and p["notes"]:
            result.notes.append(f"{where}: {label} has no data and says why: {p['notes'][:120]}")
        elif p["points"] == 0 or p["marks"] == 0:
            result.fail(
                where,
                f"{label} is blank: {p['traces']} traces, {p['points']} data points, {p['marks']} marks",
            )
        for name in p.get("zero", []):
            if ZERO_IS_EXPECTED:  # the smoke profile: 2 iterations, its report says no number is a result
                result.notes.append(f"{where}: {label}: '{name}' is 0 throughout (smoke: 2 iterations)")
            elif says_why(name, p.get("after", "")):
                result.notes.append(
                    f"{where}: {label}: '{name}' is 0 throughout, and the text beside it says why"
                )
            else:
                result.fail(where, f"{label}: '{name}' is 0 throughout with nothing beside it that says why")
        if shots is not None:
            page.locator(f"{root} .js-plotly-plot").nth(p["i"]).screenshot(
                timeout=10_000, path=str(shots / f"{where}-fig{p['i'] + 1}.png")
            )
    if not any(f.startswith(f"{where}:") for f in result.failures):
        result.ok(where, f"{len(plots)} figures drawn, each with data")
    return plots


def check_text(page, where: str, result: Result, root: str = "body") -> None:
    text = page.locator(root).first.inner_text()
    for bad in WIDGET_ERRORS:
        if bad in text:
            result.fail(where, f"the page shows {bad!r}")


class Browser:
    """One Chromium with a page per view; console errors and page errors kept per page."""

    def __init__(self, playwright, executable: str, shots: Path):
        self.browser = playwright.chromium.launch(executable_path=executable, headless=True)
        self.context = self.browser.new_context(viewport={"width": 1400, "height": 1000})
        self.external: set[str] = set()
        self.context.route(re.compile(r"^https?://(?!127\.0\.0\.1|localhost)"), self._stub)
        self.shots = shots

    def _stub(self, route) -> None:
        """The network is blocked: a request to another host never leaves the machine; it is recorded
        and answered empty (an aborted one would put a console error on JupyterLab's pages)."""
        self.external.add(route.request.url.split("?")[0])
        route.fulfill(status=200, body="", content_type="application/javascript")

    def page(self):
        page = self.context.new_page()
        page.errors = []
        page.on("console", lambda m: m.type == "error" and page.errors.append(f"console: {m.text[:300]}"))
        page.on("pageerror", lambda e: page.errors.append(f"page error: {str(e)[:300]}"))
        return page

    def close(self) -> None:
        self.context.close()
        self.browser.close()


def report_errors(page, where: str, result: Result) -> None:
    for err in page.errors:
        result.fail(where, err)


def start_lab(root: Path, port: int, settings: Path) -> subprocess.Popen:
    (settings / "user" / "@jupyterlab" / "notebook-extension").mkdir(parents=True, exist_ok=True)
    # every cell rendered, not only those in view: the figures further down are drawn too; no news
    (settings / "user" / "@jupyterlab" / "notebook-extension" / "tracker.jupyterlab-settings").write_text(
        json.dumps({"windowingMode": "none"})
    )
    (settings / "user" / "@jupyterlab" / "apputils-extension").mkdir(parents=True, exist_ok=True)
    (
        settings / "user" / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
    ).write_text(json.dumps({"fetchNews": "false", "checkForUpdates": False}))
    env = dict(
        os.environ,
        JUPYTERLAB_SETTINGS_DIR=str(settings / "user"),
        JUPYTERLAB_WORKSPACES_DIR=str(settings / "workspaces"),
        JUPYTER_RUNTIME_DIR=str(settings / "runtime"),
    )
    cmd = [
        sys.executable, "-m", "jupyterlab", "--allow-root", "--no-browser", f"--port={port}",
        "--ServerApp.ip=127.0.0.1", "--IdentityProvider.token=", "--ServerApp.password=",
        "--ServerApp.disable_check_xsrf=True", f"--ServerApp.root_dir={root}",
        "--LabApp.expose_app_in_browser=True", "--LabApp.news_url=",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ]  # fmt: skip
    log = open(settings / "jupyterlab.log", "w")  # noqa: SIM115 - closed with the process
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.time() + 120
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"JupyterLab exited: see {settings / 'jupyterlab.log'}")
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status", timeout=2)
            return proc
        except OSError:
            time.sleep(0.5)
    proc.terminate()
    raise RuntimeError("JupyterLab did not answer within 120 s")


OPEN_JS = """async (path) => {
  const app = window.jupyterapp;
  for (const w of Array.from(app.shell.widgets('main'))) w.dispose();  // no save dialog
  await app.serviceManager.sessions.refreshRunning();
  for (const s of Array.from(app.serviceManager.sessions.running())) await app.serviceManager.sessions.shutdown(s.id);
  await app.commands.execute('docmanager:open', {path});
}"""


IDLE_JS = """() => { const w = window.jupyterapp.shell.currentWidget;
  const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
  return !!k && k.status === 'idle'; }"""


def open_lab(page, base: str) -> None:
    page.goto(f"{base}/lab?reset")  # reset: no tabs of an earlier session
    page.wait_for_function("() => window.jupyterapp && window.jupyterapp.shell", timeout=120_000)
    page.wait_for_selector(".jp-LauncherCard, .jp-Launcher, #jp-main-dock-panel", timeout=120_000)


def open_in_lab(page, path: str) -> None:
    """Close what is open (its kernels shut down), open ``path`` and wait for its cells."""
    page.evaluate(OPEN_JS, path)
    page.wait_for_selector(f"{PANEL} .jp-Cell", timeout=60_000)
    # its kernel started and idle (closing it earlier cancels the debugger's first requests: an error
    # in the console that a person, who does not close a notebook within a second, never meets)
    page.wait_for_function(IDLE_JS, timeout=120_000)
    page.wait_for_timeout(1000)  # the mime renderers draw after the cells are attached


def lab_notebooks(browser: Browser, page, out: Path, result: Result) -> None:
    for path in sorted(out.glob("[0-9][0-9]_*.ipynb")):
        where = f"lab-{path.stem}"
        t0 = time.perf_counter()
        page.errors.clear()
        open_in_lab(page, path.name)
        expected = plotly_outputs(path)
        if expected:
            page.wait_for_function(
                f"document.querySelectorAll('{PANEL} .js-plotly-plot svg.main-svg').length >= {expected}",
                timeout=60_000,
            )
        print(f"JupyterLab: {path.name} ({time.perf_counter() - t0:.1f} s to draw)", flush=True)
        check_plots(page, where, expected, result, browser.shots, PANEL)
        check_text(page, where, result, PANEL)
        page.screenshot(path=str(browser.shots / f"{where}.png"))
        report_errors(page, where, result)


def signature(page, scope: str) -> str:
    return page.evaluate(
        """(scope) => { const gd = document.querySelector(scope + ' .js-plotly-plot');
           if (!gd || !gd._fullData) return '';
           return JSON.stringify([gd._fullData.map(t => t.z || t.y || []),
                                  ((gd.layout || {}).annotations || []).map(a => a.text)]); }""",
        scope,
    )


def lab_widgets(browser: Browser, page, out: Path, result: Result) -> None:
    """Notebook 02 run in a live kernel: moving ω and the normalisation must redraw the figure."""
    where = "lab-02-widgets"
    live = out / "browser-live"
    live.mkdir(exist_ok=True)
    shutil.copy2(ROOT / "notebooks" / "02_credit_assignment.ipynb", live / "02_credit_assignment.ipynb")
    print("JupyterLab: notebook 02 in a live kernel, its sliders moved", flush=True)
    t0 = time.perf_counter()
    page.errors.clear()
    open_in_lab(page, "browser-live/02_credit_assignment.ipynb")
    page.wait_for_function(
        "() => window.jupyterapp.shell.currentWidget && window.jupyterapp.shell.currentWidget.sessionContext"
        " && window.jupyterapp.shell.currentWidget.sessionContext.session", timeout=60_000
    )  # fmt: skip
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
    scope = f"{PANEL} .jp-OutputArea-output:has(.widget-dropdown)"
    try:
        page.wait_for_selector(f"{scope} .js-plotly-plot svg.main-svg", timeout=240_000)
    except Exception:
        check_text(page, where, result)
        page.screenshot(path=str(browser.shots / f"{where}.png"))
        result.fail(where, "no widget with a figure appeared within 240 s of running the notebook")
        report_errors(page, where, result)
        return
    print(f"  the widget drew its figure {time.perf_counter() - t0:.0f} s after opening", flush=True)
    page.wait_for_timeout(1000)
    moves = [
        ("the omega slider", lambda: _press_slider(page, scope, "omega", "ArrowLeft", 4)),
        (
            "the adv_norm dropdown",
            lambda: page.locator(f"{scope} .widget-dropdown select").select_option("none"),
        ),
    ]
    for name, move in moves:
        before = signature(page, scope)
        try:
            move()
        except Exception as err:  # the control is not there, or not usable
            result.fail(where, f"could not move {name}: {type(err).__name__}: {str(err).splitlines()[0]}")
            continue
        deadline = time.time() + 60
        while time.time() < deadline and signature(page, scope) in ("", before):
            page.wait_for_timeout(250)
        after = signature(page, scope)
        if after in ("", before):
            result.fail(where, f"moving {name} did not redraw the figure within 60 s")
        else:
            result.ok(where, f"moving {name} redrew the figure")
        page.wait_for_timeout(500)
        check_plots(page, where, None, result, root=scope)
    page.locator(scope).first.screenshot(path=str(browser.shots / f"{where}.png"))
    check_text(page, where, result, PANEL)
    report_errors(page, where, result)


def _press_slider(page, scope: str, description: str, key: str, times: int) -> None:
    handle = page.locator(f"{scope} .widget-slider:has(label:text-is('{description}')) .noUi-handle")
    handle.focus()
    for _ in range(times):
        handle.press(key)


def static_pages(browser: Browser, out: Path, result: Result) -> None:
    pages = [out / "report.html"] + sorted(out.glob("[0-9][0-9]_*.html"))
    for path in pages:
        where = f"html-{path.stem}"
        print(f"Chromium: {path.name}", flush=True)
        if not path.is_file():
            result.fail(where, f"{path} is missing")
            continue
        page = browser.page()
        before = set(browser.external)
        page.goto(path.as_uri())
        page.wait_for_load_state("load")
        page.wait_for_timeout(1000)
        for url in sorted(browser.external - before):
            result.fail(where, f"the page asked the network for {url} (it must show everything offline)")
        notebook = path.with_suffix(".ipynb")
        if notebook.is_file() and has_equations(notebook):
            drawn = page.evaluate(
                "() => Array.from(document.querySelectorAll('math'))"
                ".filter(m => m.getBoundingClientRect().width > 0).length"
            )
            if drawn == 0:
                result.fail(where, "no equation drawn (the notebook's TeX should be MathML here)")
            else:
                result.ok(where, f"{drawn} equations drawn, offline")
        if path.name == "report.html":
            expected = len(re.findall(r'class="plot"', path.read_text()))
            if page.evaluate("() => typeof window.Plotly") != "object":
                result.fail(where, "plotly.js is not loaded")
        else:
            expected = (
                plotly_outputs(path.with_suffix(".ipynb")) if path.with_suffix(".ipynb").is_file() else None
            )
        check_plots(page, where, expected, result)
        broken = page.evaluate(
            "() => Array.from(document.images).filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src)"
        )
        for src in broken:  # a PNG figure that is not there
            result.fail(where, f"image not shown: {src}")
        check_text(page, where, result)
        page.screenshot(path=str(browser.shots / f"{where}.png"), full_page=True)
        report_errors(page, where, result)
        page.close()


def has_equations(path: Path) -> bool:
    """Whether the notebook ``path`` has TeX ($...$) in a Markdown cell."""
    nb = json.loads(path.read_text())
    return any(
        re.search(r"\$[^$\n]+\$", "".join(c["source"])) for c in nb["cells"] if c["cell_type"] == "markdown"
    )


def plant(field: str) -> str:
    """Markup that would run if a page put it in unescaped."""
    return f"<script>window.pwned='{field}'</script><img src=x onerror=\"window.pwned='{field}'\">PWN-{field}"


def planted_report(browser: Browser, tmp: Path, result: Result) -> None:
    """A report written with planted markup in every string field that reaches the page (profile, status
    line, notebook name, notes, claims head and cell, a figure's title), opened in Chromium: nothing
    planted may run."""
    import nbformat
    import plotly.graph_objects as go

    from rspo.study.report import write_report
    from rspo.study.reproduce import NotebookRun
    from rspo.study.results import save_results

    out = tmp / "planted"
    figures = out / "figures"
    figures.mkdir(parents=True)
    (out / "runs").mkdir()
    for stem in ("00_quickstart", "05_analysis"):
        nbformat.write(nbformat.v4.new_notebook(), out / f"{stem}.ipynb")
    go.Figure(go.Bar(x=[plant("plot")], y=[1]), layout_title_text=plant("plot")).write_html(
        figures / "05_planted.html", include_plotlyjs=True
    )
    save_results(figures, plant("notebook"), note=plant("note"), runs=[{"name": plant("run")}])
    claims = {
        "head": ["env", "m", "algo", plant("claims_head")],
        "rows": [["detour", "0.1", "grpo", plant("cell")]],
    }
    save_results(figures, "05_analysis", claims=claims)
    runs = [
        NotebookRun(plant("notebook"), 3.0, out / "00_quickstart.ipynb"),
        NotebookRun("05_analysis", 3.0, out / "05_analysis.ipynb"),
    ]
    write_report(plant("profile"), out, runs, out / "runs", [plant("status")], 10.0, render=False)
    page = browser.page()
    dialogs: list[str] = []
    page.on("dialog", lambda d: dialogs.append(d.message) or d.dismiss())
    page.goto((out / "report.html").as_uri())
    page.wait_for_load_state("load")
    page.wait_for_timeout(1000)
    ran = page.evaluate("() => window.pwned || null")
    shown = page.locator("body").inner_text().count("PWN-")
    if ran or dialogs:
        result.fail("planted-report", f"planted markup ran: window.pwned = {ran!r}, dialogs {dialogs}")
    elif shown < 6:
        result.fail("planted-report", f"only {shown} planted strings shown as text (expected every field)")
    else:
        result.ok("planted-report", f"markup planted in every string field shown as text ({shown}), none ran")
    page.close()


def guarded(name: str, result: Result, fn, *args) -> None:
    """``fn(*args)``; an exception (a timeout waiting for the page) is a failure of that phase."""
    try:
        fn(*args)
    except Exception as err:
        result.fail(name, f"stopped: {type(err).__name__}: {str(err).splitlines()[0][:300]}")


def check(out: Path, shots: Path, chromium: str = CHROMIUM, lab: bool = True, widgets: bool = True) -> Result:
    from playwright.sync_api import sync_playwright

    shots.mkdir(parents=True, exist_ok=True)
    result = Result()
    with tempfile.TemporaryDirectory(prefix="rspo-browser-") as tmp, sync_playwright() as pw:
        browser = Browser(pw, chromium, shots)
        proc = None
        try:
            if lab or widgets:
                port = free_port()
                proc = start_lab(out, port, Path(tmp))
                page = browser.page()
                t0 = time.perf_counter()
                open_lab(page, f"http://127.0.0.1:{port}")
                print(f"JupyterLab loaded in {time.perf_counter() - t0:.1f} s", flush=True)
                for wanted, phase in ((lab, lab_notebooks), (widgets, lab_widgets)):
                    if wanted:
                        guarded(phase.__name__, result, phase, browser, page, out, result)
                close_all = OPEN_JS.replace("await app.commands.execute('docmanager:open', {path});", "")
                guarded("closing the notebooks", result, page.evaluate, close_all, "")  # kernels shut down
            guarded("static_pages", result, static_pages, browser, out, result)
            guarded("planted_report", result, planted_report, browser, Path(tmp), result)
        finally:
            browser.close()
            if proc is not None:
                proc.terminate()
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()
            shutil.rmtree(out / "browser-live", ignore_errors=True)
        result.notes += [f"blocked (another host): {url}" for url in sorted(browser.external)]
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "out", nargs="?", default=str(ROOT / "runs" / "reproduce-smoke"), help="a rspo reproduce folder"
    )
    ap.add_argument(
        "--smoke", action="store_true", help="first run `rspo reproduce --profile smoke --out OUT`"
    )
    ap.add_argument("--shots", default=str(ROOT / "runs" / "browser-check"), help="where screenshots go")
    ap.add_argument(
        "--chromium", default=os.environ.get("RSPO_CHROMIUM", CHROMIUM), help="Chromium executable"
    )
    ap.add_argument("--no-lab", action="store_true", help="skip the executed notebooks in JupyterLab")
    ap.add_argument("--no-widgets", action="store_true", help="skip the live widget check of notebook 02")
    args = ap.parse_args(argv)
    out = Path(args.out).resolve()
    global ZERO_IS_EXPECTED
    ZERO_IS_EXPECTED = args.smoke or out.name.startswith("reproduce-smoke")
    t0 = time.perf_counter()
    if args.smoke:
        print(f"rspo reproduce --profile smoke --out {out}", flush=True)
        subprocess.run(
            [sys.executable, "-m", "rspo.cli", "reproduce", "--profile", "smoke", "--out", str(out)],
            check=True,
        )
    if not (out / "report.html").is_file():
        print(
            f"browser check: no report.html in {out} (run rspo reproduce, or pass --smoke)", file=sys.stderr
        )
        return 2
    if not Path(args.chromium).exists():
        print(f"browser check: no Chromium at {args.chromium} (apt-get install chromium)", file=sys.stderr)
        return 2
    t1 = time.perf_counter()
    result = check(out, Path(args.shots), args.chromium, lab=not args.no_lab, widgets=not args.no_widgets)
    for note in result.notes:
        print(f"note: {note}")
    print(
        f"browser check: {len(result.failures)} failures, {len(result.checked)} checks passed; "
        f"{time.perf_counter() - t1:.0f} s in the browser ({time.perf_counter() - t0:.0f} s in all); "
        f"screenshots in {args.shots}"
    )
    for failure in result.failures:
        print(f"FAILED {failure}")
    return 1 if result.failures else 0


if __name__ == "__main__":
    sys.exit(main())
