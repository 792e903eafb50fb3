"""Graded Verdict Custody: a unit's evidence and its derived grade."""
