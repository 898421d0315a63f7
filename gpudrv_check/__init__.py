"""gpudrv-check: offline policy checks for GPU clusters kept in Git."""

__version__ = "0.1.0"
