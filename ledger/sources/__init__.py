"""Importers: turn recorded evidence on disk into events (DESIGN.md § 7, issue 3).

``detect`` says what a PATH is, ``yaml_safe`` reads YAML within bounds, ``tolokaforge``
and ``verdict_core`` turn parsed files into :class:`~schemas.envelope.NewEvent` lists.
"""
