"""Pure operations: GAE, PPO losses, minibatching."""
