"""The intermediate form between the spec and the backends (docs/adr/0008): the tracer's `Term`
graphs (ownership.ir.tracer: what z3 reads), the batch graph that numpy, C and symmetry read
(ownership.ir.graph), and the one table of the operations both hold (ownership.ir.ops)."""
