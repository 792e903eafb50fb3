"""The tamper-evident log: store, batches, Merkle tree, signed notes, keys, segments, verify."""
