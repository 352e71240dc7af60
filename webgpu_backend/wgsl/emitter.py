"""CodeWriter: WGSL statements with indentation, fresh temporaries and the shader's helper set.

Every rule writes through one of these: ``emit`` a line, ``temp`` to name a value once
(``let t3 = ...;``), ``helper`` to call a library function (it is added to the shader),
``block`` to open a ``{ ... }`` scope. ``ShaderFeatures`` says what the device offers (F16
rounding picks ``f16()`` with shader-f16, else ``pack2x16float``).
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass

from .library import HelperSet

__all__ = ["CodeWriter", "ShaderFeatures", "ENGINE_LIMIT_TRAP", "LLVMPIPE_LOOP_LIMIT"]

#: the trap code (not an Atlas TrapCode) of a lane that reached the engine's loop limit
ENGINE_LIMIT_TRAP = 15
#: backward jumps a lane may take per dispatch on llvmpipe (its limit of 65535 loop iterations,
#: less room for the loops of helpers)
LLVMPIPE_LOOP_LIMIT = 60000


@dataclass(frozen=True)
class ShaderFeatures:
    """What the generated WGSL may use and must respect: ``shader_f16`` (the device enabled
    shader-f16); ``loop_limit``: the loop iterations one lane may run per dispatch before the
    engine silently leaves its loops (Mesa's llvmpipe stops every loop after 65535 iterations of
    an invocation), or 0 for none; past it a lane stops with ENGINE_LIMIT_TRAP instead of
    producing wrong results."""

    shader_f16: bool = False
    loop_limit: int = 0

    @property
    def enable_directives(self) -> str:
        return "enable f16;\n" if self.shader_f16 else ""


class CodeWriter:
    """Lines of WGSL under construction, sharing ``helpers`` and ``features`` with its shader.
    ``vector``: the value rules' operands are vec4<f32>/vec4<u32> (the elementwise kernels' vec4 form)."""

    def __init__(self, helpers: HelperSet, features: ShaderFeatures, indent: int = 1) -> None:
        self.helpers = helpers
        self.features = features
        self.vector = False
        self.lines: list[str] = []
        self.level = indent
        self._temps = 0

    def emit(self, line: str) -> None:
        """Append one statement (or brace line) at the current indentation."""
        self.lines.append("    " * self.level + line)

    def temp(self, expr: str, prefix: str = "t") -> str:
        """``let <fresh name> = expr;`` and return the name."""
        self._temps += 1
        name = f"{prefix}{self._temps}"
        self.emit(f"let {name} = {expr};")
        return name

    def var(self, wgsl_type: str, init: str | None = None, prefix: str = "v") -> str:
        """``var <fresh name>: wgsl_type (= init);`` and return the name."""
        self._temps += 1
        name = f"{prefix}{self._temps}"
        self.emit(f"var {name}: {wgsl_type}" + (f" = {init};" if init is not None else ";"))
        return name

    def trap(self, code: object, condition: str, **numbers: object) -> None:
        """A run-time check. Plain writers make cooperative kernels, whose operands the host has
        checked, so a rule asking for a check there is a code-generator error: raises ProgramError."""
        from atlas_web.errors import ProgramError
        raise ProgramError(f"the webgpu code generator cannot emit the check for trap {code!r} outside lane code")

    def helper(self, name: str, param: int | None = None) -> str:
        """The WGSL name of library helper ``name`` (added to the shader with its dependencies)."""
        return self.helpers.require(name, param)

    @contextmanager
    def block(self, head: str):
        """``head {`` ... ``}`` with the body indented (head may be "" for a bare scope)."""
        self.emit(f"{head} {{" if head else "{")
        self.level += 1
        try:
            yield
        finally:
            self.level -= 1
            self.emit("}")

    def text(self) -> str:
        return "\n".join(self.lines)
