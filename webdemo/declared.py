"""A user's program declares its own buffers, launch and outputs in comment lines; the page runs it with them.

Directives are comment lines of the program text (the assembler ignores them)::

    ; @in  a f32 = 1, 2.5, -3          values given
    ; @in  b f32 random 1000 -10 10    1000 random values in [-10, 10] (default [-1, 1], integers [0, 100])
    ; @out c f32 1000                  an output of 1000 zeros, shown after the run
    ; @lanes 1000 64                   LaunchConfig.linear(1000, 64) (default: the chosen example's launch)

Types: f32, f64 and the integers of up to 64 bits (the host arrays of
``array.array``). Random values come from ``examples.inputs`` seeded by the
buffer's name and count (without a loop per element: NumPy natively,
JavaScript in the page, the same bits): floats are ``uniform_f32`` /
``uniform_f64`` in ``[LOW, HIGH]``, integers ``randint`` in ``[LOW, HIGH]`` (a range
of at most ``inputs.MAX_RANDINT_COUNT`` integers).

Buffers get handles 2, 3, ... in the order they are declared (``@in`` and
``@out`` alike), as on a fresh backend. ``declared_example`` turns the
directives into an ``examples.Example`` with no expected output (``expected``
None): the page shows the outputs instead of comparing them. A directive that
does not parse raises ProgramError naming its line.
"""

from __future__ import annotations

import array
import random
import re
from dataclasses import dataclass

from atlas_web import LaunchConfig, ProgramError, Type
from atlas_web.backend import typed_format

import examples
from examples import inputs

__all__ = ["DIRECTIVE", "Declaration", "parse_declarations", "declared_example", "DECLARED_NAME",
           "MAX_DECLARED_ELEMENTS", "DECLARED_TYPES"]

#: a directive line: "; @word rest"
DIRECTIVE = re.compile(r"^\s*;\s*@(\w+)\s*(.*?)\s*$")
#: the example name a declared program runs under
DECLARED_NAME = "your program"
#: the most elements one declared buffer may have
MAX_DECLARED_ELEMENTS = 1 << 22


@dataclass(frozen=True)
class Declaration:
    """One declared buffer: its name, type, initial values (an array.array of the type's elements) and
    whether it is shown after the run."""

    name: str
    ty: Type
    values: array.array
    output: bool


#: the types a buffer may be declared with: those with an array.array form
DECLARED_TYPES = (Type.F32, Type.F64, Type.I8, Type.I16, Type.I32, Type.I64, Type.U8, Type.U16, Type.U32, Type.U64)


def _type(word: str, line: int) -> Type:
    ty = Type.__members__.get(word.upper())
    if ty not in DECLARED_TYPES:
        raise ProgramError(f"line {line}: unknown type {word!r} (types: "
                           f"{', '.join(t.name.lower() for t in DECLARED_TYPES)})")
    return ty


def _number(ty: Type, text: str, line: int) -> int | float:
    try:
        value = float(text) if ty.is_float() else int(text, 0)
    except ValueError:
        raise ProgramError(f"line {line}: {text!r} is not a {ty.name.lower()} value") from None
    if ty.is_float():
        return value
    low, high = ty.int_range()
    if not low <= value <= high:
        raise ProgramError(f"line {line}: {text} is outside the {ty.name.lower()} range [{low}, {high}]")
    return value


def _count(text: str, line: int) -> int:
    if not text.isdigit() or not 1 <= int(text) <= MAX_DECLARED_ELEMENTS:
        raise ProgramError(f"line {line}: the element count must be a whole number from 1 to "
                           f"{MAX_DECLARED_ELEMENTS}, got {text!r}")
    return int(text)


