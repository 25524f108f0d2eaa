#!/usr/bin/env bash
# Check jdp on whatever accelerator JAX sees. Run by hand (CI never runs it), from the
# repository root, after the README's first command
# (python3 -m venv .venv && .venv/bin/pip install -q -e ".[test]" && .venv/bin/jdp demo).
#
#   bash scripts/device_check.sh [--install-cuda] [--sections backend,dpsgd,loop,fits,kip]
#
# Sections (all by default, in this order):
#   backend  JAX's backend and devices (and, with more than one device, that a sharded DP-SGD
#            step equals the one-device step: scripts/multi_device_check.py's child run).
#   dpsgd    scripts/bench_dpsgd.py --no-rss (both cases, batch 256, 50 rounds; the CPU's
#            --quick sizes say nothing on an accelerator): ms and steps/s of the DP-SGD step
#            paths, and the ratios to the non-private step and to the (non-private + noise)
#            floor.
#   loop     scripts/bench_scan_loop.py: steps/s of the compiled loop (Run.block, K steps a
#            dispatch, data on the device) against the step loop, P3GM decoder at batch 200.
#   fits     one `jdp fit` of each method at epsilon 1 on the first $ROWS rows (default
#            2000) of Adult's training split, default settings: seconds each, ok or failed
#            ($METHODS, space-separated, picks methods; default every shipped one but pgm
#            and mwem, whose explicit domains refuse Adult's columns on any backend).
#   kip      scripts/bench_kip.py --quick: KIP step time and digits accuracy in float32 and
#            float64 (kip.KIPConfig.dtype), and their ratio.
#
# `pip install -e .` installs the CPU build of JAX: on a machine with NVIDIA GPUs the backend
# stays "cpu" until the CUDA plugin is installed; --install-cuda installs it
# (`pip install "jax[cuda12]==<the installed jax version>"`) before the checks.
# On a machine whose image already holds JAX for its accelerator (and no network), skip the
# venv: point PY at that python, put the repository (and dp-accounting, carried as a wheel) on
# PYTHONPATH, and JDP at a wrapper that runs jdp.cli.main (docs/results/device_check.md).
# Outputs (JSON, models, results tables) go to $OUT (default: a new temporary directory);
# docs/results/ is left alone.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
PY=${PY:-.venv/bin/python}
JDP=${JDP:-.venv/bin/jdp}
ROWS=${ROWS:-2000}
OUT=${OUT:-$(mktemp -d -t jdp-device-check.XXXXXX)}
SECTIONS=backend,dpsgd,loop,fits,kip
INSTALL_CUDA=0

while [ $# -gt 0 ]; do
    case "$1" in
        --install-cuda) INSTALL_CUDA=1 ;;
        --sections) SECTIONS=$2; shift ;;
        --sections=*) SECTIONS=${1#--sections=} ;;
        -h | --help) sed -n '2,31p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done

if [ ! -x "$PY" ] && ! command -v "$PY" > /dev/null; then
    echo "no $PY: run the README's first command from the repository root first" >&2
    exit 1
fi
# absolute paths (the benchmarks run from scripts/), keeping a virtual environment's link
absolute() { case $1 in /*) echo "$1" ;; */*) echo "$PWD/$1" ;; *) command -v "$1" ;; esac; }
PY=$(absolute "$PY")
JDP=$(absolute "$JDP")
mkdir -p "$OUT"
wants() { case ",$SECTIONS," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }
header() { printf '\n== %s\n' "$1"; }

if [ "$INSTALL_CUDA" = 1 ]; then
    version=$("$PY" -c "import jax; print(jax.__version__)")
    header "installing jax[cuda12]==$version"
    "$PY" -m pip install -q "jax[cuda12]==$version"
fi

if wants backend; then
    header "backend and devices"
    "$PY" - <<'EOF'
import jax

print(f"jax {jax.__version__}, backend {jax.default_backend()}, {jax.device_count()} device(s)")
for d in jax.devices():
    print(f"  {d.id}: {d.device_kind} ({d.platform})")
EOF
    backend=$("$PY" -c "import jax; print(jax.default_backend())")
    if [ "$backend" = cpu ] && command -v nvidia-smi > /dev/null && nvidia-smi -L > /dev/null 2>&1; then
        echo "NVIDIA GPU present but JAX's backend is cpu: rerun with --install-cuda"
    fi
    devices=$("$PY" -c "import jax; print(jax.device_count())")
    if [ "$devices" -gt 1 ]; then
        echo "sharded DP-SGD step over $devices devices vs one device (batch 256):"
        (cd scripts && "$PY" multi_device_check.py --child --child-devices "$devices" \
            --json --no-results --batch 256 --reps 20) > "$OUT/multi_device.json"
        "$PY" - "$OUT/multi_device.json" <<'EOF'
