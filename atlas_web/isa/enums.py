"""Small enumerations carried by instructions. Members keep the seed's spelling."""

from __future__ import annotations

import enum

__all__ = ["Condition", "MemoryScope", "MapOperation", "BinaryMapOperation", "ReduceOperation"]


class _Coded(enum.Enum):
    """An enum whose value is ``(code, text)``: code for bytecode, text for assembly."""

    @property
    def code(self) -> int:
        """The member's bytecode code."""
        return self.value[0]

    @property
    def text(self) -> str:
        """The member's assembly spelling (a mnemonic suffix)."""
        return self.value[1]

    @classmethod
    def from_code(cls, code: int):
        """The member with bytecode ``code``; raises KeyError when there is none."""
        for member in cls:
            if member.code == code:
                return member
        raise KeyError(code)

    @classmethod
    def from_text(cls, text: str):
        """The member spelled ``text`` in assembly; raises KeyError when there is none."""
        for member in cls:
            if member.text == text:
                return member
        raise KeyError(text)

    def __repr__(self) -> str:
        return f"{type(self).__name__}.{self.name}"


class Condition(_Coded):
    """Comparison of SETcc.

    EQ … GE are ordered comparisons (false when either float is NaN, except NE
    which is true). LTU … GEU compare integers as unsigned bit patterns and
    floats unordered (true when either is NaN or the relation holds).
    """

    EQ = (0, "eq")
    NE = (1, "ne")
    LT = (2, "lt")
    LE = (3, "le")
    GT = (4, "gt")
    GE = (5, "ge")
    LTU = (6, "ltu")
    LEU = (7, "leu")
    GTU = (8, "gtu")
    GEU = (9, "geu")


class MemoryScope(_Coded):
    """Scope of MemFence."""

    Thread = (0, "thread")
    Block = (1, "block")
    Device = (2, "device")
    System = (3, "system")


class MapOperation(_Coded):
    """Element-wise unary operation of ParallelMap."""

    Abs = (0, "abs")
    Neg = (1, "neg")
    Sqrt = (2, "sqrt")
    Exp = (3, "exp")
    Log = (4, "log")
    Sin = (5, "sin")
    Cos = (6, "cos")
    Tan = (7, "tan")
    Relu = (8, "relu")
    Sigmoid = (9, "sigmoid")
    Tanh = (10, "tanh")
    Gelu = (11, "gelu")
    Swish = (12, "swish")


class BinaryMapOperation(_Coded):
    """Element-wise binary operation of ParallelMapBinary."""

    Add = (0, "add")
    Sub = (1, "sub")
    Mul = (2, "mul")
    Div = (3, "div")
    Pow = (4, "pow")
    Min = (5, "min")
    Max = (6, "max")
    Atan2 = (7, "atan2")


class ReduceOperation(_Coded):
    """Reduction of ParallelReduce."""

    Sum = (0, "sum")
    Product = (1, "product")
    Min = (2, "min")
    Max = (3, "max")
