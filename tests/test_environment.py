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


# The GPU set is what ran on the H100/H200 (torch's CUDA build there, with the Triton it pins);
# torch 2.11.0's CUDA wheel requires triton==3.6.0, so the two move together.
VERIFIED_ON_GPU = {"torch": "2.11.0", "triton": "3.6.0"}


def test_gpu_requirements_differ_only_in_torch_and_triton():
    gpu = {**pins((ROOT / "requirements-base.txt").read_text()),
           **pins((ROOT / "requirements-gpu.txt").read_text())}
    cpu = cpu_pins()
    assert set(gpu) == set(cpu)
    assert {k for k in cpu if cpu[k] != gpu[k]} <= {"torch", "triton"}
    assert {k: gpu[k] for k in VERIFIED_ON_GPU} == VERIFIED_ON_GPU


def test_readme_names_the_gpu_pins():
    readme = (ROOT / "README.md").read_text()
    assert f"torch {VERIFIED_ON_GPU['torch']}" in readme and f"Triton {VERIFIED_ON_GPU['triton']}" in readme


def test_key_pins_present():
    req = cpu_pins()
    assert req["nvidia-cutlass-dsl"].startswith("4.8.") and req["nbval"].startswith("0.11")
    assert req["jupyterlab"].startswith("4.") and int(req["triton"].split(".")[1]) >= 4
