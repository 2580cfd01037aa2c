"""Pictures: a rendered view as an SVG file (`--svg`, make pictures)."""

from __future__ import annotations

import io
import os
import sys
from xml.sax.saxutils import escape as xml_escape

from rich.cells import cell_len
from rich.color import blend_rgb
from rich.console import Console, RenderableType
from rich.style import Style
from rich.terminal_theme import SVG_EXPORT_THEME

from ...core.errors import UsageError

# -- pictures ---------------------------------------------------------------------------

SVG_WIDTH = 100  # pictures written when stdout is no terminal (make pictures) get a fixed width


def write_svg(renderable: RenderableType, path: str, title: str) -> None:
    """The picture of a view: always in colour, as wide as the terminal, or SVG_WIDTH
    when there is none (so `make pictures` gives the same file every time)."""
    width = os.get_terminal_size(sys.stdout.fileno()).columns if stdout_is_terminal() else SVG_WIDTH
    try:
        with open(path, "w", encoding="utf-8") as out:
            out.write(svg_picture(renderable, width, title))
    except OSError as exc:
        raise UsageError(f"cannot write the SVG to {path}: {exc.strerror}") from None


def stdout_is_terminal() -> bool:
    try:
        return sys.stdout.isatty() and os.get_terminal_size(sys.stdout.fileno()).columns > 0
    except (OSError, ValueError, AttributeError):
        return False


# An SVG renders the same in librsvg, Chromium and Firefox only if nothing depends on the
# font the viewer picks: every character is placed at its own cell (an `x` per glyph, so a
# fallback font with other advances cannot run `#4` into `Port`), and frames and tree
# guides are drawn as lines, not box-drawing glyphs (which fallback fonts size unevenly).
SVG_FONTS = "'DejaVu Sans Mono', Menlo, Consolas, 'Liberation Mono', 'Noto Sans Mono', monospace"
SVG_CELL = 8.4  # px per cell: 0.6 em, the advance of the common monospace fonts at 14 px
SVG_LINE = 18.0  # px per line
SVG_FONT_SIZE = 14
SVG_MARGIN = 16.0
SVG_BASELINE = 13.0  # px from a line's top to the baseline of its text
# box-drawing characters as the arms they draw: (up, right, down, left), 1 light, 2 heavy
_BOX_ARMS = {
    "─": (0, 1, 0, 1),
    "│": (1, 0, 1, 0),
    "┌": (0, 1, 1, 0),
    "┐": (0, 0, 1, 1),
    "└": (1, 1, 0, 0),
    "┘": (1, 0, 0, 1),
    "├": (1, 1, 1, 0),
    "┤": (1, 0, 1, 1),
    "┬": (0, 1, 1, 1),
    "┴": (1, 1, 0, 1),
    "┼": (1, 1, 1, 1),
    "━": (0, 2, 0, 2),
    "┃": (2, 0, 2, 0),
    "┏": (0, 2, 2, 0),
    "┓": (0, 0, 2, 2),
    "┗": (2, 2, 0, 0),
    "┛": (2, 0, 0, 2),
    "┣": (2, 2, 2, 0),
    "┫": (2, 0, 2, 2),
    "┳": (0, 2, 2, 2),
    "┻": (2, 2, 0, 2),
    "╋": (2, 2, 2, 2),
    "╴": (0, 0, 0, 1),
    "╵": (1, 0, 0, 0),
    "╶": (0, 1, 0, 0),
    "╷": (0, 0, 1, 0),
}
_ROUNDED = {"╭": (0, 1, 1, 0), "╮": (0, 0, 1, 1), "╯": (1, 0, 0, 1), "╰": (1, 1, 0, 0)}
_STROKES = {1: 1.2, 2: 2.4}


def _number(value: float) -> str:
    return f"{value:.2f}".rstrip("0").rstrip(".")


def _xml_text(text: str) -> str:
    """User text as XML character data: escaped, and without the characters XML forbids."""
    kept = "".join(
        char
        if char in "\t\n\r" or 0x20 <= ord(char) <= 0xD7FF or 0xE000 <= ord(char) <= 0xFFFD or ord(char) > 0xFFFF
        else "\ufffd"
        for char in text
    )
    return xml_escape(kept, {'"': "&quot;"})


