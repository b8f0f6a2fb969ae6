"""Link graphs drawn at build time as inline SVG: every node a link, no script, no inline style.

Colours and fonts come from ``static/style.css`` through classes (so dark mode works and the
page's Content-Security-Policy, which forbids inline styles, holds). An arrow points from a note to
a note it links to. Pure functions of their data: the same data draws the same bytes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape

from builder.core import urls
from builder.core.messages import DEFAULT_LANGUAGE
from builder.core.messages import text as say
from builder.render.graph import Local

ARROW = "np-graph-arrow"  # the marker's id (one graph per page)
_DEFS = (f'<defs><marker id="{ARROW}" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
         'orient="auto-start-reverse"><path d="M0,0L10,5L0,10z"/></marker></defs>')


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"


def _num(value: float) -> str:
    return f"{value:.1f}"


# ---------------------------------------------------------------- one note's neighbourhood

LOCAL_W, LOCAL_H = 760, 400
RADIUS = {0: 9.0, 1: 7.0, 2: 5.0}
ORBIT = {1: (145.0, 105.0), 2: (240.0, 165.0)}  # ellipse radii of the rings
LABEL = {0: 30, 1: 24, 2: 18}  # characters of a title shown beside its node


@dataclass(frozen=True)
class _Place:
    x: float
    y: float
    angle: float


def _local_layout(local: Local) -> list[_Place]:
    """The note in the middle, ring 1 evenly around it, ring 2 fanned out behind each one's first parent."""
    cx, cy = LOCAL_W / 2, LOCAL_H / 2
    places = [_Place(cx, cy, math.pi / 2)]
    ring1 = [n for n in local.nodes if n.ring == 1]
    start = -math.pi / 2 if len(ring1) > 2 else 0.0
    step = 2 * math.pi / max(len(ring1), 1)
    for i, _ in enumerate(ring1):
        angle = start + i * step
        places.append(_Place(cx + ORBIT[1][0] * math.cos(angle), cy + ORBIT[1][1] * math.sin(angle), angle))
    children: dict[int, list[int]] = {}
    for i, node in enumerate(local.nodes):
        if node.ring == 2:
            children.setdefault(node.parent, []).append(i)
    spread = min(0.42, step / 2.5)
    for parent, members in children.items():
        for j, _ in enumerate(members):
            angle = places[parent].angle + (j - (len(members) - 1) / 2) * spread
            places.append(_Place(cx + ORBIT[2][0] * math.cos(angle), cy + ORBIT[2][1] * math.sin(angle), angle))
    return places


def _label(x: float, y: float, angle: float, radius: float, text: str, css: str) -> str:
    dx, dy = math.cos(angle), math.sin(angle)
    if abs(dx) < 0.35:  # above or below its node
        return (f'<text class="{css}" x="{_num(x)}" y="{_num(y + (radius + 14 if dy > 0 else -radius - 6))}" '
                f'text-anchor="middle">{escape(text)}</text>')
    anchor, tx = ("start", x + radius + 5) if dx > 0 else ("end", x - radius - 5)
    return f'<text class="{css}" x="{_num(tx)}" y="{_num(y + 4)}" text-anchor="{anchor}">{escape(text)}</text>'


def _line(a: _Place, b: _Place, ra: float, rb: float, both: bool, css: str) -> str:
    """A straight edge from the rim of ``a`` to the rim of ``b``, arrowed at ``b`` (both ends: ``both``)."""
    length = math.hypot(b.x - a.x, b.y - a.y) or 1.0
    ux, uy = (b.x - a.x) / length, (b.y - a.y) / length
    start = "" if not both else f' marker-start="url(#{ARROW})"'
    return (f'<line class="{css}" x1="{_num(a.x + ux * ra)}" y1="{_num(a.y + uy * ra)}" '
            f'x2="{_num(b.x - ux * (rb + 1))}" y2="{_num(b.y - uy * (rb + 1))}" marker-end="url(#{ARROW})"{start}/>')


