"""Launcher: runs a CompiledProgram on the device, stage after stage, in as few submissions as it can.

A launch is a sequence of *steps* (a stage dispatch, or a cooperative kernel) encoded into one
submission while the next step is known without looking at the device: a stage with exactly
one cooperative exit is followed by that step's kernel and the stage entered after it; each
dispatch guards itself on the device (``launch.expect``: the previous step reached this one,
nothing trapped), so steps after a trap or after every lane ended do nothing. The host reads
the device back (a *sync*) only where it must: a stage with several exits, a host step (pool
allocation and release, kernels whose addresses are in lane 0's registers), a full submission,
and at the end when the program may trap. A program that cannot trap and needs no sync is
submitted without any read back.

The procedure is a generator yielding read requests, so ``run`` (blocking reads) and
``run_async`` (awaited reads) share it. Raises AtlasTrap (a lane's or a cooperative step's
trap), AllocationFailed (scratch memory), ExecutionFailed (limits).

A launch that read nothing back and ran no host step is *recorded* (its buffer writes and
clears, and its dispatches with their bind groups resolved) under (program digest, launch
shape, presets, budget, memory and scratch generations); the same launch again replays the
record (cached launches cost a buffer write or two and one submission of host time). The
launch slots are written only when they differ from what the buffer holds.
"""

from __future__ import annotations

import dataclasses
import struct
from dataclasses import dataclass

from atlas_web.cache import ProgramCache
from atlas_web.errors import ExecutionFailed
from atlas_web.launch import LaunchConfig
from atlas_web.trap_report import program_trap

from .compiler import CompiledProgram, CooperativePlan
from .state_windows import StateWindows
from atlas_web.isa.extents import array_operands

from .host_steps import binding_roles, kernel_operands
from .resources import BufferBinding, BufferUsage, DispatchCommand, as_layout, split_workgroups
from .wgsl import FIRST_CHUNK_BINDING, ShaderFeatures
from .wgsl.emitter import ENGINE_LIMIT_TRAP
from .wgsl.kernels.shader import MAX_GROUPS, SNAPSHOT_LAYOUT, SNAPSHOT_SOURCE, WORKGROUP
from .wgsl.kernels import DeviceLimits
from .wgsl.lane_state import vreg_words
from .wgsl.rules_atlas import RES_WORDS
from .wgsl.runtime_layout import (
    KERNEL_TRAP, LAUNCH_SLOT_BYTES, MAX_STEPS, NO_TRAP, REACHED, TRAP_WORDS, TRAPS, pack_launch,
)

__all__ = ["Launcher", "LaunchOutcome"]

_STORAGE = BufferUsage.STORAGE | BufferUsage.COPY_SRC | BufferUsage.COPY_DST
#: the largest budget the u32 counters of the shaders hold
_MAX_BUDGET = 0xFFFFFFFE
#: recorded launches kept per launcher
_MAX_RECORDS = 64
#: what each scratch buffer holds, for the message of a launch too large for the device
_SCRATCH_WHAT = {"rt": "runtime words (a trap record of 28 bytes per lane)",
                 "state": "lane state (the registers each lane keeps between stages)",
                 "work": "kernel work memory (FFT of an n that is not a power of two: Bluestein's padded items)"}
#: stage and kernel pipelines kept per launcher (an evicted one is released: see Launcher._release)
_MAX_PIPELINES = 256


@dataclass
class LaunchOutcome:
    """What a finished launch leaves for the host: where its ResAccum sums are (or None)."""

    resonance_offset: int | None


class _Read:
    """A read request yielded by the launch procedure: ``size`` bytes of ``buffer`` at ``offset``."""

    __slots__ = ("buffer", "offset", "size")

    def __init__(self, buffer, offset: int, size: int) -> None:
        self.buffer, self.offset, self.size = buffer, offset, size


