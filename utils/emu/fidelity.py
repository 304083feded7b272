"""The emulator beside the GPU: each debugging-lab kernel's symptom recorded on Hopper
(``results/<device>/08_below_ptx.json``, made by :mod:`utils.tma.lab_run`) next to what the
emulator reports for the same kernel, and whether they agree.

Agreement means the emulator shows the GPU's symptom or a STRICTER one: a hang caught by the
bounded wait is a recorded deadlock; "illegal instruction" is a TMA rule error; "misaligned
address" is a misaligned-address error; wrong values, or a race the GPU happened not to show, is a
named race. The emulator runs at a small size (:data:`.course.LAB_SHAPE`), the GPU at its own.
"""
from __future__ import annotations

GPU_KINDS = {"hang": "the bounded wait fired (a hang)", "illegal": "illegal instruction",
             "misaligned": "misaligned address", "wrong": "wrong values, no error", "none": "no visible error"}
AGREES = {"hang": {"deadlock"}, "illegal": {"TmaRuleError"}, "misaligned": {"MisalignedAddress"},
          "wrong": {"RaceError"}, "none": {"RaceError", "ok"}}


def gpu_kind(row: dict) -> str:
    """The symptom of one recorded lab row (lab_run.symptom_row): a key of :data:`GPU_KINDS`."""
    err = row.get("cuda_error") or ""
    if "IllegalInstruction" in err:
        return "illegal"
    if "Misaligned" in err:
        return "misaligned"
    if row.get("wait_timed_out") or row.get("killed"):
        return "hang"
    return "wrong" if row.get("wrong") else "none"


def emulator_kind(report: dict) -> str:
    """The emulator's finding for a :func:`.course.lab_report`: an error class, "deadlock" or "ok"."""
    if report["error"]:
        return report["error"]
    return "deadlock" if report["deadlocks"] or report["wait_timed_out"] else "ok"


def lab_table(names=None, seed: int = 0) -> list:
    """One row per lab kernel: the emulator's finding, each recorded GPU's symptom, and ``agrees``
    (None where no GPU recorded the kernel)."""
    from ..core import results
    from ..tma import lab
    from .course import lab_report
    docs = results.documents("08_below_ptx")
    rows = []
    for name in names or lab.KERNELS:
        rep = lab_report(name, seed=seed)
        row = {"kernel": name, "emulator": emulator_kind(rep), "emulator_message": rep["message"] or
               (rep["deadlocks"][0] if rep["deadlocks"] else ""), "gpus": {}}
        for doc in docs:
            gpu = [r for r in doc["rows"] if r.get("name") == name]
            if gpu:
                row["gpus"][doc["device"]] = gpu_kind(gpu[0])
        allowed = {"none": {"ok"}} if name == lab.FIXED else AGREES
        row["agrees"] = (all(row["emulator"] in allowed.get(k, ()) for k in row["gpus"].values())
                         if row["gpus"] else None)
        rows.append(row)
    return rows


def format_table(rows: list) -> str:
    """The table as text, labelled as the emulator's."""
    devices = sorted({d for r in rows for d in r["gpus"]})
    head = ["kernel"] + [f"GPU: {d}" for d in devices] + ["emulator", "agrees"]
    body = [[r["kernel"]] + [GPU_KINDS.get(r["gpus"].get(d), "not recorded") for d in devices]
            + [r["emulator"], {True: "yes", False: "NO", None: "n/a (no GPU recording)"}[r["agrees"]]]
            for r in rows]
    width = [max(len(str(x[i])) for x in [head] + body) for i in range(len(head))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(x, width)).rstrip() for x in [head] + body]
    return "emulator vs recorded GPU symptoms (emulator at a small size; no timing):\n" + "\n".join(lines)
