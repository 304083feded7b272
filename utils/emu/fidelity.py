"""The emulator beside the GPU: each debugging-lab kernel's symptom recorded on Hopper
(``results/<device>/08_below_ptx.json``, made by :mod:`utils.tma.lab_run`) next to what the
emulator reports for the same kernel, and whether they agree (:func:`lab_table`); and the
recording of both on the SAME small launches (:data:`STEM`, made by
``python -m utils.emu.gpu_agreement --record``), shown by :func:`recording_table`.

Agreement means the emulator shows the GPU's symptom or a STRICTER one: a hang caught by the
bounded wait is a recorded deadlock; "illegal instruction" is a TMA rule error; "misaligned
address" is a misaligned-address error; wrong values, or a race the GPU happened not to show, is a
named race. In :func:`lab_table` the emulator runs at a small size (:data:`.course.LAB_SHAPE`), the
GPU at its own.
"""
from __future__ import annotations

import re

STEM = "08_below_ptx_emu_fidelity"                  # results/<device>/<STEM>.json
RECORD = "python -m utils.emu.gpu_agreement --record"
EMULATOR = "emulator: values, hangs and races; never a time"
GPU_KINDS = {"hang": "the bounded wait fired (a hang)", "illegal": "illegal instruction",
             "misaligned": "misaligned address", "wrong": "wrong values, no error", "none": "no visible error"}
AGREES = {"hang": {"deadlock"}, "illegal": {"TmaRuleError"}, "misaligned": {"MisalignedAddress"},
          "wrong": {"RaceError"}, "none": {"RaceError", "ok"}}
# the emulator's finding as a symptom class only (what a learner may see before answering)
CLASSES = {"deadlock": "a hang (deadlock)", "RaceError": "a race", "TmaRuleError": "a TMA rule broken",
           "MisalignedAddress": "a misaligned address", "MemoryFault": "a memory fault", "ok": "no error"}


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


def agrees(name: str, gpu: str, emulator: str) -> bool:
    """Does the emulator's finding show GPU symptom ``gpu`` or a stricter one? (The correct
    kernel must run clean on both.)"""
    from ..tma import lab
    return emulator in ({"none": {"ok"}} if name == lab.FIXED else AGREES).get(gpu, ())


def detail(report: dict) -> str:
    """The emulator's finding in one line: the waiting mbarrier's state for a deadlock (arrivals
    and bytes pending), the first sentence of the message for an error."""
    if report["error"]:
        text = report["message"].splitlines()[0].removeprefix("emulator: ")
        text = re.sub(r" \([^()]*PTX line \d+[^()]* \([^()]*\)\)", "", text)      # where, not what
        return f"{report['error']}: {text.split('. ')[0].split(' (measured')[0]}"
    if report["deadlocks"]:
        m = re.search(r"mbarrier at (shared \w+) .*?: (phase .*)", report["deadlocks"][0])
        return "deadlock, the bounded wait fired: " + (f"mbarrier at {m[1]}, {m[2]}" if m else "")
    if report["wait_timed_out"]:
        return "deadlock, the bounded wait fired"
    return f"no error; {report['wrong']} of {report['elements']} elements wrong"


def symptom_class(name: str, seed: int = 0) -> str:
    """Lab kernel ``name`` run on the emulator, reduced to its symptom class (:data:`CLASSES`):
    what an exercise may show before the learner answers."""
    from .course import lab_report
    return CLASSES[emulator_kind(lab_report(name, seed=seed))]


def lab_table(names=None, seed: int = 0) -> list:
    """One row per lab kernel: the emulator's finding (``emulator``, ``emulator_message``,
    ``emulator_detail``), each recorded GPU's symptom, and ``agrees`` (None where no GPU recorded
    the kernel)."""
    from ..core import results
    from ..tma import lab
    from .course import lab_report
    docs = results.documents("08_below_ptx")
    rows = []
    for name in names or lab.KERNELS:
        rep = lab_report(name, seed=seed)
        row = {"kernel": name, "emulator": emulator_kind(rep), "emulator_message": rep["message"] or
               (rep["deadlocks"][0] if rep["deadlocks"] else ""), "emulator_detail": detail(rep), "gpus": {}}
        for doc in docs:
            gpu = [r for r in doc["rows"] if r.get("name") == name]
            if gpu:
                row["gpus"][doc["device"]] = gpu_kind(gpu[0])
        row["agrees"] = (all(agrees(name, k, row["emulator"]) for k in row["gpus"].values())
                         if row["gpus"] else None)
        rows.append(row)
    return rows


def _columns(head: list, body: list) -> list:
    width = [max(len(str(x[i])) for x in [head] + body) for i in range(len(head))]
    return ["  ".join(str(c).ljust(w) for c, w in zip(x, width)).rstrip() for x in [head] + body]


def format_table(rows: list, details: bool = False) -> str:
    """The table as text, labelled as the emulator's; with ``details``, each kernel's emulator
    finding (:func:`detail`) on a line under it."""
    devices = sorted({d for r in rows for d in r["gpus"]})
    head = ["kernel"] + [f"GPU recording: {d}" for d in devices] + ["emulator", "agrees"]
    body = [[r["kernel"]] + [GPU_KINDS.get(r["gpus"].get(d), "not recorded yet") for d in devices]
            + [r["emulator"], {True: "yes", False: "NO", None: "n/a (no GPU recording)"}[r["agrees"]]]
            for r in rows]
    lines = _columns(head, body)
    if details:
        lines = lines[:1] + [x for r, line in zip(rows, lines[1:]) for x in (line, "    emulator: "
                                                                              + r["emulator_detail"])]
    return "emulator vs recorded GPU symptoms (emulator at a small size; no timing):\n" + "\n".join(lines)


def recording_table() -> str:
    """The recording of the emulator and the GPU on the same small launches (:data:`STEM`), one
    block per device: each kernel's GPU outcome, the emulator's, the differing bytes, and whether
    they match; or a line saying it is not recorded yet."""
    from ..core import results
    docs = results.documents(STEM)
    if not docs:
        return f"emulator vs GPU on the same launches: not recorded yet ({RECORD} on a Hopper GPU records it)"
    out = []
    for doc in docs:
        body = [[r["name"], r["gpu"], r["emulator"], "-" if r["differing_bytes"] is None else r["differing_bytes"],
                 "yes" if r["match"] else "NO"] for r in doc["rows"]]
        out += [f"emulator vs GPU on the same launches, {results.label(doc)}:",
                *_columns(["launch", "GPU", "emulator", "differing bytes", "match"], body), ""]
    return "\n".join(out).rstrip()


def recorded_mismatches() -> list:
    """``(device, row name)`` of every recorded row whose GPU and emulator outcomes do not match."""
    from ..core import results
    return [(d["device"], r["name"]) for d in results.documents(STEM) for r in d["rows"] if not r["match"]]
