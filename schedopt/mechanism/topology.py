"""The GPUs of a cluster as flat arrays: GPU g sits in node `node[g]` and has type `gpu_type[g]`.

GPU ids are integers 0..G-1, numbered node by node in the order the instance lists its nodes
(derived nodes after explicit ones), so consecutive ids share a node where they can.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from schedopt.instance.model import Cluster


@dataclass(frozen=True, eq=False)
class Topology:
    """type_names: GPU type names (index j). node_ids / node_type / node_rack: per node.
    gpu_type / gpu_node: per GPU, the index of its type and of its node."""

    type_names: tuple[str, ...]
    node_ids: tuple[str, ...]
    node_type: np.ndarray
    node_rack: tuple[str, ...]
    gpu_type: np.ndarray
    gpu_node: np.ndarray

    @property
    def num_gpus(self) -> int:
        return int(self.gpu_type.shape[0])

    @property
    def capacity(self) -> np.ndarray:
        """(J,) GPUs per type."""
        return np.bincount(self.gpu_type, minlength=len(self.type_names)).astype(float)

    def gpu_label(self, gpu: int) -> str:
        """A readable id: `<node id>/<slot>`."""
        node = int(self.gpu_node[gpu])
        slot = gpu - int(np.flatnonzero(self.gpu_node == node)[0])
        return f"{self.node_ids[node]}/{slot}"

    @classmethod
    def from_cluster(cls, cluster: Cluster) -> "Topology":
        types = cluster.type_names
        index = {name: j for j, name in enumerate(types)}
        sizes = np.array([node.gpus for node in cluster.nodes], dtype=int)
        node_type = np.array([index[node.gpu_type] for node in cluster.nodes], dtype=int)
        return cls(types, tuple(n.id for n in cluster.nodes), node_type,
                   tuple(n.rack for n in cluster.nodes), np.repeat(node_type, sizes),
                   np.repeat(np.arange(len(sizes)), sizes))

    @classmethod
    def uniform(cls, counts: dict[str, int], gpus_per_node: dict[str, int]) -> "Topology":
        """Nodes of `gpus_per_node[t]` GPUs (the last one partial) for each type, one rack."""
        node_ids, node_type, sizes = [], [], []
        for j, (name, count) in enumerate(counts.items()):
            full, rest = divmod(count, gpus_per_node[name])
            for k, size in enumerate([gpus_per_node[name]] * full + ([rest] if rest else [])):
                node_ids.append(f"{name}-n{k}")
                node_type.append(j)
                sizes.append(size)
        node_type_arr = np.array(node_type, dtype=int)
        sizes_arr = np.array(sizes, dtype=int)
        return cls(tuple(counts), tuple(node_ids), node_type_arr, ("r0",) * len(node_ids),
                   np.repeat(node_type_arr, sizes_arr), np.repeat(np.arange(len(sizes)), sizes_arr))
