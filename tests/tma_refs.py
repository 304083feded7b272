"""Notebook 02's exercise answers written as a learner would (the solutions' formulas), shared by
the tests of its checks (tests/test_tma_exercises.py, tests/test_planted_tma_checks.py)."""
import numpy as np


def encode_args(shape, itemsize, box):
    strides = tuple(int(np.prod(shape[i + 1:])) * itemsize for i in range(len(shape) - 1))[::-1]
    return tuple(shape[::-1]), strides, tuple(box[::-1])


def expect_tx(box, itemsize, es):
    return int(np.prod([-(-b // s) for b, s in zip(box[:-1], es[:-1])])) * box[-1] * itemsize


def swz(r, c, size):
    byte = c * size
    return r * 128 + (((byte // 16) ^ (r % 8)) * 16) + byte % 16


def stub(*args):
    raise NotImplementedError
