#!/usr/bin/env bash
# The course's two commands (see README.md):
#   bash course.sh lab    set up .venv (once) and open the course in JupyterLab
#   bash course.sh test   set up .venv (once) and run every test: unit tests + nbval on all notebooks
# Extra arguments go to jupyter lab / pytest. PYTHON picks the interpreter (default python3).
set -euo pipefail
cd "$(dirname "$0")"
PY=${PYTHON:-python3}
VENV=${COURSE_VENV:-.venv}
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then REQ=requirements-gpu.txt; else REQ=requirements.txt; fi
stamp="$VENV/.course-installed"
want="$(cat "$REQ" requirements-base.txt pyproject.toml | sha256sum | cut -c1-16) $REQ"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "setting up $VENV from $REQ (first run takes a few minutes)"
  "$PY" -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --upgrade pip
  "$VENV/bin/python" -m pip install -q -r "$REQ"
  echo "$want" > "$stamp"
fi
export TRITON_DEFAULT_FP_FUSION=1 PYTHONUNBUFFERED=1
cmd=${1:-lab}; shift || true
case "$cmd" in
  lab)  root=(); [ "$(id -u)" = 0 ] && root=(--allow-root)   # containers often run as root
        # serve the repository root (course/, the day folders, solutions/) and open the welcome notebook
        exec "$VENV/bin/jupyter" lab "${root[@]}" --ServerApp.root_dir="$PWD" \
          --LabApp.default_url=/lab/tree/course/00_welcome.ipynb "$@" ;;
  test) "$VENV/bin/python" -m utils.core.exercises --check
        exec "$VENV/bin/python" -m pytest "$@" ;;
  *)    echo "usage: bash course.sh [lab|test] [args...]" >&2; exit 2 ;;
esac
