"""Sections of the markdown report, one module each (see report/markdown.py)."""
