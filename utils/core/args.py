"""Argument rules for the course's public helpers: one rule per kind of argument, one message.

Every helper that takes a size, a count, a byte address, a flag or a choice among ints checks it
with these functions, so the same bad value gets the same error whichever helper it is passed to:

* the wrong kind (``None``, a bool, a float, a string where an int belongs) raises ``TypeError``;
* the right kind outside the rule (zero or a negative size, a count out of range) raises
  ``ValueError``, never a ``ZeroDivisionError`` or a crash further in;
* both messages name the argument and state the whole rule, e.g. ``chunk_bytes must be a positive
  multiple of 16, got None (NoneType, not an int)``.

The type rule is the course's one (:func:`utils.core.checks.is_int`): an int is a Python ``int``
or a NumPy integer, never a ``bool`` (``True == 1`` would otherwise pass by accident). Each rule
returns the value as a Python ``int`` (``bool`` for :func:`flag`).
"""
from __future__ import annotations

from .checks import is_bool, is_int

ADDRESS_LIMIT = 2 ** 64          # byte addresses are 64-bit: 0 .. 2**64 - 1
ADDRESS_RULE = "a byte address (an int in 0..2**64-1)"


def integer(name: str, value, rule: str = "an int") -> int:
    """``value`` as an int; ``TypeError`` naming ``name`` and the ``rule`` for any other kind."""
    if not is_int(value):
        raise TypeError(f"{name} must be {rule}, got {value!r} ({type(value).__name__}, not an int)")
    return int(value)


def positive(name: str, value, why: str = "") -> int:
    """A size or a count: an int >= 1. Zero is refused here, before anything divides by it."""
    rule = "a positive int" + why
    v = integer(name, value, rule)
    if v < 1:
        raise ValueError(f"{name} must be {rule}, got {value!r}")
    return v


def in_range(name: str, value, lo: int, hi: int, why: str = "") -> int:
    """An int in ``lo..hi`` (both included)."""
    rule = f"an int in {lo}..{hi}{why}"
    v = integer(name, value, rule)
    if not lo <= v <= hi:
        raise ValueError(f"{name} must be {rule}, got {value!r}")
    return v


def multiple(name: str, value, of: int, *, of_text: str | None = None, why: str = "") -> int:
    """A positive multiple of ``of`` (``of_text`` says it in words, e.g. "16 B")."""
    rule = f"a positive multiple of {of_text or of}{why}"
    v = integer(name, value, rule)
    if v < 1 or v % of:
        raise ValueError(f"{name} must be {rule}, got {value!r}")
    return v


def choice(name: str, value, allowed: tuple, why: str = "") -> int:
    """One of the ints in ``allowed`` (a cluster size, an element size...)."""
    rule = f"one of {tuple(allowed)}{why}"
    v = integer(name, value, rule)
    if v not in allowed:
        raise ValueError(f"{name} must be {rule}, got {value!r}")
    return v


def flag(name: str, value) -> bool:
    """A yes/no argument: ``True`` or ``False`` (or a NumPy bool), not 1, 0 or None."""
    if not is_bool(value):
        raise TypeError(f"{name} must be True or False, got {value!r} ({type(value).__name__})")
    return bool(value)


def address(name: str, value) -> int:
    """A byte address: an int in 0..2**64-1 (a pointer is 64 bits; it is never negative)."""
    rule = ADDRESS_RULE
    v = integer(name, value, rule)
    if v < 0:
        raise ValueError(f"{name} {v:#x} is negative: it must be {rule}")
    if v >= ADDRESS_LIMIT:
        raise ValueError(f"{name} {v:#x} does not fit in 64 bits: it must be {rule}")
    return v

