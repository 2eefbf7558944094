"""Learning algorithms."""
