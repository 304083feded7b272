"""The README's `bash course.sh lab` in a real browser: JupyterLab opens the welcome notebook,
Run > Run All Cells runs it, the tier report renders and no cell shows an error.

Uses Debian's chromium driven by Playwright (no browser download); skipped only when chromium
is not installed (.ci/run installs it). The server is always stopped; the test has deadlines
at every wait and takes well under 2 minutes.
"""
import os
import pathlib
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

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed "
                                "(Debian: apt-get install chromium chromium-driver; .ci/run does)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_lab(tmp: pathlib.Path, port: int, token: str):
    """`bash course.sh lab` with server options passed through, in a process group of its own."""
    env = dict(os.environ, COURSE_VENV=sys.prefix, COURSE_TIER="cpu", IPYTHONDIR=str(tmp / "ipy"),
               JUPYTER_CONFIG_DIR=str(tmp / "cfg"), JUPYTER_RUNTIME_DIR=str(tmp / "run"),
               JUPYTERLAB_SETTINGS_DIR=str(tmp / "settings"),
               JUPYTERLAB_WORKSPACES_DIR=str(tmp / "ws"))
    args = ["--no-browser", f"--port={port}", "--ServerApp.ip=127.0.0.1", "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={ROOT}",
            "--LabApp.news_url=None", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
    if os.geteuid() == 0:  # CI containers run as root
        args.append("--allow-root")
    log = open(tmp / "lab.log", "w")
    return subprocess.Popen(["bash", str(ROOT / "course.sh"), "lab", *args], env=env, cwd=ROOT,
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def wait_for_server(proc, url: str, log: pathlib.Path, timeout: float = 60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"course.sh lab exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            urllib.request.urlopen(url, timeout=2)
            return
        except OSError:
            time.sleep(0.3)
    pytest.fail(f"JupyterLab did not answer within {timeout} s:\n{log.read_text()[-3000:]}")


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
            os.killpg(proc.pid, sig)
    proc.wait(timeout=10)


def run_all_and_read(page, url: str, shot: pathlib.Path) -> dict:
    """Open the notebook, Run > Run All Cells, wait for every cell; return what rendered."""
    page.goto(url)
    page.wait_for_selector(".jp-Notebook .jp-CodeCell", timeout=45_000)
    page.wait_for_selector('.jp-Notebook-ExecutionIndicator[data-status="idle"]', timeout=30_000)
    page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
    page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()
    page.wait_for_function("""() => {
        const p = [...document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputPrompt')];
        return p.length > 0 && p.every(e => /\\[\\d+\\]/.test(e.textContent));
    }""", timeout=60_000, polling=250)
    page.wait_for_selector('.jp-Notebook-ExecutionIndicator[data-status="idle"]', timeout=30_000)
    page.screenshot(path=str(shot), full_page=True)
    return page.evaluate("""() => ({
        outputs: [...document.querySelectorAll('.jp-OutputArea-output')].map(e => e.innerText),
        stderr: [...document.querySelectorAll(
            '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]')]
            .map(e => e.innerText),
        cells: document.querySelectorAll('.jp-Notebook .jp-CodeCell').length})""")


def test_welcome_notebook_runs_in_jupyterlab(tmp_path):
    from playwright.sync_api import sync_playwright
    port, token, start = free_port(), secrets.token_hex(16), time.monotonic()
    base = f"http://127.0.0.1:{port}"
    proc = start_lab(tmp_path, port, token)
    try:
        wait_for_server(proc, f"{base}/api/status?token={token}", tmp_path / "lab.log")
        with sync_playwright() as pw:
            ctx = pw.chromium.launch_persistent_context(
                str(tmp_path / "profile"), executable_path=CHROMIUM, headless=True, args=FLAGS,
                viewport={"width": 1400, "height": 1000})
            try:
                seen = run_all_and_read(ctx.new_page(), f"{base}/lab/tree/{NOTEBOOK}?token={token}",
                                        tmp_path / "welcome.png")
            finally:
                ctx.close()
    finally:
        stop(proc, base, token)
    text = "\n".join(seen["outputs"])
    assert seen["cells"] >= 4, seen
    assert "Course tier: CPU" in text, f"no tier report; screenshot: {tmp_path / 'welcome.png'}"
    assert not seen["stderr"], f"cells wrote to stderr or raised:\n{seen['stderr']}"
    assert "Traceback" not in text and "Error" not in text, text
    assert time.monotonic() - start < 120
