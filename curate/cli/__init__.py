"""The `curate` command: one module per subcommand, listed in `main.COMMANDS`."""
