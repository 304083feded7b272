"""The README's `bash course.sh lab` in a real browser, the way a new learner meets it.

The lab is started through `course.sh lab` itself (only --no-browser, a free port and a token
are added), the browser opens the server's root URL as the printed link does, and the test checks:
the welcome notebook opens; the file browser, at its root, lists the course's folders (the day
folders, solutions/, course/); clicking the welcome notebook's link to day 1 opens that notebook;
running its setup cell prints the tier report ("Course tier: CPU") and no error.

With COURSE_SCREENSHOT=1 the file-browser view is saved to course/images/lab_file_browser.png
(the README shows it). Uses Debian's chromium driven by Playwright (no browser download);
skipped only when chromium is not installed (.ci/run installs it). The server is always
stopped; every wait has a deadline and the test takes well under 2 minutes.
"""
import json
import os
import pathlib
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
NOTEBOOK = "course/00_welcome.ipynb"
DAY1 = "day01_memory_basics/01_hierarchy_bandwidth.ipynb"
FOLDERS = ["course", "day01_memory_basics", "day02_pipelining", "day05_tma", "solutions"]
SCREENSHOT = ROOT / "course" / "images" / "lab_file_browser.png"
STDERR = "application/vnd.jupyter.stderr"  # the mime type of stderr text and of tracebacks
SETTINGS = {"@jupyterlab/docmanager-extension/plugin": {"autosave": False},
            "@jupyterlab/apputils-extension/notification": {"fetchNews": "false"},
            # render every cell at once, so the welcome notebook's links exist without scrolling
            "@jupyterlab/notebook-extension/tracker": {"windowingMode": "none"}}

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="needs Chromium (Debian: apt-get install "
                                "chromium chromium-driver; .ci/run does)")


def free_port() -> int:
    """A TCP port nobody listens on now (the server is told not to retry another)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_lab(tmp: pathlib.Path, port: int, token: str):
    """`bash course.sh lab` exactly as a user runs it (root directory and start page are the
    script's), plus a port, a token and settings that keep the test's state in ``tmp``;
    in a process group of its own."""
    env = dict(os.environ, COURSE_VENV=sys.prefix, COURSE_TIER="cpu", IPYTHONDIR=str(tmp / "ipy"),
               JUPYTER_CONFIG_DIR=str(tmp / "cfg"), JUPYTER_RUNTIME_DIR=str(tmp / "run"),
               JUPYTERLAB_SETTINGS_DIR=str(tmp / "settings"),
               JUPYTERLAB_WORKSPACES_DIR=str(tmp / "ws"))
    for plugin, value in SETTINGS.items():  # no autosave: outputs must never reach the repo
        f = tmp / "settings" / f"{plugin}.jupyterlab-settings"
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(json.dumps(value))
    args = ["--no-browser", f"--port={port}", "--ServerApp.ip=127.0.0.1", "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={token}",
            f"--FileCheckpoints.checkpoint_dir={tmp / 'checkpoints'}",
            "--LabApp.news_url=None", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
    log = open(tmp / "lab.log", "w")
    return subprocess.Popen(["bash", str(ROOT / "course.sh"), "lab", *args], env=env, cwd=tmp,
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def left_ms(deadline: float) -> float:
    """Milliseconds until ``deadline`` (time.monotonic()), for Playwright's timeouts."""
    return max(1000.0, (deadline - time.monotonic()) * 1000)


def wait_for_server(proc, url: str, log: pathlib.Path, deadline: float):
    """Poll the server's status API until it answers; fail with the log if it exits or hangs."""
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"course.sh lab exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            urllib.request.urlopen(url, timeout=2)
            return
        except OSError:
            time.sleep(0.3)
    pytest.fail(f"JupyterLab did not answer in time:\n{log.read_text()[-3000:]}")


def stop(proc, base: str, token: str):
    """Stop the server and its kernels: the shutdown API, then SIGTERM, then SIGKILL."""
    try:
        urllib.request.urlopen(urllib.request.Request(
            f"{base}/api/shutdown", method="POST", headers={"Authorization": f"token {token}"}),
            timeout=5)
    except OSError:
        pass
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            proc.wait(timeout=10)
            return
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                return
    proc.wait(timeout=10)


# the status bar reads "Python 3 (ipykernel) | Idle" once the active notebook's kernel is up and done
KERNEL_IDLE = ("() => (document.querySelector('#jp-main-statusbar')?.innerText ?? '')"
               ".includes('Python 3 (ipykernel) | Idle')")
ACTIVE = "#jp-main-dock-panel .jp-NotebookPanel:visible"  # the notebook tab in front
LISTING = ".jp-FileBrowser .jp-DirListing-item .jp-DirListing-itemText"


def open_welcome(page, base: str, token: str, deadline: float):
    """The URL `course.sh lab` prints is the server's root: it must land on the welcome notebook."""
    page.goto(f"{base}/?token={token}", timeout=left_ms(deadline))
    assert page.url.split("?")[0].endswith("/lab/tree/" + NOTEBOOK), (
        f"the lab's start page is {page.url.split('?')[0]}, not the welcome notebook")
    page.wait_for_selector(f"{ACTIVE} .jp-CodeCell", timeout=left_ms(deadline))
    page.wait_for_function(KERNEL_IDLE, timeout=left_ms(deadline), polling=250)


def root_listing(page, deadline: float) -> list:
    """Go to the file browser's root (its home crumb) and return the names listed there."""
    page.locator(".jp-FileBrowser .jp-BreadCrumbs-home").first.click(timeout=left_ms(deadline))
    page.wait_for_function(
        "() => ['', '/'].includes(document.querySelector('.jp-FileBrowser .jp-BreadCrumbs')"
        "?.innerText.trim())"
        " && document.querySelectorAll('.jp-FileBrowser .jp-DirListing-item').length > 0",
        timeout=left_ms(deadline), polling=250)
    page.wait_for_timeout(500)  # let the listing settle after the navigation
    return page.locator(LISTING).all_inner_texts()


def widen_file_browser(page, pixels: int = 90):
    """Drag the sidebar's edge to the right so the folder names show in full."""
    box = page.locator("#jp-main-split-panel > .lm-SplitPanel-handle").first.bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x + pixels, y, steps=5)
    page.mouse.up()
    page.wait_for_timeout(300)


