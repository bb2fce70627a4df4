"""Turn-delta assembly into whole conversations (end marker or idle timeout)."""

from rlstream.assembly.assembler import (
    Assembled,
    Assembler,
    AssemblyOptions,
    BufferedTurn,
    TurnStore,
)
from rlstream.assembly.memory import MemoryTurnStore

__all__ = [
    "Assembled",
    "Assembler",
    "AssemblyOptions",
    "BufferedTurn",
    "MemoryTurnStore",
    "TurnStore",
]
