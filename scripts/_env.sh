# Sourced by scripts/test and scripts/demo: makes ./.venv (once) with tensorflux installed in
# editable mode plus the extras named in $TFX_EXTRAS, then puts it first on PATH.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
py=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$py" -m venv .venv
fi
stamp=.venv/.tensorflux-installed-$TFX_EXTRAS
# Reinstall when the package's build inputs change (the C extensions are built at install).
# Every C source and header counts (a new extension needs no edit here).
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ setup.py -nt "$stamp" ] \
    || [ -n "$(find tensorflux \( -name '*.c' -o -name '*.h' \) -newer "$stamp" -print -quit)" ]; then
  .venv/bin/python -m pip install -q --disable-pip-version-check -e ".[$TFX_EXTRAS]"
  touch "$stamp"
fi
export PATH="$root/.venv/bin:$PATH"
