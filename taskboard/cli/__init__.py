"""The command line: the click tree (parser), the fast path and entry point (app), the command bodies, the agents' subprocess loop (harness), one run's context (invocation)."""
