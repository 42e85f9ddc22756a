#!/usr/bin/env bash
# One GPU session for issue 26 ("Images at GPU speed"), run from the repository root on the GPU
# machine (../shared/gpu/README.md: Python 3.12, torch with CUDA, no network). Every table and log
# goes under $OUT; the whole script keeps within 9 minutes (each step has its share and the
# deadline; a step that runs out is stopped and noted, and the next one runs).
#
#   ../shared/gpu/fetch-wheels.sh            # here, once: the wheels into .whl/
#   bash benchmarks/gpu_session.sh           # on the GPU machine (the lead's `run`, carrying .whl)
#   DRY=1 bash benchmarks/gpu_session.sh     # anywhere, on the CPU: every step at tiny sizes
#
# Steps: 1 install the wheels into /tmp/site; 2 make the synthetic JPEGs (3,000, 375-800 px);
# 3 the CUDA tests (skipped tests say why); 4 the benchmarks: clipscore ViT-B-32 and ViT-L-14 on
# both image paths, transformers LLaVA-1.5-7B shape in expected and parsed mode, and `qrelkit judge`
# as a whole process on 9,000 pairs.
set -uo pipefail

OUT=${OUT:-$PWD/gpu-session-out}
WHEELS=${WHEELS:-.whl}
DRY=${DRY:-}
PYTHON=${PYTHON:-python3}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1  # a step stopped at its time share keeps the lines it printed
deadline=$((SECONDS + ${BUDGET:-530}))
summary="$OUT/summary.md"
: > "$summary"

note() { echo "$*" | tee -a "$summary"; }

# step NAME SECONDS COMMAND...: run with at most SECONDS (and never past the deadline), output to $OUT/NAME.log
step() {
  local name=$1 budget=$2
  shift 2
  local left=$((deadline - SECONDS))
  ((budget > left)) && budget=$left
  if ((budget < 5)); then
    note "- $name: not run (the session's time is spent)"
    return 1
  fi
  local start=$SECONDS
  timeout --signal=INT --kill-after=15 "$budget" "$@" > "$OUT/$name.log" 2>&1
  local code=$?
  local took=$((SECONDS - start))
  if ((code == 124 || code == 137)); then
    note "- $name: stopped after ${took} s (its share was ${budget} s); see $name.log"
  elif ((code != 0)); then
    note "- $name: exit $code after ${took} s; see $name.log"
  else
    note "- $name: done in ${took} s"
  fi
  return $code
}

note "# GPU session for issue 26, $(date -u +%Y-%m-%dT%H:%MZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
note ""

