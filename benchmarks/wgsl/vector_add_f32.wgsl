// Baseline: c = a + b over `params.n` f32 values, hand-written for benchmarks.
//
// Entry `add`: each invocation adds one full vec4 (16-byte loads and stores).
// Entry `add_tail`: the n % 4 values of a last partial vec4, component by
// component so nothing past n is written; dispatch it in the same submit.
// Buffers are bound as array<vec4<f32>>: their sizes must be multiples of 16
// bytes. The linear index spans a 3-D grid of workgroups (x + nx * (y + ny * z)),
// so more than 65535 workgroups can be dispatched: dispatch floor(n / 4) / 256
// workgroups (rounded up) split with resources.split_workgroups.

struct Params {
    n: u32,
}

@group(0) @binding(0) var<storage, read> a: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> b: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> c: array<vec4<f32>>;
@group(0) @binding(3) var<uniform> params: Params;

const WORKGROUP_SIZE: u32 = 256u;

// Full vec4s: one per invocation.
@compute @workgroup_size(256)
fn add(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let i = gid.x + (gid.y + gid.z * groups.y) * groups.x * WORKGROUP_SIZE;
    if (i < params.n / 4u) {
        c[i] = a[i] + b[i];
    }
}

// The n % 4 values of the last, partial vec4 (dispatch one workgroup, only when n % 4 != 0),
// kept out of `add` so that the hot kernel has no tail branch.
@compute @workgroup_size(1)
fn add_tail() {
    let last = params.n / 4u;
    for (var k = 0u; last * 4u + k < params.n; k++) {
        c[last][k] = a[last][k] + b[last][k];
    }
}
