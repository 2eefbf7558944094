"""Devices: starting JAX, the device mesh, many processes."""