def local_svg(local: Local, page_url: str, language: str = DEFAULT_LANGUAGE) -> str:
    """The picture of a note's neighbourhood for its page at ``page_url`` (site-relative)."""
    places = _local_layout(local)
    root = urls.root_of(page_url)  # site-relative URLs from this page (as the page's other links)
    pairs = set(local.edges)
    edges = []
    for a, b in local.edges:
        if (b, a) in pairs and a > b:
            continue  # drawn once, arrowed both ways
        ring = max(local.nodes[a].ring, local.nodes[b].ring)
        edges.append(_line(places[a], places[b], RADIUS[local.nodes[a].ring], RADIUS[local.nodes[b].ring],
                           (b, a) in pairs, f"edge ring{ring}"))
    nodes = []
    for node, place in zip(local.nodes, places, strict=True):
        radius = RADIUS[node.ring]
        circle = f'<circle cx="{_num(place.x)}" cy="{_num(place.y)}" r="{_num(radius)}"/>'
        if node.ring == 0:
            label = (f'<text class="label label0" x="{_num(place.x)}" y="{_num(place.y + radius + 18)}" '
                     f'text-anchor="middle">{escape(_short(node.title, LABEL[0]))}</text>')
            own = escape(say(language, "graph.this_note", title=node.title))
            nodes.append(f'<g class="node ring0"><title>{own}</title>{circle}{label}</g>')
            continue
        label = _label(place.x, place.y, place.angle, radius, _short(node.title, LABEL[node.ring]),
                       f"label label{node.ring}")
        href = escape(root + node.url)
        nodes.append(f'<a class="node ring{node.ring}" href="{href}"><title>{escape(node.title)}</title>'
                     f'{circle}{label}</a>')
    more = "" if not local.more else (f'<text class="label more" x="{LOCAL_W - 8}" y="{LOCAL_H - 10}" '
                                      f'text-anchor="end">{escape(say(language, "graph.more", n=local.more))}</text>')
    return (f'<svg class="graph graph-local" viewBox="0 0 {LOCAL_W} {LOCAL_H}" role="group" '
            f'aria-label="{escape(say(language, "graph.local_label", title=local.nodes[0].title))}">{_DEFS}'
            f'<g class="edges">{"".join(edges)}</g><g class="nodes">{"".join(nodes)}</g>{more}</svg>')


# ---------------------------------------------------------------- a whole source

SOURCE_SIZE = 900
SOURCE_RADIUS = 255.0
FOLDER_CLASSES = 8  # colours in the stylesheet: folder0 … folder7, by top-level folder


@dataclass(frozen=True)
class SourceNode:
    key: str
    title: str
    url: str
    folder: int  # the index of its top-level folder in the legend


def source_svg(nodes: list[SourceNode], edges: list[tuple[int, int]], page_url: str, labelled: set[int],
               language: str = DEFAULT_LANGUAGE) -> str:
    """Notes on a circle in path order (folders together), links as curves across it; ``labelled``:
    the nodes whose titles are written beside them (every node has its title as a tooltip)."""
    c = SOURCE_SIZE / 2
    root = urls.root_of(page_url)
    count = max(len(nodes), 1)
    places = []
    for i in range(len(nodes)):
        angle = -math.pi / 2 + 2 * math.pi * i / count
        places.append((c + SOURCE_RADIUS * math.cos(angle), c + SOURCE_RADIUS * math.sin(angle), angle))
    curves = []
    for a, b in edges:
        (x1, y1, _), (x2, y2, _) = places[a], places[b]
        qx, qy = c + ((x1 + x2) / 2 - c) * 0.35, c + ((y1 + y2) / 2 - c) * 0.35
        curves.append(f'<path class="edge folder{nodes[a].folder % FOLDER_CLASSES}" '
                      f'd="M{_num(x1)},{_num(y1)}Q{_num(qx)},{_num(qy)} {_num(x2)},{_num(y2)}"/>')
    drawn = []
    for i, (node, (x, y, angle)) in enumerate(zip(nodes, places, strict=True)):
        label = ""
        if i in labelled:
            degrees = math.degrees(angle)
            flip = math.cos(angle) < 0
            lx, ly = c + (SOURCE_RADIUS + 10) * math.cos(angle), c + (SOURCE_RADIUS + 10) * math.sin(angle)
            label = (f'<text class="label" x="{_num(lx)}" y="{_num(ly)}" dy="4" '
                     f'text-anchor="{"end" if flip else "start"}" '
                     f'transform="rotate({_num(degrees + 180 if flip else degrees)} {_num(lx)} {_num(ly)})">'
                     f'{escape(_short(node.title, 28))}</text>')
        drawn.append(f'<a class="node folder{node.folder % FOLDER_CLASSES}" '
                     f'href="{escape(root + node.url)}"><title>{escape(node.title)}</title>'
                     f'<circle cx="{_num(x)}" cy="{_num(y)}" r="5"/>{label}</a>')
    return (f'<svg class="graph graph-source" viewBox="0 0 {SOURCE_SIZE} {SOURCE_SIZE}" role="group" '
            f'aria-label="{escape(say(language, "graph.source_label"))}">'
            f'<g class="edges">{"".join(curves)}</g><g class="nodes">{"".join(drawn)}</g></svg>')
