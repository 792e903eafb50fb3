"""The use cases the CLI and the Python API share (DESIGN.md § 7)."""