class _Canvas:
    """An SVG drawn cell by cell: backgrounds as rectangles, box drawing as merged
    strokes, text as `<text>` runs with an `x` for every glyph."""

    def __init__(self) -> None:
        self.theme = SVG_EXPORT_THEME
        self.rects: list[str] = []
        self.texts: list[str] = []
        self.curves: list[str] = []
        # (direction, line position, colour, weight) -> stretches along it
        self.strokes: dict[tuple[str, float, str, int], list[tuple[float, float]]] = {}

    def colours(self, style: Style) -> tuple[str, str | None]:
        """Foreground and background as the terminal theme shows them (dim blends in)."""
        background = self.theme.background_color
        fore = style.color.get_truecolor(self.theme, True) if style.color else self.theme.foreground_color
        back = style.bgcolor.get_truecolor(self.theme, False) if style.bgcolor else None
        if style.reverse:
            fore, back = back or background, fore
        if style.dim:
            fore = blend_rgb(fore, back or background, 0.4)
        return fore.hex, back.hex if back else None

    def text(self, run: list[tuple[int, str]], style: Style, top: float) -> None:
        if not run:
            return
        fill, _ = self.colours(style)
        xs = " ".join(_number(SVG_MARGIN + column * SVG_CELL) for column, _ in run)
        weight = ' font-weight="bold"' if style.bold else ""
        glyphs = _xml_text("".join(text for _, text in run))
        self.texts.append(f'<text x="{xs}" y="{_number(top + SVG_BASELINE)}" fill="{fill}"{weight}>{glyphs}</text>')
        run.clear()

    def box(self, char: str, column: int, top: float, colour: str) -> None:
        """A box-drawing character as strokes from the cell's centre to its edges."""
        left = SVG_MARGIN + column * SVG_CELL
        middle, right = left + SVG_CELL / 2, left + SVG_CELL
        centre, bottom = top + SVG_LINE / 2, top + SVG_LINE
        if char in _ROUNDED:
            up, east, _, _ = _ROUNDED[char]
            x_end, y_end = (right if east else left), (top if up else bottom)
            self.curves.append(
                f'<path d="M{_number(x_end)} {_number(centre)} Q{_number(middle)} {_number(centre)} '
                f'{_number(middle)} {_number(y_end)}" stroke="{colour}" stroke-width="{_STROKES[1]}" fill="none"/>'
            )
            return
        up, east, down, west = _BOX_ARMS[char]
        for weight, direction, at, stretch in (
            (west, "h", centre, (left, middle)),
            (east, "h", centre, (middle, right)),
            (up, "v", middle, (top, centre)),
            (down, "v", middle, (centre, bottom)),
        ):
            if weight:
                self.strokes.setdefault((direction, at, colour, weight), []).append(stretch)

    def row(self, segments: list[tuple[str, Style]], top: float) -> None:
        column = 0
        for text, style in segments:
            fill, back = self.colours(style)
            start = column
            run: list[tuple[int, str]] = []  # (column, glyph cluster) drawn as one <text>
            for char in text:
                size = cell_len(char)
                if size == 0 and run:  # a combining mark joins the glyph before it
                    run[-1] = (run[-1][0], run[-1][1] + char)
                    continue
                astral = len(char.encode("utf-16-le")) > 2  # outside the BMP: its own element
                if char == " " or char in _BOX_ARMS or char in _ROUNDED or astral:
                    self.text(run, style, top)
                if char in _BOX_ARMS or char in _ROUNDED:
                    self.box(char, column, top, fill)
                elif char != " ":
                    run.append((column, char))
                    if astral:
                        self.text(run, style, top)
                column += size
            self.text(run, style, top)
            if back and column > start:
                self.rects.append(
                    f'<rect x="{_number(SVG_MARGIN + start * SVG_CELL)}" y="{_number(top)}" '
                    f'width="{_number((column - start) * SVG_CELL)}" height="{_number(SVG_LINE)}" fill="{back}"/>'
                )

    def lines(self) -> list[str]:
        """The strokes, touching stretches merged so that no seam shows between cells."""
        drawn = []
        for (direction, at, colour, weight), stretches in sorted(self.strokes.items()):
            merged: list[list[float]] = []
            for begin, end in sorted(stretches):
                if merged and begin <= merged[-1][1] + 0.01:
                    merged[-1][1] = max(merged[-1][1], end)
                else:
                    merged.append([begin, end])
            path = " ".join(
                f"M{_number(begin)} {_number(at)}H{_number(end)}"
                if direction == "h"
                else f"M{_number(at)} {_number(begin)}V{_number(end)}"
                for begin, end in merged
            )
            drawn.append(f'<path d="{path}" stroke="{colour}" stroke-width="{_STROKES[weight]}" fill="none"/>')
        return drawn


def svg_picture(renderable: RenderableType, width: int, title: str) -> str:
    """The view as a standalone SVG: a dark terminal-like card with `$ <title>` on top."""
    picture = Console(
        file=io.StringIO(),
        width=width,
        force_terminal=True,
        color_system="truecolor",
        highlight=False,
        emoji=False,
        markup=False,
        legacy_windows=False,
    )
    lines = picture.render_lines(renderable, picture.options, pad=False)
    while lines and not "".join(segment.text for segment in lines[-1]).strip():
        lines.pop()
    grid: list[list[tuple[str, Style]]] = [[(f"$ {title}", Style(dim=True))], []]
    grid += [[(segment.text, segment.style or Style()) for segment in line] for line in lines]
    canvas = _Canvas()
    for row, segments in enumerate(grid):
        canvas.row(segments, SVG_MARGIN + row * SVG_LINE)
    columns = max([width] + [sum(cell_len(text) for text, _ in line) for line in grid])
    total_width = _number(2 * SVG_MARGIN + columns * SVG_CELL)
    total_height = _number(2 * SVG_MARGIN + len(grid) * SVG_LINE)
    size = f'width="{total_width}" height="{total_height}"'
    return "\n".join(
        [
            f'<svg xmlns="http://www.w3.org/2000/svg" {size} viewBox="0 0 {total_width} {total_height}" '
            f'role="img" aria-label="{_xml_text(title)}">',
            f"<title>{_xml_text(title)}</title>",
            f'<rect {size} rx="8" fill="{canvas.theme.background_color.hex}"/>',
            *canvas.rects,
            *canvas.lines(),
            *canvas.curves,
            f'<g font-family="{SVG_FONTS}" font-size="{SVG_FONT_SIZE}">',
            *canvas.texts,
            "</g>",
            "</svg>",
            "",
        ]
    )
