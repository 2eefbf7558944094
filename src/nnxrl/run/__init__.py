"""The run: assembling, compiling and training a config, its directory, checkpoints and stops."""
