"""Configuration: the layers (built-in defaults, user, trusted repository, environment, flags) merged into one."""
