"""The ``dist`` dialect: meshes, placements, the distributed tensor type
(``!dist.tensor<8x16xf32, mesh<dp=2,tp=2>, [S(0), R]>``) and the collectives, send/recv and
reshard that move values between layouts (``types.py``, ``ops.py``; docs/shard.md)."""

from pir.ir.dialects.dist.ops import (
    AllGatherOp,
    AllReduceOp,
    AllToAllOp,
    BroadcastOp,
    CollectiveOp,
    DistOp,
    RecvOp,
    ReduceScatterOp,
    ReshardOp,
    SendOp,
    dist_type,
)
from pir.ir.dialects.dist.local import FromLocalOp, LoadShardOp, ToLocalOp, local_type
from pir.ir.dialects.dist.types import (
    REDUCE_KINDS,
    DistTensorType,
    Mesh,
    Partial,
    Placement,
    Replicate,
    Shard,
    parse_placement,
    parse_placements,
)

__all__ = ["Mesh", "Placement", "Replicate", "Shard", "Partial", "REDUCE_KINDS",
           "DistTensorType", "parse_placement", "parse_placements", "DistOp", "CollectiveOp",
           "AllReduceOp", "AllGatherOp", "ReduceScatterOp", "AllToAllOp", "BroadcastOp",
           "SendOp", "RecvOp", "ReshardOp", "dist_type", "ToLocalOp", "FromLocalOp",
           "LoadShardOp", "local_type"]
