"""The quiz of day 5, notebook 02: descriptor rules, loads at the edges, stores and the proxy
fence, and one prediction (answers live here, not in the exercise notebooks).

Every wrong option says why it is wrong. q8 reads real sm_90a PTX of the course's TMA store kernel
(``utils/tma/tma_kernels.cu``, NVRTC), q7 and q10 find bugs (a wrong expect_tx byte count, a
missing proxy fence), q11 predicts a ratio recorded in ``results/<device>/02_descriptors_cupy.json``.
"""
from ..core.quiz import Measured, Predict
from ..core.quiz import Question as Q
from ..core.quiz import Quiz

# Real PTX of tma_store_box (utils.tma.runtime.ptx(), NVRTC for sm_90a).
STORE_PTX = """
    fence.proxy.async.shared::cta;
    bar.sync        0;
    cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%rd14, {%r11, %r12}], [%r63];
    cp.async.bulk.commit_group;
    cp.async.bulk.wait_group.read 0;"""
STORE_BUG = """
    tile[i] = f(i);                       // every thread writes its part of the tile
    __syncthreads();
    if (threadIdx.x == 0) {               // one thread stores the tile with TMA
      asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];" ...);
      asm volatile("cp.async.bulk.commit_group;");
      asm volatile("cp.async.bulk.wait_group.read 0;");
    }"""

