"""Importers: turn recorded evidence on disk into events (docs/readme/ingest.md).

``detect`` says what a PATH is, ``yaml_safe`` reads YAML within bounds, ``tolokaforge``
and ``verdict_core`` turn parsed files into :class:`~schemas.envelope.NewEvent` lists.
"""
