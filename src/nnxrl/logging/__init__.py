"""Host-side metric logging: a queue, a writer thread, one backend per file."""
