#!/usr/bin/env python3
"""Joins `kps bench --sweep --json` and tools/bench_sweep_torch.py's JSON on the sweep's
case list: a markdown table per case (KPS and PyTorch, single call and back to back, GB/s
and the ratio KPS / PyTorch in speed), the geometric mean of the ratios per family, the
worst 20 cases, and with --png a plot of the back-to-back ratio per case, by family
(needs matplotlib).

    python3 tools/sweep_report.py cases.json kps.json torch.json [--png sweep.png] [--md out.md]
"""
import argparse
import json
import math
from collections import defaultdict


def load_results(path):
    return {r["name"]: r for r in json.load(open(path))["results"]}


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("cases")
    p.add_argument("kps")
    p.add_argument("torch")
    p.add_argument("--png")
    p.add_argument("--md")
    a = p.parse_args()
    cases = json.load(open(a.cases))["cases"]
    kps, torch = load_results(a.kps), load_results(a.torch)
    rows, lines = [], []
    for c in cases:
        k, t = kps.get(c["name"]), torch.get(c["name"])
        if not k or not t or "error" in k or "error" in t:
            why = (k or {}).get("error") or (t or {}).get("error") or "missing"
            lines.append(f"| {c['name']} | | | | | n/a: {why} |")
            continue
        gb = c["bytes"] / 1e6
        single, b2b = t["ms"] / k["ms"], t["b2b_ms"] / k["b2b_ms"]
        rows.append((c["family"], c["name"], single, b2b))
        lines.append(f"| {c['name']} | {gb / k['ms']:.1f} | {gb / t['ms']:.1f} | {gb / k['b2b_ms']:.1f} | "
                     f"{gb / t['b2b_ms']:.1f} | {single:.2f} / {b2b:.2f} |")
    out = ["| case | KPS GB/s | PyTorch GB/s | KPS GB/s b2b | PyTorch GB/s b2b | speed KPS/PyTorch single / b2b |",
           "|---|---|---|---|---|---|"] + lines
    fam = defaultdict(list)
    for f, _, s, b in rows:
        fam[f].append((s, b))
    out += ["", "| family | cases | geomean single | geomean b2b | min single | min b2b |", "|---|---|---|---|---|---|"]
    for f in sorted(fam):
        s = [x[0] for x in fam[f]]
        b = [x[1] for x in fam[f]]
        out.append(f"| {f} | {len(s)} | {geomean(s):.2f} | {geomean(b):.2f} | {min(s):.2f} | {min(b):.2f} |")
    out += ["", "Worst 20 (by the lower of the two ratios):", "", "| case | single | b2b |", "|---|---|---|"]
    for f, n, s, b in sorted(rows, key=lambda r: min(r[2], r[3]))[:20]:
        out.append(f"| {n} | {s:.2f} | {b:.2f} |")
    text = "\n".join(out) + "\n"
    print(text)
    if a.md:
        with open(a.md, "w") as f:
            f.write(text)
    if a.png:
        try:
            import matplotlib
        except ImportError:
            print("--png needs matplotlib (pip install matplotlib); no plot written")
            return
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fams = sorted(fam)
        fig, ax = plt.subplots(figsize=(14, 5))
        x = 0
        for i, f in enumerate(fams):
            b = sorted(v[1] for v in fam[f])
            ax.scatter(range(x, x + len(b)), b, s=6, label=f)
            x += len(b) + 5
        ax.axhline(1.0, color="gray", lw=0.8)
        ax.axhline(0.9, color="red", lw=0.5, ls="--")
        ax.set_yscale("log")
        ax.set_ylabel("KPS speed / PyTorch (back to back)")
        ax.set_xticks([])
        ax.legend(ncol=len(fams), fontsize=8)
        fig.tight_layout()
        fig.savefig(a.png, dpi=120)
        print(f"wrote {a.png}")


if __name__ == "__main__":
    main()