TMA_DESCRIPTORS = Quiz("TMA descriptors, loads and stores quiz", [
    Q("q1", "A row-major contiguous fp16 tensor has shape 1000 x 140. Can a TMA descriptor "
      "describe it as a 2-D tensor?",
      {"a": "yes", "b": "no: its row stride is 280 bytes, not a multiple of 16",
       "c": "no: 140 is not a power of two", "d": "no: 1000 is more than 256"},
      "b", "Global strides must be multiples of 16 bytes; pad the rows to 144 elements (288 B).",
      {"c": "Powers of two are a Triton block-shape rule, not a TMA rule.",
       "d": "The 256 limit is on the box (the tile), not on the tensor.",
       "a": "Check the byte stride: 140 x 2 B."}),
    Q("q2", "What is the limit on each box (tile) dimension of a tiled TMA descriptor?",
      {"a": "1 to 256 elements", "b": "a power of two", "c": "it must divide the tensor dimension",
       "d": "at most 128 bytes"},
      "a", "Each box dimension holds 1..256 elements; boxes may overhang the tensor's edge.",
      {"b": "Not for TMA; Triton requires power-of-two block shapes.",
       "c": "Boxes may overhang: out-of-bounds elements are filled on loads and skipped on stores.",
       "d": "128 bytes is the inner-box limit under SWIZZLE_128B only."}),
    Q("q3", "With SWIZZLE_128B, what is the largest inner box dimension for fp16 data?",
      {"a": "32 elements", "b": "64 elements", "c": "128 elements", "d": "256 elements"},
      "b", "The inner box must fit the swizzle span: 128 B / 2 B = 64 elements.",
      {"a": "32 fp16 = 64 bytes is legal but not the largest: the 128-byte span holds 64.",
       "c": "That is 256 bytes: twice the 128-byte span.", "d": "256 is the box limit without swizzle."}),
    Q("q4", "How must the tensor's global base address be aligned for TMA (no interleave)?",
      {"a": "4 bytes", "b": "16 bytes", "c": "128 bytes", "d": "1024 bytes"},
      "b", "16-byte alignment for the global address (32 B with 32-byte interleave).",
      {"d": "1024 B is the shared-memory alignment the 128B swizzle pattern assumes.",
       "c": "128 B is a common shared-memory alignment for unswizzled boxes.",
       "a": "4 bytes suffices for ordinary fp32 loads; TMA's addresses and strides follow 16-byte rules."}),
    Q("q5", "Where may a CUtensorMap live so that cp.async.bulk.tensor can use it?",
      {"a": "a kernel parameter declared const __grid_constant__", "b": "global memory",
       "c": "constant memory", "d": "registers"},
      frozenset("abc"), "The descriptor is a 128-byte object in .param, .const or .global space.",
      {"d": "It is addressed by a generic address of the 128-byte object, not held in registers."}),
    Q("q6", "A TMA load's box overhangs the tensor's last row. What happens?",
      {"a": "a memory fault", "b": "out-of-bounds elements arrive as zeros (or a special NaN "
       "if requested), and the barrier still counts the full box bytes",
       "c": "the box is shrunk and fewer bytes are counted", "d": "the load wraps around"},
      "b", "That is why partial tiles need no masks, and expect_tx is always the full box size.",
      {"c": "The transaction count is the full box: a smaller expect_tx would complete early.",
       "a": "Boxes may overhang the tensor on purpose: no fault, the edge is handled by TMA.",
       "d": "Nothing wraps: out-of-bounds elements are filled, never read from the other side."}),
    Q("q7", "Find the bug: one thread loads a box of 64 rows x 32 fp16 and declares "
      "mbarrier.arrive.expect_tx with 64 * 64 * 2 = 8192 bytes. What happens?",
      {"a": "the load completes normally; the extra bytes are ignored",
       "b": "the box delivers 4096 bytes, the transaction count stays at 4096, the phase never "
            "completes and every waiter hangs (the course's bounded waits report a timeout instead)",
       "c": "TMA loads 8192 bytes, reading beyond the box",
       "d": "cuTensorMapEncodeTiled rejects the descriptor"},
      "b", "expect_tx declares what must land before the phase completes: 8192 here, while the box "
      "is 64 x 32 x 2 = 4096 bytes. Declare exactly the box's bytes (the full box, even at an edge).",
      {"a": "Nothing ignores declared bytes: the phase waits for the transaction count to be "
            "back at zero.",
       "c": "What TMA copies is set by the descriptor's box; expect_tx only counts.",
       "d": "The descriptor knows nothing of expect_tx, a runtime operand; nothing checks it "
            "until the wait never ends."}),
    Q("q8", "Read the PTX of the course's TMA store kernel (tma_store_box, sm_90a; the fenced "
      "version, which Exercise 3 asked for):\n" + STORE_PTX +
      "\n\nWhat does the last instruction wait for?",
      {"a": "for the store to finish READING the shared-memory tile, so the tile may be "
            "overwritten or the CTA may exit; its writes to global memory may still be in flight",
       "b": "for the tile to be visible in global memory",
       "c": "for an mbarrier phase",
       "d": "for every thread of the block"},
      "a", "A TMA store must finish reading its shared-memory source before that buffer is "
      "reused or the CTA exits; .read waits for exactly that, and nothing more.",
      {"b": "That is cp.async.bulk.wait_group without .read, which also waits for the writes; "
            ".read waits only for the source to be read.",
       "c": "Stores complete through bulk async-groups (commit_group, wait_group), not an mbarrier.",
       "d": "That is bar.sync 0, above the store: it orders every thread's writes and fences "
            "before the one thread issues the store."}),
    Q("q9", "Threads wrote a tile to shared memory with ordinary stores. Why must they execute "
      "fence.proxy.async.shared::cta before a TMA store reads it?",
      {"a": "it flushes L2", "b": "the copy engine reads through the async proxy; the fence "
       "makes the generic-proxy writes visible to it", "c": "it waits for global stores to "
       "finish", "d": "it is not needed: __syncthreads() is enough"},
      "b", "A barrier orders threads; the proxy fence orders the two memory proxies.",
      {"d": "__syncthreads orders generic-proxy accesses among threads, not the TMA engine's reads.",
       "a": "The fence orders shared-memory accesses between two proxies; it touches no cache.",
       "c": "It is about shared memory written by threads (.shared::cta in its name), not global stores."}),
    Q("q10", "Find the bug in this TMA store:\n" + STORE_BUG,
      {"a": "a fence.proxy.async.shared::cta is missing between the threads' writes and the store: "
            "the store reads shared memory through the async proxy and may otherwise see stale bytes",
       "b": "wait_group.read 0 must be wait_group 0",
       "c": "the store needs an mbarrier.arrive.expect_tx first",
       "d": "__syncthreads() must come after the store"},
      "a", "Threads write through the generic proxy, TMA reads through the async proxy; the "
      "barrier orders threads, the proxy fence orders the two proxies. The course's store kernel, "
      "like CUTLASS, runs the fence in every writing thread, then bar.sync, then the store (q8). "
      "A fence in the storing thread after the barrier is also seen in practice; the course has "
      "not tested whether that placement is always safe, so it teaches the first.",
      {"b": "To reuse the tile or exit, the store only has to have read it: .read is enough.",
       "c": "expect_tx declares bytes landing in shared memory for a load; a store is tracked "
            "by bulk groups.",
       "d": "Then thread 0 could store the tile before the other threads have written their parts."}),
    Predict("q11", "Predict, then compare with section 5's table: one thread per CTA keeps four "
            "16 KiB tiles in flight in a ring of stages, storing each as soon as it lands (the pipelined "
            "TMA copy), against one tile per CTA and no loop. What is the pipelined copy's bandwidth "
            "over the one-tile copy's, on an 8192 x 8192 fp16 copy?",
            Measured("02_descriptors_cupy", "TMA pipelined (4 stages)", over="TMA, one tile per CTA"),
            {"a": (0, 0.9), "b": (0.9, 1.02), "c": (1.02, 1.3), "d": (1.3, float("inf"))},
            "Both copies are bounded by the same HBM. Our reading (a hypothesis): the one-tile copy "
            "already has many CTAs per SM in flight, so a ring adds bytes in flight nobody lacked, "
            "and its own loop (waits, stores, phase bookkeeping by one thread) is not free. The lab "
            "report 05b §1 measures where that loop's cost comes from.",
            {"a": "Below 0.9x would mean the ring starves HBM; one thread per CTA issuing 16 KiB copies "
                  "keeps plenty in flight.",
             "b": "0.9x to 1.02x would mean the ring neither helps nor costs much: the same HBM ceiling.",
             "c": "1.02x to 1.3x would mean the ring supplies bytes in flight the one-tile copy lacked; "
                  "with many CTAs per SM in flight it lacked none.",
             "d": "Above 1.3x would put the pipelined copy far above memcpy, beyond HBM's bandwidth."}),
])
