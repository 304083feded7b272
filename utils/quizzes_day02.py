"""The end-of-day quiz of day 2 (pipelining). Answers live here, not in the notebooks."""
from .quiz import Question as Q
from .quiz import Quiz

DAY02 = Quiz("Day 2, pipelining: 10 questions", [
    Q("q1", "Why does a pointer chase measure latency and not bandwidth?",
      {"a": "it reads very little data", "b": "each load's address is the previous load's value, so "
       "exactly one load is in flight", "c": "it bypasses the caches", "d": "it runs on one SM"},
      "b", "A dependent chain allows no overlap: the time per step is one full round trip.",
      {"a": "A streaming kernel reading the same few bytes would still overlap its loads.",
       "c": "It goes through the caches on purpose: the working set decides which level answers."}),
    Q("q2", "Little's law: HBM latency 600 ns, target 4000 GB/s. How many bytes must be in flight "
      "across the GPU?",
      {"a": "about 6.7 KB", "b": "about 2.4 MB", "c": "about 2.4 GB", "d": "4000 bytes"},
      "b", "600e-9 s x 4000e9 B/s = 2.4e6 B, about 18 KB per SM on 132 SMs.",
      {"c": "ns x GB/s = bytes: the 1e-9 and 1e9 cancel."}),
    Q("q3", "One warp, each thread with one 16-byte load in flight, holds 512 B. Roughly what "
      "fraction of one SM's share of that 2.4 MB is it?",
      {"a": "all of it", "b": "about half", "c": "a few percent", "d": "more than needed"},
      "c", "512 B of about 18 KB: one warp alone reaches a few percent of peak bandwidth.",
      {"a": "Compare 512 B with 2.4 MB / 132 SMs."}),
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
       "a": "Double buffering hides a load only as long as one tile's compute."}),
    Q("q6", "In a cp.async pipeline with S stages, what does `cp.async.wait_group S-1` after "
      "committing the newest group guarantee?",
      {"a": "all copies are done", "b": "at most S-1 groups are still pending: the oldest (tile k) "
       "has landed", "c": "S-1 copies are done", "d": "the next tile has been issued"},
      "b", "It waits until no more than S-1 of the most recent groups are pending.",
      {"a": "That is wait_group 0 (or wait_all): no overlap at all."}),
    Q("q7", "Why does the cp.async kernel need `__syncthreads()` both after the wait and after "
      "using the tile?",
      {"a": "cp.async requires it", "b": "wait_group only covers the calling thread's copies, and a "
       "stage must not be refilled while another thread still reads it", "c": "to flush L1",
       "d": "it does not need them"},
      "b", "The first makes every thread's copies visible to all; the second protects the stage "
      "from being overwritten too early (the hazard an mbarrier handles per stage).",
      {"d": "Each thread reads a neighbour's data: without the barriers it may read a stale stage."}),
    Q("q8", "An mbarrier was initialised with count 64 and 32 threads have arrived in phase 0. "
      "What does test_wait.parity(1) return?",
      {"a": "true", "b": "false", "c": "it blocks", "d": "undefined"},
      "a", "Parity 1 names the phase before phase 0, which counts as completed; parity 0 is still "
      "in progress (false).",
      {"b": "That is the answer for parity 0, the phase in progress."}),
    Q("q9", "A producer waits on the 'empty' barrier of slot k % S with parity (k / S) & 1. What "
      "happens on the first pass over the ring?",
      {"a": "it works", "b": "it waits forever: phase 0 of 'empty' completes only after the consumer "
       "frees the slot, and the consumer waits for data", "c": "it overwrites data",
       "d": "the compiler rejects it"},
      "b", "The first pass must wait on parity 1 (the phase 'before' the first one, complete): "
      "((k / S) & 1) ^ 1. With a bounded wait the kernel reports it instead of hanging.",
      {"c": "Overwriting comes from waits that pass too early, e.g. a constant parity 1."}),
    Q("q10", "Moving from cp.async to TMA, what changes in the producer's handshake with the 'full' "
      "barrier?",
      {"a": "nothing", "b": "one thread declares the bytes with arrive.expect_tx and the copy "
       "engine completes them; the barrier counts 1 arrival instead of 32",
       "c": "the consumer no longer waits", "d": "the barrier moves to global memory"},
      "b", "The phase completes when the arrival count and the transaction bytes both reach zero.",
      {"c": "The consumer waits on the same parity as before."}),
])
