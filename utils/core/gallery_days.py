"""What the results gallery shows per course day: the key comparison of each day (``SCREENS``)
and the takeaways the day's notebooks state, written as claims the recordings must satisfy.

A bar is one recorded row as a ratio to its reference, both timed in the same run (the row's
``ratio``; where the recording's reference is another row, ``value / reference value`` of the two
rows of that run). Every chart compares one kind of quantity (bandwidth or FLOP/s ratios), never
kernel times with the wall time of a subprocess. A takeaway names the bars it reads and a test
that must hold on every device; ``utils.core.gallery.takeaways`` prints it with the figures.
"""
from __future__ import annotations

from collections import namedtuple

# ``newer``: a bar for a row that recordings older than the step it shows lack (drawn "-" there);
# any other bar missing from a recording is an error.
Bar = namedtuple("Bar", "label stem name ref match newer", defaults=(False,))
Chart = namedtuple("Chart", "title bars")
Takeaway = namedtuple("Takeaway", "claim labels holds")
MEMCPY, CUBLAS, CUDNN = "torch copy (memcpy)", "cuBLAS (torch.matmul)", "torch SDPA cuDNN"
F16 = {"dtype": "float16", "metric": "TFLOP/s"}


def _bars(stem, ref, pairs, **match):
    return [Bar(label, stem, name, ref, match) for label, name in pairs]


DAY1 = Chart("bandwidth, as a fraction of the reference timed in the same run", [
    *_bars("01_hierarchy_bandwidth", MEMCPY, [("copy: Triton / memcpy", "Triton copy")]),
    *[Bar(f"stride {s} / stride 1 (Triton)", "02_coalescing", f"Triton stride {s}", "Triton stride 1", {})
      for s in (2, 4, 8, 32)],
    Bar("offset 1 / offset 0 (Triton)", "02_coalescing", "Triton offset 1", "Triton offset 0", {}),
    *_bars("03_shared_memory_banks", MEMCPY, [
        ("transpose v0 naive / memcpy", "CUDA v0 naive"), ("transpose v1 shared memory / memcpy", "CUDA v1 smem"),
        ("transpose v2 padded / memcpy", "CUDA v2 padded"), ("transpose v3 swizzled / memcpy", "CUDA v3 swizzled")]),
])

DAY2 = Chart("bandwidth / memcpy timed in the same run", [
    *_bars("01_latency_littles_law", MEMCPY, [
        (f"read, {u} load(s)/thread, {b} block(s)/SM", f"read u={u} blocks/SM={b}")
        for u, b in ((1, 1), (1, 16), (8, 1), (8, 8))]),
    *_bars("02_software_pipelining", MEMCPY, [(f"cp.async pipeline, {s} stage(s)", f"cp.async S={s}, work=0")
                                             for s in (1, 2, 4, 8)]),
    *_bars("03_async_barriers", MEMCPY, [
        ("mbarrier ring, cp.async, 8 slots, 1 block/SM", "ring cp.async S=8, 1 block/SM"),
        ("mbarrier ring, bulk copy, 8 slots, 1 block/SM", "ring bulk S=8, 1 block/SM"),
        ("mbarrier ring, bulk copy, 8 slots, 8 blocks/SM", "ring bulk S=8, 8 blocks/SM")]),
])

