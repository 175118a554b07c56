"""Ray and MLflow glue: the prior stream, distributed pretraining, batch clustering and evaluation.

This is the only package that imports ``ray`` or ``mlflow``; ``priors`` and ``model`` stay plain numpy/PyTorch.
"""
