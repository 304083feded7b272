"""The quiz of day 5, notebook 01 (answers live here, not in the exercise notebooks).

Every wrong option says why it is wrong. q4 reads real sm_90a PTX of the course's TMA load kernel
(``utils/tma/tma_kernels.cu``, NVRTC), q8 finds a bug (a wrong phase parity), q11 predicts the
ratio that notebook 02 records (``results/<device>/02_descriptors_cupy.json``). The questions on
descriptor rules, stores and proxy fences are notebook 02's quiz (:mod:`.quiz_descriptors`).
"""
from ..core.quiz import Measured, Predict
from ..core.quiz import Question as Q
from ..core.quiz import Quiz

# Real PTX of tma_load_dump (utils.tma.runtime.ptx(), NVRTC for sm_90a).
LOAD_PTX = """
    mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r25], %r19;
    cvta.param.u64  %rd10, %rd7;
    cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r41], [%rd10, {%r14, %r15}], [%r25];"""
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
    Q("q3", "Which PTX instruction starts a TMA tile copy?",
      {"a": "ld.global.v4.b32", "b": "cp.async.bulk.tensor", "c": "cp.async.cg.shared.global",
       "d": "wgmma.mma_async"},
      "b", "Look for it in the PTX: a plain tl.load kernel has none.",
      {"c": "That is Ampere's per-thread async copy.", "a": "That is an ordinary 16-byte load.",
       "d": "That is Hopper's asynchronous tensor-core multiply; it reads shared memory but moves "
            "no tile from global memory."}),
    Q("q4", "Read the PTX of a TMA load (the course's tma_load_dump kernel, which notebook 02 "
      "runs; sm_90a):\n" + LOAD_PTX +
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
    Q("q5", "One thread issues a TMA load of a 64 x 64 fp16 box. How many bytes must it declare "
      "with mbarrier.arrive.expect_tx?",
      {"a": "64", "b": "4096", "c": "8192", "d": "128"},
      "c", "64 x 64 elements x 2 bytes = 8192 bytes.",
      {"b": "That is the element count; expect_tx counts bytes.",
       "d": "128 is the size of the descriptor, not of the data.",
       "a": "64 is one side of the box, counted in elements; expect_tx counts bytes of the whole box."}),
    Q("q6", "When does the current phase of an mbarrier complete?",
      {"a": "when every thread of the block has arrived",
       "b": "when the pending arrival count and the transaction byte count both reach zero",
       "c": "after a fixed number of cycles", "d": "as soon as the TMA instruction is issued"},
      "b", "TMA decrements the tx-count by the bytes it delivers (complete_tx); arrivals "
      "decrement the arrival count. Both must reach zero.",
      {"a": "Only the expected arrival count matters, and TMA bytes must also land.",
       "d": "Issue is asynchronous: data arrives later.",
       "c": "Nothing is timed: a phase completes on counts (arrivals and bytes), however long they take."}),
    Q("q7", "An mbarrier has completed phases 0, 1 and 2. With try_wait.parity, which parity "
      "does a thread wait on for the next phase?",
      {"a": "0", "b": "1"},
      "b", "The next phase is phase 3; its parity is 3 mod 2 = 1.",
      {"a": "Parity 0 belongs to phases 0, 2, 4...: phase 2 is already complete, so it returns at once."}),
    Q("q8", "Find the bug in this one-stage TMA loop:\n" + PARITY_BUG,
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
    Q("q9", "'Tiles must be powers of two.' Where is that true?",
      {"a": "for TMA boxes", "b": "for Triton block shapes (tl.arange, descriptor block_shape)",
       "c": "for cuBLAS", "d": "everywhere on GPUs"},
      "b", "TMA boxes only need 1..256 elements per dimension and inner bytes a multiple of 16.",
      {"a": "A 24 x 40 box is a legal TMA box.",
       "c": "cuBLAS takes matrices of any size; how it tiles them inside is its own choice.",
       "d": "Neither TMA boxes nor shared-memory tiles need powers of two; Triton's block shapes do."}),
    Q("q10", "Compared with a well-written copy kernel, what does TMA do to peak copy bandwidth?",
      {"a": "raises it well above memcpy", "b": "about the same peak; it saves instructions, "
       "registers and threads and makes loads asynchronous",
       "c": "it is always slower", "d": "doubles it with multicast"},
      "b", "HBM bandwidth is the ceiling for everyone; notebook 02 §5 measures it.",
      {"a": "Nothing moves bytes faster than HBM allows; memcpy already gets close.",
       "d": "Multicast saves reads of shared tiles; it does not raise HBM bandwidth.",
       "c": "Good TMA copies come close to memcpy (notebook 02 measures it): TMA is "
            "not a bandwidth penalty, nor a gain."}),
    Predict("q11", "Predict now; notebook 02 §5 measures it: on an 8192 x 8192 fp16 copy, what is "
            "the bandwidth of a TMA copy (one tile per CTA) as a fraction of torch's device copy (memcpy)?",
            Measured("02_descriptors_cupy", "TMA, one tile per CTA"),
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
])
