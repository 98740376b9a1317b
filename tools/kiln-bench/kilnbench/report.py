#===- kilnbench/report.py - results.json, results.csv, report.md, plots ----===#
#
# Everything a report says is computed here from the configurations'
# samples and kiln-run results; docs/kiln-bench.md describes the files and
# docs/schemas/kiln.bench-results.v1.schema.json the JSON.
#
#===----------------------------------------------------------------------===#

import csv
import json
import os

from . import stats, svg
from .runner import summarize_config

CATEGORIES = ["gemm", "attention", "quantize", "elementwise", "reduction",
              "copy", "other"]
CATEGORY_TITLES = {"gemm": "GEMM", "attention": "attention",
                   "quantize": "quantize/dequantize",
                   "elementwise": "elementwise", "reduction": "reduction",
                   "copy": "copy", "other": "other"}


def _norm_category(name):
    n = (name or "other").lower()
    if n.startswith("quant") or n.startswith("dequant") or n == "qdq":
        return "quantize"
    if n in ("matmul", "conv", "gemm"):
        return "gemm"
    return n if n in CATEGORIES else "other"


def profile_categories(profile):
    """{category: mean ms per run} from kiln-run's profile object."""
    out = {}
    if not profile:
        return out
    cats = profile.get("categories")
    if isinstance(cats, dict):
        cats = [dict(v, category=k) for k, v in cats.items()]
    for c in cats or []:
        name = _norm_category(c.get("category") or c.get("name"))
        ms = c.get("mean_ms_per_run")
        if ms is None:
            total = c.get("total_ms")
            if total is None and c.get("total_ns") is not None:
                total = c["total_ns"] / 1e6
            runs = profile.get("runs") or 1
            ms = (total or 0.0) / runs
        out[name] = out.get(name, 0.0) + ms
    return out


def config_record(c):
    pooled, summary = summarize_config(c)
    rec = {
        "id": c.slug(),
        "label": c.label(),
        "variant": c.variant,
        "role": (c.info.get("meta") or {}).get("role"),
        "attention": (c.info.get("meta") or {}).get("attention"),
        "precision": (c.info.get("meta") or {}).get("precision"),
        "engine": c.engine,
        "target": c.target,
        "kernels": c.kernels,
        "passes": c.passes,
        "batch": c.batch,
        "seq_len": c.seq_len,
        "groups": sorted(c.groups),
        "status": c.status,
        "error": c.error,
        "compile_s": c.compile_s,
        "cold": c.cold,
        "timing": dict(summary, samples_ms=pooled) if pooled else None,
        "throughput": None,
        "memory": c.memory,
        "energy": c.energy,
        "consistency": c.consistency,
        "quality": c.quality,
        "self_check": c.self_check,
        "kernel_count": c.kernel_count,
        "profile_categories_ms": profile_categories(c.profile) or None,
        "profile_error": getattr(c, "profile_error", None),
        "profile": c.profile,
    }
    if pooled:
        med_s = summary["median"] / 1e3
        rec["throughput"] = {
            "samples_per_s": c.batch / med_s,
            "tokens_per_s": (c.batch * c.seq_len / med_s
                             if c.seq_len else None),
            "tasks_per_hour": stats.tasks_per_hour(med_s),
        }
    return rec


def _ms(v):
    if v is None:
        return "–"
    return f"{v:.3f}" if v < 10 else f"{v:.1f}" if v < 1000 else f"{v:.0f}"


def _ratio_text(r):
    if r is None:
        return "–"
    ratio, lo, hi = r
    return f"{ratio:.2f}× [{lo:.2f}, {hi:.2f}]"


def _pct(v):
    return "–" if v is None else f"{v * 100:.1f}"


def _ratio(a, b):
    pa = [x for r in a.samples for x in r]
    pb = [x for r in b.samples for x in r]
    if not pa or not pb:
        return None
    return stats.ratio_of_medians(pa, pb)


def _ok(c):
    return c.status == "measured" and any(c.samples)


