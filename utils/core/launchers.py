"""Which features each course function that launches GPU work needs: the one table that every
notebook cell's skip decision is checked against (``tests/test_tier_notebooks.py`` runs each
solution notebook's guards for fake GPUs of every compute capability).

Keys are the dotted paths notebooks import; values are feature names of
:mod:`utils.core.features`. Compile-only functions (``ptx_of``, ``triton_ptx``, ``runtime.ptx``,
``kernel_source``) launch nothing and are not listed; Triton kernels need nothing (they run
natively on any GPU Triton supports, and under the interpreter without one).

"ncu" measurements (``results.record_or_load(..., needs="ncu")``) need ``sm90a``: they profile
Hopper's kernels with Hopper's metric names.
"""
from __future__ import annotations

GPU, TMA, WGMMA, NCU = ("gpu",), ("tma",), ("wgmma",), ("sm90a",)
CUTE_TMA = ("tma", "cutedsl")                       # CuteDSL kernels compiled for this GPU's sm_XXa
MULTICAST = ("tma", "clusters", "multicast")
RUNTIME = "utils.tma.runtime."


def _each(prefix: str, names: str, needs: tuple) -> dict:
    return {prefix + n: needs for n in names.split()}


NEEDS = {
    # CUDA C++ through CuPy, which compiles for the GPU it runs on (never sm_90a)
    **_each("utils.cuda_cpp.day01.", "strided_read transpose raw_kernel as_cupy", GPU),
    **_each("utils.cuda_cpp.day02.", "chase chase_launcher read_inflight pipeline mbar_phases ring xor_all", GPU),
    "utils.cuda_cpp.bank_cost.cycles_per_read": GPU,
    **_each(RUNTIME, "load_dump store_box copy_pipelined pipelined_launcher bulk_launcher chunk_launcher "
            "serial_launcher resident_ctas tiles_launcher copy_tiles plain_copy column_read_cycles kernel", TMA),
    "utils.tma.feed.feed_launcher": MULTICAST,
    **_each("utils.tma.", "encode encode.encode", TMA),     # cuTensorMapEncodeTiled: a TMA GPU's driver
    "utils.tma.agreement.measure_agreement": TMA,
    **_each("utils.tma.lab_run.", "run measure sanitize", TMA),
    # tensormap.replace: compiled for this GPU's sm_XXa (update_run._module)
    **_each("utils.tma.update_run.", "grouped_load update_race reduce_add", ("tma", "tensormap_replace")),
    "utils.tma.counters.measure_bank_conflicts": NCU,
    # CuteDSL: TMA copies compiled for this GPU; GEMMs and attention are wgmma (sm_90a only)
    "utils.cute_dsl.tma.run_tile_copy": CUTE_TMA,
    "utils.cute_dsl.tma.run_broadcast": CUTE_TMA + ("clusters", "multicast"),
    **_each("utils.cute_dsl.gemm.", "run_gemm run_cached", WGMMA),
    "utils.cute_dsl.gemm_cpasync.run_cpasync": WGMMA,
    "utils.cute_dsl.gemm_ws.run_ws": ("wgmma", "setmaxnreg"),
    "utils.cute_dsl.ladder.run": WGMMA,
    "utils.cute_dsl.attention.run": ("wgmma", "setmaxnreg"),
    "utils.cute_dsl.gemm_sm100.run_gemm": ("tcgen05", "cutedsl"),   # day 5 · 09: compiled for this GPU
    **_each("utils.cute_dsl.measure.", "run_step measure_gemm", WGMMA),
    "utils.cute_dsl.measure.measure_tile_copy": CUTE_TMA,
    **_each("utils.cute_dsl.measure.", "measure_broadcast broadcast_once", CUTE_TMA + ("clusters", "multicast")),
    **_each("utils.cute_dsl.measure.", "profile_broadcast measure_multicast_traffic", NCU),
    "utils.cute_dsl.counters.launch_once": WGMMA,
    **_each("utils.cute_dsl.counters.", "measure_broadcast_lrc measure_gemm_counters", NCU),
    # day 5 measurements (copy buffers are sized for 227 KB of shared memory per block)
    **_each("utils.day05.copy_measure.", "measure_copies measure_settings measure_order measure_big run_once "
            "run_after_flush launcher", ("tma", "big_smem")),
    **_each("utils.day05.copy_measure.", "measure_counters measure_after_flush", NCU),
    **_each("utils.day05.ladder_measure.", "measure_ladder launch_each launch_once measure measure_clocks measure_launch", WGMMA),
    "utils.day05.harness_study.measure": WGMMA,
    **_each("utils.day05.ladder_measure.", "measure_counters profile_launches", NCU),
    "utils.day05.multicast_measure.measure_feed": MULTICAST,
    **_each("utils.day05.multicast_measure.", "run_gemm measure_gemm gemm_once measure_persistent persistent_once",
            WGMMA),
    **_each("utils.day05.multicast_measure.", "measure measure_gemm_counters measure_persistent_counters "
            "measure_persistent_all", NCU),
    **_each("utils.day05.intake_measure.", "compare_modes measure run_once", MULTICAST),
    **_each("utils.day05.intake_measure.", "measure_counters measure_all", NCU),
    **_each("utils.day05.attention_measure.", "measure_ladder measure_backends launch_once measure_clocks",
            ("wgmma", "setmaxnreg")),
    "utils.day05.attention_measure.measure_counters": NCU,
    **_each("utils.day05.skinny_measure.", "measure_skinny measure_grouped measure_gap measure_grouped_padded "
            "measure_grouped_clocks run_grouped_orders measure_padded_pair", TMA),
    # the lab report 06b: notebook 05's CuteDSL kernel with clusters and multicast on a skinny shape
    **_each("utils.day05.skinny_cluster.", "run_step measure_cluster measure_clocks run_each measure",
            ("multicast", "wgmma", "cutedsl")),
    "utils.day05.skinny_cluster.measure_counters": NCU,
    "utils.day05.skinny_measure.measure_grouped_dram": NCU,
    "utils.day05.skinny_measure.measure_loop_kernels": NCU,     # cuBLAS's Hopper kernel names (sm90a), read by name
    **_each("utils.day05.skinny_measure.", "measure_descriptor_modes measure_race", ("tma", "tensormap_replace")),
    # day 5 · 02, Exercise 3b: the learner's kernel on the emulator (needs nothing) and on this GPU
    "utils.day05.tma_kernel_run.run_emulated": (),
    "utils.day05.tma_kernel_run.run_gpu": TMA,
    "utils.day05.group_desc_run.gpu_outputs": ("tma", "tensormap_replace"),   # day 5 · 06 Exercise 4 on this GPU (the emulator needs nothing)
}

