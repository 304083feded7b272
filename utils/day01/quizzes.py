"""The end-of-day quiz of day 1 (memory basics). Answers live here, not in the notebooks.

Every wrong option says why it is wrong. q13 reads real sm_90a PTX (NVRTC, ``utils.cuda_cpp.day01``),
q14 predicts a ratio recorded in ``results/03_shared_memory_banks.json``, q15 finds a bug.
"""
from ..core.quiz import Measured, Predict
from ..core.quiz import Question as Q
from ..core.quiz import Quiz

# Real PTX of one of the four transposes (utils.cuda_cpp.day01, NVRTC for sm_90a), symbol shortened.
TRANSPOSE_PTX = """
    .shared .align 4 .b8 tile[4224];
    mad.lo.s32      %r51, %r111, 132, %r50;
    st.shared.f32   [%r112+1056], %f5;
    bar.sync        0;
    mad.lo.s32      %r84, %r1, 132, %r83;
    ld.shared.f32   %f6, [%r114];"""

DAY01 = Quiz("Day 1 quiz: memory basics", [
    Q("q1", "In what unit does the L1/L2 cache serve a warp's global loads?",
      {"a": "4-byte words", "b": "32-byte sectors", "c": "whole 4 KiB pages", "d": "one byte at a time"},
      "b", "A 128-byte line holds four 32-byte sectors; a warp pays for every sector it touches.",
      {"a": "Words are the unit of shared-memory banks, not of global-memory traffic.",
       "c": "Pages matter to address translation, not to what one load moves.",
       "d": "Nothing moves single bytes: even a 1-byte load costs the whole 32-byte sector it is in."}),
    Q("q2", "A warp reads 32 consecutive fp32 values starting at a 128-byte-aligned address. "
      "How many sectors does it touch?",
      {"a": "1", "b": "4", "c": "8", "d": "32"},
      "b", "32 x 4 B = 128 B = four 32-byte sectors: every byte moved is used.",
      {"a": "One sector holds 32 bytes, a quarter of the 128 bytes the warp reads.",
       "c": "8 sectors (256 B) is stride 2, where every second value is skipped.",
       "d": "That would be one sector per thread: stride 8 or more."}),
    Q("q3", "The same warp reads every second fp32 value (stride 2). What fraction of the bytes "
      "it moves does it use?",
      {"a": "100%", "b": "50%", "c": "25%", "d": "12.5%"},
      "b", "It spans 256 B = 8 sectors to use 128 B. From stride 8 on, each thread gets its own "
      "sector and only 4 of 32 bytes are used (12.5%).",
      {"a": "The skipped values sit in the same sectors as the used ones, and move with them.",
       "c": "25% is stride 4: 16 sectors (512 B) moved for 128 B used.",
       "d": "12.5% is stride 8 and beyond, where each 4-byte value costs a whole sector."}),
    Q("q4", "In a copy whose warps start 4 bytes past a sector boundary, each warp touches 5 "
      "sectors instead of 4. Why does the DRAM traffic hardly grow?",
      {"a": "the GPU realigns addresses before loading",
       "b": "sectors are not used by the hardware",
       "c": "the neighbouring warp needs the extra sector too, and finds it in L1/L2",
       "d": "DRAM reads whole 4 KiB pages anyway"},
      "c", "Sectors per warp is what one request costs the caches; DRAM traffic is the union "
      "over all warps, almost unchanged by a small offset.",
      {"a": "Nothing realigns: the fifth sector is really requested.",
       "b": "They are the caches' unit of service (question 1); the fifth sector is really moved "
            "from L2, but only once from DRAM.",
       "d": "A page is a unit of address translation, not of transfer: DRAM traffic is counted "
            "in sectors too, and the fifth sector is one the neighbouring warp reads anyway."}),
    Q("q5", "On a roofline, a kernel whose arithmetic intensity is below the ridge point is ...",
      {"a": "memory-bound: its ceiling is intensity x bandwidth", "b": "compute-bound",
       "c": "latency-bound by definition", "d": "always slower than the ridge point kernel"},
      "a", "Left of the ridge, the sloped memory roof is the lower one.",
      {"b": "Compute-bound kernels sit right of the ridge, under the flat roof.",
       "c": "A roofline has no latency roof: left of the ridge the ceiling is memory bandwidth; "
            "poor latency hiding only keeps a kernel further below it.",
       "d": "A roofline bounds FLOP/s for one intensity; it does not rank two kernels' run times, "
            "which depend on how much work each does."}),
    Q("q6", "What is the arithmetic intensity of z = x + y in fp32 (each array crosses DRAM once)?",
      {"a": "1 FLOP/byte", "b": "1/4 FLOP/byte", "c": "1/12 FLOP/byte", "d": "3 FLOP/byte"},
      "c", "One add per element, 12 bytes per element (two 4-byte reads, one 4-byte write).",
      {"a": "One FLOP per element, but each element moves 12 bytes, not 1.",
       "b": "Count the write of z and the read of y too: 12 bytes per element.",
       "d": "3 is the number of arrays touched per FLOP, and the ratio is upside down: FLOPs per byte."}),
    Q("q7", "Which shared-memory bank holds byte address 260?",
      {"a": "0", "b": "1", "c": "4", "d": "8"},
      "b", "Word 260 // 4 = 65; bank 65 % 32 = 1.",
      {"a": "Bank 0 holds words 0, 32, 64, ...; byte 260 is in word 65.",
       "c": "260 % 32 = 4 forgets that banks hold 4-byte words.",
       "d": "Divide by 4 to get the word, then take it modulo 32."}),
    Q("q8", "32 lanes read column 0 of `float tile[32][32]` (lane t reads tile[t][0]). How many "
      "wavefronts does the access take?",
      {"a": "1", "b": "2", "c": "32", "d": "0: it is served from registers"},
      "c", "Rows are 128 B apart, so every tile[t][0] is in bank 0: 32 distinct words in one "
      "bank, 32 wavefronts. With `tile[32][33]` the rows shift by one bank: 1 wavefront.",
      {"a": "One wavefront needs the 32 words in 32 different banks; 128-byte rows put them all in bank 0.",
       "b": "2 wavefronts means at most 2 distinct words per bank; here bank 0 holds all 32.",
       "d": "tile is __shared__: each tile[t][0] is an ld.shared (the PTX shows it)."}),
    Q("q9", "All 32 lanes read the same 4-byte word of shared memory. How many wavefronts?",
      {"a": "1 (broadcast)", "b": "32", "c": "16", "d": "it is undefined"},
      "a", "Threads reading the same word share it: a broadcast, no conflict.",
      {"b": "Conflicts are between *distinct* words in one bank.",
       "c": "There is one word, so nothing to serialise: no number of ways above 1 applies.",
       "d": "Reading one word from many lanes is defined and common: the hardware broadcasts it."}),
    Q("q10", "Why does TMA offer swizzle modes rather than padding?",
      {"a": "padding is slower than swizzling on every access",
       "b": "swizzling compresses the data", "c": "padding is not allowed in CUDA",
       "d": "TMA writes a box densely into shared memory; a swizzle permutes its 16-byte chunks so "
            "that reading a column of chunks is spread over the banks, without wasting memory"},
      "d", "A box lands densely (no room for a pad column); the 32/64/128-byte swizzles XOR the "
      "chunk index with the 128-byte line index, the same idea as tile[r][c ^ r].",
      {"a": "Padded (v2) and swizzled (v3) transposes run at about the same speed (section 4); "
            "the reason is that a TMA box has no room for a pad.",
       "b": "The bytes are only permuted; the size is unchanged.",
       "c": "v2 pads `tile[32][33]` in ordinary CUDA; it is TMA's dense box that cannot be padded."}),
    Q("q11", "A TMA box of fp16 with 32 elements (64 bytes) per row lands in shared memory with "
      "SWIZZLE_64B, the mode whose span is 64 bytes. A tensor-core load reads chunk 0 (the first "
      "16 bytes) of rows 0 to 7. How conflicted is it?",
      {"a": "conflict-free: one wavefront", "b": "2-way", "c": "4-way", "d": "8-way"},
      "a", "Two 64-byte rows share each 128-byte line, and SWIZZLE_64B XORs the chunk index with "
      "the line index mod 4: chunk 0 of rows 0..7 lands at positions 0, 4, 1, 5, 2, 6, 3, 7, all "
      "different. Each mode is conflict-free for rows up to its span: SWIZZLE_32B for 32-byte "
      "rows, 64B for 64-byte rows, 128B for 128-byte rows; the modes differ in the row width "
      "they serve.",
      {"b": "2-way is an unswizzled tile of 32-byte rows (chunk 0 at positions 0, 2, 4, 6); the "
            "swizzle spreads these eight chunks over all eight positions.",
       "c": "4-way is this tile WITHOUT swizzle: 64-byte rows put chunk 0 at positions 0 and 4 "
            "only. SWIZZLE_64B exists to fix exactly that.",
       "d": "8-way is an unswizzled tile of 128-byte rows, where every chunk 0 sits at position 0; "
            "here two 64-byte rows share each line, so even unswizzled it is at most 4-way."}),
    Q("q12", "A Triton transpose written with one tl.load and one transposed tl.store compiles "
      "to PTX with ld.shared and st.shared, though the kernel never mentions shared memory. Why?",
      {"a": "Triton ignores the store's addresses", "b": "Triton transposes in registers only",
       "c": "the compiler converts the tile's layout through shared memory so that both global "
            "sides are coalesced", "d": "the GPU's L2 transposes the data"},
      "c", "Triton picks a coalesced layout for each global access and stages the conversion in "
      "shared memory: step 2 of the transpose, done by the compiler.",
      {"a": "The store writes y[c, r] exactly as written: the notebook checks every element.",
       "b": "A warp cannot exchange a whole tile in registers cheaply; the PTX shows shared memory.",
       "d": "Caches store and return bytes; they never rearrange them."}),
    Q("q13", "Read the PTX. These lines come from one of the four CUDA transposes of section 2, "
      "compiled for sm_90a (the tile's symbol name is shortened):\n" + TRANSPOSE_PTX +
      "\n\nWhich version is it?",
      {"a": "v0 naive", "b": "v1 smem, tile[32][32]", "c": "v2 padded, tile[32][33]",
       "d": "v3 swizzled, tile[32][32] at column c ^ r"},
      "c", "The tile is 4224 B = 32 x 33 x 4 B, and rows are 132 B (33 words) apart: the mad by "
      "132 computes a row's address, and +1056 is 8 rows further (threadIdx.y steps by 8). "
      "bar.sync 0 is the __syncthreads() between filling the tile and reading it.",
      {"a": "v0 never touches shared memory: its PTX has no .shared array, no st.shared, "
            "ld.shared or bar.sync.",
       "b": "v1's tile[32][32] is 4096 B with rows 128 B apart; here rows are 132 B apart.",
       "d": "v3 keeps a 4096-byte tile[32][32] and computes its column with an xor.b32; here a "
            "row is 132 B long."}),
    Predict("q14", "Predict, then compare with section 4's table: v1 stages the transpose through "
            "`tile[32][32]` (32-way conflicts on its column reads), v2 through `tile[32][33]` (no "
            "conflicts); everything else is the same. On an 8192 x 8192 fp32 transpose, how many "
            "times faster is v2 than v1 (v2's GB/s over v1's)?",
            Measured("03_shared_memory_banks", "CUDA v2 padded", over="CUDA v1 smem"),
            {"a": (0, 1.2), "b": (1.2, 3), "c": (3, 10), "d": (10, float("inf"))},
            "Each column read drops from 32 wavefronts to 1, but the kernel's time is not only "
            "shared-memory reads: both versions move the same 512 MiB through HBM, and once the "
            "conflicts are gone that traffic sets the time (v2 gets close to memcpy).",
            {"a": "Below 1.2x would mean the conflicts hardly cost v1 anything: that v1 was "
                  "already limited by its global traffic.",
             "b": "1.2x to 3x would mean the conflicts cost v1 a large share of its time, with "
                  "the global traffic both versions share bounding the gain.",
             "c": "3x to 10x would need v1's time to be mostly wavefronts, several times longer "
                  "than moving its 512 MiB through HBM.",
             "d": "10x or more would mean time scaling with wavefronts (32 to 1); but both "
                  "versions also move the same bytes through HBM, which no conflict fix removes."}),
    Q("q15", "Find the bug: 'to be safe', a learner pads the transpose tile to "
      "`float tile[32][34]`. Lane t then reads tile[t][0]. How many wavefronts does that read take?",
      {"a": "1", "b": "2", "c": "16", "d": "32"},
      "b", "Rows are 34 words apart: lane t reads word 34t, in bank 34t mod 32 = 2t mod 32, so "
      "only the 16 even banks are used, two words each: 2-way. Pad to an odd row length "
      "(tile[32][33]) instead, as Exercise 6 found.",
      {"a": "Conflict-free needs all 32 banks; an even row length (34 words) reaches only the "
            "16 even ones.",
       "c": "16-way would put 16 words in one bank; 2t mod 32 puts exactly two in each even bank.",
       "d": "32-way is the unpadded tile[32][32] (rows 128 B apart); 34-word rows shift each row "
            "by two banks."}),
    Q("q16", "Why can a TMA tile of 64 fp16 per row (128-byte rows) not use SWIZZLE_32B?",
      {"a": "it can, but a column of 16-byte chunks would then be 4-way conflicted",
       "b": "the descriptor is refused: with SWIZZLE_32B a box row may hold at most 32 bytes "
            "(16 fp16); 128-byte rows need SWIZZLE_128B",
       "c": "SWIZZLE_32B works only for fp32 data",
       "d": "SWIZZLE_32B needs the tile at a 1024-byte-aligned address"},
      "b", "Each mode's span (32, 64 or 128 bytes) is the widest box row it allows: the inner box "
      "dimension times the element size must not exceed it. So the modes differ in the row "
      "width they serve, and each is conflict-free at its own width; rows of 16 fp16 would use "
      "SWIZZLE_32B.",
      {"a": "TMA cannot produce that layout: cuTensorMapEncodeTiled refuses a 128-byte inner box "
            "row with SWIZZLE_32B, so no tile ever has that conflict.",
       "c": "Swizzles move 16-byte chunks whatever the element type; the limit is the row's bytes.",
       "d": "1024 B is the repeat of the 128B pattern; SWIZZLE_32B repeats every 256 bytes."}),
])
