"""THE WebAssembly instruction table: every instruction the encoder, decoder and disassembler know.

One row per instruction: its WAT name, its opcode (one byte, or a prefix byte
0xFC / 0xFD followed by a u32 sub-opcode written as LEB128) and the kinds of
its immediates, in binary order. Immediate kinds are defined in
``immediates.IMMEDIATE_CODECS``; a ``memargN`` kind is a memory argument whose
natural alignment is 2**N bytes, a ``laneN`` kind a lane index below N.

Covered: core WebAssembly 2.0 (control, reference, parametric, variable,
table, memory, numeric, bulk memory, non-trapping float-to-int, sign
extension), the complete fixed-width SIMD (0xFD 0x00 … 0xFF) and relaxed SIMD
(0xFD 0x100 … 0x113). Opcodes follow the WebAssembly specification's binary
format; tests check every row against an independent encoder.

Two names differ from WAT because a name must be unique: ``select_typed`` is
WAT's ``select (result t*)`` (0x1C) and is printed as ``select``.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["OpcodeRow", "WASM_OPCODES", "OPCODE_BY_NAME", "OPCODE_BY_CODE", "PREFIX_BYTES", "TEXT_NAME"]

#: bytes that introduce a two-part opcode (the sub-opcode follows as a u32 LEB128)
PREFIX_BYTES = frozenset({0xFC, 0xFD})

#: table names printed differently in WAT
TEXT_NAME = {"select_typed": "select"}


@dataclass(frozen=True, slots=True)
class OpcodeRow:
    """One instruction: ``name``, ``code`` ((byte,) or (prefix, sub-opcode)) and ``immediates`` kinds."""

    name: str
    code: tuple[int, ...]
    immediates: tuple[str, ...] = ()

    @property
    def feature(self) -> str:
        """``"core"``, ``"simd"`` or ``"relaxed-simd"``: the proposal that introduced the opcode space."""
        if self.code[0] != 0xFD:
            return "core"
        return "relaxed-simd" if self.code[1] >= 0x100 else "simd"

    @property
    def text_name(self) -> str:
        """The mnemonic as WAT prints it."""
        return TEXT_NAME.get(self.name, self.name)


_M0, _M1, _M2, _M3, _M4 = ("memarg0",), ("memarg1",), ("memarg2",), ("memarg3",), ("memarg4",)
_BT = ("blocktype",)

_CORE: list[tuple[str, tuple[int, ...], tuple[str, ...]]] = [
    # control
    ("unreachable", (0x00,), ()), ("nop", (0x01,), ()),
    ("block", (0x02,), _BT), ("loop", (0x03,), _BT), ("if", (0x04,), _BT), ("else", (0x05,), ()),
    ("end", (0x0B,), ()), ("br", (0x0C,), ("labelidx",)), ("br_if", (0x0D,), ("labelidx",)),
    ("br_table", (0x0E,), ("labels", "labelidx")), ("return", (0x0F,), ()),
    ("call", (0x10,), ("funcidx",)), ("call_indirect", (0x11,), ("typeidx", "tableidx")),
    # reference
    ("ref.null", (0xD0,), ("reftype",)), ("ref.is_null", (0xD1,), ()), ("ref.func", (0xD2,), ("funcidx",)),
    # parametric
    ("drop", (0x1A,), ()), ("select", (0x1B,), ()), ("select_typed", (0x1C,), ("valtypes",)),
    # variable
    ("local.get", (0x20,), ("localidx",)), ("local.set", (0x21,), ("localidx",)),
    ("local.tee", (0x22,), ("localidx",)), ("global.get", (0x23,), ("globalidx",)),
    ("global.set", (0x24,), ("globalidx",)),
    # table
    ("table.get", (0x25,), ("tableidx",)), ("table.set", (0x26,), ("tableidx",)),
    ("table.init", (0xFC, 12), ("elemidx", "tableidx")), ("elem.drop", (0xFC, 13), ("elemidx",)),
    ("table.copy", (0xFC, 14), ("tableidx", "tableidx")), ("table.grow", (0xFC, 15), ("tableidx",)),
    ("table.size", (0xFC, 16), ("tableidx",)), ("table.fill", (0xFC, 17), ("tableidx",)),
    # memory
    ("i32.load", (0x28,), _M2), ("i64.load", (0x29,), _M3), ("f32.load", (0x2A,), _M2),
    ("f64.load", (0x2B,), _M3), ("i32.load8_s", (0x2C,), _M0), ("i32.load8_u", (0x2D,), _M0),
    ("i32.load16_s", (0x2E,), _M1), ("i32.load16_u", (0x2F,), _M1), ("i64.load8_s", (0x30,), _M0),
    ("i64.load8_u", (0x31,), _M0), ("i64.load16_s", (0x32,), _M1), ("i64.load16_u", (0x33,), _M1),
    ("i64.load32_s", (0x34,), _M2), ("i64.load32_u", (0x35,), _M2),
    ("i32.store", (0x36,), _M2), ("i64.store", (0x37,), _M3), ("f32.store", (0x38,), _M2),
    ("f64.store", (0x39,), _M3), ("i32.store8", (0x3A,), _M0), ("i32.store16", (0x3B,), _M1),
    ("i64.store8", (0x3C,), _M0), ("i64.store16", (0x3D,), _M1), ("i64.store32", (0x3E,), _M2),
    ("memory.size", (0x3F,), ("memidx",)), ("memory.grow", (0x40,), ("memidx",)),
    ("memory.init", (0xFC, 8), ("dataidx", "memidx")), ("data.drop", (0xFC, 9), ("dataidx",)),
    ("memory.copy", (0xFC, 10), ("memidx", "memidx")), ("memory.fill", (0xFC, 11), ("memidx",)),
    # numeric constants
    ("i32.const", (0x41,), ("i32",)), ("i64.const", (0x42,), ("i64",)),
    ("f32.const", (0x43,), ("f32",)), ("f64.const", (0x44,), ("f64",)),
]

# numeric instructions without immediates, (name, opcode byte)
_NUMERIC: list[tuple[str, int]] = [
    ("i32.eqz", 0x45), ("i32.eq", 0x46), ("i32.ne", 0x47), ("i32.lt_s", 0x48), ("i32.lt_u", 0x49),
    ("i32.gt_s", 0x4A), ("i32.gt_u", 0x4B), ("i32.le_s", 0x4C), ("i32.le_u", 0x4D), ("i32.ge_s", 0x4E),
    ("i32.ge_u", 0x4F),
    ("i64.eqz", 0x50), ("i64.eq", 0x51), ("i64.ne", 0x52), ("i64.lt_s", 0x53), ("i64.lt_u", 0x54),
    ("i64.gt_s", 0x55), ("i64.gt_u", 0x56), ("i64.le_s", 0x57), ("i64.le_u", 0x58), ("i64.ge_s", 0x59),
    ("i64.ge_u", 0x5A),
    ("f32.eq", 0x5B), ("f32.ne", 0x5C), ("f32.lt", 0x5D), ("f32.gt", 0x5E), ("f32.le", 0x5F), ("f32.ge", 0x60),
    ("f64.eq", 0x61), ("f64.ne", 0x62), ("f64.lt", 0x63), ("f64.gt", 0x64), ("f64.le", 0x65), ("f64.ge", 0x66),
    ("i32.clz", 0x67), ("i32.ctz", 0x68), ("i32.popcnt", 0x69), ("i32.add", 0x6A), ("i32.sub", 0x6B),
    ("i32.mul", 0x6C), ("i32.div_s", 0x6D), ("i32.div_u", 0x6E), ("i32.rem_s", 0x6F), ("i32.rem_u", 0x70),
    ("i32.and", 0x71), ("i32.or", 0x72), ("i32.xor", 0x73), ("i32.shl", 0x74), ("i32.shr_s", 0x75),
    ("i32.shr_u", 0x76), ("i32.rotl", 0x77), ("i32.rotr", 0x78),
    ("i64.clz", 0x79), ("i64.ctz", 0x7A), ("i64.popcnt", 0x7B), ("i64.add", 0x7C), ("i64.sub", 0x7D),
    ("i64.mul", 0x7E), ("i64.div_s", 0x7F), ("i64.div_u", 0x80), ("i64.rem_s", 0x81), ("i64.rem_u", 0x82),
    ("i64.and", 0x83), ("i64.or", 0x84), ("i64.xor", 0x85), ("i64.shl", 0x86), ("i64.shr_s", 0x87),
    ("i64.shr_u", 0x88), ("i64.rotl", 0x89), ("i64.rotr", 0x8A),
    ("f32.abs", 0x8B), ("f32.neg", 0x8C), ("f32.ceil", 0x8D), ("f32.floor", 0x8E), ("f32.trunc", 0x8F),
    ("f32.nearest", 0x90), ("f32.sqrt", 0x91), ("f32.add", 0x92), ("f32.sub", 0x93), ("f32.mul", 0x94),
    ("f32.div", 0x95), ("f32.min", 0x96), ("f32.max", 0x97), ("f32.copysign", 0x98),
    ("f64.abs", 0x99), ("f64.neg", 0x9A), ("f64.ceil", 0x9B), ("f64.floor", 0x9C), ("f64.trunc", 0x9D),
    ("f64.nearest", 0x9E), ("f64.sqrt", 0x9F), ("f64.add", 0xA0), ("f64.sub", 0xA1), ("f64.mul", 0xA2),
    ("f64.div", 0xA3), ("f64.min", 0xA4), ("f64.max", 0xA5), ("f64.copysign", 0xA6),
    ("i32.wrap_i64", 0xA7), ("i32.trunc_f32_s", 0xA8), ("i32.trunc_f32_u", 0xA9), ("i32.trunc_f64_s", 0xAA),
    ("i32.trunc_f64_u", 0xAB), ("i64.extend_i32_s", 0xAC), ("i64.extend_i32_u", 0xAD),
    ("i64.trunc_f32_s", 0xAE), ("i64.trunc_f32_u", 0xAF), ("i64.trunc_f64_s", 0xB0), ("i64.trunc_f64_u", 0xB1),
    ("f32.convert_i32_s", 0xB2), ("f32.convert_i32_u", 0xB3), ("f32.convert_i64_s", 0xB4),
    ("f32.convert_i64_u", 0xB5), ("f32.demote_f64", 0xB6), ("f64.convert_i32_s", 0xB7),
    ("f64.convert_i32_u", 0xB8), ("f64.convert_i64_s", 0xB9), ("f64.convert_i64_u", 0xBA),
    ("f64.promote_f32", 0xBB), ("i32.reinterpret_f32", 0xBC), ("i64.reinterpret_f64", 0xBD),
    ("f32.reinterpret_i32", 0xBE), ("f64.reinterpret_i64", 0xBF),
    ("i32.extend8_s", 0xC0), ("i32.extend16_s", 0xC1), ("i64.extend8_s", 0xC2), ("i64.extend16_s", 0xC3),
    ("i64.extend32_s", 0xC4),
]

# non-trapping float-to-int conversions, (name, 0xFC sub-opcode)
_SATURATING: list[tuple[str, int]] = [
    ("i32.trunc_sat_f32_s", 0), ("i32.trunc_sat_f32_u", 1), ("i32.trunc_sat_f64_s", 2),
    ("i32.trunc_sat_f64_u", 3), ("i64.trunc_sat_f32_s", 4), ("i64.trunc_sat_f32_u", 5),
    ("i64.trunc_sat_f64_s", 6), ("i64.trunc_sat_f64_u", 7),
]

# SIMD instructions with immediates, (name, 0xFD sub-opcode, immediates)
_SIMD_WITH_IMMEDIATES: list[tuple[str, int, tuple[str, ...]]] = [
    ("v128.load", 0x00, _M4), ("v128.load8x8_s", 0x01, _M3), ("v128.load8x8_u", 0x02, _M3),
    ("v128.load16x4_s", 0x03, _M3), ("v128.load16x4_u", 0x04, _M3), ("v128.load32x2_s", 0x05, _M3),
    ("v128.load32x2_u", 0x06, _M3), ("v128.load8_splat", 0x07, _M0), ("v128.load16_splat", 0x08, _M1),
    ("v128.load32_splat", 0x09, _M2), ("v128.load64_splat", 0x0A, _M3), ("v128.store", 0x0B, _M4),
    ("v128.const", 0x0C, ("v128",)), ("i8x16.shuffle", 0x0D, ("shuffle",)),
    ("i8x16.extract_lane_s", 0x15, ("lane16",)), ("i8x16.extract_lane_u", 0x16, ("lane16",)),
    ("i8x16.replace_lane", 0x17, ("lane16",)), ("i16x8.extract_lane_s", 0x18, ("lane8",)),
    ("i16x8.extract_lane_u", 0x19, ("lane8",)), ("i16x8.replace_lane", 0x1A, ("lane8",)),
    ("i32x4.extract_lane", 0x1B, ("lane4",)), ("i32x4.replace_lane", 0x1C, ("lane4",)),
    ("i64x2.extract_lane", 0x1D, ("lane2",)), ("i64x2.replace_lane", 0x1E, ("lane2",)),
    ("f32x4.extract_lane", 0x1F, ("lane4",)), ("f32x4.replace_lane", 0x20, ("lane4",)),
    ("f64x2.extract_lane", 0x21, ("lane2",)), ("f64x2.replace_lane", 0x22, ("lane2",)),
    ("v128.load8_lane", 0x54, _M0 + ("lane16",)), ("v128.load16_lane", 0x55, _M1 + ("lane8",)),
    ("v128.load32_lane", 0x56, _M2 + ("lane4",)), ("v128.load64_lane", 0x57, _M3 + ("lane2",)),
    ("v128.store8_lane", 0x58, _M0 + ("lane16",)), ("v128.store16_lane", 0x59, _M1 + ("lane8",)),
    ("v128.store32_lane", 0x5A, _M2 + ("lane4",)), ("v128.store64_lane", 0x5B, _M3 + ("lane2",)),
    ("v128.load32_zero", 0x5C, _M2), ("v128.load64_zero", 0x5D, _M3),
]

# SIMD instructions without immediates, (name, 0xFD sub-opcode)
_SIMD: list[tuple[str, int]] = [
    ("i8x16.swizzle", 0x0E), ("i8x16.splat", 0x0F), ("i16x8.splat", 0x10), ("i32x4.splat", 0x11),
    ("i64x2.splat", 0x12), ("f32x4.splat", 0x13), ("f64x2.splat", 0x14),
    ("i8x16.eq", 0x23), ("i8x16.ne", 0x24), ("i8x16.lt_s", 0x25), ("i8x16.lt_u", 0x26), ("i8x16.gt_s", 0x27),
    ("i8x16.gt_u", 0x28), ("i8x16.le_s", 0x29), ("i8x16.le_u", 0x2A), ("i8x16.ge_s", 0x2B), ("i8x16.ge_u", 0x2C),
    ("i16x8.eq", 0x2D), ("i16x8.ne", 0x2E), ("i16x8.lt_s", 0x2F), ("i16x8.lt_u", 0x30), ("i16x8.gt_s", 0x31),
    ("i16x8.gt_u", 0x32), ("i16x8.le_s", 0x33), ("i16x8.le_u", 0x34), ("i16x8.ge_s", 0x35), ("i16x8.ge_u", 0x36),
    ("i32x4.eq", 0x37), ("i32x4.ne", 0x38), ("i32x4.lt_s", 0x39), ("i32x4.lt_u", 0x3A), ("i32x4.gt_s", 0x3B),
    ("i32x4.gt_u", 0x3C), ("i32x4.le_s", 0x3D), ("i32x4.le_u", 0x3E), ("i32x4.ge_s", 0x3F), ("i32x4.ge_u", 0x40),
    ("f32x4.eq", 0x41), ("f32x4.ne", 0x42), ("f32x4.lt", 0x43), ("f32x4.gt", 0x44), ("f32x4.le", 0x45),
    ("f32x4.ge", 0x46),
    ("f64x2.eq", 0x47), ("f64x2.ne", 0x48), ("f64x2.lt", 0x49), ("f64x2.gt", 0x4A), ("f64x2.le", 0x4B),
    ("f64x2.ge", 0x4C),
    ("v128.not", 0x4D), ("v128.and", 0x4E), ("v128.andnot", 0x4F), ("v128.or", 0x50), ("v128.xor", 0x51),
    ("v128.bitselect", 0x52), ("v128.any_true", 0x53),
    ("f32x4.demote_f64x2_zero", 0x5E), ("f64x2.promote_low_f32x4", 0x5F),
    ("i8x16.abs", 0x60), ("i8x16.neg", 0x61), ("i8x16.popcnt", 0x62), ("i8x16.all_true", 0x63),
    ("i8x16.bitmask", 0x64), ("i8x16.narrow_i16x8_s", 0x65), ("i8x16.narrow_i16x8_u", 0x66),
    ("f32x4.ceil", 0x67), ("f32x4.floor", 0x68), ("f32x4.trunc", 0x69), ("f32x4.nearest", 0x6A),
    ("i8x16.shl", 0x6B), ("i8x16.shr_s", 0x6C), ("i8x16.shr_u", 0x6D), ("i8x16.add", 0x6E),
    ("i8x16.add_sat_s", 0x6F), ("i8x16.add_sat_u", 0x70), ("i8x16.sub", 0x71), ("i8x16.sub_sat_s", 0x72),
    ("i8x16.sub_sat_u", 0x73), ("f64x2.ceil", 0x74), ("f64x2.floor", 0x75), ("i8x16.min_s", 0x76),
    ("i8x16.min_u", 0x77), ("i8x16.max_s", 0x78), ("i8x16.max_u", 0x79), ("f64x2.trunc", 0x7A),
    ("i8x16.avgr_u", 0x7B), ("i16x8.extadd_pairwise_i8x16_s", 0x7C), ("i16x8.extadd_pairwise_i8x16_u", 0x7D),
    ("i32x4.extadd_pairwise_i16x8_s", 0x7E), ("i32x4.extadd_pairwise_i16x8_u", 0x7F),
    ("i16x8.abs", 0x80), ("i16x8.neg", 0x81), ("i16x8.q15mulr_sat_s", 0x82), ("i16x8.all_true", 0x83),
    ("i16x8.bitmask", 0x84), ("i16x8.narrow_i32x4_s", 0x85), ("i16x8.narrow_i32x4_u", 0x86),
    ("i16x8.extend_low_i8x16_s", 0x87), ("i16x8.extend_high_i8x16_s", 0x88),
    ("i16x8.extend_low_i8x16_u", 0x89), ("i16x8.extend_high_i8x16_u", 0x8A),
    ("i16x8.shl", 0x8B), ("i16x8.shr_s", 0x8C), ("i16x8.shr_u", 0x8D), ("i16x8.add", 0x8E),
    ("i16x8.add_sat_s", 0x8F), ("i16x8.add_sat_u", 0x90), ("i16x8.sub", 0x91), ("i16x8.sub_sat_s", 0x92),
    ("i16x8.sub_sat_u", 0x93), ("f64x2.nearest", 0x94), ("i16x8.mul", 0x95), ("i16x8.min_s", 0x96),
    ("i16x8.min_u", 0x97), ("i16x8.max_s", 0x98), ("i16x8.max_u", 0x99), ("i16x8.avgr_u", 0x9B),
    ("i16x8.extmul_low_i8x16_s", 0x9C), ("i16x8.extmul_high_i8x16_s", 0x9D),
    ("i16x8.extmul_low_i8x16_u", 0x9E), ("i16x8.extmul_high_i8x16_u", 0x9F),
    ("i32x4.abs", 0xA0), ("i32x4.neg", 0xA1), ("i32x4.all_true", 0xA3), ("i32x4.bitmask", 0xA4),
    ("i32x4.extend_low_i16x8_s", 0xA7), ("i32x4.extend_high_i16x8_s", 0xA8),
    ("i32x4.extend_low_i16x8_u", 0xA9), ("i32x4.extend_high_i16x8_u", 0xAA),
    ("i32x4.shl", 0xAB), ("i32x4.shr_s", 0xAC), ("i32x4.shr_u", 0xAD), ("i32x4.add", 0xAE), ("i32x4.sub", 0xB1),
    ("i32x4.mul", 0xB5), ("i32x4.min_s", 0xB6), ("i32x4.min_u", 0xB7), ("i32x4.max_s", 0xB8),
    ("i32x4.max_u", 0xB9), ("i32x4.dot_i16x8_s", 0xBA),
    ("i32x4.extmul_low_i16x8_s", 0xBC), ("i32x4.extmul_high_i16x8_s", 0xBD),
    ("i32x4.extmul_low_i16x8_u", 0xBE), ("i32x4.extmul_high_i16x8_u", 0xBF),
    ("i64x2.abs", 0xC0), ("i64x2.neg", 0xC1), ("i64x2.all_true", 0xC3), ("i64x2.bitmask", 0xC4),
    ("i64x2.extend_low_i32x4_s", 0xC7), ("i64x2.extend_high_i32x4_s", 0xC8),
    ("i64x2.extend_low_i32x4_u", 0xC9), ("i64x2.extend_high_i32x4_u", 0xCA),
    ("i64x2.shl", 0xCB), ("i64x2.shr_s", 0xCC), ("i64x2.shr_u", 0xCD), ("i64x2.add", 0xCE), ("i64x2.sub", 0xD1),
    ("i64x2.mul", 0xD5), ("i64x2.eq", 0xD6), ("i64x2.ne", 0xD7), ("i64x2.lt_s", 0xD8), ("i64x2.gt_s", 0xD9),
    ("i64x2.le_s", 0xDA), ("i64x2.ge_s", 0xDB),
    ("i64x2.extmul_low_i32x4_s", 0xDC), ("i64x2.extmul_high_i32x4_s", 0xDD),
    ("i64x2.extmul_low_i32x4_u", 0xDE), ("i64x2.extmul_high_i32x4_u", 0xDF),
    ("f32x4.abs", 0xE0), ("f32x4.neg", 0xE1), ("f32x4.sqrt", 0xE3), ("f32x4.add", 0xE4), ("f32x4.sub", 0xE5),
    ("f32x4.mul", 0xE6), ("f32x4.div", 0xE7), ("f32x4.min", 0xE8), ("f32x4.max", 0xE9), ("f32x4.pmin", 0xEA),
    ("f32x4.pmax", 0xEB),
    ("f64x2.abs", 0xEC), ("f64x2.neg", 0xED), ("f64x2.sqrt", 0xEF), ("f64x2.add", 0xF0), ("f64x2.sub", 0xF1),
    ("f64x2.mul", 0xF2), ("f64x2.div", 0xF3), ("f64x2.min", 0xF4), ("f64x2.max", 0xF5), ("f64x2.pmin", 0xF6),
    ("f64x2.pmax", 0xF7),
    ("i32x4.trunc_sat_f32x4_s", 0xF8), ("i32x4.trunc_sat_f32x4_u", 0xF9), ("f32x4.convert_i32x4_s", 0xFA),
    ("f32x4.convert_i32x4_u", 0xFB), ("i32x4.trunc_sat_f64x2_s_zero", 0xFC),
    ("i32x4.trunc_sat_f64x2_u_zero", 0xFD), ("f64x2.convert_low_i32x4_s", 0xFE),
    ("f64x2.convert_low_i32x4_u", 0xFF),
    # relaxed SIMD
    ("i8x16.relaxed_swizzle", 0x100), ("i32x4.relaxed_trunc_f32x4_s", 0x101),
    ("i32x4.relaxed_trunc_f32x4_u", 0x102), ("i32x4.relaxed_trunc_f64x2_s_zero", 0x103),
    ("i32x4.relaxed_trunc_f64x2_u_zero", 0x104), ("f32x4.relaxed_madd", 0x105), ("f32x4.relaxed_nmadd", 0x106),
    ("f64x2.relaxed_madd", 0x107), ("f64x2.relaxed_nmadd", 0x108), ("i8x16.relaxed_laneselect", 0x109),
    ("i16x8.relaxed_laneselect", 0x10A), ("i32x4.relaxed_laneselect", 0x10B),
    ("i64x2.relaxed_laneselect", 0x10C), ("f32x4.relaxed_min", 0x10D), ("f32x4.relaxed_max", 0x10E),
    ("f64x2.relaxed_min", 0x10F), ("f64x2.relaxed_max", 0x110), ("i16x8.relaxed_q15mulr_s", 0x111),
    ("i16x8.relaxed_dot_i8x16_i7x16_s", 0x112), ("i32x4.relaxed_dot_i8x16_i7x16_add_s", 0x113),
]


def _build_table() -> tuple[OpcodeRow, ...]:
    rows = [OpcodeRow(name, code, imms) for name, code, imms in _CORE]
    rows += [OpcodeRow(name, (byte,)) for name, byte in _NUMERIC]
    rows += [OpcodeRow(name, (0xFC, sub)) for name, sub in _SATURATING]
    rows += [OpcodeRow(name, (0xFD, sub), imms) for name, sub, imms in _SIMD_WITH_IMMEDIATES]
    rows += [OpcodeRow(name, (0xFD, sub)) for name, sub in _SIMD]
    return tuple(rows)


#: every instruction, core first, then SIMD and relaxed SIMD
WASM_OPCODES: tuple[OpcodeRow, ...] = _build_table()
#: rows by name
OPCODE_BY_NAME: dict[str, OpcodeRow] = {row.name: row for row in WASM_OPCODES}
#: rows by opcode tuple
OPCODE_BY_CODE: dict[tuple[int, ...], OpcodeRow] = {row.code: row for row in WASM_OPCODES}

if len(OPCODE_BY_NAME) != len(WASM_OPCODES) or len(OPCODE_BY_CODE) != len(WASM_OPCODES):
    raise AssertionError("the WebAssembly opcode table repeats a name or an opcode")
