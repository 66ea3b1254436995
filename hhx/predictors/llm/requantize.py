"""GGUF weights converted once to a format whose llama.cpp CPU kernels evaluate prompts faster.

`model.requantize` (llamacpp backend) names the target: `q8_0`, `q4_0` or `f16` (null: the file
as it is). On an AVX2 CPU, llama.cpp's matrix kernels for Q4_1 are slower than those for Q4_0
(repacked into interleaved blocks) and Q8_0 / F16 (llamafile's tiled kernels), and prompt
evaluation is nearly all the work of a short constrained answer. Converting from an already
quantised file: to `f16` keeps the weights exactly as the source dequantises them; `q8_0` rounds
each to one of 255 steps per 32-weight block (close to lossless); `q4_0` loses visibly more.

The converted file is made by llama.cpp's own `llama_model_quantize` (allow_requantize), written
atomically and kept under `<cache_dir>/gguf/`, its name keyed by the SHA-256 of the whole
source file and the target, so it is built once per source and reused by every later run
(parallel jobs at worst build it twice; the rename is atomic).
"""

from __future__ import annotations

import logging
from pathlib import Path

from hhx.errors import PredictorError
from hhx.io import atomic_path, file_sha256
from hhx.logs import c_stderr_to_log

log = logging.getLogger(__name__)

# target -> the llama_ftype constant's name in llama_cpp
FORMATS = {"q8_0": "LLAMA_FTYPE_MOSTLY_Q8_0", "q4_0": "LLAMA_FTYPE_MOSTLY_Q4_0",
           "f16": "LLAMA_FTYPE_MOSTLY_F16"}


def requantized_path(source: Path, target: str, folder: Path) -> Path:
    """Where the `target` conversion of `source` is kept (keyed by the source's content)."""
    return folder / f"{source.stem}.{file_sha256(source)[:16]}.{target}.gguf"


def requantize(source: Path, target: str, folder: Path) -> Path:
    """The `target`-format copy of `source`, converted now unless a previous run did."""
    if target not in FORMATS:
        raise PredictorError(
            f"model.requantize={target!r}: unknown format; use one of {', '.join(FORMATS)} or null"
        )
    out = requantized_path(source, target, folder)
    if out.is_file():
        return out
    import llama_cpp

    # llama-cpp-python prints llama.cpp's log (a line per tensor here) unless its logger says
    # otherwise; Llama(verbose=False) sets the same level later anyway. Errors still print.
    logging.getLogger("llama-cpp-python").setLevel(logging.ERROR)
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = getattr(llama_cpp, FORMATS[target])
    params.allow_requantize = True
    log.info("llama.cpp: converting %s to %s once (kept as %s)", source.name, target, out)
    # llama.cpp prints its fallback-quantisation warnings straight to fd 2: into the run's log.
    with atomic_path(out) as tmp, c_stderr_to_log("llama.cpp"):
        rc = llama_cpp.llama_model_quantize(str(source).encode(), str(tmp).encode(), params)
        if rc != 0:
            raise PredictorError(
                f"model.requantize={target}: llama.cpp could not convert {source} (code {rc}); "
                "set model.requantize=null to use the file as it is"
            )
    return out
