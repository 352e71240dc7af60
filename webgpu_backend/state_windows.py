"""Lane state over several buffers: the per-lane slots of a launch too large for one storage binding.

Between stages each lane keeps its live registers in slot-major words of the ``state`` buffer
(``state[slot * LANES + lane]``: a slot is LANES consecutive words). At 10M lanes a slot is 40 MB and
softmax's seven slots need 280 MB, over the 128 MiB ``maxStorageBufferBindingSize`` of lavapipe and
SwiftShader (and over the 256 MiB ``maxBufferSize`` some browsers and GPUs have). ``StateWindows`` then
splits the slots into windows of whole slots, each at most one binding and each its own buffer: window
``j`` holds slots ``j * per_window ...`` from byte 0 of its buffer and is bound as ``state`` (window 0,
the launcher's state buffer) or ``state<j>`` at binding ``FIRST_WINDOW_BINDING + j - 1``. No buffer
exceeds one binding, so ``maxBufferSize`` never limits the lane state; the number of storage bindings a
stage may have (``maxStorageBuffersPerShaderStage``) does (the launcher refuses more windows than that,
raising ExecutionFailed naming the limit). A slot's window is known when the shader is generated, so every
access names its window directly: the shaders of launches that fit one binding are unchanged.

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
    """``count`` windows of ``per_window`` slots (the last may hold fewer) of ``lanes`` words each."""

    lanes: int
    per_window: int
    count: int
    slots: int

    def word(self, slot: int) -> str:
        """The WGSL lvalue of lane ``lane_id``'s word of ``slot``."""
        window, within = divmod(slot, self.per_window)
        return f"{self.name(window)}[{within}u * {self.lanes}u + lane_id]"

    def slot_byte(self, slot: int) -> tuple[int, int]:
        """(window, byte offset in that window's buffer) of lane 0's word of ``slot``."""
        window, within = divmod(slot, self.per_window)
        return window, 4 * within * self.lanes

    @staticmethod
    def name(window: int) -> str:
        return "state" if window == 0 else f"state{window}"

    @staticmethod
    def binding(window: int) -> int:
        """The binding of window ``window`` in a stage shader."""
        return 3 if window == 0 else FIRST_WINDOW_BINDING + window - 1

    def sizes(self) -> list[int]:
        """The bytes of each window (its buffer's bytes in use), window 0 first."""
        return [4 * self.lanes * min(self.per_window, self.slots - j * self.per_window) for j in range(self.count)]


def plan_state_windows(slots: int, lanes: int, binding_limit: int) -> StateWindows | None:
    """Windows for ``slots`` slots of ``lanes`` lanes under ``binding_limit`` bytes a binding (and a buffer);
    None when one slot alone exceeds a binding (nothing fits)."""
    per_window = binding_limit // (4 * lanes)
    if per_window < 1:
        return None
    per_window = min(per_window, slots)
    return StateWindows(lanes, per_window, -(-slots // per_window), slots)
