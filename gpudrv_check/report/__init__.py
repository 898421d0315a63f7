"""Output formats: one module each, all rendered from the same findings."""
