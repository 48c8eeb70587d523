"""The vector type every embedding travels as (the embedder port, the write funnel, search)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

#: A unit-length float32 embedding.
Vector = npt.NDArray[np.float32]
