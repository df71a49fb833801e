"""The evaluator service of separate-user mode: protocol, server, client, and which evaluator a command reaches."""
