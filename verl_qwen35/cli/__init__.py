"""The one command `verl-qwen35`, its subcommands, help, presets listing and error answers."""
