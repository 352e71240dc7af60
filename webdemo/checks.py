"""Checks of a program in text assembly: parse, verify, and round trips through every program form.

``check_program_text`` never raises for bad input: a program that does not
parse or verify becomes a failed ProgramCheck whose ``message`` is the
ProgramError's text (it names the line or the instruction), for the page to
show. Each round trip writes the program in one form, reads it back and
compares the digest of what came back with the original's.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable

from atlas_web import AtlasError, Program, ProgramError

import examples

__all__ = ["ROUND_TRIPS", "STAGE_PARSE", "STAGE_VERIFY", "STAGE_ROUND_TRIP", "STAGE_DONE", "FormCheck",
           "ProgramCheck", "check_program_text", "check_examples", "example_digests"]

STAGE_PARSE = "parse"
STAGE_VERIFY = "verify"
STAGE_ROUND_TRIP = "round trip"
#: the stage of a check that passed every step
STAGE_DONE = "done"

#: form name -> (write the program in that form, read the form back)
ROUND_TRIPS: dict[str, tuple[Callable[[Program], Any], Callable[[Any], Program]]] = {
    "text": (Program.to_text, Program.from_text),
    "bytecode": (Program.to_bytes, Program.from_bytes),
    "json": (Program.to_json, Program.from_json),
}


@dataclass(frozen=True)
class FormCheck:
    """One round trip: the form, the size of the written form, the digest read back, and whether it matches."""

    form: str
    encoded_size: int
    digest: str
    same: bool


@dataclass(frozen=True)
class ProgramCheck:
    """The outcome of checking one program text.

    ``stage`` is where it stopped (STAGE_DONE when every step passed);
    ``message`` says what is wrong (empty when ``ok``); ``digest`` is the parsed
    program's digest (None when it did not parse); ``seconds`` is the time of
    all the steps together.
    """

    ok: bool
    stage: str
    message: str
    digest: str | None
    instruction_count: int
    forms: tuple[FormCheck, ...]
    seconds: float
    program: Program | None = None

    @property
    def summary(self) -> str:
        """One line for the page: what passed, or where it failed and why."""
        if self.ok:
            forms = ", ".join(f.form for f in self.forms)
            return (f"parses and verifies: {self.instruction_count} instructions; round trips ({forms}) keep "
                    f"digest {self.digest[:16]}")
        return f"{self.stage} failed: {self.message}"


def _failed(stage: str, exc: BaseException, start: float, program: Program | None = None,
            forms: tuple[FormCheck, ...] = ()) -> ProgramCheck:
    # a documented error shows its own text; anything else is a bug worth naming by its type
    message = str(exc) if isinstance(exc, AtlasError) else f"{type(exc).__name__}: {exc}"
    return ProgramCheck(False, stage, message, program.digest() if program is not None else None,
                        len(program) if program is not None else 0, forms, time.perf_counter() - start, program)


def _round_trip(program: Program, form: str) -> FormCheck:
    write, read = ROUND_TRIPS[form]
    encoded = write(program)
    back = read(encoded)
    return FormCheck(form, len(encoded), back.digest(), back.digest() == program.digest() and back == program)


def check_program_text(text: str) -> ProgramCheck:
    """Parse ``text``, verify it and round-trip it through every form of ROUND_TRIPS; never raises."""
    start = time.perf_counter()
    try:
        program = Program.from_text(text)
    except Exception as exc:  # ProgramError expected; anything else is shown too rather than breaking the page
        return _failed(STAGE_PARSE, exc, start)
    try:
        program.verify()
    except Exception as exc:
        return _failed(STAGE_VERIFY, exc, start, program)
    forms: list[FormCheck] = []
    for form in ROUND_TRIPS:
        try:
            forms.append(_round_trip(program, form))
        except Exception as exc:
            return _failed(STAGE_ROUND_TRIP, exc, start, program, tuple(forms))
    bad = [f.form for f in forms if not f.same]
    if bad:
        error = ProgramError(f"the {', '.join(bad)} round trip changed the program")
        return _failed(STAGE_ROUND_TRIP, error, start, program, tuple(forms))
    return ProgramCheck(True, STAGE_DONE, "", program.digest(), len(program), tuple(forms),
                        time.perf_counter() - start, program)


def check_examples(size: int) -> list[tuple[examples.Example, ProgramCheck]]:
    """Every example of ``size`` elements with the check of its program text, in EXAMPLE_MODULES order."""
    out = []
    for example in examples.build_all(size):
        text = example.program if isinstance(example.program, str) else example.program.to_text()
        out.append((example, check_program_text(text)))
    return out


def example_digests(size: int) -> dict[str, dict[str, str | None]]:
    """example name -> {"program": digest of the parsed program, form: digest read back from that form}.

    Equal on every platform for the same ``size``: the browser test compares
    this dictionary computed under Pyodide with the one computed natively.
    """
    table: dict[str, dict[str, str | None]] = {}
    for example, check in check_examples(size):
        row: dict[str, str | None] = {"program": check.digest, "ok": "yes" if check.ok else check.message}
        row.update({form.form: form.digest for form in check.forms})
        table[example.name] = row
    return table
