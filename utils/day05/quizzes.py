"""The quiz of day 5, notebook 01 (answers live here, not in the exercise notebooks).

Every wrong option says why it is wrong. q17, q18 read real sm_90a PTX of the course's TMA
kernels (``utils/tma/tma_kernels.cu``, NVRTC), q19 predicts a ratio recorded in
``results/01_tma_concepts.json``, q20 to q22 find bugs (a missing proxy fence, a wrong
expect_tx byte count, a wrong phase parity).
"""
from ..core.quiz import Measured, Predict
from ..core.quiz import Question as Q
from ..core.quiz import Quiz

# Real PTX of tma_load_dump and tma_store_box (utils.tma.runtime.ptx(), NVRTC for sm_90a).
LOAD_PTX = """
    mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r25], %r19;
    cvta.param.u64  %rd10, %rd7;
    cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r41], [%rd10, {%r14, %r15}], [%r25];"""
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
PARITY_BUG = """
    for (int k = 0; k < k_tiles; ++k) {   // one stage, one mbarrier `bar` (initialised with count 1)
      if (threadIdx.x == 0) { expect_tx(bar, TILE_BYTES); tma_load(tile, &desc, k, bar); }
      wait(bar, /*parity=*/0);
      use(tile);
      __syncthreads();                    // everyone is done with `tile` before it is refilled
    }"""

