# setup.sh --dev compiles llama-cpp-python with this file as llama.cpp's project include
# (-DCMAKE_PROJECT_llama.cpp_INCLUDE=...): CMake runs it right after llama.cpp's project() call.
# llama-cpp-python forces llama.cpp's `common` helper library on (a cache variable), yet its Python
# package never loads it (it binds libllama and libggml only); a plain variable set here takes
# precedence inside llama.cpp's directory, so `common` (57 of the 140 compile steps, cpp-httplib
# and the JSON-heavy chat/argument code) is neither compiled nor installed.
set(LLAMA_BUILD_COMMON OFF)