def write(out_dir, study, configs, env, peers, ablation_passes, task_def):
    records = [config_record(c) for c in configs]
    by_key = {c.key(): c for c in configs}
    g = study["grid"]
    main_b = g["batch"][0]
    main_s = g["seq_len"][0] if study["models"]["source"] == "seed-variants" \
        else None
    main_k, main_t, main_p = g["kernels"][0], g["targets"][0], g["passes"][0]
    variants = study["models"]["variants"]
    baseline = study["baseline"]["variant"]

    def kiln(v, b=main_b, s=main_s, k=main_k, p=main_p, t=main_t):
        return by_key.get((v, b, s, "kiln", t, k, p))

    def peer(v, name, b=main_b, s=main_s):
        return by_key.get((v, b, s, name, "cpu", None, None))

    md = []
    plots = []
    tables = {}
    title = study["study"].get("title") or f"kiln-bench: {study['study']['name']}"
    md.append(f"# {title}\n")
    shape = f"batch {main_b}" + (f", sequence length {main_s}"
                                 if main_s is not None else "")
    md.append(f"{env.get('kiln_version')} on {env.get('cpu')} "
              f"({env.get('threads')} threads), {env.get('date')}. "
              f"Main configuration: {shape}, target {main_t}, kernels "
              f"`{main_k}`, passes `{main_p}`.\n")
    md.append(f"**Task**: {task_def}\n")

    # 1. The seed's table.
    rows = []
    md.append("## The variants (the seed's table)\n")
    md.append("| variant | role | task duration (ms) | quality score | "
              "throughput (tasks/hour) | p90 (ms) | vs "
              f"{baseline} |")
    md.append("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    base_cfg = kiln(baseline)
    for v in variants:
        c = kiln(v)
        if c is None:
            continue
        rec = config_record(c)
        if not _ok(c):
            md.append(f"| {v} | {rec['role'] or ''} | failed: "
                      f"{(c.error or c.status)[:80]} | | | | |")
            rows.append({"variant": v, "status": c.status,
                         "error": c.error})
            continue
        q = (c.quality or {}).get("top1_agreement")
        r = _ratio(c, base_cfg) if base_cfg is not None and \
            _ok(base_cfg) and c is not base_cfg else None
        rows.append({"variant": v, "role": rec["role"],
                     "task_ms": rec["timing"]["median"],
                     "quality_score": None if q is None else q * 100,
                     "tasks_per_hour": rec["throughput"]["tasks_per_hour"],
                     "p90_ms": rec["timing"]["p90"],
                     "ratio_vs_baseline": r})
        md.append(f"| {v} | {rec['role'] or ''} | "
                  f"{_ms(rec['timing']['median'])} | "
                  f"{'–' if q is None else f'{q * 100:.1f}'} | "
                  f"{rec['throughput']['tasks_per_hour']:.0f} | "
                  f"{_ms(rec['timing']['p90'])} | "
                  f"{'baseline' if c is base_cfg else _ratio_text(r)} |")
    tables["seed_table"] = rows
    md.append("")
    if study["models"]["source"] == "seed-variants":
        quality_text = (
            "*Quality score* is the top-1 agreement (%) of the variant's "
            "next-token predictions with the fp32 model of the same "
            "architecture (numpy reference, float64 math), over every "
            "position of the task's sequences: with the study's seeded "
            "random weights it measures what the precision loses, not "
            "language ability.")
    else:
        quality_text = (
            "*Quality score* is the top-1 agreement (%) along the last axis "
            "of the first output with ONNX Runtime's output of the same "
            "model on the same inputs.")
    md.append("*Task duration* is the median latency of one task over all "
              "rounds' timed runs; *throughput* is 3600 s divided by it. " +
              quality_text + " Ratios are the median over the baseline's "
              "median, with a 95% bootstrap interval.\n")

    # 2. Ratios: the 2x2 decomposition and Kiln vs peers.
    pairs = []
    names = set(variants)
    for prec in ("fp16", "int8", "fp32"):
        a, b = f"linear_{prec}", f"softmax_{prec}"
        if a in names and b in names:
            pairs.append((f"attention at {prec}: linear / softmax", a, b))
    for att in ("softmax", "linear"):
        for lo, hi in (("int8", "fp16"), ("fp16", "fp32"), ("int8", "fp32")):
            a, b = f"{att}_{lo}", f"{att}_{hi}"
            if a in names and b in names:
                pairs.append((f"precision with {att}: {lo} / {hi}", a, b))
    if "linear_int8" in names and "softmax_fp16" in names:
        pairs.append(("Flash / Standard (both factors)", "linear_int8",
                      "softmax_fp16"))
    ratio_rows = []
    if pairs:
        md.append("## What makes the difference (ratios of task duration)\n")
        md.append("The 2×2 grid separates the attention kind from the "
                  "precision: each row changes one factor (last row: both). "
                  "Above 1: the first is slower.\n")
        md.append("| comparison | ratio [95% CI] | first (ms) | second (ms) |")
        md.append("| --- | ---: | ---: | ---: |")
        for label, a, b in pairs:
            ca, cb = kiln(a), kiln(b)
            if ca is None or cb is None or not _ok(ca) or not _ok(cb):
                continue
            r = _ratio(ca, cb)
            ra, rb = config_record(ca), config_record(cb)
            ratio_rows.append({"comparison": label, "first": a, "second": b,
                               "ratio": r[0], "ci": [r[1], r[2]]})
            md.append(f"| {label} | {_ratio_text(r)} | "
                      f"{_ms(ra['timing']['median'])} | "
                      f"{_ms(rb['timing']['median'])} |")
        md.append("")
    tables["factor_ratios"] = ratio_rows

    peer_rows = []
    active_peers = [p for p in peers.values() if not p.skip]
    md.append("## Kiln against the peers\n")
    for p in peers.values():
        if p.skip:
            md.append(f"* {p.name}: skipped — {p.skip}.")
        else:
            md.append(f"* {p.name} {p.version}: same ONNX file, inputs, "
                      f"threads, warm-up and iterations, interleaved with "
                      f"Kiln in every round.")
    md.append("")
    if active_peers:
        md.append("| variant | Kiln (ms) | " + " | ".join(
            f"{p.name} (ms) | Kiln / {p.name}" for p in active_peers) + " |")
        md.append("| --- | ---: | " + " | ".join(
            "---: | ---:" for _ in active_peers) + " |")
        for v in variants:
            c = kiln(v)
            if c is None:
                continue
            cells = [v, _ms(config_record(c)["timing"]["median"])
                     if _ok(c) else "failed"]
            row = {"variant": v}
            for p in active_peers:
                pc = peer(v, p.name)
                if pc is None or not _ok(pc):
                    cells += [("failed: " + (pc.error or "")[:60]) if pc
                              else "–", "–"]
                    continue
                cells.append(_ms(config_record(pc)["timing"]["median"]))
                r = _ratio(c, pc) if _ok(c) else None
                cells.append(_ratio_text(r))
                row[p.name] = {"ratio": r[0] if r else None,
                               "ci": [r[1], r[2]] if r else None}
            peer_rows.append(row)
            md.append("| " + " | ".join(cells) + " |")
        md.append("")
    tables["peers"] = peer_rows

    # Latency distributions.
    groups = {}
    for v in variants:
        for c in [kiln(v)] + [peer(v, p.name) for p in active_peers]:
            if c is not None and _ok(c):
                name = v if c.engine == "kiln" else f"{v} ({c.engine})"
                groups[name] = [x for r in c.samples for x in r]
    if groups:
        _plot(out_dir, "latency.svg", svg.box_plot(
            f"Latency per task ({shape}, {env.get('threads')} threads)",
            groups, "ms"), plots)
        md.append("![latency distributions](plots/latency.svg)\n")

    # 3. Breakdown per category.
    breakdown = {}
    for v in variants:
        c = kiln(v)
        if c is not None and c.profile:
            breakdown[v] = profile_categories(c.profile)
    tables["breakdown"] = breakdown
    md.append("## Where the time goes (per kernel category)\n")
    if breakdown:
        used = [k for k in CATEGORIES
                if any(b.get(k, 0) > 0 for b in breakdown.values())]
        md.append("Mean time per task in each category of kernels "
                  "(`kiln-run --profile`, untimed runs after the rounds), "
                  "ms and share of the profiled time.\n")
        md.append("| variant | " + " | ".join(CATEGORY_TITLES[k]
                                               for k in used) + " | total |")
        md.append("| --- | " + " | ".join("---:" for _ in used) + " | ---: |")
        for v, b in breakdown.items():
            total = sum(b.values()) or 1.0
            md.append(f"| {v} | " + " | ".join(
                f"{b.get(k, 0):.3f} ({b.get(k, 0) / total * 100:.0f}%)"
                for k in used) + f" | {sum(b.values()):.3f} |")
        md.append("")
        base = breakdown.get(baseline)
        slow = None
        for v, b in breakdown.items():
            if v != baseline and (slow is None or sum(b.values()) >
                                  sum(breakdown[slow].values())):
                slow = v
        if base and slow:
            diffs = sorted(((k, breakdown[slow].get(k, 0) - base.get(k, 0))
                            for k in used), key=lambda kv: -abs(kv[1]))
            total_diff = sum(breakdown[slow].values()) - sum(base.values())
            md.append(f"**{slow} against {baseline}**: "
                      f"{total_diff:+.3f} ms per task in all; by category: " +
                      ", ".join(f"{CATEGORY_TITLES[k]} {d:+.3f} ms"
                                for k, d in diffs if abs(d) > 0.0005) + ".\n")
            tables["loss_by_category"] = {"slower": slow, "baseline":
                                          baseline, "diff_ms": dict(diffs)}
            top = _top_kernels(kiln(slow).profile, 8)
            if top:
                md.append(f"The largest kernels of {slow}:\n")
                md.append("| kernel | category | ONNX nodes | launches | "
                          "mean (ms) | share |")
                md.append("| --- | --- | --- | ---: | ---: | ---: |")
                for k in top:
                    md.append(f"| {k['name']} | {k['category']} | "
                              f"{k['nodes']} | {k['launches']} | "
                              f"{k['mean_ms']:.4f} | {k['share']:.1f}% |")
                md.append("")
        _plot(out_dir, "breakdown.svg", svg.stacked_bars(
            "Time per kernel category", list(breakdown),
            {CATEGORY_TITLES[k]: [breakdown[v].get(k, 0) for v in breakdown]
             for k in used}, "ms per task"), plots)
        md.append("![time per category](plots/breakdown.svg)\n")
    else:
        md.append("No profile was recorded (profiling off, or the "
                  "configurations failed).\n")

    # 4. Ablation.
    abl = [c for c in configs if "ablation" in c.groups]
    tables["ablation"] = []
    if abl:
        av = study["ablation"]["variant"]
        md.append(f"## Ablation: each pass's effect on {av}\n")
        md.append("`O3` runs every pass; `O3-no-P` leaves pass P out "
                  "(`kiln-compile --disable-pass=P`); `O0` runs none. "
                  "Latency ratios are against `O3` (above 1: slower "
                  "without the pass).\n")
        md.append("| passes | median (ms) | vs O3 | peak memory (MiB) | "
                  "kernels | max abs error | top-1 (%) | compile (s) |")
        md.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        full = next((c for c in abl if c.passes == "O3"), None)
        names, values = [], []
        for c in abl:
            rec = config_record(c)
            if not _ok(c):
                md.append(f"| {c.passes} | failed: {(c.error or c.status)[:70]}"
                          f" | | | | | | |")
                tables["ablation"].append({"passes": c.passes,
                                           "status": c.status,
                                           "error": c.error})
                continue
            r = _ratio(c, full) if full is not None and _ok(full) and \
                c is not full else None
            mem = (c.memory or {}).get("session_peak_bytes")
            q = c.quality or {}
            md.append(f"| {c.passes} | {_ms(rec['timing']['median'])} | "
                      f"{'(all passes)' if c is full else _ratio_text(r)} | "
                      f"{'–' if mem is None else f'{mem / 2**20:.2f}'} | "
                      f"{c.kernel_count if c.kernel_count is not None else '–'}"
                      f" | {q.get('max_abs_error', 0) or 0:.3g} | "
                      f"{_pct(q.get('top1_agreement'))} | "
                      f"{c.compile_s:.2f} |")
            tables["ablation"].append({
                "passes": c.passes, "median_ms": rec["timing"]["median"],
                "ratio_vs_all": r[0] if r else None,
                "session_peak_bytes": mem, "kernels": c.kernel_count,
                "max_abs_error": q.get("max_abs_error"),
                "top1_agreement": q.get("top1_agreement"),
                "compile_s": c.compile_s})
            names.append(c.passes)
            values.append(rec["timing"]["median"])
        md.append("")
        if names:
            _plot(out_dir, "ablation.svg", svg.grouped_bars(
                f"Ablation on {av}: median latency", names,
                {"median latency": values}, "ms"), plots)
            md.append("![ablation](plots/ablation.svg)\n")

    # 5. Sweeps.
    tables["sweeps"] = {}
    for group, axis, label in (("sweep-batch", "batch", "batch size"),
                               ("sweep-seq", "seq_len", "sequence length")):
        sw = [c for c in configs if group in c.groups]
        if not sw:
            continue
        xs = sorted({getattr(c, axis) for c in sw})
        series, thr = {}, {}
        for v in study["sweep"]["variants"]:
            ys, ts = [], []
            for x in xs:
                c = next((c for c in sw if c.variant == v and
                          getattr(c, axis) == x), None)
                if c is None or not _ok(c):
                    ys.append(None)
                    ts.append(None)
                    continue
                rec = config_record(c)
                ys.append(rec["timing"]["median"])
                ts.append(rec["throughput"]["samples_per_s"] if axis ==
                          "batch" else rec["throughput"]["tokens_per_s"])
            series[v], thr[v] = ys, ts
        unit = "samples/s" if axis == "batch" else "tokens/s"
        md.append(f"## Sweep over the {label}\n")
        md.append(f"Median latency in ms (throughput in {unit}).\n")
        md.append(f"| {label} | " + " | ".join(series) + " |")
        md.append("| ---: | " + " | ".join("---:" for _ in series) + " |")
        for i, x in enumerate(xs):
            md.append(f"| {x} | " + " | ".join(
                "failed" if series[v][i] is None else
                f"{_ms(series[v][i])} ({thr[v][i]:.0f})" for v in series) +
                " |")
        md.append("")
        tables["sweeps"][axis] = {"x": xs, "median_ms": series,
                                  "throughput": thr, "unit": unit}
        fname = f"sweep-{axis.replace('_', '-')}.svg"
        _plot(out_dir, fname, svg.line_chart(
            f"Median latency vs {label}", xs, series, label, "ms",
            log_x=True), plots)
        md.append(f"![sweep over the {label}](plots/{fname})\n")
        if axis == "seq_len":
            md.append(_crossover(series, xs, tables))
    # Every configuration measured, for the record.
    md.append("## All configurations\n")
    md.append("| configuration | groups | compile (s) | cold (ms) | median "
              "(ms) | p90 (ms) | p99 (ms) | stddev (ms) | peak (MiB) | "
              "bit-identical | top-1 vs fp32 (%) |")
    md.append("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
              "| --- | ---: |")
    for c in configs:
        if not _ok(c):
            continue
        rec = config_record(c)
        t = rec["timing"]
        mem = (c.memory or {}).get("session_peak_bytes")
        md.append(
            f"| {c.label()} | {', '.join(sorted(c.groups))} | "
            f"{'–' if c.compile_s is None else f'{c.compile_s:.2f}'} | "
            f"{_ms((c.cold or {}).get('cold_ms'))} | {_ms(t['median'])} | "
            f"{_ms(t['p90'])} | {_ms(t['p99'])} | {_ms(t['stddev'])} | "
            f"{'–' if mem is None else f'{mem / 2**20:.1f}'} | "
            f"{'–' if not c.consistency else ('yes' if c.consistency.get('bit_identical') else 'no')} | "
            f"{_pct((c.quality or {}).get('top1_agreement'))} |")
    md.append("")
    env_md = ["## How this was measured\n",
              f"* Timed: end to end on the host, one `kiln_session_run` "
              f"(Kiln) or `InferenceSession.run` (ONNX Runtime) per task, "
              f"inputs and outputs in host memory, no copies to a device; "
              f"the cold run (load, session, first run) is reported apart "
              f"in results.json.",
              f"* {study['study']['rounds']} rounds; in each, every "
              f"configuration runs {study['study']['warmup']} warm-up and "
              f"{study['study']['iterations']} timed runs"
              + (f" (at least {study['study']['duration']} s)"
                 if study['study']['duration'] else "") +
              ", the order rotated from round to round (interleaved A B A "
              "B); statistics pool the timed runs of all rounds.",
              f"* Machine: {env.get('cpu')}, {env.get('cores')} cores, "
              f"{env.get('memory_gib')} GiB; {env.get('threads')} threads; "
              f"load average {env.get('load_before')} before, "
              f"{env.get('load_after')} after.",
              f"* Software: {env.get('kiln_version')} (commit "
              f"{env.get('commit')}), ONNX Runtime "
              f"{env.get('onnxruntime')}, Python {env.get('python')}, "
              f"{env.get('os')}.",
              f"* Energy: {env.get('energy')}.",
              f"* Peak memory, cold times, consistency (bit-identical "
              f"repeated runs), per-kernel profiles and every sample are in "
              f"results.json; one row per configuration in results.csv.",
              ""]
    md += env_md
    failed = [c for c in configs if not _ok(c) and c.status != "skipped"]
    if failed:
        md.append("## Configurations that did not run\n")
        for c in failed:
            md.append(f"* {c.label()}: {c.status} — {c.error}")
        md.append("")
    bad_check = [c for c in configs if c.self_check and
                 not c.self_check["pass"]]
    if bad_check:
        md.append("## Outputs outside the variant's own tolerance\n")
        for c in bad_check:
            md.append(f"* {c.label()}: " + "; ".join(c.self_check["reasons"]))
        md.append("")

    with open(os.path.join(out_dir, "report.md"), "w") as f:
        f.write("\n".join(md).rstrip() + "\n")
    result = {
        "schema": "kiln.bench-results",
        "version": 1,
        "study": {k: v for k, v in study.items()},
        "task": {"definition": task_def},
        "environment": env,
        "peers": {p.name: {"version": p.version, "skipped": p.skip}
                  for p in peers.values()},
        "ablation_passes": ablation_passes,
        "configurations": records,
        "tables": tables,
        "plots": plots,
    }
    with open(os.path.join(out_dir, "results.json"), "w") as f:
        json.dump(result, f, indent=1, default=_json_default)
        f.write("\n")
    _write_csv(os.path.join(out_dir, "results.csv"), records)
    return result


def _json_default(o):
    if isinstance(o, (set, tuple)):
        return list(o)
    if hasattr(o, "item"):
        return o.item()
    return str(o)


def _top_kernels(profile, n):
    out = []
    if not profile:
        return out
    runs = profile.get("runs") or 1
    for k in profile.get("kernels") or []:
        total = k.get("total_ms")
        if total is None and k.get("total_ns") is not None:
            total = k["total_ns"] / 1e6
        launches = k.get("launches") or 0
        nodes = k.get("onnx_nodes") or k.get("nodes") or []
        if isinstance(nodes, list):
            shown = ", ".join(nodes[:3]) + (f" (+{len(nodes) - 3})"
                                            if len(nodes) > 3 else "")
        else:
            shown = str(nodes)
        out.append({"name": k.get("name"), "category": k.get("category"),
                    "nodes": shown.replace("|", "\\|"),
                    "launches": launches,
                    "mean_ms": (total or 0) / max(launches, 1),
                    "share": k.get("share") or 0,  # kiln-run: percent
                    "total": total or 0})
    out.sort(key=lambda k: -k["total"])
    return out[:n]


def _crossover(series, xs, tables):
    lines = []
    cross = {}
    for v in series:
        if not v.startswith("linear_"):
            continue
        other = "softmax_" + v.split("_", 1)[1]
        if other not in series:
            continue
        ratios = [(x, a / b) for x, a, b in zip(xs, series[v], series[other])
                  if a is not None and b is not None]
        wins = [x for x, r in ratios if r < 1]
        first = None
        for x, r in ratios:
            if r < 1 and all(rr < 1 for xx, rr in ratios if xx >= x):
                first = x
                break
        cross[f"{v} vs {other}"] = {"ratios": ratios, "wins_from": first}
        text = ", ".join(f"{x}: {r:.2f}" for x, r in ratios)
        if first is not None:
            verdict = (f"linear attention is faster from sequence length "
                       f"{first} on (and stays faster up to {xs[-1]})")
        elif wins:
            verdict = (f"linear attention is faster at "
                       f"{', '.join(map(str, wins))} only, not from a "
                       f"length on")
        else:
            verdict = (f"linear attention does not win anywhere up to "
                       f"{xs[-1]}")
        lines.append(f"**Crossover ({v} / {other}, latency ratio by "
                     f"sequence length)**: {text} — {verdict}.\n")
    tables["crossover"] = cross
    return "\n".join(lines)


def _plot(out_dir, name, text, plots):
    os.makedirs(os.path.join(out_dir, "plots"), exist_ok=True)
    with open(os.path.join(out_dir, "plots", name), "w") as f:
        f.write(text)
    plots.append(f"plots/{name}")


CSV_FIELDS = ["id", "variant", "role", "attention", "precision", "engine",
              "target", "kernels", "passes", "batch", "seq_len", "groups",
              "status", "error", "compile_s", "cold_ms", "runs", "min_ms",
              "median_ms", "mean_ms", "p90_ms", "p99_ms", "max_ms",
              "stddev_ms", "samples_per_s", "tasks_per_hour",
              "session_peak_bytes", "peak_rss_bytes", "energy_j_per_run",
              "bit_identical", "quality_reference", "max_abs_error",
              "cosine", "top1_agreement", "self_check", "kernel_count"]


def _write_csv(path, records):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=CSV_FIELDS)
        w.writeheader()
        for r in records:
            t = r["timing"] or {}
            q = r["quality"] or {}
            e = r["energy"] or {}
            w.writerow({
                "id": r["id"], "variant": r["variant"], "role": r["role"],
                "attention": r["attention"], "precision": r["precision"],
                "engine": r["engine"], "target": r["target"],
                "kernels": r["kernels"], "passes": r["passes"],
                "batch": r["batch"], "seq_len": r["seq_len"],
                "groups": " ".join(r["groups"]), "status": r["status"],
                "error": r["error"] or "",
                "compile_s": _num(r["compile_s"]),
                "cold_ms": _num((r["cold"] or {}).get("cold_ms")),
                "runs": t.get("count", 0),
                "min_ms": _num(t.get("min")), "median_ms":
                _num(t.get("median")), "mean_ms": _num(t.get("mean")),
                "p90_ms": _num(t.get("p90")), "p99_ms": _num(t.get("p99")),
                "max_ms": _num(t.get("max")),
                "stddev_ms": _num(t.get("stddev")),
                "samples_per_s": _num((r["throughput"] or {}).get(
                    "samples_per_s")),
                "tasks_per_hour": _num((r["throughput"] or {}).get(
                    "tasks_per_hour")),
                "session_peak_bytes": (r["memory"] or {}).get(
                    "session_peak_bytes", ""),
                "peak_rss_bytes": (r["memory"] or {}).get("peak_rss_bytes",
                                                          ""),
                "energy_j_per_run": _num(e.get("joules_per_run")),
                "bit_identical": "" if not r["consistency"] else
                r["consistency"].get("bit_identical"),
                "quality_reference": q.get("reference") or "",
                "max_abs_error": _num(q.get("max_abs_error")),
                "cosine": _num(q.get("cosine")),
                "top1_agreement": _num(q.get("top1_agreement")),
                "self_check": "" if not r["self_check"] else
                ("pass" if r["self_check"]["pass"] else "fail"),
                "kernel_count": "" if r["kernel_count"] is None else
                r["kernel_count"],
            })


def _num(v):
    return "" if v is None else f"{v:.6g}"
