"""The use cases the CLI and the Python API share (docs/readme/api.md)."""
