"""The SM clock as an SM counts it, while another kernel loads the GPU.

``nvidia-smi --query-gpu=clocks.sm`` reports the clock the driver set. Under the board's power
limit the SMs can run slower than that report: on an H100 (2026-11-28), torch's cuDNN attention ran
at an SM clock about 8% under the one nvidia-smi printed, while notebook 07's kernel ran at the
printed clock. A :class:`Probe` measures the clock from inside: one warp on a high-priority stream
reads ``clock64`` (the cycles of its SM) against ``%globaltimer`` (nanoseconds of wall time) for
``ms`` milliseconds, beside the kernel under test on the main stream. Cycles over nanoseconds is the
clock that SM ran at. The probe holds one warp slot of one SM of the 132, so it costs the kernel
under test little, but not nothing.

Needs a CUDA GPU and CuPy; :data:`SOURCE` compiles anywhere with NVRTC (:mod:`utils.cuda_cpp.nvrtc`).
"""
from __future__ import annotations

SOURCE = r'''
extern "C" __global__ void clock_probe(long long* out, long long ns) {
    // out[0]: SM cycles (clock64), out[1]: wall nanoseconds (%globaltimer), over at least ns of spinning
    long long t0, t1, c0, c1;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    c0 = clock64();
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
    } while (t1 - t0 < ns);
    c1 = clock64();
    if (threadIdx.x == 0) { out[0] = c1 - c0; out[1] = t1 - t0; }
}
'''
_KERNEL = []                            # compiled once per process


class Probe:
    """Up to ``slots`` clock readings, each a one-warp kernel on its own high-priority stream.

    ``launch(ms)`` queues one reading (if the previous one has finished and a slot is free);
    ``busy()`` says whether one is still running; ``mhz()`` waits for them and returns each
    reading's clock in MHz (SM cycles per microsecond of wall time)."""

    def __init__(self, slots: int = 256):
        import cupy as cp
        import torch
        if not (type(slots) is int and 1 <= slots <= 4096):
            raise ValueError(f"slots must be an int in 1..4096, got {slots!r}")
        if not _KERNEL:
            _KERNEL.append(cp.RawKernel(SOURCE, "clock_probe"))
        self._stream = torch.cuda.Stream(priority=-1)          # ahead of the main stream's CTAs
        self._out = cp.zeros((slots, 2), dtype=cp.int64)
        self.launched = 0

    def busy(self) -> bool:
        return not self._stream.query()

    def launch(self, ms: float = 50.0) -> bool:
        """Queue one reading of ``ms`` milliseconds; False (nothing queued) while one runs or when
        every slot is used."""
        import cupy as cp
        if isinstance(ms, bool) or not (isinstance(ms, (int, float)) and 1 <= ms <= 1000):
            raise ValueError(f"ms must be 1..1000 (a reading's length), got {ms!r}")
        if self.launched >= len(self._out) or self.busy():
            return False
        with cp.cuda.ExternalStream(self._stream.cuda_stream):
            _KERNEL[0]((1,), (32,), (self._out[self.launched], cp.int64(int(ms * 1e6))))
        self.launched += 1
        return True

    def mhz(self) -> list:
        self._stream.synchronize()
        return [int(c) / int(t) * 1e3 for c, t in self._out[:self.launched].get()]
