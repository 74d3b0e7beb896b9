#!/bin/sh
# Create (or update) the separate benchmark venv for bench/peers.py: convlog from this
# checkout (editable) plus the pinned peers of bench/requirements-peers.txt. The peers
# never go into .venv or into convlog's dependencies.
#
#   sh bench/peers_setup.sh            # then: .venv-bench/bin/python -m bench.peers
#   PYTHON=python3.12 VENV=/tmp/vb sh bench/peers_setup.sh
set -eu
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
VENV=${VENV:-.venv-bench}
test -x "$VENV/bin/python" || "$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet -e . -r bench/requirements-peers.txt
"$VENV/bin/python" -W ignore::DeprecationWarning -c "import agents, convlog, langchain_community, langgraph.checkpoint.sqlite"
touch "$VENV/.installed-stamp"
echo "$VENV ready: $VENV/bin/python -m bench.peers [--quick]"
