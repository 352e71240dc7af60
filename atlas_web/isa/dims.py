"""DIMS operands: a short tuple of unsigned integers held in the instruction (TensorContract's ``shape_a``,
``shape_b`` and ``contract_dims``).

An operand of kind DIMS has ``rule`` = its arity: 1, a tuple of ints (a shape: ``(3, 4, 5)``); 2, a tuple of
int pairs (axis pairs: ``((2, 0), (1, 1))``). At most ``MAX_DIMS`` entries, each in ``0 .. 2**32 - 1``. The
value is stored as a tuple of ints (arity 1) or a tuple of 2-tuples (arity 2), whatever sequences were given.

Text form (assembly): parenthesized, entries separated by spaces, a pair's two numbers by ``:``:
``(3 4 5)``, ``(2:0 1:1)``, ``()``. Bytecode: uleb entry count, then every number as uleb. JSON: a list of
ints, or of two-int lists.
"""

from __future__ import annotations

from ..errors import ProgramError

__all__ = ["MAX_DIMS", "DIM_LIMIT", "normalize_dims", "format_dims", "parse_dims"]

#: the most entries a DIMS operand holds (a tensor's rank limit)
MAX_DIMS = 8
#: every number is below this
DIM_LIMIT = 1 << 32


def _number(value: object) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < DIM_LIMIT:
        return value
    return None


def normalize_dims(value: object, arity: int) -> tuple | None:
    """``value`` as a DIMS operand of ``arity`` stores it (a tuple of ints, or of int pairs), or None when it is
    not a sequence of at most MAX_DIMS such entries of unsigned 32-bit ints."""
    if isinstance(value, (str, bytes)) or not isinstance(value, (tuple, list)) or len(value) > MAX_DIMS:
        return None
    out: list = []
    for entry in value:
        if arity == 1:
            number = _number(entry)
            if number is None:
                return None
            out.append(number)
            continue
        if isinstance(entry, (str, bytes)) or not isinstance(entry, (tuple, list)) or len(entry) != arity:
            return None
        numbers = tuple(_number(v) for v in entry)
        if None in numbers:
            return None
        out.append(numbers)
    return tuple(out)


def format_dims(value: tuple) -> str:
    """The text form: ``(3 4 5)`` or ``(2:0 1:1)``."""
    return "(" + " ".join(":".join(map(str, e)) if isinstance(e, tuple) else str(e) for e in value) + ")"


def parse_dims(text: str) -> tuple:
    """The value of the text form ``text`` (``(3 4 5)``, ``(2:0)``, ``()``; the first entry says whether it
    holds numbers or pairs, the instruction then checks that against its operand); raises ProgramError naming
    the text when it is not one."""
    body = text.strip()
    if len(body) < 2 or body[0] != "(" or body[-1] != ")":
        raise ProgramError(f"expected a parenthesized list like '(3 4 5)' or '(2:0 1:1)', got {text!r}")
    words = body[1:-1].split()
    arity = len(words[0].split(":")) if words else 1
    entries = []
    for word in words:
        parts = word.split(":")
        if len(parts) != arity or arity > 2 or not all(p.isdigit() for p in parts):
            raise ProgramError(f"bad entry {word!r} in {text!r} (expected all N or all N:M)")
        numbers = tuple(int(p) for p in parts)
        entries.append(numbers[0] if arity == 1 else numbers)
    value = normalize_dims(entries, arity)
    if value is None:
        raise ProgramError(f"{text!r}: at most {MAX_DIMS} entries, each number below 2**32")
    return value
