"""A trained agent: its saved policy, evaluation and rendering."""
