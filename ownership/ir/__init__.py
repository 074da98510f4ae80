"""The intermediate form between the spec and the backends: the table of its operations
(ownership.ir.ops)."""
