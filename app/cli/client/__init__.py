"""Client commands (tokens, acls) and what they share: options, ``--command-config``, the HTTP client, output."""
