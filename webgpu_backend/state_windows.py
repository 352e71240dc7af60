"""Lane state over several bindings: the per-lane slots of a launch too large for one storage binding.

Between stages each lane keeps its live registers in slot-major words of the ``state`` buffer
(``state[slot * LANES + lane]``: a slot is LANES consecutive words). At 10M lanes a slot is 40 MB and
softmax's seven slots need 280 MB, over the 128 MiB ``maxStorageBufferBindingSize`` of lavapipe and
SwiftShader, whose ``maxBufferSize`` is far larger. ``StateWindows`` then splits the slots into windows
of whole slots, each at most one binding: window ``j`` holds slots ``j * per_window ...`` at byte
``j * stride`` of the one state buffer (``stride`` rounded up to ``minStorageBufferOffsetAlignment``) and is
bound as ``state`` (window 0) or ``state<j>`` at binding ``FIRST_WINDOW_BINDING + j - 1``. A slot's
window is known when the shader is generated, so every access names its window directly: the shaders of
launches that fit one binding are unchanged.

What cannot be windowed (then the launch is refused as before, saying how many lanes fit): the wide
register file and the blocks' shared-memory copies (their words are addressed at run time past the
slots), and registers wider than four words (their words are addressed in a loop).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["StateWindows", "plan_state_windows", "FIRST_WINDOW_BINDING"]

#: the binding of window 1 (window 0 keeps binding 3, ``state``); past every memory chunk's binding
FIRST_WINDOW_BINDING = 64


@dataclass(frozen=True)
class StateWindows:
    """``count`` windows of ``per_window`` slots of ``lanes`` words each, ``stride`` bytes apart."""

    lanes: int
    per_window: int
    stride: int
    count: int
    slots: int

    def word(self, slot: int) -> str:
        """The WGSL lvalue of lane ``lane_id``'s word of ``slot``."""
        window, within = divmod(slot, self.per_window)
        return f"{self.name(window)}[{within}u * {self.lanes}u + lane_id]"

    def slot_byte(self, slot: int) -> int:
        """The byte offset of lane 0's word of ``slot`` in the state buffer."""
        window, within = divmod(slot, self.per_window)
        return window * self.stride + 4 * within * self.lanes

    @staticmethod
    def name(window: int) -> str:
        return "state" if window == 0 else f"state{window}"

    def ranges(self) -> list[tuple[int, int]]:
        """(byte offset, bytes) of each window's binding, window 0 first."""
        return [(j * self.stride, 4 * self.lanes * min(self.per_window, self.slots - j * self.per_window))
                for j in range(self.count)]

    @property
    def total_bytes(self) -> int:
        offset, size = self.ranges()[-1]
        return offset + size


def plan_state_windows(slots: int, lanes: int, binding_limit: int, alignment: int) -> StateWindows | None:
    """Windows for ``slots`` slots of ``lanes`` lanes under ``binding_limit`` bytes a binding (offsets
    multiples of ``alignment``); None when one slot alone exceeds a binding (nothing fits)."""
    per_window = binding_limit // (4 * lanes)
    if per_window < 1:
        return None
    per_window = min(per_window, slots)
    stride = -(-(4 * lanes * per_window) // alignment) * alignment
    return StateWindows(lanes, per_window, stride, -(-slots // per_window), slots)
