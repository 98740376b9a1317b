#===- kilnbench/svg.py - Small, dependency-free SVG charts -----------------===#
#
# The plots of a kiln-bench report: latency distributions (box plots with
# the samples), stacked bars (time per kernel category), grouped bars
# (ablation) and line charts (sweeps, crossovers). Plain SVG 1.1 text that
# browsers, GitHub and Perfetto-free viewers render; every chart has a
# title, labelled axes with units and a legend, and every number drawn
# comes from the data passed in.
#
#===----------------------------------------------------------------------===#

import math
from xml.sax.saxutils import escape

PALETTE = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
           "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"]

W, H = 720, 420
LEFT, RIGHT, TOP, BOTTOM = 70, 170, 40, 80


def _text(x, y, s, size=12, anchor="start", rotate=None, weight="normal"):
    t = f' transform="rotate({rotate} {x:.1f} {y:.1f})"' if rotate else ""
    return (f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" '
            f'font-family="sans-serif" text-anchor="{anchor}" '
            f'font-weight="{weight}"{t}>{escape(str(s))}</text>')


def nice_ticks(lo, hi, count=5):
    """Round tick values covering [lo, hi]."""
    if hi <= lo:
        hi = lo + 1
    span = hi - lo
    step = 10 ** math.floor(math.log10(span / count))
    for m in (1, 2, 2.5, 5, 10):
        if span / (step * m) <= count:
            step *= m
            break
    start = math.floor(lo / step) * step
    ticks = []
    v = start
    while v <= hi + step * 1e-9:
        ticks.append(round(v, 12))
        v += step
    if ticks[-1] < hi:
        ticks.append(round(ticks[-1] + step, 12))
    return ticks


def _fmt(v):
    if v == 0:
        return "0"
    if abs(v) >= 100:
        return f"{v:.0f}"
    if abs(v) >= 1:
        return f"{v:.3g}"
    return f"{v:.2g}"


class _Frame:
    """Plot area with a linear (or log) y axis from 0 or ymin to ymax."""

    def __init__(self, title, ylabel, ymax, ymin=0.0, xlabel=None):
        self.parts = [f'<svg xmlns="http://www.w3.org/2000/svg" '
                      f'width="{W}" height="{H}" viewBox="0 0 {W} {H}">',
                      f'<rect width="{W}" height="{H}" fill="white"/>',
                      _text(W / 2, 22, title, 15, "middle", weight="bold")]
        self.x0, self.x1 = LEFT, W - RIGHT
        self.y0, self.y1 = H - BOTTOM, TOP
        self.ticks = nice_ticks(ymin, ymax if ymax > ymin else ymin + 1)
        self.ymin, self.ymax = self.ticks[0], self.ticks[-1]
        for t in self.ticks:
            y = self.y(t)
            self.parts.append(f'<line x1="{self.x0}" y1="{y:.1f}" '
                              f'x2="{self.x1}" y2="{y:.1f}" '
                              f'stroke="#ddd"/>')
            self.parts.append(_text(self.x0 - 6, y + 4, _fmt(t), 11, "end"))
        self.parts.append(f'<line x1="{self.x0}" y1="{self.y0}" '
                          f'x2="{self.x0}" y2="{self.y1}" stroke="#333"/>')
        self.parts.append(f'<line x1="{self.x0}" y1="{self.y0}" '
                          f'x2="{self.x1}" y2="{self.y0}" stroke="#333"/>')
        self.parts.append(_text(18, (self.y0 + self.y1) / 2, ylabel, 12,
                                "middle", rotate=-90))
        if xlabel:
            self.parts.append(_text((self.x0 + self.x1) / 2, H - 12, xlabel,
                                    12, "middle"))

    def y(self, v):
        f = (v - self.ymin) / (self.ymax - self.ymin)
        return self.y0 - f * (self.y0 - self.y1)

    def legend(self, names):
        for i, name in enumerate(names):
            y = TOP + 10 + i * 18
            self.parts.append(f'<rect x="{W - RIGHT + 12}" y="{y - 9}" '
                              f'width="11" height="11" '
                              f'fill="{PALETTE[i % len(PALETTE)]}"/>')
            self.parts.append(_text(W - RIGHT + 28, y, name, 11))

    def xlabels(self, centers, labels):
        rotate = len(labels) > 6 or max((len(l) for l in labels),
                                        default=0) > 12
        for cx, label in zip(centers, labels):
            if rotate:
                self.parts.append(_text(cx, self.y0 + 14, label, 10, "end",
                                        rotate=-30))
            else:
                self.parts.append(_text(cx, self.y0 + 16, label, 11,
                                        "middle"))

    def svg(self):
        return "\n".join(self.parts + ["</svg>"]) + "\n"


def grouped_bars(title, groups, series, ylabel, xlabel=None):
    """Bars per group, one per series: series = {name: [value per group]}.
    A None value leaves a gap (a failed configuration)."""
    values = [v for vs in series.values() for v in vs if v is not None]
    f = _Frame(title, ylabel, max(values, default=1.0), 0.0, xlabel)
    n = max(len(series), 1)
    slot = (f.x1 - f.x0) / max(len(groups), 1)
    bar = slot * 0.8 / n
    centers = []
    for g, _ in enumerate(groups):
        gx = f.x0 + g * slot + slot * 0.1
        centers.append(gx + slot * 0.4)
        for s, (name, vs) in enumerate(series.items()):
            v = vs[g]
            if v is None:
                continue
            x = gx + s * bar
            y = f.y(v)
            f.parts.append(f'<rect x="{x:.1f}" y="{y:.1f}" '
                           f'width="{bar * 0.92:.1f}" '
                           f'height="{f.y0 - y:.1f}" '
                           f'fill="{PALETTE[s % len(PALETTE)]}">'
                           f'<title>{escape(name)}: {_fmt(v)}</title></rect>')
    f.xlabels(centers, groups)
    f.legend(list(series))
    return f.svg()


