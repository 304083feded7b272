"""Day 5 · 05, §7: what an SM takes in, and when multicast pays (Hopper only; the feed kernel of
``utils/tma/feed.py`` with consumers that read one 2 KiB line of each 16 KiB chunk, so each SM does
almost nothing but receive; the copy still lands every byte).

* **The intake**: clusters of two from a hot 64 KiB source (four chunks every cluster reads) and
  from an L2-resident 16 MiB one: each CTA loads, the cluster-wide release alone, multicast.
* **Out of step**: the same, but CTA ``rank`` of a cluster takes the cluster's chunks starting
  ``rank * per_cta / R`` later, so the CTAs never ask for the same chunk at the same time and the
  hardware cannot merge their reads; against CTAs in step and multicast, from L2 and from DRAM,
  clusters of 2 and 4.

Each part is timed by ``compare_modes`` (GB/s delivered to shared memory, contenders interleaved,
every output checked against a float64 sum first; §7's feed times through it too), then run once
under Nsight Compute: the SM clock, bytes per cycle per SM, L2 and DRAM busy %, the bytes the SMs
took in and how busy that port was, DRAM bytes, and how Hopper's L2 request coalescer served the
bytes (read from L2, merged by hardware, served by multicast). The rows go to notebook 05's
``05_gemm_ladder_multicast`` results file.
"""
from __future__ import annotations

from ..core import bench
from ..core.ncu import DRAM_PCT

STEM = "05_gemm_ladder_multicast"   # notebook 05 §7's results file, next to 05_gemm_ladder.json
L2_PCT = "lts__t_sectors.avg.pct_of_peak_sustained_elapsed"

LIGHT = dict(chunk_bytes=16384, stages=2, per_cta=32, lines=1)   # one line read per chunk, 2 stages
INTAKE_SOURCES = {"hot source (64 KiB)": 64 << 10, "L2-resident source (16 MiB)": 16 << 20}
INTAKE_MODES = ("each loads", "cluster release", "multicast")
INTAKE_R = 2
OOS = "each loads, out of step"
OOS_SOURCES = {"L2-resident source (16 MiB)": 16 << 20, "DRAM source (1 GiB)": 1 << 30}
OOS_MODES = (OOS, "each loads", "multicast")           # ratios against the first
OOS_R = (2, 4)
OOS_COUNTERS_R = 2                                      # the ncu pass: clusters of two
PORT_PCT = "l1tex__m_xbar2l1tex_read_bytes.sum.pct_of_peak_sustained_elapsed"   # the SMs' intake port
METRICS = ("gpu__time_duration.sum", "sm__cycles_elapsed.avg", L2_PCT, DRAM_PCT, PORT_PCT,
           "l1tex__m_xbar2l1tex_read_bytes.sum", "dram__bytes_read.sum")   # + counters.LRC


def row_name(part: str, source: str, R: int, mode: str) -> str:
    """``"intake, hot source (64 KiB), multicast"`` or ``"out of step, DRAM source (1 GiB), R = 4, multicast"``."""
    return f"intake, {source}, {mode}" if part == "intake" else f"{part}, {source}, R = {R}, {mode}"


def cases(part: str) -> list:
    """``(source, nbytes, R, modes)`` per timed comparison of ``part`` ("intake" or "out of step")."""
    if part == "intake":
        return [(s, n, INTAKE_R, INTAKE_MODES) for s, n in INTAKE_SOURCES.items()]
    if part == "out of step":
        return [(s, n, R, OOS_MODES) for s, n in OOS_SOURCES.items() for R in OOS_R]
    raise ValueError(f"part must be 'intake' or 'out of step', got {part!r}")


def profiled(part: str) -> list:
    """``(source, nbytes, R, mode)`` per launch of ``part`` under ncu, in launch order."""
    keep = (lambda R: True) if part == "intake" else (lambda R: R == OOS_COUNTERS_R)
    return [(s, n, R, m) for s, n, R, modes in cases(part) if keep(R) for m in modes]