import json, sys

r = json.load(open(sys.argv[1]))
print(f"  max |difference| {r['max_diff']:.1e}; one device {r['one_wall_ms']:.2f} ms, "
      f"sharded {r['mesh_wall_ms']:.2f} ms ({r['mesh_wall_ms'] / r['one_wall_ms']:.2f}x)")
EOF
    fi
fi

if wants dpsgd; then
    header "DP-SGD benchmark (scripts/bench_dpsgd.py --no-rss)"
    (cd scripts && "$PY" bench_dpsgd.py --no-rss --json --results "$OUT/bench_dpsgd.md") \
        > "$OUT/bench_dpsgd.json"
    "$PY" - "$OUT/bench_dpsgd.json" <<'EOF'
import json, sys

r = json.load(open(sys.argv[1]))
for case, c in r["cases"].items():
    ms = c["ms"]
    base = ms["nonprivate"]
    print(f"{case}, batch {r['batch']}: path, ms/step, steps/s, x non-private")
    for path, v in ms.items():
        print(f"  {path:20s} {v:9.3f} {1e3 / v:9.1f} {v / base:7.2f}")
    print(f"  fast / (non-private + noise draw) floor: {c['ratio_fast_over_floor']:.2f}x")
EOF
fi

if wants loop; then
    header "compiled loop vs step loop (scripts/bench_scan_loop.py)"
    (cd scripts && "$PY" bench_scan_loop.py --json --results "$OUT/bench_scan_loop.md") \
        > "$OUT/bench_scan_loop.json"
    "$PY" - "$OUT/bench_scan_loop.json" <<'EOF'
import json, sys

r = json.load(open(sys.argv[1]))
print(f"P3GM decoder, batch {r['batch']}, {r['clipping']} clipping, blocks of {r['block']}:")
for name, v in r["ms_per_step"].items():
    print(f"  {name:12s} {v:9.3f} ms/step {r['steps_per_s'][name]:9.1f} steps/s")
print(f"  compiled / step loop, steps per second: {r['speedup']:.2f}x")
if r["train_s"]:
    t = r["train_s"]
    print(f"  whole train() of {r['train_steps']} steps: step loop {t['step_loop']:.1f} s, "
          f"compiled {t['compiled']:.1f} s")
EOF
fi

if wants fits; then
    header "one fit per method (epsilon 1, first $ROWS rows of Adult)"
    "$JDP" datasets --export adult --out "$OUT/data" > /dev/null
    head -n "$((ROWS + 1))" "$OUT/data/train.csv" > "$OUT/data/small.csv"
    methods=${METHODS:-$("$PY" -c "from jdp.synth.base import available_methods as m; print(' '.join(x for x in m() if x not in ('pgm', 'mwem')))")}
    printf '  %-10s %8s  %s\n' method seconds status
    for method in $methods; do
        start=$(date +%s.%N)
        if "$JDP" fit --method "$method" --epsilon 1 --data "$OUT/data/small.csv" \
            --schema "$OUT/data/schema.json" --out "$OUT/models/$method" --seed 0 --quiet \
            --overwrite > "$OUT/fit_$method.log" 2>&1; then
            status=ok
        else
            status="failed (see $OUT/fit_$method.log)"
        fi
        seconds=$("$PY" -c "print(f'{$(date +%s.%N) - $start:.1f}')")
        printf '  %-10s %8s  %s\n' "$method" "$seconds" "$status"
    done
fi

if wants kip; then
    header "KIP float32 vs float64 (scripts/bench_kip.py --quick)"
    (cd scripts && "$PY" bench_kip.py --quick --json --results "$OUT/bench_kip.md") \
        > "$OUT/bench_kip.json"
    "$PY" - "$OUT/bench_kip.json" <<'EOF'
import json, sys

r = json.load(open(sys.argv[1]))["dtype_rows"]
for name, row in r.items():
    print(f"  {name}: KIP step {row['kip_step_ms']:.1f} ms ({1e3 / row['kip_step_ms']:.1f} steps/s), "
          f"digits accuracy {row['accuracy']:.4f} (float64 KRR {row['accuracy_float64_krr']:.4f})")
f32, f64 = r["float32"], r["float64"]
print(f"  float32 / float64 step time: {f32['kip_step_ms'] / f64['kip_step_ms']:.2f}x; "
      f"accuracy difference {f32['accuracy'] - f64['accuracy']:+.4f}")
EOF
fi

echo
echo "outputs in $OUT"
