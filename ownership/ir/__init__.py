"""The intermediate form between the spec and the backends: the table of its operations
(ownership.ir.ops) and the batch graph that numpy, C and symmetry read (ownership.ir.graph)."""
