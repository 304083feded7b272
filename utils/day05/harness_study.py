"""Why does the course harness time cuDNN's attention faster than ``triton.testing.do_bench``?
(issue 40, item 1). One experiment per suspect, each moving one thing from do_bench's way of
timing towards the harness's, on the ladder shape of notebook 07 (4 x 16 x 4096 x 128, fp16):

* ``do_bench``: ``triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")`` per
  contender, one after another;
* ``alone``: the harness's clock (``bench.CudaClock``: written L2 flush outside the events,
  sustained) on one contender at a time;
* ``turns with``: cuDNN taking turns with one other contender at a time (flash, the course's step 4,
  a memory-bound copy of about the same length, an idle spin of about the same length);
* ``notebook 07's set``: every contender of notebook 07, with turns (how its recordings of
  2026-11-23 to 26 were timed) and in blocks (the harness since, ``bench.run_interleaved``).

While each experiment runs, ``nvidia-smi`` samples the SM clock and the board power every 20 ms
(a sample is taken for the experiment whose wall-clock window it falls in), so a time that moves
with the clock shows it (``nvidia-smi`` reports a sample, not the clock of each call: read the
columns as a hint, the times as the measurement). Every contender's output is checked against float32 torch first.

Run on a Hopper GPU: ``python -m utils.day05.harness_study [--record]``. Nothing here runs
without one (the course's CuteDSL kernels and cuDNN need the GPU).
"""
from __future__ import annotations

import statistics
import subprocess
import threading
import time

from ..core import bench

SHAPE = (4, 16, 4096, 128)
CUDNN, FLASH = "torch SDPA cuDNN", "torch SDPA flash"
STEP4 = "4 + softmax overlapped with the PV GEMM"          # attention_measure.STEP_NAMES["overlap"]


class Sampler:
    """``nvidia-smi`` every 20 ms in the background: ``[(wall time, SM MHz, watts)]``."""

    def __init__(self):
        self.samples, self._p = [], subprocess.Popen(
            ["nvidia-smi", "--query-gpu=clocks.sm,power.draw", "--format=csv,noheader,nounits",
             "-lms", "20"], stdout=subprocess.PIPE, text=True)
        self._t = threading.Thread(target=self._read, daemon=True)
        self._t.start()

    def _read(self):
        for line in self._p.stdout:
            try:
                mhz, watts = (float(x) for x in line.split(","))
            except ValueError:
                continue
            self.samples.append((time.time(), mhz, watts))

    def window(self, t0: float, t1: float) -> dict:
        got = [(m, w) for t, m, w in self.samples if t0 <= t <= t1]
        if not got:
            return {"sm_mhz": None, "watts": None, "samples": 0}
        return {"sm_mhz": statistics.median(m for m, _ in got),
                "watts": statistics.median(w for _, w in got), "samples": len(got)}

    def stop(self):
        self._p.terminate()


def _copy_like(ms: float):
    """A memory-bound copy that takes about ``ms`` (a neighbour that draws less power)."""
    import torch
    n = int(ms * 1e-3 * 3.0e12 / 4)              # read + write at ~3 TB/s
    a, b = torch.empty(n // 2, dtype=torch.int32, device="cuda"), torch.empty(n // 2, dtype=torch.int32, device="cuda")
    return lambda: b.copy_(a)


def _spin_like(ms: float):
    """An idle spin of about ``ms`` on one SM (the GPU waits, drawing little power)."""
    import torch
    cycles = int(ms * 1e-3 * 1.7e9)
    return lambda: torch.cuda._sleep(cycles)


def _timed(sampler, fns: dict, pacing: str, rounds=4, reps_per_round=10) -> dict:
    t0 = time.time()
    samples = bench.run_interleaved(fns, rounds=rounds, reps_per_round=reps_per_round, clock=bench.CudaClock(),
                                    pacing=pacing)
    env = sampler.window(t0, time.time())
    return {n: dict(env, ms=statistics.median([t for b in blocks for t in b])) for n, blocks in samples.items()}


STEM = "07_harness_study"                   # results/<device>/07_harness_study.json


def measure(repeat: int = 2) -> list:
    """Rows (results format: ``name`` the contender, ``part`` the experiment, ``value`` its
    TFLOP/s, ``ratio`` cuDNN's time over its time in the same experiment, plus ``ms``,
    ``sm_mhz``, ``watts``): every experiment ``repeat`` times, in the order do_bench, alone, pairs
    (turns), notebook 07's set with turns, the same set in blocks (the corrected harness)."""
    import torch
    import triton
    from . import attention, attention_measure as am
    B, H, S, D = SHAPE
    q, k, v = (bench.randn(SHAPE, torch.float16, "cuda", seed=i) for i in range(3))
    o = torch.empty_like(q)
    ref = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float())
    cons = am.contenders(q, k, v, o, False, ladder=True)
    for name, fn in cons.items():
        o.fill_(float("nan"))
        am.check_output(name, fn(), ref, v, torch.float16)
    del ref
    step4 = am.STEP_NAMES["overlap"]
    assert step4 == STEP4, "harness_study.STEP4 must name attention_measure's step 4"
    flops = attention.flops(B, H, S, D, False)
    tf = lambda ms: flops / (ms * 1e-3) / 1e12                                   # noqa: E731
    sampler, rows = Sampler(), []
    time.sleep(0.5)

    def add(exp, res):
        ref_ms = res.get(CUDNN, {}).get("ms")
        for name, r in res.items():
            rows.append(dict(r, name=name, part=exp, metric="TFLOP/s", value=tf(r["ms"]), reference=CUDNN,
                             reference_value=tf(ref_ms) if ref_ms else None,
                             ratio=ref_ms / r["ms"] if ref_ms else None, shape=list(SHAPE), dtype="float16"))
            print(f"{exp:<34}{name[:50]:<52}{r['ms']:8.4f} ms  {r.get('sm_mhz')} MHz  {r.get('watts')} W", flush=True)

    try:
        for rep in range(repeat):
            for name in (CUDNN, FLASH, step4):
                t0 = time.time()
                ms = triton.testing.do_bench(cons[name], warmup=25, rep=100, return_mode="median")
                add(f"do_bench #{rep}", {name: dict(sampler.window(t0, time.time()), ms=ms)})
            for name in (CUDNN, FLASH, step4):
                add(f"alone #{rep}", _timed(sampler, {name: cons[name]}, "blocks"))
            ms_c = statistics.median(triton.testing.do_bench(cons[CUDNN], warmup=5, rep=20, return_mode="all"))
            for other, fn in ((FLASH, cons[FLASH]), (step4, cons[step4]),
                              ("copy of the same length", _copy_like(ms_c)),
                              ("idle spin of the same length", _spin_like(ms_c))):
                add(f"turns with {other[:20]} #{rep}", _timed(sampler, {CUDNN: cons[CUDNN], other: fn}, "turns"))
            add(f"notebook 07's set, turns #{rep}", _timed(sampler, cons, "turns"))
            add(f"notebook 07's set, blocks #{rep}", _timed(sampler, cons, "blocks"))
    finally:
        sampler.stop()
    return rows


