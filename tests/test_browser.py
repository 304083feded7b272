"""The README's `bash course.sh lab` in a real browser: JupyterLab opens the welcome notebook,
Run > Run All Cells runs it, the tier report renders and no cell shows an error.

Uses Debian's chromium driven by Playwright (no browser download); skipped only when chromium
is not installed (.ci/run installs it). The server is always stopped; the test has deadlines
at every wait and takes well under 2 minutes.
"""
import json
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
STDERR = "application/vnd.jupyter.stderr"  # the mime type of stderr text and of tracebacks
SETTINGS = {"@jupyterlab/docmanager-extension/plugin": {"autosave": False},
            "@jupyterlab/apputils-extension/notification": {"fetchNews": "false"}}

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed "
                                "(Debian: apt-get install chromium chromium-driver; .ci/run does)")


def free_port() -> int:
    """A TCP port nobody listens on now (the server is told not to retry another)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_lab(tmp: pathlib.Path, port: int, token: str):
    """`bash course.sh lab` with server options passed through, in a process group of its own."""
    env = dict(os.environ, COURSE_VENV=sys.prefix, COURSE_TIER="cpu", IPYTHONDIR=str(tmp / "ipy"),
               JUPYTER_CONFIG_DIR=str(tmp / "cfg"), JUPYTER_RUNTIME_DIR=str(tmp / "run"),
               JUPYTERLAB_SETTINGS_DIR=str(tmp / "settings"),
               JUPYTERLAB_WORKSPACES_DIR=str(tmp / "ws"))
    for plugin, value in SETTINGS.items():  # no autosave: outputs must never reach the repo
        f = tmp / "settings" / f"{plugin}.jupyterlab-settings"
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(json.dumps(value))
    args = ["--no-browser", f"--port={port}", "--ServerApp.ip=127.0.0.1", "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={ROOT}",
            f"--FileCheckpoints.checkpoint_dir={tmp / 'checkpoints'}",
            "--LabApp.news_url=None", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
    log = open(tmp / "lab.log", "w")
    return subprocess.Popen(["bash", str(ROOT / "course.sh"), "lab", *args], env=env, cwd=ROOT,
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


# the status bar reads "Python 3 (ipykernel) | Idle" once the kernel is up and done
KERNEL_IDLE = ("() => (document.querySelector('#jp-main-statusbar')?.innerText ?? '')"
               ".includes('Python 3 (ipykernel) | Idle')")

# every code cell has its execution number, or one raised (Run All then stops) and all is quiet
ALL_RAN = """() => {
    const p = [...document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputPrompt')];
    const failed = document.querySelector('.jp-OutputArea-output[data-mime-type="STDERR"]');
    return (p.length > 0 && p.every(e => /\\[\\d+\\]/.test(e.textContent)))
        || (failed !== null && (KERNEL_IDLE)());
}""".replace("STDERR", STDERR).replace("KERNEL_IDLE", KERNEL_IDLE)


def run_all_and_read(page, url: str, shot: pathlib.Path, deadline: float) -> dict:
    """Open the notebook, Run > Run All Cells, wait for every cell; return what rendered."""
    try:
        page.goto(url, timeout=left_ms(deadline))
        page.wait_for_selector(".jp-Notebook .jp-CodeCell", timeout=left_ms(deadline))
        page.wait_for_function(KERNEL_IDLE, timeout=left_ms(deadline), polling=250)  # started
        page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
        page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()
        page.wait_for_function(ALL_RAN, timeout=left_ms(deadline), polling=250)
        page.wait_for_function(KERNEL_IDLE, timeout=left_ms(deadline), polling=250)
        page.locator(".jp-OutputArea-output").first.scroll_into_view_if_needed(timeout=5_000)
    finally:
        page.screenshot(path=str(shot))  # the tier report, or wherever it got stuck
    return page.evaluate("""() => ({
        outputs: [...document.querySelectorAll('.jp-OutputArea-output')].map(e => e.innerText),
        stderr: [...document.querySelectorAll('.jp-OutputArea-output[data-mime-type="STDERR"]')]
            .map(e => e.innerText),
        cells: document.querySelectorAll('.jp-Notebook .jp-CodeCell').length})""".replace("STDERR", STDERR))


def test_welcome_notebook_runs_in_jupyterlab(tmp_path):
    from playwright.sync_api import sync_playwright
    port, token, start = free_port(), secrets.token_hex(16), time.monotonic()
    deadline = start + 100  # then at most ~20 s more to stop the server: under 2 minutes
    committed = (ROOT / NOTEBOOK).read_bytes()
    base = f"http://127.0.0.1:{port}"
    proc = start_lab(tmp_path, port, token)
    try:
        wait_for_server(proc, f"{base}/api/status?token={token}", tmp_path / "lab.log",
                        min(deadline, start + 60))
        with sync_playwright() as pw:
            ctx = pw.chromium.launch_persistent_context(
                str(tmp_path / "profile"), executable_path=CHROMIUM, headless=True, args=FLAGS,
                viewport={"width": 1400, "height": 1000})
            try:
                seen = run_all_and_read(ctx.new_page(), f"{base}/lab/tree/{NOTEBOOK}?token={token}",
                                        tmp_path / "welcome.png", deadline)
            finally:
                ctx.close()
    finally:
        stop(proc, base, token)
    text = "\n".join(seen["outputs"])
    assert seen["cells"] >= 4, seen
    assert "Course tier: CPU" in text, f"no tier report; screenshot: {tmp_path / 'welcome.png'}"
    assert not seen["stderr"], f"cells wrote to stderr or raised:\n{seen['stderr']}"
    print(f"JupyterLab ran {NOTEBOOK} in {time.monotonic() - start:.1f} s; "
          f"screenshot: {tmp_path / 'welcome.png'}")
    assert "Traceback" not in text and "Error" not in text, text
    assert (ROOT / NOTEBOOK).read_bytes() == committed, "the test must never save the notebook"
    assert time.monotonic() - start < 120