DAY5_COPY = Chart("copies: bandwidth / memcpy timed in the same run (8192 x 8192 fp16)", [
    *_bars("01_tma_concepts", MEMCPY, [("Triton plain copy", "Triton plain copy"), ("Triton TMA copy", "Triton TMA copy")]),
    *_bars("02_descriptors_cupy", MEMCPY, [("CUDA thread-driven copy", "thread-driven copy (16 B/thread)"),
                                           ("CUDA TMA, pipelined", "TMA pipelined (4 stages)")]),
])
_G = [8192] * 3
DAY5_GEMM = Chart("GEMMs, 8192³ fp16: TFLOP/s / cuBLAS timed in the same run", [
    *_bars("03_triton_tma_gemm", CUBLAS, [("Triton v0 plain loads", "Triton v0 plain loads"),
                                          ("Triton v1 TMA loads", "Triton v1 TMA loads"),
                                          ("Triton v4 flattened", "Triton v4 flattened")], shape=_G, **F16),
    *_bars("04_cutedsl_tma_gemm", CUBLAS, [("CuteDSL TMA, 1 stage", "CuteDSL TMA+WGMMA, 1 stage"),
                                           ("CuteDSL TMA, 4 stages", "CuteDSL TMA+WGMMA, 4 stages"),
                                           ("CuteDSL TMA, warp-specialized persistent", "CuteDSL TMA+WGMMA, warp-specialized persistent"),
                                           ("CuteDSL cp.async, 4 stages", "CuteDSL cp.async+WGMMA, 4 stages")], shape=_G, **F16),
])

RUNGS = ["1 · 128x128 tile", "2 · 128x256 tile", "3 · + producer warpgroup", "4 · + setmaxnreg 40/232",
         "5 · + persistent, stores overlapped", "6 · + cluster 2x1, B multicast", "7 · ping-pong consumers"]
LADDER = Chart("05 the GEMM ladder, 8192³ fp16: TFLOP/s / cuBLAS", _bars("05_gemm_ladder", CUBLAS, [
    (f"rung {n}", n) for n in RUNGS], shape=_G, **F16))
SKINNY = Chart("06 skinny M x 8192 x 8192 fp16: TFLOP/s / cuBLAS", [
    Bar(f"M = {m}, {name}", "06_skinny_grouped", name, CUBLAS, dict(shape=[m, 8192, 8192], **F16))
    for m in (128, 256) for name in ("wide tiles, no split", "wide tiles, split-K, reduce-add in C's dtype",
                                    "narrow tiles, no split", "narrow tiles, stream-K, reduce-add in C's dtype")])
_A = dict(shape=[4, 16, 4096, 128], part="ladder", **F16)
STEPS = ["1 Q resident, K/V by TMA through a ring (2 warpgroups compute)", "2 + producer warpgroup (setmaxnreg 24/240)",
         "3 + ping-pong between the consumer warpgroups", "4 + softmax overlapped with the PV GEMM"]
STEP5 = "5 + the turn passed by named barriers (Exercise 4)"
ATTENTION = Chart("07 attention, S = 4096, D = 128 fp16: TFLOP/s / cuDNN", [
    *[Bar(f"step {s[0]}{', causal' if c else ''}", "07_flash_attention", s, CUDNN, dict(_A, causal=c), s == STEP5)
      for c in (False, True) for s in (*STEPS, STEP5)],
    *[Bar(f"{n}{', causal' if c else ''}", "07_flash_attention", n, CUDNN, dict(_A, causal=c))
      for c in (False, True) for n in ("plain Triton (FA2-style, no TMA)", "torch SDPA flash")]])


def _step_gains(v):
    gains = [v[f"rung {b}"] - v[f"rung {a}"] for a, b in zip(RUNGS, RUNGS[1:])]
    return max(range(len(gains)), key=gains.__getitem__) == 0