def _source(nbytes: int):
    """The fp16 source on the GPU, made on the host (no kernel launch: ncu counts only the feed's)."""
    import cupy as cp
    import numpy as np
    return cp.asarray(np.random.default_rng(0).standard_normal(nbytes // 2).astype(np.float16))


def _launchers(src, R: int, modes, cfg: dict, name) -> dict:
    """``{mode: (launch, out, check)}``: the feed on ``src`` in each of ``modes`` (launch keyword
    arguments ``cfg``), and a check of each output against one float64 reference (every mode lands
    the same chunks in each CTA, so the sums are the same); ``name(mode)`` names it in errors."""
    import cupy as cp
    from ..tma import feed
    made = {m: feed.feed_launcher(src, R, m, **cfg) for m in modes}
    want = feed.feed_reference(src, R, cfg["chunk_bytes"], cfg["per_cta"], made[modes[0]][1].shape[0],
                               cfg.get("lines"))

    def checker(mode):
        _, out, status = made[mode]

        def check():
            cp.cuda.runtime.deviceSynchronize()
            if int(status.get()[0]):
                raise RuntimeError(f"{name(mode)}: a bounded mbarrier wait fired (a stage never completed)")
            feed.check_out(out, want, name(mode))
        return check
    return {m: (made[m][0], made[m][1], checker(m)) for m in modes}


def compare_modes(src, R: int, modes, cfg: dict, name, reps: int = 50) -> list:
    """``bench.compare`` rows (GB/s delivered to shared memory) of the feed on ``src`` in each of
    ``modes``, interleaved, every output poisoned with NaN and checked first; rows named
    ``name(mode)``, ratios against ``modes[0]``, each with ``mode``, ``R`` and ``l2_bytes`` (what the
    CTAs ask L2 for, from the launch). §7's feed and both parts here time through it."""
    from ..tma import feed
    made = _launchers(src, R, modes, cfg, name)
    by_name = {name(m): (m, *v) for m, v in made.items()}
    ctas = made[modes[0]][1].shape[0]
    contenders = {n: (lambda n=n: (by_name[n][1](), by_name[n][2])[1]) for n in by_name}
    got = bench.compare(lambda: (), contenders, reference=name(modes[0]), metric="GB/s",
                        amount=feed.delivered_bytes(cfg["chunk_bytes"], cfg["per_cta"], ctas),
                        shape=[src.nbytes], dtype="float16", check=lambda n, out, ref: by_name[n][3](),
                        reset=lambda: [v[1].fill(float("nan")) for v in made.values()], reps=reps)
    for r in got:
        mode = by_name[r["name"]][0]
        r.update(R=R, mode=mode, l2_bytes=feed.l2_bytes(R, mode, cfg["chunk_bytes"], cfg["per_cta"], ctas))
    return got


def measure(part: str, reps: int = 50) -> list:
    """Rows (``part``, GB/s delivered to shared memory) per case and mode, ratios against the first
    mode of the case; ``bytes_per_clock_per_sm`` at the SM's top clock (a lower bound per cycle)."""
    import cupy as cp
    dev = cp.cuda.Device()
    sms, ghz = dev.attributes["MultiProcessorCount"], dev.attributes["ClockRate"] / 1e6
    rows = []
    for source, nbytes, R, modes in cases(part):
        got = compare_modes(_source(nbytes), R, modes, LIGHT, lambda m: row_name(part, source, R, m), reps)
        for r in got:
            r.update(part=part, source=source, sms=sms, top_clock_ghz=ghz, bytes_per_clock_per_sm=r["value"] / sms / ghz)
        rows += got
    return rows


def run_once(part: str) -> None:
    """The profiled process: each launch of ``profiled(part)`` once, then checked."""
    for source, nbytes, R, mode in profiled(part):
        launch, _, check = _launchers(_source(nbytes), R, (mode,), LIGHT, lambda m: row_name(part, source, R, m))[mode]
        launch()
        check()


def measure_counters(part: str) -> list:
    """One row per ``profiled(part)`` launch under ncu (``part + " counters"``, ``value`` = ms): the SM
    clock, bytes per cycle per SM, L2 / DRAM / intake-port busy %, the bytes the SMs took in
    (``intake_bytes``) and landed (``smem_bytes``), DRAM bytes read, and the request coalescer's
    split (``counters.lrc_bytes``); ratio against the first mode of the same source and R."""
    import pathlib
    import sys
    import cupy as cp
    from ..core import ncu
    from ..cute_dsl import counters
    from ..tma import feed
    launches = profiled(part)
    kernels = ncu.profile([sys.executable, "-c", f"from utils.day05 import intake_measure as m; m.run_once({part!r})"],
                          "feed_c", metrics=(*METRICS, *counters.LRC.values()),
                          cwd=pathlib.Path(__file__).resolve().parents[2], launch_count=len(launches))
    if len(kernels) != len(launches):
        raise RuntimeError(f"expected {len(launches)} feed launches, ncu saw {len(kernels)}")
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    landed = feed.delivered_bytes(LIGHT["chunk_bytes"], LIGHT["per_cta"], feed.CTAS_PER_SM * sms)
    rows = []
    for (source, nbytes, R, mode), k in zip(launches, kernels):
        s, cycles = k["gpu__time_duration.sum"] * 1e-9, k["sm__cycles_elapsed.avg"]
        rows.append(dict(name=row_name(part, source, R, mode), metric="ms", value=s * 1e3, part=f"{part} counters",
                         shape=[nbytes], dtype="float16", source=source, mode=mode, R=R,
                         sm_clock_ghz=cycles / s / 1e9, bytes_per_clock_per_sm=landed / cycles / sms,
                         l2_busy_pct=k[L2_PCT], dram_busy_pct=k[DRAM_PCT], intake_busy_pct=k[PORT_PCT],
                         intake_bytes=k["l1tex__m_xbar2l1tex_read_bytes.sum"], smem_bytes=landed,
                         dram_read_bytes=k["dram__bytes_read.sum"], **counters.lrc_bytes(k)))
    for r in rows:
        base = next(q for q in rows if (q["source"], q["R"]) == (r["source"], r["R"]))   # the first mode
        r.update(reference=base["name"], reference_value=base["value"], ratio=base["value"] / r["value"])
    return rows


def measure_all() -> list:
    """Both parts, timed and under ncu."""
    return [r for part in ("intake", "out of step") for r in measure(part) + measure_counters(part)]


def part_rows(rows: list, part: str, label: str) -> tuple[list, str]:
    """The rows of ``part`` (timed and counters) in ``rows``, and ``label``; if ``rows`` has none (a
    recording made before the part was added), those of the most recent recording that has them,
    and that recording's label. Raises LookupError if no recording has them."""
    from ..core import results
    parts = (part, f"{part} counters")
    got, label = results.rows_or_latest(STEM, rows, label, lambda rs: any(r.get("part") == part for r in rs),
                                        f"the {part!r} rows", part)
    return [r for r in got if r.get("part") in parts], label


def plot(oos_rows: list, ctr_rows: list, label: str = ""):
    """Left: out of step, TB/s per mode, per source and cluster size. Right: the R = 2 launches
    under ncu, the bytes the request coalescer read from L2 (and from DRAM), merged by hardware and
    served by multicast. Draws recorded or fresh rows."""
    import matplotlib.pyplot as plt
    import numpy as np
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 4.2))
    groups = [(s, R) for s, _, R, _ in cases("out of step")]
    x, w = np.arange(len(groups)), 0.8 / len(OOS_MODES)
    colors = dict(zip(OOS_MODES, ("tab:red", "tab:blue", "tab:orange")))
    for i, mode in enumerate(OOS_MODES):
        vals = [next((r["value"] for r in oos_rows if (r["source"], r["R"], r["mode"]) == (*g, mode)), np.nan)
                for g in groups]
        ax1.bar(x + (i - (len(OOS_MODES) - 1) / 2) * w, np.array(vals) / 1e3, w, label=mode, color=colors[mode])
    ax1.set_xticks(x, [f"{s.split(' (')[0]}\nR = {R}" for s, R in groups], fontsize=8)
    ax1.set_ylabel("TB/s delivered to shared memory")
    ax1.set_title(f"out of step: the same bytes, asked for at different times  {label}", fontsize=9)
    ax1.legend(fontsize=8)
    bars = [r for r in ctr_rows if r.get("part") == "out of step counters"]
    y = np.arange(len(bars))
    left = np.zeros(len(bars))
    for key, color, what in (("read_from_l2_bytes", "tab:gray", "read from L2"),
                             ("merged_by_hardware_bytes", "tab:blue", "merged by hardware"),
                             ("served_by_multicast_bytes", "tab:orange", "served by multicast")):
        v = np.array([r[key] for r in bars]) / 1e9
        ax2.barh(y, v, left=left, color=color, label=what)
        left += v
    ax2.scatter([r["dram_read_bytes"] / 1e9 for r in bars], y, color="k", marker="|", s=200, zorder=3,
                label="read from DRAM")
    ax2.set_yticks(y, [f"{r['source'].split(' (')[0]}, {r['mode']}" for r in bars], fontsize=7)
    ax2.invert_yaxis()
    ax2.set_xlim(0, 1.45 * max(left.max(initial=0), 1e-9))
    ax2.set_xlabel("GB delivered to the SMs (ncu, R = 2)")
    ax2.set_title("how the L2 request coalescer served them", fontsize=9)
    ax2.legend(fontsize=7, loc="center right")
    fig.tight_layout()
    return fig
