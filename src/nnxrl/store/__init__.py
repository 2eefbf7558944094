"""What a run keeps on disk: checkpoints, saved programs, the compile cache, the run's own
files written safely, and the lock that makes one process its writer."""