# Keyword arguments that add features when present and not literally False.
KWARG_NEEDS = {"utils.cuda_cpp.day02.ring": {"bulk": TMA}}    # bulk=True: cp.async.bulk (sm_90+)

# Functions that take the tier and decide themselves whether to launch: (what they test, what the
# launch needs). The test checks that deciding by the first is safe for the second.
SELF_DECIDING = {
    "utils.day02.checks.check_phase_fix": (GPU, GPU),
    "utils.tma.store_check.check_store_kernel": (TMA, TMA),
    "utils.tma.exercises.check_store_kernel": (TMA, TMA),
    "utils.day05.tma_kernel_check.check_tile_kernel": (TMA, TMA),   # the emulator everywhere, the GPU with TMA
    "utils.day05.tma_kernel_check.check_ring_kernel": (TMA, TMA),
    "utils.tma.lab_run.symptom": (("sm90a",), TMA),
    "utils.cute_dsl.exercises.check_producer": (TMA, WGMMA),    # its tier must already say wgmma
    "utils.cute_dsl.producer_check.check_producer": (TMA, WGMMA),
    "utils.day01.checks.check_transpose_kernel": (GPU, GPU),   # the emulator everywhere, CuPy on any GPU
    "utils.day02.checks.check_pipeline_kernel": (GPU, GPU),   # the emulator everywhere, the GPU when cc >= 8.0
    "utils.day02.checks.check_ring_kernel": (GPU, GPU),
    "utils.day05.group_desc_check.check_group_box": (("tma", "tensormap_replace"), ("tma", "tensormap_replace")),
}



def needs(path: str) -> tuple | None:
    """The features the function at dotted ``path`` needs to launch, or None if it launches nothing."""
    return NEEDS.get(path)
