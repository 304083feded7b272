"""requirements.txt and environment.yml pin the same versions."""
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parent.parent


def pins(text):
    return dict(re.findall(r"^\s*-?\s*([A-Za-z0-9_.\-]+)==([^\s#]+)", text, re.M))


def cpu_pins():
    return {**pins((ROOT / "requirements-base.txt").read_text()),
            **pins((ROOT / "requirements.txt").read_text())}


def test_pins_agree():
    req = cpu_pins()
    env = pins((ROOT / "environment.yml").read_text())
    assert len(req) >= 10
    assert req == {k: v for k, v in env.items() if k != "python"}


def test_gpu_requirements_differ_only_in_triton():
    gpu = {**pins((ROOT / "requirements-base.txt").read_text()),
           **pins((ROOT / "requirements-gpu.txt").read_text())}
    cpu = cpu_pins()
    assert set(gpu) == set(cpu) and gpu["torch"] == cpu["torch"]
    assert {k for k in cpu if cpu[k] != gpu[k]} <= {"triton"}


def test_key_pins_present():
    req = cpu_pins()
    assert req["nvidia-cutlass-dsl"].startswith("4.8.") and req["nbval"].startswith("0.11")
    assert req["jupyterlab"].startswith("4.") and int(req["triton"].split(".")[1]) >= 4
