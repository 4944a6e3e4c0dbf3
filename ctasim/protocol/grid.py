"""Tile grids of a GEMM chain and the dependencies between them -- the protocol model's own small description.

A chain of ``L`` GEMM layers runs one layer per GPU: GPU ``g`` computes layer ``g``, whose output is an
``m_tiles x n_tiles[g]`` grid of tiles (row-block ``r``, column ``c``), and writes it into GPU ``g+1``'s memory.
Consumer tile ``(r, c)`` of layer ``g+1`` reads the whole row-block ``r`` of layer ``g``'s output (its A operand),
so it depends on the producer tiles ``(r, 0) .. (r, n_tiles[g]-1)``.  One scoreboard counter per (consumer GPU,
row-block) counts those producer tiles; its per-epoch threshold is ``n_tiles[g]``.  ``ctasim.plan`` builds the same
dependency arrays for the simulator; this module does not import it so that the protocol model stands alone.

Leaves out: K-splitting, tiles that depend on more than one row-block, non-GEMM layers, and element counts: a
tile is ``elems`` memory locations, enough to observe a partially visible tile.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Chain"]


@dataclass(frozen=True)
class Chain:
    """Shapes of a chain: ``m_tiles`` row-blocks, ``n_tiles[g]`` column tiles of layer ``g``, ``elems`` locations
    per tile."""

    m_tiles: int
    n_tiles: tuple[int, ...]
    elems: int = 1

    def __post_init__(self) -> None:
        if self.m_tiles < 1 or len(self.n_tiles) < 2 or min(self.n_tiles) < 1 or self.elems < 1:
            raise ValueError(f"invalid chain {self}: need m_tiles>=1, >=2 layers, n_tiles>=1, elems>=1")

    @property
    def gpus(self) -> int:
        return len(self.n_tiles)

    def tiles(self, gpu: int) -> list[tuple[int, int]]:
        """Output tiles of layer ``gpu`` in raster order (row-major)."""
        return [(r, c) for r in range(self.m_tiles) for c in range(self.n_tiles[gpu])]

    def deps(self, gpu: int, tile: tuple[int, int]) -> list[tuple[int, int]]:
        """Producer tiles (of layer ``gpu-1``) that consumer tile ``tile`` of layer ``gpu`` reads."""
        if gpu < 1:
            return []
        return [(tile[0], j) for j in range(self.n_tiles[gpu - 1])]

    def row_threshold(self, gpu: int) -> int:
        """Per-epoch threshold of each scoreboard counter on consumer GPU ``gpu``."""
        return self.n_tiles[gpu - 1]

    def ready_tiles(self, gpu: int, row: int) -> list[tuple[int, int]]:
        """Consumer tiles of layer ``gpu`` that become ready when counter ``row`` reaches its threshold."""
        return [(row, c) for c in range(self.n_tiles[gpu])]

    def queue_capacity(self, gpu: int) -> int:
        """Work-queue slots on GPU ``gpu``: one per consumer tile of one epoch."""
        return self.m_tiles * self.n_tiles[gpu]