LABELS = {"do_bench": "do_bench, one contender at a time", "alone": "the harness, cuDNN alone",
          f"turns with {FLASH[:20]}": "turns with torch's flash kernel", f"turns with {STEP4[:20]}": "turns with step 4",
          "turns with copy of the same len": "turns with a copy (same length)",
          "turns with idle spin of the sam": "turns with an idle spin (same length)",
          "notebook 07's set, turns": "notebook 07's set, in turns", "notebook 07's set, blocks": "notebook 07's set, in blocks"}
"""Each experiment's ``part`` (less its `` #repeat``) -> the label the tables print, in measure()'s order."""


def by_experiment(rows: list, name: str = CUDNN) -> dict:
    """``{experiment: {repeat: row}}`` for contender ``name``, experiments in :data:`LABELS`' order
    (``part`` is ``"<experiment> #<repeat>"``). Raises ValueError for a part it does not know."""
    got = {}
    for r in rows:
        if r.get("name") != name:
            continue
        exp, _, rep = r["part"].rpartition(" #")
        if exp not in LABELS or not rep.isdigit():
            raise ValueError(f"unknown experiment {r['part']!r}: expected one of {list(LABELS)} + ' #<repeat>'")
        got.setdefault(exp, {})[int(rep)] = r
    return {e: got[e] for e in LABELS if e in got}


def format_cudnn(rows: list) -> str:
    """One line per experiment, one column group per repeat: cuDNN's median ms, that over cuDNN
    alone in the same repeat, and the board's power (nvidia-smi's median watts in the experiment)."""
    exps = by_experiment(rows)
    reps = sorted({k for per in exps.values() for k in per})
    alone = exps.get("alone", {})
    head = f"{'cuDNN, median ms':<40}" + "".join(f"{'repeat #%d' % k:>24}" for k in reps)
    sub = f"{'':<40}" + f"{'ms':>8}{'/ alone':>9}{'W':>7}" * len(reps)
    lines = [head, sub]
    for exp, per in exps.items():
        cells = []
        for k in reps:
            r = per.get(k)
            if r is None:
                cells.append(f"{'-':>24}")
                continue
            rel = f"{r['ms'] / alone[k]['ms']:.2f}" if k in alone else "-"
            w = f"{r['watts']:.0f}" if r.get("watts") is not None else "-"
            cells.append(f"{r['ms']:8.3f}{rel:>9}{w:>7}")
        lines.append(f"{LABELS[exp]:<40}" + "".join(cells))
    return "\n".join(lines)


def format_others(rows: list) -> str:
    """The other contenders do_bench timed (flash, step 4): their median ms by do_bench, in
    notebook 07's set in turns and in blocks, ``#0 / #1 / ...`` across repeats."""
    cols = (("do_bench", "do_bench"), ("notebook 07's set, turns", "07's set, turns"),
            ("notebook 07's set, blocks", "07's set, blocks"))
    lines = [f"{'median ms, repeat #0 / #1':<32}" + "".join(f"{h:>20}" for _, h in cols)]
    for name, short in ((FLASH, "torch's flash kernel"), (STEP4, "step 4 (the course's kernel)")):
        exps = by_experiment(rows, name)
        cells = [" / ".join(f"{exps[e][k]['ms']:.3f}" for k in sorted(exps[e])) if e in exps else "-" for e, _ in cols]
        lines.append(f"{short:<32}" + "".join(f"{c:>20}" for c in cells))
    return "\n".join(lines)


def main(argv=None) -> None:
    import argparse
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--record", action="store_true", help=f"save the rows to results/<device>/{STEM}.json")
    p.add_argument("--repeat", type=int, default=2)
    args = p.parse_args(argv)
    from ..core.tier import detect
    T = detect()
    if not T.has("wgmma"):
        raise SystemExit(f"the study times the course's sm_90a kernels and cuDNN: it needs a Hopper GPU "
                         f"(tier {T.name}); nothing was run")
    rows = measure(args.repeat)
    if args.record:
        from ..core import results
        print("saved", results.save(STEM, rows, command="python -m utils.day05.harness_study --record"))


if __name__ == "__main__":
    main()
