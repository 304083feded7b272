"""TMA helpers: a validated tensor-map (descriptor) wrapper and a NumPy model of TMA tiles.

Both, and the runtime's coordinate check, apply one set of rules (:mod:`.rules`), so the same
bad input gets the same error from each. Importable on any machine: the CUDA driver is only
touched inside :func:`encode`.
"""
from . import rules
from .descriptor import DTYPES, ArrayInfo, TensorMapSpec, array_info, field_names, make_spec
from .encode import describe, encode, encode_tiled
from .model import (Traffic, smem_bytes, smem_image, smem_positions, tma_load, tma_reduce_add,
                    tma_store, tma_traffic)
from .swizzle import (SWIZZLE_MODES, apply_swizzle, bank_conflict_ways, bank_map, chunk_table,
                      element_offset, repeat_bytes, row_pitch, smem_offsets, swizzle_span,
                      swizzled_offset)

__all__ = ["rules", "DTYPES", "ArrayInfo", "TensorMapSpec", "array_info", "describe", "encode", "encode_tiled",
           "field_names", "make_spec", "Traffic", "smem_bytes", "smem_image", "smem_positions", "tma_load",
           "tma_reduce_add", "tma_store", "tma_traffic", "SWIZZLE_MODES", "apply_swizzle",
           "bank_conflict_ways", "bank_map", "chunk_table", "element_offset", "repeat_bytes",
           "row_pitch", "smem_offsets", "swizzle_span", "swizzled_offset"]
