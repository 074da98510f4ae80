"""ownership.bridges.record: hooks that write what an allocator really did as the page-event log that
`ownership monitor` checks (issue 15, item 2). Here over stand-ins with SGLang's and vLLM's
method shapes; conformance/test_sglang.py runs the same over the real SGLang allocator."""

from __future__ import annotations

import io
import json

from ownership.bridges.monitor import Monitor, read_events
from ownership.bridges.record import (
    EventLog,
    PDHandoff,
    record_sglang_allocator,
    record_vllm_block_pool,
    unrecord,
)


class TokenAllocator:
    """SGLang's shape: alloc(tokens) -> token indices (or None), free(indices); pages of
    `page_size` tokens, page 0 reserved, freed pages reused first (LIFO)."""

    def __init__(self, pages: int, page_size: int = 2, hands_out_held: bool = False) -> None:
        self.page_size = page_size
        self.free_pages = list(range(pages, 0, -1))
        self.hands_out_held = hands_out_held  # a bug: the last page handed out is handed out again
        self.last: int | None = None

    def alloc(self, need: int):
        n = need // self.page_size
        if self.hands_out_held and self.last is not None:
            pages = [self.last]
        elif len(self.free_pages) < n:
            return None
        else:
            pages = [self.free_pages.pop() for _ in range(n)]
        self.last = pages[-1]
        return [p * self.page_size + i for p in pages for i in range(self.page_size)]

    def free(self, indices) -> None:
        for p in dict.fromkeys(t // self.page_size for t in indices):
            self.free_pages.append(p)


def _check(log_text: str):
    return Monitor().run(read_events(io.BytesIO(log_text.encode()), "log"))


def _serve(allocator: TokenAllocator, log: EventLog, early_free: bool) -> None:
    """Two requests as a scheduler runs them: allocate, forward (write), decode (read), free.
    With `early_free`, r1 gives back its second page before its decode step."""
    with log.acting("r1"):
        a = allocator.alloc(4)
    log.write("decode", "r1", {t // 2 for t in a})
    if early_free:
        with log.acting("r1"):
            allocator.free(a[2:])
    with log.acting("r2"):
        b = allocator.alloc(2)
    log.write("decode", "r2", {t // 2 for t in b})
    log.read("decode", "r1", sorted({t // 2 for t in a}))
    with log.acting("r1"):
        allocator.free(a if not early_free else a[:2])
    log.read("decode", "r2", {t // 2 for t in b})
    with log.acting("r2"):
        allocator.free(b)
    log.finish("decode", "r1")
    log.finish("decode", "r2")


def test_a_recorded_clean_run_passes_and_an_injected_early_free_is_caught_at_its_line():
    out = io.StringIO()
    log = EventLog(out)
    _serve(record_sglang_allocator(TokenAllocator(4), log, node="decode"), log, early_free=False)
    lines = out.getvalue().splitlines()
    assert json.loads(lines[0]) == {"event": "alloc", "node": "decode", "request": "r1", "pages": [1, 2]}
    assert _check(out.getvalue()) is None

    out = io.StringIO()
    log = EventLog(out)
    _serve(record_sglang_allocator(TokenAllocator(4), log, node="decode"), log, early_free=True)
    found = _check(out.getvalue())
    assert found is not None
    # line 3 is the early free; r2 is handed page 2 (reused first) at line 4; r1 reads it at 6
    assert json.loads(out.getvalue().splitlines()[2]) == {"event": "free", "node": "decode", "request": "r1", "pages": [2]}
    assert (found.trace.violation.property, found.event.line) == ("read-unowned", 6)
    assert "page 2" in found.message and "(r2 does)" in found.message


def test_an_allocator_that_hands_out_a_held_page_is_caught_at_the_allocation():
    out = io.StringIO()
    log = EventLog(out)
    allocator = record_sglang_allocator(TokenAllocator(4, hands_out_held=True), log, node="decode")
    with log.acting("r1"):
        allocator.alloc(2)
    with log.acting("r2"):
        allocator.alloc(2)
    found = _check(out.getvalue())
    assert found is not None and (found.trace.violation.property, found.event.line) == ("alloc-held", 2)


def test_a_free_group_is_recorded_when_the_allocator_frees_it():
    class Grouping(TokenAllocator):
        def free_group_begin(self) -> None:
            self.staged: list = []

        def free_group_end(self) -> None:
            TokenAllocator.free(self, self.staged)

        def free(self, indices) -> None:
            if hasattr(self, "staged"):
                self.staged += list(indices)
            else:
                TokenAllocator.free(self, indices)

    out = io.StringIO()
    log = EventLog(out)
    allocator = record_sglang_allocator(Grouping(4), log, node="decode")
    with log.acting("r1"):
        a = allocator.alloc(2)
    allocator.free_group_begin()
    with log.acting("r1"):
        allocator.free(a)
    assert log.events == 1  # not yet: SGLang frees at free_group_end
    allocator.free_group_end()
    assert [json.loads(x)["event"] for x in out.getvalue().splitlines()] == ["alloc", "free"]


def test_unrecord_puts_the_methods_back():
    allocator = TokenAllocator(2)
    log = EventLog(io.StringIO())
    record_sglang_allocator(allocator, log, node="d")
    assert "alloc" in vars(allocator)
    unrecord(allocator)
    assert "alloc" not in vars(allocator) and allocator.alloc(2) is not None and log.events == 0


class Block:
    def __init__(self, block_id: int) -> None:
        self.block_id = block_id
        self.ref_cnt = 0


class BlockPool:
    """vLLM's shape: get_new_blocks(n) -> blocks (ref_cnt 1), free_blocks(blocks) drops a reference."""

    def __init__(self, n: int) -> None:
        self.queue = [Block(i) for i in range(1, n + 1)]

    def get_new_blocks(self, n: int) -> list[Block]:
        out, self.queue = self.queue[:n], self.queue[n:]
        for b in out:
            b.ref_cnt = 1
        return out

    def free_blocks(self, blocks) -> None:
        for b in blocks:
            b.ref_cnt -= 1
            if b.ref_cnt == 0:
                self.queue.append(b)


def test_vllm_blocks_are_shared_by_a_hit_and_each_reference_is_dropped_by_its_request():
    """get_new_blocks: alloc; touch (a prefix-cache hit): share; free_blocks: the acting
    request drops its reference, and the monitor keeps the other holder's."""
    class Touching(BlockPool):
        def touch(self, blocks) -> None:
            for group in blocks:
                for b in group:
                    b.ref_cnt += 1

    out = io.StringIO()
    log = EventLog(out)
    pool = record_vllm_block_pool(Touching(3), log, node="decode")
    with log.acting("a"):
        blocks = pool.get_new_blocks(2)
    log.write("decode", "a", [blocks[0].block_id], key="p1")
    with log.acting("b"):
        pool.touch(([blocks[0]],))
    with log.acting("a"):
        pool.free_blocks(blocks)
    log.read("decode", "b", [blocks[0].block_id], key="p1")
    events = [json.loads(x) for x in out.getvalue().splitlines()]
    assert [(e["event"], e["request"], e["pages"]) for e in events] == [
        ("alloc", "a", [1, 2]), ("write", "a", [1]), ("share", "b", [1]), ("free", "a", [1, 2]), ("read", "b", [1])]
    assert blocks[0].ref_cnt == 1 and _check(out.getvalue()) is None


def test_a_log_written_to_a_path_is_appended_and_closed(tmp_path):
    path = tmp_path / "events.jsonl"
    for request in ("r1", "r2"):
        log = EventLog(path)
        log.alloc("decode", request, [int(request[1])])
        log.close()
    assert [json.loads(x)["request"] for x in path.read_text().splitlines()] == ["r1", "r2"]


def test_an_extension_that_continues_the_last_page_allocates_only_the_new_pages():
    """SGLang's alloc_extend / alloc_decode return token indices that first fill the rest of
    the request's last page: only a page whose first token is returned is newly allocated."""
    class Extending(TokenAllocator):
        def alloc_decode(self, last: int):
            if (last + 1) % self.page_size:
                return [last + 1]  # the next token of the same page
            return TokenAllocator.alloc(self, self.page_size)[:1]  # (not the recorded alloc)

    out = io.StringIO()
    log = EventLog(out)
    allocator = record_sglang_allocator(Extending(4, page_size=2), log, node="decode")
    with log.acting("r1"):
        first = allocator.alloc(2)          # page 1: tokens 2, 3
        third = allocator.alloc_decode(3)   # page 2 opens: token 4
        allocator.alloc_decode(third[0])    # token 5: still page 2
    assert first == [2, 3]
    assert [json.loads(x)["pages"] for x in out.getvalue().splitlines()] == [[1], [2]]


class SegmentAllocator(TokenAllocator):
    """SGLang 0.5.23's shape: free_segment -> free_page_ids, and free_group_end -> free, each
    through `self`, so the recorded wrappers nest (the outer call is the one recorded)."""

    def free_segment(self, indices, *, start_pos: int) -> None:
        self.free_page_ids([t // self.page_size for t in indices[::self.page_size]])

    def free_page_ids(self, page_ids) -> None:
        self.free_pages.extend(page_ids)

    def free_group_begin(self) -> None:
        self.group: list = []

    def free(self, indices) -> None:
        if getattr(self, "group", None) is not None:
            self.group += list(indices)
        else:
            TokenAllocator.free(self, indices)

    def free_group_end(self) -> None:
        pending, self.group = self.group, None
        if pending:
            self.free(pending)


def test_nested_frees_are_recorded_once_by_the_outer_call():
    """release_kv_cache frees through free_segment, which calls free_page_ids; a free group's
    end calls free: each page comes back once in the log, for the request that freed it."""
    out = io.StringIO()
    log = EventLog(out)
    allocator = record_sglang_allocator(SegmentAllocator(4), log, node="decode")
    with log.acting("r1"):
        a = allocator.alloc(4)
        allocator.free_segment(a, start_pos=0)
    with log.acting("r2"):
        b = allocator.alloc(2)
    allocator.free_group_begin()
    with log.acting("r2"):
        allocator.free(b)
    allocator.free_group_end()
    events = [json.loads(x) for x in out.getvalue().splitlines()]
    assert [(e["event"], e["request"], e["pages"]) for e in events] == [
        ("alloc", "r1", [1, 2]), ("free", "r1", [1, 2]), ("alloc", "r2", [2]), ("free", "r2", [2])]
    assert _check(out.getvalue()) is None


class KVPoll:
    WaitingForInput = 2
    Success = 4


class KVReceiver:
    """The decode side of SGLang's KV transfer interface (disaggregation/base/conn.py)."""

    def send_metadata(self, kv_indices, aux_index=None, state_indices=None, decode_prefix_len=None) -> None:
        self.announced = list(kv_indices)


class KVSender:
    """The prefill side: send(page ids) per chunk; poll() is Success once the last chunk went."""

    def __init__(self, chunks: int) -> None:
        self.chunks = chunks

    def send(self, kv_indices, state_indices=None, num_kv_tokens=None) -> None:
        self.chunks -= 1

    def poll(self) -> int:
        return KVPoll.Success if self.chunks == 0 else KVPoll.WaitingForInput


def _handoff(sent: list[list[int]], reserved: list[int]) -> str:
    """One request through both nodes: decode reserves `reserved`, prefill writes and sends the
    chunks `sent`, the transfer concludes, prefill frees its pages, decode reads `reserved`."""
    out = io.StringIO()
    log = EventLog(out)
    handoff = PDHandoff(log, success=KVPoll.Success)
    receiver = handoff.receiver(KVReceiver(), "r1", room=7)
    sender = handoff.sender(KVSender(len(sent)), "r1", room=7)
    log.alloc("decode", "r1", reserved)
    receiver.send_metadata(reserved, 0)
    mine = [p for chunk in sent for p in chunk]
    log.alloc("prefill", "r1", mine)
    log.write("prefill", "r1", mine)
    for chunk in sent:
        assert sender.poll() == KVPoll.WaitingForInput
        sender.send(chunk)
    assert sender.poll() == KVPoll.Success and sender.poll() == KVPoll.Success
    log.free("prefill", "r1", mine)
    log.read("decode", "r1", reserved)
    return out.getvalue()


def test_the_handoff_pairs_prefill_chunks_with_decode_pages_by_room_and_lands_once():
    text = _handoff([[1], [2, 3]], [5, 6, 7])
    events = [json.loads(x) for x in text.splitlines()]
    sends = [(e["pages"], e["to_pages"]) for e in events if e["event"] == "send"]
    assert sends == [([1], [5]), ([2, 3], [6, 7])]
    assert [e["event"] for e in events].count("land") == 1
    assert _check(text) is None


def test_a_placeholder_that_sends_one_page_of_three_is_a_stale_read_at_decodes_read():
    """The GLM-5.3 incident's shape: prefill sends one page, decode reserved three and reads them."""
    text = _handoff([[1]], [5, 6, 7])
    found = _check(text)
    assert found is not None and found.trace.violation.property == "stale-read"
    assert found.event.kind == "read" and found.event.line == len(text.splitlines())
    assert "decode pages 6, 7, never written" in found.message


def test_pages_sent_beyond_the_announced_ones_are_left_out_as_the_transfer_worker_cuts_them():
    text = _handoff([[1, 2]], [5])
    assert [(e["pages"], e["to_pages"]) for e in map(json.loads, text.splitlines()) if e["event"] == "send"] == [
        ([1], [5])]