SCREENS = {
    "day1": {"title": "Day 1: what a kernel keeps of the bandwidth", "charts": [DAY1], "takeaways": [
        Takeaway("A plain copy runs at memcpy speed (within 3%)", ["copy: Triton / memcpy"],
                 lambda v: abs(v["copy: Triton / memcpy"] - 1) <= 0.03),
        Takeaway("A stride of 2 loses about a third of the bandwidth, as the 32-byte sectors predict",
                 ["stride 2 / stride 1 (Triton)"], lambda v: 0.55 <= v["stride 2 / stride 1 (Triton)"] <= 0.8),
        Takeaway("A misaligned start costs almost nothing (within 3%)", ["offset 1 / offset 0 (Triton)"],
                 lambda v: v["offset 1 / offset 0 (Triton)"] >= 0.97),
        Takeaway("Transpose: shared memory beats naive, and padding or swizzling beats shared memory alone",
                 ["transpose v0 naive / memcpy", "transpose v1 shared memory / memcpy",
                  "transpose v2 padded / memcpy", "transpose v3 swizzled / memcpy"],
                 lambda v: v["transpose v0 naive / memcpy"] < v["transpose v1 shared memory / memcpy"]
                 < min(v["transpose v2 padded / memcpy"], v["transpose v3 swizzled / memcpy"]))]},
    "day2": {"title": "Day 2: bytes in flight make bandwidth", "charts": [DAY2], "takeaways": [
        Takeaway("More bytes in flight per SM, more bandwidth (Little's law): 8 loads x 8 blocks reads at least 3x 1 x 1",
                 ["read, 1 load(s)/thread, 1 block(s)/SM", "read, 8 load(s)/thread, 8 block(s)/SM"],
                 lambda v: v["read, 8 load(s)/thread, 8 block(s)/SM"] >= 3 * v["read, 1 load(s)/thread, 1 block(s)/SM"]),
        Takeaway("More pipeline stages, more bandwidth: 8 stages at least 1.5x 1 stage",
                 ["cp.async pipeline, 1 stage(s)", "cp.async pipeline, 8 stage(s)"],
                 lambda v: v["cp.async pipeline, 8 stage(s)"] >= 1.5 * v["cp.async pipeline, 1 stage(s)"]),
        Takeaway("One bulk copy per tile is no faster than the cp.async ring here (within 5%)",
                 ["mbarrier ring, cp.async, 8 slots, 1 block/SM", "mbarrier ring, bulk copy, 8 slots, 1 block/SM"],
                 lambda v: abs(v["mbarrier ring, bulk copy, 8 slots, 1 block/SM"]
                               / v["mbarrier ring, cp.async, 8 slots, 1 block/SM"] - 1) <= 0.05)]},
    "day5": {"title": "Day 5 (01-04): TMA copies and GEMMs", "charts": [DAY5_COPY, DAY5_GEMM], "takeaways": [
        Takeaway("TMA does not raise the copy ceiling: no copy beats memcpy by more than 2%",
                 [b.label for b in DAY5_COPY.bars], lambda v: max(v.values()) <= 1.02),
        Takeaway("TMA loads beat plain loads in the Triton GEMM", ["Triton v0 plain loads", "Triton v1 TMA loads"],
                 lambda v: v["Triton v1 TMA loads"] > v["Triton v0 plain loads"]),
        Takeaway("One stage cannot hide the load latency: 4 stages run at least 1.5x 1 stage",
                 ["CuteDSL TMA, 1 stage", "CuteDSL TMA, 4 stages"],
                 lambda v: v["CuteDSL TMA, 4 stages"] >= 1.5 * v["CuteDSL TMA, 1 stage"]),
        Takeaway("TMA beats cp.async in the same 4-stage GEMM", ["CuteDSL TMA, 4 stages", "CuteDSL cp.async, 4 stages"],
                 lambda v: v["CuteDSL TMA, 4 stages"] > v["CuteDSL cp.async, 4 stages"]),
        Takeaway("The best TMA GEMM of each stack reaches cuBLAS within 3% at 8192³",
                 ["Triton v4 flattened", "CuteDSL TMA, warp-specialized persistent", "CuteDSL TMA, 4 stages"],
                 lambda v: v["Triton v4 flattened"] >= 0.97 and max(
                     v["CuteDSL TMA, warp-specialized persistent"], v["CuteDSL TMA, 4 stages"]) >= 0.97)]},
    "followups": {"title": "Day 5 follow-ups (05-07): the ladder, skinny shapes, attention",
                  "charts": [LADDER, SKINNY, ATTENTION], "takeaways": [
        Takeaway("Of all the ladder's rungs, the 128x256 tile (rung 2) gains the most",
                 [f"rung {n}" for n in RUNGS], _step_gains),
        Takeaway("The producer warpgroup and setmaxnreg (rungs 3-4) change little by themselves: they are enablers",
                 ["rung 2 · 128x256 tile", "rung 4 · + setmaxnreg 40/232"],
                 lambda v: abs(v["rung 4 · + setmaxnreg 40/232"] - v["rung 2 · 128x256 tile"]) <= 0.03),
        Takeaway("Rung 7 (ping-pong and 64-row tiles per warpgroup: two changes) is slower than rung 6",
                 ["rung 6 · + cluster 2x1, B multicast", "rung 7 · ping-pong consumers"],
                 lambda v: v["rung 7 · ping-pong consumers"] < v["rung 6 · + cluster 2x1, B multicast"]),
        Takeaway("Skinny GEMMs: filling the SMs is what matters; at M = 128 narrower tiles and split-K into C's dtype "
                 "both beat the wide tiles", ["M = 128, wide tiles, no split", "M = 128, narrow tiles, no split",
                                              "M = 128, wide tiles, split-K, reduce-add in C's dtype"],
                 lambda v: min(v["M = 128, narrow tiles, no split"], v["M = 128, wide tiles, split-K, reduce-add in C's dtype"])
                 > v["M = 128, wide tiles, no split"]),
        Takeaway("Stream-K did not pay here: at M = 128 it is slower than the narrow tiles it splits",
                 ["M = 128, narrow tiles, no split", "M = 128, narrow tiles, stream-K, reduce-add in C's dtype"],
                 lambda v: v["M = 128, narrow tiles, stream-K, reduce-add in C's dtype"] < v["M = 128, narrow tiles, no split"]),
        Takeaway("Steps 1-4 (the turn through an mbarrier ring) beat plain Triton and torch's flash backend and stay "
                 "below cuDNN (non-causal); 07 §8 shows step 5",
                 ["step 4", "plain Triton (FA2-style, no TMA)", "torch SDPA flash"] + [f"step {s[0]}" for s in STEPS[:3]],
                 lambda v: v["plain Triton (FA2-style, no TMA)"] < v["step 4"] and v["torch SDPA flash"] < v["step 4"]
                 and max(v[f"step {n}"] for n in "1234") < 1.0)]},
}

