"""The trial as recorded: its timeline (GRADING.md § Trial event timeline), views and inputs."""