TMA_CONCEPTS = Quiz("TMA concepts quiz", [
    Q("q1", "What does TMA take over from the SM's threads when a tile moves between global and "
      "shared memory?",
      {"a": "floating-point math", "b": "address generation, bounds checks and issuing the "
       "individual memory requests of the tile", "c": "register allocation",
       "d": "thread synchronisation"},
      "b", "One thread issues one instruction; the copy engine generates the addresses, handles "
      "the edges and moves the bytes.",
      {"a": "Math stays on the SM (tensor cores, FMA units).",
       "c": "The compiler allocates registers; TMA saves some (no thread holds the tile in flight) "
            "but allocates none.",
       "d": "Threads still synchronise, through an mbarrier the TMA completes."}),
    Q("q2", "Which GPU generations can execute cp.async.bulk.tensor (TMA)?",
      {"a": "Volta (sm_70)", "b": "Ampere (sm_80)", "c": "Hopper (sm_90)", "d": "Blackwell (sm_100)"},
      frozenset("cd"), "TMA arrived with Hopper and is kept by Blackwell.",
      {"b": "Ampere has cp.async: per-thread asynchronous 4/8/16-byte copies, not a tensor copy engine.",
       "a": "Volta has neither cp.async nor TMA."}),
    Q("q3", "What does a multicast TMA load do?",
      {"a": "broadcasts a tile to every SM on the GPU",
       "b": "reads the tile once and writes it into the shared memory of each CTA of the cluster "
            "selected by a 16-bit mask",
       "c": "loads into registers of many warps", "d": "prefetches into L2 only"},
      "b", "Multicast saves L2/HBM reads when CTAs of one cluster need the same tile (e.g. the "
      "same B tile for CTAs along M).",
      {"a": "Only CTAs of the same cluster (at most 8 portable, 16 on H100 non-portable).",
       "c": "TMA moves tiles between global and shared memory only; threads load registers from "
            "shared memory themselves.",
       "d": "A multicast load writes shared memory; prefetching into L2 is another instruction "
            "(cp.async.bulk.prefetch.tensor)."}),
    Q("q4", "A row-major contiguous fp16 tensor has shape 1000 x 140. Can a TMA descriptor "
      "describe it as a 2-D tensor?",
      {"a": "yes", "b": "no: its row stride is 280 bytes, not a multiple of 16",
       "c": "no: 140 is not a power of two", "d": "no: 1000 is more than 256"},
      "b", "Global strides must be multiples of 16 bytes; pad the rows to 144 elements (288 B).",
      {"c": "Powers of two are a Triton block-shape rule, not a TMA rule.",
       "d": "The 256 limit is on the box (the tile), not on the tensor.",
       "a": "Check the byte stride: 140 x 2 B."}),
    Q("q5", "What is the limit on each box (tile) dimension of a tiled TMA descriptor?",
      {"a": "1 to 256 elements", "b": "a power of two", "c": "it must divide the tensor dimension",
       "d": "at most 128 bytes"},
      "a", "Each box dimension holds 1..256 elements; boxes may overhang the tensor's edge.",
      {"b": "Not for TMA; Triton requires power-of-two block shapes.",
       "c": "Boxes may overhang: out-of-bounds elements are filled on loads and skipped on stores.",
       "d": "128 bytes is the inner-box limit under SWIZZLE_128B only."}),
    Q("q6", "With SWIZZLE_128B, what is the largest inner box dimension for fp16 data?",
      {"a": "32 elements", "b": "64 elements", "c": "128 elements", "d": "256 elements"},
      "b", "The inner box must fit the swizzle span: 128 B / 2 B = 64 elements.",
      {"a": "32 fp16 = 64 bytes is legal but not the largest: the 128-byte span holds 64.",
       "c": "That is 256 bytes: twice the 128-byte span.", "d": "256 is the box limit without swizzle."}),
    Q("q7", "How must the tensor's global base address be aligned for TMA (no interleave)?",
      {"a": "4 bytes", "b": "16 bytes", "c": "128 bytes", "d": "1024 bytes"},
      "b", "16-byte alignment for the global address (32 B with 32-byte interleave).",
      {"d": "1024 B is the shared-memory alignment the 128B swizzle pattern assumes.",
       "c": "128 B is a common shared-memory alignment for unswizzled boxes.",
       "a": "4 bytes suffices for ordinary fp32 loads; TMA's addresses and strides follow 16-byte rules."}),
    Q("q8", "When does the current phase of an mbarrier complete?",
      {"a": "when every thread of the block has arrived",
       "b": "when the pending arrival count and the transaction byte count both reach zero",
       "c": "after a fixed number of cycles", "d": "as soon as the TMA instruction is issued"},
      "b", "TMA decrements the tx-count by the bytes it delivers (complete_tx); arrivals "
      "decrement the arrival count. Both must reach zero.",
      {"a": "Only the expected arrival count matters, and TMA bytes must also land.",
       "d": "Issue is asynchronous: data arrives later.",
       "c": "Nothing is timed: a phase completes on counts (arrivals and bytes), however long they take."}),
    Q("q9", "One thread issues a TMA load of a 64 x 64 fp16 box. How many bytes must it declare "
      "with mbarrier.arrive.expect_tx?",
      {"a": "64", "b": "4096", "c": "8192", "d": "128"},
      "c", "64 x 64 elements x 2 bytes = 8192 bytes.",
      {"b": "That is the element count; expect_tx counts bytes.",
       "d": "128 is the size of the descriptor, not of the data.",
       "a": "64 is one side of the box, counted in elements; expect_tx counts bytes of the whole box."}),
    Q("q10", "Threads wrote a tile to shared memory with ordinary stores. Why must they execute "
      "fence.proxy.async.shared::cta before a TMA store reads it?",
      {"a": "it flushes L2", "b": "the copy engine reads through the async proxy; the fence "
       "makes the generic-proxy writes visible to it", "c": "it waits for global stores to "
       "finish", "d": "it is not needed: __syncthreads() is enough"},
      "b", "A barrier orders threads; the proxy fence orders the two memory proxies.",
      {"d": "__syncthreads orders generic-proxy accesses among threads, not the TMA engine's reads.",
       "a": "The fence orders shared-memory accesses between two proxies; it touches no cache.",
       "c": "It is about shared memory written by threads (.shared::cta in its name), not global stores."}),
    Q("q11", "A TMA load's box overhangs the tensor's last row. What happens?",
      {"a": "a memory fault", "b": "out-of-bounds elements arrive as zeros (or a special NaN "
       "if requested), and the barrier still counts the full box bytes",
       "c": "the box is shrunk and fewer bytes are counted", "d": "the load wraps around"},
      "b", "That is why partial tiles need no masks, and expect_tx is always the full box size.",
      {"c": "The transaction count is the full box: a smaller expect_tx would complete early.",
       "a": "Boxes may overhang the tensor on purpose: no fault, the edge is handled by TMA.",
       "d": "Nothing wraps: out-of-bounds elements are filled, never read from the other side."}),
    Q("q12", "Compared with a well-written copy kernel, what does TMA do to peak copy bandwidth?",
      {"a": "raises it well above memcpy", "b": "about the same peak; it saves instructions, "
       "registers and threads and makes loads asynchronous",
       "c": "it is always slower", "d": "doubles it with multicast"},
      "b", "HBM bandwidth is the ceiling for everyone; this notebook measures it.",
      {"a": "Nothing moves bytes faster than HBM allows; memcpy already gets close.",
       "d": "Multicast saves reads of shared tiles; it does not raise HBM bandwidth.",
       "c": "Good TMA copies come close to memcpy (this notebook and the next measure it): TMA is "
            "not a bandwidth penalty, nor a gain."}),
    Q("q13", "An mbarrier has completed phases 0, 1 and 2. With try_wait.parity, which parity "
      "does a thread wait on for the next phase?",
      {"a": "0", "b": "1"},
      "b", "The next phase is phase 3; its parity is 3 mod 2 = 1.",
      {"a": "Parity 0 belongs to phases 0, 2, 4...: phase 2 is already complete, so it returns at once."}),
    Q("q14", "Where may a CUtensorMap live so that cp.async.bulk.tensor can use it?",
      {"a": "a kernel parameter declared const __grid_constant__", "b": "global memory",
       "c": "constant memory", "d": "registers"},
      frozenset("abc"), "The descriptor is a 128-byte object in .param, .const or .global space.",
      {"d": "It is addressed by a generic address of the 128-byte object, not held in registers."}),
    Q("q15", "Which PTX instruction starts a TMA tile copy?",
      {"a": "ld.global.v4.b32", "b": "cp.async.bulk.tensor", "c": "cp.async.cg.shared.global",
       "d": "wgmma.mma_async"},
      "b", "Look for it in the PTX: a plain tl.load kernel has none.",
      {"c": "That is Ampere's per-thread async copy.", "a": "That is an ordinary 16-byte load.",
       "d": "That is Hopper's asynchronous tensor-core multiply; it reads shared memory but moves "
            "no tile from global memory."}),
    Q("q16", "'Tiles must be powers of two.' Where is that true?",
      {"a": "for TMA boxes", "b": "for Triton block shapes (tl.arange, descriptor block_shape)",
       "c": "for cuBLAS", "d": "everywhere on GPUs"},
      "b", "TMA boxes only need 1..256 elements per dimension and inner bytes a multiple of 16.",
      {"a": "A 24 x 40 box is a legal TMA box.",
       "c": "cuBLAS takes matrices of any size; how it tiles them inside is its own choice.",
       "d": "Neither TMA boxes nor shared-memory tiles need powers of two; Triton's block shapes do."}),
    Q("q17", "Read the PTX of the course's TMA load kernel (tma_load_dump, sm_90a):\n" + LOAD_PTX +
      "\n\nWhat are the copy's three bracketed operands?",
      {"a": "[%r41]: the shared-memory destination; [%rd10, {%r14, %r15}]: the tensor map (a "
            "kernel parameter, hence cvta.param) and the box's two start coordinates, in elements, "
            "innermost first; [%r25]: the mbarrier the landing bytes complete",
       "b": "%r14 and %r15 are byte offsets into the global tensor",
       "c": "[%rd10] is the global address of the tensor's data",
       "d": "[%r25] is a second destination, for multicast"},
      "a", "The same thread first armed [%r25] with expect_tx (%r19 bytes); the copy engine then "
      "completes those bytes on it. Destination first, as in every PTX copy.",
      {"b": "They are element coordinates of the box's first element (signed 32-bit, innermost "
            "first); the descriptor turns them into addresses with its strides.",
       "c": "It is the address of the 128-byte CUtensorMap, a const __grid_constant__ kernel "
            "parameter (cvta.param makes its parameter address generic); the data's address is "
            "inside the descriptor.",
       "d": "It is the mbarrier armed by the expect_tx just above; multicast is another form "
            "(.multicast::cluster, with a 16-bit CTA mask)."}),
    Q("q18", "Read the PTX of the course's TMA store kernel (tma_store_box, sm_90a):\n" + STORE_PTX +
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
    Predict("q19", "Predict, then compare with section 4's table: on an 8192 x 8192 fp16 copy, "
            "what is the Triton TMA copy's bandwidth as a fraction of torch's device copy (memcpy)?",
            Measured("01_tma_concepts", "Triton TMA copy"),
            {"a": (0, 0.5), "b": (0.5, 0.8), "c": (0.8, 1.05), "d": (1.05, float("inf"))},
            "HBM bandwidth is the ceiling of every copy. TMA changes who generates the addresses "
            "and how many instructions the SM issues, not how fast HBM moves bytes: a good TMA "
            "copy lands near memcpy, not above it.",
            {"a": "Below 0.5x would mean the copy engine moves bytes much more slowly than "
                  "threads do; one instruction per tile hands the tile to hardware built for it.",
             "b": "0.5x to 0.8x would mean the TMA copy leaves much of HBM's bandwidth unused, "
                  "like a copy with too few bytes in flight.",
             "c": "0.8x to 1.05x would mean a copy close to memcpy, under the HBM ceiling both share.",
             "d": "Above 1.05x would mean TMA beats the device copy, that is, moves bytes faster "
                  "than a good copy already can through HBM."}),
    Q("q20", "Find the bug in this TMA store:\n" + STORE_BUG,
      {"a": "a fence.proxy.async.shared::cta is missing between the threads' writes and the store: "
            "the store reads shared memory through the async proxy and may otherwise see stale bytes",
       "b": "wait_group.read 0 must be wait_group 0",
       "c": "the store needs an mbarrier.arrive.expect_tx first",
       "d": "__syncthreads() must come after the store"},
      "a", "Threads write through the generic proxy, TMA reads through the async proxy; the "
      "barrier orders threads, the proxy fence orders the two proxies. The course's store kernel, "
      "like CUTLASS, runs the fence in every writing thread, then bar.sync, then the store (q18). "
      "A fence in the storing thread after the barrier is also seen in practice; the course has "
      "not tested whether that placement is always safe, so it teaches the first.",
      {"b": "To reuse the tile or exit, the store only has to have read it: .read is enough.",
       "c": "expect_tx declares bytes landing in shared memory for a load; a store is tracked "
            "by bulk groups.",
       "d": "Then thread 0 could store the tile before the other threads have written their parts."}),
    Q("q21", "Find the bug: one thread loads a box of 64 rows x 32 fp16 and declares "
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
    Q("q22", "Find the bug in this one-stage TMA loop:\n" + PARITY_BUG,
      {"a": "none: each wait is for the barrier's latest phase",
       "b": "from k = 1 on, the wait can pass before the tile has landed: parity 0 also names "
            "phase 0, already complete, so threads may read a tile still being loaded; "
            "wait on parity k & 1",
       "c": "a deadlock at k = 1",
       "d": "the expect_tx is wrong, not the parity"},
      "b", "Tile k completes phase k of bar, so its wait names parity k & 1 (0, 1, 0, ...). A "
      "wait that names an already completed phase returns at once: a race, not a hang.",
      {"a": "A wait names a phase by its parity, not 'the latest one': parity 0 is satisfied by "
            "the completed phase 0 while phase 1 is still in progress.",
       "c": "A deadlock needs a wait on a phase that never completes; here the wait passes too "
            "early instead.",
       "d": "expect_tx(TILE_BYTES) once per tile is right: one arrival and the tile's bytes per phase."}),
])
