"""One module per ``overlap`` subcommand, each exposing ``COMMAND`` (discovered)."""
