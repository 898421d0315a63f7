"""Kubernetes semantics as pure functions over plain JSON-like data (no I/O)."""
