"""The end-of-day quiz of day 2 (pipelining). Answers live here, not in the notebooks.

Every wrong option says why it is wrong. q11 reads real sm_90a PTX of ``pc_ring`` (NVRTC,
``utils.cuda_cpp.day02``), q12 predicts a ratio recorded in ``results/01_latency_littles_law.json``,
q13 and q14 find bugs in the ring (a wrong phase, a wrong expect_tx byte count).
"""
from ..core.quiz import Measured, Predict
from ..core.quiz import Question as Q
from ..core.quiz import Quiz

# Real PTX of pc_ring's bulk branch (utils.cuda_cpp.day02, NVRTC for sm_90a).
BULK_PTX = """
    min.s64         %rd66, %rd65, 128;
    cvt.u32.u64     %r464, %rd66;
    shl.b32         %r462, %r464, 4;
    mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r463], %r462;
    cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r461], [%rd64], %r462, [%r463];"""

DAY02 = Quiz("Day 2 quiz: pipelining", [
    Q("q1", "Why does a pointer chase measure latency and not bandwidth?",
      {"a": "it reads very little data", "b": "each load's address is the previous load's value, so "
       "exactly one load is in flight", "c": "it bypasses the caches", "d": "it runs on one SM"},
      "b", "A dependent chain allows no overlap: the time per step is one full round trip.",
      {"a": "A streaming kernel reading the same few bytes would still overlap its loads.",
       "c": "It goes through the caches on purpose: the working set decides which level answers.",
       "d": "One SM can keep many loads in flight; it is the dependence between loads that "
            "allows only one."}),
    Q("q2", "Little's law: HBM latency 600 ns, target 4000 GB/s. How many bytes must be in flight "
      "across the GPU?",
      {"a": "about 6.7 KB", "b": "about 2.4 MB", "c": "about 2.4 GB", "d": "4000 bytes"},
      "b", "600e-9 s x 4000e9 B/s = 2.4e6 B, about 18 KB per SM on 132 SMs.",
      {"a": "6.7 is 4000 / 600: Little's law multiplies latency by bandwidth, it does not divide.",
       "c": "ns x GB/s = bytes: the 1e-9 and 1e9 cancel.",
       "d": "That leaves out the latency: bytes in flight = latency x bandwidth."}),
    Q("q3", "One warp, each thread with one 16-byte load in flight, holds 512 B. Roughly what "
      "fraction of one SM's share of that 2.4 MB is it?",
      {"a": "all of it", "b": "about half", "c": "a few percent", "d": "more than needed"},
      "c", "512 B of about 18 KB: one warp alone reaches a few percent of peak bandwidth.",
      {"a": "Compare 512 B with 2.4 MB / 132 SMs.",
       "b": "Half of an SM's ~18 KB is 9 KB, eighteen times one warp's 512 B.",
       "d": "512 B is far below the ~18 KB an SM must keep in flight."}),
    Q("q4", "Which of these put more bytes in flight per SM? (pick all that apply)",
      {"a": "more resident warps (occupancy)", "b": "more independent loads per thread (unrolling)",
       "c": "more pipeline stages in shared memory", "d": "a higher clock rate"},
      frozenset("abc"), "Warps, independent loads and stages all add outstanding requests; the "
      "clock does not change how many are outstanding.",
      {"d": "A faster clock issues sooner but does not keep more requests outstanding."}),
    Q("q5", "A consumer uses one 8 KiB tile every 100 ns, and a load takes 700 ns. How many stages "
      "does the ring need so the consumer never waits?",
      {"a": "2", "b": "7", "c": "8", "d": "70"},
      "c", "7 tiles in flight (700 / 100) plus the one being used.",
      {"b": "Those are the tiles in flight; add the stage being consumed.",
       "a": "Double buffering hides a load only as long as one tile's compute.",
       "d": "Tiles in flight = load time / time per tile = 700 / 100 = 7, not 70."}),
    Q("q6", "In a cp.async pipeline with S stages, what does `cp.async.wait_group S-1` after "
      "committing the newest group guarantee?",
      {"a": "all copies are done", "b": "at most S-1 groups are still pending: the oldest (tile k) "
       "has landed", "c": "S-1 copies are done", "d": "the next tile has been issued"},
      "b", "It waits until no more than S-1 of the most recent groups are pending.",
      {"a": "That is wait_group 0 (or wait_all): no overlap at all.",
       "c": "The operand counts groups allowed to stay pending, not groups done.",
       "d": "wait_group only waits; the cp.async instructions before commit_group issue the copies."}),
    Q("q7", "Why does the cp.async kernel need `__syncthreads()` both after the wait and after "
      "using the tile?",
      {"a": "cp.async requires it", "b": "wait_group only covers the calling thread's copies, and a "
       "stage must not be refilled while another thread still reads it", "c": "to flush L1",
       "d": "it does not need them"},
      "b", "The first makes every thread's copies visible to all; the second protects the stage "
      "from being overwritten too early (the hazard an mbarrier handles per stage).",
      {"d": "Each thread reads a neighbour's data: without the barriers it may read a stale stage.",
       "a": "cp.async itself needs no barrier; the barriers protect data shared between threads.",
       "c": "__syncthreads orders threads; it flushes no cache."}),
    Q("q8", "An mbarrier was initialised with count 64 and 32 threads have arrived in phase 0. "
      "What does test_wait.parity(1) return?",
      {"a": "true", "b": "false", "c": "it blocks", "d": "undefined"},
      "a", "Parity 1 names the phase before phase 0, which counts as completed; parity 0 is still "
      "in progress (false).",
      {"b": "That is the answer for parity 0, the phase in progress.",
       "c": "test_wait never blocks: it answers at once (try_wait is the form that may suspend "
            "the thread for a while).",
       "d": "Asking about the phase before the current one is defined: it counts as completed."}),
    Q("q9", "A producer waits on the 'empty' barrier of slot k % S with parity (k / S) & 1. What "
      "happens on the first pass over the ring?",
      {"a": "it works", "b": "it waits forever: phase 0 of 'empty' completes only after the consumer "
       "frees the slot, and the consumer waits for data", "c": "it overwrites data",
       "d": "the compiler rejects it"},
      "b", "The first pass must wait on parity 1 (the phase 'before' the first one, complete): "
      "((k / S) & 1) ^ 1. With a bounded wait the kernel reports it instead of hanging.",
      {"c": "Overwriting comes from waits that pass too early, e.g. a constant parity 1.",
       "a": "On the first pass nobody has arrived on 'empty': parity 0 names its phase in "
            "progress, which only the consumer can complete.",
       "d": "The parity is a runtime value; the compiler cannot know which phase you meant."}),
    Q("q10", "Moving from cp.async to TMA, what changes in the producer's handshake with the 'full' "
      "barrier?",
      {"a": "nothing", "b": "one thread declares the bytes with arrive.expect_tx and the copy "
       "engine completes them; the barrier counts 1 arrival instead of 32",
       "c": "the consumer no longer waits", "d": "the barrier moves to global memory"},
      "b", "The phase completes when the arrival count and the transaction bytes both reach zero.",
      {"c": "The consumer waits on the same parity as before.",
       "a": "Who arrives changes: one thread's expect_tx arrival, and bytes completed by the copy engine.",
       "d": "mbarriers live in shared memory, for cp.async and TMA alike."}),
    Q("q11", "Read the PTX. pc_ring's bulk branch compiled for sm_90a (one producer thread, "
      "%rd65 = float4 values left in the array):\n" + BULK_PTX + "\n\nWhat does it do?",
      {"a": "one thread arrives once on the barrier at [%r463], declaring %r462 = min(128, left) x "
            "16 bytes, then starts one copy of %r462 bytes from global [%rd64] to shared [%r461] "
            "whose bytes, as they land, complete the barrier's transaction count",
       "b": "each of the 32 producer lanes copies its own 16 bytes and arrives once",
       "c": "the arrive.expect_tx waits until %r462 bytes have landed",
       "d": "it copies %r462 bytes from shared memory [%r461] to global memory [%rd64]"},
      "a", "The phase of full[s] completes when its one arrival and the %r462 transaction bytes "
      "are both done. min(..., 128) is the partial last tile: a bulk copy moves exactly the bytes "
      "it is given, so the declared count follows it.",
      {"b": "That is the cp.async path (cp.async.cg per lane, then cp.async.mbarrier.arrive.noinc); "
            "here one thread issues one copy for the whole tile, and full[s] expects one arrival.",
       "c": "arrive.expect_tx does not wait: it arrives and raises the transaction count. The "
            "consumer waits, with test_wait on the barrier's parity.",
       "d": "The direction is in the name, destination first: .shared::cluster.global writes "
            "shared memory from global. A copy to global would complete a bulk group, not an mbarrier."}),
    Predict("q12", "Predict with Little's law, then compare with notebook 01's measured curve. A "
            "read stream keeps one 16-byte load in flight per thread (u = 1), 128 threads per "
            "block. Going from 1 block per SM (2 KiB in flight per SM) to 16 blocks per SM "
            "(32 KiB, 16 times more), how many times higher is the bandwidth?",
            Measured("01_latency_littles_law", "read u=1 blocks/SM=16", over="read u=1 blocks/SM=1"),
            {"a": (0, 1.5), "b": (1.5, 4), "c": (4, 10), "d": (10, float("inf"))},
            "Bandwidth = bytes in flight / latency, until the memory's ceiling. 2 KiB per SM is far "
            "below the ~18 KB per SM that Little's law asks for (q2), so one block per SM gets a "
            "small fraction of memcpy; 16 times more would overshoot the ceiling, so the gain stops "
            "where memcpy's bandwidth is reached, well short of 16x.",
            {"a": "Below 1.5x would mean bytes in flight hardly matter, i.e. that 2 KiB per SM "
                  "already saturates HBM; Little's law asks for several times more.",
             "b": "1.5x to 4x would mean one block per SM already reaches a quarter or more of "
                  "the ceiling with 2 KiB in flight per SM.",
             "c": "4x to 10x would mean the 16-fold increase stops at the bandwidth ceiling, "
                  "several times above what 2 KiB per SM reaches.",
             "d": "10x or more would mean bandwidth growing almost in proportion to bytes in "
                  "flight all the way to 32 KiB per SM, which holds only far below the ceiling."}),
    Q("q13", "Find the bug: a learner's consumer waits on full[s] with the producer's expression, "
      "parity ((k / stages) & 1) ^ 1. What happens?",
      {"a": "it works: the parity only matters after the first pass",
       "b": "its first waits pass at once (parity 1 names the phase before phase 0, complete), so "
            "it can read a stage before the data has landed: a race with wrong values, not a hang",
       "c": "a deadlock: the consumer waits forever",
       "d": "the compiler rejects the wait"},
      "b", "The consumer must wait for phase k / stages of full[s], parity (k / stages) & 1: on "
      "the first pass parity 0, complete only once the copies land. The producer's ^ 1 is right "
      "for empty[s], whose first pass must not wait. A wait that passes too early does not hang, "
      "so a bounded wait does not catch it: the NaN-filled output and check_array do.",
      {"a": "The first pass is exactly where it goes wrong: parity 1 counts as complete before "
            "any arrival, so nothing waits for the data.",
       "c": "A deadlock comes from waiting on a phase that never completes (the producer's bug of "
            "section 3); this wait passes too early instead.",
       "d": "Parity is a runtime operand of mbarrier.test_wait.parity; any 0/1 value compiles."}),
    Q("q14", "Find the bug: in pc_ring's bulk branch a learner declares the whole tile, "
      "expect_tx(full[s], TILE_VEC * 16) = 2048 bytes, but keeps the copy size "
      "min(TILE_VEC, n_vec - base) * 16. The array is not a whole number of tiles. What happens?",
      {"a": "every tile works: the barrier counts the declared bytes, not the copied ones",
       "b": "the full tiles work; on the last, partial tile fewer bytes land than were declared, "
            "its phase never completes, and the consumer's bounded wait times out (a Python error)",
       "c": "the copy reads past the end of the array to make up 2048 bytes",
       "d": "it works, because an overhanging copy still counts the full tile's bytes"},
      "b", "A phase completes when the pending arrivals and the transaction count both reach "
      "zero. The copy completes exactly the bytes it moves, so on the partial tile the difference "
      "stays pending forever. Declare exactly what the copy moves, as pc_ring does.",
      {"a": "The declared bytes are a debt: the phase waits until landed bytes pay it back to "
            "zero, and only copied bytes do.",
       "c": "cp.async.bulk copies exactly its size operand; the declared count changes nothing "
            "about what is copied.",
       "d": "That is true of tensor copies (cp.async.bulk.tensor), whose box always counts in "
            "full, out-of-bounds fill included; a plain cp.async.bulk moves and completes "
            "exactly the bytes it is given."}),
])
