"""The peer systems of bench/peers.py, one module each, and their registry (``SYSTEMS``)."""

from __future__ import annotations

from peer_systems.base import System
from peer_systems.bm25 import Bm25
from peer_systems.langchain import LangChainPGVector, LangChainStore
from peer_systems.llamaindex import LlamaIndex
from peer_systems.mem0 import Mem0
from peer_systems.memory_engine import MemoryEngineHttp, MemoryEngineService
from peer_systems.mempalace import MemPalace

SYSTEMS: dict[str, type[System]] = {s.key: s for s in (
    MemoryEngineService, MemoryEngineHttp, Mem0, MemPalace, LlamaIndex, LangChainStore, LangChainPGVector, Bm25)}

__all__ = ["SYSTEMS", "System"]
