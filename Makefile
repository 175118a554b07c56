# Two entry points, each self-installing into .venv on a fresh machine:
#   make cluster   cluster the demo tables with the shipped checkpoint (the main job)
#   make test      run the test suite (what CI runs)
#   make results   regenerate README's and the model card's results tables from docs/results/evaluation-*.csv
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
FIND_LINKS := $(if $(wildcard /opt/wheels),--find-links /opt/wheels,)
# torch from the local wheels where a machine has them (offline CI), else from PyTorch's CPU-only index: PyPI's
# torch==2.13.0 on Linux is the CUDA build with gigabytes of nvidia-* dependencies.
TORCH_SOURCE := $(if $(wildcard /opt/wheels),--find-links /opt/wheels,--index-url https://download.pytorch.org/whl/cpu)

.PHONY: setup cluster test test-fast pretrain evaluate results serve gpu-continue clean-venv

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# The CPU wheel of torch; a bare `torch` would pull a multi-GB CUDA build.
	$(PY) -m pip install -q $(TORCH_SOURCE) torch==2.13.0
	$(PY) -m pip install -q $(FIND_LINKS) -e '.[dev]'
	touch $(STAMP)

setup: $(STAMP)

cluster: $(STAMP)
	$(PY) jobs/cluster.py $(ARGS)

test: $(STAMP)
	$(PY) -m pytest $(ARGS)

test-fast: $(STAMP)
	$(PY) -m pytest -m "not slow" $(ARGS)

pretrain: $(STAMP)
	$(PY) jobs/pretrain.py $(ARGS)

evaluate: $(STAMP)
	$(PY) jobs/evaluate.py $(ARGS)

results: $(STAMP)
	$(PY) jobs/render_docs.py $(ARGS)

serve: $(STAMP)
	$(PY) jobs/serve.py $(ARGS)

# The prepared run for a lent GPU (about 15 minutes of device time, start-up included): continue the shipped
# weights on tables of the real sizes, with noise columns beside as few as one informative column. Runs from a
# bare checkout with the machine's own CUDA torch; the result is chosen or not here, on development data.
GPU_PYTHON ?= python3
GPU_DEVICE ?= cuda
GPU_BUDGET ?= 600
GPU_OUT ?= outputs/gpu-continue
GPU_INIT ?= model/weights/tabclustpfn-small.pt
gpu-continue:
	$(GPU_PYTHON) jobs/pretrain_budget.py --device $(GPU_DEVICE) --budget-s $(GPU_BUDGET) --out $(GPU_OUT) \
	  $(if $(GPU_INIT),--init-checkpoint $(GPU_INIT)) --seed 311 --lr 3e-4 --batch-size 64 --micro-batch 16 \
	  --set objective.warmup_matching_steps=0 \
	  --set stream.prior.n_rows=[200,1000] --set stream.prior.nuisance.p_noise_features=0.5 \
	  --set stream.prior.nuisance.min_informative=1 --set stream.prior.nuisance.p_contamination=0.2 \
	  --set stream.prior.nuisance.p_discrete=0.3 --set stream.p_one_mode=0.2 \
	  --note "shipped weights continued: N 200-1000, noise columns beside >= 1 informative one, coarse, one-mode tables" \
	  $(ARGS)

clean-venv:
	rm -rf $(VENV)