def stacked_bars(title, bars, stacks, ylabel, xlabel=None):
    """One bar per label; stacks = {part: [value per bar]} drawn bottom-up."""
    totals = [sum((vs[i] or 0) for vs in stacks.values())
              for i in range(len(bars))]
    f = _Frame(title, ylabel, max(totals, default=1.0), 0.0, xlabel)
    slot = (f.x1 - f.x0) / max(len(bars), 1)
    width = slot * 0.6
    centers = []
    for i, _ in enumerate(bars):
        x = f.x0 + i * slot + slot * 0.2
        centers.append(x + width / 2)
        base = 0.0
        for s, (part, vs) in enumerate(stacks.items()):
            v = vs[i] or 0
            if v <= 0:
                continue
            ytop, ybot = f.y(base + v), f.y(base)
            f.parts.append(f'<rect x="{x:.1f}" y="{ytop:.1f}" '
                           f'width="{width:.1f}" height="{ybot - ytop:.1f}" '
                           f'fill="{PALETTE[s % len(PALETTE)]}">'
                           f'<title>{escape(part)}: {_fmt(v)}</title></rect>')
            base += v
    f.xlabels(centers, bars)
    f.legend(list(stacks))
    return f.svg()


def line_chart(title, xs, series, xlabel, ylabel, log_x=False):
    """series = {name: [y per x]} (None: no point)."""
    values = [v for vs in series.values() for v in vs if v is not None]
    f = _Frame(title, ylabel, max(values, default=1.0), 0.0, xlabel)
    pos = [math.log2(x) for x in xs] if log_x else list(xs)
    lo, hi = min(pos), max(pos)
    span = (hi - lo) or 1.0

    def px(p):
        return f.x0 + 20 + (p - lo) / span * (f.x1 - f.x0 - 40)

    f.xlabels([px(p) for p in pos], [str(x) for x in xs])
    for s, (name, ys) in enumerate(series.items()):
        color = PALETTE[s % len(PALETTE)]
        pts = [(px(p), f.y(y)) for p, y in zip(pos, ys) if y is not None]
        if len(pts) > 1:
            path = " ".join(f"{x:.1f},{y:.1f}" for x, y in pts)
            f.parts.append(f'<polyline points="{path}" fill="none" '
                           f'stroke="{color}" stroke-width="2"/>')
        for (x, y), yv in zip(pts, [y for y in ys if y is not None]):
            f.parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3.5" '
                           f'fill="{color}"><title>{escape(name)}: '
                           f'{_fmt(yv)}</title></circle>')
    f.legend(list(series))
    return f.svg()


def box_plot(title, groups, ylabel):
    """groups = {label: [samples]}: box (quartiles), median line, whiskers
    at min/max, and every sample as a faint dot."""
    values = [v for vs in groups.values() for v in vs]
    f = _Frame(title, ylabel, max(values, default=1.0), 0.0)
    slot = (f.x1 - f.x0) / max(len(groups), 1)
    centers = []
    for i, (label, vs) in enumerate(groups.items()):
        cx = f.x0 + (i + 0.5) * slot
        centers.append(cx)
        if not vs:
            continue
        s = sorted(vs)

        def q(p):
            r = p * (len(s) - 1)
            lo = int(math.floor(r))
            hi = min(lo + 1, len(s) - 1)
            return s[lo] + (s[hi] - s[lo]) * (r - lo)

        color = PALETTE[i % len(PALETTE)]
        half = min(slot * 0.25, 40)
        f.parts.append(f'<line x1="{cx:.1f}" y1="{f.y(s[0]):.1f}" '
                       f'x2="{cx:.1f}" y2="{f.y(s[-1]):.1f}" '
                       f'stroke="#333"/>')
        f.parts.append(f'<rect x="{cx - half:.1f}" y="{f.y(q(0.75)):.1f}" '
                       f'width="{2 * half:.1f}" '
                       f'height="{max(f.y(q(0.25)) - f.y(q(0.75)), 1):.1f}" '
                       f'fill="{color}" fill-opacity="0.5" stroke="#333"/>')
        f.parts.append(f'<line x1="{cx - half:.1f}" y1="{f.y(q(0.5)):.1f}" '
                       f'x2="{cx + half:.1f}" y2="{f.y(q(0.5)):.1f}" '
                       f'stroke="#000" stroke-width="2"/>')
        for k, v in enumerate(s):
            jitter = ((k * 37) % 11 - 5) / 5 * half * 0.8
            f.parts.append(f'<circle cx="{cx + jitter:.1f}" '
                           f'cy="{f.y(v):.1f}" r="1.6" fill="#000" '
                           f'fill-opacity="0.35"/>')
    f.xlabels(centers, list(groups))
    return f.svg()