# 1. qrelkit's dependencies beyond what the machine has (nothing can be downloaded there)
if [[ -z $DRY ]]; then
  ls "$WHEELS"/*.whl > /dev/null 2>&1 || { note "no wheels in $WHEELS: run ../shared/gpu/fetch-wheels.sh first (and carry .whl)"; exit 2; }
  step install 60 "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$WHEELS"/*.whl
  export PYTHONPATH=/tmp/site:$PWD
  export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1  # no network there: no waiting on a download that cannot come
  DEVICE=cuda
  HALF=--half
else
  export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
  DEVICE=cpu
  HALF=
fi
"$PYTHON" - > "$OUT/environment.log" 2>&1 << 'EOF'
import importlib, platform, sys
print("python", sys.version.split()[0], platform.machine())
for name in ("torch", "torchvision", "transformers", "open_clip", "ftfy", "PIL", "duckdb", "pydantic", "typer", "pytest", "numpy"):
    try:
        module = importlib.import_module(name)
        print(name, getattr(module, "__version__", "?"))
    except Exception as exc:  # noqa: BLE001 - a report, not a check
        print(name, "MISSING:", type(exc).__name__, exc)
import torch
print("cuda", torch.cuda.is_available(), torch.cuda.get_device_name() if torch.cuda.is_available() else "-")
from qrelkit.embed.device_images import device_jpeg_works
print("torchvision decodes JPEGs on cuda:", torch.cuda.is_available() and device_jpeg_works("cuda"))
EOF
note "- environment: $(tr '\n' ';' < "$OUT/environment.log" | cut -c1-400)"

# 2. the synthetic JPEGs, made once by one process per core, shared by the benchmarks
IMAGES=/tmp/qrelkit-images
COUNT=3000
[[ -n $DRY ]] && COUNT=60
step images 60 "$PYTHON" -c "
import sys; sys.path.insert(0, 'benchmarks')
from pathlib import Path
from bench_clipscore import make_images
print(len(make_images(Path('$IMAGES'), $COUNT)), 'images in $IMAGES')"

# 3. the tests of the image paths and judges: on the GPU machine all of them (the CUDA ones run there,
# the CPU ones check the machine's own versions); in the dry run only those that name a GPU (they skip)
TESTS="tests/test_clipscore.py tests/test_transformers_judge.py tests/test_image_decoding.py tests/test_decode_processes.py"
if [[ -n $DRY ]]; then
  step tests 120 "$PYTHON" -m pytest -q -p no:cacheprovider -rs -k "cuda or gpu or nvjpeg" $TESTS
else
  step tests 120 "$PYTHON" -m pytest -q -p no:cacheprovider -rs $TESTS
fi
[[ -f $OUT/tests.log ]] && tail -n 15 "$OUT/tests.log" > "$OUT/tests-tail.log"

# 4. the benchmarks, each writing its table; one model a step (a step stopped loses only its own
# table); the transformers one last: the largest and the one most likely to run out of time
if [[ -n $DRY ]]; then
  step bench_clipscore_ViT-B-32 90 "$PYTHON" benchmarks/bench_clipscore.py --device cpu --models ViT-B-32 --images 16 \
    --one-core-images 8 --batch-size 8 --image-dir "$IMAGES"
  step bench_clipscore_ViT-L-14 240 "$PYTHON" benchmarks/bench_clipscore.py --device cpu --models ViT-L-14 --images 2 \
    --one-core-images 2 --batch-size 2 --image-dir "$IMAGES"  # ViT-L-14 on 2 loaded CPU cores: 3 min for 2 images
  step bench_judge_job 120 "$PYTHON" benchmarks/bench_judge_job.py --device cpu --model tiny --images 60 --topics 20 --image-dir "$IMAGES"
  step bench_transformers 200 "$PYTHON" benchmarks/bench_transformers.py --device cpu --pairs 12 --parsed-pairs 8 --batch-size 4
else
  step bench_clipscore_ViT-B-32 90 "$PYTHON" benchmarks/bench_clipscore.py --device $DEVICE $HALF --models ViT-B-32 --images 3000 \
    --image-dir "$IMAGES"
  step bench_clipscore_ViT-L-14 120 "$PYTHON" benchmarks/bench_clipscore.py --device $DEVICE $HALF --models ViT-L-14 --images 3000 \
    --image-dir "$IMAGES"
  step bench_judge_job 100 "$PYTHON" benchmarks/bench_judge_job.py --device $DEVICE $HALF --model ViT-L-14 --images 3000 --topics 100 \
    --image-dir "$IMAGES" --verbose
  step bench_transformers 220 "$PYTHON" benchmarks/bench_transformers.py --preset llava-1.5-7b --device $DEVICE --pairs 960 \
    --parsed-pairs 480 --batch-size 32
fi

note ""
for name in bench_clipscore_ViT-B-32 bench_clipscore_ViT-L-14 bench_judge_job bench_transformers; do
  [[ -f $OUT/$name.log ]] || continue
  note "## $name"
  grep -E '^(\||machine|images|job|model|matmul|\(|[0-9]+\.?[0-9]* M parameters)' "$OUT/$name.log" | tee -a "$summary" > /dev/null
  note ""
done
note "## tests"
[[ -f $OUT/tests-tail.log ]] && tee -a "$summary" < "$OUT/tests-tail.log" > /dev/null
echo "session took $SECONDS s; tables in $summary"
