"""Compares two builds' `kps bench --json` files from the same device run: per workload,
the speed of the new build over the old one (old time / new time; above 1 is faster),
single call and back to back, each the median over the files given for that build.

    python3 tools/bench_ratio.py --old OLD1.json [OLD2.json ...] --new NEW1.json [NEW2.json ...]"""
import json
import statistics
import sys


def load(paths):
    rows = {}
    for path in paths:
        with open(path) as f:
            for r in json.load(f)["results"]:
                if "ms" in r:
                    rows.setdefault(r["name"], []).append((r["ms"], r["b2b_ms"]))
                elif "us" in r:
                    rows.setdefault(r["name"], []).append((r["us"] / 1000.0, r["us"] / 1000.0))
    return {k: (statistics.median(a for a, _ in v), statistics.median(b for _, b in v)) for k, v in rows.items()}


def main(argv):
    if "--old" not in argv or "--new" not in argv:
        sys.exit(__doc__)
    i, j = argv.index("--old"), argv.index("--new")
    old_paths = argv[i + 1:j] if i < j else argv[i + 1:]
    new_paths = argv[j + 1:] if i < j else argv[j + 1:i]
    old, new = load(old_paths), load(new_paths)
    print(f"{'workload':34s} {'old ms':>9s} {'new ms':>9s} {'new/old':>8s} {'old b2b':>9s} {'new b2b':>9s} {'new/old':>8s}")
    worst = None
    for name in sorted(set(old) & set(new), key=list(new).index):
        (os_, ob), (ns, nb) = old[name], new[name]
        rs, rb = os_ / ns if ns else float("nan"), ob / nb if nb else float("nan")
        flag = "  <0.98" if min(rs, rb) < 0.98 else ""
        print(f"{name:34s} {os_:9.4f} {ns:9.4f} {rs:8.3f} {ob:9.4f} {nb:9.4f} {rb:8.3f}{flag}")
        worst = rb if worst is None else min(worst, rb)
    print(f"lowest back-to-back new/old: {worst:.3f}")


if __name__ == "__main__":
    main(sys.argv[1:])
