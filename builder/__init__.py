"""notes-portal builder: everything that writes (config, sources, parse, chunk, embed, index, sync, CLI)."""