def follow_day1_link(page, deadline: float):
    """Click the welcome notebook's markdown link to day 1 and wait for that notebook's kernel."""
    link = page.locator(f'{ACTIVE} .jp-RenderedMarkdown a[href*="{DAY1}"]').first
    link.scroll_into_view_if_needed(timeout=left_ms(deadline))
    link.click(timeout=left_ms(deadline))
    tab = "#jp-main-dock-panel .lm-TabBar-tab.lm-mod-current"
    page.wait_for_function(
        f"() => document.querySelector('{tab}')?.innerText.includes('{DAY1.split('/')[1]}')",
        timeout=left_ms(deadline), polling=250)
    page.wait_for_selector(f"{ACTIVE} .jp-CodeCell", timeout=left_ms(deadline))
    page.wait_for_function(KERNEL_IDLE, timeout=left_ms(deadline), polling=250)


def run_setup_cell(page, deadline: float) -> dict:
    """Select the front notebook's first code cell (the setup cell), Run > Run Selected Cell."""
    from playwright.sync_api import expect
    cell = page.locator(f"{ACTIVE} .jp-CodeCell").first
    cell.locator(".jp-InputPrompt").click(timeout=left_ms(deadline))
    page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
    page.locator(".lm-Menu-item:visible", has_text="Run Selected Cell").first.click()
    expect(cell.locator(".jp-InputPrompt")).to_have_text(re.compile(r"\[\d+\]"),  # ran: [1]
                                                         timeout=left_ms(deadline))
    page.wait_for_function(KERNEL_IDLE, timeout=left_ms(deadline), polling=250)
    return {"outputs": cell.locator(".jp-OutputArea-output").all_inner_texts(),
            "stderr": page.locator(f'{ACTIVE} .jp-OutputArea-output[data-mime-type="{STDERR}"]')
            .all_inner_texts()}


def test_course_sh_lab_opens_the_course_and_day1_runs(tmp_path):
    from playwright.sync_api import sync_playwright
    port, token, start = free_port(), secrets.token_hex(16), time.monotonic()
    deadline = start + 100  # then at most ~20 s more to stop the server: under 2 minutes
    committed = {p: (ROOT / p).read_bytes() for p in (NOTEBOOK, DAY1)}
    base, shot = f"http://127.0.0.1:{port}", tmp_path / "lab.png"
    proc = start_lab(tmp_path, port, token)
    try:
        wait_for_server(proc, f"{base}/api/status?token={token}", tmp_path / "lab.log",
                        min(deadline, start + 60))
        with sync_playwright() as pw:
            ctx = pw.chromium.launch_persistent_context(
                str(tmp_path / "profile"), executable_path=CHROMIUM, headless=True, args=FLAGS,
                viewport={"width": 1280, "height": 800})
            page = ctx.new_page()
            try:
                open_welcome(page, base, token, deadline)
                listed = root_listing(page, deadline)
                page.screenshot(path=str(shot))
                missing = [f for f in FOLDERS if f not in listed]
                assert not missing, (f"the lab's file browser root lacks {missing}: it lists {listed}"
                                     " (is the server rooted at the repository?)")
                if os.environ.get("COURSE_SCREENSHOT") == "1":  # the README's picture
                    widen_file_browser(page)
                    page.screenshot(path=str(SCREENSHOT))
                follow_day1_link(page, deadline)
                seen = run_setup_cell(page, deadline)
            finally:
                page.screenshot(path=str(tmp_path / "last.png"))  # wherever it got, or got stuck
                ctx.close()
    finally:
        stop(proc, base, token)
    text = "\n".join(seen["outputs"])
    assert "Course tier: CPU" in text, f"no tier report in {text!r}; screenshot: {tmp_path / 'last.png'}"
    assert not seen["stderr"], f"the setup cell wrote to stderr or raised:\n{seen['stderr']}"
    assert "Traceback" not in text and "Error" not in text, text
    for path, data in committed.items():
        assert (ROOT / path).read_bytes() == data, f"the test must never save {path}"
    print(f"course.sh lab: welcome, file browser, day 1 setup cell in {time.monotonic() - start:.1f} s")
    assert time.monotonic() - start < 120
