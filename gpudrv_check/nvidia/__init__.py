"""GPU Operator semantics as pure functions (no I/O)."""
