// Baseline: the f32 sum of `params.n` values, hand-written for benchmarks.
//
// Two passes, dispatched in one submit:
//   partial_sums  (bindings 0, 1, 3): P workgroups of 256 invocations; each
//                 invocation sums vec4s of `input` with a grid stride, the
//                 workgroup combines its 256 sums by a tree in workgroup memory
//                 and writes partials[workgroup] (P <= 65535, x only).
//   final_sum     (bindings 1, 2, 3): one workgroup sums the P = params.partial_count
//                 partials the same way and writes result[0].
// `input` is bound as array<vec4<f32>> (size a multiple of 16 bytes); the
// n % 4 values of a last partial vec4 are added by invocation 0 of workgroup 0.

struct Params {
    n: u32,
    partial_count: u32,
}

@group(0) @binding(0) var<storage, read> input: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> partials: array<f32>;
@group(0) @binding(2) var<storage, read_write> result: array<f32>;
@group(0) @binding(3) var<uniform> params: Params;

const WORKGROUP_SIZE: u32 = 256u;

var<workgroup> scratch: array<f32, WORKGROUP_SIZE>;

// Tree reduction of scratch[0..256) into scratch[0]; every invocation of the
// workgroup must call it (it holds barriers).
fn reduce_workgroup(local: u32, value: f32) -> f32 {
    scratch[local] = value;
    workgroupBarrier();
    for (var width = WORKGROUP_SIZE / 2u; width > 0u; width = width / 2u) {
        if (local < width) {
            scratch[local] = scratch[local] + scratch[local + width];
        }
        workgroupBarrier();
    }
    return scratch[0];
}

@compute @workgroup_size(256)
fn partial_sums(@builtin(local_invocation_index) local: u32,
                @builtin(workgroup_id) group: vec3<u32>,
                @builtin(num_workgroups) groups: vec3<u32>) {
    let full_vectors = params.n / 4u;
    let stride = groups.x * WORKGROUP_SIZE;
    var acc = vec4<f32>(0.0);
    for (var i = group.x * WORKGROUP_SIZE + local; i < full_vectors; i += stride) {
        acc += input[i];
    }
    var sum = (acc.x + acc.y) + (acc.z + acc.w);
    if (group.x == 0u && local == 0u) {
        for (var k = 0u; full_vectors * 4u + k < params.n; k++) {
            sum += input[full_vectors][k];
        }
    }
    let total = reduce_workgroup(local, sum);
    if (local == 0u) {
        partials[group.x] = total;
    }
}

@compute @workgroup_size(256)
fn final_sum(@builtin(local_invocation_index) local: u32) {
    var sum = 0.0;
    for (var i = local; i < params.partial_count; i += WORKGROUP_SIZE) {
        sum += partials[i];
    }
    let total = reduce_workgroup(local, sum);
    if (local == 0u) {
        result[0] = total;
    }
}