class _Recorder:
    """The device operations of one launch, done at once and recorded for a replay:
    ("write", buffer, offset, bytes), ("clear", buffer, offset, size), ("submit", resolved dispatches).
    ``replayable`` turns False when the launch reads back or runs a host step."""

    def __init__(self, launcher: "Launcher") -> None:
        self.launcher = launcher
        self.ops: list[tuple] = []
        self.replayable = True

    def write(self, buffer, offset: int, data: bytes) -> None:
        self.ops.append(("write", buffer, offset, data))
        self.launcher._write(buffer, offset, data)

    def clear(self, buffer, offset: int, size: int) -> None:
        self.ops.append(("clear", buffer, offset, size))
        self.launcher.driver.clear_buffer(buffer, offset, size)

    def dispatch(self, commands: list) -> None:
        driver = self.launcher.driver
        driver.dispatch_many(commands)              # checks everything, then submits
        if self.replayable:
            # the driver's own resolution (checked bindings, cached bind group), kept with the record
            self.ops.append(("submit", [driver._resolve_dispatch(k, c) for k, c in enumerate(commands)]))


class Launcher:
    """Scratch buffers, pipeline cache and the launch procedure of one WebGpuBackend."""

    def __init__(self, driver, memory, features: ShaderFeatures) -> None:
        self.driver = driver
        self.memory = memory
        self.features = features
        self.launch_slots = driver.create_buffer(MAX_STEPS * LAUNCH_SLOT_BYTES,
                                                 BufferUsage.STORAGE | BufferUsage.COPY_DST)
        self.rt = driver.create_buffer(4096, _STORAGE)
        self.state = driver.create_buffer(16, _STORAGE)
        #: the buffers of lane-state windows 1, 2, ... (window 0 is ``state``; see state_windows)
        self.state_windows: list = []
        self.partials = driver.create_buffer(MAX_GROUPS * 8, _STORAGE)
        #: a kernel's own work memory (Kernel.scratch)
        self.work = driver.create_buffer(16, _STORAGE)
        #: copies of source arrays that overlap their destination (per role)
        self.snapshot_src_a = driver.create_buffer(16, _STORAGE)
        self.snapshot_src_b = driver.create_buffer(16, _STORAGE)
        self.max_groups = driver.limit("maxComputeWorkgroupsPerDimension")
        self.bind_alignment = driver.limit("minStorageBufferOffsetAlignment")
        self._pipelines = ProgramCache(_MAX_PIPELINES, plain_keys=True,
                                       on_evict=lambda _key, pipeline: self._release(pipeline))
        self.device = DeviceLimits(self.max_groups, self.bind_alignment)
        #: increases whenever a scratch buffer is replaced (recorded bind groups name the old one)
        self.generation = 0
        self._records = ProgramCache(_MAX_RECORDS, plain_keys=True)   # record key -> (ops, outcome)
        #: what the launch slots buffer holds from its start
        self._slots_held = b""
        #: scratch buffers replaced, still named by commands not yet submitted
        self._retired: list = []

    # ---- scratch buffers -----------------------------------------------------------------------
    def _ensure(self, name: str, size: int, lanes: int | None = None) -> None:
        """Grow scratch buffer ``name`` to ``size`` bytes. Raises ExecutionFailed past the binding limit, saying
        what it holds and, for a per-lane buffer of a launch of ``lanes`` lanes, about how many lanes of this
        program fit."""
        buffer = getattr(self, name)
        if buffer.size >= size:
            return
        limit = self.driver.limit("maxStorageBufferBindingSize")
        if size > limit:
            fit = (f"; about {lanes * limit // size:,} lanes of this program fit" if lanes else
                   " (split the instruction's batch over several launches)" if name == "work" else " (use fewer lanes)")
            raise ExecutionFailed(f"the launch{f' of {lanes:,} lanes' if lanes else ''} needs {size:,} bytes of "
                                  f"{_SCRATCH_WHAT.get(name, name + ' scratch')} in one binding; this device binds at "
                                  f"most {limit:,} bytes (maxStorageBufferBindingSize){fit}")
        setattr(self, name, self._grown(buffer, size, limit))

    def _grown(self, buffer, size: int, limit: int):
        """A new buffer of at least ``size`` bytes replacing ``buffer`` (retired): doubled for the next growth,
        but never past ``limit``, what one binding allows."""
        self._retired.append(buffer)     # destroyed once the commands naming it are submitted
        self.generation += 1
        return self.driver.create_buffer(max(size, min(2 * buffer.size, limit)), _STORAGE)

    def _ensure_windows(self, windows: StateWindows) -> None:
        """One buffer per window after the first (window 0 is the state buffer, grown by ``_ensure``), each grown
        to its window's bytes (each at most one binding: plan_state_windows sized them)."""
        limit = self.driver.limit("maxStorageBufferBindingSize")
        for j, size in enumerate(windows.sizes()[1:]):
            if j == len(self.state_windows):
                self.state_windows.append(self.driver.create_buffer(size, _STORAGE))   # named by no record yet
            elif self.state_windows[j].size < size:
                self.state_windows[j] = self._grown(self.state_windows[j], size, limit)

    def _window_buffer(self, window: int):
        return self.state if window == 0 else self.state_windows[window - 1]

    def buffers(self) -> list:
        """Every GPU buffer the launcher holds: launch slots, runtime words, lane state and its windows, kernel
        partials and work memory, the snapshot copies, and replaced ones not yet destroyed. All its own: no
        scratch is shared with another launcher on the same driver."""
        return [self.launch_slots, self.rt, self.state, *self.state_windows, self.partials, self.work,
                self.snapshot_src_a, self.snapshot_src_b, *self._retired]

    def close(self) -> None:
        """Destroy every buffer of ``buffers()`` (work already submitted that uses one still finishes: WebGPU
        frees a buffer once that work is done) and drop the recorded launches naming them. The driver and its
        caches are left to their owner (other backends may share the driver). The launcher is unusable after
        (its buffers raise InvalidBuffer); WebGpuBackend.close calls this and refuses later calls itself."""
        for buffer in self.buffers():
            self.driver.destroy_buffer(buffer)
        self.state_windows.clear()
        self._retired.clear()
        self._records.clear()

    def _destroy_retired(self) -> None:
        for buffer in self._retired:
            self.driver.destroy_buffer(buffer)
        self._retired.clear()

    def _write(self, buffer, offset: int, data: bytes) -> None:
        if buffer is self.launch_slots:
            if offset == 0 and self._slots_held[:len(data)] == data:
                return                              # the device reads these slots only
            held = bytearray(self._slots_held.ljust(offset + len(data), b"\0"))
            held[offset:offset + len(data)] = data
            self._slots_held = bytes(held)
        self.driver.write_buffer(buffer, offset, data)

    def _replay(self, ops: list) -> None:
        driver = self.driver
        for op in ops:
            if op[0] == "write":
                self._write(op[1], op[2], op[3])
            elif op[0] == "clear":
                driver.clear_buffer(op[1], op[2], op[3])
            else:
                driver._check_open()
                driver._native_submit_dispatches(op[1])

    # ---- pipelines -----------------------------------------------------------------------------
    def _pipeline(self, key: tuple, source, layout: dict[int, str]):
        def build():
            module = self.driver.compile(source() if callable(source) else source)
            return self.driver.create_pipeline(module, "main", as_layout(layout))
        return self._pipelines.get_or_build(key, build)

    def _release(self, pipeline) -> None:
        """An evicted pipeline: dropped by the driver's caches and by the recorded launches that
        dispatch it, so the engine frees it (a later launch builds it again)."""
        if any(p is pipeline for p in self._pipelines.values()):
            return                                  # still cached under another key (the same source)
        self._records.remove_where(lambda _key, record: any(
            pipeline is dispatch[0] for op in record[0] if op[0] == "submit" for dispatch in op[1]))
        self.driver.release_pipeline(pipeline)

    @property
    def cache_sizes(self) -> dict[str, int]:
        """How many pipelines and recorded launches the launcher keeps, and the driver's cache sizes."""
        return {"launcher_pipelines": len(self._pipelines), "records": len(self._records),
                **self.driver.cache_sizes}

    def _stage_layout(self, windows: StateWindows | None) -> dict[int, str]:
        layout = {0: "read-only-storage", 1: "storage", 2: "read-only-storage", 3: "storage"}
        for k in range(len(self.memory.chunks)):
            layout[FIRST_CHUNK_BINDING + k] = "storage"
        for j in range(1, windows.count if windows else 1):
            layout[StateWindows.binding(j)] = "storage"
        return layout

    def _state_windows(self, compiled: CompiledProgram, config: LaunchConfig) -> StateWindows | None:
        """The windows of a launch's lane state (None: one binding). Raises ExecutionFailed when the
        windows need more storage bindings than a shader stage may have."""
        windows = compiled.state_windows(config, self.driver.limit("maxStorageBufferBindingSize"))
        if windows is not None:
            most = self.driver.limit("maxStorageBuffersPerShaderStage")
            if 4 + len(self.memory.chunks) + windows.count - 1 > most:
                raise ExecutionFailed(
                    f"the launch of {config.total_threads:,} lanes keeps its lane state in {windows.count} storage "
                    f"bindings; with {len(self.memory.chunks)} memory chunk(s) a stage would need "
                    f"{4 + len(self.memory.chunks) + windows.count - 1}, this device allows {most} "
                    "(maxStorageBuffersPerShaderStage); use fewer lanes")
        return windows

    def _stage_command(self, compiled: CompiledProgram, config: LaunchConfig, stage: int, slot: int,
                       windows: StateWindows | None = None) -> DispatchCommand:
        chunks = len(self.memory.chunks)
        shader = compiled.stage_shaders(config, self.features, chunks, windows)[stage]
        key = ("stage", compiled.digest, config, chunks, stage, self.features, windows)
        pipeline = self._pipeline(key, shader.source, self._stage_layout(windows))
        buffers = self.memory.chunk_buffers()
        bindings = {0: BufferBinding(self.launch_slots, slot * LAUNCH_SLOT_BYTES, LAUNCH_SLOT_BYTES), 1: self.rt,
                    2: self.memory.device_table, 3: self.state}
        for k, buffer in enumerate(buffers):
            bindings[FIRST_CHUNK_BINDING + k] = buffer
        for j, size in enumerate(windows.sizes() if windows else ()):
            bindings[StateWindows.binding(j)] = BufferBinding(self._window_buffer(j), 0, size)
        return DispatchCommand(pipeline, bindings, split_workgroups(config.num_blocks, self.max_groups))

    def _kernel_commands(self, dispatches, step: CooperativePlan, operands: dict,
                         slot: int) -> list[DispatchCommand]:
        launch = BufferBinding(self.launch_slots, slot * LAUNCH_SLOT_BYTES, LAUNCH_SLOT_BYTES)
        arrays = array_operands(step.instr)
        # a bound array: its bytes rounded up to 16 (whole vec4s), within its chunk (an extent read at launch: its
        # kernel binds whole chunks)
        spans = {role: max(16, -(-(array.nbytes or 0) // 16) * 16) for array, role in zip(arrays, binding_roles(arrays))}
        scratch = {"partials": self.partials, "work": self.work}
        commands = []
        for dispatch in dispatches:
            # first in a submission the host knows that nothing trapped and where the lanes are
            spec = dataclasses.replace(dispatch.shader, guarded=slot > 0)
            bindings = {0: launch, 1: self.rt}
            for binding in spec.layout():
                role = dispatch.bindings.get(binding)
                if role in scratch:
                    bindings[binding] = scratch[role]
                elif role is not None:
                    buffer, byte = operands[role]
                    bindings[binding] = (BufferBinding(buffer, byte, min(buffer.size - byte, spans[role]))
                                         if spec.bound else buffer)
            commands.append(DispatchCommand(self._kernel(spec), bindings, dispatch.workgroups))
        return commands

    def _kernel(self, spec):
        return self._pipeline(("kernel", spec, self.features), lambda: spec.source(self.features), spec.layout())

    # ---- the launch ----------------------------------------------------------------------------
    def _record_key(self, compiled: CompiledProgram, config: LaunchConfig, presets: dict, budget: int) -> tuple:
        return (compiled.digest, config, tuple(sorted(presets.items())), budget, self.memory.generation,
                self.memory.table_entries, self.generation)

    def _start(self, compiled: CompiledProgram, config: LaunchConfig, presets: dict, budget: int):
        """(recorded outcome or None, record key, recorder, procedure)."""
        key = self._record_key(compiled, config, presets, budget)
        record = self._records.get(key)
        if record is not None:
            self._replay(record[0])
            return record[1], key, None, None
        recorder = _Recorder(self)
        return None, key, recorder, self._procedure(compiled, config, presets, budget, recorder)

    def _keep(self, key: tuple, recorder: _Recorder, outcome: LaunchOutcome) -> LaunchOutcome:
        # not when a scratch buffer was replaced during the launch: the record would name the old one
        if recorder.replayable and key[-1] == self.generation:
            self._records.insert(key, (recorder.ops, outcome))
        return outcome

    def run(self, compiled: CompiledProgram, config: LaunchConfig, presets: dict, budget: int) -> LaunchOutcome:
        """Run one launch, blocking on the reads it needs. Raises as the module docstring says."""
        outcome, key, recorder, procedure = self._start(compiled, config, presets, budget)
        if outcome is not None:
            return outcome
        try:
            request = next(procedure)
            recorder.replayable = False
            while True:
                request = procedure.send(self.driver.read_buffer(request.buffer, request.offset, request.size))
        except StopIteration as done:
            return self._keep(key, recorder, done.value)

    async def run_async(self, compiled: CompiledProgram, config: LaunchConfig, presets: dict,
                        budget: int) -> LaunchOutcome:
        """As ``run``, awaiting the device instead of blocking the event loop: the GPU is awaited idle
        before the launch submits (a submission behind running work would block in the engine) and
        after it, so the launch has finished when this returns. A cancelled await leaves the work
        submitted so far running on the GPU (the next call waits for it)."""
        await self.driver.submit_and_wait_async()
        outcome, key, recorder, procedure = self._start(compiled, config, presets, budget)
        if outcome is None:
            try:
                request = next(procedure)
                recorder.replayable = False
                while True:
                    data = await self.driver.read_buffer_async(request.buffer, request.offset, request.size)
                    request = procedure.send(data)
            except StopIteration as done:
                outcome = self._keep(key, recorder, done.value)
        await self.driver.submit_and_wait_async()
        return outcome

    def _procedure(self, compiled: CompiledProgram, config: LaunchConfig, presets: dict, budget: int,
                   io: _Recorder):
        plan = compiled.plan
        windows = self._state_windows(compiled, config)
        shaders = compiled.stage_shaders(config, self.features, len(self.memory.chunks), windows)
        may_trap = (any(s.may_trap for s in shaders)
                    or any(step.kernel.traps_on_device for step in compiled.steps.values()))
        resonance = any(s.uses_resonance for s in shaders)
        runtime = compiled.runtime_layout(config, may_trap)
        self._ensure("rt", 4 * runtime.words, config.total_threads if may_trap else None)
        state_bytes, wide_offset, wide_bytes = compiled.state_layout(config, shaders, windows)
        self._ensure("state", state_bytes, config.total_threads)     # with windows: window 0's bytes
        if windows is not None:
            self._ensure_windows(windows)
        if wide_bytes:
            io.clear(self.state, wide_offset, wide_bytes)
        header = bytearray(4 * runtime.resonance)
        header[4 * TRAPS:4 * (TRAPS + MAX_STEPS)] = b"\xff" * (4 * MAX_STEPS)     # NO_TRAP
        for key, words in presets.items():
            base = 4 * (runtime.uniforms + compiled.state.uniform_words[key])
            header[base:base + 4 * len(words)] = struct.pack(f"<{len(words)}I", *words)
        io.write(self.rt, 0, header)
        if resonance:
            io.clear(self.rt, 4 * runtime.resonance, 4 * RES_WORDS)
        common = {"budget": min(budget, _MAX_BUDGET), "lanes": config.total_threads}
        slots: list[bytes] = []
        commands: list = []

        def add(fields: dict, dispatches) -> None:
            slots.append(pack_launch(**common, table_entries=self.memory.table_entries, step=len(slots), **fields))
            commands.extend(dispatches(len(slots) - 1))

        def submit():
            if commands:
                io.write(self.launch_slots, 0, b"".join(slots))
                io.dispatch(commands)
            self._destroy_retired()
            slots.clear()
            commands.clear()

        known_trap = [NO_TRAP]

        def sync():
            """Submit, then (trap lane, what the last step recorded as reached; -1 when nothing ran since
            the last sync, so the lanes are where that sync found them)."""
            last = len(slots) - 1
            if last < 0:
                return known_trap[0], -1
            submit()
            data = yield _Read(self.rt, 0, 4 * (REACHED + MAX_STEPS))
            words = struct.unpack(f"<{REACHED + MAX_STEPS}I", bytes(data))
            io.write(self.rt, 4 * REACHED, bytes(4 * MAX_STEPS))
            # the earliest step that trapped (no later step ran), its lowest lane
            known_trap[0] = next((lane for lane in words[TRAPS:TRAPS + last + 1] if lane != NO_TRAP), NO_TRAP)
            return known_trap[0], words[REACHED + last]

        stage, expect = plan.stages[0], 0
        if 0 in compiled.passes_to and compiled.multi_stage:
            # no first stage starts the lanes: their state (the flags word too: an earlier launch may have
            # left "ended" there) and the blocks' shared-memory copies start at zero
            if windows is None:
                backup, backup_bytes = compiled.shared_backup(config)
                io.clear(self.state, 0, max(4 * compiled.state.total_slots * config.total_threads, backup + backup_bytes))
            else:                   # no shared-memory copies with windows (compiled.state_windows)
                for j, size in enumerate(windows.sizes()):
                    io.clear(self._window_buffer(j), 0, size)
        while True:
            passing = compiled.passes_to.get(stage.id)
            if passing is None and stage.id not in compiled.empty_stages:
                add({"expect": expect},
                    lambda slot, s=stage.id: [self._stage_command(compiled, config, s, slot, windows)])
            exits = stage.cooperative_exits if passing is None else (passing,)
            if not exits:
                break
            step = compiled.steps[exits[0]] if len(exits) == 1 else None
            if step is not None and not step.host and len(slots) < MAX_STEPS - 2:
                # the kernel runs where the stage's lanes reached it: after a stage left out, its guard
                # is the one that stage would have checked
                resume = step.resume + 1
                operands = kernel_operands(self.memory, step, None)
                guard = expect if passing is not None else resume
                self._add_kernel(add, step, operands, {"expect": guard, "resume": resume}, runtime)
                stage, expect = plan.stage_entered_at(step.resume), resume
                continue
            if passing is not None and stage.id == 0:
                step = compiled.steps[passing]       # the first stage has no code: every lane stands there
            else:
                # where the lanes stopped (after a stage left out: whether the step before it ran at all)
                trapped, reached = yield from sync()
                if trapped != NO_TRAP or reached == 0:
                    break
                step = compiled.steps[passing if passing is not None else reached - 1]
            lane0 = (yield from self._lane_zero(compiled, config, step, windows)) if step.host else None
            stage = plan.stage_entered_at(step.resume)
            if step.kernel.host:
                io.replayable = False
                step.kernel.run_host(step, lane0, self.memory, self.driver, self.rt, 4 * runtime.uniforms)
                expect = 0   # nothing on the device records this step: the next stage runs unconditionally
            else:
                operands = kernel_operands(self.memory, step, lane0)
                self._add_kernel(add, step, operands, {"expect": 0, "resume": step.resume + 1}, runtime)
                expect = step.resume + 1
        if may_trap:
            trapped, _ = yield from sync()
            if trapped != NO_TRAP:
                # a kernel's own trap (lane -1) is recorded where lane 0's would be: no lane trapped before it
                record = 0 if trapped == KERNEL_TRAP else runtime.record_slot(trapped)
                info = yield _Read(self.rt, 4 * (runtime.trap_info_base + TRAP_WORDS * record), 4 * TRAP_WORDS)
                word, operand, handle, low, high, extent, limit = struct.unpack(f"<{TRAP_WORDS}I", bytes(info))
                index, code = word >> 4, word & 15
                name = compiled.info.program.instructions[index].INFO.name
                if code == ENGINE_LIMIT_TRAP:
                    raise ExecutionFailed(
                        f"lane {trapped} took more than {self.features.loop_limit} backward jumps in one dispatch "
                        f"(instruction {index}, {name}): this device ({self.driver.adapter_info()['device']}) "
                        "silently ends longer loops, so the launch cannot run here")
                raise program_trap(compiled.info.program, code, index, -1 if trapped == KERNEL_TRAP else trapped,
                                   (operand, handle, low | high << 32, extent, limit), budget=budget)
        else:
            submit()
        return LaunchOutcome(runtime.resonance if resonance else None)

    def _add_kernel(self, add, step: CooperativePlan, operands: dict, fields: dict, runtime) -> None:
        operands, snapshots = self._snapshots(step, operands) if step.kernel.snapshot_sources else (operands, [])
        for name, size in step.kernel.scratch(step.instr).items():
            self._ensure(name, size)
        plan = step.kernel.plan(step.instr, operands, self.device)
        if step.kernel.traps_on_device:
            fields.update(trap_info=runtime.trap_info_base, trap_index=step.index)
        if step.result is not None:
            fields["result"] = runtime.uniforms + step.result[1]
        add({**fields, **plan.fields},
            lambda slot: snapshots + self._kernel_commands(plan.dispatches, step, operands, slot))

    def _snapshots(self, step: CooperativePlan, operands: dict) -> tuple[dict, list[DispatchCommand]]:
        """Sources overlapping the destination at another offset, copied to scratch first: the
        operands the kernel reads instead, and the copy dispatches. Raises ExecutionFailed (scratch)."""
        if "dst" not in operands:
            return operands, []
        arrays = array_operands(step.instr)
        extents = {role: array.nbytes for array, role in zip(arrays, binding_roles(arrays))}
        dst_buffer, dst = operands["dst"]
        out, commands = dict(operands), []
        for role in operands:
            if role == "dst":
                continue
            buffer, byte = operands[role]
            nbytes = extents[role]
            if buffer is not dst_buffer or byte == dst or byte >= dst + extents["dst"] or dst >= byte + nbytes:
                continue
            start = byte - byte % self.bind_alignment
            size = min(buffer.size, -(-(byte + nbytes) // 4) * 4) - start
            name = f"snapshot_{role}"
            self._ensure(name, size)
            copy = getattr(self, name)
            groups = -(-size // 4 // WORKGROUP)
            pipeline = self._pipeline(("snapshot",), SNAPSHOT_SOURCE, SNAPSHOT_LAYOUT)
            commands.append(DispatchCommand(pipeline, {0: BufferBinding(buffer, start, size),
                                                       1: BufferBinding(copy, 0, size)},
                                            split_workgroups(groups, self.max_groups)))
            out[role] = (copy, byte - start)
        return out, commands

    def _lane_zero(self, compiled: CompiledProgram, config: LaunchConfig, step: CooperativePlan,
                   windows: StateWindows | None = None):
        """Lane 0's values of the registers ``step`` reads (path -> tuple of u32 words), read from lane state."""
        values = {}
        for path, vreg in step.reads.items():
            slot = compiled.state.slots.get(vreg.id)
            if slot is None:
                values[path] = (0,) * vreg_words(vreg)
                continue
            words = []
            for k in range(vreg_words(vreg)):
                window, byte = windows.slot_byte(slot + k) if windows else (0, 4 * (slot + k) * config.total_threads)
                data = yield _Read(self._window_buffer(window), byte, 4)
                words.append(struct.unpack("<I", bytes(data))[0])
            values[path] = tuple(words)
        return values

