"""Notebooks in a real JupyterLab, driven by headless Debian Chromium: widgets render as widgets (also from the
stored widget state, before anything runs), plotly draws, and opening a notebook does not modify it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from memkit.models.server import free_port

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian chromium is not installed (.ci/run installs it)")]
NOTEBOOK = Path(__file__).parents[1] / "notebooks" / "01_two_layers.ipynb"
UNRUN = Path(__file__).parents[1] / "notebooks" / "08_real_conversations.ipynb"
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]


@pytest.fixture
def lab(tmp_path):
    """JupyterLab on a free loopback port, serving copies of notebooks 1 and 8 (autosave never touches the repo)."""
    root = tmp_path / "lab"
    root.mkdir()
    shutil.copy(NOTEBOOK, root / NOTEBOOK.name)
    port, token = free_port(), "memkit-test-token"
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"), "JUPYTER_CONFIG_DIR": str(tmp_path / "cfg"),
           "JUPYTER_DATA_DIR": str(tmp_path / "data")}
    # notebook 8 as a user gets it: copied out of the installed package and signed for this (test) user
    subprocess.run([sys.executable, "-m", "memkit", "notebooks", str(tmp_path / "copies")], env=env, check=True,
                   capture_output=True)
    shutil.copy(tmp_path / "copies" / UNRUN.name, root / UNRUN.name)
    log = (tmp_path / "lab.log").open("w")
    proc = subprocess.Popen([sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root", "--ip=127.0.0.1",
                             f"--port={port}", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
                             "--ServerApp.disable_check_xsrf=True", "--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
                            stdout=log, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 90
    while time.time() < deadline:
        try:
            if httpx.get(f"{url}/api/status?token={token}", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.5)
    else:
        proc.kill()
        raise RuntimeError((tmp_path / "lab.log").read_text()[-3000:])
    yield url, token
    proc.terminate()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()


def _open(p, url: str, token: str, name: str):
    """Chromium on JupyterLab with notebook ``name`` open (and its kernel chosen, if JupyterLab asks)."""
    browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(f"{url}/lab/tree/{name}?token={token}", timeout=120_000)
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=120_000)
    select = page.locator(".jp-Dialog button:has-text('Select')")
    try:  # a fresh JupyterLab may ask which kernel to start
        select.wait_for(timeout=15_000)
        select.click()
    except Exception:
        pass
    return browser, page


def test_notebook_one_renders_widgets_and_plots(lab, tmp_path):
    from playwright.sync_api import sync_playwright

    url, token = lab
    shot = Path(os.environ.get("MEMKIT_SCREENSHOT_DIR", tmp_path)) / "notebook1.png"
    shot.parent.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser, page = _open(p, url, token, NOTEBOOK.name)
        page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=120_000)
        page.locator('.lm-MenuBar-itemLabel:text-is("Run")').click()
        page.locator('li[data-command="runmenu:run-all"]').click()
        try:
            page.wait_for_selector(".jp-OutputArea .jupyter-widgets", timeout=180_000)
        finally:
            page.screenshot(path=str(shot.with_name("notebook1-progress.png")))
        # the widget's own DOM (a text box inside a jupyter-widgets container), not its text fallback
        page.wait_for_selector(".jp-OutputArea .jupyter-widgets input[type='text']", timeout=180_000)
        page.wait_for_selector(".jp-OutputArea .js-plotly-plot .main-svg", timeout=180_000)
        page.wait_for_function("document.querySelectorAll('.jp-Cell .jp-InputArea-prompt').length > 0 && "
                               "[...document.querySelectorAll('.jp-InputArea-prompt')].every(e => !e.textContent.includes('*'))",
                               timeout=180_000)
        widget = page.locator(".jp-OutputArea .jupyter-widgets button:has-text('send')")
        assert widget.count() >= 1
        assert page.locator(".jp-OutputArea .js-plotly-plot").count() >= 2
        assert page.locator(".jp-OutputArea-output:has-text('VBox(children=')").count() == 0
        assert page.locator(".jp-OutputArea-output:has-text('metric preference in Friday')").count() == 1
        widget.first.scroll_into_view_if_needed()
        page.screenshot(path=str(shot), full_page=False)
        browser.close()
    assert shot.stat().st_size > 20_000


def test_an_unrun_notebook_shows_its_widgets_and_is_not_modified_by_opening(lab, tmp_path):
    from playwright.sync_api import sync_playwright

    url, token = lab
    shot = Path(os.environ.get("MEMKIT_SCREENSHOT_DIR", tmp_path)) / "notebook8-on-open.png"
    shot.parent.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser, page = _open(p, url, token, UNRUN.name)
        # nothing is run: the explorer is drawn from the widget state stored in the notebook
        try:
            page.wait_for_selector(".jp-OutputArea .jupyter-widgets select", timeout=120_000)
            page.locator(".jp-OutputArea .jupyter-widgets select").first.scroll_into_view_if_needed()
            page.wait_for_timeout(3_000)  # time for anything that would modify the document on load
        finally:
            page.screenshot(path=str(shot), full_page=False)
        assert page.locator(".jp-OutputArea-output:has-text('VBox(children=')").count() == 0
        assert page.locator(".jp-OutputArea .jupyter-widgets .widget-slider").count() >= 1
        assert page.locator(".jp-OutputArea .jupyter-widgets:has-text('evidence turns in context')").count() >= 1
        assert page.locator(".lm-TabBar-tab.jp-mod-dirty").count() == 0, "opening the notebook modified it"
        browser.close()
