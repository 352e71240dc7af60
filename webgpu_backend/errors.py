"""The WebGPU backend's error class for WGSL that an engine refuses.

Engine-neutral: naga (wgpu-py) and Tint (browsers) both report a message and,
usually, a line and column; drivers pass those here and the error shows the
offending WGSL line.
"""

from __future__ import annotations

from atlas_web.errors import ExecutionFailed

__all__ = ["ShaderCompilationError"]


class ShaderCompilationError(ExecutionFailed):
    """The engine refused WGSL: at module creation (``stage="module"``) or when building a
    pipeline from it (``stage="pipeline"``: a missing entry point, a layout that does not
    match the shader).

    Attributes: ``compiler_message`` (the engine's text, unchanged), ``line`` and
    ``column`` (1-based, None when the engine gave none), ``source_line`` (that WGSL
    line, or None), ``stage``, ``label`` (the module's label, a digest prefix).
    Derives from atlas_web.errors.ExecutionFailed: generated WGSL that does not
    validate is a code-generator failure, not a malformed Atlas program.
    """

    def __init__(self, compiler_message: str, *, source: str = "", line: int | None = None,
                 column: int | None = None, stage: str = "module", label: str = "") -> None:
        self.compiler_message = compiler_message
        self.line = line
        self.column = column
        self.stage = stage
        self.label = label
        lines = source.splitlines()
        self.source_line = lines[line - 1] if line is not None and 0 < line <= len(lines) else None
        super().__init__(self._render())

    def _render(self) -> str:
        what = "WGSL module" if self.stage == "module" else "compute pipeline"
        head = f"the {what}{f' {self.label}' if self.label else ''} did not compile"
        if self.line is not None:
            head += f" (line {self.line}" + (f", column {self.column})" if self.column is not None else ")")
        parts = [head + ": " + _summary(self.compiler_message)]
        if self.source_line is not None:
            gutter = f"{self.line} | "
            parts.append("  " + gutter + self.source_line)
            if self.column is not None and self.column >= 1:
                parts.append("  " + " " * (len(gutter) + self.column - 1) + "^")
        parts.append("compiler message:\n" + self.compiler_message.strip())
        return "\n".join(parts)

    def __reduce__(self):
        return (_rebuild, (self.compiler_message, self.line, self.column, self.stage, self.label, self.source_line))


def _rebuild(message, line, column, stage, label, source_line):
    source = "\n" * (line - 1) + source_line if line is not None and source_line is not None else ""
    return ShaderCompilationError(message, source=source, line=line, column=column, stage=stage, label=label)


def _summary(message: str) -> str:
    """The most specific one-line reason in an engine's multi-line message."""
    candidates = [ln.strip() for ln in message.strip().splitlines() if ln.strip()]
    for ln in reversed(candidates):
        if "error" in ln.lower() and ":" in ln and not ln.startswith(("In ", "Caused by")):
            return ln
    return candidates[-1] if candidates else "no message from the engine"