# Results files that no day screen draws: shown on demand with gallery.show_recorded(stem).
ON_DEMAND = {
    "05_gemm_ladder_multicast": "05 §6 (where multicast pays) and the lab report 05b §2",
    "05_gemm_ladder_copy": "the lab report 05b §1, a copy at memcpy speed",
    "05_gemm_ladder_copy_1gib": "the lab report 05b §1.2, the copy at 1 GiB",
    "05_gemm_ladder_persistent": "05 §5, rung 6 in two changes",
    "05_gemm_ladder_launch": "05 §5, the launch path: called directly from Python against CUDA-graph replays",
    "06_skinny_grouped_cluster": "the lab report 06b §1, skinny M = 256: clusters and multicast one change at a time",
    "06_skinny_grouped_padded": "the lab report 06b §2, the large mix as routed and padded to whole tiles",
    "06_skinny_grouped_loop": "the lab report 06b §2, the kernels (and tiles) cuBLAS runs for each expert of the loop",
    "06_skinny_grouped_clocks": "the lab report 06b §2, each grouped contender's clock, power and work per clock",
    "07_flash_attention_clocks": "07 §10, steps 4 and 5 and cuDNN each alone: nvidia-smi's clock, the board power, TFLOP/s",
    "08_below_ptx": "08, counters and the debugging lab's subprocesses",
    "08_below_ptx_emu_fidelity": "08 §2.7, the emulator and the GPU on the same small launches",
    "07_harness_study": "the lab report 05b §3, cuDNN timed in turns, in blocks and by do_bench",
}
