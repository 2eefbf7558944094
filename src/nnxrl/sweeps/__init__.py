"""Sweeps: the settings a sweep section describes, groups of programs, reports."""
