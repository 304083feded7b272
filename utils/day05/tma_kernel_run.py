"""Runs of the learner's TMA kernels of day 5 · 02 (:mod:`.tma_kernel_check`): on the course's PTX
emulator, and on this machine's GPU in a subprocess (``python -m utils.day05.tma_kernel_run``: a bad
coordinate or address can lose the CUDA context, which must not take the notebook with it).

Every kernel makes ``dst = 2 * src`` for an fp32 tensor, in 16 x 32 boxes, 128 threads per CTA, and
is compiled after :func:`header` (the helpers of ``utils/tma/tma_kernels.cu`` and the box's size).
"""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import tempfile
from typing import NamedTuple

import numpy as np

from ..tma import runtime

BOX, THREADS, RING_CTAS = (16, 32), 128, 2          # box (rows, cols) of fp32: 128-byte rows
TILE_BYTES = BOX[0] * BOX[1] * 4
RING_HELPERS = r"""
__device__ __forceinline__ Coords box_at(int t, int tiles_x) {       // box t of the tensor, row by row
  Coords k = {{(t % tiles_x) * BOX_X, (t / tiles_x) * BOX_Y, 0, 0, 0}};
  return k;
}
__device__ __forceinline__ void load_box(float* dst, unsigned bar, const TensorMap* map, int t, int tiles_x) {
  mbar_expect_tx(bar, BOX_X * BOX_Y * 4);                         // Exercise 3b's load of one box
  tma_load(2, smem_addr(dst), map, box_at(t, tiles_x), bar);
}
"""
"""The ring's two extra helpers (Exercise 3c): what the learner wrote in Exercise 3b, for one box."""


class Kernel(NamedTuple):
    """One exercise's kernel: its name and ``stages`` (0: one box per CTA, the grid has one CTA per
    box; else a ring of ``stages`` shared-memory buffers in each of :data:`RING_CTAS` CTAs)."""
    name: str
    stages: int = 0

    @property
    def smem(self) -> int:
        """Dynamic shared memory: the buffers, 128 B more (barriers), the alignment slack."""
        return max(self.stages, 1) * TILE_BYTES + 128 + runtime.ALIGN_SLACK

    @property
    def signature(self) -> str:
        return (f'extern "C" __global__ void {self.name}(const __grid_constant__ TensorMap src, '
                f'const __grid_constant__ TensorMap dst,\n{" " * (28 + len(self.name))}'
                'int rows, int cols, int* status, unsigned long long timeout_ns)')

    def grid(self, shape) -> int:
        return RING_CTAS if self.stages else -(-shape[0] // BOX[0]) * -(-shape[1] // BOX[1])

    def launched(self, shape) -> str:
        """What a run launches, in words."""
        per = f"a ring of {self.stages} buffers per CTA" if self.stages else "one CTA per box"
        return (f"{self.name}<<<{self.grid(shape)}, {THREADS}, {self.smem} B>>> on a {shape[0]} x {shape[1]} fp32 "
                f"tensor (box {BOX[0]} x {BOX[1]}, {per}, dst poisoned with NaN)")

    def header(self) -> str:
        """The course's helpers (``tma_kernels.cu`` up to its first kernel), the box and the stages."""
        src = runtime.SOURCE
        extra = f"#define STAGES {self.stages}\n{RING_HELPERS}" if self.stages else ""
        return src[:src.index('extern "C" __global__')] + f"\n#define BOX_X {BOX[1]}\n#define BOX_Y {BOX[0]}\n{extra}"


def run_emulated(kernel: Kernel, source: str, shape, completion: str, seed: int):
    """(x, y, status, report) of one emulated launch of ``source`` (PTX, or CUDA after the header);
    raises the emulator's errors."""
    from ..emu import device_empty, launch, tensor_map, to_device
    x = to_device(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))
    y, st = device_empty(shape, np.float32, np.nan), device_empty(1, np.int32, 0)
    rep = launch(source, kernel.name, kernel.grid(shape), THREADS,
                 [tensor_map(x, BOX), tensor_map(y, BOX), shape[0], shape[1], st, runtime.TIMEOUT_NS],
                 shared_bytes=kernel.smem, seed=seed, completion=completion)
    return x, y, int(st[0]), rep


def _gpu_child(name: str, stages: int, src_file: str, out_dir: str, dims: list) -> None:
    """In the subprocess: compile and launch on the GPU for each (rows, cols); save x, y, status."""
    import cupy as cp
    from ..tma.descriptor import make_spec
    from ..tma.encode import encode
    kernel = Kernel(name, stages)
    code = kernel.header() + pathlib.Path(src_file).read_text()
    k = cp.RawModule(code=code, options=("-std=c++17",)).get_function(name)
    for i in range(0, len(dims), 2):
        shape = (dims[i], dims[i + 1])
        x = cp.random.standard_normal(shape, dtype=cp.float32)
        y, st = cp.full(shape, cp.nan, cp.float32), cp.zeros(1, cp.int32)
        k((kernel.grid(shape),), (THREADS,), (encode(make_spec(x, BOX)), encode(make_spec(y, BOX)), np.int32(shape[0]),
                                              np.int32(shape[1]), st, np.uint64(runtime.TIMEOUT_NS)),
          shared_mem=kernel.smem)
        cp.cuda.Device().synchronize()
        np.savez(os.path.join(out_dir, f"run{i // 2}.npz"), x=x.get(), y=y.get(), status=st.get())


def run_gpu(kernel: Kernel, source: str, shape_list: list, timeout_s: float = 120) -> list:
    """[(x, y, status)] of real launches on this machine's GPU, made in a subprocess; a CUDA error or
    a hang becomes ``("error", text)`` as the last item."""
    root = pathlib.Path(__file__).resolve().parents[2]
    with tempfile.TemporaryDirectory(prefix=f"{kernel.name}_") as d:
        src = pathlib.Path(d, "kernel.cu")
        src.write_text(source)
        cmd = [sys.executable, "-m", "utils.day05.tma_kernel_run", kernel.name, str(kernel.stages), str(src), d]
        cmd += [str(v) for s in shape_list for v in s]
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]))
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, cwd=root, env=env)
            tail = (p.stdout + p.stderr).strip().splitlines()[-3:]
        except subprocess.TimeoutExpired:
            p, tail = None, [f"killed after {timeout_s:.0f} s: the kernel never finished (an unbounded wait?)"]
        out = []
        for i in range(len(shape_list)):
            f = pathlib.Path(d, f"run{i}.npz")
            if f.exists():
                z = np.load(f)
                out.append((z["x"], z["y"], int(z["status"][0])))
        if p is None or p.returncode or len(out) < len(shape_list):
            out.append(("error", " ".join(tail) or f"exit status {p.returncode}"))
    return out


if __name__ == "__main__":          # the GPU run's subprocess: NAME STAGES SRC_FILE OUT_DIR rows cols ...
    _gpu_child(sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], [int(v) for v in sys.argv[5:]])
