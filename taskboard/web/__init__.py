"""The board in a browser (`tasks serve`, DESIGN §12): server-rendered pages (the
kanban, the graph, a page per task, the journal), live updates over Server-Sent
Events, the CLI's own changes as POSTed forms, and MCP over streamable HTTP at /mcp.

    pages   what each page shows, as plain data (no web library): the view-model
    feed    when anything under the board changed: a generation the pages follow
    guard   who may talk to the server: Host, Origin, the per-start secret, the token
    actions a form turned into the CLI's change, under the board lock
    server  the ASGI app (Starlette), the change feed, and `serve` (uvicorn)

Only `tasks serve` imports this wing's server, and with it Starlette, uvicorn and
Jinja2 (the extra `web`); the plain install never does.
"""
