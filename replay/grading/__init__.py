"""Grading a trial and retracing a corpus (GRADING.md): components, combine, grade, accounting."""
