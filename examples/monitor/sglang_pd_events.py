"""An event adapter for `ownership monitor --spec sglang_pd`: a PD server's page events as the
actions of specs/sglang_pd.py.

    ownership monitor incident.jsonl --spec sglang_pd --release 0.5.23 \\
        --adapter examples/monitor/sglang_pd_events.py:to_actions

Each event of the log (docs/monitor.md) stands for the spec action that does the same thing:

| event                      | spec action                                         |
|----------------------------|-----------------------------------------------------|
| decode alloc (n pages)     | arrive(n) then decode_prealloc (decode reserves the prompt's pages) |
| prefill alloc              | prefill_forward (the forward's pages; the write is part of it)      |
| prefill send               | prefill_result (send_kv_chunk, last chunk)          |
| decode land                | transfer_done (the write landed, prefill released)  |
| decode read                | decode_commit (the first decode step attends over the table)        |
| decode free                | decode_finish, or decode_timeout when the line says "reason": "timeout" |

The rest (prefill's write and free, finish) are parts of those actions. The spec checks what
the kernel cannot see in pages: the protocol's order, e.g. that a 0.5.23 prefill never
forwards a prompt it rejected at the door.
"""


def to_actions(event):
    """The sglang_pd actions one event stands for: a list of (action, arguments)."""
    r = {"r": event.request}
    if event.node == "decode":
        if event.kind == "alloc":
            return [("arrive", {**r, "n": len(event.pages)}), ("decode_prealloc", r)]
        if event.kind == "land":
            return [("transfer_done", r)]
        if event.kind == "read":
            return [("decode_commit", r)]
        if event.kind == "free":
            return [("decode_timeout" if event.get("reason") == "timeout" else "decode_finish", r)]
    elif event.node == "prefill":
        if event.kind == "alloc":
            return [("prefill_forward", r)]
        if event.kind == "send":
            return [("prefill_result", r)]
    return []
