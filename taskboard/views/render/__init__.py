"""Views for people. Imported only when a person is reading: never on --json paths.

Every view is a rich renderable built from the records, so tests print it into a
recording console of any width and height; the `show_*` functions pick the console.
Views decide their layout at render time from the room they are given. User text
always enters rich as `Text`, never as markup, and every console here has markup off
as a second guard.

One colour language in every view (README "Colours"): what a person can act on (ready)
stands out in bold green; what waits (blocked) is quiet; what is finished is dim; work in
progress is cyan; red is kept for trouble (a cycle, a damaged file, a stale lease, a stuck
task, a failed gate). The symbols say the same without colour: ○ ready, ◐ in progress,
⊘ blocked, ✔ done, ✖ deleted, and `!` starts every word of trouble.

What the records do not hold (leases, failed attempts, gate results, journal events)
the command layer passes in as `facts`, task id → a dict (views.Notes says which keys);
a view given no facts shows what the records hold.

Plain mode (piped, NO_COLOR, TERM=dumb): no escape codes, the s12 markers instead
of coloured symbols, ASCII frames; `list` and `ready` write one unwrapped line per
task themselves, and summaries go to stderr.

One module a view: common (the colour language, consoles, summaries), svg (pictures),
tasklist (list, ready), board (board, board --watch), groups (board --by-parent), task
(get), graph, check, stats. Import the one you need.
"""
