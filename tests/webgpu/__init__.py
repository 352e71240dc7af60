"""Real GPU tests of the WebGPU backend's driver (Mesa lavapipe where no GPU exists)."""
