"""The end-of-day quiz of day 1 (memory basics). Answers live here, not in the notebooks."""
from .quiz import Question as Q
from .quiz import Quiz

DAY01 = Quiz("Day 1, memory basics: 12 questions", [
    Q("q1", "In what unit does the L1/L2 cache serve a warp's global loads?",
      {"a": "4-byte words", "b": "32-byte sectors", "c": "whole 4 KiB pages", "d": "one byte at a time"},
      "b", "A 128-byte line holds four 32-byte sectors; a warp pays for every sector it touches.",
      {"a": "Words are the unit of shared-memory banks, not of global-memory traffic.",
       "c": "Pages matter to address translation, not to what one load moves."}),
    Q("q2", "A warp reads 32 consecutive fp32 values starting at a 128-byte-aligned address. "
      "How many sectors does it touch?",
      {"a": "1", "b": "4", "c": "8", "d": "32"},
      "b", "32 x 4 B = 128 B = four 32-byte sectors: every byte moved is used.",
      {"d": "That would be one sector per thread: stride 8 or more."}),
    Q("q3", "The same warp reads every second fp32 value (stride 2). What fraction of the bytes "
      "it moves does it use?",
      {"a": "100%", "b": "50%", "c": "25%", "d": "12.5%"},
      "b", "It spans 256 B = 8 sectors to use 128 B. From stride 8 on, each thread gets its own "
      "sector and only 4 of 32 bytes are used (12.5%).",
      {"d": "12.5% is stride 8 and beyond, where each 4-byte value costs a whole sector."}),
    Q("q4", "In a copy whose warps start 4 bytes past a sector boundary, each warp touches 5 "
      "sectors instead of 4. Why does the DRAM traffic hardly grow?",
      {"a": "the GPU realigns addresses before loading",
       "b": "sectors are not used by the hardware",
       "c": "the neighbouring warp needs the extra sector too, and finds it in L1/L2",
       "d": "DRAM reads whole 4 KiB pages anyway"},
      "c", "Sectors per warp is what one request costs the caches; DRAM traffic is the union "
      "over all warps, almost unchanged by a small offset.",
      {"a": "Nothing realigns: the fifth sector is really requested."}),
    Q("q5", "On a roofline, a kernel whose arithmetic intensity is below the ridge point is ...",
      {"a": "memory-bound: its ceiling is intensity x bandwidth", "b": "compute-bound",
       "c": "latency-bound by definition", "d": "always slower than the ridge point kernel"},
      "a", "Left of the ridge, the sloped memory roof is the lower one.",
      {"b": "Compute-bound kernels sit right of the ridge, under the flat roof."}),
    Q("q6", "What is the arithmetic intensity of z = x + y in fp32 (each array crosses DRAM once)?",
      {"a": "1 FLOP/byte", "b": "1/4 FLOP/byte", "c": "1/12 FLOP/byte", "d": "3 FLOP/byte"},
      "c", "One add per element, 12 bytes per element (two 4-byte reads, one 4-byte write).",
      {"b": "Count the write of z and the read of y too: 12 bytes per element."}),
    Q("q7", "Which shared-memory bank holds byte address 260?",
      {"a": "0", "b": "1", "c": "4", "d": "8"},
      "b", "Word 260 // 4 = 65; bank 65 % 32 = 1.",
      {"c": "260 % 32 = 4 forgets that banks hold 4-byte words.",
       "d": "Divide by 4 to get the word, then take it modulo 32."}),
    Q("q8", "32 lanes read column 0 of `float tile[32][32]` (lane t reads tile[t][0]). How many "
      "wavefronts does the access take?",
      {"a": "1", "b": "2", "c": "32", "d": "0: it is served from registers"},
      "c", "Rows are 128 B apart, so every tile[t][0] is in bank 0: 32 distinct words in one "
      "bank, 32 wavefronts. With `tile[32][33]` the rows shift by one bank: 1 wavefront."),
    Q("q9", "All 32 lanes read the same 4-byte word of shared memory. How many wavefronts?",
      {"a": "1 (broadcast)", "b": "32", "c": "16", "d": "it is undefined"},
      "a", "Threads reading the same word share it: a broadcast, no conflict.",
      {"b": "Conflicts are between *distinct* words in one bank."}),
    Q("q10", "Why does TMA offer swizzle modes rather than padding?",
      {"a": "padding is slower than swizzling on every access",
       "b": "swizzling compresses the data", "c": "padding is not allowed in CUDA",
       "d": "TMA writes a box densely into shared memory; a swizzle permutes its 16-byte chunks so "
            "that reading a column of chunks is spread over the banks, without wasting memory"},
      "d", "A box lands densely (no room for a pad column); the 32/64/128-byte swizzles XOR the "
      "chunk index with the row, the same idea as tile[r][c ^ r].",
      {"b": "The bytes are only permuted; the size is unchanged."}),
    Q("q11", "An 8-row column of 16-byte chunks (one chunk per 128-byte row) is read from a TMA "
      "tile stored with SWIZZLE_128B. How conflicted is it?",
      {"a": "conflict-free: the 8 chunks land in 8 different chunk positions",
       "b": "2-way", "c": "4-way", "d": "8-way"},
      "a", "128B swizzle XORs the chunk index with the row mod 8: 8 rows, 8 positions. 64B gives "
      "4 positions (2-way), 32B gives 2 (4-way), none gives 1 (8-way).",
      {"d": "That is the unswizzled tile.", "b": "That is SWIZZLE_64B.", "c": "That is SWIZZLE_32B."}),
    Q("q12", "A Triton transpose written with one tl.load and one transposed tl.store compiles "
      "to PTX with ld.shared and st.shared, though the kernel never mentions shared memory. Why?",
      {"a": "Triton ignores the store's addresses", "b": "Triton transposes in registers only",
       "c": "the compiler converts the tile's layout through shared memory so that both global "
            "sides are coalesced", "d": "the GPU's L2 transposes the data"},
      "c", "Triton picks a coalesced layout for each global access and stages the conversion in "
      "shared memory: step 2 of the transpose, done by the compiler.",
      {"b": "A warp cannot exchange a whole tile in registers cheaply; the PTX shows shared memory."}),
])