def _random(name: str, ty: Type, count: int, low: int | float, high: int | float, line: int) -> array.array:
    """``count`` random values of ``ty`` in ``[low, high]`` (the module's docstring says how they are drawn)."""
    rng = random.Random(f"{name}:{count}")
    if ty.is_float():
        return (inputs.uniform_f32 if ty is Type.F32 else inputs.uniform_f64)(rng, count, low, high)
    if not 1 <= high - low + 1 <= inputs.MAX_RANDINT_COUNT:
        raise ProgramError(f"line {line}: random {ty.name.lower()} values need LOW <= HIGH and at most "
                           f"{inputs.MAX_RANDINT_COUNT} integers between them, got [{low}, {high}]")
    return inputs.randint(rng, count, low, high, typed_format(ty)[0])


def _values(name: str, ty: Type, rest: list[str], line: int) -> array.array:
    if rest[:1] == ["="]:
        values = [v for v in " ".join(rest[1:]).replace(",", " ").split()]
        if not values:
            raise ProgramError(f"line {line}: @in {name} gives no values after '='")
        return examples.typed_array(ty, [_number(ty, v, line) for v in values])
    if rest[:1] == ["random"] and len(rest) in (2, 4):
        count = _count(rest[1], line)
        low, high = ((_number(ty, rest[2], line), _number(ty, rest[3], line)) if len(rest) == 4
                     else ((-1.0, 1.0) if ty.is_float() else (0, 100)))
        return _random(name, ty, count, low, high, line)
    raise ProgramError(f"line {line}: @in {name} {ty.name.lower()} needs '= v1, v2, ...' or "
                       "'random COUNT [LOW HIGH]'")


def parse_declarations(text: str) -> tuple[tuple[Declaration, ...], LaunchConfig | None]:
    """The buffers a program text declares, in order, and its ``@lanes`` launch (None when not given).

    Raises ProgramError naming the line for a directive that does not parse or a name declared twice.
    """
    found: list[Declaration] = []
    launch = None
    for number, raw in enumerate(text.splitlines(), 1):
        match = DIRECTIVE.match(raw)
        if match is None:
            continue
        word, words = match.group(1), match.group(2).split()
        if word == "lanes":
            if len(words) not in (1, 2) or not all(w.isdigit() for w in words):
                raise ProgramError(f"line {number}: @lanes needs 'LANES [BLOCK]' (whole numbers)")
            launch = LaunchConfig.linear(*(int(w) for w in words))
            continue
        if word not in ("in", "out") or len(words) < 3:
            raise ProgramError(f"line {number}: unknown directive '@{word} {' '.join(words)}' (directives: "
                               "'@in NAME TYPE = values' or '@in NAME TYPE random COUNT [LOW HIGH]', "
                               "'@out NAME TYPE COUNT', '@lanes LANES [BLOCK]')")
        name, ty = words[0], _type(words[1], number)
        if any(d.name == name for d in found):
            raise ProgramError(f"line {number}: buffer {name!r} is declared twice")
        if word == "out":
            if len(words) != 3:
                raise ProgramError(f"line {number}: @out needs 'NAME TYPE COUNT'")
            found.append(Declaration(name, ty, examples.typed_array(ty, _count(words[2], number)), True))
        else:
            found.append(Declaration(name, ty, _values(name, ty, words[2:], number), False))
    return tuple(found), launch


def declared_example(text: str, default_config: LaunchConfig) -> examples.Example | None:
    """The program ``text`` with its declared buffers as an Example (None when it declares none); its launch
    is ``@lanes`` or ``default_config``. Raises ProgramError for a bad directive."""
    declarations, launch = parse_declarations(text)
    if not declarations:
        return None
    return examples.Example(
        name=DECLARED_NAME,
        description="a program with its own inputs and outputs",
        program=text,
        config=launch or default_config,
        buffers=tuple(examples.BufferSpec(d.name, d.ty, d.values) for d in declarations),
        outputs=tuple(examples.OutputSpec(d.name) for d in declarations if d.output),
        expected=None,  # type: ignore[arg-type] - nothing to compare: the page shows the outputs
    )
