"""The thread counts every parallel result of the wasm backend is compared across (bit-identical)."""

THREAD_COUNTS = (1, 2, 3)
