"""kiln-bench: Kiln's benchmark driver (docs/kiln-bench.md)."""
